#include "distributed/fencing.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <random>
#include <system_error>
#include <thread>
#include <vector>

#include <future>

#include "distributed/adaptive_lock.hpp"
#include "distributed/fair_lock.hpp"
#include "distributed/lock_lost.hpp"
#include "distributed/pub_sub_lock.hpp"
#include "distributed/spin_lock.hpp"
#include "tests/distributed/redis_test_support.hpp"

namespace locklab::redis::testing {
namespace {

using FencingTest = RedisTest;

FencedSpinLock::Options fast(std::chrono::milliseconds lease = 5s) {
  FencedSpinLock::Options o;
  o.lease = lease;
  o.retry_interval = 5ms;
  return o;
}

// Runs writes[i] (a token) in exactly the order i = 0, 1, 2 ... but each
// from the thread writes[i] was dealt to (i % threads), handing a turn
// counter from thread to thread: a real multi-threaded interleaving whose
// order is known, so the expected verdicts are exact. `write` returns
// whether the resource accepted.
template <class Write>
std::vector<bool> run_in_turns(const std::vector<std::int64_t>& writes, int threads, Write write) {
  std::vector<bool> verdicts(writes.size());
  std::mutex mu;
  std::condition_variable cv;
  std::size_t turn = 0;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (std::size_t i = static_cast<std::size_t>(t); i < writes.size(); i += static_cast<std::size_t>(threads)) {
        {
          std::unique_lock g(mu);
          if (!cv.wait_for(g, 20s, [&] { return turn == i; })) {
            ADD_FAILURE() << "turn " << i << " never came";
            return;
          }
        }
        const bool accepted = write(writes[i], "written-by-" + std::to_string(t) + "-with-" + std::to_string(writes[i]));
        std::lock_guard g(mu);
        verdicts[i] = accepted;
        ++turn;
        cv.notify_all();
      }
    });
  }
  for (auto& w : workers) w.join();
  return verdicts;
}

// What the fencing rule says for a sequence: write i is accepted iff its
// token is above every token before it.
std::vector<bool> expected_verdicts(const std::vector<std::int64_t>& writes) {
  std::vector<bool> v;
  std::int64_t highest = 0;
  for (auto t : writes) {
    v.push_back(t > highest);
    highest = std::max(highest, t);
  }
  return v;
}

// A random sequence of tokens with repeats (stale re-sends) and reorders.
std::vector<std::int64_t> random_writes(std::mt19937& rng, int n) {
  std::vector<std::int64_t> w;
  std::uniform_int_distribution<std::int64_t> token(1, n / 2);
  for (int i = 0; i < n; ++i) w.push_back(token(rng));
  return w;
}

TEST_F(FencingTest, TokensStartAtOneAndIncreaseByOne) {
  FencingTokens tokens(client(), key());
  EXPECT_EQ(tokens.key(), "~{" + key() + "}~fence");
  EXPECT_EQ(tokens.current(), 0);
  EXPECT_EQ(tokens.next(), 1);
  EXPECT_EQ(tokens.next(), 2);
  EXPECT_EQ(tokens.current(), 2);
  EXPECT_THROW(FencingTokens(client(), ""), std::invalid_argument);
}

TEST_F(FencingTest, TheLockTakesItsTokenInTheAcquireRoundTrip) {
  FencedSpinLock lock(client(), key(), fast());
  ASSERT_EQ(lock.try_acquire(0ms), std::optional<std::int64_t>(1));
  lock.unlock();  // loads both scripts
  const auto before = client().round_trips();
  const auto token = lock.try_acquire(0ms);
  EXPECT_EQ(client().round_trips() - before, 1u) << "SET NX + INCR in one script";
  EXPECT_EQ(token, std::optional<std::int64_t>(2));
  EXPECT_EQ(lock.token(), 2);
  EXPECT_EQ(client().command({"GET", lock.fence_key()}).as_string(), "2");
  lock.unlock();
  EXPECT_EQ(client().command({"EXISTS", key()}).as_integer(), 0);
  // Lockable too: the token comes from token().
  {
    std::lock_guard g(lock);
    EXPECT_EQ(lock.token(), 3);
  }
  EXPECT_THROW((void)lock.token(), std::system_error) << "not held any more";
}

