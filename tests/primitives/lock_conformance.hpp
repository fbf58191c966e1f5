// lock_conformance.hpp — the one conformance suite every lock in locklab
// (and any lock added later, a student's included) is held to.
//
// How to use it for a lock family
// -------------------------------
// In the family's own test file:
//
//   #include "tests/primitives/lock_conformance.hpp"
//   // Optional: promise FIFO order (checked), e.g.
//   template <> struct locklab::testing::LockTraits<locklab::TicketLock> {
//     static constexpr bool fifo = true;
//   };
//   using TicketLocks = ::testing::Types<locklab::TicketLock>;  // an alias: a
//   INSTANTIATE_TYPED_TEST_SUITE_P(Ticket, LockConformance, TicketLocks);  // comma breaks the macro
//
// Write `::testing::Types` with the leading `::`: inside namespace locklab,
// plain `testing` means locklab::testing (this header's namespace). The
// specialisation of LockTraits must be visible before the INSTANTIATE line.
//
// The suite default-constructs `TypeParam`. A lock that needs constructor
// arguments (fair/unfair, a policy) is instantiated through a small
// default-constructible subclass, e.g.
//   struct FairReentrantLock : ReentrantLock { FairReentrantLock() : ReentrantLock(Fairness::kFair) {} };
// and LockTraits is specialised for that subclass.
//
// What it checks (each check is a plain function returning CheckResult, so a
// test can also run it on a lock that *should* fail: broken_lock_test.cpp)
// ----------------------------------------------------------------------
// - check_mutual_exclusion: N threads (default 8, above this lab's 2 cores)
//   x up to M iterations increment a non-atomic counter and keep a two-field
//   invariant (a == b on entry, both incremented inside); the final counter
//   must equal the number of completed critical sections and no thread may
//   ever see a != b. Iterations stop early at a time budget so a spin lock
//   that hands off through the scheduler still finishes; the count of
//   completed sections is what is checked, so stopping early weakens nothing.
// - check_try_lock_does_not_block: while another thread holds the lock,
//   try_lock() returns false, many times, without waiting for the holder
//   (the holder lets go only when the tries are done or after a generous
//   budget; a try_lock that returned only then blocked). After the release a
//   try_lock succeeds.
// - check_timed_try_times_out (TimedLockable only): try_lock_for(d) and
//   try_lock_until(t) on a held lock return false no EARLIER than asked
//   (the upper bound is not asserted: a loaded CI machine may be late).
// - check_timed_try_succeeds_when_freed: a long try_lock_for returns true
//   once the holder releases.
// - check_timed_try_zero_or_negative: zero and negative durations (and a
//   deadline in the past) are a single try: false at once on a held lock,
//   true on a free one, like Java's tryLock(0, unit).
// - check_no_lost_wakeups: many waiters, repeated hand-offs, a holder that
//   sometimes sleeps inside the lock so that parking locks really park; every
//   waiter must leave lock() within a generous bound (a hang detector, not a
//   speed assert).
// - check_fifo_order (only if LockTraits<L>::fifo): threads that queue in a
//   known order acquire in that order. If the lock has queue_length(), the
//   check waits until each thread is counted as queued (deterministic);
//   otherwise it lets each thread settle for a while and retries, passing if
//   any round is in order (a barging lock orders 5 threads right by chance
//   with probability 1/120 per round).
// - check_std_wrappers: std::lock_guard, std::unique_lock (try_to_lock and,
//   for timed locks, a timeout) and std::scoped_lock of two locks work.
// - check_uncontended_path_records_nothing (locks with stats()): one thread
//   locking and unlocking records no contended acquire, spin, park or wake
//   (the house rule: statistics only on slow paths).
//
// Thread sanitizer
// ----------------
// The protected data are deliberately plain (non-atomic) variables: under
// TSan a lock that fails to create happens-before between unlock and the
// next lock is reported as a data race even if the counts happen to add up.
//
// Timing
// ------
// No check asserts speed. Every wait has a bound (seconds), so a broken lock
// makes a check fail instead of hanging the test run. One exception: if
// check_no_lost_wakeups times out and the caller gave no `rescue`, threads
// are stuck in lock() forever and cannot be joined; the check then prints its
// diagnosis and aborts the process (a failed test with a message beats a
// ctest timeout without one).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "primitives/cpu_relax.hpp"
#include "tests/eventually.hpp"

