// The network partition experiment (benches/scenarios/partition.hpp): the
// judgement of whether a machine can run it (a pure function, tested on
// made-up machines), the naming rule that lets a run delete what a crashed
// run left and nothing else, the address choice, and, where this machine
// allows network namespaces (root, `ip`, iptables, `ip netns add`), the
// real thing: the cut really stops traffic (a command fails with a typed
// timeout within its bound, never hangs), the heal restores it, everything
// is removed afterwards (also after an exception), and the smoke run's
// invariants hold (fenced phantom writes 0). Elsewhere those tests skip
// with the reason. Nothing here asserts a speed: the bounds are the
// client's own timeouts plus a generous allowance for a loaded machine.
#include "benches/scenarios/partition.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <stdexcept>
#include <string>

#include "distributed/client.hpp"
#include "distributed/embedded_server.hpp"
#include "distributed/error.hpp"

namespace locklab::scenarios::partition {
namespace {

// What a loaded 2-core machine (or a sanitizer build) may add to a bound
// the client sets itself: a scheduler delay, not a measurement.
constexpr ms kAllowance{2'000};

HostFacts able() {
  HostFacts h;
  h.root = true;
  h.ip = "/usr/sbin/ip";
  h.iptables = "/usr/sbin/iptables";
  h.redis_server = "/usr/bin/redis-server";
  return h;
}

TEST(PartitionSkipReason, EmptyWhenEverythingIsThere) {
  EXPECT_EQ(skip_reason(able(), Cut::kIptablesDrop), "");
  EXPECT_EQ(skip_reason(able(), Cut::kLinkDown), "");
}

TEST(PartitionSkipReason, NamesTheFirstMissingRequirement) {
  HostFacts h = able();
  h.root = false;
  h.ip.clear();  // both missing: root is what a user fixes first
  EXPECT_NE(skip_reason(h, Cut::kLinkDown).find("not root"), std::string::npos);

  h = able();
  h.ip.clear();
  EXPECT_NE(skip_reason(h, Cut::kIptablesDrop).find("`ip` not found"), std::string::npos);

  h = able();
  h.redis_server.clear();
  EXPECT_NE(skip_reason(h, Cut::kIptablesDrop).find("redis-server not found"), std::string::npos);

  h = able();
  h.netns_error = "mount --make-shared /run/netns failed: Operation not permitted";
  const std::string why = skip_reason(h, Cut::kLinkDown);
  EXPECT_NE(why.find("`ip netns add` is not permitted"), std::string::npos);
  EXPECT_NE(why.find("Operation not permitted"), std::string::npos) << "the tool's own words are quoted";

  h = able();
  h.veth_error = "Error: Unknown device type.";
  EXPECT_NE(skip_reason(h, Cut::kIptablesDrop).find("veth links cannot be made here"), std::string::npos);

  h = able();
  h.exec_error = "mount of /sys failed: Operation not permitted";
  EXPECT_NE(skip_reason(h, Cut::kLinkDown).find("`ip netns exec` cannot run a program"), std::string::npos);
}

TEST(PartitionSkipReason, IptablesMattersOnlyForTheIptablesCut) {
  HostFacts h = able();
  h.iptables.clear();
  EXPECT_NE(skip_reason(h, Cut::kIptablesDrop).find("iptables not found"), std::string::npos);
  EXPECT_EQ(skip_reason(h, Cut::kLinkDown), "");
  h = able();
  h.iptables_error = "can't initialize iptables table `filter'";
  EXPECT_NE(skip_reason(h, Cut::kIptablesDrop).find("does not work inside a network namespace"), std::string::npos);
  EXPECT_EQ(skip_reason(h, Cut::kLinkDown), "");
}

TEST(PartitionCut, ParsesItsTwoNamesAndNothingElse) {
  EXPECT_EQ(parse_cut("iptables"), Cut::kIptablesDrop);
  EXPECT_EQ(parse_cut("link"), Cut::kLinkDown);
  EXPECT_FALSE(parse_cut("").has_value());
  EXPECT_FALSE(parse_cut("IPTABLES").has_value());
  EXPECT_FALSE(parse_cut("nft").has_value());
}

// The stale clean-up deletes a name only if it is exactly one of ours and
// its pid is dead: anything else on the machine must never match.
TEST(PartitionNames, OnlyOurOwnNamesYieldAPid) {
  using detail::kLinkPrefix;
  using detail::kNetnsPrefix;
  using detail::pid_in;
  EXPECT_EQ(pid_in("locklab-partition-4242-0", kNetnsPrefix), 4242);
  EXPECT_EQ(pid_in("locklab-partition-4242-17", kNetnsPrefix), 4242);
  EXPECT_EQ(pid_in("locklab-partition-4242-probe", kNetnsPrefix), 4242);
  EXPECT_EQ(pid_in("llp4242x3a", kLinkPrefix), 4242);
  EXPECT_EQ(pid_in("llp4242x999b", kLinkPrefix), 4242);
  for (const char* other : {"locklab-partition-", "locklab-partition-x-1", "locklab-partition-42", "locklab-partition-42-1a",
                            "docker0", "locklab-partition-42-probe2"}) {
    EXPECT_EQ(pid_in(other, kNetnsPrefix), -1) << other;
  }
  for (const char* other : {"llp", "llp42", "llp42x", "llp42x1", "llp42x1c", "llp42x1ab", "llpx1a", "eth0", "llp42y1a"}) {
    EXPECT_EQ(pid_in(other, kLinkPrefix), -1) << other;
  }
}

TEST(PartitionAddresses, TheBlockAvoidsEveryUsedPrefix) {
  using detail::free_block;
  constexpr std::uint32_t k10_200 = (10u << 24) | (200u << 16);
  // Nothing used: the seed picks a /29 in 10.200/16 .. 10.254/16.
  const std::uint32_t any = free_block({}, 12345);
  EXPECT_EQ(any % 8, 0u);
  EXPECT_GE(any, k10_200);
  EXPECT_LT(any, (10u << 24) | (255u << 16));
  // The block the seed points at is taken by a /32 inside it, then by a
  // /8 around everything but one /29: the one left is chosen.
  const std::uint32_t first = free_block({}, 0);
  EXPECT_EQ(first, k10_200);
  EXPECT_NE(free_block({{k10_200 + 5, 32}}, 0), k10_200);
  EXPECT_EQ(free_block({{k10_200, 16}}, 0) >> 16, (10u << 8) | 201u) << "a /16 route covers the whole of 10.200";
  EXPECT_THROW(free_block({{10u << 24, 8}}, 0), std::runtime_error) << "10/8 in use: nothing of ours is free";
}

class PartitionOnThisMachine : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = partition_unavailable(Cut::kIptablesDrop);
    if (!why.empty()) GTEST_SKIP() << "the partition cannot run here: " << why;
  }

