#!/usr/bin/python3
"""Peer driver: redis-py's ``Lock`` (Debian's python3-redis) on the
``redis_locks`` suite's workload, writing the suite's JSON schema.

What it measures
----------------
The same loop as ``benches/redis_locks_bench.cpp``: every waiter does
``lock.acquire()`` (timed), holds 1 ms (a sleep), ``lock.release()``, thinks
1 ms (a sleep), until the point's deadline; a waiter still inside acquire at
the deadline finishes it (the drain).  Two implementations, the library's
only knob that matters under contention being the poll interval:

- ``python-redis.Lock(sleep=100ms)``: the default (``sleep=0.1``);
- ``python-redis.Lock(sleep=1ms)``.

redis-py's Lock is the stock test's Lettuce-style spin lock
(docs/case-studies.md#stock-test-under-a-polling-lock): ``SET NX PX`` and, on
failure, ``time.sleep(sleep)``; release is a compare-and-delete Lua script
(EVALSHA).  Lease (``timeout``) 10 s, ``thread_local=True`` (one Lock object
shared by the threads of a process, a token per thread, as the library
intends).

Points, named as the C++ suite names them (the ``python-`` prefix makes
``notebooks/locklab_plots.py`` draw them as peers)::

    redis_locks/<Impl>/waiters:<N>/hold_us:1000                 N threads, 1 process
    redis_locks/<Impl>/waiters:<P*T>/hold_us:1000/processes:<P> P processes x T threads

A split point re-executes this script P times (``--child``); each child
connects, warms up (one acquire/release, so SCRIPT LOAD falls outside the
window), parks its threads and prints ``ready``; the parent then writes
``go <CLOCK_MONOTONIC ns>`` to all of them (the same clock as the C++
suite's steady_clock), and each prints its per-waiter counts, latencies,
CPU time and round trips.  Children are killed when they are not ready
within 20 s or not done within the duration + 30 s (the point is then
reported failed, ``error_occurred``, like Google Benchmark's SkipWithError).

Counters (as in the C++ suite): ``items_per_second`` (acquisitions/s),
``ns_per_op``, ``cpu_per_wall`` (client CPU: this process or the children's
sum), ``fairness`` (min/max acquisitions per waiter), ``avg_ms``, ``p50_ms``,
``p95_ms``, ``p99_ms`` (acquire latency), ``round_trips_per_acquire``
(replies read by redis-py's connections), ``redis_cmds_per_acquire`` and
``server_cpu_us_per_acquire`` (INFO commandstats / cpu deltas),
``subscribes_per_acquire`` (always 0: no pub/sub).

The server: ``$LOCKLAB_REDIS_URL`` if set, else a private redis-server
started like ``distributed/embedded_server.hpp`` starts one (127.0.0.1, a
free port, no persistence, a temporary directory, killed at exit).

Usage::

    /usr/bin/python3 benches/peers/redis_py_lock.py --mode=quick --out=results
        writes results/redis_locks_python.json
    options: --mode=quick|full  --duration_ms=N  --waiters=1,2,8  --split=1x16,4x4
             --repetitions=N  --impl=SUBSTRING

Quick: waiters 1, 2, 4, 16, 64 and splits 1x16, 4x4, 16x1, 200 ms a point,
1 repetition (~10 s).  Full: waiters 1..128, splits 1x50, 5x10, 50x1, 1 s a
point, 5 repetitions in random order (~3 minutes).

Without the ``redis`` module it prints how to install it (``apt-get install
python3-redis``) and exits with status 3 (``EXIT_MISSING_MODULE``), writing
nothing.  Bad arguments: status 2 with the reason.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import random
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

SUITE = "redis_locks"
HOLD_S = 0.001
THINK_S = 0.001
HOLD_US = 1000
LEASE_S = 10
EXIT_MISSING_MODULE = 3
OUT_NAME = "redis_locks_python.json"
IMPLS = {  # name -> redis-py Lock sleep (s)
    "python-redis.Lock(sleep=100ms)": 0.1,
    "python-redis.Lock(sleep=1ms)": 0.001,
}
READY_TIMEOUT_S = 20
DONE_GRACE_S = 30

try:
    import redis  # Debian: python3-redis
except ImportError:  # reported by main(), so --help still works
    redis = None


class PeerError(RuntimeError):
    """A point that could not be measured (reported as error_occurred)."""


# ------------------------------------------------------------------ server

class PrivateServer:
    """A redis-server on 127.0.0.1 like EmbeddedServer: free port, no
    persistence, a temporary directory; stop() kills it and removes it."""

    def __init__(self):
        exe = os.environ.get("LOCKLAB_REDIS_SERVER") or shutil.which("redis-server") or "/usr/bin/redis-server"
        if not os.access(exe, os.X_OK):
            raise PeerError("redis-server not found (install Debian's redis-server, or set LOCKLAB_REDIS_URL)")
        self.dir = tempfile.mkdtemp(prefix="locklab-peer-redis-")
        self.proc = None
        why = ""
        for _ in range(5):  # the free-port race: retry on another port
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                self.port = s.getsockname()[1]
            self.proc = subprocess.Popen(
                [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", self.dir, "--logfile", os.path.join(self.dir, "redis.log"), "--daemonize", "no"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                preexec_fn=_die_with_parent)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as c:
                        c.sendall(b"PING\r\n")
                        if c.recv(16).startswith(b"+PONG"):
                            return
                except OSError:
                    time.sleep(0.01)
            why = self.log_tail()
            self.proc.kill()
            self.proc.wait()
        self.stop()
        raise PeerError(f"redis-server did not start: {why}")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def log_tail(self) -> str:
        try:
            return Path(self.dir, "redis.log").read_text(errors="replace")[-500:]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def _die_with_parent() -> None:
    """In a child before exec: SIGKILL it when this process dies."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except OSError:
        pass