namespace locklab::testing {

// Per-family promises the suite checks. Specialise for your lock.
template <class L>
struct LockTraits {
  // Acquisition in arrival order (ticket, MCS, a fair ReentrantLock).
  static constexpr bool fifo = false;
};

template <class L>
concept TimedLockable = requires(L& l, std::chrono::milliseconds d, std::chrono::steady_clock::time_point t) {
  { l.try_lock_for(d) } -> std::convertible_to<bool>;
  { l.try_lock_until(t) } -> std::convertible_to<bool>;
};

template <class L>
concept HasQueueLength = requires(const L& l) {
  { l.queue_length() } -> std::convertible_to<std::int64_t>;
};

template <class L>
concept HasStats = requires(const L& l) {
  l.stats().contended_acquires;
  l.stats().spins;
  l.stats().parks;
  l.stats().wakes;
};

// The outcome of one check: ok, or not ok with a message saying what went wrong.
struct CheckResult {
  bool ok = true;
  std::string message;

  static CheckResult pass() { return {}; }
  static CheckResult fail(std::string why) { return {false, std::move(why)}; }
};

// Usable as `ASSERT_TRUE(r.ok) << r.message` or `EXPECT_PRED_FORMAT1(...)`;
// this overload lets GoogleTest print a CheckResult in messages.
inline std::ostream& operator<<(std::ostream& os, const CheckResult& r) {
  return os << (r.ok ? "ok" : "FAILED: ") << r.message;
}

using Clock = std::chrono::steady_clock;

namespace detail {

inline void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// Polls `done` until it is true or `deadline` passes (tests/eventually.hpp).
template <class Pred>
bool wait_until(Pred done, Clock::time_point deadline) {
  return eventually(done, std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()));
}

// A thread that takes the lock, reports it, and keeps it until release() or
// until `max_hold` has passed (so a check whose probe blocks cannot hang).
template <class L>
class Holder {
 public:
  Holder(L& lock, std::chrono::milliseconds max_hold) : lock_(lock) {
    thread_ = std::thread([this, max_hold] {
      lock_.lock();
      held_.store(true, std::memory_order_release);
      const auto deadline = Clock::now() + max_hold;
      wait_until([this] { return release_.load(std::memory_order_acquire); }, deadline);
      released_by_timeout_.store(!release_.load(std::memory_order_acquire), std::memory_order_relaxed);
      lock_.unlock();
      done_.store(true, std::memory_order_release);
    });
  }
  Holder(const Holder&) = delete;
  Holder& operator=(const Holder&) = delete;
  ~Holder() { join(); }

  // Waits (bounded) until the holder has the lock; false if it never got it.
  bool wait_held(std::chrono::seconds bound = std::chrono::seconds(10)) {
    return wait_until([this] { return held_.load(std::memory_order_acquire); }, Clock::now() + bound);
  }
  // True while the holder still has the lock (it has not been told to go and
  // its max_hold has not run out).
  bool still_holding() const { return !done_.load(std::memory_order_acquire) && !released_by_timeout_.load(); }
  void release() { release_.store(true, std::memory_order_release); }
  void join() {
    release();
    if (thread_.joinable()) thread_.join();
  }
  bool released_by_timeout() const { return released_by_timeout_.load(std::memory_order_relaxed); }

 private:
  L& lock_;
  std::atomic<bool> held_{false};
  std::atomic<bool> release_{false};
  std::atomic<bool> done_{false};
  std::atomic<bool> released_by_timeout_{false};
  std::thread thread_;
};

template <class Rep, class Period>
std::string ms(std::chrono::duration<Rep, Period> d) {
  std::ostringstream os;
  os << std::chrono::duration<double, std::milli>(d).count() << " ms";
  return os.str();
}

}  // namespace detail

