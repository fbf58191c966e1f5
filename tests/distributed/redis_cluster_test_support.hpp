// redis_cluster_test_support.hpp — RedisClusterTest, the cluster twin of
// RedisTest (redis_test_support.hpp): the same members (client(), key(),
// options(), impatient_options(), lose_the_reply(), admins(),
// worker_env()), so a typed suite written against RedisTest runs on a
// 3-master Redis Cluster by changing its fixture only
// (redis_lock_outcomes.hpp: OnCluster<L>).
//
// One LocalCluster per test process (3 masters on 127.0.0.1, free ports,
// no persistence, DEBUG enabled for lose_the_reply), started by the first
// test that needs it and stopped at exit: a cluster takes ~1-3 s to come
// up, several times a standalone server's start. Each test starts with
// every master flushed and a routing Client seeded with master 0.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "distributed/local_cluster.hpp"
#include "tests/distributed/redis_test_support.hpp"

namespace locklab::redis::testing {

class RedisClusterTest : public ::testing::Test {
 protected:
  static LocalCluster& cluster() {
    // Built on first use by the main thread (gtest runs tests there), which
    // outlives it; destroyed at exit, which stops the masters.
    static const std::unique_ptr<LocalCluster> shared =
        std::make_unique<LocalCluster>(3, std::chrono::seconds(20), true, /*enable_debug_command=*/true);
    return *shared;
  }

  void SetUp() override {
    // A child worker (spawn_self with worker_env) uses its parent's
    // cluster through child_task(): starting its own would cost ~2 s.
    if (std::getenv("LOCKLAB_CHILD_CLUSTER") != nullptr) return;
    for (int i = 0; i < cluster().size(); ++i) {
      node_clients_.push_back(std::make_unique<Client>(cluster().client_options(i)));
      node_clients_.back()->command({"FLUSHALL"});
    }
    client_ = std::make_unique<Client>(options());
  }
  void TearDown() override {
    client_.reset();
    node_clients_.clear();
  }

  static Client::Options options() {
    Client::Options o = cluster().cluster_options();
    o.connect_timeout = 500ms;
    o.command_timeout = 2s;
    return o;
  }
  static Client::Options impatient_options() {
    Client::Options o = options();
    o.command_timeout = 200ms;
    return o;
  }
  // RedisTest::lose_the_reply on a cluster: every master is made busy (the
  // command's key lives on one of them, and which one is the router's
  // business), so the impatient client gives up whichever it went to.
  template <class Call>
  static ::testing::AssertionResult lose_the_reply(Call call) {
    std::vector<std::unique_ptr<BusyServer>> busy;
    for (int i = 0; i < cluster().size(); ++i) {
      Client::Options o = cluster().client_options(i);
      o.connect_timeout = 500ms;
      busy.push_back(std::make_unique<BusyServer>(o, 800ms));
      if (!busy.back()->confirmed()) {
        return ::testing::AssertionFailure() << "master " << i << " never looked busy: the lost reply was not reproduced";
      }
    }
    try {
      call();
    } catch (const Error& e) {
      if (e.kind() == Error::Kind::kTimeout || e.kind() == Error::Kind::kIo) return ::testing::AssertionSuccess();
      return ::testing::AssertionFailure() << "failed with another error: " << e.what();
    }
    return ::testing::AssertionFailure() << "the reply arrived: the lost reply was not reproduced";
  }

  Client& client() { return *client_; }
  // Node-local administration (ACL, CONFIG): one standalone client a master.
  std::vector<Client*> admins() {
    std::vector<Client*> out;
    for (auto& c : node_clients_) out.push_back(c.get());
    return out;
  }
  // The environment of a child worker (spawn_self): the first master's port and the
  // lock, and the flag that makes child_task() build a routing client.
  static std::vector<std::string> worker_env(const std::string& lock) {
    return child_env(cluster().port(0), lock, {"LOCKLAB_CHILD_CLUSTER=1"});
  }
  static std::string key(const std::string& suffix = "lock") {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return std::string("locklab:test:") + info->test_suite_name() + ":" + info->name() + ":" + suffix;
  }

  std::vector<std::unique_ptr<Client>> node_clients_;
  std::unique_ptr<Client> client_;
};

}  // namespace locklab::redis::testing