TEST_F(FencingTest, AFailedAttemptIssuesNoTokenAndTokensFollowAcquisitionOrder) {
  FencedSpinLock lock(client(), key(), fast());
  // One attempt that fails for certain (another thread holds the lock), so
  // the count below does not depend on the four threads contending: on a
  // loaded machine they may well run one after another.
  {
    std::lock_guard g(lock);  // token 1
    std::thread([&] { EXPECT_FALSE(lock.try_acquire(0ms)); }).join();
  }
  std::vector<std::int64_t> seen;
  std::mutex mu;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        std::lock_guard g(lock);
        std::lock_guard s(mu);
        seen.push_back(lock.token());  // in acquisition order: the lock orders these pushes
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(seen.size(), 40u);
  for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], static_cast<std::int64_t>(i + 2));
  EXPECT_GE(lock.attempts(), 42u) << "41 acquisitions and at least the one failed attempt";
  EXPECT_EQ(FencingTokens(client(), key()).current(), 41) << "a failed attempt took a token";
}

TEST_F(FencingTest, LockOutcomesMatchSpinLock) {
  FencedSpinLock lock(client(), key(), fast(50ms));
  EXPECT_THROW(lock.unlock(), std::system_error);
  ASSERT_TRUE(lock.try_acquire(0ms));
  try {
    (void)lock.try_acquire(10ms);
    FAIL() << "re-lock by the holder";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::resource_deadlock_would_occur);
  }
  std::this_thread::sleep_for(120ms);  // the lease runs out under the holder
  std::thread([&] { ASSERT_TRUE(lock.try_acquire(0ms)); }).join();
  EXPECT_THROW(lock.unlock(), LockLost);
  EXPECT_FALSE(lock.is_held_by_current_thread());
  // Zero and negative waits are one attempt.
  client().command({"SET", key(), "someone-else", "PX", "10000"});
  const auto before = lock.attempts();
  EXPECT_FALSE(lock.try_acquire(0ms));
  EXPECT_FALSE(lock.try_acquire(-5ms));
  EXPECT_EQ(lock.attempts() - before, 2u);
  FencedSpinLock::Options bad;
  bad.lease = 0ms;
  EXPECT_THROW(FencedSpinLock(client(), key(), bad), std::invalid_argument);
  bad = {};
  bad.jitter = -0.1;
  EXPECT_THROW(FencedSpinLock(client(), key(), bad), std::invalid_argument);
  EXPECT_THROW(FencedSpinLock(client(), ""), std::invalid_argument);
}

TEST_F(FencingTest, TheResourceAcceptsOnlyIncreasingTokensAndCountsBoth) {
  FencedResource res(client(), key("resource"));
  EXPECT_EQ(res.read(), std::nullopt);
  EXPECT_TRUE(res.write(3, "a").accepted);
  const FenceVerdict equal = res.write(3, "b");
  EXPECT_FALSE(equal.accepted) << "equal tokens are rejected (strict rule)";
  EXPECT_EQ(equal.highest, 3);
  EXPECT_FALSE(res.write(2, "c").accepted);
  const FenceVerdict later = res.write(7, "d");
  EXPECT_TRUE(later.accepted);
  EXPECT_EQ(later.highest, 7);
  EXPECT_EQ(res.read(), std::optional<std::string>("d"));
  EXPECT_EQ(res.accepted(), 2u);
  EXPECT_EQ(res.rejected(), 2u);
  const auto totals = res.totals();
  EXPECT_EQ(totals.accepted, 2);
  EXPECT_EQ(totals.rejected, 2);
  EXPECT_EQ(totals.highest, 7);
}

TEST_F(FencingTest, ANonTokenIsAnInvalidArgumentAndWritesNothing) {
  FencedResource res(client(), key("resource"));
  ASSERT_TRUE(res.write(1, "kept").accepted);
  EXPECT_THROW(res.write(0, "x"), std::invalid_argument);
  EXPECT_THROW(res.write(-4, "x"), std::invalid_argument);
  EXPECT_EQ(res.read(), std::optional<std::string>("kept"));
  EXPECT_EQ(res.totals().rejected, 0) << "a caller bug is not a fencing rejection";
  LocalFencedResource local;
  EXPECT_THROW(local.write(0, "x"), std::invalid_argument);
  EXPECT_EQ(local.read(), std::nullopt);
  EXPECT_EQ(local.rejected(), 0u);
  EXPECT_THROW(FencedResource(client(), ""), std::invalid_argument);
}

