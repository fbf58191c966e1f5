#include "distributed/lease_renewer.hpp"

#include <stdexcept>

namespace locklab::redis {

LeaseRenewer::~LeaseRenewer() {
  {
    std::lock_guard g(mu_);
    stop_ = true;
    wake_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

LeaseRenewer::Id LeaseRenewer::schedule(const void* group, Clock::duration period, Job job) {
  if (period <= Clock::duration::zero()) throw std::invalid_argument("LeaseRenewer::schedule: period must be positive");
  if (!job) throw std::invalid_argument("LeaseRenewer::schedule: empty job");
  std::lock_guard g(mu_);
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  const Id id = next_id_++;
  const auto due = Clock::now() + period;
  entries_.emplace(id, Entry{group, period, std::move(job), due});
  const bool earliest = due_.empty() || due < due_.begin()->first;
  due_.emplace(due, id);
  if (earliest) wake_.notify_all();  // the timer sleeps until a later time
  return id;
}

void LeaseRenewer::cancel(Id id) {
  std::lock_guard g(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  due_.erase({it->second.due, id});  // absent while it runs: then erase does nothing
  entries_.erase(it);                // a run in progress finds no entry and is dropped
}

void LeaseRenewer::cancel_group(const void* group) {
  std::unique_lock g(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.group == group) {
      due_.erase({it->second.due, it->first});
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  // From inside a job the run in progress is our caller's own: waiting for
  // it would wait for ever.
  if (std::this_thread::get_id() == thread_.get_id()) return;
  run_ended_.wait(g, [&] { return running_group_ != group; });
}

std::size_t LeaseRenewer::scheduled() const {
  std::lock_guard g(mu_);
  return entries_.size();
}

bool LeaseRenewer::thread_started() const {
  std::lock_guard g(mu_);
  return thread_.joinable();
}

void LeaseRenewer::loop() {
  std::unique_lock g(mu_);
  while (!stop_) {
    if (due_.empty()) {
      wake_.wait(g);
      continue;
    }
    const auto [due, id] = *due_.begin();
    if (Clock::now() < due) {
      wake_.wait_until(g, due);
      continue;
    }
    due_.erase(due_.begin());
    Entry& entry = entries_.at(id);
    Job job = std::move(entry.job);
    entry.job = nullptr;
    running_group_ = entry.group;
    const auto started = Clock::now();
    g.unlock();
    bool again = false;
    try {
      again = job();
    } catch (...) {
      // A job must not throw (see the header); one that does is not run
      // again, and the other jobs keep their timer.
    }
    g.lock();
    running_group_ = nullptr;
    run_ended_.notify_all();
    // Cancelled while it ran: the entry is gone and the job is dropped here.
    auto it = entries_.find(id);
    if (it == entries_.end()) continue;
    if (!again) {
      entries_.erase(it);
      continue;
    }
    it->second.job = std::move(job);
    it->second.due = started + it->second.period;
    due_.emplace(it->second.due, id);
  }
}

}  // namespace locklab::redis
