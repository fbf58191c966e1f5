"""Tests of the distributed-suite additions to locklab_plots: the process
split (split_rows, plot_process_split, split_table), the local-vs-distributed
overlay (plot_local_vs_distributed, write_local_vs_distributed) and how
``plot`` uses them, on small synthetic locks / redis_locks results.

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s notebooks/tests -v
"""
import os
import sys
import unittest
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import matplotlib.pyplot as plt  # noqa: E402

import locklab_plots as lp  # noqa: E402
from test_locklab_plots import CONTEXT, Fixtures, entry  # noqa: E402

SPLITS = ((1, 16), (4, 4), (16, 1))


def redis_locks(impls=("SpinLock", "FairLock"), peers=(), splits=SPLITS, handoff=True, hold_us=1000):
    """redis_locks: a curve per impl, its split points and a hand-off point."""
    benchmarks = []
    for k, impl in enumerate(list(impls) + list(peers)):
        base = 400.0 * (k + 1)
        for waiters in (1, 2, 4, 16):
            benchmarks.append(entry(f"redis_locks/{impl}/waiters:{waiters}/hold_us:{hold_us}",
                                    base * (1 + 0.1 * waiters), p95_ms=0.5 * waiters,
                                    redis_cmds_per_acquire=2.0 + waiters))
        for p, t in splits:
            benchmarks.append(entry(f"redis_locks/{impl}/waiters:{p * t}/hold_us:{hold_us}/processes:{p}",
                                    base / p, p50_ms=1.0 * p, p95_ms=3.0 * p,
                                    round_trips_per_acquire=2.0 + p, redis_cmds_per_acquire=3.0 + p))
        if handoff:
            benchmarks.append(entry(f"redis_locks/{impl}/waiters:1/hold_us:{hold_us}/handoff:1", 150.0))
    return {"context": dict(CONTEXT, locklab_suite="redis_locks"), "benchmarks": benchmarks}


def locks(cs_values=(0, 1000)):
    """locks: three local locks (one a peer) at two critical-section sizes."""
    benchmarks = []
    for cs in cs_values:
        for impl, base in (("std::mutex", 70e6), ("TtasLock", 170e6), ("McsLock", 80e6)):
            for waiters in (1, 2, 4, 16, 64):
                benchmarks.append(entry(f"locks/{impl}/waiters:{waiters}/cs_ns:{cs}",
                                        base / (1 + cs / 100) / waiters))
    return {"context": dict(CONTEXT, locklab_suite="locks"), "benchmarks": benchmarks}


