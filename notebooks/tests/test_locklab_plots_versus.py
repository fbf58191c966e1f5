"""Tests of locklab_plots.plot_versus (a counter against a knob), on small
synthetic pinning / io_bound results.

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


def pinning(fibers=(1000,), reps=1, bystanders_pinned=0.0):
    """pinning suite: three modes x carriers 1, 2, 4 (x fiber counts)."""
    benchmarks = []
    for waiters in fibers:
        for carriers in (1, 2, 4):
            for impl, lockers, bystanders in (("NoLock", 45000.0, 45000.0),
                                              ("FiberMutex", 1500.0, 44000.0),
                                              ("PinningMonitor", 100.0 * carriers, bystanders_pinned)):
                name = f"pinning/{impl}/waiters:{waiters}/carriers:{carriers}/locks:16/io_ms:10"
                for rep in range(reps):
                    benchmarks.append(entry(name, lockers + bystanders + 1.0, rep, reps,
                                            lockers_per_second=lockers * (1 + 0.1 * rep),
                                            bystanders_per_second=bystanders))
    return {"context": dict(CONTEXT, locklab_suite="pinning"), "benchmarks": benchmarks}


class PlotVersusTest(Fixtures):
    def tearDown(self):
        plt.close("all")
        super().tearDown()

    def load(self, data):
        return lp.load_suite(self.write("pinning.json", data))

    def test_one_line_per_impl_against_the_knob(self):
        ax = lp.plot_versus(self.load(pinning()), "carriers", "lockers_per_second", log_y=True)
        lines = {line.get_label(): line for line in ax.lines}
        self.assertEqual(sorted(lines), ["FiberMutex", "NoLock", "PinningMonitor"])
        self.assertEqual(list(lines["PinningMonitor"].get_xdata()), [1, 2, 4])
        self.assertEqual(list(lines["PinningMonitor"].get_ydata()), [100.0, 200.0, 400.0])
        self.assertEqual(ax.get_xscale(), "log")
        self.assertEqual(ax.get_yscale(), "log")
        self.assertEqual([t.get_text() for t in ax.get_xticklabels()], ["1", "2", "4"])

    def test_scale_and_labels(self):
        ax = lp.plot_versus(self.load(pinning()), "carriers", "lockers_per_second", scale=1e-3,
                            log_x=False, xlabel="carrier threads", ylabel="k/s", title="lockers")
        nolock = next(line for line in ax.lines if line.get_label() == "NoLock")
        self.assertEqual(list(nolock.get_ydata()), [45.0, 45.0, 45.0])
        self.assertEqual(ax.get_xscale(), "linear")
        self.assertEqual((ax.get_xlabel(), ax.get_ylabel(), ax.get_title()), ("carrier threads", "k/s", "lockers"))

    def test_zero_stays_visible_on_a_log_axis(self):
        ax = lp.plot_versus(self.load(pinning()), "carriers", "bystanders_per_second", log_y=True)
        self.assertEqual(ax.get_yscale(), "symlog")
        pinned = next(line for line in ax.lines if line.get_label() == "PinningMonitor")
        self.assertEqual(list(pinned.get_ydata()), [0.0, 0.0, 0.0])
        self.assertEqual(ax.get_ylim()[0], 0)

    def test_band_over_repetitions(self):
        ax = lp.plot_versus(self.load(pinning(reps=3)), "carriers", "lockers_per_second")
        self.assertEqual(len(ax.collections), 3)  # one min-max band per impl
        fiber = next(line for line in ax.lines if line.get_label() == "FiberMutex")
        self.assertAlmostEqual(fiber.get_ydata()[0], 1650.0)  # median of 1500, 1650, 1800

    def test_missing_column_is_named(self):
        with self.assertRaisesRegex(KeyError, "no column 'p95_ms'.*lockers_per_second"):
            lp.plot_versus(self.load(pinning()), "carriers", "p95_ms")

    def test_several_points_per_x_must_be_filtered_first(self):
        df = self.load(pinning(fibers=(250, 1000)))
        with self.assertRaisesRegex(ValueError, "several points at carriers=1"):
            lp.plot_versus(df, "carriers", "lockers_per_second")
        ax = lp.plot_versus(df[df["waiters"] == 1000], "carriers", "lockers_per_second")
        self.assertEqual(len(ax.lines), 3)


if __name__ == "__main__":
    unittest.main()