TEST_F(FencingTest, AWrongTypeKeyIsATypedServerError) {
  client().command({"SET", key("resource"), "a string, not a hash"});
  FencedResource res(client(), key("resource"));
  try {
    (void)res.write(1, "x");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::kServer);
    EXPECT_NE(std::string(e.what()).find("WRONGTYPE"), std::string::npos) << e.what();
  }
  EXPECT_EQ(res.accepted() + res.rejected(), 0u);
}

// The core claim, exact: random sequences of tokens (stale re-sends,
// reorders) written from several threads in a known interleaving; every
// verdict, the counts and the final value are what the rule predicts, in
// Redis and in process memory alike.
TEST_F(FencingTest, EveryStaleTokenIsRejectedInRandomizedInterleavingsWithExactCounts) {
  std::mt19937 rng(20240607);
  for (int round = 0; round < 8; ++round) {
    const std::vector<std::int64_t> writes = random_writes(rng, 60);
    const std::vector<bool> expected = expected_verdicts(writes);
    const auto expected_accepted = static_cast<std::uint64_t>(std::count(expected.begin(), expected.end(), true));
    const std::int64_t top = *std::max_element(writes.begin(), writes.end());
    const int threads = 2 + round % 4;

    FencedResource res(client(), key("resource-" + std::to_string(round)));
    const auto redis_verdicts =
        run_in_turns(writes, threads, [&](std::int64_t t, const std::string& v) { return res.write(t, v).accepted; });
    EXPECT_EQ(redis_verdicts, expected) << "round " << round;
    EXPECT_EQ(res.accepted(), expected_accepted);
    EXPECT_EQ(res.rejected(), writes.size() - expected_accepted);
    const auto totals = res.totals();
    EXPECT_EQ(totals.accepted, static_cast<std::int64_t>(expected_accepted));
    EXPECT_EQ(totals.rejected, static_cast<std::int64_t>(writes.size() - expected_accepted));
    EXPECT_EQ(totals.highest, top);
    // The value is the first write that carried the top token.
    const auto first_top = static_cast<std::size_t>(std::find(writes.begin(), writes.end(), top) - writes.begin());
    EXPECT_EQ(res.read(), "written-by-" + std::to_string(first_top % static_cast<std::size_t>(threads)) + "-with-" +
                              std::to_string(top));

    LocalFencedResource local;
    const auto local_verdicts =
        run_in_turns(writes, threads, [&](std::int64_t t, const std::string& v) { return local.write(t, v).accepted; });
    EXPECT_EQ(local_verdicts, expected) << "round " << round;
    EXPECT_EQ(local.accepted(), expected_accepted);
    EXPECT_EQ(local.rejected(), writes.size() - expected_accepted);
    EXPECT_EQ(local.highest(), top);
  }
}

