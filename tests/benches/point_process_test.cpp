#include "benches/harness/point_process.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace locklab::bench {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

// EXPECT_THROW plus a look at the message.
template <class E, class F>
std::string message_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception of the expected type";
  return "";
}

ContentionResult sample_result() {
  ContentionResult r;
  r.per_unit = "acquire";
  r.ops_per_waiter = {0, 7, 18446744073709551615ull};
  r.wall_seconds = 0.1000000000000000055511151231257827;  // not exact in binary: must survive
  r.cpu_seconds = 1.0 / 3.0;
  r.event_deltas = {{"pinned_events", 12}, {"round_trips", 1e-300}};
  r.extra = {{"p95_ms", 113.25}, {"lockers_per_second", 1.5e6}, {"detector_coverage", -0.0}};
  return r;
}

// ------------------------------------------------------------ wire format

TEST(PointProcessTest, AResultRoundTripsThroughTheTextFormatBitForBit) {
  const ContentionResult r = sample_result();
  const Workload w{.waiters = 3, .duration = milliseconds(250)};
  const ContentionResult back = parse_result(format_result(r), w);
  EXPECT_EQ(back.workload.waiters, 3);
  EXPECT_EQ(back.workload.duration, milliseconds(250));
  EXPECT_EQ(back.per_unit, "acquire");
  EXPECT_EQ(back.ops_per_waiter, r.ops_per_waiter);
  EXPECT_EQ(back.wall_seconds, r.wall_seconds);
  EXPECT_EQ(back.cpu_seconds, r.cpu_seconds);
  EXPECT_EQ(back.event_deltas, r.event_deltas);  // order kept
  EXPECT_EQ(back.extra, r.extra);
  EXPECT_EQ(back.fairness(), r.fairness());
}

TEST(PointProcessTest, EmptyVectorsRoundTripToo) {
  ContentionResult r;
  r.wall_seconds = 1.5;
  const ContentionResult back = parse_result(format_result(r), Workload{});
  EXPECT_TRUE(back.ops_per_waiter.empty());
  EXPECT_TRUE(back.event_deltas.empty());
  EXPECT_TRUE(back.extra.empty());
  EXPECT_EQ(back.per_unit, "op");
  EXPECT_EQ(back.wall_seconds, 1.5);
  EXPECT_EQ(back.cpu_seconds, 0.0);
}

TEST(PointProcessTest, NanAndInfinitySurvive) {
  ContentionResult r;
  r.wall_seconds = 1;
  r.extra = {{"nan", std::numeric_limits<double>::quiet_NaN()}, {"inf", -std::numeric_limits<double>::infinity()}};
  const ContentionResult back = parse_result(format_result(r), Workload{});
  ASSERT_EQ(back.extra.size(), 2u);
  EXPECT_TRUE(std::isnan(back.extra[0].second));
  EXPECT_EQ(back.extra[1].second, -std::numeric_limits<double>::infinity());
}

TEST(PointProcessTest, NamesThatWouldBreakTheFormatAreRefused) {
  ContentionResult r;
  r.wall_seconds = 1;
  r.extra = {{"p95 ms", 1}};
  EXPECT_THAT(message_of<std::invalid_argument>([&] { format_result(r); }), HasSubstr("'p95 ms'"));
  r.extra = {};
  r.event_deltas = {{"", 1}};
  EXPECT_THAT(message_of<std::invalid_argument>([&] { format_result(r); }), HasSubstr("event name"));
}

TEST(PointProcessTest, GarbageAndMissingLinesGiveClearErrors) {
  const Workload w;
  EXPECT_THAT(message_of<std::runtime_error>([&] { parse_result("", w); }), HasSubstr("'wall_seconds' line is missing"));
  EXPECT_THAT(message_of<std::runtime_error>([&] { parse_result("wall_seconds 1\ncpu_seconds 1\n", w); }),
              HasSubstr("'ops' line is missing"));
  EXPECT_THAT(message_of<std::runtime_error>([&] { parse_result("hello world\n", w); }),
              HasSubstr("malformed result line 'hello world': unknown kind 'hello'"));
  EXPECT_THAT(message_of<std::runtime_error>([&] { parse_result("wall_seconds 1.5s\n", w); }),
              HasSubstr("'1.5s' is not a number"));
  EXPECT_THAT(message_of<std::runtime_error>([&] { parse_result("wall_seconds 1\ncpu_seconds 0\nops 1 -2\n", w); }),
              HasSubstr("'-2' is not a number"));
  EXPECT_THAT(message_of<std::runtime_error>([&] { parse_result("extra p95_ms\n", w); }),
              HasSubstr("expected 2 value(s) after 'extra'"));
  EXPECT_THAT(message_of<std::runtime_error>([&] { parse_result("wall_seconds 0\ncpu_seconds 0\nops\n", w); }),
              HasSubstr("wall_seconds must be > 0"));
}

