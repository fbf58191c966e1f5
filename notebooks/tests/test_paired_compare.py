"""Tests of the paired comparison tool (benches/paired_compare.py): the
filter it hands Google Benchmark selects exactly one point of exactly the
two implementations, the statistics give the verdicts they promise, and a
whole run against a fake suite binary (a script with known throughputs)
writes every pair and exits 1 under --require-not-below when A is slower.

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s notebooks/tests -v
"""
import importlib.util
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

TOOL = Path(__file__).resolve().parents[2] / "benches" / "paired_compare.py"
spec = importlib.util.spec_from_file_location("paired_compare", TOOL)
pc = importlib.util.module_from_spec(spec)
sys.modules["paired_compare"] = pc  # dataclasses look the module up by name
spec.loader.exec_module(pc)

LISTING = """\
locks/std::mutex/waiters:2/cs_ns:0/iterations:1/process_time/manual_time
locks/std::mutex/waiters:2/cs_ns:0/think_ns_per_waiter:100/iterations:1/process_time/manual_time
locks/std::mutex/waiters:20/cs_ns:0/iterations:1/process_time/manual_time
locks/AdaptiveMutex/waiters:2/cs_ns:0/iterations:1/process_time/manual_time
locks/AdaptiveMutex(park-only)/waiters:2/cs_ns:0/iterations:1/process_time/manual_time
locks/AdaptiveMutex/waiters:2/cs_ns:0/think_ns_per_waiter:100/iterations:1/process_time/manual_time
"""


def names():
    return [re.sub(r"/iterations:.*$", "", line) for line in LISTING.splitlines()]


class FilterTest(unittest.TestCase):
    # Python's re agrees with POSIX ERE on everything the filter uses
    # (groups, alternation, anchors, escaped punctuation).
    def test_selects_one_point_of_both_implementations_only(self):
        f = pc.point_filter("locks", "AdaptiveMutex", "std::mutex", 2, "cs_ns:0")
        hit = [n for n in names() if re.search(f, n + "/iterations:1")]
        self.assertEqual(hit, ["locks/std::mutex/waiters:2/cs_ns:0", "locks/AdaptiveMutex/waiters:2/cs_ns:0"])

    def test_parentheses_in_a_name_are_literal(self):
        f = pc.point_filter("locks", "AdaptiveMutex(park-only)", "std::mutex", 2, "cs_ns:0")
        hit = [n for n in names() if re.search(f, n)]
        self.assertEqual(hit, ["locks/std::mutex/waiters:2/cs_ns:0", "locks/AdaptiveMutex(park-only)/waiters:2/cs_ns:0"])
        self.assertEqual(pc.ere_escape("absl.Mutex(x+y)"), r"absl\.Mutex\(x\+y\)")

    def test_parse_points_strips_google_benchmark_suffixes(self):
        self.assertEqual(pc.parse_points(LISTING, "locks", "std::mutex"),
                         {(2, "cs_ns:0"), (2, "cs_ns:0/think_ns_per_waiter:100"), (20, "cs_ns:0")})
        self.assertEqual(pc.parse_points(LISTING, "locks", "AdaptiveMutex"),
                         {(2, "cs_ns:0"), (2, "cs_ns:0/think_ns_per_waiter:100")})
        self.assertEqual(pc.parse_points(LISTING, "locks", "Nope"), set())

    def test_output_name_is_a_plain_file_name(self):
        self.assertEqual(pc.output_name("locks", "AdaptiveMutex(park-only)", "std::mutex"),
                         "locks_AdaptiveMutex_park-only__vs_std__mutex.json")


class StatisticsTest(unittest.TestCase):
    def test_pair_is_the_ratio_of_medians(self):
        doc = {"context": {"busy_work_iterations_per_ns": "3.5"}, "benchmarks": [
            {"run_name": "locks/A/waiters:2/cs_ns:0", "run_type": "iteration", "items_per_second": 10.0},
            {"run_name": "locks/A/waiters:2/cs_ns:0", "run_type": "iteration", "items_per_second": 30.0},
            {"run_name": "locks/B/waiters:2/cs_ns:0", "run_type": "iteration", "items_per_second": 10.0},
            {"run_name": "locks/B/waiters:2/cs_ns:0", "run_type": "aggregate", "items_per_second": 99.0}]}
        pair = pc.pair_from_json(doc, "locks", "A", "B")
        self.assertAlmostEqual(pair["ratio"], 2.0)
        self.assertEqual(pair["busy_work_iterations_per_ns"], "3.5")
        self.assertIsNone(pc.pair_from_json({"benchmarks": doc["benchmarks"][:2]}, "locks", "A", "B"))

    def summary(self, ratios):
        return pc.summarise([{"point": "waiters:2/cs_ns:0", "ratio": r} for r in ratios])[0]

    def test_verdicts(self):
        self.assertEqual(self.summary([1.10, 1.12, 1.08, 1.15, 1.11, 1.09, 1.13])["verdict"], "above")
        self.assertEqual(self.summary([0.90, 0.92, 0.88, 0.95, 0.91, 0.89, 0.93])["verdict"], "below")
        self.assertEqual(self.summary([0.90, 1.10, 0.95, 1.05, 1.00, 0.97, 1.03])["verdict"], "level")
        self.assertEqual(self.summary([0.5, 0.5, 0.5])["verdict"], "too few")

    def test_interval_is_reproducible_and_holds_the_median(self):
        ratios = [0.97, 1.02, 1.05, 0.99, 1.01, 1.08, 0.95, 1.00, 1.03]
        s1, s2 = self.summary(ratios), self.summary(ratios)
        self.assertEqual((s1["ci_low"], s1["ci_high"]), (s2["ci_low"], s2["ci_high"]))
        self.assertLessEqual(s1["ci_low"], s1["median_ratio"])
        self.assertLessEqual(s1["median_ratio"], s1["ci_high"])
        self.assertAlmostEqual(s1["median_ratio"], 1.01)

    def test_points_sort_by_workload_then_waiters(self):
        rows = pc.summarise([{"point": p, "ratio": 1.0} for p in
                             ("waiters:16/cs_ns:0", "waiters:2/cs_ns:200", "waiters:2/cs_ns:0")])
        self.assertEqual([r["point"] for r in rows], ["waiters:2/cs_ns:0", "waiters:16/cs_ns:0", "waiters:2/cs_ns:200"])


