// The Client's renewal timer on its own (no Redis): jobs run every period
// on one thread, until they stop or are cancelled; cancel_group waits for a
// run in progress, except from inside a job. PubSubLock's use of it is in
// pub_sub_lock_test.cpp.
#include "distributed/lease_renewer.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <thread>

#include "tests/distributed/redis_test_support.hpp"

namespace locklab::redis::testing {
namespace {

TEST(LeaseRenewer, StartsItsThreadWithTheFirstJobAndRunsItEachPeriodUntilItStops) {
  LeaseRenewer renewer;
  EXPECT_FALSE(renewer.thread_started()) << "a renewer with no job must cost no thread";
  std::atomic<int> runs{0};
  int group = 0;
  renewer.schedule(&group, 5ms, [&] { return ++runs < 3; });
  EXPECT_TRUE(renewer.thread_started());
  ASSERT_TRUE(eventually([&] { return renewer.scheduled() == 0; }, 5s))
      << "the job that returned false is still scheduled";
  std::this_thread::sleep_for(30ms);  // 6 periods
  EXPECT_EQ(runs.load(), 3) << "ran again after returning false";
}

TEST(LeaseRenewer, RejectsANonPositivePeriodAndAnEmptyJob) {
  LeaseRenewer renewer;
  int group = 0;
  EXPECT_THROW(renewer.schedule(&group, 0ms, [] { return true; }), std::invalid_argument);
  EXPECT_THROW(renewer.schedule(&group, 5ms, LeaseRenewer::Job{}), std::invalid_argument);
  EXPECT_EQ(renewer.scheduled(), 0u);
  EXPECT_FALSE(renewer.thread_started());
}

TEST(LeaseRenewer, ACancelledJobNeverStartsAgainAndOthersRunOn) {
  LeaseRenewer renewer;
  std::atomic<int> cancelled_runs{0}, other_runs{0};
  int group = 0;
  const auto id = renewer.schedule(&group, 2ms, [&] {
    ++cancelled_runs;
    return true;
  });
  renewer.schedule(&group, 2ms, [&] {
    ++other_runs;
    return true;
  });
  ASSERT_TRUE(eventually([&] { return cancelled_runs.load() >= 1; }, 5s));
  renewer.cancel(id);
  renewer.cancel(id);                 // twice: ignored
  std::this_thread::sleep_for(10ms);  // a run in progress at cancel() may still end
  const int after_cancel = cancelled_runs.load();
  const int other_before = other_runs.load();
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(cancelled_runs.load(), after_cancel) << "a cancelled job ran again";
  EXPECT_GT(other_runs.load(), other_before) << "cancelling one job stopped another";
  EXPECT_EQ(renewer.scheduled(), 1u);
}

TEST(LeaseRenewer, CancelGroupWaitsForTheGroupsRunInProgress) {
  LeaseRenewer renewer;
  std::promise<void> entered;
  std::atomic<bool> finished{false};
  std::atomic<int> runs{0};
  int group = 0;
  renewer.schedule(&group, 1ms, [&] {
    if (++runs == 1) {
      entered.set_value();
      std::this_thread::sleep_for(100ms);
      finished = true;
    }
    return true;
  });
  ASSERT_EQ(entered.get_future().wait_for(5s), std::future_status::ready);
  renewer.cancel_group(&group);
  EXPECT_TRUE(finished.load()) << "cancel_group returned while the group's job still ran";
  const int runs_at_cancel = runs.load();
  std::this_thread::sleep_for(10ms);
  EXPECT_EQ(runs.load(), runs_at_cancel) << "the group's job ran after cancel_group";
  EXPECT_EQ(renewer.scheduled(), 0u);
}

TEST(LeaseRenewer, CancelGroupFromInsideAJobCancelsWithoutWaitingForItself) {
  LeaseRenewer renewer;
  std::atomic<int> runs{0};
  int group = 0;
  renewer.schedule(&group, 1ms, [&] {
    ++runs;
    renewer.cancel_group(&group);  // waiting here for its own run would never end
    return true;
  });
  ASSERT_TRUE(eventually([&] { return renewer.scheduled() == 0; }, 5s)) << "the job's cancel_group did not cancel it";
  std::this_thread::sleep_for(10ms);
  EXPECT_EQ(runs.load(), 1);
}

TEST(LeaseRenewer, AThrowingJobIsDroppedAndTheTimerServesTheOthers) {
  LeaseRenewer renewer;
  std::atomic<int> throwing_runs{0}, other_runs{0};
  int group = 0;
  renewer.schedule(&group, 1ms, [&]() -> bool {
    ++throwing_runs;
    throw std::runtime_error("a job must not throw");
  });
  renewer.schedule(&group, 1ms, [&] { return ++other_runs < 20; });
  ASSERT_TRUE(eventually([&] { return other_runs.load() == 20; }, 5s)) << "the timer died with the throwing job";
  EXPECT_EQ(throwing_runs.load(), 1);
}

TEST(LeaseRenewer, AThousandJobsRunOnOneThread) {
  const std::size_t threads_before = threads_in_this_process();
  {
    LeaseRenewer renewer;
    std::atomic<int> runs{0};
    int group = 0;
    for (int i = 0; i < 1000; ++i) renewer.schedule(&group, 2ms, [&] { return ++runs < 3000; });
    EXPECT_EQ(threads_in_this_process(), threads_before + 1);
    ASSERT_TRUE(eventually([&] { return runs.load() >= 3000; }, 10s));
  }
  EXPECT_TRUE(eventually([&] { return threads_in_this_process() == threads_before; }, 5s))
      << "~LeaseRenewer left its thread";
}

}  // namespace
}  // namespace locklab::redis::testing
