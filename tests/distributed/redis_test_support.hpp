// redis_test_support.hpp — what every distributed test shares: its own
// redis-server (EmbeddedServer on 127.0.0.1, a free port, no persistence),
// started once per test process and stopped by RAII, even when a test
// fails; a fresh Client and an empty database per test; helpers to run a
// child process of this same test binary (cross-process tests) and to wait
// with a bound.
//
// Tests never read LOCKLAB_REDIS_URL: they kill, restart and flush their
// server, which must never be anyone else's.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "distributed/child_process.hpp"
#include "distributed/client.hpp"
#include "distributed/embedded_server.hpp"
#include "tests/eventually.hpp"

namespace locklab::redis::testing {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using locklab::testing::eventually;

inline double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Threads of this process now (entries of /proc/self/task): the tests that
// count what a lock object or a Client costs in threads.
inline std::size_t threads_in_this_process() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// `threads` threads each do `rounds` non-atomic read-modify-writes (GET, +1,
// SET) of the Redis key `counter` while holding `lock`, and also count them
// in a plain integer guarded by the lock (TSan would see a race if the lock
// failed to order them). Returns that local count; with mutual exclusion
// both it and the key equal threads x rounds.
template <class Lock>
std::uint64_t increment_under(Lock& lock, Client& client, const std::string& counter, int threads, int rounds) {
  std::uint64_t local = 0;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (int i = 0; i < rounds; ++i) {
        std::lock_guard g(lock);
        Reply v = client.command({"GET", counter});
        const long n = v.is_nil() ? 0 : std::stol(v.as_string());
        client.command({"SET", counter, std::to_string(n + 1)});
        ++local;
      }
    });
  }
  for (auto& w : workers) w.join();
  return local;
}

// Holds `lock` on another thread from construction until release() (or
// destruction), so the test thread meets a genuine second owner. An unlock
// that throws (the test killed the server or let the lease run out) is
// recorded, not propagated.
template <class Lock>
class Holder {
 public:
  explicit Holder(Lock& lock) : lock_(lock) {
    thread_ = std::thread([this] {
      lock_.lock();
      held_.set_value();
      release_.get_future().wait();
      released_at_ns_ = Clock::now().time_since_epoch().count();
      try {
        lock_.unlock();
      } catch (...) {
        unlock_failed_ = true;
      }
    });
    held_.get_future().wait();
  }
  ~Holder() { release(); }
  Holder(const Holder&) = delete;
  Holder& operator=(const Holder&) = delete;
  void release() {
    if (!thread_.joinable()) return;
    release_.set_value();
    thread_.join();
  }
  std::int64_t released_at_ns() const { return released_at_ns_; }
  bool unlock_failed() const { return unlock_failed_; }

 private:
  Lock& lock_;
  std::promise<void> held_, release_;
  std::int64_t released_at_ns_ = 0;
  bool unlock_failed_ = false;
  std::thread thread_;
};

// Runs `f`, which must throw std::system_error(operation_not_permitted),
// the locks' answer to misuse (unlock() or token() by a thread that holds
// nothing); `returned` says what a normal return would mean.
template <class F>
void expect_not_permitted(F&& f, const char* returned = "returned normally") {
  try {
    f();
    ADD_FAILURE() << returned;
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::operation_not_permitted) << e.what();
  }
}

// Runs `f`, which must throw redis::Error of `kind` whose message contains
// every string of `mentions` (an endpoint, a script's name, the bad value).
template <class F>
void expect_error(F&& f, Error::Kind kind, const std::vector<std::string>& mentions) {
  try {
    f();
    ADD_FAILURE() << "no redis::Error (" << Error::kind_name(kind) << ") was thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << Error::kind_name(e.kind()) << ": " << e.what();
    for (const auto& m : mentions) EXPECT_NE(std::string(e.what()).find(m), std::string::npos) << m << " in " << e.what();
  }
}