# A stand-in suite binary: lists two points of A and B, and for a run writes
# Google Benchmark JSON in which A does 90 acquisitions/s and B 100, after
# checking that the filter selects only the point it was asked for.
FAKE_BENCH = textwrap.dedent("""\
    #!/usr/bin/python3
    import json, os, re, sys
    args = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
    names = ["locks/%s/waiters:%d/cs_ns:0" % (i, w) for i in ("A", "B") for w in (2, 4)]
    if "--benchmark_list_tests" in sys.argv:
        print("\\n".join(n + "/iterations:1/manual_time" for n in names))
        sys.exit(0)
    fail_on = os.environ.get("FAKE_FAIL_ON_CALL")  # "N,counter-file": the Nth run exits 1
    if fail_on:
        n, counter = fail_on.split(",")
        calls = int(open(counter).read() or 0) + 1 if os.path.exists(counter) else 1
        open(counter, "w").write(str(calls))
        if calls == int(n):
            sys.exit("fake failure")
    chosen = [n for n in names if re.search(args["--benchmark_filter"], n)]
    if len(chosen) != 2 or not all(n.endswith("waiters:%s/cs_ns:0" % args["--waiters"]) for n in chosen):
        sys.exit("bad filter: " + args["--benchmark_filter"])
    runs = [{"run_name": n, "run_type": "iteration", "items_per_second": 90.0 if "/A/" in n else 100.0}
            for n in chosen for _ in range(int(args["--benchmark_repetitions"]))]
    json.dump({"context": {}, "benchmarks": runs}, open(args["--benchmark_out"], "w"))
""")


def fake_bench(directory):
    """Writes FAKE_BENCH as an executable bench_locks in `directory`."""
    bench = Path(directory) / "bench_locks"
    bench.write_text(FAKE_BENCH)
    bench.chmod(bench.stat().st_mode | stat.S_IXUSR)
    return bench


class EndToEndTest(unittest.TestCase):
    def test_a_run_against_a_fake_suite(self):
        with tempfile.TemporaryDirectory() as tmp:
            bench = fake_bench(tmp)
            out = Path(tmp) / "out"
            cmd = [sys.executable, str(TOOL), "A", "B", "--bench", str(bench), "--reps", "5",
                   "--duration_ms", "1", "--out-dir", str(out)]
            plain = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
            self.assertEqual(plain.returncode, 0, plain.stderr)
            self.assertIn("2 points: 0 above, 0 level, 2 below", plain.stdout)
            doc = json.loads((out / "locks_A_vs_B.json").read_text())
            self.assertEqual(len(doc["pairs"]), 10)
            self.assertTrue(all(abs(p["ratio"] - 0.9) < 1e-9 for p in doc["pairs"]))
            self.assertEqual([p["point"] for p in doc["points"]], ["waiters:2/cs_ns:0", "waiters:4/cs_ns:0"])
            strict = subprocess.run(cmd + ["--require-not-below"], capture_output=True, text=True)
            self.assertEqual(strict.returncode, 1, strict.stderr)

    def test_a_failing_point_stops_the_run_but_keeps_the_pairs_measured(self):
        with tempfile.TemporaryDirectory() as tmp:
            bench = fake_bench(tmp)
            out = Path(tmp) / "out.json"
            env = {**os.environ, "FAKE_FAIL_ON_CALL": f"3,{tmp}/calls"}
            r = subprocess.run([sys.executable, str(TOOL), "A", "B", "--bench", str(bench), "--reps", "5",
                                "--duration_ms", "1", "--out", str(out)], capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("stopped:", r.stderr)
            self.assertIn("fake failure", r.stderr)
            doc = json.loads(out.read_text())
            self.assertFalse(doc["complete"])
            self.assertEqual(len(doc["pairs"]), 2)
            self.assertEqual(doc["points"][0]["verdict"], "too few")

    def test_unknown_implementation_is_a_clear_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            bench = fake_bench(tmp)
            r = subprocess.run([sys.executable, str(TOOL), "Nope", "B", "--bench", str(bench)],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 2)
            self.assertIn("no points of 'Nope'", r.stderr)

    def test_bad_arguments_are_refused(self):
        r = subprocess.run([sys.executable, str(TOOL), "A", "B", "--reps", "1"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--reps must be >= 2", r.stderr)


if __name__ == "__main__":
    unittest.main()
