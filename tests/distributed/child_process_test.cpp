#include "distributed/child_process.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>
#include <chrono>

namespace locklab {
namespace {

using namespace std::chrono_literals;

// /bin/sh is in every Debian base system; the tests need no other program.
constexpr const char* kShell = "/bin/sh";

TEST(ChildProcessTest, WaitReturnsTheExitStatus) {
  ChildProcess child = ChildProcess::spawn({kShell, "-c", "exit 3"});
  ASSERT_TRUE(child.running());
  EXPECT_EQ(child.wait(10s), 3);
  EXPECT_FALSE(child.running()) << "reaped by wait";
}

TEST(ChildProcessTest, ExtraEnvironmentWinsOverTheInheritedOne) {
  ::setenv("LOCKLAB_CHILD_PROCESS_TEST", "1", 1);
  const pid_t pid = spawn_process({kShell, "-c", "exit $LOCKLAB_CHILD_PROCESS_TEST"}, {"LOCKLAB_CHILD_PROCESS_TEST=7"});
  ASSERT_GT(pid, 0);
  EXPECT_EQ(wait_process(pid, 10s), 7);
  ::unsetenv("LOCKLAB_CHILD_PROCESS_TEST");
}

TEST(ChildProcessTest, AChildKilledByASignalReports128PlusTheSignal) {
  ChildProcess child = ChildProcess::spawn({kShell, "-c", "kill -TERM $$"});
  EXPECT_EQ(child.wait(10s), 128 + SIGTERM);
}

TEST(ChildProcessTest, TheBoundedWaitKillsAndReapsAChildThatOverstays) {
  ChildProcess child = ChildProcess::spawn({kShell, "-c", "sleep 30"});
  const pid_t pid = child.pid();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(child.wait(100ms), -1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s) << "the wait is bounded, not the child's 30 s";
  errno = 0;
  EXPECT_EQ(::kill(pid, 0), -1) << "killed and reaped: no such process, not even a zombie";
  EXPECT_EQ(errno, ESRCH);
}

TEST(ChildProcessTest, DestructionKillsAndReapsARunningChild) {
  pid_t pid = -1;
  {
    ChildProcess child = ChildProcess::spawn({kShell, "-c", "sleep 30"});
    ASSERT_TRUE(child.running());
    pid = child.pid();
  }
  errno = 0;
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
}

TEST(ChildProcessTest, AMissingExecutableIsMinusOneNotAnException) {
  EXPECT_EQ(spawn_process({"/nonexistent/locklab-no-such-program"}), -1);
  EXPECT_EQ(spawn_process({}), -1);
  EXPECT_FALSE(ChildProcess::spawn({"/nonexistent/locklab-no-such-program"}).running());
  EXPECT_EQ(wait_process(-1, 10ms), -1);
}

TEST(ChildProcessTest, MovingHandsTheChildOver) {
  ChildProcess a = ChildProcess::spawn({kShell, "-c", "exit 5"});
  ChildProcess b = std::move(a);
  EXPECT_FALSE(a.running());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  EXPECT_EQ(b.wait(10s), 5);
}

}  // namespace
}  // namespace locklab
