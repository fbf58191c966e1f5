"""Tests of notebooks/locklab_plots.py on small synthetic results files.

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s notebooks/tests -v
"""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest
import unittest.mock
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import locklab_plots as lp  # noqa: E402

CONTEXT = {
    "date": "2026-11-30T04:10:00+00:00", "host_name": "box", "num_cpus": 2,
    "library_build_type": "release", "locklab_suite": "counters", "locklab_mode": "quick",
    "cpu_model": "AMD EPYC", "kernel": "6.18.44", "compiler": "g++ 12.2.0",
    "git_revision": "abc1234", "duration_ms": "200",
}


def entry(name, items_per_second, rep=0, reps=1, **counters):
    """One Google Benchmark "iteration" entry with locklab counters."""
    return {"name": name, "run_name": name, "run_type": "iteration", "repetitions": reps,
            "repetition_index": rep, "threads": 1, "iterations": 1, "real_time": 200.0,
            "cpu_time": 390.0, "time_unit": "ms", "items_per_second": items_per_second,
            "ns_per_op": 1e9 / items_per_second, "cpu_per_wall": 1.95, "fairness": 0.9,
            # the harness reports its parameters as (float) counters too
            "waiters": float(name.split("waiters:")[1].split("/")[0]), "cs_ns": 0.0, "think_ns": 0.0,
            **counters}


def aggregate(name, kind, items_per_second):
    """A Google Benchmark aggregate entry (deliberately inconsistent values:
    the loader must compute its own median from the iterations)."""
    return {"name": f"{name}_{kind}", "run_name": name, "run_type": "aggregate",
            "repetitions": 3, "threads": 1, "aggregate_name": kind, "iterations": 3,
            "real_time": 200.0, "cpu_time": 390.0, "time_unit": "ms",
            "items_per_second": items_per_second, "waiters": 1}


def single_run():
    """counters suite, one run per point, ours and one peer."""
    benchmarks = []
    for impl, base in [("FetchAddCounter", 100e6), ("CasLoopCounter", 50e6),
                       ("std::mutex", 10e6)]:
        for waiters in (1, 2, 4):
            benchmarks.append(entry(f"counters/{impl}/waiters:{waiters}", base / waiters,
                                    cas_failures_per_op=0.25 * waiters))
    return {"context": CONTEXT, "benchmarks": benchmarks}


def repetitions():
    """Three repetitions per point plus aggregates (which must be ignored)."""
    benchmarks = []
    for impl in ("FetchAddCounter", "StripedCounter"):
        for waiters in (1, 2):
            name = f"counters/{impl}/waiters:{waiters}"
            for rep, rate in enumerate((30e6, 10e6, 14e6)):
                benchmarks.append(entry(name, rate * waiters, rep, 3,
                                        cas_failures_per_op=float(rep)))
            for kind in ("mean", "median", "stddev", "cv"):
                benchmarks.append(aggregate(name, kind, 999e6))
    return {"context": dict(CONTEXT, locklab_mode="full"), "benchmarks": benchmarks}


def two_knob_values():
    """locks suite: cs_ns 200 named, cs_ns 0 only reported as a counter."""
    benchmarks = []
    for suffix in ("", "/cs_ns:200"):
        for waiters in (1, 2):
            point = entry(f"locks/MutexLock/waiters:{waiters}{suffix}",
                          (4e6 if suffix else 40e6) / waiters)
            point["cs_ns"] = 200.0 if suffix else 0.0
            benchmarks.append(point)
    return {"context": dict(CONTEXT, locklab_suite="locks"), "benchmarks": benchmarks}


def physical_limits():
    """physical_limits suite: one point per measure, with floor_ns."""
    benchmarks = [entry(f"physical_limits/{impl}/waiters:{w}", 1e9 / ns, floor_ns=ns)
                  for impl, w, ns in (("AtomicRmw", 1, 6.0), ("CacheLineHandoff", 2, 250.0),
                                      ("FutexWakeToRun", 2, 4000.0))]
    return {"context": dict(CONTEXT, locklab_suite="physical_limits"), "benchmarks": benchmarks}


def jvm_counters():
    """A peer driver's file overlaying the counters suite."""
    return {"context": dict(CONTEXT, compiler="OpenJDK 17"),
            "benchmarks": [entry(f"counters/java.LongAdder/waiters:{w}", 200e6 * w) for w in (1, 2, 4)]}


