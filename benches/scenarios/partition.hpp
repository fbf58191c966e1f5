// partition.hpp — the network partition experiment: the lock holder is cut
// off from the lock servers by a real network partition (Linux network
// namespaces, two veth pairs and an iptables DROP or a link taken down), its
// lease runs out on the servers, a client on the other side of the cut
// acquires, and then both believe they hold the lock. Header-only so that
// benches/scenarios (`scenarios partition`, the table and
// results/scenario_partition.json) and
// tests/distributed/partition_scenario_test.cpp run the same code.
//
// The network this process builds (and removes, also on an exception)
// -------------------------------------------------------------------
//   root namespace (this process)            namespace locklab-partition-<pid>-<k>
//   holder's path  llp<pid>x<k>a 10.A.B.C+1 ── veth ── pa 10.A.B.C+2 ┐
//   other's path   llp<pid>x<k>b 10.A.B.C+5 ── veth ── pb 10.A.B.C+6 ┴ redis-server x3
//                                                                      (bound to +2 and +6)
//   loopback       the "database": an EmbeddedServer on 127.0.0.1
// Both clients are this process; they differ only in the address they dial,
// so the route picks the path. The cut drops everything on the holder's
// path inside the namespace (`iptables -I INPUT -i pa -j DROP` and the same
// for OUTPUT -o pa: nothing arrives, nothing is answered, no RST, no FIN,
// as when a switch or a cable fails), or takes the namespace's end of it
// down (`ip link set pa down`: the root end loses carrier and drops what
// it is given). Healing deletes the rules or brings the link up. The
// servers never see the other path cut, and the database is never cut: the
// partition separates the holder from the lock service only, which is the
// case that hurts (a holder that cannot reach the resource cannot damage it
// either).
//
// Addresses: a /29 block (two /30s) in 10.200.0.0-10.254.255.255, first
// tried at an offset drawn from the pid, skipping every block that
// overlaps an address or a route of this namespace (`ip -4 addr`, `ip -4
// route show table all`); after setup, `ip route get` must answer with our
// own link for both server addresses, else the run stops. No packet is sent
// to any address but those of our namespace and loopback. Names carry the
// pid and a per-process counter, so two runs (or two experiments in one
// process) never share a namespace or a link; names of a pid that no longer
// runs (a crashed run) are deleted before a new one is built. The servers
// are started inside the namespace (`ip netns exec`, EmbeddedServer's
// launch_prefix), without persistence, in temporary directories.
//
// One run, for every lock at once (one cut serves them all)
// ---------------------------------------------------------
//   holder (one thread per lock, on the holder's path): acquire (lease 500
//     ms; PubSubLock in watchdog mode with a 600 ms watchdog lease) and
//     take the lock's fencing token, then wait.
//   cut.
//   other (one thread per lock, on the other path): try_lock_for(3 s),
//     which succeeds once the holder's lease has run out on the servers;
//     write both resources with its own token.
//   holder, after the other's write: two commands on its own Client (a
//     PING: its pooled connection, so kTimeout after command_timeout; then
//     a second PING, on a new connection whose SYN is dropped, so kConnect
//     after connect_timeout; PubSubLock gets kConnect both times, its
//     failed renewal having dropped the pooled connection already): what
//     a holder that checks learns, typed and bounded, never a hang. Then what its lock object says: still held
//     (every lock: nobody could tell it), and any warning (RedLock:
//     validity() is 0, the holder's own clock says the lease is over;
//     PubSubLock: lease_risk() is kRenewalFailed, its watchdog could not
//     renew). Then it writes both resources anyway, as a holder that
//     believes its lock does: the plain value (SET) and the
//     FencedResource (its older token).
//   heal; the holder's unlock() reaches the servers again and throws
//     LockLost (taken_by_other: the other still holds it); the other
//     releases.
// Counted per lock and run: other_granted and its wait; double_grant (the
// other was granted while the holder's lock object still said "held");
// phantom_unfenced (the holder's stale SET is the value left: the other's
// write is lost), phantom_fenced (the FencedResource took the stale write;
// 0 is the claim of fencing) and fence_rejections; phantom_careful (a
// holder that writes only when its lock gives no warning would still have
// written: SpinLock, AdaptiveLock and FairLock have no signal to give;
// RedLock's validity and PubSubLock's lease_risk do, here, in a partition
// without a pause or a clock jump — a pause after the check defeats them,
// as the `faults` scenario shows); the holder's two errors (kind and time,
// against command_timeout and connect_timeout); lock_lost after the heal;
// cut_ms and heal_ms (from the heal to the holder's first answered
// command). As in coupon.hpp, luck is taken out: the holder writes only
// after the other's write, so every unfenced run loses that write by
// construction; what is measured is whether the lock, the client and the
// fence notice.
//
// Durations (each a bound, not a measurement): lease 500 ms and watchdog
// lease 600 ms keep a run near one second; the clients' command and connect
// timeouts, 250 ms, are half a lease (redis.io's Redlock page: timeouts well
// below the lease), and thousands of times a veth round trip (tens of
// microseconds), so nothing times out without the cut. The other waits up
// to 3 s: 5 leases.
//
// Where it cannot run: it needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN for
// `ip netns`), iproute2's `ip`, redis-server, for the iptables cut
// `iptables` that works inside a namespace, and a kernel and container that
// allow `ip netns add`, veth links and `ip netns exec` (an unprivileged
// container does not). probe_host() tries each in a probe namespace that it
// deletes again; skip_reason() says which is missing; the scenario then prints it and
// writes one "skipped" row, and the test skips with it.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iomanip>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "benches/harness/redis_lock_registry.hpp"
#include "distributed/child_process.hpp"
#include "distributed/client.hpp"
#include "distributed/embedded_server.hpp"
#include "distributed/error.hpp"
#include "distributed/fencing.hpp"
#include "distributed/lock_lost.hpp"
#include "distributed/red_lock.hpp"