// ---------------------------------------------------------------------------
// Mutual exclusion
// ---------------------------------------------------------------------------
struct MutualExclusionOptions {
  int threads = 8;
  int iterations = 20'000;                  // per thread, at most
  std::chrono::milliseconds budget{1'000};  // stop early after this (see essay)
};

template <class L>
CheckResult check_mutual_exclusion(L& lock, const MutualExclusionOptions& o = {}) {
  // Guarded by `lock`; deliberately not atomic.
  std::uint64_t counter = 0;
  struct Pair {
    std::int64_t a = 0;
    std::int64_t b = 0;
  } pair;
  std::atomic<std::uint64_t> invariant_breaks{0};
  std::atomic<bool> stop{false};
  std::atomic<int> finished{0};
  std::vector<std::uint64_t> done_per_thread(static_cast<std::size_t>(o.threads), 0);
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < o.threads; ++t) {
      threads.emplace_back([&, t] {
        std::uint64_t n = 0;
        for (int i = 0; i < o.iterations && !stop.load(std::memory_order_relaxed); ++i) {
          lock.lock();
          // Read-modify-write in separate steps, kept apart by compiler-only
          // fences, so an overlap of two critical sections shows up as a
          // lost update or a broken pair rather than being hidden by an
          // accidentally atomic single instruction.
          const std::uint64_t seen = counter;
          if (pair.a != pair.b) invariant_breaks.fetch_add(1, std::memory_order_relaxed);
          pair.a = pair.a + 1;
          std::atomic_signal_fence(std::memory_order_seq_cst);
          pair.b = pair.b + 1;
          std::atomic_signal_fence(std::memory_order_seq_cst);
          counter = seen + 1;
          lock.unlock();
          ++n;
        }
        done_per_thread[static_cast<std::size_t>(t)] = n;
        finished.fetch_add(1, std::memory_order_release);
      });
    }
    const auto deadline = Clock::now() + o.budget;
    detail::wait_until([&] { return finished.load(std::memory_order_acquire) == o.threads; }, deadline);
    stop.store(true, std::memory_order_relaxed);
  }  // join
  std::uint64_t expected = 0;
  for (auto n : done_per_thread) expected += n;
  std::ostringstream why;
  if (counter != expected) {
    why << "lost updates: counter " << counter << " after " << expected << " critical sections by " << o.threads
        << " threads; ";
  }
  if (invariant_breaks.load() != 0) {
    why << invariant_breaks.load() << " critical sections saw the pair invariant broken (a != b); ";
  }
  if (pair.a != pair.b || static_cast<std::uint64_t>(pair.a) != expected) {
    why << "final pair (" << pair.a << ", " << pair.b << ") != " << expected << "; ";
  }
  const std::string s = why.str();
  return s.empty() ? CheckResult::pass() : CheckResult::fail("mutual exclusion violated: " + s);
}