# ------------------------------------------------------------------ client

def counting_client(url: str, waiters: int):
    """A redis.Redis whose connections count the replies they read: one per
    request/reply exchange, i.e. round trips (Lock sends no pipelines)."""
    class Counting(redis.connection.Connection):
        replies = 0
        guard = threading.Lock()

        def read_response(self, *args, **kwargs):
            response = super().read_response(*args, **kwargs)
            with Counting.guard:
                Counting.replies += 1
            return response

    pool = redis.ConnectionPool.from_url(url, connection_class=Counting, max_connections=max(waiters, 1) + 8,
                                         socket_timeout=10)
    return redis.Redis(connection_pool=pool), Counting


def server_counters(probe) -> tuple:
    """(commands executed, server CPU seconds); the two INFO calls excluded."""
    stats = probe.info("commandstats")
    calls = sum(v["calls"] for k, v in stats.items() if k.startswith("cmdstat_"))
    cpu = probe.info("cpu")
    return calls - 2, cpu["used_cpu_user"] + cpu["used_cpu_sys"]


def make_lock(client, impl: str, key: str):
    return client.lock(key, timeout=LEASE_S, sleep=IMPLS[impl], thread_local=True)


# ----------------------------------------------------------- one process

class Waiters:
    """T threads looping acquire / hold / release / think on one Lock."""

    def __init__(self, lock, threads: int):
        self.lock = lock
        self.go = threading.Event()
        self.stop = False
        self.ops = [0] * threads
        self.latency_ms = [[] for _ in range(threads)]
        self.left = [0] * threads
        self.errors = []
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(threads)]
        for t in self.threads:
            t.start()

    def _run(self, i: int) -> None:
        self.go.wait()
        n, waits, lock = 0, self.latency_ms[i], self.lock
        try:
            while not self.stop:
                t0 = time.perf_counter()
                lock.acquire()
                waits.append((time.perf_counter() - t0) * 1e3)
                time.sleep(HOLD_S)
                lock.release()
                time.sleep(THINK_S)
                n += 1
        except Exception as exc:  # noqa: BLE001  (reported by run(), never lost)
            self.errors.append(f"{type(exc).__name__}: {exc}")
        self.left[i] = time.monotonic_ns()
        self.ops[i] = n

    def run(self, start_ns: int, duration_s: float) -> None:
        """Start at CLOCK_MONOTONIC start_ns, stop after duration_s, join."""
        _sleep_until_ns(start_ns)
        self.go.set()
        _sleep_until_ns(start_ns + int(duration_s * 1e9))
        self.stop = True
        for t in self.threads:
            t.join()
        if self.errors:
            raise PeerError(f"{len(self.errors)} waiter(s) failed, first: {self.errors[0]}")


def _sleep_until_ns(t_ns: int) -> None:
    while True:
        left = (t_ns - time.monotonic_ns()) / 1e9
        if left <= 0:
            return
        time.sleep(left)


def warm_up(lock) -> None:
    deadline = time.monotonic() + 10
    while not lock.acquire(blocking=False):
        if time.monotonic() > deadline:
            raise PeerError("warm-up: the lock was never free for 10 s")
        time.sleep(0.001)
    lock.release()