// ------------------------------------------------------------------ flags

TEST(PointProcessTest, TakeFlagRemovesEveryOccurrenceAndKeepsTheRest) {
  std::vector<std::string> args = {"bench", "--io_ms=5", "--benchmark_filter=x", "--io_ms=7", "--io_msx=1"};
  EXPECT_TRUE(has_flag(args, "--io_ms"));
  EXPECT_EQ(take_flag(args, "--io_ms"), "7");
  EXPECT_EQ(args, (std::vector<std::string>{"bench", "--benchmark_filter=x", "--io_msx=1"}));
  EXPECT_FALSE(has_flag(args, "--io_ms"));
  EXPECT_EQ(take_flag(args, "--io_ms"), "");
}

TEST(PointProcessTest, NumbersAreParsedStrictlyWithMessagesNamingTheFlag) {
  EXPECT_EQ(parse_positive("16", "--locks"), 16);
  EXPECT_EQ(parse_positive_list("1,2,4", "--carriers"), (std::vector<int>{1, 2, 4}));
  for (const char* bad : {"0", "-3", "2x", "", " 4", "99999999999"}) {
    EXPECT_EQ(message_of<std::invalid_argument>([&] { parse_positive(bad, "--locks"); }),
              std::string("--locks: expected a positive integer, got '") + bad + "'");
  }
  EXPECT_THAT(message_of<std::invalid_argument>([] { parse_positive_list("1,,2", "--carriers"); }),
              HasSubstr("--carriers: expected a positive integer, got ''"));
  EXPECT_EQ(message_of<std::invalid_argument>([] { parse_positive_list("", "--carriers"); }), "--carriers: empty list");
}

TEST(PointProcessTest, PointRequestIsTakenOnlyWhenPointIsGiven) {
  std::vector<std::string> args = {"bench", "--duration_ms=100", "--mode=quick"};
  EXPECT_FALSE(take_point_request(args).has_value());
  EXPECT_EQ(args.size(), 3u) << "--duration_ms stays for the suite";

  args = {"bench", "--point=s/A/waiters:2", "--duration_ms=150"};
  const auto r = take_point_request(args);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->name, "s/A/waiters:2");
  EXPECT_EQ(r->duration, milliseconds(150));
  EXPECT_EQ(args, std::vector<std::string>{"bench"});

  args = {"bench", "--point=s/A/waiters:2"};
  EXPECT_EQ(take_point_request(args)->duration, milliseconds(200));
  args = {"bench", "--point=s/A/waiters:2", "--duration_ms=soon"};
  EXPECT_THAT(message_of<std::invalid_argument>([&] { take_point_request(args); }),
              HasSubstr("--duration_ms: expected a positive integer, got 'soon'"));
}

TEST(PointProcessTest, PointNamesParseBackIntoTheirKnobs) {
  const PointSpec s = parse_point_name("io_bound/Fibers(guard-page)/waiters:200/io_ms:20", "io_bound", {"waiters", "io_ms"});
  EXPECT_EQ(s.impl, "Fibers(guard-page)");
  EXPECT_EQ(s.values, (std::vector<int>{200, 20}));
  const std::vector<std::string> keys = {"waiters", "io_ms"};
  EXPECT_EQ(message_of<std::invalid_argument>([&] { parse_point_name("pinning/A/waiters:2/io_ms:1", "io_bound", keys); }),
            "--point: not an io_bound point: pinning/A/waiters:2/io_ms:1");
  EXPECT_THAT(message_of<std::invalid_argument>([&] { parse_point_name("io_bound/A/waiters:2", "io_bound", keys); }),
              HasSubstr("not an io_bound point"));
  EXPECT_EQ(message_of<std::invalid_argument>([&] { parse_point_name("io_bound/A/io_ms:1/waiters:2", "io_bound", keys); }),
            "--point: expected waiters in io_bound/A/io_ms:1/waiters:2");
  EXPECT_EQ(message_of<std::invalid_argument>([&] { parse_point_name("io_bound/A/waiters:0/io_ms:1", "io_bound", keys); }),
            "waiters: expected a positive integer, got '0'");
}