// ---------------------------------------------------------------------------
// try_lock never blocks
// ---------------------------------------------------------------------------
struct TryLockOptions {
  int tries = 1'000;
  // The holder gives up the lock after this at the latest; a try_lock that
  // only returned then was blocking. Generous: it is not a speed limit.
  std::chrono::milliseconds max_hold{5'000};
};

template <class L>
CheckResult check_try_lock_does_not_block(L& lock, const TryLockOptions& o = {}) {
  int acquired_while_held = 0;
  bool holder_timed_out = false;
  {
    detail::Holder<L> holder(lock, o.max_hold);
    if (!holder.wait_held()) return CheckResult::fail("try_lock check: the holder never got the lock");
    for (int i = 0; i < o.tries; ++i) {
      if (lock.try_lock()) {
        // Only an error if the holder still held it (otherwise it timed out).
        if (holder.still_holding()) ++acquired_while_held;
        lock.unlock();
        break;
      }
    }
    holder_timed_out = !holder.still_holding();
    holder.release();
    holder.join();
    holder_timed_out = holder_timed_out && holder.released_by_timeout();
  }
  if (acquired_while_held != 0) return CheckResult::fail("try_lock succeeded while another thread held the lock");
  if (holder_timed_out) {
    return CheckResult::fail("try_lock blocked: " + std::to_string(o.tries) + " tries did not finish before the holder's " +
                             detail::ms(o.max_hold) + " hold ran out");
  }
  // Free now: a try must succeed (bounded retries, for locks that allow a
  // spurious failure like std::mutex).
  for (int i = 0; i < 1'000; ++i) {
    if (lock.try_lock()) {
      lock.unlock();
      return CheckResult::pass();
    }
    std::this_thread::yield();
  }
  return CheckResult::fail("try_lock never succeeded on a free lock (1000 tries)");
}

// ---------------------------------------------------------------------------
// Timed tries (TimedLockable only)
// ---------------------------------------------------------------------------
struct TimedTryOptions {
  std::chrono::milliseconds wait{30};        // what the timed tries ask for
  std::chrono::milliseconds max_hold{10'000};  // holder's upper bound (hang guard)
};

template <TimedLockable L>
CheckResult check_timed_try_times_out(L& lock, const TimedTryOptions& o = {}) {
  detail::Holder<L> holder(lock, o.max_hold);
  if (!holder.wait_held()) return CheckResult::fail("timed try check: the holder never got the lock");
  std::ostringstream why;
  {
    const auto t0 = Clock::now();
    const bool got = lock.try_lock_for(o.wait);
    const auto took = Clock::now() - t0;
    if (got) {
      if (holder.still_holding()) why << "try_lock_for succeeded while another thread held the lock; ";
      lock.unlock();
    } else if (took < o.wait) {
      why << "try_lock_for(" << detail::ms(o.wait) << ") gave up early, after " << detail::ms(took) << "; ";
    }
  }
  {
    const auto deadline = Clock::now() + o.wait;
    const bool got = lock.try_lock_until(deadline);
    const auto now = Clock::now();
    if (got) {
      if (holder.still_holding()) why << "try_lock_until succeeded while another thread held the lock; ";
      lock.unlock();
    } else if (now < deadline) {
      why << "try_lock_until gave up " << detail::ms(deadline - now) << " before its deadline; ";
    }
  }
  holder.join();
  const std::string s = why.str();
  return s.empty() ? CheckResult::pass() : CheckResult::fail("timed try: " + s);
}

template <TimedLockable L>
CheckResult check_timed_try_succeeds_when_freed(L& lock, const TimedTryOptions& o = {}) {
  detail::Holder<L> holder(lock, o.max_hold);
  if (!holder.wait_held()) return CheckResult::fail("timed try check: the holder never got the lock");
  std::atomic<bool> started{false};
  std::atomic<int> outcome{-1};  // -1 running, 0 false, 1 true
  std::jthread waiter([&] {
    started.store(true, std::memory_order_release);
    const bool got = lock.try_lock_for(o.max_hold * 2);
    if (got) lock.unlock();
    outcome.store(got ? 1 : 0, std::memory_order_release);
  });
  detail::wait_until([&] { return started.load(std::memory_order_acquire); }, Clock::now() + std::chrono::seconds(10));
  detail::sleep_ms(static_cast<int>(o.wait.count()));  // let it wait (and park) first
  if (outcome.load(std::memory_order_acquire) != -1) {
    holder.join();
    waiter.join();
    return CheckResult::fail("try_lock_for returned while another thread held the lock");
  }
  holder.release();
  holder.join();
  waiter.join();  // bounded by the waiter's own timeout
  if (outcome.load() != 1) {
    return CheckResult::fail("try_lock_for(" + detail::ms(o.max_hold * 2) +
                             ") did not succeed after the holder released the lock");
  }
  return CheckResult::pass();
}

template <TimedLockable L>
CheckResult check_timed_try_zero_or_negative(L& lock, const TimedTryOptions& o = {}) {
  using namespace std::chrono_literals;
  std::ostringstream why;
  // Free lock, one thread: a single try must succeed.
  if (lock.try_lock_for(0ms)) lock.unlock(); else why << "try_lock_for(0) failed on a free lock; ";
  if (lock.try_lock_for(-5ms)) lock.unlock(); else why << "try_lock_for(-5ms) failed on a free lock; ";
  if (lock.try_lock_until(Clock::now() - 1s)) lock.unlock(); else why << "try_lock_until(past) failed on a free lock; ";
  {
    detail::Holder<L> holder(lock, o.max_hold);
    if (!holder.wait_held()) return CheckResult::fail("timed try check: the holder never got the lock");
    auto probe = [&](const char* what, auto&& attempt) {
      const bool got = attempt();
      if (got) {
        if (holder.still_holding()) why << what << " succeeded on a held lock; ";
        lock.unlock();
      }
    };
    for (int i = 0; i < 100; ++i) {
      probe("try_lock_for(0)", [&] { return lock.try_lock_for(0ms); });
      probe("try_lock_for(-5ms)", [&] { return lock.try_lock_for(-5ms); });
      probe("try_lock_until(past)", [&] { return lock.try_lock_until(Clock::now() - 1s); });
    }
    if (!holder.still_holding() && holder.released_by_timeout()) {
      why << "300 zero/negative tries did not finish within the holder's " << detail::ms(o.max_hold)
          << ": they block; ";
    }
    holder.join();
  }
  const std::string s = why.str();
  return s.empty() ? CheckResult::pass() : CheckResult::fail("zero/negative timeout: " + s);
}

// ---------------------------------------------------------------------------
// No lost wake-ups
// ---------------------------------------------------------------------------
struct WakeupOptions {
  int threads = 8;
  int handoffs = 2'000;                     // per thread, at most
  std::chrono::milliseconds budget{1'000};  // stop new acquires after this
  // Every `sleep_every`-th critical section sleeps `sleep_us` while holding,
  // longer than any spin phase, so parking locks park.
  int sleep_every = 16;
  int sleep_us = 200;
  // After `budget`, every thread must leave lock() within this: the hang
  // detector.
  std::chrono::milliseconds timeout{30'000};
  // Called if the detector fires; must unstick the waiters (a broken test
  // lock can); without it the check aborts the process (see the essay).
  std::function<void()> rescue;
};

template <class L>
CheckResult check_no_lost_wakeups(L& lock, const WakeupOptions& o = {}) {
  std::atomic<bool> stop{false};
  std::atomic<int> finished{0};
  std::atomic<std::uint64_t> total{0};
  std::uint64_t guarded = 0;  // plain, guarded by `lock`
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t) {
    threads.emplace_back([&, t] {
      std::uint64_t n = 0;
      for (int i = 0; i < o.handoffs && !stop.load(std::memory_order_relaxed); ++i) {
        lock.lock();
        ++guarded;
        if ((i + t) % o.sleep_every == 0) std::this_thread::sleep_for(std::chrono::microseconds(o.sleep_us));
        lock.unlock();
        ++n;
      }
      total.fetch_add(n, std::memory_order_relaxed);
      finished.fetch_add(1, std::memory_order_release);
    });
  }
  auto all_done = [&] { return finished.load(std::memory_order_acquire) == o.threads; };
  detail::wait_until(all_done, Clock::now() + o.budget);
  stop.store(true, std::memory_order_relaxed);
  const bool ok = detail::wait_until(all_done, Clock::now() + o.timeout);
  std::string message;
  if (!ok) {
    message = "lost wake-up: " + std::to_string(o.threads - finished.load()) + " of " + std::to_string(o.threads) +
              " threads still inside lock() " + detail::ms(o.timeout) + " after the last hand-off was due";
    if (!o.rescue) {
      std::fprintf(stderr, "check_no_lost_wakeups: %s; no rescue given, aborting\n", message.c_str());
      std::fflush(stderr);
      std::abort();
    }
    o.rescue();
  }
  for (auto& th : threads) th.join();
  if (!ok) return CheckResult::fail(message);
  if (guarded != total.load()) {
    return CheckResult::fail("no-lost-wakeups run lost updates: " + std::to_string(guarded) + " != " +
                             std::to_string(total.load()));
  }
  return CheckResult::pass();
}

// ---------------------------------------------------------------------------
// FIFO order
// ---------------------------------------------------------------------------
struct FifoOptions {
  int waiters = 5;
  int rounds = 3;
  std::chrono::milliseconds settle{20};  // without queue_length(): time to queue
};

template <class L>
CheckResult check_fifo_order(L& lock, const FifoOptions& o = {}) {
  constexpr bool deterministic = HasQueueLength<L>;
  std::string last_failure;
  int rounds_in_order = 0;
  for (int round = 0; round < o.rounds; ++round) {
    std::vector<int> order;  // guarded by `lock`
    std::vector<std::thread> threads;
    lock.lock();
    bool queued_ok = true;
    for (int i = 0; i < o.waiters; ++i) {
      threads.emplace_back([&, i] {
        lock.lock();
        order.push_back(i);
        lock.unlock();
      });
      if constexpr (deterministic) {
        queued_ok = queued_ok && detail::wait_until([&] { return static_cast<std::int64_t>(lock.queue_length()) >= i + 1; },
                                                    Clock::now() + std::chrono::seconds(10));
      } else {
        std::this_thread::sleep_for(o.settle * (round + 1));
      }
    }
    lock.unlock();
    for (auto& t : threads) t.join();
    std::vector<int> expected(static_cast<std::size_t>(o.waiters));
    for (int i = 0; i < o.waiters; ++i) expected[static_cast<std::size_t>(i)] = i;
    if (!queued_ok) {
      last_failure = "queue_length() never counted every queued thread";
    } else if (order == expected) {
      ++rounds_in_order;
      continue;
    } else {
      std::ostringstream os;
      os << "acquired in order";
      for (int x : order) os << ' ' << x;
      os << " after queuing in order 0.." << o.waiters - 1;
      last_failure = os.str();
    }
    if (deterministic) break;  // one misordering is proof enough
  }
  const bool ok = deterministic ? rounds_in_order == o.rounds : rounds_in_order > 0;
  return ok ? CheckResult::pass() : CheckResult::fail("FIFO order violated: " + last_failure);
}

// ---------------------------------------------------------------------------
// Standard wrappers
// ---------------------------------------------------------------------------
template <class L>
CheckResult check_std_wrappers() {
  std::ostringstream why;
  L a;
  L b;
  {
    std::lock_guard guard(a);
  }
  {
    std::scoped_lock both(a, b);
  }
  {
    std::unique_lock ul(a);
    if (!ul.owns_lock()) why << "unique_lock does not own after construction; ";
    ul.unlock();
    if (!ul.try_lock()) why << "unique_lock::try_lock failed on a free lock; ";
  }
  {
    detail::Holder<L> holder(a, std::chrono::milliseconds(10'000));
    if (!holder.wait_held()) return CheckResult::fail("wrapper check: the holder never got the lock");
    std::unique_lock ul(a, std::try_to_lock);
    if (ul.owns_lock() && holder.still_holding()) why << "unique_lock(try_to_lock) owned a held lock; ";
    if constexpr (TimedLockable<L>) {
      std::unique_lock timed(b, std::chrono::milliseconds(1));  // b is free
      if (!timed.owns_lock()) why << "unique_lock(timeout) failed on a free lock; ";
    }
    if (ul.owns_lock()) ul.unlock();
    holder.join();
  }
  {
    // scoped_lock's deadlock avoidance uses try_lock on the second lock.
    std::vector<std::jthread> threads;
    std::uint64_t n = 0;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 200; ++i) {
          if (t % 2 == 0) {
            std::scoped_lock g(a, b);
            ++n;
          } else {
            std::scoped_lock g(b, a);
            ++n;
          }
        }
      });
    }
    threads.clear();
    if (n != 800) why << "scoped_lock(a, b) from 4 threads counted " << n << " of 800; ";
  }
  const std::string s = why.str();
  return s.empty() ? CheckResult::pass() : CheckResult::fail("std wrappers: " + s);
}

// ---------------------------------------------------------------------------
// Statistics only on slow paths
// ---------------------------------------------------------------------------
template <class L>
CheckResult check_uncontended_path_records_nothing(L& lock) {
  if constexpr (HasStats<L>) {
    const auto before = lock.stats();
    for (int i = 0; i < 1'000; ++i) {
      lock.lock();
      lock.unlock();
      if (lock.try_lock()) lock.unlock();
    }
    const auto after = lock.stats();
    if (after.contended_acquires != before.contended_acquires || after.spins != before.spins ||
        after.parks != before.parks || after.wakes != before.wakes) {
      return CheckResult::fail("uncontended lock/unlock recorded statistics (contended " +
                               std::to_string(after.contended_acquires - before.contended_acquires) + ", spins " +
                               std::to_string(after.spins - before.spins) + ", parks " +
                               std::to_string(after.parks - before.parks) + ", wakes " +
                               std::to_string(after.wakes - before.wakes) + ")");
    }
  }
  return CheckResult::pass();
}

// What contend_until_stats_show_it did: acquisitions counted inside the
// lock (a plain integer, so lost updates show) and by the threads themselves.
struct ContentionRun {
  std::uint64_t guarded = 0;
  std::uint64_t made = 0;
};

// 4 threads acquire the lock in a loop (holding ~2 us every 8th time, so
// others find it held) until the lock's stats show a contended acquire, or
// 20 s have passed. Time-bounded rather than count-bounded: on a loaded
// machine a short burst per thread may never overlap with the others.
// The ContentionIsCountedInStats check of the suite.
template <class L>
ContentionRun contend_until_stats_show_it(L& lock) {
  ContentionRun run;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> made{0};
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        std::uint64_t mine = 0;
        while (!stop.load(std::memory_order_relaxed)) {
          lock.lock();
          ++run.guarded;
          if (mine % 8 == 0)
            for (int k = 0; k < 100; ++k) cpu_relax();
          lock.unlock();
          ++mine;
        }
        made.fetch_add(mine);
      });
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (lock.stats().contended_acquires == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    stop.store(true, std::memory_order_relaxed);
  }
  run.made = made.load();
  return run;
}

}  // namespace locklab::testing