  static std::set<std::string> our_names() {
    const std::string ip = detail::find_tool("ip");
    std::set<std::string> names;
    const std::string pid = std::to_string(::getpid());
    std::stringstream ns(detail::run_tool({ip, "netns", "list"}).output);
    for (std::string line; std::getline(ns, line);) {
      if (detail::pid_in(line.substr(0, line.find(' ')), detail::kNetnsPrefix) == ::getpid()) names.insert(line);
    }
    std::stringstream links(detail::run_tool({ip, "-o", "link", "show"}).output);
    for (std::string line; std::getline(links, line);) {
      if (line.find(": " + std::string(detail::kLinkPrefix) + pid + "x") != std::string::npos) names.insert(line);
    }
    return names;
  }
};

// The cut, observed from a plain Client: typed, bounded errors during it,
// answers again after the heal; the other path is never cut.
TEST_F(PartitionOnThisMachine, TheCutStopsTrafficAndTheHealRestoresIt) {
  for (Cut method : {Cut::kIptablesDrop, Cut::kLinkDown}) {
    SCOPED_TRACE(cut_name(method));
    {
      PartitionNet net(method);
      EXPECT_FALSE(our_names().empty()) << "the namespace and links exist while the object lives";
      redis::EmbeddedServer::Options so;
      so.launch_prefix = net.exec_prefix();
      so.bind = {net.holder_path_address(), net.other_path_address()};
      so.extra_args = {"--protected-mode", "no"};
      redis::EmbeddedServer server(so);
      redis::Client::Options co = server.client_options();
      co.command_timeout = ms(250);
      co.connect_timeout = ms(250);
      redis::Client holder(co);
      co.host = net.other_path_address();
      redis::Client other(co);
      ASSERT_EQ(holder.command({"PING"}).describe(), "PONG");

      net.cut();
      ASSERT_TRUE(net.is_cut());
      auto t0 = Clock::now();
      try {
        (void)holder.command({"PING"});
        ADD_FAILURE() << "a command crossed the cut";
      } catch (const redis::Error& e) {
        EXPECT_EQ(e.kind(), redis::Error::Kind::kTimeout) << e.what();
      }
      EXPECT_LE(Clock::now() - t0, co.command_timeout + kAllowance);
      t0 = Clock::now();
      try {
        (void)holder.command({"PING"});  // the timed-out connection was dropped: a new one
        ADD_FAILURE() << "a connection crossed the cut";
      } catch (const redis::Error& e) {
        EXPECT_EQ(e.kind(), redis::Error::Kind::kConnect) << e.what();
      }
      EXPECT_LE(Clock::now() - t0, co.connect_timeout + kAllowance);
      EXPECT_EQ(other.command({"PING"}).describe(), "PONG") << "the other path is not cut";

      ASSERT_TRUE(net.heal());
      // The link method needs a moment for the carrier to come back.
      bool answered = false;
      for (const auto until = Clock::now() + 5s; !answered && Clock::now() < until;) {
        try {
          answered = holder.command({"PING"}).describe() == "PONG";
        } catch (const redis::Error&) {
          std::this_thread::sleep_for(10ms);
        }
      }
      EXPECT_TRUE(answered) << "the holder's path did not answer within 5 s of the heal";
    }
    EXPECT_TRUE(our_names().empty()) << "left behind: " << *our_names().begin();
  }
}

TEST_F(PartitionOnThisMachine, AnExceptionStillRemovesTheNetwork) {
  try {
    PartitionNet net(Cut::kIptablesDrop);
    net.cut();
    throw std::runtime_error("a failure in the middle of an experiment");
  } catch (const std::runtime_error&) {
  }
  EXPECT_TRUE(our_names().empty()) << "left behind: " << *our_names().begin();
}

// What a crashed run leaves (a namespace and a link named for its pid) is
// removed by the next run; a name of a live pid is left alone.
//
// ctest runs each test of this file in a process of its own, several at once,
// and every experiment starts with remove_stale(): another process may delete
// the dead run's names at any moment after they are made. So the set-up makes
// nothing that depends on them still being there (the veth pair's two ends
// both stay in this namespace, where a dead run would have moved one into its
// namespace; deleting either end removes the pair), and the checks only say
// that they are gone afterwards, whoever removed them.
TEST_F(PartitionOnThisMachine, WhatADeadRunLeftIsRemovedAndALiveOnesIsNot) {
  const std::string ip = detail::find_tool("ip");
  const pid_t dead = ::fork();  // a pid that surely ran and ended: our own child, reaped
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);
  const std::string stale_ns = std::string(detail::kNetnsPrefix) + std::to_string(dead) + "-0";
  const std::string stale_link = std::string(detail::kLinkPrefix) + std::to_string(dead) + "x0a";
  const std::string stale_peer = std::string(detail::kLinkPrefix) + std::to_string(dead) + "x0b";
  const std::string live_ns = std::string(detail::kNetnsPrefix) + std::to_string(::getpid()) + "-999";
  detail::must({ip, "netns", "add", stale_ns});
  detail::must({ip, "netns", "add", live_ns});
  detail::must({ip, "link", "add", stale_link, "type", "veth", "peer", "name", stale_peer});
  detail::remove_stale(ip);
  const std::string namespaces = detail::run_tool({ip, "netns", "list"}).output;
  const std::string links = detail::run_tool({ip, "-o", "link", "show"}).output;
  (void)detail::run_tool({ip, "netns", "delete", live_ns});
  EXPECT_EQ(namespaces.find(stale_ns), std::string::npos) << namespaces;
  EXPECT_EQ(links.find(stale_link), std::string::npos) << links;
  EXPECT_EQ(links.find(stale_peer), std::string::npos) << links;
  EXPECT_NE(namespaces.find(live_ns), std::string::npos) << "a live run's namespace was deleted";
}