// Free-running writers (no imposed order): whatever order the server saw,
// the accepted tokens form a strictly increasing sequence, each writer's
// re-send of a token it already saw superseded is rejected, nothing is
// lost from the counts, and the top token always wins.
TEST_F(FencingTest, FreeRunningWritersNeverGetAStaleWritePast) {
  FencedResource res(client(), key("resource"));
  LocalFencedResource local;
  constexpr int kThreads = 6;
  constexpr int kPerThread = 40;
  std::vector<std::int64_t> all(kThreads * kPerThread);
  std::iota(all.begin(), all.end(), 1);
  std::shuffle(all.begin(), all.end(), std::mt19937(7));
  std::mutex mu;
  std::vector<std::int64_t> accepted_tokens;
  std::atomic<std::uint64_t> must_reject{0};
  std::atomic<std::uint64_t> rejected_must{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const std::int64_t token = all[static_cast<std::size_t>(t * kPerThread + i)];
        const FenceVerdict v = res.write(token, std::to_string(token));
        (void)local.write(token, std::to_string(token));
        if (v.accepted) {
          std::lock_guard g(mu);
          accepted_tokens.push_back(token);
        } else {
          EXPECT_GE(v.highest, token) << "a rejection names a token at least as high";
          // Re-send a token this thread now knows to be stale: must fail.
          must_reject.fetch_add(1);
          if (!res.write(v.highest, "stale").accepted) rejected_must.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(rejected_must.load(), must_reject.load());
  const auto totals = res.totals();
  const std::int64_t n = kThreads * kPerThread;
  EXPECT_EQ(totals.accepted + totals.rejected, n + static_cast<std::int64_t>(must_reject.load()));
  EXPECT_EQ(static_cast<std::int64_t>(res.accepted()), totals.accepted);
  EXPECT_EQ(static_cast<std::int64_t>(res.rejected()), totals.rejected);
  EXPECT_EQ(totals.highest, n);
  EXPECT_EQ(res.read(), std::to_string(n)) << "the top token always wins";
  EXPECT_EQ(local.accepted() + local.rejected(), static_cast<std::uint64_t>(n));
  EXPECT_EQ(local.highest(), n);
  // No token was accepted twice, and every acceptance was reported.
  std::sort(accepted_tokens.begin(), accepted_tokens.end());
  EXPECT_EQ(std::adjacent_find(accepted_tokens.begin(), accepted_tokens.end()), accepted_tokens.end());
  EXPECT_EQ(static_cast<std::int64_t>(accepted_tokens.size()), totals.accepted);
}

// The scenario fencing exists for, made deterministic by ordering the
// events instead of hoping for them: a holder is paused past its lease, a
// second client acquires (a higher token) and writes, then the first one
// wakes and writes. Its write is rejected every time; the lock alone would
// have let it through.
TEST_F(FencingTest, AHolderPausedPastItsLeaseHasItsWriteRejected) {
  FencedSpinLock lock(client(), key(), fast(40ms));
  FencedResource res(client(), key("resource"));
  constexpr int kRounds = 5;
  for (int round = 0; round < kRounds; ++round) {
    const auto stale = lock.try_acquire(0ms);
    ASSERT_TRUE(stale);
    std::this_thread::sleep_for(80ms);  // the "GC pause": the lease runs out
    std::int64_t fresh = 0;
    std::thread([&] {
      const auto t = lock.try_acquire(2s);
      ASSERT_TRUE(t);
      fresh = *t;
      EXPECT_TRUE(res.write(fresh, "fresh").accepted);
      try {
        lock.unlock();
      } catch (const LockLost&) {
        // A loaded machine may let this 40 ms lease run out too: irrelevant here.
      }
    }).join();
    EXPECT_GT(fresh, *stale);
    const FenceVerdict v = res.write(*stale, "stale");
    EXPECT_FALSE(v.accepted) << "round " << round;
    EXPECT_EQ(v.highest, fresh);
    EXPECT_THROW(lock.unlock(), LockLost);
  }
  EXPECT_EQ(res.read(), std::optional<std::string>("fresh"));
  EXPECT_EQ(res.totals().rejected, kRounds);
  EXPECT_EQ(res.totals().accepted, kRounds);
}

// --- Options::fenced on every lock type -------------------------------------------
//
// One typed suite: the same claims, the same code, for SpinLock, PubSubLock,
// AdaptiveLock and FairLock built with fenced = true.

template <class L>
struct Fenced;
template <>
struct Fenced<SpinLock> {
  static SpinLock::Options options(std::chrono::milliseconds lease, bool fenced = true) {
    SpinLock::Options o;
    o.lease = lease;
    o.retry_interval = 5ms;
    o.fenced = fenced;
    return o;
  }
};
template <>
struct Fenced<PubSubLock> {
  static PubSubLock::Options options(std::chrono::milliseconds lease, bool fenced = true) {
    PubSubLock::Options o;
    o.lease = lease;
    o.fenced = fenced;
    return o;
  }
};
template <>
struct Fenced<AdaptiveLock> {
  static AdaptiveLock::Options options(std::chrono::milliseconds lease, bool fenced = true) {
    AdaptiveLock::Options o;
    o.lease = lease;
    o.fenced = fenced;
    return o;
  }
};
template <>
struct Fenced<FairLock> {
  static FairLock::Options options(std::chrono::milliseconds lease, bool fenced = true) {
    FairLock::Options o;
    o.lease = lease;
    o.fenced = fenced;
    return o;
  }
};

template <class L>
class FencedLockTest : public RedisTest {
 protected:
  static typename L::Options opts(std::chrono::milliseconds lease, bool fenced = true) {
    return Fenced<L>::options(lease, fenced);
  }
};
using FencedLockTypes = ::testing::Types<SpinLock, PubSubLock, AdaptiveLock, FairLock>;
TYPED_TEST_SUITE(FencedLockTest, FencedLockTypes);

TYPED_TEST(FencedLockTest, UncontendedLockAndUnlockAreStillTwoRoundTripsWithTheTokenInTheFirst) {
  TypeParam lock(this->client(), this->key(), this->opts(10s));
  EXPECT_TRUE(lock.fenced());
  EXPECT_EQ(lock.fence_key(), FencingTokens::key_for(this->key()));
  lock.lock();
  lock.unlock();  // loads the scripts
  const auto before = this->client().round_trips();
  lock.lock();
  EXPECT_EQ(this->client().round_trips() - before, 1u) << "the token rides the acquire";
  EXPECT_EQ(lock.token(), 2);
  lock.unlock();
  EXPECT_EQ(this->client().round_trips() - before, 2u);
  EXPECT_EQ(FencingTokens(this->client(), this->key()).current(), 2);
}

TYPED_TEST(FencedLockTest, TheTokenIsReadableOnlyWhileHeldAndOnlyWhenFenced) {
  TypeParam lock(this->client(), this->key(), this->opts(10s));
  expect_not_permitted([&] { (void)lock.token(); }, "token() of a lock nobody holds");
  lock.lock();
  const std::int64_t token = lock.token();
  EXPECT_EQ(token, 1);
  EXPECT_EQ(lock.token(), token) << "reading it costs nothing and changes nothing";
  EXPECT_EQ(FencingTokens(this->client(), this->key()).current(), token);
  std::thread([&] { EXPECT_THROW((void)lock.token(), std::system_error) << "another thread holds nothing"; }).join();
  lock.unlock();
  EXPECT_THROW((void)lock.token(), std::system_error);
  // Unfenced (the default): no token, no counter key; token() says why.
  TypeParam plain(this->client(), this->key("plain"), this->opts(10s, false));
  EXPECT_FALSE(plain.fenced());
  plain.lock();
  EXPECT_THROW((void)plain.token(), std::logic_error);
  plain.unlock();
  EXPECT_EQ(this->client().command({"EXISTS", FencingTokens::key_for(this->key("plain"))}).as_integer(), 0);
}

// Four threads on two Clients (two "processes"), each with its own lock
// object on one name: the tokens, read while held, are 1, 2, 3 ... in
// acquisition order (the lock orders the pushes), every write with them is
// accepted, and FencingTokens::current() is the last one.
TYPED_TEST(FencedLockTest, TokensIncreaseAcrossThreadsAndClientsAndTheCounterAgrees) {
  Client other(this->options());
  TypeParam a(this->client(), this->key(), this->opts(10s));
  TypeParam b(other, this->key(), this->opts(10s));
  FencedResource res(this->client(), this->key("resource"));
  constexpr int kThreads = 4;
  constexpr int kRounds = 8;
  std::mutex mu;
  std::vector<std::int64_t> seen;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      TypeParam& lock = t % 2 == 0 ? a : b;
      for (int i = 0; i < kRounds; ++i) {
        std::lock_guard g(lock);
        const std::int64_t token = lock.token();
        EXPECT_TRUE(res.write(token, std::to_string(token)).accepted) << "a live holder's token is the newest";
        std::lock_guard s(mu);
        seen.push_back(token);
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(kThreads * kRounds));
  for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], static_cast<std::int64_t>(i + 1)) << "at " << i;
  EXPECT_EQ(FencingTokens(this->client(), this->key()).current(), kThreads * kRounds);
  EXPECT_EQ(res.totals().rejected, 0);
  EXPECT_EQ(res.totals().highest, kThreads * kRounds);
}

