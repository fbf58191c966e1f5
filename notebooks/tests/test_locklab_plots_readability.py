"""Tests of what locklab_plots' figures say to a reader: log axes labelled as
such, latencies on log axes, throughput in the suite's own unit, counter
panels titled in words with units, physical limits named as throughput
ceilings, distinct line styles however many lines, and the locks suite split
into groups of locks instead of two dozen lines on one panel.

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s notebooks/tests -v
"""
import json
import os
import re
import sys
import unittest
import unittest.mock
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import locklab_plots as lp  # noqa: E402
from test_locklab_plots import CONTEXT, Fixtures, entry, physical_limits  # noqa: E402
from test_locklab_plots_distributed import locks, redis_locks  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

# The locks suite's implementations (ours, C/C++ peers, the JVM's), an
# exercise's lock and one no group of the table names.
MANY_LOCKS = (
    "std::mutex", "TasLock", "TtasLock", "BackoffLock", "TicketLock", "McsLock", "McsParkingLock",
    "AdaptiveMutex", "AdaptiveMutex(park-only)", "AdaptiveMutex(spin-only)", "AdaptiveMutex(fixed-100)",
    "FutexMutex(3-state)", "ReentrantLock(unfair)", "ReentrantLock(fair)", "Semaphore(1)", "none",
    "glibc.adaptive", "absl.Mutex", "absl.Mutex(no-detect)", "tbb.spin_mutex", "tbb.queuing_mutex",
    "ck.fas", "ck.ticket", "ck.mcs", "ck.clh", "java.ReentrantLock(unfair)", "java.synchronized",
    "my.TicketLock", "MysteryLock",
)


def many_locks(impls=MANY_LOCKS):
    benchmarks = [entry(f"locks/{impl}/waiters:{w}/cs_ns:0", 1e7 * (k + 1) / w, p99_us=2.0 * w)
                  for k, impl in enumerate(impls) for w in (1, 2, 4)]
    return {"context": dict(CONTEXT, locklab_suite="locks"), "benchmarks": benchmarks}


def io_bound():
    benchmarks = [entry(f"io_bound/{impl}/waiters:{w}/io_ms:20", rate * w, p95_ms=20.0 + w / 10,
                        os_threads_peak=float(w))
                  for impl, rate in (("Fibers", 40.0), ("ThreadPool", 25.0)) for w in (50, 100, 200)]
    return {"context": dict(CONTEXT, locklab_suite="io_bound"), "benchmarks": benchmarks}


def latency_outlier():
    """locks: a FIFO lock whose p99 wait reaches 1.6 s at 4 waiters."""
    benchmarks = [entry(f"locks/{impl}/waiters:{w}/cs_ns:0", 1e7 / w, p99_us=p99, p50_us=0.0 if w == 1 else 0.2)
                  for impl, tail in (("TtasLock", 1.0), ("TicketLock", 1.6e6))
                  for w, p99 in ((1, 0.05), (2, 1.0), (4, tail))]
    return {"context": dict(CONTEXT, locklab_suite="locks"), "benchmarks": benchmarks}


class CapturedFigures:
    """Records every figure the module saves (without writing it)."""

    def __enter__(self):
        self.figures = {}
        self._patch = unittest.mock.patch.object(
            Figure, "savefig", lambda fig, path, *a, **k: self.figures.__setitem__(Path(path).name, fig))
        self._patch.start()
        return self

    def __exit__(self, *exc):
        self._patch.stop()
        plt.close("all")


def curve_labels(ax):
    return [line.get_label() for line in ax.lines if not line.get_label().startswith("_")]