// One smoke-sized run of the whole experiment, every lock at once.
TEST_F(PartitionOnThisMachine, SmokeRunHoldsItsInvariants) {
  PartitionConfig c;
  c.runs = 1;
  const std::vector<RunOutcome> runs = run_partition(c);
  ASSERT_EQ(runs.size(), 1u);
  const RunOutcome& run = runs.front();
  EXPECT_TRUE(run.other_path_ok);
  EXPECT_GE(run.heal_ms, 0) << "the holder's path never answered after the heal";
  ASSERT_GE(run.locks.size(), 2u);
  std::set<std::string> seen;
  for (const LockOutcome& o : run.locks) {
    SCOPED_TRACE(o.lock);
    seen.insert(o.lock);
    EXPECT_TRUE(o.other_granted) << "the other client never got the lock during the cut";
    EXPECT_TRUE(o.double_grant);
    // The holder's commands during the cut: typed errors within their bounds.
    for (const auto& [kind, took] : {std::pair{o.first_error, o.first_error_ms}, std::pair{o.second_error, o.second_error_ms}}) {
      EXPECT_TRUE(kind == "timeout" || kind == "connect") << "got '" << kind << "' (none: the cut leaked)";
      EXPECT_LE(took, double((std::max(c.command_timeout, c.connect_timeout) + kAllowance).count()));
    }
    EXPECT_EQ(o.phantom_fenced, 0) << "a FencedResource took a stale write";
    EXPECT_EQ(o.fence_rejections, 1);
    EXPECT_EQ(o.phantom_unfenced, 1) << "the holder writes after the other by construction";
    EXPECT_TRUE(o.lock_lost) << "unlock() after the heal: " << o.unlock_error;
    EXPECT_TRUE(o.taken_by_other);
  }
  EXPECT_TRUE(seen.count("SpinLock") && seen.count("RedLock"));
  for (const LockOutcome& o : run.locks) {
    // Nothing else uses SpinLock's Client: its idle connection is the one cut.
    if (o.lock == "SpinLock") {
      EXPECT_EQ(o.first_error, "timeout");
    }
    // RedLock's own clock ends the hold before the servers do.
    if (o.lock == "RedLock") {
      EXPECT_TRUE(o.holder_warned);
      EXPECT_EQ(o.holder_validity_ms, 0);
    }
  }
  EXPECT_TRUE(our_names().empty()) << "left behind: " << *our_names().begin();
}

}  // namespace
}  // namespace locklab::scenarios::partition
