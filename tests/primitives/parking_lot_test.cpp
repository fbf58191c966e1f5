#include "primitives/parking_lot.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "tests/eventually.hpp"
#include "tests/primitives/lock_conformance.hpp"

namespace locklab {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using locklab::testing::eventually;

// Waits (bounded) for `finished` to reach `n`; if it never does, threads are
// stuck in the lot for good and cannot be joined: say so and abort (a failed
// test with a message beats a ctest timeout).
void await_finished_or_abort(const std::atomic<int>& finished, int n, const char* what) {
  if (eventually([&] { return finished.load() == n; }, 60s)) return;
  std::fprintf(stderr, "%s: %d of %d threads still parked after 60 s: lost wake-up or stuck bucket lock\n", what,
               n - finished.load(), n);
  std::fflush(stderr);
  std::abort();
}

// A thread that parks once on `address` and reports when it has queued
// (before_sleep runs after the enqueue, so "queued" is exact) and what
// park_if() returned. The deadline bounds every wait: a thread the lot
// forgets returns kTimedOut, which the tests check against.
class ParkedThread {
 public:
  explicit ParkedThread(const void* address, std::function<bool()> validate = [] { return true; },
                        Clock::time_point deadline = Clock::now() + 10s) {
    thread_ = std::jthread([this, address, validate = std::move(validate), deadline] {
      const ParkResult r =
          parking_lot::park_if(address, validate, [this] { queued_.store(true); }, deadline);
      result_ = r;  // published by done_'s release store
      done_.store(true, std::memory_order_release);
    });
  }
  bool wait_queued() { return eventually([this] { return queued_.load(); }); }
  bool wait_done() { return eventually([this] { return done(); }); }
  bool done() const { return done_.load(std::memory_order_acquire); }
  ParkResult result() const {  // Pre: done()
    return result_;
  }

