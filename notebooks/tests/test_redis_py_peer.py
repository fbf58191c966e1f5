"""Tests of the redis-py peer driver (benches/peers/redis_py_lock.py): a tiny
run against its own redis-server whose JSON locklab_plots reads as peer
points of the redis_locks suite, its bad-argument and missing-module exits.

The run needs Debian's python3-redis and redis-server and is skipped, saying
so, without them; the missing-module test needs neither.

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s notebooks/tests -v
"""
import importlib.util
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

PEER = Path(__file__).resolve().parents[2] / "benches" / "peers" / "redis_py_lock.py"
HAVE_REDIS = importlib.util.find_spec("redis") is not None
HAVE_SERVER = bool(os.environ.get("LOCKLAB_REDIS_SERVER") or shutil.which("redis-server")
                   or os.access("/usr/bin/redis-server", os.X_OK))


def run_peer(*args, env=None, timeout=120):
    environment = dict(os.environ, **(env or {}))
    environment.pop("LOCKLAB_REDIS_URL", None)  # never anyone else's server
    return subprocess.run([sys.executable, str(PEER), *args], capture_output=True, text=True,
                          timeout=timeout, env=environment)


class PeerTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    @unittest.skipUnless(HAVE_REDIS and HAVE_SERVER, "needs python3-redis and redis-server (./lab setup)")
    def test_tiny_run_writes_the_suite_schema_as_peer_points(self):
        done = run_peer("--duration_ms=60", "--waiters=1,2", "--split=2x1", "--impl=sleep=1ms",
                        f"--out={self.tmp}")
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        path = self.tmp / "redis_locks_python.json"
        data = json.loads(path.read_text())
        self.assertEqual(data["context"]["locklab_suite"], "redis_locks")
        self.assertEqual(data["context"]["locklab_build"], "python")
        df = lp.load_suite(path)
        self.assertEqual(list(df["name"]), [
            "redis_locks/python-redis.Lock(sleep=1ms)/waiters:1/hold_us:1000",
            "redis_locks/python-redis.Lock(sleep=1ms)/waiters:2/hold_us:1000",
            "redis_locks/python-redis.Lock(sleep=1ms)/waiters:2/hold_us:1000/processes:2"])
        self.assertTrue(df["peer"].all())
        self.assertTrue((df["items_per_second"] > 0).all())
        # One waiter, no contention: SET NX + the release script, exactly.
        self.assertEqual(df.loc[0, "round_trips_per_acquire"], 2.0)
        self.assertGreaterEqual(df.loc[0, "redis_cmds_per_acquire"], 2.0)
        for column in ("p50_ms", "p95_ms", "fairness", "cpu_per_wall", "server_cpu_us_per_acquire"):
            self.assertTrue(df[column].notna().all(), column)
        split = df[df["processes"] == 2].iloc[0]
        self.assertEqual(split["waiters"], 2)
        self.assertGreater(split["round_trips_per_acquire"], 1.9)
        _, rows = lp.split_rows(df)
        self.assertIn("2x1", lp.split_table(df))
        self.assertEqual(len(rows), 1)

    def test_missing_module_skips_with_the_package_to_install(self):
        fake = self.tmp / "fake"
        fake.mkdir()
        (fake / "redis.py").write_text("raise ImportError('no redis here')\n")
        done = run_peer(f"--out={self.tmp / 'out'}", env={"PYTHONPATH": str(fake)})
        self.assertEqual(done.returncode, 3, done.stderr)
        self.assertIn("python3-redis", done.stderr)
        self.assertIn("skipped", done.stderr)
        self.assertFalse((self.tmp / "out").exists(), "nothing is written when skipped")

    def test_bad_split_is_named(self):
        done = run_peer("--split=4by4", f"--out={self.tmp}")
        self.assertEqual(done.returncode, 2)
        self.assertIn("expected PxT items like 4x4, got '4by4'", done.stderr)

    def test_unknown_impl_is_named(self):
        if not HAVE_REDIS:
            self.skipTest("needs python3-redis (the check runs after the module check)")
        done = run_peer("--impl=nosuch", f"--out={self.tmp}")
        self.assertEqual(done.returncode, 2)
        self.assertIn("matches none of", done.stderr)


if __name__ == "__main__":
    unittest.main()
