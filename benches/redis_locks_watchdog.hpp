// redis_locks_watchdog.hpp — the redis_locks suite's points about a
// PubSubLock HOLD rather than a queue of waiters: the watchdog (lease
// renewal while held, distributed/pub_sub_lock.hpp "Leases and the
// watchdog", "Lease at risk") and try_lock_async (a wait that needs no
// caller thread). Notebook 05 reads them; they share the suite's JSON
// (results/redis_locks.json) and name no hold_us, so the suite's curves,
// splits and overlay never pick them up.
//
// The points (one waiter each: the holder, or the caller)
// ----------
// Watchdog, lease L = 600 ms (renewed every L / 3 = 200 ms):
//   redis_locks/PubSubLock(watchdog)/waiters:1/lease_ms:600/stall_ms:1200
//   redis_locks/PubSubLock(fixed-lease)/waiters:1/lease_ms:600/stall_ms:1200
//       the holder's thread stalls 1,200 ms (twice its lease) inside its
//       critical section, while a rival on another Client tries every 10 ms;
//       then the holder unlocks. Watchdog on: the timer renews, the rival
//       never gets in, unlock() succeeds. Fixed lease: the key expires at L,
//       the rival takes it, unlock() throws LockLost.
//   redis_locks/PubSubLock(watchdog)/waiters:1/lease_ms:600/key_deleted:1
//       the key is deleted under the holder (a failover that lost it, an
//       operator): how long until on_lease_risk says kLost.
//   redis_locks/PubSubLock(watchdog)/waiters:1/lease_ms:600/write_pause_ms:300
//       CLIENT PAUSE WRITE 300 ms (the whole server: run the suite on its
//       own server, as it does unless LOCKLAB_REDIS_URL is set) starting
//       just after a renewal, the
//       holder's Client with a 50 ms command_timeout: the renewal due inside
//       the pause times out (kRenewalFailed), the next one, after the pause,
//       succeeds before the lease ends, and unlock() succeeds.
// try_lock_async (lease 10 s), a holder on another thread:
//   redis_locks/PubSubLock(lock)/waiters:1/hold_ms:40/work_ms:30
//   redis_locks/PubSubLock(try_lock_async)/waiters:1/hold_ms:40/work_ms:30
//       the caller needs the lock (held 40 ms more) and has 30 ms of CPU work
//       to do (busy work, timed by the thread's CPU clock, so a preempted
//       caller still does all of it): lock() then work, or try_lock_async,
//       work, get().
//   redis_locks/PubSubLock(try_lock_async)/waiters:1/hold_ms:100/wait_ms:20
//       a wait shorter than the hold: the future becomes false.
//   redis_locks/PubSubLock(try_lock_async)/waiters:1/hold_ms:100/destroyed_after_ms:20
//       the only cancellation: the caller's lock object is destroyed while
//       its request is pending; the future becomes false.
//   redis_locks/PubSubLock(try_lock_async)/waiters:1/hold_ms:40/abandoned:1
//       the caller drops the future: nothing cancels the request, and the
//       calling thread owns the lock once the holder releases it.
//
// Counters (besides the harness's; each point reports the mean over its
// rounds, and the worst / earliest / latest round where a bound is the
// claim). No counter repeats a knob of the name or ends in _min / _max:
// the notebooks' loader keeps the name's value and writes <counter>_min /
// _max itself (the spread over repetitions).
//   renewals, renewals_per_held_s   successful watchdog renewals (the lock's
//                                   watchdog_renewals()) in the hold
//   holder_round_trips_per_held_s   the holder's Client round trips from
//                                   lock() to unlock() over the held seconds
//   rival_acquired, rival_acquired_after_ms   whether and when (after the
//                                   holder's lock()) the rival got the lock
//   lock_lost                       unlock() threw LockLost (1) or not (0)
//   lease_risk_kind                 lease_risk() just before unlock(): 0
//                                   none, 1 kRenewalFailed, 2 kLost
//   verdict_after_ms, verdict_after_worst_ms   fault -> the on_lease_risk
//                                   call (worst: the slowest round)
//   renewals_after_failure, failed_renewals   write_pause: renewals that
//                                   succeeded after the failed one; failed
//   call_us                         the call's return, median: try_lock_async
//                                   returns at once, lock() after the wait
//   waited_ms                       the call -> the lock is the caller's (the
//                                   future ready; polled every 1 ms of work)
//   worked_ms, total_ms, hidden_wait_ms   the caller's work; the call ->
//                                   work done and lock held; waited_ms +
//                                   worked_ms - total_ms (the waiting hidden
//                                   behind work)
//   acquired                        fraction of rounds whose future was true
//   completed_after_ms, completed_after_earliest_ms, completed_after_latest_ms
//                                   the call (timeout) or the destruction
//                                   (destroyed) -> the future ready
//   held_after_abandon, held_after_ms   fraction of rounds in which the
//                                   caller held the lock after dropping the
//                                   future, and when (after the holder's
//                                   release)
//
// Each point is bounded: every wait in it has a limit (a verdict 2 s, a
// future 5 s), past which the point fails with a message. About 7 s for
// all of them, whatever --duration_ms says (a stall must outlast a lease).
#pragma once

#include <functional>

#include "benches/harness/suite.hpp"
#include "distributed/client.hpp"

namespace locklab::bench {

// Registers the points above under `o.suite`. `server` returns the options
// of the suite's server; it is called when a point runs, not here.
void register_watchdog_and_async_points(const SuiteOptions& o, std::function<redis::Client::Options()> server);

}  // namespace locklab::bench
