// eventually.hpp — the one "wait for a condition, but not forever" of the
// test suites. Every wait in a test is bounded, so a broken primitive fails
// its test instead of hanging the run (the house rule: bounded everything).
#pragma once

#include <chrono>
#include <thread>

namespace locklab::testing {

// Polls `done` every `poll` until it returns true or `bound` has passed;
// returns done()'s last answer. The bound is a hang detector, never a speed
// assertion: make it generous.
template <class Pred>
bool eventually(Pred done, std::chrono::milliseconds bound = std::chrono::seconds(10),
                std::chrono::microseconds poll = std::chrono::microseconds(200)) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(poll);
  }
  return true;
}

}  // namespace locklab::testing