// ---------------------------------------------------------------------------
// The typed suite. Instantiate with
//   using MyLocks = ::testing::Types<A, B>;
//   INSTANTIATE_TYPED_TEST_SUITE_P(<Prefix>, LockConformance, MyLocks);
// ---------------------------------------------------------------------------
template <class L>
class LockConformance : public ::testing::Test {};

TYPED_TEST_SUITE_P(LockConformance);

TYPED_TEST_P(LockConformance, MutualExclusion) {
  TypeParam lock;
  const auto r = locklab::testing::check_mutual_exclusion(lock);
  EXPECT_TRUE(r.ok) << r.message;
}

TYPED_TEST_P(LockConformance, TryLockDoesNotBlock) {
  TypeParam lock;
  const auto r = locklab::testing::check_try_lock_does_not_block(lock);
  EXPECT_TRUE(r.ok) << r.message;
}

TYPED_TEST_P(LockConformance, TimedTryTimesOutNoEarlierThanAsked) {
  if constexpr (locklab::testing::TimedLockable<TypeParam>) {
    TypeParam lock;
    const auto r = locklab::testing::check_timed_try_times_out(lock);
    EXPECT_TRUE(r.ok) << r.message;
  } else {
    GTEST_SKIP() << "not TimedLockable";
  }
}