// The scenario fencing exists for, on every lock type, in a known order: the
// stale holder (one Client) is "paused" past its 60 ms lease; a waiter on
// another Client, already waiting, takes the lock (a higher token) and
// writes; only then does the stale one write: rejected, every round.
TYPED_TEST(FencedLockTest, AStaleHoldersWriteIsRejectedAfterItsLeaseExpiredAndAnotherClientTookTheLock) {
  Client other(this->options());
  TypeParam stale_lock(this->client(), this->key(), this->opts(60ms));
  TypeParam fresh_lock(other, this->key(), this->opts(10s));
  FencedResource res(this->client(), this->key("resource"));
  constexpr int kRounds = 3;
  for (int round = 0; round < kRounds; ++round) {
    ASSERT_TRUE(stale_lock.try_lock_for(5s));
    const std::int64_t stale = stale_lock.token();
    std::promise<std::int64_t> wrote;
    std::thread fresh([&] {
      try {
        if (!fresh_lock.try_lock_for(5s)) {
          wrote.set_value(0);
          return;
        }
        const std::int64_t t = fresh_lock.token();
        EXPECT_TRUE(res.write(t, "fresh").accepted);
        wrote.set_value(t);
        fresh_lock.unlock();
      } catch (...) {
        try {
          wrote.set_exception(std::current_exception());
        } catch (const std::future_error&) {
          ADD_FAILURE() << "the fresh holder's unlock failed (its 10 s lease ran out?)";
        }
      }
    });
    auto f = wrote.get_future();
    ASSERT_EQ(f.wait_for(10s), std::future_status::ready);  // the "pause" lasts until the other wrote
    const std::int64_t fresh_token = f.get();
    fresh.join();
    ASSERT_GT(fresh_token, stale) << "round " << round;
    EXPECT_EQ(FencingTokens(this->client(), this->key()).current(), fresh_token);
    const FenceVerdict v = res.write(stale, "stale");
    EXPECT_FALSE(v.accepted) << "round " << round;
    EXPECT_EQ(v.highest, fresh_token);
    EXPECT_EQ(stale_lock.token(), stale) << "the holder still believes it holds: that is the point";
    EXPECT_THROW(stale_lock.unlock(), LockLost);
  }
  EXPECT_EQ(res.read(), std::optional<std::string>("fresh"));
  EXPECT_EQ(res.totals().rejected, kRounds);
  EXPECT_EQ(res.totals().accepted, kRounds);
}

