#include "benches/local_peers.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>

#include "benches/harness/contention.hpp"
#include "primitives/thread_slot.hpp"
#include "tests/primitives/lock_conformance.hpp"

// The conformance suite (mutual exclusion under 8 threads, try_lock never
// blocks, no lost wake-ups, std wrappers, FIFO where promised) for every
// peer that has try_lock. CkClhLock (ck has no CLH try_lock) gets the checks
// that apply to it below; NoLock is not a lock.
template <>
struct locklab::testing::LockTraits<locklab::bench::peers::TbbQueuingMutex> {
  static constexpr bool fifo = true;
};
template <>
struct locklab::testing::LockTraits<locklab::bench::peers::CkTicketLock> {
  static constexpr bool fifo = true;
};
template <>
struct locklab::testing::LockTraits<locklab::bench::peers::CkMcsLock> {
  static constexpr bool fifo = true;
};

using PeerLockTypes =
    ::testing::Types<locklab::bench::peers::GlibcAdaptiveMutex, locklab::bench::peers::AbslMutex,
                     locklab::bench::peers::AbslMutexNoDeadlockDetection, locklab::bench::peers::TbbSpinMutex,
                     locklab::bench::peers::TbbQueuingMutex, locklab::bench::peers::CkFasLock,
                     locklab::bench::peers::CkTicketLock, locklab::bench::peers::CkMcsLock>;
INSTANTIATE_TYPED_TEST_SUITE_P(LocalPeers, LockConformance, PeerLockTypes);

