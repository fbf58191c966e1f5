#include "distributed/red_lock.hpp"

#include <algorithm>
#include <future>
#include <random>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <unordered_set>

#include "distributed/lock_keys.hpp"
#include "distributed/lock_lost.hpp"
#include "distributed/script.hpp"
#include "distributed/spin_lock.hpp"

namespace locklab::redis {

namespace {

double uniform(double lo, double hi) {
  thread_local std::minstd_rand rng(std::random_device{}());
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}

}  // namespace

std::size_t RedLock::Round::count(int v) const {
  return static_cast<std::size_t>(std::count(results.begin(), results.end(), v));
}

RedLock::RedLock(std::vector<Client*> nodes, std::string name) : RedLock(std::move(nodes), std::move(name), Options{}) {}

RedLock::RedLock(std::vector<Client*> nodes, std::string name, Options options)
    : nodes_(std::move(nodes)), name_(std::move(name)), options_(options) {
  if (nodes_.empty()) throw std::invalid_argument("RedLock: no nodes");
  std::unordered_set<Client*> seen;
  for (Client* c : nodes_) {
    if (c == nullptr) throw std::invalid_argument("RedLock: a null Client");
    if (!seen.insert(c).second) throw std::invalid_argument("RedLock: the same Client given twice (nodes must be independent)");
  }
  check_lock_name("RedLock", name_);
  if (options_.lease.count() <= 0) throw std::invalid_argument("RedLock: lease must be positive");
  if (options_.retry_delay.count() <= 0) throw std::invalid_argument("RedLock: retry_delay must be positive");
  if (options_.lock_timeout.count() <= 0) throw std::invalid_argument("RedLock: lock_timeout must be positive");
  if (!(options_.drift_factor >= 0.0 && options_.drift_factor < 1.0)) {
    throw std::invalid_argument("RedLock: drift_factor must be in [0, 1)");
  }
  if (options_.drift_floor.count() < 0) throw std::invalid_argument("RedLock: negative drift_floor");
  detail::check_at_most_max("RedLock: lease", options_.lease);
  detail::check_at_most_max("RedLock: retry_delay", options_.retry_delay);
  detail::check_at_most_max("RedLock: drift_floor", options_.drift_floor);
  detail::check_at_most_max("RedLock: lock_timeout", options_.lock_timeout);
}

template <class F>
RedLock::Round RedLock::on_all(F per_node) {
  Round round;
  round.results.assign(nodes_.size(), -2);
  round.errors.assign(nodes_.size(), std::string());
  bool first_error = true;
  auto run = [&](std::size_t i) {
    try {
      round.results[i] = per_node(*nodes_[i]);
    } catch (const Error& e) {
      round.errors[i] = e.what();
      return e.kind();
    }
    return Error::Kind::kProtocol;  // unused: no error
  };
  std::vector<std::future<Error::Kind>> others;
  others.reserve(nodes_.size() - 1);
  for (std::size_t i = 1; i < nodes_.size(); ++i) others.push_back(std::async(std::launch::async, run, i));
  const Error::Kind k0 = run(0);
  std::vector<Error::Kind> kinds{k0};
  for (auto& f : others) kinds.push_back(f.get());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (round.results[i] != -2) continue;
    node_errors_.fetch_add(1, std::memory_order_relaxed);
    if (first_error) {
      round.first_error_kind = kinds[i];
      first_error = false;
    }
  }
  return round;
}

RedLock::Round RedLock::set_all(const std::string& token) {
  const std::string lease = std::to_string(options_.lease.count());
  return on_all([&](Client& c) { return c.command({"SET", name_, token, "NX", "PX", lease}).is_nil() ? 0 : 1; });
}

RedLock::Round RedLock::release_all(const std::string& token) {
  return on_all([&](Client& c) {
    return static_cast<int>(c.eval(compare_and_delete_script(), {name_}, {token}).as_integer());
  });
}

void RedLock::lock() {
  const auto start = detail::Clock::now();
  Round last;
  std::uint64_t attempts = 0;
  if (acquire_until(detail::deadline_after(options_.lock_timeout), &last, &attempts)) return;
  throw no_quorum(last, attempts,
                  std::chrono::duration_cast<std::chrono::milliseconds>(detail::Clock::now() - start));
}

