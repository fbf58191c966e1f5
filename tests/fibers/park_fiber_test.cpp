// Tests for fibers/park_fiber.hpp: the fiber lot keeps the ParkingLot's
// contracts (validation under the lock, FIFO per address, an exact "more
// waiters" answer, tokens, timed waits that leave the queue) while the
// waiting fiber's carrier keeps running other fibers. All on one plain
// thread's default scheduler, so the order of events is deterministic.
#include "fibers/park_fiber.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include <boost/fiber/fiber.hpp>
#include <boost/fiber/operations.hpp>

namespace locklab::fibers {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

static_assert(Lot<ParkFiber>);

// Two distinct addresses a synchronizer might park on.
const int kWord = 0;
const int kSlot = 0;

// Runs fibers on this thread until `done` holds, at most `bound` yields.
template <class Done>
bool yield_until(Done done, int bound = 10000) {
  for (int i = 0; i < bound && !done(); ++i) boost::this_fiber::yield();
  return done();
}

TEST(ParkFiber, FailedValidationNeverQueues) {
  ParkFiber lot(nullptr, "t");
  const ParkResult r = lot.park_if(&kWord, [] { return false; }, std::nullopt);
  EXPECT_EQ(r.status, ParkStatus::kInvalid);
  const UnparkResult u = lot.unpark_one(&kWord, [](UnparkResult) -> std::intptr_t { return 0; });
  EXPECT_FALSE(u.did_unpark);
}

TEST(ParkFiber, WakesInFifoOrderPerAddressWithTokensAndAnExactMoreFlag) {
  ParkFiber lot(nullptr, "t");
  std::vector<int> woken;
  std::vector<std::intptr_t> tokens;
  int queued = 0;
  std::vector<boost::fibers::fiber> fibers;
  for (int id : {1, 2, 3}) {
    const void* address = id == 2 ? static_cast<const void*>(&kSlot) : &kWord;
    fibers.emplace_back([&, id, address] {
      const ParkResult r = lot.park_if(address, [&] { return ++queued > 0; }, std::nullopt);
      ASSERT_EQ(r.status, ParkStatus::kUnparked);
      woken.push_back(id);
      tokens.push_back(r.token);
    });
  }
  ASSERT_TRUE(yield_until([&] { return queued == 3; }));

  // Fibers 1 and 3 wait on kWord, in that order; fiber 2 on kSlot.
  bool more_seen_in_callback = false;
  UnparkResult u = lot.unpark_one(&kWord, [&](UnparkResult r) -> std::intptr_t {
    more_seen_in_callback = r.may_have_more_threads;
    return 41;
  });
  EXPECT_TRUE(u.did_unpark);
  EXPECT_TRUE(u.may_have_more_threads);  // fiber 3 still waits on kWord
  EXPECT_TRUE(more_seen_in_callback);
  u = lot.unpark_one(&kWord, [](UnparkResult) -> std::intptr_t { return 42; });
  EXPECT_TRUE(u.did_unpark);
  EXPECT_FALSE(u.may_have_more_threads);  // fiber 2 waits elsewhere: not counted
  u = lot.unpark_one(&kWord, [](UnparkResult) -> std::intptr_t { return 0; });
  EXPECT_FALSE(u.did_unpark);
  u = lot.unpark_one(&kSlot, [](UnparkResult) -> std::intptr_t { return 43; });
  EXPECT_TRUE(u.did_unpark);
  for (auto& f : fibers) f.join();
  EXPECT_EQ(woken, (std::vector<int>{1, 3, 2}));
  EXPECT_EQ(tokens, (std::vector<std::intptr_t>{41, 42, 43}));
}

TEST(ParkFiber, ATimedOutWaiterHasLeftTheQueue) {
  ParkFiber lot(nullptr, "t");
  ParkResult r;
  boost::fibers::fiber waiter([&] { r = lot.park_if(&kWord, [] { return true; }, Clock::now() + 20ms); });
  waiter.join();
  EXPECT_EQ(r.status, ParkStatus::kTimedOut);
  const UnparkResult u = lot.unpark_one(&kWord, [](UnparkResult) -> std::intptr_t { return 0; });
  EXPECT_FALSE(u.did_unpark) << "the timed-out waiter was still queued";
}

// The point of the policy: a parked fiber does not hold its carrier. Here
// the only thread is the carrier, and the fiber that unparks the sleeper
// runs on it while the sleeper waits.
TEST(ParkFiber, TheCarrierRunsOtherFibersWhileOneWaits) {
  ParkFiber lot(nullptr, "t");
  bool parked = false, unparker_ran = false;
  ParkResult r;
  boost::fibers::fiber sleeper([&] { r = lot.park_if(&kWord, [&] { return parked = true; }, Clock::now() + 5s); });
  boost::fibers::fiber unparker([&] {
    ASSERT_TRUE(yield_until([&] { return parked; }));
    unparker_ran = true;
    EXPECT_TRUE(lot.unpark_one(&kWord, [](UnparkResult) -> std::intptr_t { return 7; }).did_unpark);
  });
  sleeper.join();
  unparker.join();
  EXPECT_TRUE(unparker_ran);
  EXPECT_EQ(r.status, ParkStatus::kUnparked);
  EXPECT_EQ(r.token, 7);
}

}  // namespace
}  // namespace locklab::fibers