TYPED_TEST_P(LockConformance, TimedTrySucceedsWhenFreed) {
  if constexpr (locklab::testing::TimedLockable<TypeParam>) {
    TypeParam lock;
    const auto r = locklab::testing::check_timed_try_succeeds_when_freed(lock);
    EXPECT_TRUE(r.ok) << r.message;
  } else {
    GTEST_SKIP() << "not TimedLockable";
  }
}

TYPED_TEST_P(LockConformance, TimedTryZeroOrNegativeIsOneTry) {
  if constexpr (locklab::testing::TimedLockable<TypeParam>) {
    TypeParam lock;
    const auto r = locklab::testing::check_timed_try_zero_or_negative(lock);
    EXPECT_TRUE(r.ok) << r.message;
  } else {
    GTEST_SKIP() << "not TimedLockable";
  }
}

TYPED_TEST_P(LockConformance, NoLostWakeups) {
  TypeParam lock;
  const auto r = locklab::testing::check_no_lost_wakeups(lock);
  EXPECT_TRUE(r.ok) << r.message;
}

TYPED_TEST_P(LockConformance, FifoOrderIfPromised) {
  if constexpr (locklab::testing::LockTraits<TypeParam>::fifo) {
    TypeParam lock;
    const auto r = locklab::testing::check_fifo_order(lock);
    EXPECT_TRUE(r.ok) << r.message;
  } else {
    GTEST_SKIP() << "LockTraits<L>::fifo is false: no order promised";
  }
}

