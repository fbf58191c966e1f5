#!/usr/bin/python3
"""The README's figures: a few small PNGs drawn from one reference folder.

``./lab plot`` draws every counter of every suite (a dashboard per point of
view, 100-550 KB each): right for studying a run, too much for a front page.
This module draws the handful of figures that the README shows, each one
question on one small picture, from the committed reference results:

=====================  ==========================================================
``counters.png``       increments/s against waiters: our four counters, Java's
                       ``AtomicInteger`` and ``LongAdder`` overlaid
``locks.png``          acquisitions/s against waiters at cs_ns 0 and 1000 (the
                       full run of every lock): the lock families (spin, FIFO,
                       the platform's mutexes), the JVM's overlaid
``parking_lot.png``    acquisitions/s against waiters at cs_ns 0, 200 and 1000
                       (the full run on the parking substrate): our blocking
                       locks beside the algorithm they replaced and the JVM's
``redis_locks_50.png`` the Redis locks at 50 waiters (full run): acquisitions/s
                       and p95 wait, as 1 process x 50 threads, 5 x 10, 50 x 1
``pinning.png``        1,000 fibers: lockers' and bystanders' throughput with no
                       lock, a fiber lock and a pinning monitor, 1/2/4 carriers
``faults.png``         the fault scenarios: phantom writes per run, unfenced and
                       fenced
=====================  ==========================================================

Every figure is drawn from the files; a file that is missing is an error that
names it (the figures must not silently drop a curve).  Command line::

    /usr/bin/python3 notebooks/readme_figures.py REFERENCE_DIR [OUT_DIR]

``OUT_DIR`` defaults to ``REFERENCE_DIR/plots``; ``./lab figures`` runs it on
the newest folder under ``results/reference`` that has a full run
(``full/locks.json``).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import locklab_plots as lp

# Figures are for a web page: ~900 px wide at this dpi, PNG of 40-110 KB.
DPI = 100
FIGURES = ("counters.png", "locks.png", "parking_lot.png", "redis_locks_50.png", "pinning.png", "faults.png")

# The locks drawn in locks.png: one spin lock and one FIFO lock of the lab's,
# the platform's mutexes, and the fastest peers. The dashboard has all 29.
# The blocking locks on the parking substrate are not among them: full/ was
# measured before that substrate existed, so they get parking_lot.png.
LOCK_IMPLS = (
    "TtasLock", "McsLock", "McsParkingLock",
    "std::mutex", "absl.Mutex(no-detect)", "tbb.spin_mutex",
    "java.ReentrantLock(unfair)", "java.synchronized", "java.ReentrantLock(fair)",
)
# parking_lot.png: the full run of the blocking locks on the parking substrate
# (`AdaptiveMutex`, `ReentrantLock`, `Semaphore`), measured after full/ with
# the old AdaptiveMutex under its new name, FutexMutex(3-state).
PARKING_FULL = "parking/full"
PARKING_IMPLS = (
    "AdaptiveMutex", "ReentrantLock(unfair)", "Semaphore(1)", "ReentrantLock(fair)", "FutexMutex(3-state)",
    "std::mutex", "absl.Mutex(no-detect)", "java.ReentrantLock(unfair)", "java.ReentrantLock(fair)",
)
REDIS_IMPLS = ("SpinLock", "SpinLock(exp-1-64ms)", "PubSubLock", "AdaptiveLock", "FairLock",
               "Guarded(PubSubLock)", "python-redis.Lock(sleep=100ms)")
FAULTS = ("drift", "pause", "restart", "restart_delayed")


class MissingData(Exception):
    """A file or a point that a figure needs is not in the reference folder."""


def _need(path: Path) -> Path:
    if not path.is_file():
        raise MissingData(f"{path}: missing (a README figure is drawn from it)")
    return path


def _frame(reference: Path, *names: str):
    """Concatenated rows of the named result files and the first one's context."""
    import pandas as pd
    paths = [_need(reference / n) for n in names]
    return pd.concat([lp.load_suite(p) for p in paths], ignore_index=True), lp.load_context(paths[0])


def _finish(fig, out: Path, title: str, context: dict) -> Path:
    fig.suptitle(f"{title}\n{lp.machine_title(context)}", fontsize=10.5)
    fig.savefig(out, dpi=DPI)
    plt.close(fig)
    return out


