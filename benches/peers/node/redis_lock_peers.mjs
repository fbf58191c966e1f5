#!/usr/bin/env node
// Peer driver: npm's `redlock` and `redis-semaphore` (both on `ioredis`) on
// the `redis_locks` suite's workload, writing the suite's JSON schema into
// redis_locks_node.json. The node twin of benches/peers/redis_py_lock.py.
//
// What it measures
// ----------------
// The same loop as benches/redis_locks_bench.cpp: every waiter does acquire
// (timed), holds 1 ms, releases, thinks 1 ms, until the point's deadline; a
// waiter still inside acquire at the deadline finishes it (the drain).
//
// Node runs JavaScript on one thread, so a "waiter" here is an independent
// async loop, not a thread: N loops share this process's one event loop and
// one CPU, and each has its own Redis connection (its own ioredis client),
// which is how N workers of a node service would each hold a connection.
// What the single thread costs shows in two counters: cpu_per_wall (this
// process's CPU over the window's wall time; near 1.0 means the event loop
// itself is the bottleneck) and client_cpu_us_per_acquire.
//
// Hold and think are timers (setTimeout(1)): a busy wait would stop every
// other waiter's loop. libuv's timers have millisecond resolution and fire
// when the loop gets round to them, so a 1 ms hold lasts 1-2 ms; the C++
// suite and redis-py sleep ~1.07 ms.
//
// Implementations (each library's only knob that matters under contention is
// its retry interval; all three are set to poll every 1 ms with no jitter,
// i.e. like our SpinLock(fixed-1ms)); lease 10 s everywhere:
//   node-redlock                        redlock 5 with one client: acquire =
//       EVALSHA of its multi-key SET NX script, on failure setTimeout(retryDelay);
//       retryCount 60000 (>= 60 s of polls; the default 10 retries would fail
//       points under contention), retryDelay 1 ms, retryJitter 0 (defaults 200 ms +/- 100 ms);
//       release = EVALSHA compare-and-delete
//   node-redis-semaphore.Mutex          SET NX PX, on failure delay(retryInterval);
//       retryInterval 1 ms (default 10 ms), acquireTimeout 60 s (a waiter
//       gives up, failing the point, only after 60 s); release = EVALSHA compare-and-delete;
//       refreshInterval left at its default (0.8 x lease = 8 s: never fires here)
//   node-redis-semaphore.Semaphore(1)   the counting semaphore with limit 1: a
//       sorted set of holders, acquire = EVALSHA of its script (drop expired
//       entries, ZCARD, ZADD), same retry settings as the Mutex
//
// Points, named as the C++ suite names them (the `node-` prefix makes
// notebooks/locklab_plots.py draw them as peers):
//     redis_locks/<Impl>/waiters:<N>/hold_us:1000
// Only the one-process curve: no process split (redis_py_lock.py's
// processes:P points), since every node waiter already has its own connection.
//
// Counters (as in the C++ suite and redis_py_lock.py): items_per_second
// (acquisitions/s), ns_per_op, cpu_per_wall (this process), fairness (min/max
// acquisitions per waiter), avg_ms, p50_ms, p95_ms, p99_ms (acquire latency),
// round_trips_per_acquire (commands the waiters' clients sent; each gets one
// reply), redis_cmds_per_acquire and server_cpu_us_per_acquire (INFO
// commandstats / cpu deltas), subscribes_per_acquire (always 0), and
// client_cpu_us_per_acquire (this process's CPU per acquisition).
//
// The server: $LOCKLAB_REDIS_URL if set, else a private redis-server started
// like distributed/embedded_server.hpp starts one (127.0.0.1, a free port, no
// persistence, a temporary directory, killed at exit).
//
// Usage (from the repository root, after `npm ci --prefix benches/peers/node`):
//   node benches/peers/node/redis_lock_peers.mjs --mode=quick --out=results
//     writes results/redis_locks_node.json
//   options: --mode=quick|full --duration_ms=N --waiters=1,2,8 --repetitions=N --impl=SUBSTRING
// Quick: waiters 1, 2, 4, 16, 64, 200 ms a point, 1 repetition (~4 s).
// Full: waiters 1..128, 1 s a point, 5 repetitions in random order (~2 min).
// Exit status: 0 written; 1 written with a failed point (error_occurred);
// 2 bad arguments or no server; 3 skipped: the npm packages are not installed
// (node_modules missing: run `npm ci --prefix benches/peers/node`), nothing written.
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, createConnection } from "node:net";
import { cpus, hostname, loadavg, release, tmpdir, type } from "node:os";
import { basename, join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";

const SUITE = "redis_locks";
const HOLD_MS = 1;
const THINK_MS = 1;
const HOLD_US = 1000;
const LEASE_MS = 10_000;
const RETRY_MS = 1;
const ACQUIRE_TIMEOUT_MS = 60_000;  // a waiter gives up (the point fails) after this long
const RETRIES = ACQUIRE_TIMEOUT_MS / RETRY_MS;  // redlock counts attempts, not time: >= 60 s of 1 ms polls
const OUT_NAME = "redis_locks_node.json";
const EXIT_BAD_ARGS = 2;
const EXIT_MISSING_PACKAGES = 3;
const HERE = fileURLToPath(new URL(".", import.meta.url));
const SELF = basename(fileURLToPath(import.meta.url));

class PeerError extends Error {}

// ------------------------------------------------------------ command line

function intList(text, flag) {
  const values = text.split(",").map((x) => (/^\d+$/.test(x) ? Number(x) : NaN));
  if (!values.length || values.some((v) => !(v >= 1))) {
    throw new PeerError(`${flag}: expected positive integers separated by commas, got '${text}'`);
  }
  return values;
}

function positive(text, flag) {
  if (!/^\d+$/.test(text) || Number(text) < 1) throw new PeerError(`${flag}: expected a positive integer, got '${text}'`);
  return Number(text);
}

function parseArgs(argv) {
  const args = { mode: "quick", out: null, durationMs: null, waiters: null, repetitions: null, impl: "" };
  for (const arg of argv) {
    const [flag, ...rest] = arg.split("=");
    const value = rest.join("=");
    switch (flag) {
      case "--mode":
        if (value !== "quick" && value !== "full") throw new PeerError(`--mode: expected quick or full, got '${value}'`);
        args.mode = value;
        break;
      case "--out": args.out = value; break;
      case "--duration_ms": args.durationMs = positive(value, "--duration_ms"); break;
      case "--waiters": args.waiters = intList(value, "--waiters"); break;
      case "--repetitions": args.repetitions = positive(value, "--repetitions"); break;
      case "--impl": args.impl = value; break;
      default: throw new PeerError(`unknown argument '${arg}' (see the comment at the top of ${SELF})`);
    }
  }
  const full = args.mode === "full";
  args.durationMs ??= full ? 1000 : 200;
  args.waiters ??= full ? [1, 2, 4, 8, 16, 32, 64, 128] : [1, 2, 4, 16, 64];
  args.repetitions ??= full ? 5 : 1;
  return args;
}

// ------------------------------------------------------------------ server

function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => { const { port } = s.address(); s.close(() => ok(port)); });
  });
}

