#include "distributed/child_process.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>
#include <chrono>

namespace locklab {
namespace {

using namespace std::chrono_literals;

// /bin/sh is in every Debian base system; the tests need no other program.
// A long child is `exec sleep`: killing a shell that forked its sleep would
// leave the sleep behind, holding the test's output open for its 30 s.
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
  ChildProcess child = ChildProcess::spawn({kShell, "-c", "exec sleep 30"});
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
    ChildProcess child = ChildProcess::spawn({kShell, "-c", "exec sleep 30"});
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

TEST(ChildProcessTest, RunCapturingOutputKeepsStdoutAndStderrAndTheStatus) {
  const CapturedOutput r = run_capturing_output({kShell, "-c", "echo out; echo err 1>&2; exit 4"}, 10s);
  EXPECT_TRUE(r.started);
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.status, 4);
  EXPECT_EQ(r.output, "out\nerr\n");
}

TEST(ChildProcessTest, RunCapturingOutputIsBoundedAndKeepsAtMostMaxOutput) {
  const auto start = std::chrono::steady_clock::now();
  const CapturedOutput slow = run_capturing_output({kShell, "-c", "exec sleep 30"}, 100ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
  EXPECT_TRUE(slow.started);
  EXPECT_FALSE(slow.exited) << "killed at the bound";
  const CapturedOutput big = run_capturing_output({kShell, "-c", "i=0; while [ $i -lt 200 ]; do echo 0123456789; i=$((i+1)); done"}, 10s, 100);
  EXPECT_TRUE(big.exited);
  EXPECT_EQ(big.output.size(), 100u) << "2,200 bytes written, the first 100 kept";
  EXPECT_FALSE(run_capturing_output({"/nonexistent/locklab-no-such-program"}, 1s).started);
}

}  // namespace
}  // namespace locklab