class SplitTest(Fixtures):
    def tearDown(self):
        plt.close("all")
        super().tearDown()

    def test_split_rows_separates_the_processes_knob(self):
        df = lp.load_suite(self.write("r.json", redis_locks()))
        curves, splits = lp.split_rows(df)
        self.assertEqual(len(splits), 2 * len(SPLITS))
        self.assertTrue(splits["processes"].notna().all())
        self.assertTrue(curves["processes"].isna().all())
        self.assertEqual(len(curves) + len(splits), len(df))

    def test_split_rows_without_the_knob(self):
        df = lp.load_suite(self.write("r.json", locks()))
        curves, splits = lp.split_rows(df)
        self.assertEqual(len(curves), len(df))
        self.assertTrue(splits.empty)

    def test_plot_process_split_one_png_with_p_x_t_ticks(self):
        df = lp.load_suite(self.write("r.json", redis_locks(peers=("python-redis.Lock(sleep=1ms)",))))
        paths = lp.plot_process_split(df, CONTEXT, self.tmp / "out")
        self.assertEqual([p.name for p in paths], ["redis_locks_processes.png"])
        self.assertGreater(paths[0].stat().st_size, 1000)

    def test_plot_process_split_axes(self):
        df = lp.load_suite(self.write("r.json", redis_locks()))
        captured = {}
        real_savefig = plt.Figure.savefig

        def keep(fig, *args, **kwargs):
            captured["fig"] = fig
            return real_savefig(fig, *args, **kwargs)

        plt.Figure.savefig = keep
        try:
            lp.plot_process_split(df, CONTEXT, self.tmp / "out")
        finally:
            plt.Figure.savefig = real_savefig
        axes = [ax for ax in captured["fig"].axes if ax.get_title()]
        self.assertEqual([ax.get_title() for ax in axes],
                         ["acquisitions/s", "p95 acquire, ms", "Redis commands / acquisition"])
        self.assertEqual([t.get_text() for t in axes[0].get_xticklabels()], ["1x16", "4x4", "16x1"])
        fair = next(line for line in axes[0].lines if line.get_label() == "FairLock")
        self.assertEqual(list(fair.get_xdata()), [1, 4, 16])
        self.assertEqual(list(fair.get_ydata()), [800.0, 200.0, 50.0])

    def test_plot_process_split_one_png_per_total(self):
        df = lp.load_suite(self.write("r.json", redis_locks(splits=((1, 16), (4, 4), (1, 50), (5, 10)))))
        names = sorted(p.name for p in lp.plot_process_split(df, CONTEXT, self.tmp / "out"))
        self.assertEqual(names, ["redis_locks_processes_waiters_16_hold_us_1000.png",
                                 "redis_locks_processes_waiters_50_hold_us_1000.png"])

    def test_no_split_points_no_png(self):
        df = lp.load_suite(self.write("r.json", redis_locks(splits=())))
        self.assertEqual(lp.plot_process_split(df, CONTEXT, self.tmp / "out"), [])
        self.assertEqual(lp.split_table(df), "")

    def test_split_table(self):
        df = lp.load_suite(self.write("r.json", redis_locks(peers=("python-redis.Lock(sleep=1ms)",))))
        lines = lp.split_table(df).splitlines()
        self.assertEqual(lines[0].split(), ["impl", "P", "x", "T", "acq/s", "p50", "ms", "p95", "ms",
                                            "rt/acq", "cmds/acq"])
        self.assertEqual(len(lines), 1 + 3 * len(SPLITS))
        self.assertEqual(lines[1].split(), ["SpinLock", "1x16", "400", "1.00", "3.0", "3.00", "4.00"])
        self.assertIn("python-redis.Lock(sleep=1ms) *", lines[-1])
        self.assertEqual(lines[-1].split()[-6:], ["16x1", "75", "16.00", "48.0", "18.00", "19.00"])