class Fixtures(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def write(self, relative, data):
        path = self.tmp / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(data if isinstance(data, str) else json.dumps(data))
        return path


class ParsingTest(Fixtures):
    def test_parse_name_with_knobs(self):
        self.assertEqual(lp.parse_name("locks/TicketLock/waiters:8/cs_ns:200/ratio:0.5"),
                         {"suite": "locks", "impl": "TicketLock", "waiters": 8,
                          "cs_ns": 200, "ratio": 0.5})

    def test_parse_name_drops_google_benchmark_parts(self):
        self.assertEqual(lp.parse_name("counters/X/waiters:2/min_time:0.200/real_time"),
                         {"suite": "counters", "impl": "X", "waiters": 2})

    def test_parse_name_keeps_cpp_namespaces(self):
        self.assertEqual(lp.parse_name("locks/std::mutex/waiters:4")["impl"], "std::mutex")

    def test_scenario_rows_are_tabulated_not_plotted(self):
        data = {"context": dict(CONTEXT, locklab_suite="coupon"), "benchmarks": [
            {"name": "coupon/GuardedLock", "run_type": "iteration", "iterations": 1,
             "items_per_second": 2e6, "phantom_issues": 0},
            {"name": "naive", "run_type": "iteration", "iterations": 1,
             "items_per_second": 3e6, "phantom_issues": 7}]}
        path = self.write("coupon.json", data)
        df = lp.load_suite(path)
        self.assertEqual(df["impl"].tolist(), ["GuardedLock", "naive"])
        self.assertEqual(df["phantom_issues"].tolist(), [0, 7])
        self.assertEqual(lp.plot_suite(path, self.tmp / "out"), [])
        rows = [line.split() for line in lp.summary_table(path).splitlines()]
        self.assertIn(["naive", "3.0"], rows)

    def test_single_run_rows(self):
        df = lp.load_suite(self.write("counters.json", single_run()))
        self.assertEqual(len(df), 9)
        row = df[(df["impl"] == "CasLoopCounter") & (df["waiters"] == 4)].iloc[0]
        self.assertEqual(row["suite"], "counters")
        self.assertEqual(row["n_reps"], 1)
        self.assertAlmostEqual(row["items_per_second"], 12.5e6)
        self.assertAlmostEqual(row["items_per_second_min"], 12.5e6)
        self.assertAlmostEqual(row["cas_failures_per_op"], 1.0)
        self.assertEqual(lp.family_counters(df), ["cas_failures_per_op"])
        # Google Benchmark's own numbers are not counters.
        self.assertNotIn("real_time", df.columns)
        self.assertNotIn("iterations", df.columns)

    def test_median_min_max_over_repetitions_ignoring_aggregates(self):
        df = lp.load_suite(self.write("counters.json", repetitions()))
        self.assertEqual(len(df), 4)
        row = df[(df["impl"] == "StripedCounter") & (df["waiters"] == 2)].iloc[0]
        self.assertEqual(row["n_reps"], 3)
        self.assertAlmostEqual(row["items_per_second"], 28e6)  # not the mean, 36e6
        self.assertAlmostEqual(row["items_per_second_min"], 20e6)
        self.assertAlmostEqual(row["items_per_second_max"], 60e6)
        self.assertAlmostEqual(row["cas_failures_per_op"], 1.0)
        self.assertAlmostEqual(row["cas_failures_per_op_max"], 2.0)

    def test_busy_work_calibration_is_a_column_not_a_counter_panel(self):
        data = two_knob_values()
        for i, point in enumerate(data["benchmarks"]):
            if point["cs_ns"] == 200.0:
                point["busy_work_iterations_per_ns"] = 3.0 + i
        df = lp.load_suite(self.write("locks.json", data))
        self.assertNotIn("busy_work_iterations_per_ns", lp.counter_columns(df))
        self.assertEqual(lp.family_counters(df), [])
        self.assertEqual(sorted(df["busy_work_iterations_per_ns"].dropna().tolist()), [5.0, 6.0])

    def test_aggregates_only_falls_back_to_median(self):
        data = {"context": CONTEXT, "benchmarks": [
            aggregate("counters/X/waiters:1", "mean", 5e6),
            aggregate("counters/X/waiters:1", "median", 7e6)]}
        df = lp.load_suite(self.write("counters.json", data))
        self.assertEqual(df["items_per_second"].tolist(), [7e6])

    def test_knob_groups(self):
        df = lp.load_suite(self.write("locks.json", two_knob_values()))
        groups = lp.knob_groups(df)
        self.assertEqual([knobs for knobs, _ in groups], [{"cs_ns": 0}, {"cs_ns": 200}])
        self.assertEqual(groups[1][1]["waiters"].tolist(), [1, 2])
        self.assertEqual(groups[1][1]["items_per_second"].tolist(), [4e6, 2e6])

    def test_peers(self):
        for peer in ("std::mutex", "absl::Mutex", "tbb::spin_mutex", "ck_spinlock_mcs",
                     "absl.Mutex(no-detect)", "tbb.queuing_mutex", "ck.clh", "glibc.adaptive",
                     "none", "java.ReentrantLock", "node-redlock", "python-redis-lock"):
            self.assertTrue(lp.is_peer(peer), peer)
        for ours in ("FetchAddCounter", "StripedCounter", "TicketLock", "MutexCounter",
                     "nonexistent", "McsParkingLock"):
            self.assertFalse(lp.is_peer(ours), ours)
        df = lp.load_suite(self.write("counters.json", single_run()))
        self.assertEqual(sorted(df[df["peer"]]["impl"].unique()), ["std::mutex"])

    def test_machine_title(self):
        self.assertEqual(lp.machine_title(CONTEXT),
                         "AMD EPYC, 2 cores, kernel 6.18 \u2014 quick run abc1234 2026-11-30")

    def test_find_suite_json_order(self):
        newer = dict(CONTEXT, date="2026-12-01T00:00:00")
        self.write("notebooks/locklab_plots.py", "")
        self.write("results/reference/b-old/counters.json", single_run())
        self.write("results/reference/a-new/counters.json",
                   {"context": newer, "benchmarks": single_run()["benchmarks"]})
        env = dict(os.environ)
        os.environ.pop(lp.RESULTS_ENV, None)
        try:
            self.assertEqual(lp.find_suite_json("counters", self.tmp),
                             self.tmp / "results/reference/a-new/counters.json")
            own = self.write("results/counters.json", single_run())
            self.assertEqual(lp.find_suite_json("counters", self.tmp), own)
            self.assertEqual(lp.find_repo_root(self.tmp / "notebooks"), self.tmp.resolve())
            os.environ[lp.RESULTS_ENV] = str(self.tmp / "elsewhere")
            self.assertIsNone(lp.find_suite_json("counters", self.tmp))
        finally:
            os.environ.clear()
            os.environ.update(env)


class OutputTest(Fixtures):
    def assert_png(self, path):
        self.assertTrue(path.is_file(), path)
        self.assertGreater(path.stat().st_size, 10_000, path)
        self.assertEqual(path.read_bytes()[:8], b"\x89PNG\r\n\x1a\n")

    def test_plot_suite_single(self):
        written = lp.plot_suite(self.write("counters.json", single_run()), self.tmp / "out")
        self.assertEqual(written, [self.tmp / "out" / "counters.png"])
        self.assert_png(written[0])

    def test_plot_suite_repetitions(self):
        written = lp.plot_suite(self.write("counters.json", repetitions()), self.tmp / "out")
        self.assertEqual([p.name for p in written], ["counters.png"])
        self.assert_png(written[0])

    def test_plot_suite_one_file_per_knob_value(self):
        written = lp.plot_suite(self.write("locks.json", two_knob_values()), self.tmp / "out")
        self.assertEqual([p.name for p in written], ["locks_cs_ns_0.png", "locks_cs_ns_200.png"])
        for path in written:
            self.assert_png(path)

    def test_summary_table(self):
        table = lp.summary_table(self.write("counters.json", single_run()))
        lines = table.splitlines()
        self.assertIn("AMD EPYC, 2 cores", lines[0])
        header = next(line for line in lines if line.startswith("impl"))
        self.assertEqual(header.split()[-3:], ["1", "2", "4"])
        fetch_add = next(line for line in lines if line.startswith("FetchAddCounter"))
        self.assertEqual(fetch_add.split()[1:], ["100.0", "50.0", "25.0"])
        peer = next(line for line in lines if line.startswith("std::mutex"))
        self.assertEqual(peer.split()[1:], ["*", "10.0", "5.0", "2.5"])
        self.assertEqual(len(set(map(len, lines[3:6]))), 1, "columns are not aligned")

    def test_summary_table_repetitions_and_knobs(self):
        table = lp.summary_table(self.write("counters.json", repetitions()))
        self.assertIn("median of 3 reps", table)
        self.assertIn("14.0", table)  # median of 30, 10, 14 M/s at one waiter
        self.assertNotIn("999", table)  # aggregates are not used
        table = lp.summary_table(self.write("locks.json", two_knob_values()))
        self.assertIn("(cs_ns=200)", table)


class OrderTest(Fixtures):
    def test_points_in_registration_order_despite_interleaving(self):
        data = single_run()
        for i, e in enumerate(data["benchmarks"]):
            e["family_index"] = i
        data["benchmarks"].reverse()  # what random interleaving can do
        df = lp.load_suite(self.write("counters.json", data))
        self.assertEqual(list(dict.fromkeys(df["impl"])), ["FetchAddCounter", "CasLoopCounter", "std::mutex"])
        self.assertEqual(list(df["waiters"][:3]), [1, 2, 4])


class UnitTest(Fixtures):
    def test_slow_suites_are_tabulated_in_k_or_plain_ops(self):
        data = {"context": dict(CONTEXT, locklab_suite="redis_locks"), "benchmarks": [
            entry(f"redis_locks/SpinLock/waiters:{w}", rate) for w, rate in ((1, 418.0), (2, 2500.0))]}
        table = lp.summary_table(self.write("redis_locks.json", data))
        self.assertIn("throughput, k ops/s", table)
        self.assertEqual(next(l for l in table.splitlines() if l.startswith("SpinLock")).split()[1:],
                         ["0.418", "2.5"])
        data["benchmarks"] = [entry("redis_locks/SpinLock/waiters:1", 20.0)]
        self.assertIn("throughput, ops/s", lp.summary_table(self.write("slow.json", data)))


class ResultsDirTest(Fixtures):
    def test_peer_files_merge_into_their_suite(self):
        self.write("r/counters.json", single_run())
        self.write("r/jvm_counters.json", jvm_counters())
        merged = lp.load_results_dir(self.tmp / "r")
        self.assertEqual(list(merged), ["counters"])
        df, context = merged["counters"]
        self.assertIn("java.LongAdder", set(df["impl"]))
        self.assertIn("FetchAddCounter", set(df["impl"]))
        self.assertEqual(context["compiler"], "g++ 12.2.0", "the title names our run, not the peer's")
        written = lp.plot_results_dir(self.tmp / "r", self.tmp / "out")
        self.assertEqual([p.name for p in written], ["counters.png"])

    def test_physical_floors_and_their_plot(self):
        self.write("r/physical_limits.json", physical_limits())
        self.write("r/locks.json", two_knob_values())
        self.assertEqual(lp.physical_floors(self.tmp / "r"), {
            "ceiling: one cache-line hand-off per acquisition": 250.0,
            "ceiling: one futex wake-to-run per acquisition": 4000.0})
        self.assertEqual(lp.physical_floors(self.tmp / "nothing-here"), {})
        written = lp.plot_results_dir(self.tmp / "r", self.tmp / "out")
        self.assertEqual(sorted(p.name for p in written),
                         ["locks_cs_ns_0.png", "locks_cs_ns_200.png", "physical_limits.png"])
        table = lp.summary_table(self.tmp / "r" / "physical_limits.json")
        self.assertIn("CacheLineHandoff", table)
        self.assertIn("250.0", table)

    def test_scenario_tables_get_bar_charts(self):
        # A scenario file: no waiters axis, repeated runs per variant.
        def run(name, violation, phantom, rep):
            return {"name": f"scenario_faults/{name}", "run_name": f"scenario_faults/{name}",
                    "run_type": "iteration", "repetitions": 3, "repetition_index": rep,
                    "threads": 1, "iterations": 1, "real_time": 5.0, "cpu_time": 5.0,
                    "time_unit": "ms", "violation": violation, "phantom_issues": phantom,
                    "fence_rejections": 1 - violation, "lock_timeouts": 0}
        benchmarks = [run(n, v, p, r) for n, v, p in (("pause", 1, 2), ("pause+fence", 0, 0))
                      for r in range(3)]
        self.write("r/scenario_faults.json",
                   {"context": dict(CONTEXT, locklab_suite="scenario_faults"), "benchmarks": benchmarks})
        df = lp.load_suite(self.tmp / "r" / "scenario_faults.json")
        self.assertEqual(df.set_index("impl").loc["pause", "violation"], 1)
        written = lp.plot_results_dir(self.tmp / "r", self.tmp / "out")
        self.assertEqual([p.name for p in written], ["scenario_faults.png"])
        self.assertGreater(written[0].stat().st_size, 1000)

    def test_time_series_rows_are_not_bars(self):
        # The load test: table rows plus samples with a `t:` knob (the
        # scenario's waiters over time); bars and summary skip the samples.
        def row(name, **counters):
            return {"name": f"scenario_load_test/{name}", "run_type": "iteration", "iterations": 1,
                    "family_index": 0, "real_time": 1.0, "cpu_time": 1.0, "time_unit": "ms", **counters}
        table = [row(f"hold1-10s.{impl}", success_rate=s, mean_wait_ms=w, max_waiters=m, capacity_per_min=10.9)
                 for impl, s, w, m in (("before", 0.23, 56000, 63), ("after", 0.21, 4279, 6))]
        series = [row(f"hold1-10s.{impl}/t:{t}", t_s=t + 0.1, lock_waiters=n * t, queued=0, busy_workers=n * t)
                  for impl, n in (("before", 3), ("after", 1)) for t in range(0, 20, 5)]
        self.write("r/scenario_load_test.json",
                   {"context": dict(CONTEXT, locklab_suite="scenario_load_test"), "benchmarks": table + series})
        written = lp.plot_results_dir(self.tmp / "r", self.tmp / "out")
        self.assertEqual([p.name for p in written], ["scenario_load_test.png", "scenario_load_test_waiters.png"])
        df = lp.load_suite(self.tmp / "r" / "scenario_load_test.json")
        self.assertEqual(lp.table_rows(df)["impl"].tolist(), ["hold1-10s.before", "hold1-10s.after"])
        summary = lp.summary_table(self.tmp / "r" / "scenario_load_test.json")
        self.assertNotIn("t=", summary)
        self.assertEqual(summary.count("hold1-10s.before"), 1)

    def test_floor_lines_only_on_lock_suites(self):
        self.assertTrue(lp.wants_floors("locks"))
        self.assertFalse(lp.wants_floors("counters"))


class CommandLineTest(Fixtures):
    def run_main(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = lp.main([str(a) for a in argv])
            except SystemExit as exit_:
                code = exit_.code
        return code, out.getvalue(), err.getvalue()

    def test_plot_writes_to_default_out_dir(self):
        self.write("results/counters.json", single_run())
        self.write("results/locks.json", two_knob_values())
        code, out, _ = self.run_main("plot", self.tmp / "results")
        self.assertEqual(code, 0)
        plots = self.tmp / "results" / "plots"
        self.assertEqual(sorted(out.split()), sorted(str(plots / n) for n in (
            "counters.png", "locks_cs_ns_0.png", "locks_cs_ns_200.png")))

    def test_plot_empty_dir(self):
        code, out, err = self.run_main("plot", self.tmp)
        self.assertEqual(code, 2)
        self.assertIn("no *.json", err)
        self.assertEqual(out, "")

    def test_plot_missing_dir(self):
        code, _, err = self.run_main("plot", self.tmp / "nope")
        self.assertEqual(code, 2)
        self.assertIn("no such directory", err)

    def test_not_a_benchmark_json(self):
        self.write("results/counters.json", single_run())
        bad = self.write("results/settings.json", {"colour": "blue"})
        code, out, err = self.run_main("plot", self.tmp / "results")
        self.assertEqual(code, 2)
        self.assertIn(str(bad), err)
        self.assertFalse((self.tmp / "results" / "plots").exists())
        code, _, err = self.run_main("summary", self.write("broken.json", "{not json"))
        self.assertEqual(code, 2)
        self.assertIn("cannot read JSON", err)

    def test_summary(self):
        code, out, _ = self.run_main("summary", self.write("counters.json", single_run()))
        self.assertEqual(code, 0)
        self.assertIn("FetchAddCounter", out)

    def test_help(self):
        code, out, _ = self.run_main("--help")
        self.assertEqual(code, 0)
        self.assertIn("plot", out)
        self.assertIn("summary", out)


class NoDataTest(unittest.TestCase):
    """lp.no_data: a message for a reader, a failure under ./lab test."""

    def test_prints_the_message_when_data_is_not_required(self):
        with unittest.mock.patch.dict(os.environ, {lp.REQUIRE_DATA_ENV: ""}):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                lp.no_data("No data: run ./lab bench counters")
        self.assertIn("./lab bench counters", out.getvalue())

    def test_raises_when_data_is_required(self):
        with unittest.mock.patch.dict(os.environ, {lp.REQUIRE_DATA_ENV: "1"}):
            with self.assertRaisesRegex(lp.MissingData, "bench counters"):
                lp.no_data("No data: run ./lab bench counters")


if __name__ == "__main__":
    unittest.main()
