// point_process.hpp — running one benchmark point in a child process of its
// own, and the small command-line helpers every suite binary shares.
//
// Why a point runs in its own process
// -----------------------------------
// Most suites measure in the suite binary itself. Three cannot:
//   * Boost 1.74's work_stealing scheduler keeps static state, so a process
//     can build one multi-carrier CarrierPool, once (fibers/carrier_pool.hpp,
//     trap 1). `pinning` and `io_bound` build a fresh pool per point, so each
//     point needs a fresh process.
//   * Peaks are per process. `io_bound` reports the resident-memory
//     high-water mark (VmHWM) and the peak OS thread count; in a shared
//     process the first point's peak would leak into every later one.
//   * One Redis client per process. `redis_locks` measures P processes x T
//     threads, each process with its own Client (connection pool, pub/sub
//     connection) and its own GuardedLock gate, because a process is what
//     owns those. Its children speak a richer protocol (ready / go, pooled
//     latencies; see benches/redis_locks_bench.cpp) and use only the flag
//     helpers and self_path() from here.
//
// The protocol (pinning, io_bound)
// --------------------------------
// The suite binary registers every point as usual, but a point's measure
// function calls measure_in_child(name, workload): the binary re-executes
// itself (self_path(), i.e. /proc/self/exe) with the hidden flags
//   --point=<name> --duration_ms=<d>
// (take_point_request() recognises them in main). The child arms an alarm of
// d + 60 s (so a point that deadlocks dies by SIGALRM), runs that one
// configuration, writes its ContentionResult to stdout in the wire format
// below and exits 0; an error goes to stderr (the suite's log) with a
// non-zero exit. The parent reads stdout to EOF, bounded by d + 90 s (past
// it: SIGKILL, reap, fail), checks the exit status and parses the text. Any
// failure throws std::runtime_error naming the point, so Google Benchmark
// marks that point failed and the suite goes on. The same flags reproduce
// one point by hand, e.g.
//   bench_pinning --point=pinning/FiberMutex/waiters:1000/carriers:2/locks:16/io_ms:10 --duration_ms=500
//
// The wire format
// ---------------
// Text, one field a line, "<kind> <value...>" separated by single spaces:
//   per_unit <word>           the event unit ("op", "acquire"); optional
//   wall_seconds <double>     required, > 0
//   cpu_seconds <double>      required
//   event <name> <double>     one per event_deltas entry, in order
//   extra <name> <double>     one per extra entry, in order
//   ops <u64> <u64> ...       required; the per-waiter counts (may be none)
// Doubles are written with 17 significant digits, so they come back bit for
// bit; nan and inf survive (std::from_chars reads what iostreams write).
// Names are non-empty and free of white space (format_result refuses
// others). The Workload is not sent: the parent knows it. Empty lines are
// ignored; anything else -- an unknown kind, a malformed number, a missing
// required line -- is an error that quotes the offending line, so a child
// that prints stray text fails loudly instead of reporting zeros.
//
// Failure modes: a child that cannot be started (posix_spawn), exits
// non-zero, dies by a signal (its alarm included), outlives the parent's
// bound or prints no or a malformed result each throws std::runtime_error
// with the cause; no child process is left behind on any path.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "benches/harness/contention.hpp"

namespace locklab::bench {

// ------------------------------------------------------------------ flags

// Removes every "<flag>=<value>" from args (flag spelled with its dashes,
// e.g. "--io_ms") and returns the last value, or "" when none is there.
std::string take_flag(std::vector<std::string>& args, const std::string& flag);

// True when args holds a "<flag>=..." (left in place).
bool has_flag(const std::vector<std::string>& args, const std::string& flag);

// The whole of `text` as an int >= 1. Throws std::invalid_argument
// "<what>: expected a positive integer, got '<text>'" otherwise.
int parse_positive(const std::string& text, const std::string& what);

// "1,2,4" -> {1, 2, 4}, each item by parse_positive. Throws
// std::invalid_argument for a bad item or "<what>: empty list".
std::vector<int> parse_positive_list(const std::string& text, const std::string& what);

// The value after the first ':' of the first line of `path` that starts with
// `key` (leading blanks trimmed), or "unknown". For /proc/cpuinfo's
// "model name" and the like in the machine context of a results file.
std::string first_line_with(const std::string& path, const std::string& key);

// ------------------------------------------------------------ wire format

// The result as wire-format text (see above), ending in a newline. Throws
// std::invalid_argument for an event or extra name that is empty or holds
// white space, or a per_unit that does.
std::string format_result(const ContentionResult& r);

// The inverse of format_result, with `w` as the workload. Throws
// std::runtime_error quoting the first bad line, or naming the missing
// required line, or for wall_seconds <= 0.
ContentionResult parse_result(const std::string& text, const Workload& w);

// -------------------------------------------------------- child processes

// This executable's absolute path (/proc/self/exe). Throws
// std::runtime_error when it cannot be read.
std::string self_path();

// Runs argv (argv[0] an absolute path, no shell) with our environment,
// stdin and stderr, and returns everything it wrote to stdout. The child
// must exit 0 within `bound`. Throws std::runtime_error starting with
// `what`: it could not be started, exited with a non-zero status, was killed
// by a signal, or was still running at the bound (then it is SIGKILLed and
// reaped first).
std::string run_child(const std::vector<std::string>& argv, std::chrono::milliseconds bound, const std::string& what);

// The slack of a point's child: its own alarm fires at duration + 60 s, the
// parent gives up (SIGKILL) at duration + 90 s.
inline constexpr std::chrono::seconds kChildAlarmSlack{60};
inline constexpr std::chrono::seconds kParentBoundSlack{90};

// Parent side: re-executes this binary with --point=<name>
// --duration_ms=<w.duration> and returns the child's result with `w` as its
// workload. Point names must hold no quote or white space (they never do:
// point_name() builds them from identifiers and numbers). Throws
// std::runtime_error "point <name>: ..." for every failure above.
ContentionResult measure_in_child(const std::string& name, const Workload& w);

// What the hidden flags asked for.
struct PointRequest {
  std::string name;
  std::chrono::milliseconds duration{200};
};

// Child side, in main before anything else: removes --point=<name> and
// --duration_ms=<ms> from args and returns them, or std::nullopt (args
// untouched but for an empty --point=) when --point is absent or empty.
// A missing --duration_ms means 200 ms. Throws std::invalid_argument for a
// duration that is not a positive integer.
std::optional<PointRequest> take_point_request(std::vector<std::string>& args);

// Child side: arms the alarm (duration + kChildAlarmSlack), runs
// `run(name, duration)`, writes its result in the wire format to stdout and
// returns 0 (main's exit status). Exceptions from `run` propagate (main
// prints them to stderr and exits non-zero, which the parent reports).
using PointRunner = std::function<ContentionResult(const std::string& name, std::chrono::milliseconds duration)>;
int point_child_main(const PointRequest& request, const PointRunner& run);

// Splits a point name "<suite>/<Impl>/<keys[0]>:<v>/<keys[1]>:<v>..." into
// the implementation and the knob values, in the order of `keys`. Throws
// std::invalid_argument "--point: ..." for another suite, another number of
// parts, a missing or misplaced key, or a value that is not a positive
// integer.
struct PointSpec {
  std::string impl;
  std::vector<int> values;
};
PointSpec parse_point_name(const std::string& name, const std::string& suite, const std::vector<std::string>& keys);

}  // namespace locklab::bench