// Makes the test's server busy for `busy` (DEBUG SLEEP from a connection of
// its own, on a thread) and returns once it is: a probe PING with a short
// timeout went unanswered. A command sent while this object lives is queued
// by the server and run when the sleep ends; a client with a command_timeout
// shorter than what is left of `busy` has given up on its reply by then: the
// reply of a command that did run is lost. The destructor waits for the
// sleep to end. confirmed() is false if the server never looked busy (the
// test cannot reproduce its fault and should say so).
class BusyServer {
 public:
  BusyServer(Client::Options options, std::chrono::milliseconds busy) {
    Client::Options probe_options = options;
    probe_options.command_timeout = 50ms;
    Client probe(probe_options);
    options.command_timeout = busy + 10s;
    sleeper_ = std::make_unique<Client>(options);
    const std::string seconds = std::to_string(std::chrono::duration<double>(busy).count());
    thread_ = std::thread([this, seconds] {
      try {
        sleeper_->command({"DEBUG", "SLEEP", seconds});
      } catch (const Error&) {
        // DEBUG refused: confirmed() stays false and the test says so.
      }
    });
    for (int i = 0; i < 200 && !confirmed_; ++i) {
      try {
        probe.command({"PING"});
        std::this_thread::sleep_for(1ms);
      } catch (const Error& e) {
        confirmed_ = e.kind() == Error::Kind::kTimeout;
      }
    }
  }
  ~BusyServer() { thread_.join(); }
  BusyServer(const BusyServer&) = delete;
  BusyServer& operator=(const BusyServer&) = delete;
  bool confirmed() const { return confirmed_; }

 private:
  std::unique_ptr<Client> sleeper_;
  std::thread thread_;
  bool confirmed_ = false;
};

// Defined below (with spawn_self): RedisTest::worker_env uses it.
inline std::vector<std::string> child_env(int port, const std::string& lock, std::vector<std::string> extra = {});

class RedisTest : public ::testing::Test {
 protected:
  // DEBUG is enabled on the tests' server: lose_the_reply() makes it busy
  // with DEBUG SLEEP (a fault injector; EmbeddedServer refuses DEBUG unless
  // asked, see embedded_server.hpp).
  static void SetUpTestSuite() {
    EmbeddedServer::Options o;
    o.enable_debug_command = true;
    server_ = std::make_unique<EmbeddedServer>(o);
  }
  static void TearDownTestSuite() { server_.reset(); }

  void SetUp() override {
    ASSERT_TRUE(server_) << "the embedded server did not start";
    if (!server_->running()) server_->restart();  // a previous test killed it
    client_ = std::make_unique<Client>(options());
    client_->command({"FLUSHALL"});
  }
  void TearDown() override { client_.reset(); }

  static Client::Options options() {
    Client::Options o = server_->client_options();
    o.connect_timeout = 500ms;
    o.command_timeout = 2s;
    return o;
  }
  // A client that gives up on a reply after 200 ms: well under the 800 ms
  // a lose_the_reply() keeps the server busy.
  static Client::Options impatient_options() {
    Client::Options o = options();
    o.command_timeout = 200ms;
    return o;
  }
  // Runs `call`, one lock operation through an impatient_options() client,
  // while the server is busy (BusyServer): the client gives up on its reply
  // and the server runs the command as the sleep ends, when this returns (a
  // command sent afterwards is served after it; the restore a lock sends on
  // a new connection may come later still: wait for effects with
  // eventually()). Fails the assertion when the
  // fault was not reproduced, or `call` failed otherwise.
  template <class Call>
  static ::testing::AssertionResult lose_the_reply(Call call) {
    BusyServer busy(options(), 800ms);
    if (!busy.confirmed()) {
      return ::testing::AssertionFailure() << "the server never looked busy: the lost reply was not reproduced";
    }
    try {
      call();
    } catch (const Error& e) {
      if (e.kind() == Error::Kind::kTimeout || e.kind() == Error::Kind::kIo) return ::testing::AssertionSuccess();
      return ::testing::AssertionFailure() << "failed with another error: " << e.what();
    }
    return ::testing::AssertionFailure() << "the reply arrived: the lost reply was not reproduced";
  }
  static EmbeddedServer& server() { return *server_; }
  Client& client() { return *client_; }
  // Who runs node-local administration (ACL): here the one server's client;
  // RedisClusterTest answers one client per master.
  std::vector<Client*> admins() { return {client_.get()}; }
  // The environment of a child worker (spawn_self) on this server's `lock`.
  static std::vector<std::string> worker_env(const std::string& lock) { return child_env(server().port(), lock, {}); }
  // A key unique to the running test.
  static std::string key(const std::string& suffix = "lock") {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return std::string("locklab:test:") + info->test_suite_name() + ":" + info->name() + ":" + suffix;
  }

  static inline std::unique_ptr<EmbeddedServer> server_;
  std::unique_ptr<Client> client_;
};