 private:
  std::atomic<bool> queued_{false};
  std::atomic<bool> done_{false};
  ParkResult result_;
  std::jthread thread_;  // last: joined before the flags above are destroyed
};

// Starts one ParkedThread per address, in order, each queued before the
// next starts, so their arrival order is known.
std::vector<std::unique_ptr<ParkedThread>> park_in_order(const std::vector<const void*>& addresses) {
  std::vector<std::unique_ptr<ParkedThread>> ts;
  for (const void* a : addresses) {
    ts.push_back(std::make_unique<ParkedThread>(a));
    EXPECT_TRUE(ts.back()->wait_queued());
  }
  return ts;
}

int count_done(const std::vector<std::unique_ptr<ParkedThread>>& ts) {
  return static_cast<int>(std::count_if(ts.begin(), ts.end(), [](const auto& t) { return t->done(); }));
}

// --- Parker -----------------------------------------------------------------

TEST(ParkerTest, UnparkBeforeParkIsNotLost) {
  Parker p;
  p.unpark();
  // Bounded: a lost permit fails here after 10 s instead of hanging.
  EXPECT_TRUE(p.park_until(Clock::now() + 10s));
}

TEST(ParkerTest, PermitIsOneNotACount) {
  Parker p;
  p.unpark();
  p.unpark();
  EXPECT_TRUE(p.park_until(Clock::now() + 10s));
  EXPECT_FALSE(p.park_until(Clock::now() + 1ms));
}

TEST(ParkerTest, ParkUntilTimesOutWhenNobodyUnparks) {
  Parker p;
  const auto deadline = Clock::now() + 20ms;
  EXPECT_FALSE(p.park_until(deadline));
  EXPECT_GE(Clock::now(), deadline);
  // A deadline already past is one try: no permit, false; a permit, true.
  EXPECT_FALSE(p.park_until(Clock::now() - 1s));
  p.unpark();
  EXPECT_TRUE(p.park_until(Clock::now() - 1s));
}

TEST(ParkerTest, UnparkWakesASleeperAndPublishesItsWrites) {
  Parker& p = this_thread_parker();
  int data = 0;  // plain: under TSan, unpark -> park must order it
  std::jthread unparker([&] {
    std::this_thread::sleep_for(20ms);  // most likely asleep by then (either way is correct)
    data = 42;
    p.unpark();
  });
  ASSERT_TRUE(p.park_until(Clock::now() + 10s));
  EXPECT_EQ(data, 42);
}

TEST(ParkerTest, PermitRacingATimeoutIsNeverLost) {
  // The owner parks with deadlines of 0-20 us, so most unparks land near a
  // timeout; each unpark must be consumed by some later park_until (true),
  // never swallowed by the timeout path. The unparker waits (bounded) for
  // each permit to be consumed before sending the next, so a lost permit
  // stops the run and fails it.
  constexpr int kRounds = 5'000;
  Parker p;
  std::atomic<int> consumed{0};
  std::atomic<bool> stop{false};
  std::jthread owner([&] {
    std::minstd_rand rng(7);
    std::uniform_int_distribution<int> us(0, 20);
    while (!stop.load(std::memory_order_relaxed)) {
      if (p.park_until(Clock::now() + std::chrono::microseconds(us(rng)))) consumed.fetch_add(1);
    }
  });
  std::minstd_rand rng(11);
  // 0-100 us: the owner's timeouts fire 0-20 us after it parks plus up to
  // 50 us of timer slack, so unparks land before, at and after them.
  std::uniform_int_distribution<int> delay_ns(0, 100'000);
  int sent = 0;
  bool lost = false;
  for (; sent < kRounds && !lost; ++sent) {
    // A random phase against the owner's timeouts (busy: a sleep this short
    // would round up to the timer slack).
    const auto until = Clock::now() + std::chrono::nanoseconds(delay_ns(rng));
    while (Clock::now() < until) {
    }
    p.unpark();
    lost = !eventually([&] { return consumed.load() == sent + 1; }, 10s, 0us);
  }
  stop.store(true);
  owner.join();
  EXPECT_FALSE(lost) << "permit " << sent << " was never consumed";
  EXPECT_EQ(consumed.load(), kRounds);
}

// --- ParkingLot: single operations -----------------------------------------

TEST(ParkingLotTest, InvalidParkReturnsAtOnceAndDoesNotEnqueue) {
  int word = 0;
  int validate_calls = 0;
  bool slept = false;
  const ParkResult r = parking_lot::park_if(
      &word,
      [&] {
        ++validate_calls;
        return false;
      },
      [&] { slept = true; }, Clock::now() + 10s);
  EXPECT_EQ(r.status, ParkStatus::kInvalid);
  EXPECT_EQ(r.token, 0);
  EXPECT_EQ(validate_calls, 1);
  EXPECT_FALSE(slept);
  UnparkResult seen{true, true, true};
  const UnparkResult u = parking_lot::unpark_one(&word, [&](UnparkResult x) -> std::intptr_t {
    seen = x;
    return 0;
  });
  EXPECT_FALSE(u.did_unpark);
  EXPECT_FALSE(u.may_have_more_threads);
  EXPECT_FALSE(u.time_to_be_fair);
  // The callback runs (and sees the same result) even when nobody was there:
  // that is where a lock clears a stale "has parked" bit.
  EXPECT_FALSE(seen.did_unpark);
  EXPECT_FALSE(seen.may_have_more_threads);
  EXPECT_FALSE(seen.time_to_be_fair);
}

TEST(ParkingLotTest, ParkTimesOutAndLeavesTheQueue) {
  int word = 0;
  int before_sleep_calls = 0;
  // A deadline already past: queued, before_sleep runs, then kTimedOut.
  ParkResult r = parking_lot::park_if(
      &word, [] { return true; }, [&] { ++before_sleep_calls; }, Clock::now() - 1s);
  EXPECT_EQ(r.status, ParkStatus::kTimedOut);
  EXPECT_EQ(before_sleep_calls, 1);
  EXPECT_FALSE(parking_lot::unpark_one(&word).did_unpark);
  // A real sleep that times out.
  const auto deadline = Clock::now() + 20ms;
  r = parking_lot::park_if(
      &word, [] { return true; }, [] {}, deadline);
  EXPECT_EQ(r.status, ParkStatus::kTimedOut);
  EXPECT_EQ(r.token, 0);
  EXPECT_GE(Clock::now(), deadline);
  EXPECT_FALSE(parking_lot::unpark_one(&word).did_unpark);
  EXPECT_EQ(parking_lot::unpark_all(&word), 0u);
}

TEST(ParkingLotTest, TimedOutWaiterLeavesFromAnyPlaceInTheQueue) {
  // Three threads queue on one address; the one at `pos` has a short
  // deadline and leaves on its own. The other two must still be woken, in
  // order, with exact may_have_more_threads, and nothing may be left.
  for (std::size_t pos = 0; pos < 3; ++pos) {
    SCOPED_TRACE(::testing::Message() << "timed-out waiter at position " << pos);
    int word = 0;
    std::vector<std::unique_ptr<ParkedThread>> ts;
    for (std::size_t i = 0; i < 3; ++i) {
      const auto deadline = Clock::now() + (i == pos ? 20ms : 10s);
      ts.push_back(std::make_unique<ParkedThread>(&word, [] { return true; }, deadline));
      ASSERT_TRUE(ts.back()->wait_queued());
    }
    ASSERT_TRUE(ts[pos]->wait_done());
    EXPECT_EQ(ts[pos]->result().status, ParkStatus::kTimedOut);
    int expected_done = 1;
    for (std::size_t i = 0; i < 3; ++i) {
      if (i == pos) continue;
      ++expected_done;
      const bool last = expected_done == 3;
      const UnparkResult u = parking_lot::unpark_one(&word, [&](UnparkResult) { return 50 + static_cast<int>(i); });
      EXPECT_TRUE(u.did_unpark);
      EXPECT_EQ(u.may_have_more_threads, !last);
      ASSERT_TRUE(eventually([&] { return count_done(ts) == expected_done; }));
      ASSERT_TRUE(ts[i]->done()) << "expected thread " << i << " to wake";
      EXPECT_EQ(ts[i]->result().status, ParkStatus::kUnparked);
      EXPECT_EQ(ts[i]->result().token, 50 + static_cast<int>(i));
    }
    EXPECT_FALSE(parking_lot::unpark_one(&word).did_unpark);
  }
}

TEST(ParkingLotTest, UnparkOneWakesOldestFirstWithItsToken) {
  int word = 0;
  auto ts = park_in_order({&word, &word, &word});
  for (int i = 0; i < 3; ++i) {
    UnparkResult seen;
    const UnparkResult u = parking_lot::unpark_one(&word, [&](UnparkResult x) -> std::intptr_t {
      seen = x;
      return 100 + i;
    });
    EXPECT_TRUE(u.did_unpark);
    // Exact: true while others remain, false for the last.
    EXPECT_EQ(u.may_have_more_threads, i < 2) << "unpark " << i;
    EXPECT_EQ(seen.did_unpark, u.did_unpark);
    EXPECT_EQ(seen.may_have_more_threads, u.may_have_more_threads);
    EXPECT_EQ(seen.time_to_be_fair, u.time_to_be_fair);
    // Exactly one more thread returns, and it is the i-th to have parked.
    ASSERT_TRUE(eventually([&] { return count_done(ts) == i + 1; })) << "unpark " << i << " woke nobody";
    ASSERT_TRUE(ts[static_cast<std::size_t>(i)]->done()) << "unpark " << i << " woke the wrong thread";
    const ParkResult r = ts[static_cast<std::size_t>(i)]->result();
    EXPECT_EQ(r.status, ParkStatus::kUnparked);
    EXPECT_EQ(r.token, 100 + i);
  }
  EXPECT_FALSE(parking_lot::unpark_one(&word).did_unpark);
}

// Two distinct addresses in one bucket (and a third in another), picked by
// pigeonhole from a small arena: any 257 addresses share a bucket somewhere.
struct Addresses {
  const void* a;
  const void* b;  // a != b, same bucket as a
  const void* c;  // another bucket
};

Addresses colliding_addresses() {
  static char arena[1024];
  std::array<int, parking_lot::kBucketCount> first;
  first.fill(-1);
  Addresses out{nullptr, nullptr, nullptr};
  for (int i = 0; i < static_cast<int>(sizeof arena) && out.b == nullptr; ++i) {
    int& seen = first[parking_lot::bucket_index(&arena[i])];
    if (seen >= 0) {
      out.a = &arena[seen];
      out.b = &arena[i];
    } else {
      seen = i;
    }
  }
  for (int i = 0; i < static_cast<int>(sizeof arena) && out.a != nullptr; ++i) {
    if (parking_lot::bucket_index(&arena[i]) != parking_lot::bucket_index(out.a)) {
      out.c = &arena[i];
      break;
    }
  }
  return out;
}

TEST(ParkingLotTest, CollidingAddressesDoNotWakeEachOther) {
  const Addresses x = colliding_addresses();
  ASSERT_NE(x.a, nullptr);
  ASSERT_NE(x.a, x.b);
  ASSERT_EQ(parking_lot::bucket_index(x.a), parking_lot::bucket_index(x.b));
  // Bucket queue, oldest first: A0 B1 A2 B3.
  auto ts = park_in_order({x.a, x.b, x.a, x.b});
  struct Step {
    const void* address;
    std::size_t expect_woken;
    bool expect_more;
  };
  // B first: unpark_one must skip A0 at the head of the bucket. The last A
  // reports no more threads although B3 is still queued behind it in the
  // same bucket: may_have_more_threads is about the address, not the bucket.
  const Step steps[] = {{x.b, 1, true}, {x.a, 0, true}, {x.a, 2, false}, {x.b, 3, false}};
  int woken = 0;
  for (const Step& s : steps) {
    const std::intptr_t token = 1000 + static_cast<std::intptr_t>(s.expect_woken);
    const UnparkResult u = parking_lot::unpark_one(s.address, [&](UnparkResult) { return token; });
    EXPECT_TRUE(u.did_unpark);
    EXPECT_EQ(u.may_have_more_threads, s.expect_more) << "waking " << s.expect_woken;
    ++woken;
    ASSERT_TRUE(eventually([&] { return count_done(ts) == woken; }));
    ASSERT_TRUE(ts[s.expect_woken]->done()) << "expected thread " << s.expect_woken << " to wake";
    EXPECT_EQ(ts[s.expect_woken]->result().status, ParkStatus::kUnparked);
    EXPECT_EQ(ts[s.expect_woken]->result().token, token);
  }
  EXPECT_FALSE(parking_lot::unpark_one(x.a).did_unpark);
  EXPECT_FALSE(parking_lot::unpark_one(x.b).did_unpark);
}

TEST(ParkingLotTest, UnparkAllWakesEveryThreadOnItsAddressOnly) {
  const Addresses x = colliding_addresses();
  ASSERT_NE(x.c, nullptr);
  // a, b share a bucket; c is elsewhere.
  auto ts = park_in_order({x.a, x.b, x.a, x.c, x.b, x.a});
  EXPECT_EQ(parking_lot::unpark_all(x.a), 3u);
  ASSERT_TRUE(eventually([&] { return count_done(ts) == 3; }));
  for (std::size_t i : {0u, 2u, 5u}) {
    ASSERT_TRUE(ts[i]->done()) << "thread " << i << " on a was not woken";
    EXPECT_EQ(ts[i]->result().status, ParkStatus::kUnparked);
    EXPECT_EQ(ts[i]->result().token, 0);
  }
  // Sound, not a timing guess: they have 10 s deadlines and nobody unparked b or c.
  for (std::size_t i : {1u, 3u, 4u}) EXPECT_FALSE(ts[i]->done()) << "thread " << i << " woke with a";
  EXPECT_EQ(parking_lot::unpark_all(x.a), 0u);
  const UnparkResult u = parking_lot::unpark_one(x.b);
  EXPECT_TRUE(u.did_unpark);
  EXPECT_TRUE(u.may_have_more_threads);
  EXPECT_EQ(parking_lot::unpark_all(x.b), 1u);
  EXPECT_EQ(parking_lot::unpark_all(x.c), 1u);
  ASSERT_TRUE(eventually([&] { return count_done(ts) == 6; }));
  for (const auto& t : ts) EXPECT_EQ(t->result().status, ParkStatus::kUnparked);
}

TEST(ParkingLotTest, CallbackRunsUnderTheBucketLockAndValidateSeesItsWrites) {
  std::uint8_t word = 0;
  // The "has parked" state of a toy lock, deliberately plain: validate()
  // reads it and the callback writes it, both under the bucket lock, so
  // under TSan a callback outside the lock is a reported race.
  bool has_parked = true;
  ParkedThread first(&word, [&] { return has_parked; });
  ASSERT_TRUE(first.wait_queued());

  // A second parker starts while the callback is running; its validate()
  // must not run until the callback returns, and then sees has_parked false.
  std::atomic<bool> go{false};
  std::atomic<bool> second_calling{false};
  std::atomic<bool> second_validated{false};
  std::atomic<bool> second_done{false};
  ParkResult second_result;
  std::jthread second([&] {
    if (!eventually([&] { return go.load(); })) return;
    second_calling.store(true);
    second_result = parking_lot::park_if(
        &word,
        [&] {
          second_validated.store(true);
          return has_parked;
        },
        [] {}, Clock::now() + 10s);
    second_done.store(true);
  });

  bool validated_during_callback = false;
  bool second_started = false;
  const UnparkResult u = parking_lot::unpark_one(&word, [&](UnparkResult r) -> std::intptr_t {
    go.store(true);
    second_started = eventually([&] { return second_calling.load(); });
    // Hold the bucket lock a while: a validate() that can run now proves the
    // callback is not under the lock. (A pass cannot be a fluke of timing.)
    std::this_thread::sleep_for(20ms);
    validated_during_callback = second_validated.load();
    has_parked = r.may_have_more_threads;
    return 7;
  });
  EXPECT_TRUE(second_started);
  EXPECT_FALSE(validated_during_callback);
  EXPECT_TRUE(u.did_unpark);
  EXPECT_FALSE(u.may_have_more_threads);
  ASSERT_TRUE(first.wait_done());
  EXPECT_EQ(first.result().status, ParkStatus::kUnparked);
  EXPECT_EQ(first.result().token, 7);
  ASSERT_TRUE(eventually([&] { return second_done.load(); }));
  second.join();
  EXPECT_TRUE(second_validated.load());
  EXPECT_EQ(second_result.status, ParkStatus::kInvalid);
}

TEST(ParkingLotTest, BeforeSleepRunsQueuedAndOutsideTheBucketLock) {
  // before_sleep() unparks its own address: only a thread already queued is
  // found (did_unpark), and only a call outside the bucket lock can take it
  // (under it, this would deadlock; the watchdog turns that into a failure).
  int word = 0;
  std::atomic<int> finished{0};
  UnparkResult from_before_sleep;
  ParkResult r;
  std::jthread t([&] {
    r = parking_lot::park_if(
        &word, [] { return true; },
        [&] { from_before_sleep = parking_lot::unpark_one(&word, [](UnparkResult) { return 5; }); },
        Clock::now() + 10s);
    finished.fetch_add(1);
  });
  await_finished_or_abort(finished, 1, "BeforeSleepRunsQueuedAndOutsideTheBucketLock");
  t.join();
  EXPECT_TRUE(from_before_sleep.did_unpark);
  EXPECT_FALSE(from_before_sleep.may_have_more_threads);
  EXPECT_EQ(r.status, ParkStatus::kUnparked);
  EXPECT_EQ(r.token, 5);
}

TEST(ParkingLotTest, WaiterDequeuedAsItsDeadlinePassesReportsTheUnpark) {
  // The callback keeps the bucket lock until well after the waiter's
  // deadline: the waiter's timeout finds itself already dequeued and must
  // wait for the unpark and return kUnparked with the token, never
  // kTimedOut (the unparker said did_unpark).
  int word = 0;
  const auto deadline = Clock::now() + 50ms;
  ParkedThread t(&word, [] { return true; }, deadline);
  ASSERT_TRUE(t.wait_queued());
  const UnparkResult u = parking_lot::unpark_one(&word, [&](UnparkResult) -> std::intptr_t {
    while (Clock::now() < deadline + 30ms) std::this_thread::sleep_for(1ms);
    return 42;
  });
  EXPECT_TRUE(u.did_unpark);
  ASSERT_TRUE(t.wait_done());
  EXPECT_EQ(t.result().status, ParkStatus::kUnparked);
  EXPECT_EQ(t.result().token, 42);
}

TEST(ParkingLotTest, FairTurnsComeAtMostOncePerIntervalPerBucket) {
  int word = 0;
  constexpr int kRounds = 200;
  // Any earlier fair turn of this bucket is now more than kFairInterval old,
  // so the first unpark below must be fair.
  std::this_thread::sleep_for(2 * parking_lot::kFairInterval);
  std::atomic<int> unparked_seen{0};
  std::jthread parker([&] {
    for (int i = 0; i < kRounds; ++i) {
      const ParkResult r = parking_lot::park_if(
          &word, [] { return true; }, [] {}, Clock::now() + 10s);
      if (r.status != ParkStatus::kUnparked) break;
      unparked_seen.fetch_add(1);
    }
  });
  int unparked = 0;
  int fair = 0;
  bool first_fair = false;
  const auto t0 = Clock::now();
  const auto give_up = t0 + 30s;
  while (unparked < kRounds && Clock::now() < give_up) {
    const UnparkResult u = parking_lot::unpark_one(&word);
    if (!u.did_unpark) {
      EXPECT_FALSE(u.time_to_be_fair);
      std::this_thread::yield();
      continue;
    }
    if (unparked == 0) first_fair = u.time_to_be_fair;
    ++unparked;
    fair += u.time_to_be_fair ? 1 : 0;
  }
  const auto elapsed = Clock::now() - t0;
  parker.join();
  EXPECT_EQ(unparked, kRounds);
  EXPECT_EQ(unparked_seen.load(), kRounds);
  EXPECT_TRUE(first_fair);
  // Fair turns of one bucket are at least kFairInterval apart: an upper
  // bound that holds however slow the machine is.
  const auto max_fair = elapsed / parking_lot::kFairInterval + 1;
  EXPECT_LE(fair, max_fair) << "elapsed " << std::chrono::duration<double, std::milli>(elapsed).count() << " ms";
}

// --- stress -----------------------------------------------------------------

TEST(ParkingLotStress, TimedParksRacingUnparksMatchOneToOne) {
  // 4 parkers x 2000 parks with 0-50 us deadlines, 2 unparkers unparking in
  // a loop (one also calls unpark_all now and then) until the parkers are
  // done. Every dequeue must show up as exactly one kUnparked with its
  // token, and no kUnparked may appear without one.
  constexpr int kParkers = 4;
  constexpr int kParksEach = 2000;
  constexpr int kUnparkers = 2;
  int word = 0;
  std::atomic<int> parkers_done{0};
  struct ParkerLog {
    std::vector<std::intptr_t> tokens;  // kUnparked with a non-zero token
    int unparked_by_all = 0;            // kUnparked with token 0 (unpark_all)
    int timed_out = 0;
    int other = 0;
  };
  struct UnparkerLog {
    std::vector<std::intptr_t> handed;  // tokens of unpark_one calls that dequeued
    std::size_t by_all = 0;             // unpark_all's counts
  };
  std::vector<ParkerLog> parker_logs(kParkers);
  std::vector<UnparkerLog> unparker_logs(kUnparkers);
  std::vector<std::jthread> threads;
  for (int p = 0; p < kParkers; ++p) {
    threads.emplace_back([&, p] {
      ParkerLog& log = parker_logs[static_cast<std::size_t>(p)];
      std::minstd_rand rng(static_cast<unsigned>(p) + 1);
      std::uniform_int_distribution<int> us(0, 50);
      for (int i = 0; i < kParksEach; ++i) {
        const ParkResult r = parking_lot::park_if(
            &word, [] { return true; }, [] {}, Clock::now() + std::chrono::microseconds(us(rng)));
        switch (r.status) {
          case ParkStatus::kUnparked:
            if (r.token != 0) {
              log.tokens.push_back(r.token);
            } else {
              ++log.unparked_by_all;
            }
            break;
          case ParkStatus::kTimedOut:
            ++log.timed_out;
            break;
          case ParkStatus::kInvalid:
            ++log.other;
            break;
        }
      }
      parkers_done.fetch_add(1);
    });
  }
  for (int u = 0; u < kUnparkers; ++u) {
    threads.emplace_back([&, u] {
      UnparkerLog& log = unparker_logs[static_cast<std::size_t>(u)];
      std::intptr_t seq = 0;
      for (int iter = 0; parkers_done.load() < kParkers; ++iter) {
        bool woke = false;
        if (u == 1 && iter % 8 == 7) {
          const std::size_t n = parking_lot::unpark_all(&word);
          log.by_all += n;
          woke = n != 0;
        } else {
          const std::intptr_t token = (static_cast<std::intptr_t>(u + 1) << 32) | ++seq;
          const UnparkResult r = parking_lot::unpark_one(&word, [&](UnparkResult x) -> std::intptr_t {
            return x.did_unpark ? token : 0;
          });
          if (r.did_unpark) log.handed.push_back(token);
          woke = r.did_unpark;
        }
        if (!woke) std::this_thread::yield();  // leave the cores to the parkers
      }
    });
  }
  await_finished_or_abort(parkers_done, kParkers, "TimedParksRacingUnparksMatchOneToOne");
  threads.clear();  // joins the unparkers, which stop once the parkers are done

  std::vector<std::intptr_t> received;
  std::vector<std::intptr_t> handed;
  int unparked_by_all = 0;
  int timed_out = 0;
  for (const ParkerLog& l : parker_logs) {
    received.insert(received.end(), l.tokens.begin(), l.tokens.end());
    unparked_by_all += l.unparked_by_all;
    timed_out += l.timed_out;
    EXPECT_EQ(l.other, 0);
    EXPECT_EQ(static_cast<int>(l.tokens.size()) + l.unparked_by_all + l.timed_out, kParksEach);
  }
  std::size_t by_all = 0;
  for (const UnparkerLog& l : unparker_logs) {
    handed.insert(handed.end(), l.handed.begin(), l.handed.end());
    by_all += l.by_all;
  }
  std::sort(received.begin(), received.end());
  std::sort(handed.begin(), handed.end());
  EXPECT_EQ(received.size(), handed.size()) << "unpark_one dequeues vs kUnparked returns with a token";
  EXPECT_TRUE(received == handed) << "each token must reach exactly one thread";
  EXPECT_EQ(static_cast<std::size_t>(unparked_by_all), by_all) << "unpark_all's count vs its wake-ups";
  EXPECT_FALSE(parking_lot::unpark_one(&word).did_unpark) << "a parker left a node queued";
  std::printf("[          ] %zu woken by unpark_one, %zu by unpark_all, %d timed out\n", handed.size(), by_all,
              timed_out);
}

// --- a lock on the lot ------------------------------------------------------

// The smallest lock the lot makes possible, WebKit-style: one byte, a held
// bit and an exact "has parked" bit, no spinning. A release that finds the
// parked bit unparks one thread and rewrites the word in the callback: free
// (parked bit kept only if may_have_more_threads), or, when it is time to be
// fair, still held, handed to the woken thread through its token.
class ToyMutex {
 public:
  // `park_bound`: if set, a park gives up after this long and counts a
  // timeout (the lost-wake-up detector of the hammer test); the thread
  // then retries, so the lock still works.
  explicit ToyMutex(std::optional<std::chrono::milliseconds> park_bound = std::nullopt) : park_bound_(park_bound) {}

  void lock() {
    std::uint8_t expected = 0;
    if (!word_.compare_exchange_strong(expected, kHeld, std::memory_order_acquire, std::memory_order_relaxed)) {
      lock_slow();
    }
  }
  bool try_lock() {
    std::uint8_t v = word_.load(std::memory_order_relaxed);
    while ((v & kHeld) == 0) {
      if (word_.compare_exchange_weak(v, v | kHeld, std::memory_order_acquire, std::memory_order_relaxed)) return true;
    }
    return false;
  }
  void unlock() {
    std::uint8_t expected = kHeld;
    if (!word_.compare_exchange_strong(expected, 0, std::memory_order_release, std::memory_order_relaxed)) {
      unlock_slow();
    }
  }

  std::uint8_t word() const { return word_.load(); }
  int parks() const { return parks_.load(); }
  int handoffs() const { return handoffs_.load(); }
  int timeouts() const { return timeouts_.load(); }

 private:
  static constexpr std::uint8_t kHeld = 1;
  static constexpr std::uint8_t kParked = 2;
  static constexpr std::intptr_t kHandedOff = 1;

  void lock_slow() {
    for (;;) {
      std::uint8_t v = word_.load(std::memory_order_relaxed);
      if ((v & kHeld) == 0) {
        if (word_.compare_exchange_weak(v, v | kHeld, std::memory_order_acquire, std::memory_order_relaxed)) return;
        continue;
      }
      if ((v & kParked) == 0 &&
          !word_.compare_exchange_weak(v, v | kParked, std::memory_order_relaxed, std::memory_order_relaxed)) {
        continue;
      }
      std::optional<Clock::time_point> deadline;
      if (park_bound_) deadline = Clock::now() + *park_bound_;
      const ParkResult r = parking_lot::park_if(
          &word_, [&] { return word_.load(std::memory_order_relaxed) == (kHeld | kParked); }, [] {}, deadline);
      if (r.status == ParkStatus::kUnparked) parks_.fetch_add(1, std::memory_order_relaxed);
      if (r.status == ParkStatus::kTimedOut) timeouts_.fetch_add(1, std::memory_order_relaxed);
      // Handed off: the releaser left the word held for us, and the lot
      // orders its critical section before our return.
      if (r.status == ParkStatus::kUnparked && r.token == kHandedOff) return;
    }
  }

  void unlock_slow() {
    // The word is held + parked and nobody else can change it meanwhile
    // (it is held, and only this function clears the parked bit), so the
    // callback stores the new word instead of looping on a CAS.
    parking_lot::unpark_one(&word_, [&](UnparkResult r) -> std::intptr_t {
      const std::uint8_t parked = r.may_have_more_threads ? kParked : 0;
      if (r.did_unpark && r.time_to_be_fair) {
        word_.store(kHeld | parked, std::memory_order_relaxed);
        handoffs_.fetch_add(1, std::memory_order_relaxed);
        return kHandedOff;
      }
      // Release: the next owner may take the word by CAS, not via the lot.
      word_.store(parked, std::memory_order_release);
      return 0;
    });
  }

  std::atomic<std::uint8_t> word_{0};
  std::optional<std::chrono::milliseconds> park_bound_;
  std::atomic<int> parks_{0};
  std::atomic<int> handoffs_{0};
  std::atomic<int> timeouts_{0};
};

TEST(ParkingLotToyMutex, HammeredByFourThreadsLosesNoWakeUp) {
  // A lost wake-up leaves a waiter parked with the lock free; with a park
  // bound of 10 s (far above any honest wait here) it shows up as a counted
  // timeout instead of a hang.
  constexpr int kThreads = 4;
  constexpr int kIterations = 20'000;
  ToyMutex lock(10s);
  std::uint64_t counter = 0;  // plain: guarded by `lock`
  std::atomic<int> finished{0};
  std::vector<std::jthread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < kIterations; ++i) {
        lock.lock();
        ++counter;
        // Now and then hold across a sleep, so that waiters really park.
        if ((i + t) % 512 == 0) std::this_thread::sleep_for(50us);
        lock.unlock();
      }
      finished.fetch_add(1);
    });
  }
  await_finished_or_abort(finished, kThreads, "ToyMutex hammer");
  ts.clear();
  EXPECT_EQ(counter, std::uint64_t{kThreads} * kIterations);
  EXPECT_EQ(lock.timeouts(), 0) << "a parked waiter slept 10 s: lost wake-up";
  EXPECT_EQ(lock.word(), 0) << "the last release must leave the word free with no parked bit";
  EXPECT_GT(lock.parks(), 0) << "the test never parked: it tested nothing";
  std::printf("[          ] parks %d, hand-offs %d\n", lock.parks(), lock.handoffs());
}

}  // namespace
}  // namespace locklab

using ParkingLotToyMutexes = ::testing::Types<locklab::ToyMutex>;
INSTANTIATE_TYPED_TEST_SUITE_P(ParkingLotToy, LockConformance, ParkingLotToyMutexes);