def percentiles(ms: list) -> dict:
    if not ms:
        return {}
    ms = sorted(ms)
    pick = lambda p: ms[min(len(ms) - 1, int(p * len(ms)))]  # noqa: E731  (as the C++ suite picks)
    return {"avg_ms": sum(ms) / len(ms), "p50_ms": pick(0.50), "p95_ms": pick(0.95), "p99_ms": pick(0.99)}


def result_counters(ops, wall_s, cpu_s, round_trips, cmds, server_cpu_s, latency_ms, waiters) -> dict:
    total = sum(ops)
    per = (lambda x: x / total) if total else (lambda x: 0.0)
    c = {
        "items_per_second": total / wall_s if wall_s > 0 else 0.0,
        "ns_per_op": wall_s * 1e9 / total if total else 0.0,
        "cpu_per_wall": cpu_s / wall_s if wall_s > 0 else 0.0,
        "fairness": (min(ops) / max(ops) if max(ops) > 0 else 0.0) if len(ops) > 1 else 1.0,
        "waiters": float(waiters), "cs_ns": 0.0, "think_ns": 0.0,
        "round_trips_per_acquire": per(round_trips),
        "redis_cmds_per_acquire": per(cmds),
        "server_cpu_us_per_acquire": per(server_cpu_s * 1e6),
        "subscribes_per_acquire": 0.0,
    }
    c.update(percentiles(latency_ms))
    return c


def measure_threads(url, probe, impl, waiters, duration_s, key) -> tuple:
    """N threads in this process; returns (counters, wall seconds)."""
    client, counting = counting_client(url, waiters)
    lock = make_lock(client, impl, key)
    warm_up(lock)
    w = Waiters(lock, waiters)
    calls0, cpu0 = server_counters(probe)
    rt0, proc0 = counting.replies, time.process_time()
    start = time.monotonic_ns() + 5_000_000
    w.run(start, duration_s)
    proc1, rt1 = time.process_time(), counting.replies
    calls1, cpu1 = server_counters(probe)
    client.connection_pool.disconnect()
    wall = (max([start, *w.left]) - start) / 1e9
    lat = [v for per in w.latency_ms for v in per]
    return result_counters(w.ops, wall, proc1 - proc0, rt1 - rt0, calls1 - calls0, cpu1 - cpu0, lat, waiters), wall


def child_main(args) -> int:
    """One process of a split point (see the module docstring)."""
    signal.alarm(int(args.duration_ms / 1000) + 60)  # never outlive a hung point
    url = os.environ.get("LOCKLAB_REDIS_URL")
    if not url:
        print("--child needs LOCKLAB_REDIS_URL (the parent sets it)", file=sys.stderr)
        return 2
    client, counting = counting_client(url, args.threads)
    lock = make_lock(client, args.child, args.key)
    warm_up(lock)
    w = Waiters(lock, args.threads)
    print("ready", flush=True)
    words = sys.stdin.readline().split()
    if len(words) != 2 or words[0] != "go":
        w.stop = True
        w.go.set()
        return 4
    start = int(words[1]) or time.monotonic_ns()
    rt0, proc0 = counting.replies, time.process_time()
    w.run(start, args.duration_ms / 1000)
    out = {"last_ns": max([start, *w.left]), "cpu_seconds": time.process_time() - proc0,
           "round_trips": counting.replies - rt0, "ops": w.ops,
           "latency_ms": [round(v, 6) for per in w.latency_ms for v in per]}
    print(json.dumps(out), flush=True)
    return 0