def counters_figure(reference: Path, out_dir: Path) -> Path:
    df, context = _frame(reference, "counters.json", "jvm_counters.json")
    if "readers" in df:  # the read-side points (readers:1) are another figure's story
        df = df[df["readers"].isna()]
    fig, ax = plt.subplots(figsize=(8.2, 4.0), layout="constrained")
    lp.plot_throughput(df, ax=ax, cores=lp.context_cores(context))
    ax.set_ylabel(lp.log_label("million increments/s"))
    ax.set_title("one shared counter, N threads incrementing it")
    return _finish(fig, out_dir / "counters.png", "Counters", context)


def _locks_panels(reference: Path, folder: str, impls: tuple, workloads: tuple, width: float):
    """A figure of throughput against waiters, one panel per cs_ns, from
    ``folder``/locks.json and its jvm_locks.json; returns (fig, context)."""
    df, context = _frame(reference, f"{folder}/locks.json", f"{folder}/jvm_locks.json")
    if "think_ns_per_waiter" in df:
        df = df[df["think_ns_per_waiter"].isna()]
    df = df[df["impl"].isin(impls)]
    missing = [i for i in impls if i not in set(df["impl"])]
    if missing:
        raise MissingData(f"{reference}/{folder}: no points of {', '.join(missing)}")
    styles = lp.impl_styles([i for i in impls if not lp.is_peer(i)] + [i for i in impls if lp.is_peer(i)])
    fig, axes = plt.subplots(1, len(workloads), figsize=(width, 4.4), layout="constrained")
    for ax, cs in zip(axes, workloads):
        rows = df[df["cs_ns"] == cs]
        if rows.empty:
            raise MissingData(f"{reference}/{folder}/locks.json: no cs_ns:{cs} points")
        lp.plot_throughput(rows, ax=ax, cores=lp.context_cores(context), styles=styles, legend=False)
        ax.set_ylabel(lp.log_label("M acquisitions/s") if cs == workloads[0] else "")
        ax.set_title("empty critical section (cs_ns 0)" if cs == 0 else
                     "1 \u00b5s critical section (cs_ns 1000)" if cs == 1000 else f"{cs} ns critical section",
                     fontsize=10)
    axes[-1].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return fig, context


def locks_figure(reference: Path, out_dir: Path) -> Path:
    fig, context = _locks_panels(reference, "full", LOCK_IMPLS, (0, 1000), 11.5)
    return _finish(fig, out_dir / "locks.png",
                   "Local lock families: ours in colour, peers grey and dashed, band = min\u2013max of 5 runs", context)


def parking_lot_figure(reference: Path, out_dir: Path) -> Path:
    fig, context = _locks_panels(reference, PARKING_FULL, PARKING_IMPLS, (0, 200, 1000), 12.8)
    return _finish(fig, out_dir / "parking_lot.png",
                   "One parking substrate under AdaptiveMutex, ReentrantLock and Semaphore; "
                   "FutexMutex(3-state) is the algorithm it replaced", context)


def redis_figure(reference: Path, out_dir: Path) -> Path:
    df, context = _frame(reference, "full/redis_locks.json", "full/redis_locks_python.json")
    df = df[(df["waiters"] == 50) & df["processes"].notna()]
    splits = sorted(int(p) for p in df["processes"].dropna().unique())
    impls = [i for i in REDIS_IMPLS if i in set(df["impl"])]
    if len(impls) != len(REDIS_IMPLS) or not splits:
        raise MissingData(f"{reference}/full: 50-waiter split points of {', '.join(REDIS_IMPLS)} are incomplete")
    fig, axes = plt.subplots(1, 2, figsize=(11.5, 4.2), layout="constrained")
    width = 0.8 / len(splits)
    shades = plt.get_cmap("Oranges")(np.linspace(0.45, 0.85, len(splits)))
    for ax, column, label in ((axes[0], "items_per_second", "acquisitions/s (higher is better)"),
                              (axes[1], "p95_ms", "p95 wait for the lock, ms (lower is better)")):
        for k, p in enumerate(splits):
            rows = df[df["processes"] == p].set_index("impl").reindex(impls)
            ax.bar(np.arange(len(impls)) + (k - (len(splits) - 1) / 2) * width, rows[column], width,
                   color=shades[k], label=f"{p} process{'es' if p > 1 else ''} x {50 // p} threads")
        ax.set_xticks(range(len(impls)), impls, rotation=30, ha="right", fontsize=8)
        ax.set_title(label, fontsize=10)
    axes[0].legend(fontsize=8)
    return _finish(fig, out_dir / "redis_locks_50.png",
                   "Redis locks, 50 waiters, 1 ms held: median of 5 runs", context)


