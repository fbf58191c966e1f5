// deadline.hpp — turning a caller's timeout into one steady_clock deadline,
// the way every timed wait in primitives/ measures time: durations are added
// to steady_clock::now() (rounded up, never down, so a timed wait never
// returns early), saturating at time_point::max() (read as "no deadline")
// instead of overflowing; deadlines on other clocks are converted once, at
// the call, like the standard's timed waits.
#pragma once

#include <chrono>
#include <type_traits>

namespace locklab::detail {

// now + d on the steady clock, rounded up, saturating at time_point::max().
template <class Rep, class Period>
std::chrono::steady_clock::time_point steady_deadline_after(const std::chrono::duration<Rep, Period>& d) {
  using std::chrono::steady_clock;
  const auto now = steady_clock::now();
  const auto room = steady_clock::time_point::max() - now;
  // Compare in floating point: converting e.g. hours::max() to nanoseconds
  // would overflow.
  if (std::chrono::duration<double>(d) >= std::chrono::duration<double>(room)) {
    return steady_clock::time_point::max();
  }
  return now + std::chrono::ceil<steady_clock::duration>(d);
}

// A deadline on any clock as a steady_clock deadline.
template <class Clock, class Duration>
std::chrono::steady_clock::time_point to_steady_deadline(const std::chrono::time_point<Clock, Duration>& t) {
  if constexpr (std::is_same_v<Clock, std::chrono::steady_clock>) {
    return std::chrono::ceil<std::chrono::steady_clock::duration>(t);
  } else {
    return steady_deadline_after(t - Clock::now());
  }
}

}  // namespace locklab::detail