def measure_split(url, probe, impl, processes, threads, duration_s, key) -> tuple:
    """P children x T threads; returns (counters, wall seconds)."""
    env = dict(os.environ, LOCKLAB_REDIS_URL=url)
    cmd = [sys.executable, os.path.abspath(__file__), f"--child={impl}", f"--key={key}",
           f"--threads={threads}", f"--duration_ms={int(duration_s * 1000)}"]
    kids = []
    try:
        for _ in range(processes):
            kids.append(subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                         preexec_fn=_die_with_parent))
        outs = _read_all(kids, time.monotonic() + READY_TIMEOUT_S, until_line=True)
        if outs is None or any(o.strip() != b"ready" for o in outs):
            raise PeerError(f"split {processes}x{threads}: not every child was ready within {READY_TIMEOUT_S} s")
        calls0, cpu0 = server_counters(probe)
        start = time.monotonic_ns() + 5_000_000
        for k in kids:
            try:
                k.stdin.write(f"go {start}\n".encode())
                k.stdin.close()
            except BrokenPipeError:
                pass
        outs = _read_all(kids, time.monotonic() + duration_s + DONE_GRACE_S, until_line=False)
        if outs is None:
            raise PeerError(f"split {processes}x{threads}: children not done within the duration + {DONE_GRACE_S} s")
        for k in kids:
            if k.wait(timeout=5) != 0:
                raise PeerError(f"split {processes}x{threads}: a child exited with status {k.returncode}")
        calls1, cpu1 = server_counters(probe)
    finally:
        for k in kids:
            if k.poll() is None:
                k.kill()
                k.wait()
    results = [json.loads(o) for o in outs]
    ops = [n for r in results for n in r["ops"]]
    wall = (max(r["last_ns"] for r in results) - start) / 1e9
    lat = [v for r in results for v in r["latency_ms"]]
    counters = result_counters(ops, wall, sum(r["cpu_seconds"] for r in results),
                               sum(r["round_trips"] for r in results), calls1 - calls0, cpu1 - cpu0, lat,
                               processes * threads)
    return counters, wall


def _read_all(kids, deadline, until_line):
    """Each child's stdout until a first line (until_line) or EOF; None if
    the deadline passes first."""
    bufs = {k.stdout.fileno(): b"" for k in kids}
    open_fds = set(bufs)
    while open_fds:
        if until_line:
            open_fds = {fd for fd in open_fds if b"\n" not in bufs[fd]}
            if not open_fds:
                break
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select(list(open_fds), [], [], min(left, 1.0))
        for fd in ready:
            chunk = os.read(fd, 65536)
            if chunk:
                bufs[fd] += chunk
            else:
                open_fds.discard(fd)
    return [bufs[k.stdout.fileno()] for k in kids]


# ------------------------------------------------------------------ output

def point_name(impl: str, waiters: int, processes: int | None) -> str:
    name = f"{SUITE}/{impl}/waiters:{waiters}/hold_us:{HOLD_US}"
    return name + (f"/processes:{processes}" if processes else "")


def _cpuinfo(key: str, fallback: str) -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(key) and ":" in line:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return fallback


def context(args) -> dict:
    load = (Path("/proc/loadavg").read_text().split() + ["0"] * 3)[:3] if Path("/proc/loadavg").exists() else ["0"] * 3
    return {
        "date": datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds"),
        "host_name": socket.gethostname(),
        "executable": f"{sys.executable} {Path(__file__).name}",
        "num_cpus": os.cpu_count() or 1,
        "mhz_per_cpu": round(float(_cpuinfo("cpu MHz", "0"))),
        "load_avg": [float(x) for x in load],
        "locklab_suite": SUITE,
        "locklab_mode": args.mode,
        "duration_ms": str(args.duration_ms),
        "cpu_model": _cpuinfo("model name", "unknown"),
        "cores": str(os.cpu_count() or 1),
        "kernel": f"{platform.system()} {platform.release()}",
        "compiler": f"CPython {platform.python_version()}, redis-py {redis.__version__}",
        "locklab_build": "python",
        "git_revision": os.environ.get("LOCKLAB_GIT_REVISION") or "unknown",
    }


def entry(name, family, reps, rep, counters=None, wall=0.0, error=None) -> dict:
    e = {"name": name, "family_index": family, "per_family_instance_index": 0, "run_name": name,
         "run_type": "iteration", "repetitions": reps, "repetition_index": rep, "threads": 1,
         "iterations": 0 if error else 1, "real_time": wall * 1e3,
         "cpu_time": 0.0 if error else counters["cpu_per_wall"] * wall * 1e3, "time_unit": "ms"}
    if error:
        e.update(error_occurred=True, error_message=error)
    else:
        e.update(dict(sorted(counters.items())))
    return e


# ---------------------------------------------------------------- command line

def _int_list(text: str, flag: str) -> list:
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{flag}: expected positive integers separated by commas, got {text!r}")
    return values