class OverlayTest(Fixtures):
    def tearDown(self):
        plt.close("all")
        super().tearDown()

    def frames(self, **kwargs):
        return (lp.load_suite(self.write("locks.json", locks())),
                lp.load_suite(self.write("redis_locks.json", redis_locks(**kwargs))))

    def test_two_scales_and_a_normalised_panel(self):
        local, dist = self.frames(peers=("python-redis.Lock(sleep=100ms)",))
        fig = lp.plot_local_vs_distributed(local, dist, CONTEXT)
        left, right, twin = fig.axes[0], fig.axes[1], fig.axes[2]
        curves = lambda ax: [line for line in ax.lines if not line.get_label().startswith("_")]  # noqa: E731
        # Left axis: the local locks in M/s, at the largest cs_ns (1000).
        self.assertEqual(sorted(line.get_label() for line in curves(left)),
                         ["McsLock", "TtasLock", "std::mutex"])
        ttas = next(line for line in left.lines if line.get_label() == "TtasLock")
        self.assertAlmostEqual(ttas.get_ydata()[0], 170 / 11)
        # Twin axis: Redis locks in acquisitions/s; curve points only (no
        # split, no hand-off), our defaults present plus every peer.
        self.assertEqual([line.get_label() for line in twin.lines],
                         ["SpinLock", "FairLock", "python-redis.Lock(sleep=100ms)"])
        spin = next(line for line in twin.lines if line.get_label() == "SpinLock")
        self.assertEqual(list(spin.get_xdata()), [1, 2, 4, 16])
        self.assertAlmostEqual(spin.get_ydata()[0], 440.0)
        self.assertEqual(left.get_xscale(), "log")
        self.assertEqual(twin.get_yscale(), "log")
        # Normalised: each family divided by its best one-waiter throughput.
        # 3 local and 3 Redis curves (4 points each at least); the y = 1 and
        # the cores reference lines have 2.
        normalised = [line for line in right.lines if len(line.get_xdata()) > 2]
        self.assertEqual(len(normalised), 6)
        tops = sorted(max(line.get_ydata()) for line in normalised)
        self.assertAlmostEqual(tops[-1], 1200 * 2.6 / 1320)  # the peer at 16 over the best at 1
        self.assertAlmostEqual(min(line.get_ydata()[0] for line in normalised[:3]), 70 / 170)
        self.assertIn([1.0, 1.0], [list(line.get_ydata()) for line in right.lines])
        legend = right.get_legend()
        self.assertIn("local: std::mutex", [t.get_text() for t in legend.get_texts()])
        self.assertIn("Redis: python-redis.Lock(sleep=100ms)", [t.get_text() for t in legend.get_texts()])

    def test_chosen_impls_and_knobs(self):
        local, dist = self.frames()
        fig = lp.plot_local_vs_distributed(local, dist, CONTEXT, local_impls=["std::mutex"],
                                           distributed_impls=["FairLock"], cs_ns=0)
        mutex = [line for line in fig.axes[0].lines if not line.get_label().startswith("_")]
        self.assertEqual([line.get_label() for line in mutex], ["std::mutex"])
        self.assertAlmostEqual(mutex[0].get_ydata()[0], 70.0)
        self.assertEqual([line.get_label() for line in fig.axes[2].lines], ["FairLock"])

    def test_unknown_impl_is_named(self):
        local, dist = self.frames()
        with self.assertRaisesRegex(KeyError, r"no curve points for \['NoSuchLock'\]"):
            lp.plot_local_vs_distributed(local, dist, distributed_impls=["NoSuchLock"])

    def test_write_needs_both_suites(self):
        local, dist = self.frames()
        self.assertEqual(lp.write_local_vs_distributed({"locks": (local, CONTEXT)}, self.tmp / "o"), [])
        paths = lp.write_local_vs_distributed({"locks": (local, CONTEXT), "redis_locks": (dist, CONTEXT)},
                                              self.tmp / "o")
        self.assertEqual([p.name for p in paths], ["redis_locks_vs_locks.png"])
        self.assertTrue(paths[0].is_file())


class PlotCommandTest(Fixtures):
    def test_plot_draws_the_split_and_the_overlay_not_one_png_per_process_count(self):
        self.write("r/locks.json", locks(cs_values=(0,)))
        self.write("r/redis_locks.json", redis_locks())
        self.write("r/redis_locks_python.json", redis_locks(impls=(), peers=("python-redis.Lock(sleep=1ms)",),
                                                            handoff=False))
        written = sorted(p.name for p in lp.plot_results_dir(self.tmp / "r", self.tmp / "out"))
        self.assertEqual(written, ["locks.png", "redis_locks_hold_us_1000.png",
                                   "redis_locks_hold_us_1000_handoff_1.png", "redis_locks_processes.png",
                                   "redis_locks_vs_locks.png"])

    def test_plot_without_local_results_has_no_overlay(self):
        self.write("r/redis_locks.json", redis_locks())
        written = sorted(p.name for p in lp.plot_results_dir(self.tmp / "r", self.tmp / "out"))
        self.assertNotIn("redis_locks_vs_locks.png", written)
        self.assertIn("redis_locks_processes.png", written)


if __name__ == "__main__":
    unittest.main()