TYPED_TEST_P(LockConformance, WorksWithStdWrappers) {
  const auto r = locklab::testing::check_std_wrappers<TypeParam>();
  EXPECT_TRUE(r.ok) << r.message;
}

TYPED_TEST_P(LockConformance, UncontendedPathRecordsNoStats) {
  if constexpr (locklab::testing::HasStats<TypeParam>) {
    TypeParam lock;
    const auto r = locklab::testing::check_uncontended_path_records_nothing(lock);
    EXPECT_TRUE(r.ok) << r.message;
  } else {
    GTEST_SKIP() << "no stats()";
  }
}

TYPED_TEST_P(LockConformance, ContentionIsCountedInStats) {
  if constexpr (locklab::testing::HasStats<TypeParam>) {
    TypeParam lock;
    const auto run = locklab::testing::contend_until_stats_show_it(lock);
    EXPECT_EQ(run.guarded, run.made) << "lost updates inside the lock";
    EXPECT_GT(lock.stats().contended_acquires, 0) << "4 threads for up to 20 s never recorded a contended acquire";
  } else {
    GTEST_SKIP() << "no stats()";
  }
}

REGISTER_TYPED_TEST_SUITE_P(LockConformance, MutualExclusion, TryLockDoesNotBlock, TimedTryTimesOutNoEarlierThanAsked,
                            TimedTrySucceedsWhenFreed, TimedTryZeroOrNegativeIsOneTry, NoLostWakeups,
                            FifoOrderIfPromised, WorksWithStdWrappers, UncontendedPathRecordsNoStats,
                            ContentionIsCountedInStats);