namespace locklab::bench::peers {
namespace {

using locklab::testing::check_fifo_order;
using locklab::testing::check_mutual_exclusion;

// ------------------------------------------------------------------ CLH

TEST(CkClhLockTest, MutualExclusionUnderContention) {
  CkClhLock lock;
  const auto r = check_mutual_exclusion(lock);
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(CkClhLockTest, FifoOrder) {
  CkClhLock lock;
  const auto r = check_fifo_order(lock);
  EXPECT_TRUE(r.ok) << r.message;
}

// Nodes migrate between threads at every hand-off, and a thread slot
// freed by an exiting thread is reused by the next: successive generations
// of threads on one lock must still exclude each other.
TEST(CkClhLockTest, SurvivesGenerationsOfThreads) {
  CkClhLock lock;
  for (int generation = 0; generation < 5; ++generation) {
    const auto r = check_mutual_exclusion(lock, {.threads = 4, .iterations = 2'000, .budget = std::chrono::milliseconds(500)});
    ASSERT_TRUE(r.ok) << "generation " << generation << ": " << r.message;
  }
}

// ------------------------------------------------------- slot capacity

// Runs `high` in whichever of two live threads has the higher thread slot,
// then `low` in the other, with the lock built for exactly the lower slot's
// thread: the higher one must be refused and the lower one still served.
template <class L>
void check_capacity_refusal(const std::string& owner) {
  const std::uint32_t main_slot = this_thread_slot();
  std::promise<std::uint32_t> other_slot;
  std::promise<std::function<void()>> other_task;
  std::thread other([&] {
    other_slot.set_value(this_thread_slot());
    other_task.get_future().get()();
  });
  const std::uint32_t o = other_slot.get_future().get();
  const std::uint32_t low = std::min(main_slot, o);
  L lock(low + 1);  // room for slots 0..low
  std::string refused_message;
  bool refused = false;
  auto try_high = [&] {
    try {
      lock.lock();
      lock.unlock();
    } catch (const std::length_error& e) {
      refused = true;
      refused_message = e.what();
    }
  };
  bool served = false;
  auto use_low = [&] {
    lock.lock();
    lock.unlock();
    lock.lock();
    served = true;
    lock.unlock();
  };
  if (main_slot > o) {
    try_high();
    other_task.set_value(use_low);
    other.join();
  } else {
    other_task.set_value(try_high);
    other.join();
    use_low();
  }
  EXPECT_TRUE(refused) << owner << ": a thread with slot >= capacity was not refused";
  EXPECT_NE(refused_message.find(owner), std::string::npos) << refused_message;
  EXPECT_NE(refused_message.find("capacity"), std::string::npos) << refused_message;
  EXPECT_TRUE(served) << owner << ": the lock was unusable after a refused thread";
}

TEST(PerThreadSlotsTest, ThreadBeyondCapacityIsRefusedAndLosesNothing) {
  check_capacity_refusal<CkMcsLock>("ck.mcs");
  check_capacity_refusal<CkClhLock>("ck.clh");
  check_capacity_refusal<TbbQueuingMutex>("tbb.queuing_mutex");
}

TEST(PerThreadSlotsTest, ZeroCapacityIsRejected) {
  EXPECT_THROW(CkMcsLock(0), std::invalid_argument);
  EXPECT_THROW(CkClhLock(0), std::invalid_argument);
  EXPECT_THROW(TbbQueuingMutex(0), std::invalid_argument);
}

// ------------------------------------------------- absl's detector mode

// A lock-order inversion without a real deadlock (one thread, in turn):
// absl's detector reports it, and in mode kAbort dies, only if it is on.
void lock_order_inversion() {
  absl::Mutex a;
  absl::Mutex b;
  a.Lock();
  b.Lock();
  b.Unlock();
  a.Unlock();
  b.Lock();
  a.Lock();  // the detector sees a after b, and b after a before: a cycle
  a.Unlock();
  b.Unlock();
}

constexpr const char* kDetectorMessage = "Potential Mutex deadlock";

class AbslDetectionTest : public ::testing::Test {
 protected:
  // Death tests re-run the binary in a fresh process: no threads left over
  // from other tests, and absl's global graph starts empty.
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

// The premise of measuring absl twice: Debian's library has the detector
// compiled in and on by default.
TEST_F(AbslDetectionTest, ShippedLibraryDetectsAnInversion) {
  EXPECT_EQ(AbslDeadlockDetectionScope::current(), absl::OnDeadlockCycle::kAbort);
  EXPECT_DEATH(lock_order_inversion(), kDetectorMessage);
}

TEST_F(AbslDetectionTest, ScopeTurnsDetectionOffAndRestoresIt) {
  EXPECT_EXIT(
      {
        {
          AbslDeadlockDetectionScope off(absl::OnDeadlockCycle::kIgnore);
          lock_order_inversion();
        }
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_DEATH(
      {
        { AbslDeadlockDetectionScope off(absl::OnDeadlockCycle::kIgnore); }
        lock_order_inversion();
      },
      kDetectorMessage);
}

TEST_F(AbslDetectionTest, ScopesNestAndTrackTheMode) {
  EXPECT_EQ(AbslDeadlockDetectionScope::current(), absl::OnDeadlockCycle::kAbort);
  {
    AbslDeadlockDetectionScope off(absl::OnDeadlockCycle::kIgnore);
    EXPECT_EQ(AbslDeadlockDetectionScope::current(), absl::OnDeadlockCycle::kIgnore);
    {
      AbslDeadlockDetectionScope report(absl::OnDeadlockCycle::kReport);
      EXPECT_EQ(AbslDeadlockDetectionScope::current(), absl::OnDeadlockCycle::kReport);
    }
    EXPECT_EQ(AbslDeadlockDetectionScope::current(), absl::OnDeadlockCycle::kIgnore);
  }
  EXPECT_EQ(AbslDeadlockDetectionScope::current(), absl::OnDeadlockCycle::kAbort);
}

TEST_F(AbslDetectionTest, NoDetectPeerTurnsItOffExactlyForItsLifetime) {
  EXPECT_EXIT(
      {
        AbslMutexNoDeadlockDetection alive;
        lock_order_inversion();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_DEATH(
      {
        {
          AbslMutexNoDeadlockDetection gone;
          gone.lock();
          gone.unlock();
        }
        lock_order_inversion();
      },
      kDetectorMessage);
  {
    AbslMutexNoDeadlockDetection alive;
    EXPECT_EQ(AbslDeadlockDetectionScope::current(), absl::OnDeadlockCycle::kIgnore);
  }
  EXPECT_EQ(AbslDeadlockDetectionScope::current(), absl::OnDeadlockCycle::kAbort);
}

// ------------------------------------------------ through the harness

// Every adapter the `locks` suite registers runs under the harness with
// more waiters than this machine's cores and completes operations.
template <class L>
void expect_harness_runs(const char* name) {
  L lock;
  const ContentionResult r =
      run_lock_contention(lock, Workload{.waiters = 3, .duration = std::chrono::milliseconds(30), .think_ns = 50});
  EXPECT_GT(r.total_ops(), 0U) << name;
  EXPECT_EQ(r.ops_per_waiter.size(), 3U) << name;
}

TEST(LocalPeersHarnessTest, EveryPeerRunsUnderTheHarness) {
  expect_harness_runs<NoLock>("none");
  expect_harness_runs<GlibcAdaptiveMutex>("glibc.adaptive");
  expect_harness_runs<AbslMutex>("absl.Mutex");
  expect_harness_runs<AbslMutexNoDeadlockDetection>("absl.Mutex(no-detect)");
  expect_harness_runs<TbbSpinMutex>("tbb.spin_mutex");
  expect_harness_runs<TbbQueuingMutex>("tbb.queuing_mutex");
  expect_harness_runs<CkFasLock>("ck.fas");
  expect_harness_runs<CkTicketLock>("ck.ticket");
  expect_harness_runs<CkMcsLock>("ck.mcs");
  expect_harness_runs<CkClhLock>("ck.clh");
}

}  // namespace
}  // namespace locklab::bench::peers