class ReadabilityTest(Fixtures):
    def tearDown(self):
        plt.close("all")
        super().tearDown()

    def results_dir(self):
        self.write("r/locks.json", latency_outlier())
        self.write("r/redis_locks.json", redis_locks(peers=("python-redis.Lock(sleep=1ms)",)))
        self.write("r/io_bound.json", io_bound())
        self.write("r/physical_limits.json", physical_limits())
        return self.tmp / "r"

    def test_every_log_axis_says_so(self):
        with CapturedFigures() as captured:
            lp.plot_results_dir(self.results_dir(), self.tmp / "out")
        checked = 0
        for name, fig in captured.figures.items():
            for ax in fig.axes:
                if not ax.axison:
                    continue
                for axis, scale, label in (("x", ax.get_xscale(), ax.get_xlabel()),
                                           ("y", ax.get_yscale(), ax.get_ylabel())):
                    if scale == "linear":
                        continue
                    if axis == "x" and not label:  # a twin axis: its sibling carries the label
                        label = " ".join(a.get_xlabel() for a in ax.get_shared_x_axes().get_siblings(ax))
                    checked += 1
                    self.assertIn("log scale", label, f"{name}: {ax.get_title()!r}, {axis} axis is {scale}")
        self.assertGreater(checked, 20)
        ax = lp.plot_versus(lp.load_suite(self.tmp / "r" / "io_bound.json"), "waiters", "p95_ms",
                            log_y=True, ylabel="ms")
        self.assertEqual((ax.get_xlabel(), ax.get_ylabel()), ("waiters (log scale)", "ms (log scale)"))

    # The figures are drawn from a folder with a full run (full/locks.json), as ./lab figures picks it.
    @unittest.skipUnless(list((REPO / "results" / "reference").glob("*/full/locks.json")),
                         "no results/reference folder with a full run")
    def test_the_readme_figures_log_axes_say_so_too(self):
        import readme_figures
        reference = sorted((REPO / "results" / "reference").glob("*/full/locks.json"))[-1].parents[1]
        with CapturedFigures() as captured:
            readme_figures.write_figures(reference, self.tmp / "out")
        labels = [(name, axis, label) for name, fig in captured.figures.items() for ax in fig.axes
                  for axis, scale, label in (("x", ax.get_xscale(), ax.get_xlabel()),
                                             ("y", ax.get_yscale(), ax.get_ylabel()))
                  if scale != "linear" and label]
        self.assertGreaterEqual(len(labels), 4)
        for name, axis, label in labels:
            self.assertIn("log scale", label, f"{name}, {axis} axis")

    def test_latency_panels_use_a_log_axis(self):
        df = lp.load_suite(self.write("locks.json", latency_outlier()))
        ax = lp.plot_counter(df, "p99_us")
        self.assertEqual(ax.get_yscale(), "log", "a 1.6 s tail must not flatten the 1 us lines")
        self.assertEqual(lp.plot_counter(df, "p50_us").get_yscale(), "symlog", "a zero latency stays on the plot")
        self.assertEqual(lp.plot_counter(df, "cpu_per_wall").get_yscale(), "linear")
        self.assertTrue(all(lp.is_latency_counter(c) for c in ("p50_us", "p99_ms", "avg_ms", "mean_wait_ms")))
        self.assertFalse(any(lp.is_latency_counter(c) for c in ("cpu_us_per_acquire", "floor_ns", "fairness")))
        fig = lp.suite_figure(df, CONTEXT)
        panel = next(a for a in fig.axes if "p99" in a.get_title())
        self.assertEqual(panel.get_yscale(), "log")

    def test_throughput_in_the_suites_unit(self):
        def drawn(data):
            ax = lp.plot_throughput(lp.load_suite(self.write("x.json", data)))
            return ax.get_ylabel(), max(max(line.get_ydata()) for line in ax.lines)

        label, top = drawn(redis_locks(splits=(), handoff=False))
        self.assertEqual(label, "throughput, acquisitions/s (log scale)")
        self.assertAlmostEqual(top, 800 * 2.6)  # acquisitions/s, not 0.002 M ops/s
        label, top = drawn(io_bound())
        self.assertEqual(label, "throughput, tasks/s (log scale)")
        self.assertAlmostEqual(top, 40.0 * 200)
        label, top = drawn(locks())
        self.assertEqual(label, "throughput, M acquisitions/s (log scale)")
        self.assertAlmostEqual(top, 170.0)
        slow = {"context": CONTEXT, "benchmarks": [entry(f"elsewhere/A/waiters:{w}", 5.0 * w) for w in (1, 2)]}
        self.assertEqual(drawn(slow)[0], "throughput, ops/s (log scale)")

    def test_counter_panels_are_titled_in_words_with_units(self):
        df = lp.load_suite(self.write("locks.json", latency_outlier()))
        df["wakes_per_acquire"] = 0.5
        df["unheard_of_ms"] = 1.0
        for counter, title, unit in (("cpu_per_wall", "CPU seconds per wall second", "cores kept busy"),
                                     ("wakes_per_acquire", "futex wakes per acquisition", "wakes / acquisition"),
                                     ("p99_us", "p99 wait to acquire, \u00b5s", "\u00b5s (log scale)"),
                                     ("unheard_of_ms", "unheard_of_ms", "ms (log scale)")):
            ax = lp.plot_counter(df, counter)
            self.assertEqual((ax.get_title().replace("\n", " "), ax.get_ylabel()), (title, unit))
        self.assertEqual(lp.counter_label("no_unit_here"), ("no_unit_here", ""))

    def test_physical_limits_are_drawn_as_named_ceilings(self):
        df = lp.load_suite(self.write("locks.json", locks()))
        ceilings = lp.physical_floors(self.write("r/physical_limits.json", physical_limits()).parent)
        for keyword in ("floors", "ceilings"):  # the older keyword still works
            ax = lp.plot_throughput(df, **{keyword: ceilings})
            notes = [t.get_text() for t in ax.texts if "ns)" in t.get_text()]
            self.assertEqual(sorted(notes), ["ceiling: one cache-line hand-off per acquisition (250 ns)",
                                             "ceiling: one futex wake-to-run per acquisition (4,000 ns)"])
            levels = sorted(line.get_ydata()[0] for line in ax.lines  # the unlabelled horizontal lines
                            if line.get_label().startswith("_") and len(set(line.get_ydata())) == 1)
            self.assertEqual(levels, [0.25, 4.0])  # 1e9 / ns in M acquisitions/s
        self.assertIs(lp.FLOOR_LABELS, lp.CEILING_LABELS)
        self.assertEqual(lp.physical_ceilings(self.tmp / "r"), ceilings)

    def test_every_name_the_notebooks_use_still_exists(self):
        used = set()
        for path in list((REPO / "notebooks").glob("*.ipynb")) + list((REPO / "notebooks").glob("*.py")):
            text = path.read_text(encoding="utf-8")
            if path.suffix == ".ipynb":
                text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"])
            used |= set(re.findall(r"\blp\.([A-Za-z_]\w*)", text))
        self.assertIn("FLOOR_LABELS", used)
        self.assertEqual(sorted(n for n in used if not hasattr(lp, n)), [])

    def test_no_two_lines_look_the_same(self):
        ours = [f"Lock{k}" for k in range(30)]
        peers = [f"ck.lock{k}" for k in range(40)]
        looks = lambda styles: [(str(s["color"]), str(s["linestyle"]), s["marker"])  # noqa: E731
                                for s in styles.values()]
        for styles in (lp.impl_styles(ours + peers), lp._family_styles(ours[:3] + peers[:9], "Oranges", "s")):
            self.assertEqual(len(set(looks(styles))), len(styles), "two lines share colour, dash and marker")
        self.assertEqual(len(set(looks(lp.impl_styles(peers, grey_peers=False)))), len(peers))

    def test_the_locks_suite_is_drawn_in_groups(self):
        self.write("r/locks.json", many_locks())
        with CapturedFigures() as captured:
            written = lp.plot_results_dir(self.tmp / "r", self.tmp / "out")
        self.assertEqual([p.name for p in written], [f"locks_{g}.png" for g in
                                                     ("spinners", "parkers", "ownership", "peers", "jvm", "other")])
        drawn = {}
        for name, fig in captured.figures.items():
            throughput = fig.axes[0]
            labels = curve_labels(throughput)
            self.assertLessEqual(len(labels), lp.MAX_LINES_PER_PANEL + 2, name)
            for label in labels:
                drawn.setdefault(label, []).append(name)
        self.assertEqual(sorted(drawn), sorted(MANY_LOCKS), "every lock is drawn somewhere")
        self.assertIn("locks_spinners.png", drawn["my.TicketLock"], "an exercise's lock sits beside the real one")
        self.assertEqual(drawn["MysteryLock"], ["locks_other.png"])
        self.assertEqual(sorted(drawn["std::mutex"]), sorted(["locks_spinners.png", "locks_parkers.png",
                                                              "locks_ownership.png", "locks_peers.png"]))
        groups = lp.impl_groups("locks", MANY_LOCKS)
        members = [i for name, _, impls in groups for i in impls if not (name != "peers" and i == "std::mutex"
                                                                        or name == "parkers" and i == "glibc.adaptive")]
        self.assertEqual(sorted(members), sorted(MANY_LOCKS), "each lock in exactly one group")
        self.assertEqual(lp.impl_groups("counters", MANY_LOCKS), [])


if __name__ == "__main__":
    unittest.main()
