"""Tests of locklab_plots.with_read_percent and read_percent_axis (the
read-fraction axis of the read-mostly suites), on small frames.

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s notebooks/tests -v
"""
import os
import sys
import unittest
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

import locklab_plots as lp  # noqa: E402


class WithReadPercentTest(unittest.TestCase):
    def test_permille_becomes_percent_and_steps_most_reads_first(self):
        df = pd.DataFrame({"impl": ["a"] * 4 + ["b"] * 2, "read_permille": [1000, 990, 900, 500, 500, 1000]})
        out = lp.with_read_percent(df)
        self.assertEqual(list(out["read_pct"]), [100.0, 99.0, 90.0, 50.0, 50.0, 100.0])
        self.assertEqual(list(out["read_step"]), [0, 1, 2, 3, 3, 0])
        self.assertNotIn("read_pct", df, "the input frame is left as it was")

    def test_percent_is_kept(self):
        df = pd.DataFrame({"impl": ["a", "a"], "read_pct": [50, 100]})
        out = lp.with_read_percent(df)
        self.assertEqual(list(out["read_pct"]), [50.0, 100.0])
        self.assertEqual(list(out["read_step"]), [1, 0])

    def test_no_knob_is_a_key_error_naming_both(self):
        with self.assertRaises(KeyError) as caught:
            lp.with_read_percent(pd.DataFrame({"impl": ["a"], "waiters": [1]}))
        self.assertIn("read_permille", str(caught.exception))
        self.assertIn("read_pct", str(caught.exception))


class ReadPercentAxisTest(unittest.TestCase):
    def tearDown(self):
        plt.close("all")

    def test_evenly_spaced_and_labelled_with_the_percentages(self):
        df = lp.with_read_percent(pd.DataFrame({"impl": ["a"] * 4, "read_permille": [1000, 990, 900, 500],
                                                "reads_per_s": [4.0, 3.0, 2.0, 1.0]}))
        ax = lp.plot_versus(df, "read_step", "reads_per_s", log_x=False)
        lp.read_percent_axis(ax, df)
        self.assertEqual(list(ax.get_xticks()), [0, 1, 2, 3])
        self.assertEqual([t.get_text() for t in ax.get_xticklabels()], ["100", "99", "90", "50"])
        self.assertIn("reads, % of operations", ax.get_xlabel())
        line = ax.get_lines()[0]
        self.assertEqual(list(line.get_xdata()), [0, 1, 2, 3])
        self.assertEqual(list(line.get_ydata()), [4.0, 3.0, 2.0, 1.0], "100 % reads is drawn at the left")


if __name__ == "__main__":
    unittest.main()
