"""Tests of locklab_plots.plot_grouped_bars (bars side by side per category:
a scenario's rows, ours beside a case study's reported figure).

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s notebooks/tests -v
"""
import math
import os
import sys
import unittest
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import matplotlib.pyplot as plt  # noqa: E402

import locklab_plots as lp  # noqa: E402

LOCKS = ["SpinLock(poll-100ms)", "PubSubLock", "AdaptiveLock", "FairLock"]


class GroupedBarsTest(unittest.TestCase):
    def tearDown(self):
        plt.close("all")

    def bars(self, ax):
        return [p for p in ax.patches if isinstance(p, plt.Rectangle)]

    def test_one_bar_per_present_value_in_category_order(self):
        ax = lp.plot_grouped_bars(LOCKS, {"ours": [2930, 102, 139, 66.4], "reported": [2610, 50.3, 211, None]},
                                  ylabel="p95, ms", title="p95 at 50 users, ms")
        heights = [round(b.get_height(), 1) for b in self.bars(ax)]
        # The missing reported FairLock figure is a gap, not a zero bar.
        self.assertEqual(heights, [2930, 102, 139, 66.4, 2610, 50.3, 211])
        ours = sorted(self.bars(ax)[:4], key=lambda b: b.get_x())
        self.assertEqual([b.get_height() for b in ours], [2930, 102, 139, 66.4])
        # The two series of a category sit side by side around its tick.
        first_ours, first_reported = self.bars(ax)[0], self.bars(ax)[4]
        self.assertLess(first_ours.get_x(), 0)
        self.assertGreater(first_reported.get_x() + first_reported.get_width(), 0)
        self.assertEqual([t.get_text() for t in ax.get_xticklabels()], LOCKS)
        self.assertEqual(ax.get_title(), "p95 at 50 users, ms")
        self.assertEqual([t.get_text() for t in ax.get_legend().get_texts()], ["ours", "reported"])

    def test_nan_is_missing_too(self):
        ax = lp.plot_grouped_bars(["a", "b"], {"x": [1.0, float("nan")]})
        self.assertEqual([b.get_height() for b in self.bars(ax)], [1.0])

    def test_log_axis_says_so(self):
        ax = lp.plot_grouped_bars(["GET loop", "MGET"], {"p50": [38.5, 0.635]}, log_y=True, ylabel="ms per fetch")
        self.assertEqual(ax.get_yscale(), "log")
        self.assertEqual(ax.get_ylabel(), "ms per fetch (log scale)")

    def test_a_zero_keeps_its_place_on_a_symmetric_log_axis(self):
        ax = lp.plot_grouped_bars(["wait 3 s", "wait 0"], {"rejected": [304, 0]}, log_y=True, ylabel="tasks")
        self.assertEqual(ax.get_yscale(), "symlog")
        self.assertEqual(ax.get_ylabel(), "tasks (log scale, linear below 1)")
        self.assertEqual(len(self.bars(ax)), 2)

    def test_linear_axis_starts_at_zero_and_has_no_log_label(self):
        ax = lp.plot_grouped_bars(["a"], {"x": [5.0]}, ylabel="requests/s")
        self.assertEqual(ax.get_yscale(), "linear")
        self.assertEqual(ax.get_ylim()[0], 0)
        self.assertEqual(ax.get_ylabel(), "requests/s")

    def test_value_labels_and_styles(self):
        ax = lp.plot_grouped_bars(["a", "b"], {"ours": [1.5, 2.25], "reported": [3.0, None]},
                                  colours={"reported": "#777777"}, hatches={"reported": "//"},
                                  value_format="{:.2f}")
        texts = sorted(t.get_text() for t in ax.texts)
        self.assertEqual(texts, ["1.50", "2.25", "3.00"])
        reported = self.bars(ax)[2]
        self.assertEqual(reported.get_hatch(), "//")
        self.assertTrue(all(math.isclose(c, v) for c, v in zip(reported.get_facecolor()[:3], (0x77 / 255,) * 3)))

    def test_value_labels_from_a_function(self):
        ax = lp.plot_grouped_bars(["a", "b"], {"x": [1004.0, 0.635]},
                                  value_format=lambda v: f"{v:,.0f}" if v >= 100 else f"{v:.3g}")
        self.assertEqual(sorted(t.get_text() for t in ax.texts), ["0.635", "1,004"])

    def test_a_series_of_the_wrong_length_is_refused(self):
        with self.assertRaisesRegex(ValueError, "series 'ours' has 1 values for 2 categories"):
            lp.plot_grouped_bars(["a", "b"], {"ours": [1.0]})

    def test_draws_into_a_given_axes(self):
        fig, ax = plt.subplots()
        self.assertIs(lp.plot_grouped_bars(["a"], {"x": [1.0]}, ax=ax), ax)


if __name__ == "__main__":
    unittest.main()
