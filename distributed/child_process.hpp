// child_process.hpp — the one way the lab starts and reaps a child role:
// the scenarios re-executing themselves as a coupon client, a paused victim
// or a herd process, and the tests re-running their own binary as a
// DISABLED_ worker. (The server launchers beside this file, EmbeddedServer,
// EmbeddedReplicaSet, LocalCluster, and postgres/EmbeddedPostgres, fork by
// hand instead: their child must ask for PR_SET_PDEATHSIG between fork and
// exec, which posix_spawn cannot do.)
//
// What it guarantees
// ------------------
// - spawn_process() starts argv[0] (a path, not looked up on $PATH) with
//   `argv` and this process's environment, `extra_env` ("NAME=value") put
//   in place of any inherited variable of the same name (so a C child and
//   a shell child see the same value). posix_spawn: no fork of a multi-threaded
//   parent's address space, so it is safe from any thread. Returns -1 if
//   the kernel refused (no exception: callers say which role failed).
// - wait_process() is bounded: the exit status (0..255), 128 + the signal
//   for a child killed by one, or -1 when the bound passed (the child is then
//   SIGKILLed and reaped, never left behind) or `pid` is not our child.
//   Polls every 2 ms: a child role lives for tens of milliseconds to
//   minutes, so 2 ms is noise against it and costs nothing measurable.
// - ChildProcess owns one child: its destructor SIGKILLs and reaps a child
//   still running (an exception between spawn and wait leaves no orphan
//   hammering a server and no zombie). Move-only.
//
// - run_capturing_output() runs a short tool (the partition scenario's `ip`
//   and `iptables`) to its end: stdin /dev/null, stdout and stderr into one
//   pipe, the output kept up to `max_output` bytes; bounded like
//   wait_process (a tool that overstays is SIGKILLed and reaped).
//
// Failure outcomes: nothing throws; a child that cannot be started is -1
// (spawn_process) or a ChildProcess whose running() is false.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace locklab {

// Starts `argv` (argv[0]: the executable's path, e.g. "/proc/self/exe") with
// the environment `extra_env` + ours. Returns the pid, or -1.
pid_t spawn_process(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env = {});

// Waits at most `bound` for child `pid`; see the essay for the result.
int wait_process(pid_t pid, std::chrono::milliseconds bound);

struct CapturedOutput {
  bool started = false;  // false: it could not be started (output says why)
  bool exited = false;   // ended by exit(), not by a signal (nor by the bound)
  int status = -1;       // the exit status when `exited`
  std::string output;    // stdout and stderr, interleaved
};
CapturedOutput run_capturing_output(const std::vector<std::string>& argv, std::chrono::milliseconds bound,
                                    std::size_t max_output = 64 * 1024);

class ChildProcess {
 public:
  ChildProcess() = default;
  // Adopts a child started elsewhere (a Launcher's pid); -1: none.
  explicit ChildProcess(pid_t pid) noexcept : pid_(pid) {}
  static ChildProcess spawn(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env = {}) {
    return ChildProcess(spawn_process(argv, extra_env));
  }
  ChildProcess(ChildProcess&& o) noexcept : pid_(o.pid_) { o.pid_ = -1; }
  ChildProcess& operator=(ChildProcess&& o) noexcept {
    if (this != &o) {
      kill();
      pid_ = o.pid_;
      o.pid_ = -1;
    }
    return *this;
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() { kill(); }

  pid_t pid() const noexcept { return pid_; }
  // Started and not yet reaped by wait() or kill().
  bool running() const noexcept { return pid_ > 0; }
  // wait_process(pid(), bound); afterwards the child is reaped either way.
  int wait(std::chrono::milliseconds bound);
  // SIGKILL and reap, if still running.
  void kill() noexcept;

 private:
  pid_t pid_ = -1;
};

}  // namespace locklab
