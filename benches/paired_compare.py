#!/usr/bin/python3
"""Paired comparison of two implementations of one suite: is A below B
anywhere?  ``./lab compare A B`` runs this.

Why a separate tool
-------------------
A suite run (``./lab bench``) measures every implementation once per point,
minutes apart. On this lab's 2-core VMs identical runs spread by about
+-10% and the machine drifts between states (clock speed, the distance
between the two vCPUs), so a 5% difference between two curves of one run
is not evidence of anything. The question "does AdaptiveMutex ever fall
below std::mutex?" needs the two measured *side by side*, many times.

How it measures
---------------
For every repetition, every point (waiter count x workload) that both A and
B have, in a new random order each repetition, one process of the suite's
binary runs A and B at that point only, ``--inner`` times each, in random
order (Google Benchmark's random interleaving). A and B in one process are
about a second apart, and each run of a point with sections under 500 ns
re-measures the busy-work loop just before it starts, so their ratio
(median of A's throughput / median of B's, ``items_per_second``) cancels
most of the drift. Each point collects ``--reps`` such ratios.

What it reports
---------------
Per point: the median ratio, a 90% bootstrap interval for it (percentile
method, 2000 resamples, a fixed seed so a re-run of the analysis gives the
same interval), the smallest and largest ratio, and a verdict:

    above   the whole interval is above 1 (A faster than B)
    below   the whole interval is below 1 (A slower than B)
    level   the interval contains 1: no difference this run can show
    too few fewer than 5 pairs: no verdict (``--reps`` 9 or more is sensible)

With many points, a few "below" or "above" verdicts are expected by chance
alone (one point in twenty falls outside a 90% interval on one side): a
difference is real when a second run shows it at the same point again.
No figure here is a wall-clock assertion; the tool measures and reports.

Output: a table on stdout and, with ``--out``, a JSON file holding every
pair (the raw ratios, both throughputs, the process's calibration), so the
analysis can be re-done. ``--require-not-below`` exits 1 when any point's
verdict is "below" (for scripted goal checks).
"""
from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.90
# Below this many pairs a bootstrap interval is too coarse to mean anything
# (with 3 values it is nearly their range): the verdict is "too few".
MIN_PAIRS_FOR_VERDICT = 5


def ere_escape(text: str) -> str:
    """Escapes a name for Google Benchmark's --benchmark_filter (a POSIX
    extended regular expression): implementation names carry '(', ')',
    '.' and '+' (``AdaptiveMutex(park-only)``, ``absl.Mutex``)."""
    return re.sub(r"([.\[\]()*+?{}|^$\\])", r"\\\1", text)


def parse_points(listing: str, suite: str, impl: str) -> set[tuple[int, str]]:
    """(waiters, workload) of every point of `impl` in a --benchmark_list_tests
    listing. The workload is the name's rest after ``waiters:N``, without
    Google Benchmark's own suffixes (``/iterations:1/...``); '' if none."""
    prefix = f"{suite}/{impl}/waiters:"
    points = set()
    for line in listing.splitlines():
        name = re.sub(r"/(iterations|repeats|process_time|manual_time|real_time|threads)(:\d+)?.*$", "",
                      line.strip())
        if not name.startswith(prefix):
            continue
        m = re.fullmatch(r"(\d+)(?:/(.*))?", name[len(prefix):])
        if m:
            points.add((int(m.group(1)), m.group(2) or ""))
    return points


