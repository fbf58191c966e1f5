"""Tests of the node peer driver (benches/peers/node/redis_lock_peers.mjs:
npm's redlock and redis-semaphore): a tiny run against its own redis-server
whose JSON locklab_plots reads as peer points of the redis_locks suite, and
its bad-argument and missing-packages exits.

The run needs node, the npm packages (`npm ci --prefix benches/peers/node`,
or ./lab setup) and Debian's redis-server, and is skipped, saying which is
missing, without them; the missing-packages test needs only node.

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s notebooks/tests -v
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import locklab_plots as lp  # noqa: E402

PEER_DIR = Path(__file__).resolve().parents[2] / "benches" / "peers" / "node"
PEER = PEER_DIR / "redis_lock_peers.mjs"
NODE = shutil.which("node")
HAVE_PACKAGES = (PEER_DIR / "node_modules").is_dir()
HAVE_SERVER = bool(os.environ.get("LOCKLAB_REDIS_SERVER") or shutil.which("redis-server"))
IMPLS = ("node-redlock", "node-redis-semaphore.Mutex", "node-redis-semaphore.Semaphore(1)")


def run_peer(*args, script=PEER, timeout=120):
    environment = dict(os.environ)
    environment.pop("LOCKLAB_REDIS_URL", None)  # never anyone else's server
    return subprocess.run([NODE, str(script), *args], capture_output=True, text=True, timeout=timeout,
                          env=environment)


@unittest.skipUnless(NODE, "needs node (./lab setup installs Debian's nodejs where node is missing)")
class NodePeerTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    @unittest.skipUnless(HAVE_PACKAGES, "needs the npm packages: npm ci --prefix benches/peers/node (or ./lab setup)")
    @unittest.skipUnless(HAVE_SERVER, "needs Debian's redis-server (./lab setup)")
    def test_tiny_run_writes_the_suite_schema_as_peer_points(self):
        done = run_peer("--duration_ms=60", "--waiters=1,2", f"--out={self.tmp}")
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        path = self.tmp / "redis_locks_node.json"
        data = json.loads(path.read_text())
        context = data["context"]
        self.assertEqual(context["locklab_suite"], "redis_locks")
        self.assertEqual(context["locklab_build"], "node")
        self.assertIn("async loops", context["node_waiters"])
        self.assertIn("redlock 5.0.0-beta.2", context["compiler"])
        df = lp.load_suite(path)
        self.assertEqual(list(df["name"]), [f"redis_locks/{impl}/waiters:{n}/hold_us:1000"
                                            for impl in IMPLS for n in (1, 2)])
        self.assertTrue(df["peer"].all())
        self.assertTrue((df["items_per_second"] > 0).all())
        for column in ("p50_ms", "p95_ms", "fairness", "cpu_per_wall", "client_cpu_us_per_acquire",
                       "server_cpu_us_per_acquire", "subscribes_per_acquire"):
            self.assertTrue(df[column].notna().all(), column)
        self.assertTrue((df["client_cpu_us_per_acquire"] > 0).all())
        one = df[df["waiters"] == 1].set_index("impl")
        for impl in IMPLS:
            with self.subTest(impl=impl):
                # One waiter, no contention: the acquire command or script and the release script, exactly.
                self.assertEqual(one.loc[impl, "round_trips_per_acquire"], 2.0)
                self.assertGreaterEqual(one.loc[impl, "redis_cmds_per_acquire"], 2.0)
        self.assertEqual(sorted(set(lp.split_rows(df)[0]["impl"])), sorted(IMPLS))

    def test_missing_packages_skip_with_the_command_to_install(self):
        alone = self.tmp / "alone"  # a copy with no node_modules beside or above it
        alone.mkdir()
        shutil.copy(PEER, alone / PEER.name)
        done = run_peer(f"--out={self.tmp / 'out'}", script=alone / PEER.name)
        self.assertEqual(done.returncode, 3, done.stdout + done.stderr)
        self.assertIn("skipped", done.stderr)
        self.assertIn("npm ci --prefix benches/peers/node", done.stderr)
        self.assertFalse((self.tmp / "out").exists(), "nothing is written when skipped")

    def test_bad_waiters_are_named(self):
        done = run_peer("--waiters=4,x", f"--out={self.tmp}")
        self.assertEqual(done.returncode, 2)
        self.assertIn("--waiters: expected positive integers separated by commas, got '4,x'", done.stderr)

    def test_unknown_argument_is_named(self):
        done = run_peer("--split=4x4", f"--out={self.tmp}")
        self.assertEqual(done.returncode, 2)
        self.assertIn("unknown argument '--split=4x4'", done.stderr)

    @unittest.skipUnless(HAVE_PACKAGES, "needs the npm packages (the check runs after they load)")
    def test_unknown_impl_is_named(self):
        done = run_peer("--impl=nosuch", f"--out={self.tmp}")
        self.assertEqual(done.returncode, 2)
        self.assertIn("matches none of", done.stderr)


if __name__ == "__main__":
    unittest.main()
