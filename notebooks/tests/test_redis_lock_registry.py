"""The Redis lock registry (benches/redis_locks.json) against everything that
names Redis locks: the plotting module's functions, the notebooks' and the
README figure's choices, every committed results file of the Redis suite and
its scenarios, and the bench binary's own list (when it is built, as
``./lab test`` does before these tests). A lock that one of them names and
the registry lacks, or a registry lock the bench does not run, fails here.
The C++ readers are checked in tests/distributed/redis_lock_registry_test.cpp.

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s notebooks/tests -v
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import locklab_plots as lp  # noqa: E402
import readme_figures  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "build" / "release" / "benches" / "bench_redis_locks"
# Suites whose implementations are Redis locks of ours (or peers, or "none").
REDIS_SUITES = ("redis_locks", "scenario_stock", "scenario_vus_table")
# Scenario rows that are not a lock of the registry: the no-lock row and the
# stock scenario's baselines that need no lock.
NOT_LOCKS = {"none", *lp.STOCK_BASELINES}


def committed_results():
    """Every committed or local results file of a Redis suite."""
    files = []
    for suite in REDIS_SUITES:
        files += sorted((REPO / "results" / "reference").glob(f"**/{suite}.json"))
        files += sorted((REPO / "results").glob(f"{suite}.json"))
    return files


class RegistryFile(unittest.TestCase):
    def test_the_registry_names_every_lock_once_with_every_field_and_an_existing_header(self):
        locks = lp.redis_lock_registry()
        self.assertTrue(locks)
        for entry in locks:
            self.assertTrue((REPO / entry["header"]).is_file(), f"{entry['name']}: no {entry['header']}")
            for flag in ("reentrant", "watchdog", "guarded", "fence_in_every_script"):
                self.assertIsInstance(entry[flag], bool, f"{entry['name']}.{flag}")

    def test_a_missing_field_or_a_repeated_lock_is_a_registry_error_naming_it(self):
        good = json.loads(lp.REDIS_LOCK_REGISTRY.read_text())
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "redis_locks.json"
            broken = json.loads(json.dumps(good))
            del broken["locks"][1]["guarded"]
            path.write_text(json.dumps(broken))
            with self.assertRaisesRegex(lp.RegistryError, "guarded"):
                lp.redis_lock_registry(path)
            twice = json.loads(json.dumps(good))
            twice["locks"].append(twice["locks"][0])
            path.write_text(json.dumps(twice))
            with self.assertRaisesRegex(lp.RegistryError, "listed twice"):
                lp.redis_lock_registry(path)


class PlottingReadsTheRegistry(unittest.TestCase):
    def test_names_configurations_and_guarded_locks_map_to_their_registry_lock(self):
        first = lp.redis_lock_names()[0]
        self.assertEqual(lp.redis_lock_of(first), first)
        self.assertEqual(lp.redis_lock_of(f"{first}(fixed-1ms)"), first)
        self.assertEqual(lp.redis_lock_of(f"Guarded({first})"), first)
        self.assertIsNone(lp.redis_lock_of("python-redis.Lock(sleep=1ms)"))
        self.assertIsNone(lp.redis_lock_of("NoSuchLock"))

    def test_the_order_is_the_registry_then_guarded_then_peers(self):
        names = list(lp.redis_lock_names())
        guarded = [g for _, g in lp.guarded_pairs()]
        shuffled = ["python-redis.Lock(sleep=1ms)"] + guarded[::-1] + names[::-1] + [f"{names[0]}(x)"]
        self.assertEqual(lp.redis_impl_order(shuffled),
                         [names[0], f"{names[0]}(x)"] + names[1:] + guarded + ["python-redis.Lock(sleep=1ms)"])

    def test_the_overlay_and_the_guarded_pairs_come_from_the_registry(self):
        self.assertEqual(tuple(lp.OVERLAY_DISTRIBUTED_IMPLS), lp.redis_lock_names())
        self.assertEqual([lock for lock, _ in lp.guarded_pairs()],
                         [e["name"] for e in lp.redis_lock_registry() if e["guarded"]])

    def test_the_readme_figure_draws_only_registry_locks_and_peers(self):
        for impl in readme_figures.REDIS_IMPLS:
            self.assertTrue(lp.is_peer(impl) or lp.redis_lock_of(impl), f"README figure: {impl} is no registry lock")


class ResultsNameOnlyRegistryLocks(unittest.TestCase):
    @unittest.skipUnless(committed_results(), "no results of the Redis suites")
    def test_every_implementation_in_the_results_is_a_registry_lock_or_a_peer(self):
        for path in committed_results():
            for impl in lp.load_suite(path)["impl"].unique():
                with self.subTest(file=str(path.relative_to(REPO)), impl=impl):
                    self.assertTrue(lp.is_peer(impl) or impl in NOT_LOCKS or lp.redis_lock_of(impl),
                                    f"{impl} is in the results but not in {lp.REDIS_LOCK_REGISTRY.name}")


@unittest.skipUnless(BENCH.is_file(), "bench_redis_locks is not built (./lab build)")
class TheBenchRunsTheRegistry(unittest.TestCase):
    def test_the_bench_runs_every_registry_lock_and_only_those_in_registry_order(self):
        out = subprocess.run([str(BENCH), "--list_locks"], check=True, capture_output=True, text=True, timeout=60)
        impls = out.stdout.split()
        for impl in impls:
            self.assertIsNotNone(lp.redis_lock_of(impl), f"the bench runs {impl}, which is no registry lock")
        for name in lp.redis_lock_names():
            self.assertIn(name, impls, f"the bench does not run the registry's {name}")
        for _, guarded in lp.guarded_pairs():
            self.assertIn(guarded, impls, f"the registry marks it guarded, the bench does not run {guarded}")
        self.assertEqual(impls, lp.redis_impl_order(impls))


if __name__ == "__main__":
    unittest.main()