// A user of the test server for one scope (ACL DELUSER at its end, which
// also closes its connections): it may run every command on every key but
// use no pub/sub channel, Redis 7's default for a new user
// (acl-pubsub-default resetchannels). Its SUBSCRIBE and its scripts' PUBLISH
// are refused with NOPERM.
class UserWithoutChannels {
 public:
  UserWithoutChannels(Client& admin, Client::Options server, std::string name)
      : UserWithoutChannels(std::vector<Client*>{&admin}, std::move(server), std::move(name)) {}
  // The same user on every server of `admins` (ACLs are per node: a
  // cluster's masters each need it).
  UserWithoutChannels(std::vector<Client*> admins, Client::Options server, std::string name)
      : admins_(std::move(admins)), options_(std::move(server)) {
    options_.user = std::move(name);
    options_.password = "locklab-test-password";
    for (Client* admin : admins_) {
      admin->command({"ACL", "SETUSER", options_.user, "reset", "on", ">" + options_.password, "~*", "+@all",
                      "resetchannels"});
    }
  }
  ~UserWithoutChannels() {
    for (Client* admin : admins_) {
      try {
        admin->command({"ACL", "DELUSER", options_.user});
      } catch (const Error&) {
        // The server is gone (a test killed it): so is the user.
      }
    }
  }
  UserWithoutChannels(const UserWithoutChannels&) = delete;
  UserWithoutChannels& operator=(const UserWithoutChannels&) = delete;
  // The test server's options, logged in as this user.
  const Client::Options& options() const { return options_; }

 private:
  std::vector<Client*> admins_;
  Client::Options options_;
};

// Runs this test binary again as a child process with --gtest_filter=`test`
// (a DISABLED_ test, run with --gtest_also_run_disabled_tests) and the
// extra environment `env` ("NAME=value"). Returns its pid, or -1
// (distributed/child_process.hpp, as every child role the lab starts).
inline pid_t spawn_self(const std::string& test, const std::vector<std::string>& env) {
  return spawn_process({"/proc/self/exe", "--gtest_filter=" + test, "--gtest_also_run_disabled_tests"}, env);
}

// What a parent test tells a child it spawns (spawn_self): the port of its
// server and the name of the lock (or key) to use, plus `extra` variables.
inline std::vector<std::string> child_env(int port, const std::string& lock, std::vector<std::string> extra) {
  extra.push_back("LOCKLAB_CHILD_PORT=" + std::to_string(port));
  extra.push_back("LOCKLAB_CHILD_LOCK=" + lock);
  return extra;
}

// The child's side of child_env(): options for the parent's server and the
// lock name; nullopt when not run by a parent (the DISABLED_ test run alone).
struct ChildTask {
  Client::Options options;
  std::string lock;
};
inline std::optional<ChildTask> child_task() {
  const char* port = std::getenv("LOCKLAB_CHILD_PORT");
  const char* lock = std::getenv("LOCKLAB_CHILD_LOCK");
  if (port == nullptr || lock == nullptr) return std::nullopt;
  ChildTask task{{}, lock};
  task.options.port = std::atoi(port);
  task.options.cluster = std::getenv("LOCKLAB_CHILD_CLUSTER") != nullptr;  // worker_env of RedisClusterTest
  return task;
}

// Waits (bounded) for a child; returns its exit status, or -1 after
// SIGKILLing it if it did not finish in time.
inline int wait_child(pid_t pid, std::chrono::milliseconds bound = 30s) { return wait_process(pid, bound); }

// ThreadSanitizer refuses to start a thread in a child forked from a
// multi-threaded process (the child dies: "starting new threads after
// multi-threaded fork is not supported"). A fork test whose child starts
// one (a Subscriber, a LeaseRenewer) begins with this.
#if defined(__SANITIZE_THREAD__)
#define LOCKLAB_SKIP_FORK_THAT_STARTS_THREADS_UNDER_TSAN() \
  GTEST_SKIP() << "ThreadSanitizer cannot start threads in a child of a multi-threaded fork"
#else
#define LOCKLAB_SKIP_FORK_THAT_STARTS_THREADS_UNDER_TSAN() static_cast<void>(0)
#endif

// Runs `body` in a child made by fork() without exec, so the child inherits
// this process's Client objects (their pooled sockets, ids, hold records):
// what the fork tests are about. The child ends with _exit (no destructors,
// no atexit handlers: the parent's objects are not the child's to tear
// down) and status 0 if `body` returned with no gtest failure, 1 if a gtest
// assertion failed in it (the parent must have had none before the fork),
// 2 if `body` threw. Returns the status as wait_child does (bounded).
template <class Body>
int run_in_forked_child(Body body, std::chrono::milliseconds bound = 30s) {
  std::fflush(nullptr);  // or buffered output would be written twice
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int status = 2;
    try {
      body();
      status = ::testing::Test::HasFailure() ? 1 : 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "forked child threw: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "forked child threw a non-std exception\n");
    }
    std::fflush(nullptr);
    ::_exit(status);
  }
  return wait_child(pid, bound);
}

}  // namespace locklab::redis::testing
