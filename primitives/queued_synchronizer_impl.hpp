// queued_synchronizer_impl.hpp — the slow paths of BasicQueuedSynchronizer
// (queued_synchronizer.hpp has the word, the rules and the argument).
//
// Not for general inclusion: a .cpp includes this file to compile the
// synchronizer for one Lot with an explicit instantiation,
//   template class locklab::BasicQueuedSynchronizer<MyLot>;
// as queued_synchronizer.cpp does for ThreadLot and fibers/fiber_lots.cpp
// for the fiber lots. Everything else includes queued_synchronizer.hpp and
// links against one of those, so each slow path is compiled once.
#pragma once

#include <algorithm>
#include <utility>

#include "primitives/cpu_relax.hpp"
#include "primitives/queued_synchronizer.hpp"

namespace locklab {

namespace detail::queued_synchronizer {
// At budget 0 a synchronizer would never spin again, however short its
// sections became; one contended acquire in kProbeEvery spins kProbeSpins
// polls so that a decayed budget can grow back (FutexMutex's probes, same
// numbers).
inline constexpr std::uint32_t kProbeEvery = 16;
inline constexpr std::uint32_t kProbeSpins = 100;
// A timed spin reads the clock once per this many polls (~1.3 us at ~20 ns
// a poll): often enough to honour a deadline, rarely enough not to slow it.
inline constexpr std::uint32_t kPollsPerClockRead = 64;
// "A late successor" in queued_synchronizer.hpp: 2 x the p99 futex
// wake-to-run latency (24 us) with a core free on the reference Intel VM.
inline constexpr std::int64_t kLateSuccessorNs = 50'000;
// The unpark token of a thread woken beside a late successor: it is not
// the designated successor (the designated one's token is 0).
inline constexpr std::intptr_t kExtraWakeToken = 1;
// "A polite successor" in queued_synchronizer.hpp. The grace: longer than
// a running barger's gap between its release and its next acquire (the
// locks suite's loop: a count, a flag load, every K-th acquire a clock
// read; tens of ns), shorter than the think time at which two threads
// gain from trading the lock (the suite's shortest, 200 ns at 2 waiters).
// Chosen from a sweep of 60 / 150 / 400 ns on the reference Intel VM, on
// an earlier form of this design (one that went on polling after a
// re-take): the p99.9 at 128 waiters with 1 us sections stayed under 2 ms
// at 150 and 400 ns but not always at 60, and 400 ns cost 10% at 2
// waiters with empty sections (46 against 51 M acquires/s).
inline constexpr std::int64_t kPoliteGraceNs = 150;
// The longest doze: the bound on the gap (the lock free, the successor
// asleep) when a barger that kept re-taking the lock leaves it; 4,000
// timer wake-ups a second at most, on the core the successor would
// otherwise leave idle. 1 ms measured 1-2% faster at 128 waiters with
// empty sections (A/B, reference VM), for a gap four times as long.
inline constexpr std::chrono::microseconds kMaxDoze{250};
// steady_clock as one integer, so that a timestamp fits one atomic word.
inline std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace detail::queued_synchronizer

template <Lot L>
void BasicQueuedSynchronizer<L>::adapt(bool won) noexcept {
  if (policy_.kind != SpinPolicy::Kind::kAdaptive) return;
  // Racy load + store: a lost update only leaves the budget a little stale.
  // Growth +1/4 + 1 after a spin that won, shrink 1/8 + 1 after one that
  // ended in a park: FutexMutex's rule ("The adaptive spin budget").
  const std::uint32_t b = spin_budget_.load(std::memory_order_relaxed);
  const std::uint32_t shrink = b / 8 + 1;
  const std::uint32_t next = won ? b + b / 4 + 1 : (b > shrink ? b - shrink : 0);
  spin_budget_.store(std::clamp(next, policy_.min_spins, policy_.max_spins), std::memory_order_relaxed);
}

template <Lot L>
template <bool kTimed>
bool BasicQueuedSynchronizer<L>::acquire_slow(std::int64_t n, Clock::time_point deadline) noexcept {
  using Kind = SpinPolicy::Kind;
  namespace tuning = detail::queued_synchronizer;
  const bool spin_only = policy_.kind == Kind::kSpinOnly;
  const bool adaptive = policy_.kind == Kind::kAdaptive;
  std::int64_t spins = 0;       // polls in this acquisition, for the statistics
  std::uint32_t spun = 0;       // polls in the current spin phase
  std::uint32_t budget = 0;
  bool spinning = false;        // the current spin phase has polled at least once (counted in spinners_)
  bool designated = false;      // this thread owns kWoken (and kStarving, if set)
  bool counted = false;         // counted in waiting_
  bool may_wake_one_more = true;  // this acquire may still wake a thread beside a late successor
  Clock::time_point woken_at{};  // when this thread became the designated successor
  // A polite successor (unfair mode): when it first saw the permits free in
  // the current stretch (0: not free at its last look), and whether a
  // barger has taken permits since a release last woke it, or that it saw
  // free (then it dozes instead of sleeping where releases wake it).
  std::int64_t free_since_ns = 0;
  bool barger_seen = false;
  auto refill = [&] {
    spun = 0;
    if (policy_.kind == Kind::kParkOnly) {
      budget = 0;
    } else {
      budget = spin_budget_.load(std::memory_order_relaxed);
      // Relaxed: a heuristic counter, like the budget.
      if (budget == 0 && probes_.fetch_add(1, std::memory_order_relaxed) % tuning::kProbeEvery == 0) {
        budget = tuning::kProbeSpins;
      }
    }
  };
  auto stop_spinning = [&] {
    spinning = false;
    spinners_.fetch_sub(1, std::memory_order_relaxed);
  };
  auto finish = [&](bool took) {
    if (spinning) stop_spinning();
    if (counted) waiting_.fetch_sub(1, std::memory_order_relaxed);
    stats_.record_contended_acquire(spins);
    return took;
  };
  // Leaving without the permits. A designated successor hands kWoken (and
  // kStarving) back, or every later release would think someone is awake
  // and wake nobody; a thread that timed out in the queue may have been the
  // head a release skipped. Either way, permits left free with threads
  // queued and nobody awake are passed on.
  auto give_up = [&] {
    if (designated) {
      word_.fetch_and(~(kWoken | kStarving | kSuccessorParked), std::memory_order_relaxed);
    }
    pass_on_if_free();
    return finish(false);
  };

  refill();
  for (;;) {
    std::uint64_t w = word_.load(std::memory_order_relaxed);
    // A polite successor takes free permits only once they have stayed
    // free for the grace: a running barger would have re-taken them by
    // then. Starving, it takes them at once (newcomers cannot).
    if (designated && !fair_ && !(w & kStarving)) {
      if (permits_of(w) >= n) {
        const std::int64_t now = tuning::now_ns();
        if (free_since_ns == 0) free_since_ns = now;
        if (now - free_since_ns < tuning::kPoliteGraceNs) {
          (cpu_relax)();
          continue;
        }
      } else if (free_since_ns != 0) {
        // Re-taken within the grace: a barger runs. Stop polling now (the
        // spin phase is over), or the poll would only slow the barger down
        // by pulling the word's line away from it.
        free_since_ns = 0;
        barger_seen = true;
        spun = std::max(spun, budget);
      }
    }
    if (designated ? permits_of(w) >= n : may_barge(w, n)) {
      std::uint64_t next = w - units(n);
      bool pass_on = false;
      if (designated) {
        next &= ~(kWoken | kStarving | kSuccessorParked);
        if ((w & kParked) && (fair_ || permits_of(next) > 0)) {
          next |= kWoken;  // claimed for the next queued thread
          pass_on = true;
        }
      }
      if (!word_.compare_exchange_weak(w, next, std::memory_order_acquire, std::memory_order_relaxed)) continue;
      if (spinning) adapt(true);  // finish() stops the spin phase
      if (pass_on) wake_head_claimed();
      return finish(true);
    }

    // Spin: the designated successor up to its budget. In unfair mode a
    // newcomer queues at once, unless the policy lets newcomers spin
    // (SpinPolicy::newcomers_spin, which says why not by default). In fair
    // mode a newcomer spins: it cannot barge past anyone queued, so its spin
    // starts no fight over the line, and it saves a park and a wake per
    // hand-off where the lock is about to come free (at 2 waiters, ~0.03 M/s
    // without it against 10 M/s with it on the reference Intel VM). Either
    // way only while nobody is queued (a queued thread means the lock is
    // busier than a spin is likely to outlast, and the spinner would take a
    // core). A spinning newcomer that is a lone spinner, nobody queued and
    // no other thread spinning, goes on to SpinPolicy::kLoneSpinPolls
    // (adaptive policy only; fixed and park-only mean what they say).
    // Relaxed: spinners_ is a hint, like the budget.
    const bool newcomers_spin = fair_ || policy_.newcomers_spin;
    const bool may_spin = designated || (newcomers_spin && !(w & kParked));
    const bool lone = adaptive && newcomers_spin && !(w & kParked) && spun < SpinPolicy::kLoneSpinPolls &&
                      spinners_.load(std::memory_order_relaxed) == (spinning ? 1u : 0u);
    if (spin_only || (may_spin && (spun < budget || lone))) {
      ++spun;
      ++spins;
      if (!spinning) {
        spinning = true;
        spinners_.fetch_add(1, std::memory_order_relaxed);
      }
      if constexpr (kTimed) {
        if (spun % tuning::kPollsPerClockRead == 0 && Clock::now() >= deadline) return give_up();
      }
      (cpu_relax)();  // parenthesized: see cpu_relax.hpp
      continue;
    }
    if (spinning) {
      adapt(false);
      stop_spinning();
    }
    if constexpr (kTimed) {
      if (Clock::now() >= deadline) return give_up();
    }

    if (designated) {
      // Unfair: after kStarvationInterval as the successor, stop the barging.
      if (!fair_ && !(w & kStarving) && Clock::now() - woken_at >= kStarvationInterval) {
        word_.fetch_or(kStarving, std::memory_order_relaxed);
        continue;
      }
      // Unfair, a barger about: doze, unannounced, so that the barger's
      // releases wake nobody, until the next look or the starvation
      // deadline. Validated like a sleep: never while the permits are free.
      if (!fair_ && !(w & kStarving) && barger_seen) {
        barger_seen = false;
        Clock::time_point until = std::min(Clock::now() + tuning::kMaxDoze, woken_at + kStarvationInterval);
        if constexpr (kTimed) until = std::min(until, deadline);
        const ParkResult r = lot_.park_if(
            successor_slot(), [&] { return permits_of(word_.load(std::memory_order_relaxed)) < n; }, until);
        // A release may still find it there (a kSuccessorParked left set by
        // a sleep whose validation failed): that wake is counted by the
        // release, so the sleep counts as a park, as every woken sleep does.
        if (r.status == ParkStatus::kTimedOut) stats_.record_doze();
        if (r.status == ParkStatus::kUnparked) stats_.record_park();
        if constexpr (kTimed) {
          if (Clock::now() >= deadline) return give_up();
        }
        refill();
        continue;
      }
      // Sleep in the successor slot, still first in line. Relaxed: the
      // validation below re-reads the word under the slot's bucket lock.
      if (!(w & kSuccessorParked) &&
          !word_.compare_exchange_weak(w, w | kSuccessorParked, std::memory_order_relaxed,
                                       std::memory_order_relaxed)) {
        continue;
      }
      const ParkResult r = lot_.park_if(
          successor_slot(),
          [&] {
            const std::uint64_t v = word_.load(std::memory_order_relaxed);
            return (v & kSuccessorParked) && permits_of(v) < n;
          },
          kTimed ? std::optional<Clock::time_point>(deadline) : std::nullopt);
      if (r.status != ParkStatus::kInvalid) stats_.record_park();
      if (r.status == ParkStatus::kTimedOut) return give_up();
      if (r.status == ParkStatus::kUnparked) {
        successor_woken_at_.store(0, std::memory_order_relaxed);  // running
        barger_seen = n == 1;  // as when first woken, below
      }
      refill();
      continue;
    }

    // About to queue behind an awake successor: is it late? ("A late
    // successor"; only in unfair mode, where a second woken thread may
    // barge.) Once per acquire, and never by a thread that was itself woken
    // that way: two queued threads would otherwise wake each other every
    // kLateSuccessor for as long as the successor stays late.
    if (!fair_ && may_wake_one_more && (w & (kWoken | kParked)) == (kWoken | kParked)) {
      may_wake_one_more = !wake_one_more_if_successor_is_late();
    }
    // Queue. Announce it (relaxed: park_if's validation re-reads the word
    // under the bucket lock, which orders it against the unparker's
    // callback), then park unless the word changed.
    if (!(w & kParked) &&
        !word_.compare_exchange_weak(w, w | kParked, std::memory_order_relaxed, std::memory_order_relaxed)) {
      continue;
    }
    const ParkResult r = lot_.park_if(
        this,
        [&] {
          const std::uint64_t v = word_.load(std::memory_order_relaxed);
          const bool sleep = (v & kParked) && !may_barge(v, n);
          // Counted under the bucket lock, in the critical section that
          // queues us: once queue_length() shows us, we are in the queue.
          if (sleep && !counted) {
            counted = true;
            waiting_.fetch_add(1, std::memory_order_relaxed);
          }
          return sleep;
        },
        kTimed ? std::optional<Clock::time_point>(deadline) : std::nullopt);
    switch (r.status) {
      case ParkStatus::kUnparked:  // the unparker claimed kWoken for us
        stats_.record_park();
        if (r.token == tuning::kExtraWakeToken) {  // woken beside a late successor: a newcomer again
          may_wake_one_more = false;
          break;
        }
        successor_woken_at_.store(0, std::memory_order_relaxed);  // running: not late
        designated = true;
        // Woken by a release: for one permit, whoever holds it when we look
        // barged (nobody else is designated). For more, the permits may
        // simply not be back yet, so only a permit seen taken tells.
        barger_seen = n == 1;
        woken_at = Clock::now();
        // See stop_barging_behind_a_woken_exclusive().
        if (!fair_ && exclusive_stops_barging_ && n == kMaxPermits) {
          word_.fetch_or(kStarving, std::memory_order_relaxed);
        }
        refill();
        break;
      case ParkStatus::kTimedOut:
        stats_.record_park();
        return give_up();
      case ParkStatus::kInvalid:  // the word changed before we could queue: look again
        break;
    }
  }
}

template <Lot L>
bool BasicQueuedSynchronizer<L>::acquire_slow_untimed(std::int64_t n) noexcept {
  return acquire_slow<false>(n, {});
}

template <Lot L>
bool BasicQueuedSynchronizer<L>::acquire_slow_timed(std::int64_t n, Clock::time_point deadline) noexcept {
  return acquire_slow<true>(n, deadline);
}

template <Lot L>
bool BasicQueuedSynchronizer<L>::release_slow(std::int64_t n, std::int64_t max_permits) noexcept {
  std::uint64_t w = word_.load(std::memory_order_relaxed);
  bool wake_slot = false;
  bool wake_head = false;
  for (;;) {
    if (permits_of(w) > max_permits - n) return false;
    std::uint64_t next = w + units(n);
    wake_slot = (w & kSuccessorParked) != 0;
    wake_head = !wake_slot && (w & (kParked | kWoken)) == kParked;
    if (wake_slot) next &= ~kSuccessorParked;
    if (wake_head) next |= kWoken;  // claimed for the thread we are about to wake
    if (word_.compare_exchange_weak(w, next, std::memory_order_release, std::memory_order_relaxed)) break;
  }
  if (wake_slot) {
    // Only the designated successor parks there; if it left meanwhile
    // (timeout), this finds nobody, which is harmless.
    if (lot_.unpark_one(successor_slot(), [this](UnparkResult r) -> std::intptr_t {
              if (r.did_unpark) successor_woken_at_.store(detail::queued_synchronizer::now_ns(), std::memory_order_relaxed);
              return 0;
            }).did_unpark) {
      stats_.record_wake();
    }
  } else if (wake_head) {
    wake_head_claimed();
  }
  return true;
}

// try_release_by_add's add took the count above kMaxPermits (wrapped it
// below 0): subtract it again. While the count was wrapped nobody could
// take from it, so a thread may have queued or gone to sleep in the
// successor slot for that reason alone; release_slow(0, ...) then wakes
// whoever a release would wake. Relaxed: the subtraction publishes
// nothing, and as a read-modify-write it continues the word's release
// sequences.
template <Lot L>
void BasicQueuedSynchronizer<L>::take_back_overshoot(std::int64_t n) noexcept {
  word_.fetch_sub(units(n), std::memory_order_relaxed);
  (void)release_slow(0, kMaxPermits);
}

// kWoken has been claimed by the caller on behalf of the longest-queued
// thread: wake it, or, if nobody is queued any more, give the claim back.
// Under the bucket lock, so that no thread can queue between the lot's
// answer and the bits written here (a queuing thread validates under the
// same lock). Read-modify-writes only: other threads may be changing the
// permits meanwhile.
template <Lot L>
void BasicQueuedSynchronizer<L>::wake_head_claimed() noexcept {
  lot_.unpark_one(this, [this](UnparkResult r) -> std::intptr_t {
    std::uint64_t clear = 0;
    if (r.did_unpark) {
      stats_.record_wake();
      successor_woken_at_.store(detail::queued_synchronizer::now_ns(), std::memory_order_relaxed);
    } else {
      clear |= kWoken;
    }
    if (!r.may_have_more_threads) clear |= kParked;
    if (clear != 0) word_.fetch_and(~clear, std::memory_order_relaxed);
    return 0;
  });
}

// Permits are free, threads are queued and nobody is awake to take them:
// claim kWoken and wake the head (see give_up in acquire_slow).
template <Lot L>
void BasicQueuedSynchronizer<L>::pass_on_if_free() noexcept {
  std::uint64_t w = word_.load(std::memory_order_relaxed);
  while ((w & (kParked | kWoken)) == kParked && permits_of(w) > 0) {
    if (word_.compare_exchange_weak(w, w | kWoken, std::memory_order_relaxed, std::memory_order_relaxed)) {
      wake_head_claimed();
      return;
    }
  }
}

// If the designated successor was woken kLateSuccessorNs ago or more and
// has not run, wakes the next queued thread too, as a newcomer (its token
// says it is not designated), and returns true. Moving the timestamp to now
// with a compare-exchange elects one caller per interval, which bounds these
// wakes by time, not by traffic. kParked is kept exact as in
// wake_head_claimed(); kWoken is not touched: the late successor holds it.
template <Lot L>
bool BasicQueuedSynchronizer<L>::wake_one_more_if_successor_is_late() noexcept {
  namespace tuning = detail::queued_synchronizer;
  std::int64_t t = successor_woken_at_.load(std::memory_order_relaxed);
  if (t == 0) return false;
  const std::int64_t now = tuning::now_ns();
  if (now - t < tuning::kLateSuccessorNs) return false;
  if (!successor_woken_at_.compare_exchange_strong(t, now, std::memory_order_relaxed)) return false;
  lot_.unpark_one(this, [this](UnparkResult r) -> std::intptr_t {
    if (r.did_unpark) stats_.record_wake();
    if (!r.may_have_more_threads) word_.fetch_and(~kParked, std::memory_order_relaxed);
    return tuning::kExtraWakeToken;
  });
  return true;
}

}  // namespace locklab