// -------------------------------------------------------- child processes

TEST(PointProcessTest, SelfPathIsThisTestBinary) {
  EXPECT_THAT(self_path(), HasSubstr("point_process_test"));
}

TEST(PointProcessTest, RunChildReturnsAllOfStdoutEvenPastAPipeBuffer) {
  EXPECT_EQ(run_child({"/bin/sh", "-c", "echo hello; echo world"}, milliseconds(10'000), "sh"), "hello\nworld\n");
  const std::string big = run_child({"/bin/sh", "-c", "head -c 300000 /dev/zero"}, milliseconds(10'000), "head");
  EXPECT_EQ(big.size(), 300000u);
}

TEST(PointProcessTest, AChildThatFailsGivesAClearException) {
  EXPECT_EQ(message_of<std::runtime_error>([] {
              run_child({"/bin/sh", "-c", "echo partial; exit 3"}, milliseconds(10'000), "point x");
            }),
            "point x: the child process exited with status 3 (its message is on stderr)");
  EXPECT_THAT(message_of<std::runtime_error>([] {
                run_child({"/bin/sh", "-c", "kill -ALRM $$"}, milliseconds(10'000), "point y");
              }),
              HasSubstr("point y: the child process was killed by signal 14"));
  EXPECT_THAT(message_of<std::runtime_error>([] {
                run_child({"/nonexistent/bench"}, milliseconds(10'000), "point z");
              }),
              HasSubstr("point z: cannot start /nonexistent/bench: No such file or directory"));
}

TEST(PointProcessTest, AChildThatHangsIsKilledAtTheBound) {
  // The child would sleep 30 s; the bound is 200 ms. (No upper bound on
  // the time taken is asserted: tests never assert speed.)
  EXPECT_THAT(message_of<std::runtime_error>([] {
                run_child({"/bin/sh", "-c", "exec sleep 30"}, milliseconds(200), "point h");
              }),
              HasSubstr("point h: still running after 0.2 s (killed"));
  // The same for a child that closed its stdout but keeps running.
  EXPECT_THAT(message_of<std::runtime_error>([] {
                run_child({"/bin/sh", "-c", "exec sleep 30 >/dev/null"}, milliseconds(200), "point c");
              }),
              HasSubstr("still running after 0.2 s"));
}

TEST(PointProcessTest, AChildThatPrintsGarbageIsReportedByTheParser) {
  const std::string text = run_child({"/bin/sh", "-c", "echo Segmentation fault"}, milliseconds(10'000), "g");
  EXPECT_THAT(message_of<std::runtime_error>([&] { parse_result(text, Workload{}); }),
              HasSubstr("unknown kind 'Segmentation'"));
}

// The child side, end to end: point_child_main in a forked process writes
// what the parent's parser reads back.
TEST(PointProcessTest, PointChildMainWritesTheResultInTheWireFormat) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::cout.flush();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    int rc = 9;
    try {
      rc = point_child_main(PointRequest{.name = "s/A/waiters:3", .duration = milliseconds(10)},
                            [](const std::string& name, milliseconds d) {
                              ContentionResult r = sample_result();
                              r.extra.emplace_back(name == "s/A/waiters:3" && d == milliseconds(10) ? "ok" : "bad", 1);
                              return r;
                            });
    } catch (...) {
    }
    std::cout.flush();
    ::_exit(rc);
  }
  ::close(fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  const ContentionResult back = parse_result(text, Workload{.waiters = 3});
  ASSERT_FALSE(back.extra.empty());
  EXPECT_EQ(back.extra.back().first, "ok");
  EXPECT_EQ(back.ops_per_waiter, sample_result().ops_per_waiter);
}

}  // namespace
}  // namespace locklab::bench
