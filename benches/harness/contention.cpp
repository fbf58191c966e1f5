#include "benches/harness/contention.hpp"

#include <algorithm>
#include <ctime>
#include <numeric>

namespace locklab::bench {

std::uint64_t ContentionResult::total_ops() const noexcept {
  return std::accumulate(ops_per_waiter.begin(), ops_per_waiter.end(), std::uint64_t{0});
}

double ContentionResult::ops_per_second() const noexcept {
  return wall_seconds > 0 ? static_cast<double>(total_ops()) / wall_seconds : 0.0;
}

double ContentionResult::ns_per_op() const noexcept {
  const std::uint64_t ops = total_ops();
  return ops > 0 ? wall_seconds * 1e9 / static_cast<double>(ops) : 0.0;
}

double ContentionResult::cpu_per_wall() const noexcept {
  return wall_seconds > 0 ? cpu_seconds / wall_seconds : 0.0;
}

double ContentionResult::fairness() const noexcept { return detail::min_over_max(ops_per_waiter); }

namespace detail {

double min_over_max(const std::vector<std::uint64_t>& counts) noexcept {
  if (counts.empty()) return 0.0;
  auto [lo, hi] = std::minmax_element(counts.begin(), counts.end());
  return *hi == 0 ? 0.0 : static_cast<double>(*lo) / static_cast<double>(*hi);
}

double process_cpu_seconds() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void validate(const Workload& w) {
  if (w.waiters < 1) throw std::invalid_argument("contention harness: waiters must be >= 1, got " + std::to_string(w.waiters));
  if (w.duration.count() <= 0)
    throw std::invalid_argument("contention harness: duration must be positive, got " + std::to_string(w.duration.count()) + " ms");
  if (w.cs_ns < 0 || w.think_ns < 0) throw std::invalid_argument("contention harness: cs_ns and think_ns must be >= 0");
}

EventCounts subtract(const EventCounts& after, const EventCounts& before) {
  EventCounts delta = after;
  for (auto& [name, value] : delta) {
    auto it = std::find_if(before.begin(), before.end(), [&](const auto& e) { return e.first == name; });
    if (it != before.end()) value -= it->second;
  }
  return delta;
}

}  // namespace detail
}  // namespace locklab::bench
