#!/usr/bin/python3
"""Read locklab benchmark results (Google Benchmark JSON) and plot them.

This is the one plotting module of locklab: ``./lab plot`` calls its command
line, and the notebooks import it.

Data model
----------
Every suite writes ``results/<suite>.json`` in Google Benchmark's format.  A
point's name is ``<suite>/<Impl>/waiters:<N>`` optionally followed by more
``/<knob>:<value>`` parts (``/cs_ns:200``).  Any numeric key of an entry that
is not one of Google Benchmark's own keys is a *counter* (``items_per_second``,
``ns_per_op``, ``cpu_per_wall``, ``fairness``, ``cas_failures_per_op`` ...).

:func:`load_suite` turns a file into a DataFrame with one row per point:
``suite``, ``impl``, ``peer``, ``waiters``, the other knobs, ``n_reps``, and
for every counter ``<counter>`` (the median over the repetitions) plus
``<counter>_min`` and ``<counter>_max`` (equal to the median for a single run).

API
---
- :func:`load_suite`, :func:`load_context`, :func:`machine_title`
- :func:`is_peer` -- the rule that tells peer implementations from ours
- :func:`find_suite_json` -- which results file a notebook should show
- :func:`apply_style`, :func:`plot_throughput`, :func:`plot_counter`
- :func:`log_label`, :func:`counter_label`, :func:`throughput_unit` -- what
  the axes say: every log axis is labelled "(log scale)", counters get titles
  in words and units (COUNTER_LABELS), throughput the suite's unit
  (THROUGHPUT_UNITS: M acquisitions/s, acquisitions/s, tasks/s ...);
  latencies (:func:`is_latency_counter`) are drawn on log axes
- :func:`physical_ceilings` -- the physical limits drawn as throughput
  ceilings (CEILING_LABELS; ``physical_floors`` / ``FLOOR_LABELS`` are older
  names of the same)
- :func:`plot_suite` -- one PNG per knob combination of a suite, and per
  group of implementations (:func:`impl_groups`, IMPL_GROUPS: spin locks,
  parking locks, ... ) when one has more than MAX_LINES_PER_PANEL
- :func:`plot_versus` -- any counter against any knob (carriers, concurrency)
- :func:`summary_table` -- a fixed-width text table for the terminal
- :func:`plot_process_split`, :func:`split_table` -- the Redis suite's waiters
  as P processes x T threads
- :func:`plot_local_vs_distributed` -- local and Redis locks on one waiter axis
  (``plot`` draws it as ``redis_locks_vs_locks.png`` when both suites are there)
- :func:`redis_lock_registry`, :func:`redis_lock_of`, :func:`redis_impl_order`,
  :func:`guarded_pairs` -- the Redis locks of ``benches/redis_locks.json``, the
  list the C++ benches and scenarios are built from
- :func:`plot_grouped_bars` -- bars side by side per category (a scenario's rows;
  ours beside a case study's reported figure)

Command line (``--help`` for details)::

    /usr/bin/python3 notebooks/locklab_plots.py plot RESULTS_DIR [OUT_DIR]
    /usr/bin/python3 notebooks/locklab_plots.py summary JSON [JSON ...]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import textwrap
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib import ticker

# Keys Google Benchmark itself writes into an entry; every other numeric key
# is a counter.
GBENCH_KEYS = frozenset({
    "name", "run_name", "run_type", "family_index", "per_family_instance_index",
    "repetitions", "repetition_index", "threads", "iterations", "real_time",
    "cpu_time", "time_unit", "aggregate_name", "aggregate_unit", "label",
    "error_occurred", "error_message", "skipped", "skip_message",
})

# Name parts Google Benchmark appends by itself (``/min_time:0.2``,
# ``/real_time`` ...); they are run settings, not knobs of the experiment.
GBENCH_NAME_PARTS = frozenset({
    "min_time", "min_warmup_time", "iterations", "repeats", "threads",
    "real_time", "process_time", "manual_time",
})

# Counters that describe the experiment rather than measure it: they are kept
# as plain columns (like knobs), never aggregated or plotted.
PARAMETER_COUNTERS = frozenset({"waiters", "cs_ns", "think_ns"})

# Counters that record how a point was run, not what it measured: aggregated
# like any counter (median, min, max: a column of the frame) but never drawn
# or tabulated. The busy-work loop's speed, re-measured before every point
# whose sections count loop iterations (benches/harness/busy_work.hpp).
RUN_CONDITION_COUNTERS = frozenset({"busy_work_iterations_per_ns"})

# Counters every suite reports; the rest are "family" counters of the suite.
THROUGHPUT = "items_per_second"
COMMON_COUNTERS = ("items_per_second", "ns_per_op", "cpu_per_wall", "fairness")

# Implementations whose name starts with one of these are peers (other
# people's libraries, other languages); everything else is ours.
PEER_PREFIXES = ("std::", "absl::", "absl.", "tbb::", "tbb.", "boost::", "folly::", "ck_", "ck.",
                 "glibc.", "java.", "node-", "python-", "go-", "rust-", "pg.")
# The harness's own cost (the `locks` suite's "none": no lock at all) is a
# baseline, drawn like a peer.
BASELINES = ("none",)
# The stock scenario's rows that need no lock: the store's own atomic step
# (benches/scenarios/stock_baselines.hpp), in colour beside the locks. Their
# entries also carry store_atomic = 1, which is what the notebooks select on.
STOCK_BASELINES = ("UPDATE(qty>0)", "UPDATE(version)+retry", "DECR(floor,Lua)")

RESULTS_ENV = "LOCKLAB_RESULTS_DIR"
# Set to 1 by `./lab test`, which runs every notebook on smoke results that
# hold data for every branch: a "no data" branch taken there is a failure,
# not a message (see no_data()).
REQUIRE_DATA_ENV = "LOCKLAB_REQUIRE_DATA"


class BenchmarkFormatError(ValueError):
    """A file that is not a Google Benchmark JSON with locklab points."""


class MissingData(RuntimeError):
    """A notebook branch found no data while $LOCKLAB_REQUIRE_DATA is set."""


def no_data(message: str) -> None:
    """What every notebook cell does when its data is missing.

    Normally it prints ``message`` (say what is missing and the command that
    makes it) and the cell goes on without a plot. With
    ``$LOCKLAB_REQUIRE_DATA=1`` (``./lab test``, whose smoke run produces data
    for every branch) it raises MissingData instead, so a branch that the
    smoke data no longer reaches fails the test instead of passing silently.
    """
    if os.environ.get(REQUIRE_DATA_ENV) == "1":
        raise MissingData(f"no data, and ${REQUIRE_DATA_ENV}=1: {message}")
    print(message)


def is_peer(impl: str) -> bool:
    """True when ``impl`` is a peer implementation (drawn grey), not ours.

    The rule is a name prefix: ``std::mutex``, ``absl.Mutex``, ``tbb.spin_mutex``,
    ``ck.mcs``, ``glibc.adaptive``, ``java....``, ``node-...``, ``python-...``,
    ``pg....`` (PostgreSQL's own locks on the Redis curves) are
    peers; so is the harness baseline ``none``.
    """
    return impl.startswith(PEER_PREFIXES) or impl in BASELINES


def _parse_value(text: str):
    """``"4"`` -> 4, ``"0.5"`` -> 0.5, anything else stays a string."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_name(name: str) -> dict:
    """Split ``suite/Impl/waiters:4/cs_ns:200`` into its parts.

    Returns ``{"suite": ..., "impl": ..., "waiters": 4, "cs_ns": 200}``.
    Google Benchmark's own name parts (``min_time:...``, ``real_time``) are
    dropped.  A name without a ``/`` (a scenario's table row) is its own impl.
    """
    parts = name.split("/")
    fields = {"suite": parts[0], "impl": parts[1] if len(parts) > 1 else name}
    for part in parts[2:]:
        key, sep, value = part.partition(":")
        if sep and key not in GBENCH_NAME_PARTS:
            fields[key] = _parse_value(value)
    return fields


def _read_json(path) -> dict:
    """Read and minimally validate one benchmark JSON file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BenchmarkFormatError(f"{path}: cannot read JSON: {exc}") from exc
    if (not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list)
            or not isinstance(data.get("context", {}), dict)):
        raise BenchmarkFormatError(
            f"{path}: not a Google Benchmark JSON (needs a 'benchmarks' list)")
    if not data["benchmarks"]:
        raise BenchmarkFormatError(f"{path}: has no benchmark entries")
    return data


def load_context(path) -> dict:
    """The ``context`` object of a results file (custom values are strings)."""
    return _read_json(path).get("context", {})


def _counter_keys(entry: dict) -> list:
    return [k for k, v in entry.items()
            if k not in GBENCH_KEYS and isinstance(v, (int, float))
            and not isinstance(v, bool)]


def _entries_by_point(benchmarks: list) -> dict:
    """Group the entries to aggregate by point (run name), in file order.

    Uses the "iteration" entries; a point that only has aggregates (a run with
    ``--benchmark_report_aggregates_only``) falls back to its median, else its
    mean.  Entries that report an error are skipped.
    """
    iterations, aggregates = {}, {}
    for entry in benchmarks:
        if not isinstance(entry, dict) or "name" not in entry:
            raise BenchmarkFormatError(f"benchmark entry without a name: {entry!r:.80}")
        if entry.get("error_occurred") or entry.get("skipped"):
            continue
        point = entry.get("run_name", entry["name"])
        if entry.get("run_type") == "aggregate":
            aggregates.setdefault(point, {})[entry.get("aggregate_name")] = entry
        else:
            iterations.setdefault(point, []).append(entry)
    for point, by_kind in aggregates.items():
        if point not in iterations:
            chosen = by_kind.get("median") or by_kind.get("mean")
            if chosen is not None:
                iterations[point] = [chosen]
    # Registration order (Google Benchmark's family_index), not file order:
    # with --benchmark_enable_random_interleaving the file order is shuffled.
    position = {point: i for i, point in enumerate(iterations)}
    def registration(point):
        indexes = [e["family_index"] for e in iterations[point] if "family_index" in e]
        return (min(indexes) if indexes else float("inf"), position[point])
    return {point: iterations[point] for point in sorted(iterations, key=registration)}


def load_suite(path) -> pd.DataFrame:
    """One row per point of a results file; see the module docstring."""
    data = _read_json(path)
    rows = []
    for point, entries in _entries_by_point(data["benchmarks"]).items():
        row = {"name": point, **parse_name(point)}
        row["peer"] = is_peer(row["impl"])
        row["n_reps"] = len(entries)
        counters = pd.DataFrame([{k: e[k] for k in _counter_keys(e)} for e in entries])
        for key in counters.columns:
            values = counters[key].dropna()
            if key in row:  # a knob also reported as a counter: the name wins
                continue
            if key in PARAMETER_COUNTERS:
                row[key] = values.iloc[0]
                continue
            row[key] = values.median()
            row[f"{key}_min"] = values.min()
            row[f"{key}_max"] = values.max()
        rows.append(row)
    if not rows:
        raise BenchmarkFormatError(f"{path}: no successful benchmark entries")
    return pd.DataFrame(rows)


def knob_columns(df: pd.DataFrame) -> list:
    """The knobs other than ``waiters`` that appear in the points' names."""
    knobs = []
    for name in df["name"]:
        for key in parse_name(name):
            if key not in ("suite", "impl", "waiters") and key not in knobs:
                knobs.append(key)
    return knobs


def counter_columns(df: pd.DataFrame) -> list:
    """Measured counters of ``df``: the common ones first, then the family's."""
    measured = [c for c in df.columns if f"{c}_min" in df.columns and c not in RUN_CONDITION_COUNTERS]
    common = [c for c in COMMON_COUNTERS if c in measured]
    return common + [c for c in measured if c not in COMMON_COUNTERS]


def family_counters(df: pd.DataFrame) -> list:
    """Counters specific to this suite (``cas_failures_per_op`` ...)."""
    return [c for c in counter_columns(df) if c not in COMMON_COUNTERS]


def context_cores(context: dict) -> int | None:
    """The machine's core count from a context (``num_cpus``, else ``cores``)."""
    for key in ("num_cpus", "cores"):
        try:
            return int(context[key])
        except (KeyError, TypeError, ValueError):
            pass
    return None


def machine_title(context: dict) -> str:
    """E.g. ``AMD EPYC, 2 cores, kernel 6.18 -- quick run abc1234 2026-11-30``."""
    machine = [context.get("cpu_model") or context.get("host_name") or "unknown machine"]
    cores = context_cores(context)
    if cores:
        machine.append(f"{cores} cores")
    kernel = re.search(r"\d+\.\d+", str(context.get("kernel", "")))
    if kernel:
        machine.append(f"kernel {kernel.group()}")
    run = [f"{context['locklab_mode']} run" if context.get("locklab_mode") else "run"]
    if context.get("git_revision") not in (None, "", "unknown"):
        run.append(str(context["git_revision"]))
    if context.get("date"):
        run.append(str(context["date"])[:10])
    return ", ".join(machine) + " \u2014 " + " ".join(run)


def find_repo_root(start=None) -> Path | None:
    """The directory above ``start`` (default: cwd) holding notebooks/locklab_plots.py."""
    here = Path(start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "notebooks" / "locklab_plots.py").is_file():
            return candidate
    return None


def _run_date(path: Path) -> str:
    try:
        return str(load_context(path).get("date", ""))
    except BenchmarkFormatError:
        return ""


def find_suite_json(suite: str, repo_root=None) -> Path | None:
    """Which ``<suite>.json`` to show, or None when there is none.

    1. ``$LOCKLAB_RESULTS_DIR/<suite>.json`` when that variable is set (and
       then only there: a driver that points at fresh results must not get
       reference data instead);
    2. ``<repo>/results/<suite>.json`` (your own run: ``./lab bench <suite>``);
    3. the newest (by the run date in its context) of
       ``<repo>/results/reference/*/<suite>.json``.
    """
    if os.environ.get(RESULTS_ENV):
        path = Path(os.environ[RESULTS_ENV]) / f"{suite}.json"
        return path if path.is_file() else None
    root = Path(repo_root) if repo_root else find_repo_root()
    if root is None:
        return None
    own = root / "results" / f"{suite}.json"
    if own.is_file():
        return own
    references = sorted((root / "results" / "reference").glob(f"*/{suite}.json"),
                        key=lambda p: (_run_date(p), p.stat().st_mtime))
    return references[-1] if references else None


# ---------------------------------------------------------------- plotting

STYLE = {
    "figure.dpi": 110,
    "savefig.dpi": 130,
    "savefig.bbox": "tight",
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.titleweight": "bold",
    "axes.labelsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.35,
    "grid.linewidth": 0.6,
    "legend.fontsize": 9,
    "legend.frameon": False,
    "lines.linewidth": 1.8,
    "lines.markersize": 5.5,
}

OUR_COLOURS = plt.get_cmap("tab10").colors
# Past ten of our implementations in one figure, tab10 would repeat colours.
MANY_COLOURS = plt.get_cmap("tab20").colors
PEER_GREYS = ("#555555", "#8c8c8c", "#b0b0b0", "#3a3a3a", "#a08c78", "#788ca0")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")
# Once the colours run out (past 6 peers, 10 or 20 of ours), each further
# round of colours gets the next dash pattern, so that no two lines of a
# figure look the same however many there are: line k of C colours and D
# dash patterns is (colour k mod C, dash (k div C) mod D, marker k mod M
# shifted by one each time the dash patterns start over), distinct for the
# first C x D x M lines (300 peers, 1000 of ours).
OUR_DASHES = ("-", (0, (6, 2)), (0, (6, 2, 1, 2)), (0, (1, 1.5)), (0, (10, 3)))
PEER_DASHES = ("--", (0, (3, 1, 1, 1)), (0, (1, 2)), (0, (8, 2, 2, 2, 2, 2)), (0, (4, 4)))


def _distinct_style(k, colours, dashes, marker_offset=0) -> dict:
    """Colour, marker and dash pattern of the ``k``-th line of one kind."""
    rounds = k // len(colours)
    return dict(color=colours[k % len(colours)], linestyle=dashes[rounds % len(dashes)],
                marker=MARKERS[(k + marker_offset + rounds // len(dashes)) % len(MARKERS)])


def apply_style() -> None:
    """Set locklab's matplotlib style (fonts, grid, spines) globally."""
    matplotlib.rcParams.update(STYLE)


def impl_styles(impls, grey_peers=True) -> dict:
    """Line style per implementation: ours in colour, peers grey and dashed.

    Colours follow the order of ``impls``, so pass the same list to every
    panel of a figure.  No two implementations get the same (colour,
    marker, dash pattern), however many there are (see OUR_DASHES).
    ``grey_peers=False`` draws peers like ours (a figure of peers only).
    """
    styles, ours, peers = {}, 0, 0
    impls = list(dict.fromkeys(impls))
    in_colour = [i for i in impls if not (grey_peers and is_peer(i))]
    colours = OUR_COLOURS if len(in_colour) <= len(OUR_COLOURS) else MANY_COLOURS
    for impl in impls:
        if grey_peers and is_peer(impl):
            styles[impl] = dict(**_distinct_style(peers, PEER_GREYS, PEER_DASHES, marker_offset=5), zorder=2)
            peers += 1
        else:
            styles[impl] = dict(**_distinct_style(ours, colours, OUR_DASHES), zorder=3)
            ours += 1
    return styles


def _plain_number(value, _pos=None) -> str:
    return f"{value:g}"


# ------------------------------------------------- what the axes say

LOG_SCALE = "(log scale)"


def log_label(label: str) -> str:
    """``label`` with " (log scale)" appended (once): every log axis this
    module draws says so, since a straight line on it is a power law and
    equal steps are equal *ratios* -- not what a reader assumes."""
    return label if LOG_SCALE in label else f"{label} {LOG_SCALE}".strip()


# Counter -> (panel title, y-axis unit). Titles say what was counted in
# words; the unit labels the axis. A counter not listed keeps its own name
# as the title and gets its unit from its suffix (_ns, _us, _ms), if any.
COUNTER_LABELS = {
    "items_per_second": ("throughput", "operations/s"),
    "ns_per_op": ("time per operation", "ns"),
    "cpu_per_wall": ("CPU seconds per wall second", "cores kept busy"),
    "fairness": ("fairness: slowest / fastest waiter's share", "ratio (1 = equal shares)"),
    "cas_failures_per_op": ("failed compare-and-swaps per increment", "failures / increment"),
    "p50_us": ("median wait to acquire (p50), \u00b5s", "\u00b5s"),
    "p99_us": ("p99 wait to acquire, \u00b5s", "\u00b5s"),
    "p999_us": ("p99.9 wait to acquire, \u00b5s", "\u00b5s"),
    "contended_acquires_per_acquire": ("acquisitions that found the lock taken", "fraction of acquisitions"),
    "handoffs_per_acquire": ("direct hand-offs per acquisition", "hand-offs / acquisition"),
    "parks_per_acquire": ("sleeps (futex waits) per acquisition", "sleeps / acquisition"),
    "spins_per_acquire": ("spin polls per acquisition", "polls / acquisition"),
    "wakes_per_acquire": ("futex wakes per acquisition", "wakes / acquisition"),
    "cpu_us_per_acquire": ("CPU time per acquisition, \u00b5s", "\u00b5s / acquisition"),
    "avg_ms": ("mean wait to acquire, ms", "ms"),
    "p50_ms": ("median latency (p50), ms", "ms"),
    "p95_ms": ("p95 latency, ms", "ms"),
    "p99_ms": ("p99 latency, ms", "ms"),
    "lost_leases_per_acquire": ("leases lost per acquisition", "lost / acquisition"),
    "redis_cmds_per_acquire": ("Redis commands per acquisition", "commands / acquisition"),
    "round_trips_per_acquire": ("network round trips per acquisition", "round trips / acquisition"),
    "server_cpu_us_per_acquire": ("Redis server CPU per acquisition, \u00b5s", "\u00b5s / acquisition"),
    "subscribes_per_acquire": ("SUBSCRIBE commands per acquisition", "subscribes / acquisition"),
    "scripts_per_acquire": ("Lua scripts per acquisition", "scripts / acquisition"),
    "os_threads_peak": ("peak OS threads", "threads"),
    "rss_peak_mib": ("peak resident memory, MiB", "MiB"),
    "lockers_per_second": ("lockers' throughput", "tasks/s"),
    "bystanders_per_second": ("bystanders' throughput", "tasks/s"),
    "pinned_events_per_op": ("pinning events per task", "events / task"),
    "phantom_issues": ("phantom issues (two holders wrote)", "per run"),
    "fence_rejections": ("stale writes refused by the fence", "per run"),
    "after_sold_out": ("issued after sold out", "per run"),
    "lock_timeouts": ("lock timeouts", "per run"),
    "violation": ("runs with a safety violation", "0 / 1 per run"),
    "double_grant": ("granted to another while the holder's lock said held", "0 / 1 per run"),
    "phantom_unfenced": ("stale writes taken, no fence", "0 / 1 per run"),
    "phantom_fenced": ("stale writes taken by a fenced resource", "0 / 1 per run"),
    "phantom_careful": ("stale writes by a holder that heeds its lock's warnings", "0 / 1 per run"),
    "success_rate": ("requests served", "fraction of requests"),
    "mean_wait_ms": ("mean wait for the lock, ms", "ms"),
    "max_waiters": ("most requests waiting at once", "requests"),
    "capacity_per_min": ("capacity, requests per minute", "requests / min"),
    "rejected_tasks": ("tasks the pool rejected", "tasks"),
    "served_per_second": ("requests served per second", "requests/s"),
    "redis_cpu_percent": ("Redis server CPU, %", "%"),
    "subscribes": ("SUBSCRIBE commands", "commands"),
    "final_stock": ("stock left at the end", "items"),
    "lost_updates": ("lost updates", "updates"),
    "round_trips_per_task": ("round trips per task", "round trips / task"),
    "oversold": ("items sold that the stock did not cover", "items"),
    "task_p50_ms": ("median time per task (p50), ms", "ms"),
    "task_p95_ms": ("p95 time per task, ms", "ms"),
    "retries": ("optimistic writes refused and retried", "retries"),
    "round_trips_per_fetch": ("round trips per fetch", "round trips / fetch"),
    "modelled_ms_at_1ms_rtt": ("modelled time at 1 ms round trip, ms", "ms"),
    "distinct_slots": ("distinct cluster slots", "slots"),
    # redis_rwlock: the read-fraction curve of the Redis read-write lock.
    "reads_per_second": ("reads completed per second", "reads/s"),
    "writes_per_second": ("writes completed per second", "writes/s"),
    "round_trips_per_op": ("network round trips per operation", "round trips / operation"),
    "redis_cmds_per_op": ("Redis commands per operation", "commands / operation"),
    "server_cpu_us_per_op": ("Redis server CPU per operation, \u00b5s", "\u00b5s / operation"),
    "server_bound_ops_per_second": ("the server's ceiling: operations/s at 100% Redis CPU", "operations/s"),
    "lost_leases_per_op": ("leases lost per operation", "lost / operation"),
    # rwlocks: the local read-mostly workload (benches/harness/read_write.hpp).
    "reads_per_s": ("reads completed per second", "reads/s"),
    "writes_per_s": ("writes completed per second", "writes/s"),
    "read_fraction": ("fraction of operations that were reads", "reads / operation"),
    "optimistic_retries_per_read": ("optimistic reads that failed validate, per read", "retries / read"),
    "write_wait_p50_us": ("writer wait to acquire, median, \u00b5s", "\u00b5s"),
    "write_wait_p99_us": ("writer wait to acquire, p99, \u00b5s", "\u00b5s"),
}
# A small panel's title wraps past this many characters (they sit three abreast).
COUNTER_TITLE_WIDTH = 30
_TIME_UNITS = {"ns": "ns", "us": "\u00b5s", "ms": "ms", "s": "s"}
_TIME_SUFFIX = re.compile(r"_(ns|us|ms|s)$")


def counter_label(counter: str) -> tuple:
    """``(title, unit)`` of a counter's panel: COUNTER_LABELS, else the raw
    name and the unit its suffix names (``""`` when it names none)."""
    if counter in COUNTER_LABELS:
        return COUNTER_LABELS[counter]
    suffix = _TIME_SUFFIX.search(counter)
    return counter, _TIME_UNITS[suffix.group(1)] if suffix else ""


def is_latency_counter(counter: str) -> bool:
    """True for a time a waiter or task took (``p50_us``, ``p99_ms``,
    ``avg_ms``, ``mean_wait_ms``): a duration suffix, and not a cost per
    event (``cpu_us_per_acquire``) or a physical limit (``floor_ns``).
    Such panels are drawn on a log y axis: one FIFO lock's 1.6 s tail would
    otherwise flatten every other line to zero."""
    return bool(_TIME_SUFFIX.search(counter)) and counter != "floor_ns"


# The thing a suite's items_per_second counts, and the scale it is drawn at
# (the notebooks share y axes between panels of a suite, so the unit is the
# suite's, not each panel's). A suite not listed gets M, k or plain ops/s
# by the magnitude of its fastest point.
THROUGHPUT_UNITS = {
    "locks": (1e6, "M acquisitions/s"),
    "counters": (1e6, "M increments/s"),
    "redis_locks": (1.0, "acquisitions/s"),
    "redis_rwlock": (1.0, "operations/s"),
    "io_bound": (1.0, "tasks/s"),
    "pinning": (1.0, "tasks/s"),
}


def throughput_unit(df) -> tuple:
    """``(divisor, unit)`` of the throughput of ``df``'s suite (see
    THROUGHPUT_UNITS), e.g. ``(1e6, "M acquisitions/s")``."""
    suite = str(df["suite"].iloc[0]) if "suite" in df and len(df) else ""
    if suite in THROUGHPUT_UNITS:
        return THROUGHPUT_UNITS[suite]
    return _rate_unit(df)


def _waiters_axis(ax, waiters, cores=None, label_cores=True) -> None:
    """log2 x axis with ticks 1, 2, 4, ...; a dotted line at the core count."""
    waiters = sorted({int(w) for w in waiters})
    ax.set_xscale("log", base=2)
    ticks = waiters if len(waiters) <= 12 else [w for w in waiters if w & (w - 1) == 0]
    ax.set_xticks(ticks)
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(_plain_number))
    ax.xaxis.set_minor_locator(ticker.NullLocator())
    ax.set_xlabel(log_label("waiters"))
    if not (cores and waiters and waiters[0] <= cores <= waiters[-1]):
        return
    ax.axvline(cores, color="0.35", linestyle=":", linewidth=1, zorder=1)
    if label_cores:
        ax.annotate(f"{cores} cores", xy=(cores, 1), xycoords=("data", "axes fraction"),
                    xytext=(3, -3), textcoords="offset points", va="top",
                    fontsize=8, color="0.35")


def _value_axis(ax, values, log_y, linthresh=1.0) -> None:
    """The y axis of a line panel: log (plain numbers) when ``log_y`` and
    every value is positive; symmetric-log, linear below ``linthresh``, when
    a value is 0 (a collapse to zero stays on the plot); else linear from 0.
    A log axis's label says so (set the label first)."""
    if log_y and values and max(values) > 0:
        if min(values) > 0:
            _log_y_axis(ax)
        else:
            ax.set_yscale("symlog", linthresh=linthresh)
            ax.set_ylim(bottom=0)
            ax.yaxis.set_major_formatter(ticker.FuncFormatter(_plain_number))
            ax.set_ylabel(log_label(ax.get_ylabel()).replace(
                LOG_SCALE, f"(log scale, linear below {linthresh:g})"))
    else:
        ax.set_ylim(bottom=0)


def _log_y_axis(ax) -> None:
    """log y axis labelled with plain numbers (also 2 and 5 up to 3 decades,
    every minor tick within one decade, so a narrow range is still read);
    its label (set it first) gets " (log scale)"."""
    ax.set_ylabel(log_label(ax.get_ylabel()))
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(_plain_number))
    low, high = ax.get_ylim()
    labelled = (2, 5) if high / low >= 10 else range(2, 10)
    if high / low < 1000:
        ax.yaxis.set_minor_formatter(ticker.FuncFormatter(
            lambda v, _: _plain_number(v) if round(v / 10 ** math.floor(math.log10(v))) in labelled
            else ""))
    else:
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())


def _lines(ax, df, column, styles, scale=1.0, label=True) -> None:
    """One line per implementation with a min-max band where repetitions exist."""
    for impl, style in styles.items():
        rows = df[df["impl"] == impl].sort_values("waiters")
        rows = rows[rows[column].notna()]
        if rows.empty:
            continue
        ax.plot(rows["waiters"], rows[column] * scale, label=impl if label else None, **style)
        if (rows["n_reps"] > 1).any() and f"{column}_min" in rows:
            ax.fill_between(rows["waiters"], rows[f"{column}_min"] * scale,
                            rows[f"{column}_max"] * scale, color=style["color"],
                            alpha=0.18, linewidth=0, zorder=1)


def plot_throughput(df, ax=None, cores=None, styles=None, legend=True, floors=None, ceilings=None,
                    unit=None):
    """Throughput (log y) against waiters (log2 x), one line per impl, in the
    suite's unit (:func:`throughput_unit`: M acquisitions/s for locks,
    acquisitions/s for Redis, tasks/s for io_bound ...; ``unit`` =
    ``(divisor, name)`` overrides it).

    ``ceilings`` (from :func:`physical_ceilings`; ``floors`` is its older
    name) adds a dotted reference line per physical limit: the most
    throughput a lock can reach when every operation pays one such event."""
    ax = ax or plt.figure(figsize=(7, 4.2)).gca()
    styles = styles or impl_styles(df["impl"])
    divisor, unit_name = unit or throughput_unit(df)
    _lines(ax, df, THROUGHPUT, styles, scale=1 / divisor)
    for label, ns in {**(floors or {}), **(ceilings or {})}.items():
        ceiling = 1e9 / ns / divisor
        ax.axhline(ceiling, color="#777777", linestyle=(0, (1, 3)), linewidth=1.2, zorder=0)
        ax.annotate(f"{label} ({ns:,.0f} ns)", xy=(1.0, ceiling), xycoords=("axes fraction", "data"),
                    xytext=(-4, 3), textcoords="offset points", ha="right", va="bottom",
                    fontsize=8, color="#555555")
    _waiters_axis(ax, df["waiters"], cores)
    ax.set_ylabel(f"throughput, {unit_name}")
    _log_y_axis(ax)
    ax.set_title(f"throughput, {unit_name}")
    if legend:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax


def plot_counter(df, counter, ax=None, cores=None, styles=None, legend=False, log_y=None):
    """Any counter (``cas_failures_per_op``, ``cpu_per_wall``, ``fairness`` ...)
    against waiters, one line per implementation, titled and labelled from
    COUNTER_LABELS.  The y axis is linear from 0, except for latencies
    (:func:`is_latency_counter`; ``log_y`` overrides): those span decades,
    so they get a log axis (symmetric-log when a value is 0)."""
    ax = ax or plt.figure(figsize=(4.5, 3.2)).gca()
    styles = styles or impl_styles(df["impl"])
    _lines(ax, df, counter, styles, label=legend)
    _waiters_axis(ax, df["waiters"], cores, label_cores=False)
    title, unit = counter_label(counter)
    ax.set_ylabel(unit)
    values = [float(v) for v in df.loc[df["impl"].isin(list(styles)), counter].dropna()]
    positive = [v for v in values if v > 0]
    linthresh = 10 ** math.floor(math.log10(min(positive))) if positive else 1.0
    _value_axis(ax, values, is_latency_counter(counter) if log_y is None else log_y, linthresh)
    if counter == "fairness":
        ax.set_ylim(0, 1.05)
    ax.set_title(textwrap.fill(title, COUNTER_TITLE_WIDTH))
    if legend:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax


def knob_groups(df: pd.DataFrame) -> list:
    """``[(knobs_dict, rows), ...]``: one group per combination of knobs other
    than waiters, in file order.  A knob a point does not name is left out."""
    knobs = knob_columns(df)
    if not knobs:
        return [({}, df)]
    combos = [tuple(None if pd.isna(row[k]) else row[k] for k in knobs)
              for _, row in df.iterrows()]
    groups = []
    for combo in dict.fromkeys(combos):
        mask = [c == combo for c in combos]
        groups.append(({k: v for k, v in zip(knobs, combo) if v is not None}, df[mask]))
    return groups


def _knob_text(knobs: dict, sep: str) -> str:
    """``{"cs_ns": 200.0}`` -> ``cs_ns_200`` (sep ``"_"``) or ``cs_ns=200``."""
    def value(v):
        return f"{v:g}" if isinstance(v, (int, float)) else str(v)
    return sep.join(f"{k}{'_' if sep == '_' else '='}{value(v)}" for k, v in knobs.items())


def suite_figure(df, context=None, knobs=None, floors=None, ceilings=None, subtitle=None, styles=None):
    """The suite figure: throughput on top (with the ``ceilings`` reference
    lines, if any; ``floors`` is their older name), family counters,
    cpu_per_wall and fairness as small panels below.  ``subtitle`` (a
    group's title, see IMPL_GROUPS) goes after the suite's name.  Returns
    the matplotlib Figure."""
    context = context or {}
    cores = context_cores(context)
    small = [c for c in family_counters(df) + ["cpu_per_wall", "fairness"]
             if c in df and df[c].notna().any()]
    columns = max(1, min(3, len(small)))
    small_rows = math.ceil(len(small) / columns)
    fig = plt.figure(figsize=(10, 4.6 + 2.9 * small_rows), layout="constrained")
    grid = fig.add_gridspec(1 + small_rows, columns, height_ratios=[1.7] + [1] * small_rows)
    styles = styles or impl_styles(df["impl"])
    plot_throughput(df, fig.add_subplot(grid[0, :]), cores, styles, floors=floors, ceilings=ceilings)
    for i, counter in enumerate(small):
        plot_counter(df, counter, fig.add_subplot(grid[1 + i // columns, i % columns]),
                     cores, styles)
    suite = df["suite"].iloc[0]
    knob_text = f" ({_knob_text(knobs, ', ')})" if knobs else ""
    reps = int(df["n_reps"].max())
    band = f"; median of {reps} repetitions, band = min\u2013max" if reps > 1 else ""
    what = f" \u2014 {subtitle}" if subtitle else ""
    fig.suptitle(f"{suite}{knob_text}{what}\n{machine_title(context)}{band}", fontsize=11)
    return fig


# Physical limits measured by the `physical_limits` suite that make sense as a
# throughput ceiling "one such event per acquisition" on a lock's throughput
# plot: a lock that pays one per acquisition cannot go above the line.  (Not
# on counters: a core that owns the line does many increments per hand-off.)
# The limit itself is a floor in time (ns per event); drawn as throughput it
# is a ceiling, and the label says which.
CEILING_LABELS = {
    "CacheLineHandoff": "ceiling: one cache-line hand-off per acquisition",
    "FutexWakeToRun": "ceiling: one futex wake-to-run per acquisition",
}
# Older name, kept for the notebooks that build their reference lines from it.
FLOOR_LABELS = CEILING_LABELS
PHYSICAL_SUITE = "physical_limits"


def physical_ceilings(results_dir) -> dict:
    """``{label: ns}`` (labels of CEILING_LABELS) from
    ``results_dir/physical_limits.json``, or ``{}``: the time per event,
    drawn by :func:`plot_throughput` as the throughput ceiling 1e9 / ns."""
    path = Path(results_dir) / f"{PHYSICAL_SUITE}.json"
    if not path.is_file():
        return {}
    df = load_suite(path)
    if "floor_ns" not in df:
        return {}
    return {label: float(df.loc[df["impl"] == impl, "floor_ns"].iloc[0])
            for impl, label in CEILING_LABELS.items() if (df["impl"] == impl).any()}


def wants_ceilings(suite: str) -> bool:
    """Lock suites get the hand-off ceilings drawn; see CEILING_LABELS."""
    return suite.startswith("locks")


# Older names of the two above.
physical_floors = physical_ceilings
wants_floors = wants_ceilings


def plot_physical_limits(df, context, out_dir) -> list:
    """The physical_limits suite: one horizontal bar per measure, log scale."""
    rows = df.sort_values("floor_ns")
    fig, ax = plt.subplots(figsize=(9, 0.55 * len(rows) + 1.6), layout="constrained")
    ax.barh(rows["impl"], rows["floor_ns"], color=OUR_COLOURS[0])
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(_plain_number))
    for y, ns in enumerate(rows["floor_ns"]):
        ax.annotate(f"{ns:,.1f} ns", xy=(ns, y), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize=9)
    ax.set_xlabel("nanoseconds per event (log scale)")
    ax.set_title(f"{PHYSICAL_SUITE}: the cost of one event, a floor in time and a ceiling on throughput\n"
                 f"{machine_title(context)}",
                 fontsize=11)
    path = Path(out_dir) / f"{PHYSICAL_SUITE}.png"
    fig.savefig(path)
    plt.close(fig)
    return [path]


# Which implementations share a figure, per suite, once a knob combination
# has more of them than MAX_LINES_PER_PANEL (up to that, one figure holds
# them all): two dozen lines on one panel read as a tangle. Each group is
# (file suffix, title, members, yardsticks). A member is a name (it also
# takes that name's configurations, "AdaptiveMutex(park-only)", and an
# exercise's lock, "my.TicketLock") or a prefix ending in "." or "::" ("ck."
# takes every Concurrency Kit lock). The first group that takes an
# implementation has it; a group's yardsticks present are drawn in its
# figure as well, for comparison. What no group takes goes to OTHER_GROUP,
# so nothing is dropped. Notebook 02 groups its panels the same way.
MAX_LINES_PER_PANEL = 10
IMPL_GROUPS = {
    "locks": (
        ("spinners", "spin locks: a waiter polls until the lock is free",
         ("TasLock", "TtasLock", "BackoffLock", "TicketLock", "McsLock"), ("std::mutex",)),
        ("parkers", "parking locks: a waiter sleeps in the kernel (futex)",
         ("McsParkingLock", "FutexMutex", "AdaptiveMutex", "ParkingLotMutex"), ("std::mutex", "glibc.adaptive")),
        ("ownership", "locks with an owner or permits: reentrant locks, semaphores",
         ("ReentrantLock", "Reentrant", "Semaphore"), ("std::mutex",)),
        ("peers", "peers: C and C++ libraries' locks, and no lock at all (none)",
         ("std::", "glibc.", "absl.", "tbb.", "boost::", "folly::", "ck.", "ck_", "none"), ()),
        ("jvm", "peers: the JVM's locks", ("java.",), ()),
    ),
    "rwlocks": (
        ("ours", "our read-write locks: ReentrantReadWriteLock, StampedLock (read lock, optimistic read)",
         ("ReentrantReadWriteLock", "StampedLock"), ("std::shared_mutex", "none")),
        ("peers", "peers: C and C++ libraries' read-write locks, one mutex for both sides, and no lock at all (none)",
         ("std::", "glibc.", "absl.", "tbb.", "none"), ()),
        ("jvm", "peers: the JVM's read-write locks", ("java.",), ("ReentrantReadWriteLock(unfair)",)),
    ),
}
OTHER_GROUP = ("other", "implementations no group of IMPL_GROUPS takes")
EXERCISE_PREFIX = "my."


def _takes(member: str, impl: str) -> bool:
    """Whether a group member of IMPL_GROUPS takes ``impl`` (see there)."""
    if member.endswith((".", "::", "_")):
        return impl.startswith(member)
    name = impl[len(EXERCISE_PREFIX):] if impl.startswith(EXERCISE_PREFIX) else impl
    return name == member or name.startswith(member + "(")


def impl_groups(suite: str, impls) -> list:
    """``[(name, title, impls_drawn), ...]``: the groups of IMPL_GROUPS for
    ``suite`` that take any of ``impls``, then OTHER_GROUP for the rest (if
    any); ``impls_drawn`` are the group's implementations in the order of
    ``impls``, then its yardsticks present.  Every implementation is in
    exactly one group (yardsticks aside).  ``[]`` for a suite not in
    IMPL_GROUPS."""
    impls = list(dict.fromkeys(impls))
    if suite not in IMPL_GROUPS:
        return []
    left, groups = list(impls), []
    for name, title, members, yardsticks in IMPL_GROUPS[suite]:
        mine = [i for i in left if any(_takes(m, i) for m in members)]
        if not mine:
            continue
        left = [i for i in left if i not in mine]
        groups.append((name, title, mine + [y for y in yardsticks if y in impls and y not in mine]))
    if left:
        groups.append((*OTHER_GROUP, left))
    return groups


def plot_frame(df, context, out_dir, floors=None) -> list:
    """Write the PNG(s) of one suite's DataFrame (one per knob combination;
    past MAX_LINES_PER_PANEL implementations, one per group of
    :func:`impl_groups` too: ``locks_cs_ns_0_spinners.png``) and return
    their paths; ``[]`` if the points have no waiters axis."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    apply_style()
    suite = str(df["suite"].iloc[0])
    if suite == PHYSICAL_SUITE and "floor_ns" in df:
        return plot_physical_limits(df, context, out_dir)
    if "waiters" not in df or df["waiters"].isna().all():
        return []
    groups = knob_groups(df)
    written = []
    for knobs, rows in groups:
        rows = rows[rows["waiters"].notna()]
        stem = suite.replace("/", "_")
        if len(groups) > 1 and knobs:
            stem += "_" + _knob_text(knobs, "_")
        ceilings = floors if wants_ceilings(suite) else None
        impls = list(dict.fromkeys(rows["impl"]))
        groups_of_impls = impl_groups(suite, impls) if len(impls) > MAX_LINES_PER_PANEL else []
        figures = [(f"{stem}_{name}", title, drawn) for name, title, drawn in groups_of_impls] \
            or [(stem, None, impls)]
        for file_stem, title, drawn in figures:
            # A figure of peers only draws them in colour: grey is for telling
            # peers from ours.
            styles = impl_styles(drawn, grey_peers=not all(is_peer(i) for i in drawn))
            fig = suite_figure(rows[rows["impl"].isin(drawn)], context, knobs, ceilings=ceilings,
                               subtitle=title, styles=styles)
            path = out_dir / f"{file_stem}.png"
            fig.savefig(path)
            plt.close(fig)
            written.append(path)
    return written


# Scenario tables (benches/scenarios) have no waiters axis: one bar per
# variant for the counters that tell their story, median of the runs with
# a min-max whisker.  Other suites without a waiters axis get their first four
# counters.
SCENARIO_BARS = {
    "scenario_coupon": ("phantom_issues", "fence_rejections", "after_sold_out", "lock_timeouts"),
    "scenario_faults": ("violation", "phantom_issues", "fence_rejections", "lock_timeouts"),
    # A skipped run's one row has none of these: no plot, and the notebook says why.
    "scenario_partition": ("double_grant", "phantom_unfenced", "phantom_fenced", "phantom_careful"),
    "scenario_load_test": ("success_rate", "mean_wait_ms", "max_waiters", "capacity_per_min"),
    "scenario_pool_rejection": ("rejected_tasks", "served_per_second", "redis_cpu_percent", "subscribes"),
    "scenario_stock": ("final_stock", "lost_updates", "items_per_second", "round_trips_per_task"),
    "scenario_batch": ("p50_ms", "round_trips_per_fetch", "modelled_ms_at_1ms_rtt", "distinct_slots"),
    "scenario_failover": ("double_grant", "phantom_write", "a_not_replicated", "key_survived"),
}
# A scenario's time series (``scenario_load_test/<case>.<impl>/t:<seconds>``,
# one point per sample) rides in the same file as its table; the bar chart
# and the summary leave these points out, plot_waiters_over_time draws them.
SERIES_KNOB = "t"


def table_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``df`` that are not time-series samples (see SERIES_KNOB)."""
    if SERIES_KNOB not in df:
        return df
    return df[df[SERIES_KNOB].isna()]


def plot_table_suite(df, context, out_dir) -> list:
    """``out_dir/<suite>.png``: bars per implementation for the suite's key
    counters (see ``SCENARIO_BARS``); ``[]`` if it has no counters.  Time
    series samples (``SERIES_KNOB``) are not bars: they are left out."""
    suite = str(df["suite"].iloc[0])
    df = table_rows(df)
    if df.empty:
        return []
    measured = counter_columns(df)
    wanted = [c for c in SCENARIO_BARS.get(suite, measured[:4]) if c in measured]
    if not wanted:
        return []
    apply_style()
    fig, axes = plt.subplots(1, len(wanted), figsize=(3.2 * len(wanted) + 1, 4.2),
                             layout="constrained", squeeze=False)
    impls = list(dict.fromkeys(df["impl"]))
    colours = ["#999999" if is_peer(i) else plt.get_cmap("tab10")(k % 10) for k, i in enumerate(impls)]
    for ax, counter in zip(axes[0], wanted):
        rows = df.set_index("impl").loc[impls]
        mid = rows[counter].to_numpy(dtype=float)
        lo = rows.get(f"{counter}_min", rows[counter]).to_numpy(dtype=float)
        hi = rows.get(f"{counter}_max", rows[counter]).to_numpy(dtype=float)
        ax.bar(range(len(impls)), mid, color=colours,
               yerr=[mid - lo, hi - mid] if (hi > lo).any() else None, capsize=3)
        ax.set_xticks(range(len(impls)), impls, rotation=40, ha="right", fontsize=8)
        title, unit = counter_label(counter)
        ax.set_title(textwrap.fill(title, COUNTER_TITLE_WIDTH), fontsize=10)
        ax.set_ylabel(unit)
        ax.set_ylim(bottom=0)
    reps = int(df["n_reps"].max())
    runs = f"; median of up to {reps} runs, whisker = min\u2013max" if reps > 1 else ""
    fig.suptitle(f"{suite}\n{machine_title(context)}{runs}", fontsize=11)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{suite.replace('/', '_')}.png"
    fig.savefig(path)
    plt.close(fig)
    return [path]


def plot_waiters_over_time(df, context, out_dir) -> list:
    """``out_dir/<suite>_waiters.png`` for a suite with time-series samples
    (the load test): per case (the impl's part before its last ``.``), the
    requests waiting in the lock call against time in the case study's
    seconds (the scenario runs time-scaled), one line per implementation
    (solid), and those queued for a free thread (dashed, when any).  ``[]``
    when ``df`` has no samples."""
    if SERIES_KNOB not in df or "lock_waiters" not in df:
        return []
    samples = df[df[SERIES_KNOB].notna()]
    if samples.empty:
        return []
    suite = str(df["suite"].iloc[0])
    cases = list(dict.fromkeys(impl.rpartition(".")[0] or impl for impl in samples["impl"]))
    apply_style()
    fig, axes = plt.subplots(1, len(cases), figsize=(5.2 * len(cases) + 0.6, 4.2),
                             layout="constrained", squeeze=False)
    for ax, case in zip(axes[0], cases):
        rows = samples[[(impl.rpartition(".")[0] or impl) == case for impl in samples["impl"]]]
        for k, impl in enumerate(dict.fromkeys(rows["impl"])):
            mine = rows[rows["impl"] == impl].sort_values(SERIES_KNOB)
            x = mine["t_s"] if "t_s" in mine else mine[SERIES_KNOB]
            colour = OUR_COLOURS[k % len(OUR_COLOURS)]
            label = impl.rpartition(".")[2] or impl
            ax.plot(x, mine["lock_waiters"], color=colour, label=f"{label}: waiting for the lock")
            if "queued" in mine and mine["queued"].fillna(0).max() > 0:
                ax.plot(x, mine["queued"], color=colour, linestyle="--",
                        label=f"{label}: queued for a thread")
        ax.set_title(case)
        ax.set_xlabel("time (case-study seconds)")
        ax.set_ylabel("requests")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
    fig.suptitle(f"{suite}: waiters over time\n{machine_title(context)}", fontsize=11)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{suite.replace('/', '_')}_waiters.png"
    fig.savefig(path)
    plt.close(fig)
    return [path]


def plot_suite(json_path, out_dir, floors=None) -> list:
    """Write ``out_dir/<suite>.png`` (or one ``<suite>_<knob>_<v>.png`` per
    knob combination) for one results file and return the paths written.

    A suite whose points have no ``waiters`` (a scenario table) has nothing to
    draw against waiters: it returns an empty list.
    """
    return plot_frame(load_suite(json_path), load_context(json_path), out_dir, floors)


def load_results_dir(results_dir) -> dict:
    """``{suite: (DataFrame, context)}`` for every ``*.json`` of a directory.

    Files of the same suite are merged, so a peer driver's file (e.g. the JVM's
    ``jvm_counters.json``, whose points are named ``counters/java.LongAdder/...``)
    overlays the C++ suite's curves.  The context is that of the file with the
    most points of our own (the C++ run), so the title names its machine."""
    frames = {}
    for path in _results_files(Path(results_dir)):
        df = load_suite(path)
        frames.setdefault(str(df["suite"].iloc[0]), []).append((df, load_context(path)))
    merged = {}
    for suite, parts in frames.items():
        parts.sort(key=lambda part: -int((~part[0]["peer"]).sum()))
        merged[suite] = (pd.concat([df for df, _ in parts], ignore_index=True), parts[0][1])
    return merged


def plot_results_dir(results_dir, out_dir) -> list:
    """Every suite of ``results_dir`` -> PNGs in ``out_dir``; returns the paths."""
    floors = physical_floors(results_dir)
    frames = load_results_dir(results_dir)
    written = []
    for suite, (df, context) in frames.items():
        # Split points (P processes x T threads) get their own figure, not
        # one single-point figure per value of the processes knob.
        curves, _ = split_rows(df)
        paths = plot_frame(curves, context, out_dir, floors) if not curves.empty else []
        paths += plot_process_split(df, context, out_dir)
        if not paths:
            paths = plot_table_suite(df, context, out_dir)
            paths += plot_waiters_over_time(df, context, out_dir)
        if not paths:
            print(f"{suite}: no waiters axis and no counters, nothing plotted", file=sys.stderr)
        written += paths
    return written + write_local_vs_distributed(frames, out_dir)


def _rate_unit(rows) -> tuple:
    """``(divisor, name)`` that puts the block's fastest point at >= 1:
    M ops/s for the local suites, k ops/s or ops/s for Redis and fibers."""
    fastest = rows[THROUGHPUT].max() if THROUGHPUT in rows else float("nan")
    for divisor, name in ((1e6, "M ops/s"), (1e3, "k ops/s")):
        if fastest >= divisor:
            return divisor, name
    return 1.0, "ops/s"


def _rate_cell(rows, divisor=1e6) -> str:
    """A 10-character cell: the throughput of ``rows`` / ``divisor``, or ``-``."""
    if rows.empty or THROUGHPUT not in rows or pd.isna(rows[THROUGHPUT].iloc[0]):
        return f"{'-':>10}"
    rate = rows[THROUGHPUT].iloc[0] / divisor
    return f"{rate:>10.1f}" if rate >= 1 else f"{rate:>10.3g}"


def summary_table(json_path) -> str:
    """Throughput as a fixed-width text table, impl x waiters, one block per
    knob combination, in M, k or plain ops/s (whichever puts the block's
    fastest point at >= 1); peers are marked with ``*``.  Time-series
    samples (``SERIES_KNOB``) are left out."""
    df = table_rows(load_suite(json_path))
    lines = [f"{df['suite'].iloc[0]} \u2014 {machine_title(load_context(json_path))}"]
    if df["suite"].iloc[0] == PHYSICAL_SUITE and "floor_ns" in df:
        width = max(map(len, df["impl"]))
        lines += ["", "nanoseconds per event"]
        lines += [f"{impl:<{width}}{ns:>12,.1f}" for impl, ns in zip(df["impl"], df["floor_ns"])]
        return "\n".join(lines)
    for knobs, rows in knob_groups(df):
        reps = int(rows["n_reps"].max())
        divisor, unit = _rate_unit(rows)
        what = f"throughput, {unit}" + (f", median of {reps} reps" if reps > 1 else "")
        if knobs:
            what += f" ({_knob_text(knobs, ', ')})"
        impls = list(dict.fromkeys(rows["impl"]))
        labels = {impl: impl + (" *" if is_peer(impl) else "") for impl in impls}
        corner = "impl \\ waiters"
        width = max(len(corner), *map(len, labels.values()))
        has_waiters = "waiters" in rows and rows["waiters"].notna().any()
        columns = sorted(rows["waiters"].dropna().astype(int).unique()) if has_waiters else [""]
        lines += ["", what, f"{corner:<{width}}" + "".join(f"{w:>10}" for w in columns)]
        for impl in impls:
            mine = rows[rows["impl"] == impl]
            cells = [_rate_cell(mine[mine["waiters"] == w] if has_waiters else mine, divisor)
                     for w in columns]
            lines.append(f"{labels[impl]:<{width}}" + "".join(cells))
    if df["peer"].any():
        lines += ["", "* peer implementation"]
    return "\n".join(lines)


# ------------------------------------------------- a counter against a knob

def plot_versus(df, x, y, ax=None, styles=None, scale=1.0, log_x=True, log_y=False,
                xlabel=None, ylabel=None, title=None, legend=True):
    """Counter ``y`` against column ``x``, one line per implementation.

    For suites whose story is not "throughput against waiters": the pinning
    suite's ``lockers_per_second`` against ``carriers``, the io_bound suite's
    ``p95_ms`` against ``waiters`` (its concurrency).  ``y`` is multiplied by
    ``scale``; where repetitions exist the line is the median and the band
    min--max, as in :func:`plot_throughput`.  ``log_x`` draws x on a log2 axis
    ticked at the data's values; ``log_y`` on a log axis of plain numbers, which
    becomes symmetric-log (linear below 1) when a value is 0, so that a
    collapse to zero stays on the plot instead of vanishing.  A log axis's
    label gets " (log scale)" (:func:`log_label`).

    Raises ``KeyError`` naming the missing column and the ones there are, and
    ``ValueError`` when an implementation has several points at one ``x``
    (filter by the other knobs first, e.g. ``df[df["waiters"] == 1000]``):
    joining them would draw a zigzag that means nothing.  Returns the Axes.
    """
    for column in (x, y, "impl"):
        if column not in df:
            raise KeyError(f"plot_versus: no column {column!r}; the columns are {sorted(map(str, df.columns))}")
    duplicated = df[df[y].notna()].duplicated(subset=["impl", x], keep=False)
    if duplicated.any():
        first = df[df[y].notna()][duplicated].iloc[0]
        raise ValueError(f"plot_versus: {first['impl']} has several points at {x}={first[x]}; "
                         f"filter the rows by their other knobs first")
    ax = ax or plt.figure(figsize=(5.5, 3.8)).gca()
    styles = styles or impl_styles(df["impl"])
    values = []
    for impl, style in styles.items():
        rows = df[(df["impl"] == impl) & df[y].notna()].sort_values(x)
        if rows.empty:
            continue
        ax.plot(rows[x], rows[y] * scale, label=impl if legend else None, **style)
        values += list(rows[y] * scale)
        if "n_reps" in rows and (rows["n_reps"] > 1).any() and f"{y}_min" in rows:
            ax.fill_between(rows[x], rows[f"{y}_min"] * scale, rows[f"{y}_max"] * scale,
                            color=style["color"], alpha=0.18, linewidth=0, zorder=1)
    xs = sorted({float(v) for v in df[x].dropna()})
    ax.set_xlabel(xlabel or x)
    if log_x and xs and xs[0] > 0:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_minor_locator(ticker.NullLocator())
        ax.set_xlabel(log_label(ax.get_xlabel()))
    if xs:
        ax.set_xticks(xs)
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(_plain_number))
    ax.set_ylabel(ylabel or y)
    _value_axis(ax, values, log_y)
    ax.set_title(title or y)
    if legend:
        ax.legend(loc="best")
    return ax


# The read-mostly suites name their read fraction in one of two knobs:
# ``read_permille`` (rwlocks: 1000 = reads only) or ``read_pct`` (redis_rwlock).
# Their values (100, 99, 90, 50 %) crowd at one end of a linear axis, so the
# plots put them at even steps instead: ``read_step`` 0 for the most reads.
READ_PERCENT = "read_pct"
READ_STEP = "read_step"
READ_FRACTION_KNOBS = (("read_pct", 1.0), ("read_permille", 0.1))


def with_read_percent(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` with a ``read_pct`` column (reads per 100 operations),
    from whichever read-fraction knob the suite has (``READ_FRACTION_KNOBS``),
    and ``read_step``: the rank of that value among the frame's, most reads
    first (0, 1, 2, ...), the x of :func:`plot_versus` with ``log_x=False``
    before :func:`read_percent_axis` labels it.

    Raises ``KeyError`` naming the knobs looked for when ``df`` has neither.
    """
    for knob, to_percent in READ_FRACTION_KNOBS:
        if knob in df:
            out = df.copy()
            out[READ_PERCENT] = df[knob] * to_percent
            steps = {v: k for k, v in enumerate(sorted(out[READ_PERCENT].dropna().unique(), reverse=True))}
            out[READ_STEP] = out[READ_PERCENT].map(steps)
            return out
    raise KeyError(f"with_read_percent: no read-fraction knob ({', '.join(k for k, _ in READ_FRACTION_KNOBS)}); "
                   f"the columns are {sorted(map(str, df.columns))}")


def read_percent_axis(ax, df: pd.DataFrame) -> None:
    """Labels a ``read_step`` x axis (see :func:`with_read_percent`) with the
    read percentages of ``df``: most reads at the left, evenly spaced, the
    label saying so."""
    pairs = sorted({(int(s), float(p)) for s, p in zip(df[READ_STEP], df[READ_PERCENT]) if pd.notna(s)})
    ax.set_xticks([s for s, _ in pairs])
    ax.set_xticklabels([f"{p:g}" for _, p in pairs])
    if pairs:
        ax.set_xlim(pairs[0][0] - 0.25, pairs[-1][0] + 0.25)
    ax.set_xlabel("reads, % of operations (evenly spaced)")


# ------------------------- distributed locks: the process split, the overlay

# A point that names this knob ran its waiters as P processes x T threads
# (``redis_locks/<Impl>/waiters:16/hold_us:1000/processes:4`` is 4 x 4); the
# plain points of the same suite are the threads-in-one-process curve.
SPLIT_KNOB = "processes"
LOCAL_SUITE = "locks"
DISTRIBUTED_SUITE = "redis_locks"


# ------------------------------------------------ the Redis lock registry

# The one list of the Redis locks, in plot order. The C++ benches, scenarios
# and outcome tests are generated from the same file at configure time
# (benches/harness/redis_lock_registry.hpp), so a lock added there is
# measured, plotted and ordered here with no edit.
REDIS_LOCK_REGISTRY = Path(__file__).resolve().parent.parent / "benches" / "redis_locks.json"
REGISTRY_FIELDS = ("name", "header", "reentrant", "watchdog", "guarded", "fence_in_every_script",
                   "per_waiter_keys", "keys_note", "fenced_keys_note")
GUARDED_PREFIX = "Guarded("


class RegistryError(ValueError):
    """The registry file is missing, not JSON, or an entry lacks a field."""


def redis_lock_registry(path=None) -> list:
    """The entries of ``benches/redis_locks.json`` (or ``path``), in order:
    one dict per Redis lock with the fields of ``REGISTRY_FIELDS`` (its
    ``about`` explains them).  Raises :class:`RegistryError` naming the file
    and the entry when something is missing or repeated."""
    path = Path(path) if path is not None else REDIS_LOCK_REGISTRY
    try:
        locks = json.loads(path.read_text())["locks"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RegistryError(f"{path}: cannot read the Redis lock registry ({exc})") from exc
    seen = set()
    for k, entry in enumerate(locks):
        missing = [f for f in REGISTRY_FIELDS if f not in entry]
        if missing:
            raise RegistryError(f"{path}: lock {k} ({entry.get('name', '?')}) lacks {', '.join(missing)}")
        if entry["name"] in seen:
            raise RegistryError(f"{path}: {entry['name']} is listed twice")
        seen.add(entry["name"])
    return locks


def redis_lock_names(path=None) -> tuple:
    """The registry's lock names, in plot order."""
    return tuple(entry["name"] for entry in redis_lock_registry(path))


def redis_lock_of(impl: str, names=None) -> str | None:
    """The registry lock an implementation of the Redis benches and scenarios
    runs: ``PubSubLock`` for ``PubSubLock``, ``Guarded(PubSubLock)`` and a
    configuration such as ``SpinLock(fixed-1ms)``; ``None`` for a peer, the
    ``none`` baseline or a name no registry lock explains."""
    names = redis_lock_names() if names is None else names
    inner = impl[len(GUARDED_PREFIX):-1] if impl.startswith(GUARDED_PREFIX) and impl.endswith(")") else impl
    base = inner.split("(", 1)[0]
    return base if base in names else None


def redis_impl_order(impls) -> list:
    """``impls`` without repeats, in registry order: each lock's plain name,
    then its configurations (in the order given), then the ``Guarded(...)``
    ones in registry order; names of no registry lock (peers) last, in the
    order given."""
    names = redis_lock_names()
    impls = list(dict.fromkeys(impls))

    def key(k_impl):
        k, impl = k_impl
        lock = redis_lock_of(impl, names)
        if lock is None:
            return (2, 0, 0, k)
        return (int(impl.startswith(GUARDED_PREFIX)), names.index(lock), int(impl != lock), k)
    return [impl for _, impl in sorted(enumerate(impls), key=key)]


def guarded_pairs() -> list:
    """``[(lock, "Guarded(lock)")]`` for the registry locks the redis_locks
    suite also runs behind GuardedLock."""
    return [(e["name"], f"{GUARDED_PREFIX}{e['name']})") for e in redis_lock_registry() if e["guarded"]]


# Default curves of the overlay (those present; else the first few of ours).
OVERLAY_LOCAL_IMPLS = ("std::mutex", "TtasLock", "McsLock", "AdaptiveMutex", "ReentrantLock(fair)")
OVERLAY_DISTRIBUTED_IMPLS = redis_lock_names()
OVERLAY_PNG = f"{DISTRIBUTED_SUITE}_vs_{LOCAL_SUITE}.png"
SPLIT_PANELS = (("items_per_second", "acquisitions/s"), ("p95_ms", "p95 acquire, ms"),
                ("redis_cmds_per_acquire", "Redis commands / acquisition"))


def split_rows(df: pd.DataFrame) -> tuple:
    """``(curve_rows, split_rows)``: the points without and with the
    ``processes`` knob (either may be empty; without the knob all are curve)."""
    if SPLIT_KNOB not in df:
        return df, df.iloc[0:0]
    split = df[SPLIT_KNOB].notna()
    return df[~split], df[split]


def plot_process_split(df, context, out_dir) -> list:
    """One PNG per total waiter count of a suite's split points
    (``<suite>_processes.png``, or ``<suite>_processes_waiters_<N>.png`` when
    several totals exist): acquisitions/s, p95 and Redis commands per
    acquisition against P x T, one line per implementation.  Points of other
    knob combinations (another hold time) get their own PNG.  Returns the
    paths; ``[]`` when ``df`` has no split point."""
    _, rows = split_rows(df)
    if rows.empty:
        return []
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    apply_style()
    suite = str(rows["suite"].iloc[0])
    others = [k for k in knob_columns(rows) if k != SPLIT_KNOB]
    keys = ["waiters"] + others
    groups = list(rows.groupby(keys, dropna=False, sort=False))
    styles = impl_styles(df["impl"])
    written = []
    for values, group in groups:
        values = values if isinstance(values, tuple) else (values,)
        knobs = dict(zip(keys, values))
        panels = [(c, label) for c, label in SPLIT_PANELS if c in group and group[c].notna().any()]
        fig, axes = plt.subplots(1, len(panels), figsize=(4.4 * len(panels) + 2.2, 3.8),
                                 layout="constrained", squeeze=False)
        mine = {i: s for i, s in styles.items() if i in set(group["impl"])}
        for ax, (counter, label) in zip(axes[0], panels):
            plot_versus(group, SPLIT_KNOB, counter, ax=ax, styles=mine, log_y=counter != "redis_cmds_per_acquire",
                        xlabel="processes x threads", ylabel=label, title=label, legend=True)
            ax.get_legend().remove()  # one legend for the figure, beside the last panel
            ticks = sorted({int(p) for p in group[SPLIT_KNOB]})
            ax.set_xticks(ticks)
            ax.set_xticklabels([f"{p}x{int(knobs['waiters']) // p}" for p in ticks])
        handles, labels = axes[0][0].get_legend_handles_labels()
        axes[0][-1].legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        extra = {k: v for k, v in knobs.items() if k != "waiters" and not pd.isna(v)}
        knob_text = f", {_knob_text(extra, ', ')}" if extra else ""
        fig.suptitle(f"{suite}: {int(knobs['waiters'])} waiters as processes x threads{knob_text}\n"
                     f"{machine_title(context or {})}", fontsize=11)
        stem = f"{suite}_{SPLIT_KNOB}"
        if len(groups) > 1:
            stem += "_" + _knob_text({k: v for k, v in knobs.items() if not pd.isna(v)}, "_")
        path = out_dir / f"{stem}.png"
        fig.savefig(path)
        plt.close(fig)
        written.append(path)
    return written


def _overlay_rows(df, wanted, default_impls, knob=None, knob_value=None):
    """The curve rows of ``df`` (no split, no hand-off) of one knob group,
    for the implementations ``wanted`` (default: ``default_impls`` present,
    plus every peer for the distributed side)."""
    rows, _ = split_rows(df)
    for single_thread_knob in ("handoff", "idle_ms"):  # hand-off and uncontended points
        if single_thread_knob in rows:
            rows = rows[rows[single_thread_knob].isna()]
    if knob and knob in rows and rows[knob].notna().any():
        value = knob_value if knob_value is not None else rows[knob].max()
        rows = rows[rows[knob] == value]
    rows = rows[rows["waiters"].notna() & rows[THROUGHPUT].notna()]
    present = list(dict.fromkeys(rows["impl"]))
    if wanted is None:
        wanted = [i for i in default_impls if i in present]
        if not wanted:
            wanted = [i for i in present if not is_peer(i)][:5]
    missing = [i for i in wanted if i not in present]
    if missing:
        raise KeyError(f"no curve points for {missing}; there are {present}")
    return rows[rows["impl"].isin(wanted)], wanted


def _family_styles(impls, cmap, marker, peers_dashed=True) -> dict:
    """Shades of one colour map for a family's own curves; peers grey, dashed."""
    ours = [i for i in impls if not is_peer(i)]
    shades = [plt.get_cmap(cmap)(0.45 + 0.5 * k / max(1, len(ours) - 1)) for k in range(len(ours))]
    styles, grey = {}, 0
    for impl in impls:
        if is_peer(impl) and peers_dashed:
            # Past six peers the greys repeat: the dash pattern tells them apart.
            styles[impl] = dict(_distinct_style(grey, PEER_GREYS, PEER_DASHES), marker=marker, zorder=2)
            grey += 1
        else:
            styles[impl] = dict(color=shades[ours.index(impl)] if impl in ours else "0.4", linestyle="-",
                                marker=marker, zorder=3)
    return styles


def plot_local_vs_distributed(local_df, distributed_df, context=None, local_impls=None,
                              distributed_impls=None, cs_ns=None, hold_us=None):
    """The lab's one picture: local and distributed locks on one waiter axis.

    Left panel: two y scales, local locks (blue, left axis, M acquisitions/s)
    and Redis locks (orange; peers grey and dashed; right axis,
    acquisitions/s), both log.  Right panel: each curve divided by its
    family's uncontended best -- the family's best throughput at its smallest
    waiter count (one uncontended waiter: the cheapest an acquisition gets in
    that family) -- so 1 means "as cheap as an uncontended acquisition" and the
    drop shows what contention costs each family, on one log scale.

    ``local_df`` is the ``locks`` suite (``cs_ns`` picks its knob group,
    default the largest: the closest to a real critical section),
    ``distributed_df`` the ``redis_locks`` suite with its peers (``hold_us``
    picks the group, default the largest; split and hand-off points are left
    out).  ``local_impls`` / ``distributed_impls`` choose the curves (default:
    OVERLAY_LOCAL_IMPLS / OVERLAY_DISTRIBUTED_IMPLS present, plus every
    distributed peer).  Raises ``KeyError`` naming an implementation that has
    no curve points.  Returns the Figure."""
    local, local_names = _overlay_rows(local_df, local_impls, OVERLAY_LOCAL_IMPLS, "cs_ns", cs_ns)
    dist, dist_names = _overlay_rows(distributed_df, distributed_impls, OVERLAY_DISTRIBUTED_IMPLS, "hold_us", hold_us)
    if distributed_impls is None:
        peers = [i for i in dict.fromkeys(split_rows(distributed_df)[0]["impl"]) if is_peer(i)]
        dist_names += [p for p in peers if p not in dist_names]
        dist, _ = _overlay_rows(distributed_df, dist_names, (), "hold_us", hold_us)
    apply_style()
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8), layout="constrained")
    local_styles = _family_styles(local_names, "Blues", "o")
    dist_styles = _family_styles(dist_names, "Oranges", "s")
    twin = left.twinx()
    _lines(left, local, THROUGHPUT, local_styles, scale=1e-6)
    _lines(twin, dist, THROUGHPUT, dist_styles)
    waiters = sorted(set(local["waiters"]) | set(dist["waiters"]))
    cores = context_cores(context or {})
    _waiters_axis(left, waiters, cores)
    left.set_ylabel("local: M acquisitions/s", color=plt.get_cmap("Blues")(0.85))
    twin.set_ylabel("Redis: acquisitions/s", color=plt.get_cmap("Oranges")(0.85))
    _log_y_axis(left)
    _log_y_axis(twin)
    twin.spines["right"].set_visible(True)
    twin.grid(False)
    local_knob = f"cs_ns={local['cs_ns'].iloc[0]:g}" if "cs_ns" in local and local["cs_ns"].notna().any() else ""
    dist_knob = f"hold_us={dist['hold_us'].iloc[0]:g}" if "hold_us" in dist and dist["hold_us"].notna().any() else ""
    left.set_title(f"two y scales: local {local_knob} (left), Redis {dist_knob} (right)", fontsize=10)

    for rows, styles, family in ((local, local_styles, "local"), (dist, dist_styles, "Redis")):
        floor = rows[rows["waiters"] == rows["waiters"].min()][THROUGHPUT].max()
        scaled = rows.assign(**{THROUGHPUT: rows[THROUGHPUT] / floor})
        for column in (f"{THROUGHPUT}_min", f"{THROUGHPUT}_max"):
            if column in scaled:
                scaled[column] = scaled[column] / floor
        _lines(right, scaled, THROUGHPUT, styles, label=False)
    right.axhline(1.0, color="0.35", linestyle=":", linewidth=1, zorder=1)
    _waiters_axis(right, waiters, cores, label_cores=False)
    right.set_ylabel("throughput / family's best at 1 waiter")
    _log_y_axis(right)
    right.set_title("normalised to each family's uncontended best", fontsize=10)
    handles, labels = [], []
    for ax in (left, twin):
        h, lab = ax.get_legend_handles_labels()
        handles += h
        labels += [f"{'local' if ax is left else 'Redis'}: {name}" for name in lab]
    right.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle(f"local vs distributed locks on one waiter axis\n{machine_title(context or {})}", fontsize=11)
    return fig


def write_local_vs_distributed(frames, out_dir) -> list:
    """``out_dir/redis_locks_vs_locks.png`` from ``{suite: (df, context)}``
    (as :func:`load_results_dir` returns) when both the ``locks`` and the
    ``redis_locks`` suites are there; ``[]`` otherwise.  The title names the
    distributed run's machine."""
    if LOCAL_SUITE not in frames or DISTRIBUTED_SUITE not in frames:
        return []
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    fig = plot_local_vs_distributed(frames[LOCAL_SUITE][0], frames[DISTRIBUTED_SUITE][0],
                                    frames[DISTRIBUTED_SUITE][1])
    path = out_dir / OVERLAY_PNG
    fig.savefig(path)
    plt.close(fig)
    return [path]


def split_table(df) -> str:
    """The split points of a suite as text: one line per implementation and
    P x T, with acquisitions/s, p50/p95 (ms), round trips and Redis commands
    per acquisition; peers marked with ``*``.  ``""`` without split points."""
    _, rows = split_rows(df)
    if rows.empty:
        return ""
    width = max(len("impl"), *(len(i) + 2 for i in rows["impl"]))
    head = f"{'impl':<{width}}{'P x T':>8}{'acq/s':>9}{'p50 ms':>9}{'p95 ms':>9}{'rt/acq':>8}{'cmds/acq':>9}"
    lines = [head]
    for _, r in rows.iterrows():
        label = r["impl"] + (" *" if r["peer"] else "")
        split = f"{int(r[SPLIT_KNOB])}x{int(r['waiters']) // int(r[SPLIT_KNOB])}"
        cell = lambda c, f: format(r[c], f) if c in r and not pd.isna(r[c]) else "-"  # noqa: E731
        lines.append(f"{label:<{width}}{split:>8}{cell(THROUGHPUT, '.0f'):>9}{cell('p50_ms', '.2f'):>9}"
                     f"{cell('p95_ms', '.1f'):>9}{cell('round_trips_per_acquire', '.2f'):>8}"
                     f"{cell('redis_cmds_per_acquire', '.2f'):>9}")
    return "\n".join(lines)


# ------------------------------- grouped bars: ours beside a reported figure

def plot_grouped_bars(categories, series, ax=None, colours=None, hatches=None, log_y=False,
                      ylabel=None, title=None, value_format=None, legend=True):
    """Bars of several series side by side, one group per category.

    For a scenario's table rows, where there is no knob to draw a line
    against: our measurement beside the figure a case study reported, "before"
    beside "after", one variant beside another.  ``series`` maps a label to
    one value per category, in the order of ``categories``; a value that is
    ``None`` or NaN is *missing* (the case study did not report it): no bar is
    drawn there, so a gap never reads as a zero.  ``colours`` and ``hatches``
    map a series label to a colour / hatch (defaults: the tab10 colours, no
    hatch).  ``log_y`` draws y on a log axis of plain numbers (symmetric-log,
    linear below 1, when a value is 0, as in :func:`plot_versus`) and says so
    in the axis label: ``ylabel + " (log scale)"``.  ``value_format``, a format
    string (``"{:.3g}"``) or a function of the value returning the text, writes
    each value above its bar.

    Raises ``ValueError`` when a series does not have one value per category
    (a silently shifted bar would put a figure under the wrong label).
    Returns the Axes.
    """
    categories = list(categories)
    for label, values in series.items():
        if len(values) != len(categories):
            raise ValueError(f"plot_grouped_bars: series {label!r} has {len(values)} values "
                             f"for {len(categories)} categories")
    ax = ax or plt.figure(figsize=(1.2 * max(len(categories), 3) + 2, 3.8)).gca()
    width = 0.8 / max(len(series), 1)
    drawn = []
    for k, (label, values) in enumerate(series.items()):
        present = [(i, float(v)) for i, v in enumerate(values) if v is not None and not pd.isna(v)]
        if not present:
            continue
        xs = [i - 0.4 + width * (k + 0.5) for i, _ in present]
        heights = [v for _, v in present]
        bars = ax.bar(xs, heights, width=width * 0.92, label=label if legend else None,
                      color=(colours or {}).get(label, OUR_COLOURS[k % len(OUR_COLOURS)]),
                      hatch=(hatches or {}).get(label), edgecolor="white" if not hatches else "0.25",
                      linewidth=0.6, zorder=3)
        if value_format:
            text = value_format if callable(value_format) else value_format.format
            ax.bar_label(bars, labels=[text(v) for v in heights], fontsize=7, padding=2)
        drawn += heights
    long_names = max((len(str(c)) for c in categories), default=0) > 12  # slanted, so they do not overlap
    ax.set_xticks(range(len(categories)), [str(c) for c in categories], rotation=30 if long_names else 0,
                  ha="right" if long_names else "center", fontsize=8)
    ax.set_xlim(-0.6, len(categories) - 0.4)
    ax.set_ylabel(ylabel or "")
    _value_axis(ax, drawn, log_y)  # labels a log axis "(log scale)"
    if title:
        ax.set_title(title)
    if legend and drawn:
        ax.legend(loc="best", fontsize=8)
    return ax


# ------------------------------------------------------------ command line

def _results_files(results_dir: Path) -> list:
    if not results_dir.is_dir():
        raise BenchmarkFormatError(f"{results_dir}: no such directory")
    files = sorted(results_dir.glob("*.json"))
    if not files:
        raise BenchmarkFormatError(
            f"{results_dir}: no *.json results (run ./lab bench <suite> first)")
    return files


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="locklab_plots.py",
        description="Plot and tabulate locklab benchmark results (Google Benchmark JSON).")
    commands = parser.add_subparsers(dest="command", required=True)
    plot = commands.add_parser(
        "plot", help="write one PNG per suite (and knob combination) of RESULTS_DIR/*.json")
    plot.add_argument("results_dir", type=Path, metavar="RESULTS_DIR")
    plot.add_argument("out_dir", type=Path, nargs="?", metavar="OUT_DIR",
                      help="where to write the PNGs (default: RESULTS_DIR/plots)")
    summary = commands.add_parser("summary", help="print throughput tables of result files")
    summary.add_argument("json", type=Path, nargs="+", metavar="JSON")
    args = parser.parse_args(argv)
    try:
        if args.command == "plot":
            # load_results_dir reads (and so validates) every file before
            # plot_results_dir writes anything.
            for png in plot_results_dir(args.results_dir, args.out_dir or args.results_dir / "plots"):
                print(png)
        else:
            print("\n\n".join(summary_table(path) for path in args.json))
    except BenchmarkFormatError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
