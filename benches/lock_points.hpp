// lock_points.hpp — one lock point on the contention harness, shared by the
// suites that measure local locks (locks_bench.cpp, cs_sweep_bench.cpp), so
// both name, build and count a lock point the same way.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "benches/harness/suite.hpp"

namespace locklab::bench {

// The per-acquire counters of a lock with LockStats (contended_acquires,
// spins, parks, wakes, handoffs, dozes); none for a lock without stats().
template <class L>
EventSource lock_events(const L& lock) {
  if constexpr (requires { lock.stats(); }) {
    return [&lock] {
      const auto s = lock.stats();
      return EventCounts{{"contended_acquires", static_cast<double>(s.contended_acquires)},
                         {"spins", static_cast<double>(s.spins)},
                         {"parks", static_cast<double>(s.parks)},
                         {"wakes", static_cast<double>(s.wakes)},
                         {"handoffs", static_cast<double>(s.handoffs)},
                         {"dozes", static_cast<double>(s.dozes)}};
    };
  } else {
    return {};
  }
}

// Registers `<suite>/<impl>/waiters:<N>/<knobs>` for workload w. `make`
// builds a fresh lock per point (locks are neither copyable nor movable), so
// a lock lives exactly as long as its point.
template <class L>
void register_lock_point(const SuiteOptions& o, const std::string& impl, std::function<std::unique_ptr<L>()> make,
                         const Workload& w, const std::vector<Knob>& knobs) {
  register_point(point_name(o.suite, impl, w.waiters, knobs), w, [make](const Workload& wl) {
    std::unique_ptr<L> lock = make();
    return run_lock_contention(*lock, wl, lock_events(*lock));
  });
}

}  // namespace locklab::bench