function pong(port) {
  return new Promise((ok) => {
    const c = createConnection({ host: "127.0.0.1", port }, () => c.write("PING\r\n"));
    c.setTimeout(200, () => { c.destroy(); ok(false); });
    c.once("data", (d) => { c.destroy(); ok(d.toString().startsWith("+PONG")); });
    c.once("error", () => ok(false));
  });
}

/** A redis-server on 127.0.0.1 like EmbeddedServer: free port, no persistence,
 *  a temporary directory; stop() kills it and removes the directory. */
async function startPrivateServer() {
  const exe = process.env.LOCKLAB_REDIS_SERVER || "redis-server";
  const dir = mkdtempSync(join(tmpdir(), "locklab-peer-redis-"));
  const log = join(dir, "redis.log");
  for (let attempt = 0; attempt < 5; attempt++) {  // the free-port race: retry on another port
    const port = await freePort();
    const proc = spawn(exe, ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", dir, "--logfile", log, "--daemonize", "no"], { stdio: "ignore" });
    let failed = null;
    proc.once("error", (e) => { failed = e; });
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline && failed === null && proc.exitCode === null) {
      if (await pong(port)) {
        const stop = () => { if (proc.exitCode === null) proc.kill("SIGKILL"); rmSync(dir, { recursive: true, force: true }); };
        process.once("exit", stop);  // never outlive this process
        return { url: `redis://127.0.0.1:${port}`, stop };
      }
      await sleep(10);
    }
    proc.kill("SIGKILL");
    if (failed) {
      rmSync(dir, { recursive: true, force: true });
      throw new PeerError(`redis-server not found or not runnable (${failed.message}); install Debian's redis-server, or set LOCKLAB_REDIS_URL`);
    }
  }
  let tail = "(no log)";
  try { tail = readFileSync(log, "utf8").slice(-500); } catch { /* none */ }
  rmSync(dir, { recursive: true, force: true });
  throw new PeerError(`redis-server did not start: ${tail}`);
}