def _label_bars(ax, bars, fmt="{:,.0f}") -> None:
    """Write each bar's value above it, so that a zero is seen, not guessed."""
    for bar in bars:
        ax.annotate(fmt.format(bar.get_height()), (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    xytext=(0, 2), textcoords="offset points", ha="center", va="bottom", fontsize=7.5)


def pinning_figure(reference: Path, out_dir: Path) -> Path:
    df, context = _frame(reference, "pinning.json")
    impls = [i for i in ("NoLock", "FiberMutex", "PinningMonitor") if i in set(df["impl"])]
    carriers = sorted(int(c) for c in df["carriers"].unique())
    if len(impls) != 3:
        raise MissingData(f"{reference}/pinning.json: needs NoLock, FiberMutex and PinningMonitor")
    fig, axes = plt.subplots(1, 2, figsize=(11.5, 3.9), layout="constrained")
    width = 0.8 / len(impls)
    colours = ("#999999", plt.get_cmap("tab10")(0), plt.get_cmap("tab10")(3))
    for ax, column, title in ((axes[0], "lockers_per_second", "lockers: lock, 10 ms of I/O, unlock"),
                              (axes[1], "bystanders_per_second", "bystanders: 10 ms of I/O, no lock")):
        for k, impl in enumerate(impls):
            rows = df[df["impl"] == impl].set_index("carriers").reindex(carriers)
            _label_bars(ax, ax.bar(np.arange(len(carriers)) + (k - 1) * width, rows[column], width,
                                   color=colours[k], label=impl))
        ax.set_xticks(range(len(carriers)), [f"{c} carrier{'s' if c > 1 else ''}" for c in carriers])
        ax.set_ylabel("tasks/s")
        ax.set_ylim(0, df[column].max() * 1.25)  # room for the legend above the bars
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8, ncol=3, loc="upper center")
    return _finish(fig, out_dir / "pinning.png", "Pinning: 1,000 fibers, 16 locks; a lock that blocks its "
                   "carrier thread stops the fibers that need no lock", context)


def faults_figure(reference: Path, out_dir: Path) -> Path:
    df, context = _frame(reference, "scenario_faults.json")
    rows = df.set_index("impl")
    if any(f not in rows.index or f"{f}+fence" not in rows.index for f in FAULTS):
        raise MissingData(f"{reference}/scenario_faults.json: needs {', '.join(FAULTS)} with and without +fence")
    fig, ax = plt.subplots(figsize=(8.2, 3.8), layout="constrained")
    x = np.arange(len(FAULTS))
    for k, (suffix, label, colour) in enumerate((("", "no fencing", plt.get_cmap("tab10")(3)),
                                                 ("+fence", "fencing token", plt.get_cmap("tab10")(2)))):
        mid = np.array([rows.loc[f + suffix, "phantom_issues"] for f in FAULTS], dtype=float)
        lo = np.array([rows.loc[f + suffix, "phantom_issues_min"] for f in FAULTS], dtype=float)
        hi = np.array([rows.loc[f + suffix, "phantom_issues_max"] for f in FAULTS], dtype=float)
        _label_bars(ax, ax.bar(x + (k - 0.5) * 0.38, mid, 0.38, color=colour, label=label,
                               yerr=[mid - lo, hi - mid], capsize=3), "{:g}")
    runs = [int(rows.loc[f, "n_reps"]) for f in FAULTS]
    ax.set_xticks(x, [f"{f.replace('_', ' ')}\n({n} runs)" for f, n in zip(FAULTS, runs)])
    ax.set_ylabel("phantom writes per run")
    ax.set_title("a lease that lapses under its holder: two clients write; a fenced resource refuses the stale one",
                 fontsize=9.5)
    ax.legend(fontsize=8)
    return _finish(fig, out_dir / "faults.png", "Faults: clock drift, a paused holder, a Redis restart "
                   "(median, whisker = min\u2013max)", context)


def write_figures(reference, out_dir=None) -> list:
    """Draw every README figure from ``reference`` into ``out_dir``
    (default ``reference/plots``); returns the paths, in FIGURES order."""
    reference = Path(reference)
    out_dir = Path(out_dir) if out_dir else reference / "plots"
    out_dir.mkdir(parents=True, exist_ok=True)
    lp.apply_style()
    return [draw(reference, out_dir) for draw in
            (counters_figure, locks_figure, parking_lot_figure, redis_figure, pinning_figure, faults_figure)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="readme_figures.py", description=__doc__.split("\n")[0])
    parser.add_argument("reference", type=Path, metavar="REFERENCE_DIR")
    parser.add_argument("out_dir", type=Path, nargs="?", metavar="OUT_DIR")
    args = parser.parse_args(argv)
    try:
        for path in write_figures(args.reference, args.out_dir):
            print(path)
    except (MissingData, lp.BenchmarkFormatError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