namespace locklab::scenarios::partition {

using Clock = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;
using namespace std::chrono_literals;

// ------------------------------------------------------------ the host

enum class Cut { kIptablesDrop, kLinkDown };

inline const char* cut_name(Cut c) { return c == Cut::kIptablesDrop ? "iptables" : "link"; }

// "iptables" or "link"; nullopt for anything else.
inline std::optional<Cut> parse_cut(std::string_view text) {
  if (text == "iptables") return Cut::kIptablesDrop;
  if (text == "link") return Cut::kLinkDown;
  return std::nullopt;
}

// What the machine offers (probe_host fills it; skip_reason judges it, so
// that the judgement is testable without changing the machine).
struct HostFacts {
  bool root = false;
  std::string ip;            // path of iproute2's `ip`; empty: not found
  std::string iptables;      // path of `iptables`; empty: not found
  std::string redis_server;  // empty: not found
  std::string netns_error;   // what a probe `ip netns add` said; empty: it worked (or was not tried)
  std::string veth_error;    // what a probe veth pair inside that namespace said; empty: it worked
  std::string exec_error;    // what `ip netns exec` (which starts the servers) said; empty: it worked
  std::string iptables_error;  // what `iptables -L` in the probe namespace said; empty: it worked
};

// Why the experiment cannot run here with this cut; empty if it can. The
// first missing requirement, in the order a user would fix them.
inline std::string skip_reason(const HostFacts& h, Cut cut) {
  if (!h.root) return "not root: network namespaces and veth links need CAP_NET_ADMIN (run as root)";
  if (h.ip.empty()) return "iproute2's `ip` not found (Debian package iproute2: ./lab setup)";
  if (h.redis_server.empty()) return "redis-server not found (Debian package redis-server: ./lab setup)";
  if (!h.netns_error.empty()) return "`ip netns add` is not permitted here (an unprivileged container?): " + h.netns_error;
  if (!h.veth_error.empty()) return "veth links cannot be made here (no veth support in this kernel?): " + h.veth_error;
  if (!h.exec_error.empty()) return "`ip netns exec` cannot run a program in a namespace here: " + h.exec_error;
  if (cut == Cut::kIptablesDrop) {
    if (h.iptables.empty()) return "iptables not found (Debian package iptables: ./lab setup), or use --cut=link";
    if (!h.iptables_error.empty()) return "iptables does not work inside a network namespace here: " + h.iptables_error;
  }
  return "";
}

namespace detail {

// `name` on $PATH, then in the sbin folders a non-root PATH lacks; empty
// if none.
inline std::string find_tool(const std::string& name) {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::stringstream in(path);
    for (std::string d; std::getline(in, d, ':');) {
      if (!d.empty()) dirs.push_back(d);
    }
  }
  for (const char* d : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) dirs.emplace_back(d);
  for (const std::string& d : dirs) {
    const std::string p = d + "/" + name;
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

struct ToolResult {
  int status = -1;     // the exit status; -1: it could not be started or was killed
  std::string output;  // stdout and stderr, interleaved
};

// Runs argv (argv[0] an absolute path; no shell) and collects its output
// (distributed/child_process.hpp). The tools run here (ip, iptables) exit in
// milliseconds; 10 s is a bound for a machine under load, not an estimate.
inline ToolResult run_tool(const std::vector<std::string>& argv) {
  CapturedOutput c = run_capturing_output(argv, std::chrono::seconds(10));
  ToolResult r;
  r.status = c.exited ? c.status : -1;
  r.output = std::move(c.output);
  while (!r.output.empty() && (r.output.back() == '\n' || r.output.back() == ' ')) r.output.pop_back();
  return r;
}

inline std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

// run_tool, or std::runtime_error quoting the command and its output.
inline std::string must(const std::vector<std::string>& argv) {
  ToolResult r = run_tool(argv);
  if (r.status != 0) throw std::runtime_error("partition: `" + joined(argv) + "` failed: " + r.output);
  return r.output;
}

inline bool pid_alive(long pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

constexpr std::string_view kNetnsPrefix = "locklab-partition-";
constexpr std::string_view kLinkPrefix = "llp";

// The pid in one of our names, or -1 for any other name: a namespace
// "locklab-partition-<pid>-<k>" or "...-<pid>-probe", a link
// "llp<pid>x<k>a" or "...b".
inline long pid_in(std::string_view name, std::string_view prefix) {
  if (name.substr(0, prefix.size()) != prefix) return -1;
  auto digits = [&](std::size_t& i) {
    const std::size_t from = i;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9') ++i;
    return i > from && i - from <= 9;
  };
  std::size_t i = prefix.size();
  if (!digits(i)) return -1;
  const long pid = std::stol(std::string(name.substr(prefix.size(), i - prefix.size())));
  const std::string_view rest = name.substr(i);
  if (prefix == kNetnsPrefix) {
    if (rest == "-probe") return pid;
    if (rest.empty() || rest[0] != '-') return -1;
    ++i;
    return digits(i) && i == name.size() ? pid : -1;
  }
  if (rest.empty() || rest[0] != 'x') return -1;
  ++i;
  if (!digits(i) || i + 1 != name.size() || (name[i] != 'a' && name[i] != 'b')) return -1;
  return pid;
}

// Deletes namespaces and links that a run of a pid no longer running left
// behind (it crashed, or was killed before its destructors ran). Only our
// own names (prefix + a dead pid) are touched.
inline void remove_stale(const std::string& ip) {
  std::stringstream namespaces(run_tool({ip, "netns", "list"}).output);
  for (std::string line; std::getline(namespaces, line);) {
    const std::string name = line.substr(0, line.find(' '));
    const long pid = pid_in(name, kNetnsPrefix);
    if (pid > 0 && !pid_alive(pid)) (void)run_tool({ip, "netns", "delete", name});
  }
  std::stringstream links(run_tool({ip, "-o", "link", "show"}).output);
  for (std::string line; std::getline(links, line);) {
    // "7: llp123x0a@if6: <BROADCAST,..."
    const auto colon = line.find(": ");
    if (colon == std::string::npos) continue;
    std::string name = line.substr(colon + 2);
    name = name.substr(0, name.find_first_of("@:"));
    const long pid = pid_in(name, kLinkPrefix);
    if (pid > 0 && !pid_alive(pid)) (void)run_tool({ip, "link", "delete", name});
  }
}

// Every IPv4 prefix this namespace has as an address or a route (a bare
// address is a /32). "default" and 0.0.0.0/0 are left out: any more
// specific route of ours wins over them.
inline std::vector<std::pair<std::uint32_t, int>> used_prefixes(const std::string& ip) {
  std::vector<std::pair<std::uint32_t, int>> used;
  const std::string text = must({ip, "-4", "-o", "addr", "show"}) + "\n" + must({ip, "-4", "route", "show", "table", "all"});
  std::stringstream in(text);
  for (std::string word; in >> word;) {
    const auto slash = word.find('/');
    const std::string addr = word.substr(0, slash);
    in_addr a{};
    if (::inet_pton(AF_INET, addr.c_str(), &a) != 1) continue;
    int len = 32;
    if (slash != std::string::npos) {
      try {
        len = std::stoi(word.substr(slash + 1));
      } catch (const std::exception&) {
        continue;
      }
    }
    if (len <= 0 || len > 32) continue;
    used.emplace_back(ntohl(a.s_addr), len);
  }
  return used;
}

// A /29 in 10.200.0.0 - 10.254.255.255 that overlaps none of `used`,
// searched from an offset drawn from `seed`. std::runtime_error if none.
inline std::uint32_t free_block(const std::vector<std::pair<std::uint32_t, int>>& used, std::uint64_t seed) {
  constexpr std::uint32_t kFirst = (10u << 24) | (200u << 16);
  constexpr std::uint32_t kBlocks = (55u << 16) / 8;  // /29s in 10.200/16 .. 10.254/16
  for (std::uint32_t i = 0; i < kBlocks; ++i) {
    const std::uint32_t base = kFirst + static_cast<std::uint32_t>(((seed + i) % kBlocks) * 8);
    bool clash = false;
    for (const auto& [net, len] : used) {
      const std::uint32_t mask = len == 32 ? 0xffffffffu : ~(0xffffffffu >> len);
      // Two prefixes overlap iff one contains the other: compare under the shorter mask.
      const std::uint32_t shorter = len < 29 ? mask : 0xfffffff8u;
      if ((base & shorter) == (net & shorter)) {
        clash = true;
        break;
      }
    }
    if (!clash) return base;
  }
  throw std::runtime_error("partition: no free /29 in 10.200.0.0/16 - 10.254.0.0/16 on this machine");
}

inline std::string dotted(std::uint32_t a) {
  in_addr x{};
  x.s_addr = htonl(a);
  char buf[INET_ADDRSTRLEN];
  return ::inet_ntop(AF_INET, &x, buf, sizeof buf) != nullptr ? buf : "?";
}

}  // namespace detail

// Looks at this machine (and, as root with `ip`, adds and deletes a probe
// namespace, running `iptables -L` inside it). Cheap: a few tool runs.
inline HostFacts probe_host() {
  HostFacts h;
  h.root = ::geteuid() == 0;
  h.ip = detail::find_tool("ip");
  h.iptables = detail::find_tool("iptables");
  try {
    h.redis_server = redis::EmbeddedServer::find_executable();
  } catch (const std::exception&) {
    h.redis_server.clear();
  }
  if (!h.root || h.ip.empty()) return h;
  detail::remove_stale(h.ip);
  const std::string probe = std::string(detail::kNetnsPrefix) + std::to_string(::getpid()) + "-probe";
  const detail::ToolResult added = detail::run_tool({h.ip, "netns", "add", probe});
  if (added.status != 0) {
    h.netns_error = added.output.empty() ? "exit status " + std::to_string(added.status) : added.output;
    return h;
  }
  // A veth pair made and removed inside the probe namespace: nothing of the
  // machine's own network is touched.
  const detail::ToolResult veth =
      detail::run_tool({h.ip, "-n", probe, "link", "add", "probe0", "type", "veth", "peer", "name", "probe1"});
  if (veth.status != 0) h.veth_error = veth.output.empty() ? "exit status " + std::to_string(veth.status) : veth.output;
  // The servers start through `ip netns exec`, which also needs a mount
  // namespace of its own (it remounts /sys): run `ip` itself that way.
  const detail::ToolResult exec = detail::run_tool({h.ip, "netns", "exec", probe, h.ip, "-o", "link", "show", "lo"});
  if (exec.status != 0) h.exec_error = exec.output.empty() ? "exit status " + std::to_string(exec.status) : exec.output;
  if (!h.iptables.empty()) {
    const detail::ToolResult listed = detail::run_tool({h.ip, "netns", "exec", probe, h.iptables, "-w", "-n", "-L", "INPUT"});
    if (listed.status != 0) h.iptables_error = listed.output.empty() ? "exit status " + std::to_string(listed.status) : listed.output;
  }
  (void)detail::run_tool({h.ip, "netns", "delete", probe});
  return h;
}

// skip_reason(probe_host(), cut).
inline std::string partition_unavailable(Cut cut = Cut::kIptablesDrop) { return skip_reason(probe_host(), cut); }

// ------------------------------------------------------------ the network

// The namespace, its two veth paths and the cut (see the essay). Built by
// the constructor, removed by the destructor (healing first), also when the
// constructor fails half-way. Not copyable.
class PartitionNet {
 public:
  explicit PartitionNet(Cut cut) : cut_(cut) {
    ip_ = detail::find_tool("ip");
    iptables_ = detail::find_tool("iptables");
    if (ip_.empty()) throw std::runtime_error("partition: iproute2's `ip` not found");
    static std::atomic<unsigned> counter{0};
    const unsigned k = counter.fetch_add(1) % 1000;  // link names: IFNAMSIZ allows 15 characters
    const std::string pid = std::to_string(::getpid());
    netns_ = std::string(detail::kNetnsPrefix) + pid + "-" + std::to_string(k);
    link_[0] = std::string(detail::kLinkPrefix) + pid + "x" + std::to_string(k) + "a";
    link_[1] = std::string(detail::kLinkPrefix) + pid + "x" + std::to_string(k) + "b";
    try {
      detail::remove_stale(ip_);
      const std::uint32_t base =
          detail::free_block(detail::used_prefixes(ip_), static_cast<std::uint64_t>(::getpid()) * 7919u + k);
      detail::must({ip_, "netns", "add", netns_});
      netns_made_ = true;
      for (int p = 0; p < 2; ++p) {
        const std::uint32_t net = base + static_cast<std::uint32_t>(4 * p);
        root_address_[p] = detail::dotted(net + 1);
        server_address_[p] = detail::dotted(net + 2);
        detail::must({ip_, "link", "add", link_[p], "type", "veth", "peer", "name", kInner[p], "netns", netns_});
        link_made_[p] = true;
        detail::must({ip_, "address", "add", root_address_[p] + "/30", "dev", link_[p]});
        detail::must({ip_, "link", "set", link_[p], "up"});
        detail::must({ip_, "-n", netns_, "address", "add", server_address_[p] + "/30", "dev", kInner[p]});
        detail::must({ip_, "-n", netns_, "link", "set", kInner[p], "up"});
      }
      // The safety check: each server address must route over our own link.
      for (int p = 0; p < 2; ++p) {
        const std::string route = detail::must({ip_, "-4", "route", "get", server_address_[p]});
        if (route.find("dev " + link_[p] + " ") == std::string::npos &&
            route.find("dev " + link_[p] + "\n") == std::string::npos) {
          throw std::runtime_error("partition: " + server_address_[p] + " does not route over " + link_[p] +
                                   " (another route claims it): " + route);
        }
      }
    } catch (...) {
      teardown();
      throw;
    }
  }
  ~PartitionNet() { teardown(); }
  PartitionNet(const PartitionNet&) = delete;
  PartitionNet& operator=(const PartitionNet&) = delete;

  // The servers' addresses (inside the namespace) on the holder's path and
  // on the other path.
  const std::string& holder_path_address() const noexcept { return server_address_[0]; }
  const std::string& other_path_address() const noexcept { return server_address_[1]; }
  // What runs a program inside the namespace (EmbeddedServer's launch_prefix).
  std::vector<std::string> exec_prefix() const { return {ip_, "netns", "exec", netns_}; }
  const std::string& netns() const noexcept { return netns_; }
  const std::string& root_link(int path) const { return link_[path]; }
  Cut cut_method() const noexcept { return cut_; }
  bool is_cut() const noexcept { return cut_active_; }

  // Drops all traffic on the holder's path. std::runtime_error if the tool
  // fails (nothing is left half-cut: a failed rule is removed).
  void cut() {
    if (cut_active_) return;
    if (cut_ == Cut::kIptablesDrop) {
      if (iptables_.empty()) throw std::runtime_error("partition: iptables not found");
      cut_active_ = true;  // heal() removes whichever rule got in
      detail::must(in_netns({iptables_, "-w", "-I", "INPUT", "-i", kInner[0], "-j", "DROP"}));
      detail::must(in_netns({iptables_, "-w", "-I", "OUTPUT", "-o", kInner[0], "-j", "DROP"}));
    } else {
      cut_active_ = true;
      detail::must({ip_, "-n", netns_, "link", "set", kInner[0], "down"});
    }
  }
  // Restores the holder's path. Never throws; false if a tool failed.
  bool heal() noexcept {
    if (!cut_active_) return true;
    bool ok = true;
    try {
      if (cut_ == Cut::kIptablesDrop) {
        // Delete until none is left (a rule inserted twice would need two).
        for (const char* chain : {"INPUT", "OUTPUT"}) {
          const char* dir = chain[0] == 'I' ? "-i" : "-o";
          for (int i = 0; i < 4; ++i) {
            if (detail::run_tool(in_netns({iptables_, "-w", "-D", chain, dir, kInner[0], "-j", "DROP"})).status != 0) break;
          }
        }
      } else {
        ok = detail::run_tool({ip_, "-n", netns_, "link", "set", kInner[0], "up"}).status == 0;
      }
    } catch (...) {
      ok = false;
    }
    cut_active_ = false;
    return ok;
  }

 private:
  static constexpr const char* kInner[2] = {"pa", "pb"};  // names inside our namespace only

  std::vector<std::string> in_netns(std::vector<std::string> argv) const {
    std::vector<std::string> all = exec_prefix();
    all.insert(all.end(), argv.begin(), argv.end());
    return all;
  }

  void teardown() noexcept {
    try {
      heal();
      for (int p = 0; p < 2; ++p) {
        if (link_made_[p]) (void)detail::run_tool({ip_, "link", "delete", link_[p]});
        link_made_[p] = false;
      }
      if (netns_made_) (void)detail::run_tool({ip_, "netns", "delete", netns_});
      netns_made_ = false;
    } catch (...) {
    }
  }

  Cut cut_;
  std::string ip_, iptables_, netns_;
  std::string link_[2], root_address_[2], server_address_[2];
  bool netns_made_ = false;
  bool link_made_[2] = {false, false};
  bool cut_active_ = false;
};

// ------------------------------------------------------------ the experiment

struct PartitionConfig {
  Cut cut = Cut::kIptablesDrop;
  ms lease{500};
  ms watchdog_lease{600};
  ms command_timeout{250};
  ms connect_timeout{250};
  ms other_wait{3'000};
  // The other client's lease: long enough to still hold when the holder's
  // unlock() comes after the heal, so that LockLost says taken_by_other.
  ms other_lease{5'000};
  int runs = 1;
  std::string prefix = "locklab:partition";
};

// One lock in one run (see the essay for each field).
struct LockOutcome {
  std::string lock;
  bool other_granted = false;
  double other_wait_ms = -1;
  bool double_grant = false;
  bool holder_believed_held = false;
  bool holder_warned = false;
  std::string warning;              // what the lock said ("" nothing)
  double holder_validity_ms = -1;   // RedLock only
  int phantom_unfenced = 0, phantom_fenced = 0, phantom_careful = 0, fence_rejections = 0;
  // The holder's two commands during the cut: the error kind ("none": it
  // was answered, so the cut leaked) and how long each took.
  std::string first_error, second_error;
  double first_error_ms = -1, second_error_ms = -1;
  bool lock_lost = false, taken_by_other = false;
  std::string unlock_error;  // "" none, else the redis::Error kind or the exception
  std::int64_t failed_renewals = 0;
  std::string error;        // a step of the holder that failed unexpectedly ("" none)
  std::string other_error;  // the same for the other client (a field each: two threads write them)
};

struct RunOutcome {
  std::vector<LockOutcome> locks;
  double cut_ms = 0;   // from the cut to the heal
  double heal_ms = -1; // from the heal to the holder's first answered command; -1: never within 5 s
  bool other_path_ok = false;  // a command on the other path was answered during the cut
  double wall_ms = 0;
};

namespace detail {

// A one-shot flag a thread can wait for, with a bound.
class Event {
 public:
  void set() {
    {
      std::lock_guard<std::mutex> g(mu_);
      set_ = true;
    }
    cv_.notify_all();
  }
  bool wait(ms bound) {
    std::unique_lock<std::mutex> g(mu_);
    return cv_.wait_for(g, bound, [&] { return set_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

// One side's hold of one lock, whatever its type.
class TrialLock {
 public:
  virtual ~TrialLock() = default;
  virtual bool try_lock_for(ms wait) = 0;
  virtual void unlock() = 0;
  virtual std::int64_t token() = 0;
  virtual bool held() const = 0;
  // What the lock tells its holder without a round trip; "" nothing.
  virtual std::string warning() const = 0;
  virtual double validity_ms() const { return -1; }
  virtual std::int64_t failed_renewals() const { return 0; }
  // A Client of this side, for the holder's commands during the cut.
  virtual redis::Client& client() = 0;
};

template <class L>
class RegistryTrialLock final : public TrialLock {
 public:
  RegistryTrialLock(const redis::Client::Options& co, const std::string& name, const PartitionConfig& c)
      : client_(co), lock_(client_, name, options(c)) {}
  bool try_lock_for(ms wait) override { return lock_.try_lock_for(wait); }
  void unlock() override { lock_.unlock(); }
  std::int64_t token() override { return lock_.token(); }
  bool held() const override { return lock_.is_held_by_current_thread(); }
  std::string warning() const override {
    if constexpr (requires(const L& l) { l.lease_risk(); }) {
      const auto risk = lock_.lease_risk();
      if (!risk) return "";
      return risk->kind == L::LeaseRisk::Kind::kLost ? "lease_risk: lost" : "lease_risk: renewal failed";
    } else {
      return "";
    }
  }
  std::int64_t failed_renewals() const override {
    if constexpr (requires(const L& l) { l.failed_renewals(); }) {
      return static_cast<std::int64_t>(lock_.failed_renewals());
    } else {
      return 0;
    }
  }
  redis::Client& client() override { return client_; }

 private:
  static typename L::Options options(const PartitionConfig& c) {
    typename L::Options o = bench::redis_lock_options<L>({.lease = c.lease, .fenced = true});
    // A watchdog lock runs in watchdog mode, its renewals cut off with it.
    if constexpr (requires { o.watchdog_lease; }) {
      o.lease = ms(0);
      o.watchdog_lease = c.watchdog_lease;
    }
    return o;
  }
  redis::Client client_;
  L lock_;
};

// RedLock over the three servers; tokens from the database (N servers have
// no common counter: fencing.hpp).
class RedLockTrial final : public TrialLock {
 public:
  RedLockTrial(const std::vector<redis::Client::Options>& nodes, redis::Client::Options db, const std::string& name,
               const PartitionConfig& c)
      : db_(db), tokens_(db_, name) {
    std::vector<redis::Client*> raw;
    for (const auto& o : nodes) {
      clients_.push_back(std::make_unique<redis::Client>(o));
      raw.push_back(clients_.back().get());
    }
    redis::RedLock::Options o;
    o.lease = c.lease;
    o.retry_delay = 20ms;  // a few retries per lease: the wait is the lease, not the retry
    lock_ = std::make_unique<redis::RedLock>(raw, name, o);
  }
  bool try_lock_for(ms wait) override {
    if (!lock_->try_lock_for(wait)) return false;
    token_ = tokens_.next();
    return true;
  }
  void unlock() override { lock_->unlock(); }
  std::int64_t token() override { return token_; }
  bool held() const override { return lock_->is_held_by_current_thread(); }
  std::string warning() const override { return lock_->validity().count() <= 0 ? "validity: 0 ms" : ""; }
  double validity_ms() const override { return static_cast<double>(lock_->validity().count()); }
  redis::Client& client() override { return *clients_.front(); }

 private:
  redis::Client db_;
  redis::FencingTokens tokens_;
  std::vector<std::unique_ptr<redis::Client>> clients_;
  std::unique_ptr<redis::RedLock> lock_;
  std::int64_t token_ = 0;
};

// Builds one side's lock: the holder's (true) or the other client's.
using LockFactory = std::function<std::unique_ptr<TrialLock>(bool holder)>;

struct LockKind {
  std::string name;
  LockFactory make;
};

inline double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

}  // namespace detail

// The servers and the network of an experiment: built once, reused by
// every run. Member order is teardown order reversed: the servers stop
// before the namespace goes.
class PartitionWorld {
 public:
  explicit PartitionWorld(const PartitionConfig& c) : config_(c), net_(c.cut) {
    redis::EmbeddedServer::Options o;
    o.launch_prefix = net_.exec_prefix();
    o.bind = {net_.holder_path_address(), net_.other_path_address()};
    o.extra_args = {"--protected-mode", "no"};  // reachable only from this host's veth ends
    for (int i = 0; i < 3; ++i) lock_servers_.push_back(std::make_unique<redis::EmbeddedServer>(o));
    db_ = std::make_unique<redis::EmbeddedServer>();
  }

  PartitionNet& net() { return net_; }
  const PartitionConfig& config() const { return config_; }
  // Client options for server i over the holder's path (holder = true) or
  // the other path.
  redis::Client::Options lock_server(int i, bool holder) const {
    redis::Client::Options o;
    o.host = holder ? net_.holder_path_address() : net_.other_path_address();
    o.port = lock_servers_.at(static_cast<std::size_t>(i))->port();
    o.command_timeout = config_.command_timeout;
    o.connect_timeout = config_.connect_timeout;
    o.lazy_connect = true;  // nothing is sent until the lock's first command
    return o;
  }
  redis::Client::Options db() const { return db_->client_options(); }
  // Empties every server (over the other path: the holder's may be cut).
  void flush() {
    for (int i = 0; i < static_cast<int>(lock_servers_.size()); ++i) {
      redis::Client(lock_server(i, false)).command({"FLUSHALL"});
    }
    redis::Client(db()).command({"FLUSHALL"});
  }

  // Every registry lock (fenced, on server 0) and RedLock (3 servers).
  std::vector<detail::LockKind> lock_kinds() const {
    std::vector<detail::LockKind> kinds;
    const std::string prefix = config_.prefix;
    bench::for_each_redis_lock([&]<class L>(const bench::RedisLockInfo& info) {
      const std::string name = std::string(info.name);
      kinds.push_back({name, [this, name, prefix](bool holder) -> std::unique_ptr<detail::TrialLock> {
                         return std::make_unique<detail::RegistryTrialLock<L>>(lock_server(0, holder),
                                                                               prefix + ":" + name, side(holder));
                       }});
    });
    kinds.push_back({"RedLock", [this, prefix](bool holder) -> std::unique_ptr<detail::TrialLock> {
                       std::vector<redis::Client::Options> nodes;
                       for (int i = 0; i < 3; ++i) nodes.push_back(lock_server(i, holder));
                       return std::make_unique<detail::RedLockTrial>(nodes, db(), prefix + ":RedLock", side(holder));
                     }});
    return kinds;
  }

 private:
  // The configuration a side's locks are built with: the other's leases
  // are other_lease.
  PartitionConfig side(bool holder) const {
    PartitionConfig c = config_;
    if (!holder) c.lease = c.watchdog_lease = c.other_lease;
    return c;
  }

  PartitionConfig config_;
  PartitionNet net_;
  std::vector<std::unique_ptr<redis::EmbeddedServer>> lock_servers_;
  std::unique_ptr<redis::EmbeddedServer> db_;
};

// One run: every lock at once through one cut (the essay's timeline).
// Throws std::runtime_error if the world misbehaves (a holder cannot
// acquire before the cut, a thread fails); the partition is healed on
// every path out (the world's destructor removes it).
inline RunOutcome run_partition_once(PartitionWorld& world) {
  const PartitionConfig& c = world.config();
  world.flush();
  const auto kinds = world.lock_kinds();
  const std::size_t n = kinds.size();
  RunOutcome run;
  run.locks.resize(n);
  struct Sync {
    detail::Event holding, other_wrote, holder_wrote, holder_unlocked;
  };
  std::vector<Sync> sync(n);
  detail::Event cut, healed;
  const auto start = Clock::now();
  // Every wait below is bounded by this: the longest a run can legitimately take.
  const ms bound = c.other_wait + 4 * (c.command_timeout + c.connect_timeout) + 5s;
  std::vector<std::thread> threads;
  // On every way out (an exception included): heal, release every wait, join.
  struct Joiner {
    std::vector<std::thread>& ts;
    PartitionNet& net;
    std::vector<Sync>& sync;
    detail::Event& cut;
    detail::Event& healed;
    ~Joiner() {
      net.heal();
      cut.set();
      healed.set();
      for (Sync& s : sync) {
        s.other_wrote.set();
        s.holder_unlocked.set();
      }
      for (auto& t : ts) {
        if (t.joinable()) t.join();
      }
    }
  } joiner{threads, world.net(), sync, cut, healed};

  const redis::Client::Options db_options = world.db();
  for (std::size_t i = 0; i < n; ++i) {
    LockOutcome& out = run.locks[i];
    out.lock = kinds[i].name;
    const std::string plain_key = c.prefix + ":" + out.lock + ":plain";
    const std::string fenced_key = c.prefix + ":" + out.lock + ":fenced";
    // The holder.
    threads.emplace_back([&, i, plain_key, fenced_key] {
      LockOutcome& o = run.locks[i];
      Sync& s = sync[i];
      try {
        redis::Client db(db_options);
        redis::FencedResource fenced(db, fenced_key);
        auto lock = kinds[i].make(true);
        if (!lock->try_lock_for(2s)) throw std::runtime_error("the holder could not acquire before the cut");
        const std::int64_t token = lock->token();
        s.holding.set();
        if (!cut.wait(bound)) throw std::runtime_error("no cut came");
        s.other_wrote.wait(bound);  // the other's write first: the holder's is stale by construction
        // What a holder that asks learns: two commands on its side of the cut.
        for (int k = 0; k < 2; ++k) {
          const auto t0 = Clock::now();
          std::string kind = "none";
          try {
            (void)lock->client().command({"PING"});
          } catch (const redis::Error& e) {
            kind = redis::Error::kind_name(e.kind());
          }
          (k == 0 ? o.first_error : o.second_error) = kind;
          (k == 0 ? o.first_error_ms : o.second_error_ms) = detail::ms_since(t0);
        }
        o.holder_believed_held = lock->held();
        o.warning = lock->warning();
        o.holder_warned = !o.warning.empty();
        o.holder_validity_ms = lock->validity_ms();
        o.double_grant = o.other_granted && o.holder_believed_held;
        // The stale writes of a holder that believes its lock.
        db.command({"SET", plain_key, "holder"});
        const redis::FenceVerdict v = fenced.write(token, "holder");
        const bool stale = o.other_granted;  // the other wrote first (or nobody else was granted)
        o.phantom_unfenced = stale && db.command({"GET", plain_key}).as_string() == "holder" ? 1 : 0;
        o.phantom_fenced = stale && v.accepted ? 1 : 0;
        o.fence_rejections = v.accepted ? 0 : 1;
        o.phantom_careful = stale && !o.holder_warned ? 1 : 0;
        s.holder_wrote.set();
        healed.wait(bound);
        try {
          lock->unlock();
        } catch (const redis::LockLost& e) {
          o.lock_lost = true;
          o.taken_by_other = e.taken_by_other();
        } catch (const redis::Error& e) {
          o.unlock_error = redis::Error::kind_name(e.kind());
        } catch (const std::exception& e) {
          o.unlock_error = e.what();
        }
        o.failed_renewals = lock->failed_renewals();
      } catch (const std::exception& e) {
        o.error = std::string("holder: ") + e.what();
      }
      s.holding.set();
      s.holder_wrote.set();
      s.holder_unlocked.set();
    });
    // The other client.
    threads.emplace_back([&, i, plain_key, fenced_key] {
      LockOutcome& o = run.locks[i];
      Sync& s = sync[i];
      try {
        redis::Client db(db_options);
        redis::FencedResource fenced(db, fenced_key);
        auto lock = kinds[i].make(false);
        if (!cut.wait(bound)) throw std::runtime_error("no cut came");
        const auto t0 = Clock::now();
        const bool granted = lock->try_lock_for(c.other_wait);
        o.other_wait_ms = detail::ms_since(t0);
        if (granted) {
          const std::int64_t token = lock->token();
          db.command({"SET", plain_key, "other"});
          (void)fenced.write(token, "other");
          o.other_granted = true;  // read by the holder after other_wrote
        }
        s.other_wrote.set();
        s.holder_unlocked.wait(bound);  // hold on past the heal: the holder's unlock finds us
        if (granted) {
          try {
            lock->unlock();
          } catch (const std::exception&) {
            // Its lease is long gone by now on a slow run; not what is measured.
          }
        }
      } catch (const std::exception& e) {
        o.other_error = e.what();
      }
      s.other_wrote.set();
    });
  }

  for (std::size_t i = 0; i < n; ++i) {
    if (!sync[i].holding.wait(bound)) throw std::runtime_error("partition: a holder did not report");
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!run.locks[i].error.empty()) {
      cut.set();
      throw std::runtime_error("partition: " + run.locks[i].lock + ": " + run.locks[i].error);
    }
  }
  world.net().cut();
  const auto cut_at = Clock::now();
  cut.set();
  {
    redis::Client::Options o = world.lock_server(0, false);
    try {
      redis::Client other(o);
      run.other_path_ok = other.command({"PING"}).describe() == "PONG";
    } catch (const redis::Error&) {
      run.other_path_ok = false;
    }
  }
  for (std::size_t i = 0; i < n; ++i) sync[i].holder_wrote.wait(bound);
  world.net().heal();
  const auto healed_at = Clock::now();
  run.cut_ms = std::chrono::duration<double, std::milli>(healed_at - cut_at).count();
  {
    redis::Client probe(world.lock_server(0, true));
    while (Clock::now() - healed_at < 5s) {
      try {
        if (probe.command({"PING"}).describe() == "PONG") {
          run.heal_ms = detail::ms_since(healed_at);
          break;
        }
      } catch (const redis::Error&) {
        std::this_thread::sleep_for(5ms);
      }
    }
  }
  healed.set();
  for (auto& t : threads) t.join();
  run.wall_ms = detail::ms_since(start);
  for (const LockOutcome& o : run.locks) {
    if (!o.error.empty()) throw std::runtime_error("partition: " + o.lock + ": " + o.error);
    if (!o.other_error.empty()) throw std::runtime_error("partition: " + o.lock + ": other: " + o.other_error);
  }
  return run;
}

// Builds the world, runs c.runs runs, tears everything down.
inline std::vector<RunOutcome> run_partition(const PartitionConfig& c) {
  PartitionWorld world(c);
  std::vector<RunOutcome> runs;
  for (int r = 0; r < c.runs; ++r) runs.push_back(run_partition_once(world));
  return runs;
}

// ------------------------------------------------------------ reporting

// One lock's run as the JSON row's counters (docs/architecture.md's shape:
// the columns of scenario_partition.json).
inline std::vector<std::pair<std::string, double>> counters(const LockOutcome& o, const RunOutcome& r,
                                                            const PartitionConfig& c) {
  auto count = [&](const std::string& kind) {
    return double((o.first_error == kind ? 1 : 0) + (o.second_error == kind ? 1 : 0));
  };
  const double answered = count("none");
  const double other_kinds = 2 - answered - count("timeout") - count("connect");
  return {{"other_granted", o.other_granted ? 1.0 : 0.0},
          {"other_wait_ms", o.other_wait_ms},
          {"double_grant", o.double_grant ? 1.0 : 0.0},
          {"holder_believed_held", o.holder_believed_held ? 1.0 : 0.0},
          {"holder_warned", o.holder_warned ? 1.0 : 0.0},
          {"holder_validity_ms", o.holder_validity_ms},
          {"phantom_unfenced", double(o.phantom_unfenced)},
          {"phantom_fenced", double(o.phantom_fenced)},
          {"phantom_careful", double(o.phantom_careful)},
          {"fence_rejections", double(o.fence_rejections)},
          {"holder_timeout_errors", count("timeout")},
          {"holder_connect_errors", count("connect")},
          {"holder_other_errors", other_kinds},
          {"holder_commands_answered", answered},
          {"holder_first_error_ms", o.first_error_ms},
          {"holder_second_error_ms", o.second_error_ms},
          {"command_timeout_ms", double(c.command_timeout.count())},
          {"connect_timeout_ms", double(c.connect_timeout.count())},
          {"lock_lost", o.lock_lost ? 1.0 : 0.0},
          {"lock_lost_taken_by_other", o.taken_by_other ? 1.0 : 0.0},
          {"unlock_errors", o.unlock_error.empty() ? 0.0 : 1.0},
          {"failed_renewals", double(o.failed_renewals)},
          {"cut_ms", r.cut_ms},
          {"heal_ms", r.heal_ms},
          {"other_path_ok", r.other_path_ok ? 1.0 : 0.0},
          {"cut_method", c.cut == Cut::kIptablesDrop ? 0.0 : 1.0}};
}

// The table: one line per lock, each cell "<runs with it>/<runs>" or a
// range over the runs.
inline void print_table(std::ostream& out, const std::vector<RunOutcome>& runs, const PartitionConfig& c) {
  if (runs.empty()) return;
  const std::size_t n = runs.front().locks.size();
  const std::string of = "/" + std::to_string(runs.size());
  out << "\npartition: the holder cut off (" << cut_name(c.cut) << ") from 3 redis-servers in a network namespace; lease "
      << c.lease.count() << " ms (PubSubLock: watchdog, " << c.watchdog_lease.count() << " ms), command timeout "
      << c.command_timeout.count() << " ms, connect timeout " << c.connect_timeout.count() << " ms; " << runs.size()
      << " run(s)\n\n";
  const char* heads[] = {"lock", "granted", "double", "phantom", "fenced", "rejected", "warned", "careful",
                         "1st error", "2nd error", "lock lost"};
  const int widths[] = {14, 9, 8, 9, 8, 10, 8, 9, 18, 18, 10};
  for (int k = 0; k < 11; ++k) out << (k == 0 ? std::left : std::right) << std::setw(widths[k]) << heads[k];
  out << "\n";
  for (std::size_t i = 0; i < n; ++i) {
    int granted = 0, dbl = 0, ph = 0, fe = 0, rej = 0, warned = 0, careful = 0, lost = 0;
    double e1 = 0, e2 = 0;
    std::string k1 = runs.front().locks[i].first_error, k2 = runs.front().locks[i].second_error;
    for (const RunOutcome& r : runs) {
      const LockOutcome& o = r.locks[i];
      granted += o.other_granted;
      dbl += o.double_grant;
      ph += o.phantom_unfenced;
      fe += o.phantom_fenced;
      rej += o.fence_rejections;
      warned += o.holder_warned;
      careful += o.phantom_careful;
      lost += o.lock_lost;
      e1 = std::max(e1, o.first_error_ms);
      e2 = std::max(e2, o.second_error_ms);
      if (o.first_error != k1) k1 = "mixed";
      if (o.second_error != k2) k2 = "mixed";
    }
    auto err = [](const std::string& kind, double worst) {
      std::ostringstream s;
      s << kind << " <=" << static_cast<long>(worst + 0.5) << "ms";
      return s.str();
    };
    out << std::left << std::setw(widths[0]) << runs.front().locks[i].lock << std::right << std::setw(widths[1])
        << (std::to_string(granted) + of) << std::setw(widths[2]) << (std::to_string(dbl) + of) << std::setw(widths[3])
        << (std::to_string(ph) + of) << std::setw(widths[4]) << (std::to_string(fe) + of) << std::setw(widths[5])
        << (std::to_string(rej) + of) << std::setw(widths[6]) << (std::to_string(warned) + of) << std::setw(widths[7])
        << (std::to_string(careful) + of) << std::setw(widths[8]) << err(k1, e1) << std::setw(widths[9])
        << err(k2, e2) << std::setw(widths[10]) << (std::to_string(lost) + of) << "\n";
  }
  double cut_max = 0, heal_max = 0;
  int other_ok = 0;
  for (const RunOutcome& r : runs) {
    cut_max = std::max(cut_max, r.cut_ms);
    heal_max = std::max(heal_max, r.heal_ms);
    other_ok += r.other_path_ok;
  }
  out << "(granted: the other client acquired during the cut; double: while the holder's lock object still said held;"
         "\n phantom / fenced: the holder's stale write taken by a plain value / by a FencedResource; warned: the lock"
         "\n told the holder first (RedLock validity 0, PubSubLock lease_risk); careful: a holder that heeds warnings"
         "\n still wrote; errors: the holder's two PINGs during the cut; lock lost: unlock() after the heal)\n"
      << "cut lasted up to " << static_cast<long>(cut_max + 0.5) << " ms; the holder's path answered again "
      << static_cast<long>(heal_max + 0.5) << " ms after the heal at worst; the other path answered during the cut in "
      << other_ok << of << " runs\n";
}

}  // namespace locklab::scenarios::partition