// ------------------------------------------------------------------ client

/** An ioredis client on `url` whose sent commands are counted in counter.n
 *  (one reply each: round trips; none of these locks pipelines). */
function countingClient(Redis, url, counter) {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false,
                                  commandTimeout: 10_000 });
  const send = client.sendCommand.bind(client);
  client.sendCommand = (command, stream) => { counter.n++; return send(command, stream); };
  return client;
}

/** name -> (client, key) => { acquire(), release() }: one lock object per waiter. */
function implementations(libs) {
  const { Redlock, Mutex, Semaphore } = libs;
  const semaphoreOptions = { lockTimeout: LEASE_MS, acquireTimeout: ACQUIRE_TIMEOUT_MS, retryInterval: RETRY_MS };
  return {
    "node-redlock": (client, key) => {
      const redlock = new Redlock([client], { retryCount: RETRIES, retryDelay: RETRY_MS, retryJitter: 0 });
      // Every failed attempt is emitted as an "error" (ResourceLockedError): an
      // EventEmitter with no listener would throw it.
      redlock.on("error", () => {});
      let lock = null;
      return {
        acquire: async () => { lock = await redlock.acquire([key], LEASE_MS); },
        release: async () => { await lock.release(); lock = null; },
      };
    },
    "node-redis-semaphore.Mutex": (client, key) => {
      const m = new Mutex(client, key, semaphoreOptions);
      return { acquire: () => m.acquire(), release: () => m.release() };
    },
    "node-redis-semaphore.Semaphore(1)": (client, key) => {
      const s = new Semaphore(client, key, 1, semaphoreOptions);
      return { acquire: () => s.acquire(), release: () => s.release() };
    },
  };
}

async function serverCounters(probe) {
  const stats = await probe.info("commandstats");
  let calls = 0;
  for (const m of stats.matchAll(/^cmdstat_[^:]+:calls=(\d+)/gm)) calls += Number(m[1]);
  const cpu = await probe.info("cpu");
  const f = (name) => Number((cpu.match(new RegExp(`^${name}:([\\d.]+)`, "m")) || [0, 0])[1]);
  return { calls: calls - 2, cpuS: f("used_cpu_user") + f("used_cpu_sys") };  // the two INFO calls excluded
}

// ----------------------------------------------------------- one point

function percentiles(ms) {
  if (!ms.length) return {};
  ms.sort((a, b) => a - b);
  const pick = (p) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))];  // as the C++ suite picks
  return { avg_ms: ms.reduce((a, b) => a + b, 0) / ms.length, p50_ms: pick(0.5), p95_ms: pick(0.95), p99_ms: pick(0.99) };
}