NoQuorum RedLock::no_quorum(const Round& last, std::uint64_t attempts, std::chrono::milliseconds waited) const {
  std::vector<NoQuorum::Vote> votes;
  std::string listed;
  for (std::size_t i = 0; i < node_count(); ++i) {
    NoQuorum::Vote v{nodes_[i]->options().endpoint(), NoQuorum::Vote::Kind::kRefused, {}};
    if (last.results[i] == 1) v.kind = NoQuorum::Vote::Kind::kGranted;
    if (last.results[i] == -2) {
      v.kind = NoQuorum::Vote::Kind::kError;
      v.error = last.errors[i];
    }
    listed += (i == 0 ? "" : ", ") + v.node +
              (v.kind == NoQuorum::Vote::Kind::kGranted   ? " granted"
               : v.kind == NoQuorum::Vote::Kind::kRefused ? " refused"
                                                          : " error: " + v.error);
    votes.push_back(std::move(v));
  }
  return NoQuorum("RedLock '" + name_ + "': no quorum after " + std::to_string(attempts) + " attempts in " +
                      std::to_string(waited.count()) + " ms (granted by " + std::to_string(last.count(1)) + " of " +
                      std::to_string(node_count()) + " nodes, quorum " + std::to_string(quorum()) +
                      (last.count(1) >= quorum() ? ", but too slow to leave any validity" : "") +
                      "); last attempt: " + listed,
                  std::move(votes), attempts);
}

bool RedLock::acquire_until(detail::Clock::time_point deadline, Round* last, std::uint64_t* attempts) {
  using Clock = detail::Clock;
  const std::string owner = nodes_.front()->thread_owner();
  {
    std::lock_guard g(mu_);
    if (holds_.count(owner) > 0) detail::throw_would_deadlock(name_);
  }
  const auto lease = std::chrono::duration_cast<Clock::duration>(options_.lease);
  const auto drift = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::milli>(static_cast<double>(options_.lease.count()) * options_.drift_factor) +
      options_.drift_floor);
  for (;;) {
    attempts_.fetch_add(1, std::memory_order_relaxed);
    if (attempts != nullptr) ++*attempts;
    const std::string token = owner + ":" + std::to_string(acquisitions_.fetch_add(1, std::memory_order_relaxed));
    const auto start = Clock::now();
    const Round round = set_all(token);
    const auto valid_until = start + lease - drift;
    if (round.count(1) >= quorum() && Clock::now() < valid_until) {
      std::lock_guard g(mu_);
      holds_[owner] = Hold{token, valid_until};
      return true;
    }
    // No quorum, or too slow to leave any validity: undo everywhere (a node
    // that timed out may have set it), errors ignored (the lease clears them).
    if (round.count(1) + round.count(-2) > 0) (void)release_all(token);
    const auto now = Clock::now();
    if (now >= deadline) {
      if (last != nullptr) *last = round;
      return false;
    }
    const double mean = static_cast<double>(options_.retry_delay.count());
    const auto sleep = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double, std::milli>(uniform(mean / 2, mean * 3 / 2)));
    // The last attempt is made at the deadline, so false never comes early.
    std::this_thread::sleep_until(std::min(now + sleep, deadline));
  }
}

void RedLock::unlock() {
  const std::string owner = nodes_.front()->thread_owner();
  Hold hold;
  {
    std::lock_guard g(mu_);
    auto it = holds_.find(owner);
    if (it == holds_.end()) detail::throw_not_owner(name_);
    hold = std::move(it->second);
    holds_.erase(it);  // whatever the nodes say next, this thread no longer holds it
  }
  const Round round = release_all(hold.token);
  const std::size_t deleted = round.count(1);
  if (deleted >= quorum()) return;
  const std::size_t not_ours = round.count(0) + round.count(-1);
  if (not_ours > node_count() - quorum()) throw LockLost(name_, round.count(-1) > 0);
  std::string why;
  for (std::size_t i = 0; i < node_count(); ++i) {
    if (round.results[i] != -2) continue;
    why = round.errors[i];
    break;
  }
  throw Error(round.first_error_kind, "RedLock '" + name_ + "': release confirmed on " + std::to_string(deleted) +
                                          " of " + std::to_string(node_count()) + " nodes (quorum " +
                                          std::to_string(quorum()) + "); first failure: " + why);
}

std::chrono::milliseconds RedLock::validity() const {
  const auto now = detail::Clock::now();
  std::lock_guard g(mu_);
  auto it = holds_.find(nodes_.front()->thread_owner());
  if (it == holds_.end() || it->second.valid_until <= now) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(it->second.valid_until - now);
}

bool RedLock::is_held_by_current_thread() const {
  std::lock_guard g(mu_);
  return holds_.count(nodes_.front()->thread_owner()) > 0;
}

}  // namespace locklab::redis