def _splits(text: str) -> list:
    out = []
    for item in text.split(","):
        p, sep, t = item.partition("x")
        if not (sep and p.isdigit() and t.isdigit() and int(p) > 0 and int(t) > 0):
            raise argparse.ArgumentTypeError(f"--split: expected PxT items like 4x4, got {item!r}")
        out.append((int(p), int(t)))
    return out


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="redis_py_lock.py", description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=("quick", "full"), default="quick")
    ap.add_argument("--out", type=Path, default=None, help=f"directory for {OUT_NAME} (default ./results)")
    ap.add_argument("--duration_ms", type=int, default=None)
    ap.add_argument("--waiters", type=lambda s: _int_list(s, "--waiters"), default=None)
    ap.add_argument("--split", type=_splits, default=None, help="PxT,... (processes x threads)")
    ap.add_argument("--repetitions", type=int, default=None)
    ap.add_argument("--impl", default="", help="only implementations whose name contains this")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--key", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    full = args.mode == "full"
    args.duration_ms = args.duration_ms or (1000 if full else 200)
    args.waiters = args.waiters or ([1, 2, 4, 8, 16, 32, 64, 128] if full else [1, 2, 4, 16, 64])
    args.split = args.split or ([(1, 50), (5, 10), (50, 1)] if full else [(1, 16), (4, 4), (16, 1)])
    args.repetitions = args.repetitions or (5 if full else 1)
    if args.duration_ms < 1 or args.repetitions < 1:
        ap.error("--duration_ms and --repetitions must be positive")
    if args.child is not None and (args.child not in IMPLS or not args.key or not args.threads):
        ap.error("--child needs a known implementation, --key and --threads")
    return args


def _exact_sleeps() -> None:
    """Timer slack 1 ns, as the C++ suite sets it: a 1 ms hold sleeps ~1.07 ms,
    not ~1.12 ms (the default 50 us slack). Threads started later inherit it."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(29, 1, 0, 0, 0)  # PR_SET_TIMERSLACK
    except OSError:
        pass


def main(argv=None) -> int:
    args = parse_args(argv)
    _exact_sleeps()
    if redis is None:
        print("redis_py_lock.py: skipped: the Python module 'redis' is missing; install Debian's package "
              "python3-redis (apt-get install python3-redis, or ./lab setup)", file=sys.stderr)
        return EXIT_MISSING_MODULE
    if args.child is not None:
        return child_main(args)
    impls = [i for i in IMPLS if args.impl in i]
    if not impls:
        print(f"redis_py_lock.py: --impl {args.impl!r} matches none of {list(IMPLS)}", file=sys.stderr)
        return 2
    out_dir = args.out or Path.cwd() / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    server = None
    try:
        url = os.environ.get("LOCKLAB_REDIS_URL")
        if not url:
            server = PrivateServer()
            url = server.url
        probe = redis.Redis.from_url(url, socket_timeout=10)
        # Every point: (family index, name, how to measure), ours in the
        # C++ suite's order: the curve, then the splits.
        points = []
        for impl in impls:
            for n in args.waiters:
                points.append((len(points), point_name(impl, n, None), impl, n, None))
            for p, t in args.split:
                points.append((len(points), point_name(impl, p * t, p), impl, p * t, (p, t)))
        runs = [(pt, rep) for pt in points for rep in range(args.repetitions)]
        if args.repetitions > 1:
            random.shuffle(runs)  # interleaved, like --benchmark_enable_random_interleaving
        entries = []
        tag = f"{os.getpid()}:{int(time.time())}"
        for i, ((family, name, impl, waiters, split), rep) in enumerate(runs):
            key = f"locklab:peer:{impl}:{tag}:{i}"
            try:
                if split:
                    counters, wall = measure_split(url, probe, impl, split[0], split[1], args.duration_ms / 1000, key)
                else:
                    counters, wall = measure_threads(url, probe, impl, waiters, args.duration_ms / 1000, key)
                entries.append(entry(name, family, args.repetitions, rep, counters, wall))
                print(f"{name:<72} {counters['items_per_second']:>9.1f} acq/s  p50 {counters.get('p50_ms', 0):8.3f} ms"
                      f"  p95 {counters.get('p95_ms', 0):8.3f} ms  rt/acq {counters['round_trips_per_acquire']:.2f}",
                      flush=True)
            except (PeerError, redis.RedisError, OSError, ValueError) as exc:
                entries.append(entry(name, family, args.repetitions, rep, error=str(exc)))
                print(f"{name:<72} ERROR {exc}", flush=True)
        entries.sort(key=lambda e: (e["family_index"], e["repetition_index"]))
        path = out_dir / OUT_NAME
        path.write_text(json.dumps({"context": context(args), "benchmarks": entries}, indent=2) + "\n",
                        encoding="utf-8")
        print(f"wrote {path}")
        return 1 if any(e.get("error_occurred") for e in entries) else 0
    except PeerError as exc:
        print(f"redis_py_lock.py: {exc}", file=sys.stderr)
        return 2
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    sys.exit(main())