async function measure(libs, make, url, probe, waiters, durationMs, key) {
  const sent = { n: 0 };
  const clients = Array.from({ length: waiters }, () => countingClient(libs.Redis, url, sent));
  try {
    await Promise.all(clients.map((c) => c.connect()));
    const locks = clients.map((c) => make(c, key));
    await locks[0].acquire();  // warm-up: SCRIPT LOAD (NOSCRIPT -> EVAL) falls outside the window
    await locks[0].release();
    const ops = new Array(waiters).fill(0);
    const latencies = [];
    const before = await serverCounters(probe);
    const sent0 = sent.n;
    const cpu0 = process.cpuUsage();
    const start = process.hrtime.bigint();
    const deadline = start + BigInt(durationMs) * 1_000_000n;
    let last = start;
    const loop = async (i) => {
      while (process.hrtime.bigint() < deadline) {
        const t0 = process.hrtime.bigint();
        await locks[i].acquire();
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        await sleep(HOLD_MS);
        await locks[i].release();
        await sleep(THINK_MS);
        ops[i]++;
      }
      const now = process.hrtime.bigint();
      if (now > last) last = now;
    };
    const results = await Promise.allSettled(ops.map((_, i) => loop(i)));
    const cpu = process.cpuUsage(cpu0);
    const sentN = sent.n - sent0;
    const after = await serverCounters(probe);
    const failed = results.filter((r) => r.status === "rejected");
    if (failed.length) {
      const e = failed[0].reason;
      throw new PeerError(`${failed.length} waiter(s) failed, first: ${e?.name}: ${e?.message}`);
    }
    const wall = Number(last - start) / 1e9;
    const cpuS = (cpu.user + cpu.system) / 1e6;
    const total = ops.reduce((a, b) => a + b, 0);
    const per = (x) => (total ? x / total : 0);
    const counters = {
      items_per_second: wall > 0 ? total / wall : 0,
      ns_per_op: total ? (wall * 1e9) / total : 0,
      cpu_per_wall: wall > 0 ? cpuS / wall : 0,
      client_cpu_us_per_acquire: per(cpuS * 1e6),
      fairness: waiters > 1 ? (Math.max(...ops) > 0 ? Math.min(...ops) / Math.max(...ops) : 0) : 1,
      waiters, cs_ns: 0, think_ns: 0,
      round_trips_per_acquire: per(sentN),
      redis_cmds_per_acquire: per(after.calls - before.calls),
      server_cpu_us_per_acquire: per((after.cpuS - before.cpuS) * 1e6),
      subscribes_per_acquire: 0,
      ...percentiles(latencies),
    };
    return { counters, wall };
  } finally {
    clients.forEach((c) => c.disconnect());
  }
}

// ------------------------------------------------------------------ output

const pointName = (impl, waiters) => `${SUITE}/${impl}/waiters:${waiters}/hold_us:${HOLD_US}`;

function cpuinfo(key, fallback) {
  try {
    const line = readFileSync("/proc/cpuinfo", "utf8").split("\n").find((l) => l.startsWith(key) && l.includes(":"));
    return line ? line.split(":").slice(1).join(":").trim() : fallback;
  } catch { return fallback; }
}

function packageVersion(name) {
  // redlock 5.0.0-beta.2's own package.json says "v5.0.0-beta.2": the leading v dropped.
  try { return JSON.parse(readFileSync(join(HERE, "node_modules", name, "package.json"), "utf8")).version.replace(/^v/, ""); }
  catch { return "?"; }
}

function context(args) {
  const n = cpus().length || 1;
  return {
    date: new Date().toISOString().replace(/\.\d+Z$/, "+00:00"),
    host_name: hostname(),
    executable: `${process.execPath} ${SELF}`,
    num_cpus: n,
    mhz_per_cpu: Math.round(Number(cpuinfo("cpu MHz", "0"))),
    load_avg: loadavg(),
    locklab_suite: SUITE,
    locklab_mode: args.mode,
    duration_ms: String(args.durationMs),
    cpu_model: cpuinfo("model name", "unknown"),
    cores: String(n),
    kernel: `${type()} ${release()}`,
    compiler: `node ${process.versions.node}, redlock ${packageVersion("redlock")}, ` +
              `redis-semaphore ${packageVersion("redis-semaphore")}, ioredis ${packageVersion("ioredis")}`,
    locklab_build: "node",
    git_revision: process.env.LOCKLAB_GIT_REVISION || "unknown",
    node_waiters: "async loops on node's one JavaScript thread, one ioredis connection each (not threads)",
    node_hold: `setTimeout(${HOLD_MS} ms) hold and setTimeout(${THINK_MS} ms) think (timers, not busy waits)`,
    node_retry: `every lock polls every ${RETRY_MS} ms, no jitter (redlock retryCount ${RETRIES} retryDelay ${RETRY_MS} ` +
                `retryJitter 0; redis-semaphore retryInterval ${RETRY_MS}); lease ${LEASE_MS} ms`,
  };
}

function entry(name, family, reps, rep, result, error) {
  const wall = result?.wall ?? 0;
  const e = { name, family_index: family, per_family_instance_index: 0, run_name: name, run_type: "iteration",
              repetitions: reps, repetition_index: rep, threads: 1, iterations: error ? 0 : 1,
              real_time: wall * 1e3, cpu_time: error ? 0 : result.counters.cpu_per_wall * wall * 1e3, time_unit: "ms" };
  if (error) return { ...e, error_occurred: true, error_message: error };
  return { ...e, ...Object.fromEntries(Object.entries(result.counters).sort(([a], [b]) => (a < b ? -1 : 1))) };
}