def output_name(suite: str, a: str, b: str) -> str:
    """A file name for a comparison: names like ``std::mutex`` become ``std__mutex``."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", f"{suite}_{a}_vs_{b}") + ".json"


def point_key(waiters: int, workload: str) -> str:
    return f"waiters:{waiters}" + (f"/{workload}" if workload else "")


def point_filter(suite: str, a: str, b: str, waiters: int, workload: str) -> str:
    tail = f"/{ere_escape(workload)}" if workload else ""
    return f"^{ere_escape(suite)}/({ere_escape(a)}|{ere_escape(b)})/waiters:{waiters}{tail}(/iterations|$)"


def pair_from_json(doc: dict, suite: str, a: str, b: str) -> dict | None:
    """One pair from one process's JSON: the medians of A's and B's
    iteration runs and their ratio; None if either is missing."""
    rates: dict[str, list[float]] = {a: [], b: []}
    for bench in doc.get("benchmarks", []):
        if bench.get("run_type") != "iteration" or "items_per_second" not in bench:
            continue
        for impl in (a, b):
            if bench.get("run_name", bench.get("name", "")).startswith(f"{suite}/{impl}/waiters:"):
                rates[impl].append(float(bench["items_per_second"]))
    if not rates[a] or not rates[b] or statistics.median(rates[b]) <= 0:
        return None
    ra, rb = statistics.median(rates[a]), statistics.median(rates[b])
    ctx = doc.get("context", {})
    return {"a_per_s": ra, "b_per_s": rb, "ratio": ra / rb,
            "busy_work_iterations_per_ns": ctx.get("busy_work_iterations_per_ns")}


def bootstrap_interval(values: list[float], seed: int = 1) -> tuple[float, float]:
    """Percentile bootstrap interval (CONFIDENCE, two-sided) of the median."""
    rng = random.Random(seed)
    n = len(values)
    meds = sorted(statistics.median(rng.choices(values, k=n)) for _ in range(BOOTSTRAP_RESAMPLES))
    tail = (1 - CONFIDENCE) / 2
    return meds[int(tail * BOOTSTRAP_RESAMPLES)], meds[int((1 - tail) * BOOTSTRAP_RESAMPLES) - 1]


@dataclass
class PointSummary:
    key: str
    ratios: list[float] = field(default_factory=list)

    def summary(self) -> dict:
        lo, hi = bootstrap_interval(self.ratios)
        if len(self.ratios) < MIN_PAIRS_FOR_VERDICT:
            verdict = "too few"
        else:
            verdict = "above" if lo > 1 else "below" if hi < 1 else "level"
        return {"point": self.key, "n": len(self.ratios), "median_ratio": statistics.median(self.ratios),
                "ci_low": lo, "ci_high": hi, "min": min(self.ratios), "max": max(self.ratios),
                "verdict": verdict}


def sort_key(key: str) -> tuple[str, int]:
    m = re.match(r"waiters:(\d+)(?:/(.*))?", key)
    return (m.group(2) or "", int(m.group(1))) if m else (key, 0)


def summarise(pairs: list[dict]) -> list[dict]:
    points: dict[str, PointSummary] = {}
    for p in pairs:
        points.setdefault(p["point"], PointSummary(p["point"])).ratios.append(p["ratio"])
    return [points[k].summary() for k in sorted(points, key=sort_key)]


def format_table(a: str, b: str, rows: list[dict]) -> str:
    out = [f"{a} / {b}: median of paired ratios, {int(CONFIDENCE * 100)}% bootstrap interval",
           f"{'point':<44} {'n':>3} {'ratio':>6} {'interval':>13} {'min':>5} {'max':>5}  verdict"]
    for r in rows:
        out.append(f"{r['point']:<44} {r['n']:>3} {r['median_ratio']:>6.3f} "
                   f"{r['ci_low']:>6.3f}-{r['ci_high']:<6.3f} {r['min']:>5.2f} {r['max']:>5.2f}  {r['verdict']}")
    counts = {v: sum(r["verdict"] == v for r in rows) for v in ("above", "level", "below", "too few")}
    out.append(f"{len(rows)} points: {counts['above']} above, {counts['level']} level, {counts['below']} below"
               + (f", {counts['too few']} with too few pairs" if counts["too few"] else ""))
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    bench = Path(args.bench)
    if not bench.is_file():
        print(f"paired_compare: no benchmark binary {bench} (build first: ./lab build)", file=sys.stderr)
        return 2
    listed = subprocess.run([str(bench), "--benchmark_list_tests", f"--waiters={args.waiters}", "--mode=full"],
                            capture_output=True, text=True)
    if listed.returncode != 0:
        print(f"paired_compare: {bench} --benchmark_list_tests failed (exit {listed.returncode}): "
              f"{listed.stderr.strip()[-300:]}", file=sys.stderr)
        return 2
    listing = listed.stdout
    pa, pb = parse_points(listing, args.suite, args.a), parse_points(listing, args.suite, args.b)
    for impl, pts in ((args.a, pa), (args.b, pb)):
        if not pts:
            print(f"paired_compare: no points of '{impl}' in suite '{args.suite}' "
                  f"(list them: {bench} --benchmark_list_tests)", file=sys.stderr)
            return 2
    points = sorted((p for p in pa & pb if re.search(args.workloads, p[1] or "")),
                    key=lambda p: (p[1], p[0]))
    if not points:
        print(f"paired_compare: '{args.a}' and '{args.b}' share no point matching --workloads='{args.workloads}'",
              file=sys.stderr)
        return 2
    est = len(points) * args.reps * (2 * args.inner * args.duration_ms / 1000 + 0.3)
    print(f"{len(points)} points x {args.reps} repetitions, about {est / 60:.0f} min", file=sys.stderr)
    order = random.Random(args.seed)
    pairs = []
    failure = None
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            for waiters, workload in order.sample(points, len(points)):
                out = Path(tmp) / "point.json"
                out.unlink(missing_ok=True)  # never read the previous point's file
                cmd = [str(bench), f"--waiters={waiters}", f"--duration_ms={args.duration_ms}", "--mode=full",
                       f"--benchmark_filter={point_filter(args.suite, args.a, args.b, waiters, workload)}",
                       f"--benchmark_repetitions={args.inner}", "--benchmark_enable_random_interleaving=true",
                       f"--benchmark_out={out}", "--benchmark_out_format=json"]
                proc = subprocess.run(cmd, capture_output=True, text=True)
                pair = pair_from_json(json.loads(out.read_text(encoding="utf-8")), args.suite, args.a, args.b) \
                    if proc.returncode == 0 and out.exists() else None
                if pair is None:
                    failure = (f"{point_key(waiters, workload)} repetition {rep + 1} gave no pair "
                               f"(exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
                    break
                pairs.append({"point": point_key(waiters, workload), "repetition": rep + 1, **pair})
            if failure:
                break
            print(f"  repetition {rep + 1}/{args.reps} done", file=sys.stderr)
    if failure:
        # Stop, but keep what was measured: the pairs so far are summarised and
        # written, marked incomplete.
        print(f"paired_compare: stopped: {failure}", file=sys.stderr)
    rows = summarise(pairs)
    if rows:
        print(format_table(args.a, args.b, rows))
    if args.out and pairs:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(
            {"suite": args.suite, "a": args.a, "b": args.b, "reps": args.reps, "inner": args.inner,
             "duration_ms": args.duration_ms, "seed": args.seed, "revision": args.revision,
             "complete": failure is None, "error": failure, "points": rows, "pairs": pairs}, indent=1) + "\n",
            encoding="utf-8")
        print(f"pairs and summary: {args.out}", file=sys.stderr)
    if failure:
        return 1
    return 1 if args.require_not_below and any(r["verdict"] == "below" for r in rows) else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", help="implementation A, as named in the suite (e.g. AdaptiveMutex)")
    p.add_argument("b", help="implementation B, the reference (e.g. std::mutex)")
    p.add_argument("--suite", default="locks")
    p.add_argument("--bench", help="the suite's binary (default: build/release/benches/bench_SUITE)")
    p.add_argument("--waiters", default="1,2,4,8,16,32,64,128")
    p.add_argument("--workloads", default="", help="regex the workload part of a point must match")
    p.add_argument("--reps", type=int, default=9, help="pairs per point (processes)")
    p.add_argument("--inner", type=int, default=2, help="runs of A and of B inside one process")
    p.add_argument("--duration_ms", type=int, default=300)
    p.add_argument("--seed", type=int, default=1, help="seed of the point order")
    p.add_argument("--revision", default="", help="recorded in the JSON")
    p.add_argument("--out", help="JSON file for every pair and the summary")
    p.add_argument("--out-dir", help="or a folder: the file is named SUITE_A_vs_B.json in it")
    p.add_argument("--require-not-below", action="store_true", help="exit 1 if any point is 'below'")
    args = p.parse_args(argv)
    args.bench = args.bench or f"build/release/benches/bench_{args.suite}"
    if args.out_dir and not args.out:
        args.out = str(Path(args.out_dir) / output_name(args.suite, args.a, args.b))
    if args.reps < 2 or args.inner < 1 or args.duration_ms < 1:
        p.error("--reps must be >= 2, --inner >= 1, --duration_ms >= 1")
    try:
        re.compile(args.workloads)
    except re.error as e:
        p.error(f"--workloads is not a regular expression: {e}")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