// SpinLock and AdaptiveLock share a key protocol (SET NX owner), so objects
// of both types may guard one name; their tokens come from the one counter
// of that name and one FencedResource orders them.
TEST_F(FencingTest, LockTypesSharingANameShareItsCounter) {
  SpinLock spin(client(), key(), Fenced<SpinLock>::options(10s));
  AdaptiveLock adaptive(client(), key(), Fenced<AdaptiveLock>::options(10s));
  FencedSpinLock wrapped(client(), key(), fast());
  FencedResource res(client(), key("resource"));
  std::int64_t expected = 0;
  for (int i = 0; i < 3; ++i) {
    for (int which = 0; which < 3; ++which) {
      std::int64_t t = 0;
      if (which == 0) {
        std::lock_guard g(spin);
        t = spin.token();
      } else if (which == 1) {
        std::lock_guard g(adaptive);
        t = adaptive.token();
      } else {
        const auto token = wrapped.try_acquire(1s);
        ASSERT_TRUE(token);
        t = *token;
        wrapped.unlock();
      }
      EXPECT_EQ(t, ++expected);
      EXPECT_TRUE(res.write(t, "v").accepted);
    }
  }
  EXPECT_EQ(FencingTokens(client(), key()).current(), expected);
  EXPECT_TRUE(wrapped.spin_lock().fenced());
}

// Counters that are not numbers (another program's keys under these
// names): typed errors naming the server, not std::invalid_argument.
TEST_F(FencingTest, NonNumericCountersAreTypedProtocolErrors) {
  FencingTokens tokens(client(), key());
  client().command({"SET", FencingTokens::key_for(key()), "seven"});
  expect_error([&] { (void)tokens.current(); }, Error::Kind::kProtocol, {options().endpoint(), "seven"});
  client().command({"HSET", key("resource"), "accepted", "many"});
  FencedResource res(client(), key("resource"));
  expect_error([&] { (void)res.totals(); }, Error::Kind::kProtocol, {options().endpoint(), "many"});
}

TEST_F(FencingTest, RedisDownIsATypedErrorAndCountsNothing) {
  FencedResource res(client(), key("resource"));
  FencedSpinLock lock(client(), key(), fast());
  server().kill();
  EXPECT_THROW(res.write(1, "x"), Error);
  EXPECT_THROW((void)lock.try_acquire(0ms), Error);
  EXPECT_EQ(res.accepted() + res.rejected(), 0u);
  EXPECT_FALSE(lock.is_held_by_current_thread());
}

}  // namespace
}  // namespace locklab::redis::testing