async function loadLibraries() {
  try {
    const { default: Redis } = await import("ioredis");
    const { default: Redlock } = await import("redlock");
    const { Mutex, Semaphore } = await import("redis-semaphore");
    return { Redis, Redlock, Mutex, Semaphore };
  } catch (e) {
    if (e?.code === "ERR_MODULE_NOT_FOUND") return null;
    throw e;
  }
}

async function main(argv) {
  let args;
  try {
    args = parseArgs(argv);
  } catch (e) {
    if (!(e instanceof PeerError)) throw e;
    console.error(`${SELF}: ${e.message}`);
    return EXIT_BAD_ARGS;
  }
  const libs = await loadLibraries();
  if (!libs) {
    console.error(`${SELF}: skipped: the npm packages (redlock, redis-semaphore, ioredis) are not installed; ` +
                  "run   npm ci --prefix benches/peers/node   (or ./lab setup)");
    return EXIT_MISSING_PACKAGES;
  }
  const impls = Object.entries(implementations(libs)).filter(([name]) => name.includes(args.impl));
  if (!impls.length) {
    console.error(`${SELF}: --impl '${args.impl}' matches none of ${Object.keys(implementations(libs)).join(", ")}`);
    return EXIT_BAD_ARGS;
  }
  const outDir = resolve(args.out || "results");
  let server = null;
  let probe = null;
  try {
    let url = process.env.LOCKLAB_REDIS_URL;
    if (!url) {
      server = await startPrivateServer();
      url = server.url;
    }
    probe = new libs.Redis(url, { maxRetriesPerRequest: 1, commandTimeout: 10_000 });
    const points = [];
    for (const [impl, make] of impls) {
      for (const n of args.waiters) points.push({ family: points.length, name: pointName(impl, n), impl, make, n });
    }
    const runs = points.flatMap((p) => Array.from({ length: args.repetitions }, (_, rep) => ({ p, rep })));
    if (args.repetitions > 1) {  // interleaved, like --benchmark_enable_random_interleaving
      for (let i = runs.length - 1; i > 0; i--) {
        const j = Math.floor(Math.random() * (i + 1));
        [runs[i], runs[j]] = [runs[j], runs[i]];
      }
    }
    const tag = `${process.pid}:${Date.now()}`;
    const entries = [];
    for (const [i, { p, rep }] of runs.entries()) {
      try {
        const r = await measure(libs, p.make, url, probe, p.n, args.durationMs, `locklab:peer:${p.impl}:${tag}:${i}`);
        entries.push(entry(p.name, p.family, args.repetitions, rep, r));
        const c = r.counters;
        console.log(`${p.name.padEnd(72)} ${c.items_per_second.toFixed(1).padStart(9)} acq/s  ` +
                    `p50 ${(c.p50_ms ?? 0).toFixed(3).padStart(8)} ms  p95 ${(c.p95_ms ?? 0).toFixed(3).padStart(8)} ms  ` +
                    `rt/acq ${c.round_trips_per_acquire.toFixed(2)}  cpu/wall ${c.cpu_per_wall.toFixed(2)}`);
      } catch (e) {
        entries.push(entry(p.name, p.family, args.repetitions, rep, null, String(e.message || e)));
        console.log(`${p.name.padEnd(72)} ERROR ${e.message || e}`);
      }
    }
    entries.sort((a, b) => a.family_index - b.family_index || a.repetition_index - b.repetition_index);
    mkdirSync(outDir, { recursive: true });
    const path = join(outDir, OUT_NAME);
    writeFileSync(path, JSON.stringify({ context: context(args), benchmarks: entries }, null, 2) + "\n");
    console.log(`wrote ${path}`);
    return entries.some((e) => e.error_occurred) ? 1 : 0;
  } catch (e) {
    if (!(e instanceof PeerError)) throw e;
    console.error(`${SELF}: ${e.message}`);
    return EXIT_BAD_ARGS;
  } finally {
    probe?.disconnect();
    server?.stop();
  }
}

process.exitCode = await main(process.argv.slice(2));
