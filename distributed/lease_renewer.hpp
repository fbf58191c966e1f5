// lease_renewer.hpp — one timer thread per Client that runs the periodic
// lease renewals of every lock object built on it.
//
// Why one timer per Client
// ------------------------
// A watchdog thread per lock object would cost a thread (a stack, a
// scheduler entry) for every lock held in watchdog mode: 1,000 held locks,
// 1,000 threads that sleep 99.9% of the time. A renewal is one round trip
// every few seconds, so one thread can serve them all: it sleeps until the
// earliest due job, runs every job that is due, one after another, and
// sleeps again. This is Redisson's design too (one Netty HashedWheelTimer per
// client for every lock's watchdog).
//
// The contract
// ------------
// - schedule(group, period, job): `job` runs on the timer thread one
//   `period` from now, then again one period after each run began, for as
//   long as it returns true. The thread starts with the first schedule()
//   (a Client whose locks never renew costs no thread).
// - Jobs run one at a time, in due order, with no lock of the renewer held:
//   a job may take the lock object's own mutexes. A slow job delays every
//   job due after it (a renewal waits up to the Client's command_timeout
//   when Redis does not answer: with n renewals due together, the last one
//   runs up to n command_timeouts late). So a job must not block beyond one
//   Redis command, and must not throw (one that does is not run again).
// - cancel(id): the job never STARTS again; a run in progress is not waited
//   for (the unlock() path: it must not wait behind another hold's renewal).
//   An id that is not scheduled (finished, cancelled) is ignored.
// - cancel_group(group): cancels every job of `group` (a lock object) and
//   waits until none of them is running, so the caller may then destroy
//   what the jobs use. Called from the timer thread itself (from inside a
//   job) it cannot wait for its own run: it cancels only.
// - ~LeaseRenewer: runs no more jobs, waits for a run in progress, joins.
//
// After fork() the child has no timer thread: Client::lease_renewer() sets
// the parent's renewer aside (never destroyed or locked) and gives the child
// a new, empty one (client.hpp, "After fork()").
//
// Costs: schedule / cancel O(log n) under one mutex; the timer thread wakes
// once per due job (jobs due at the same instant: once for all).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>

namespace locklab::redis {

class LeaseRenewer {
 public:
  using Clock = std::chrono::steady_clock;
  // Returns true to run again one period later, false to stop.
  using Job = std::function<bool()>;
  using Id = std::uint64_t;  // never 0

  LeaseRenewer() = default;
  // Runs no more jobs; waits for a job in progress; joins the thread.
  ~LeaseRenewer();
  LeaseRenewer(const LeaseRenewer&) = delete;
  LeaseRenewer& operator=(const LeaseRenewer&) = delete;

  // Runs `job` every `period` (first one period from now) until it returns
  // false or is cancelled. `group` names the object the job belongs to, for
  // cancel_group. std::invalid_argument for a period <= 0 or an empty job;
  // std::system_error if the timer thread cannot be started.
  Id schedule(const void* group, Clock::duration period, Job job);
  // The job never starts again; does not wait for a run in progress.
  void cancel(Id id);
  // Cancels every job of `group` and waits until none of them runs (not
  // when called from a job: see the contract above).
  void cancel_group(const void* group);

  // Jobs scheduled now (a job counts while it runs).
  std::size_t scheduled() const;
  // Whether the timer thread was started (by the first schedule()).
  bool thread_started() const;

 private:
  struct Entry {
    const void* group;
    Clock::duration period;
    Job job;  // empty while it runs (the timer thread holds it then)
    Clock::time_point due;
  };
  void loop();

  mutable std::mutex mu_;
  std::condition_variable wake_;       // the timer: a new earliest job, or stop
  std::condition_variable run_ended_;  // cancel_group: the running job returned
  std::unordered_map<Id, Entry> entries_;
  std::set<std::pair<Clock::time_point, Id>> due_;  // entries_ not running, earliest first
  Id next_id_ = 1;
  const void* running_group_ = nullptr;  // the group of the job running now
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace locklab::redis
