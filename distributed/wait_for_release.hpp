// wait_for_release.hpp — the parked half of a Redis lock waiter (namespace
// detail, not a public type): steps 3 and 4 of the protocol in
// subscriber.hpp ("The protocol a waiter follows"), written once for every
// lock that sleeps on a release channel (PubSubLock, AdaptiveLock).
//
// The loop
// --------
//   until acquired or `deadline`:
//     sleep on the subscription until a release message (one wake permit),
//       the holder's lease has run out (now + pttl + 1 ms: a crashed holder
//       publishes nothing), or the deadline;
//     after a lost connection: re-subscribe first (or, out of time, make
//       one last attempt);
//     attempt.
// What it guarantees: no wait outlives the caller's deadline or the last
// PTTL seen by more than one attempt; a caller that has not asked Redis yet
// (`asked` false: it skipped its attempt to queue behind earlier waiters of
// its process) asks once at the deadline before it gives up, so a false
// return always rests on an answer from the server. Throws what `attempt`
// and Subscription::resubscribe throw.
#pragma once

#include <algorithm>
#include <cstdint>

#include "distributed/lock_support.hpp"
#include "distributed/subscriber.hpp"

namespace locklab::redis::detail {

// One attempt's answer: acquired, or else the holder's remaining lease in
// ms (-1: no lease known, e.g. a key without expiry or a bare SET NX).
struct WaitAttempt {
  bool acquired = false;
  std::int64_t pttl_ms = -1;
};

// `last` is the caller's most recent answer (its pttl bounds the first
// sleep); `attempt` is () -> WaitAttempt.
template <class Attempt>
bool wait_for_release(Subscriber::Subscription& sub, Clock::time_point deadline, WaitAttempt last, bool asked,
                      Attempt&& attempt) {
  for (;;) {
    const auto now = Clock::now();
    if (now >= deadline) return !asked && attempt().acquired;
    auto wake = deadline;
    if (last.pttl_ms >= 0) wake = std::min(deadline, after_pttl(now, last.pttl_ms));
    if (sub.wait_until(wake) == Subscriber::Wake::kReconnected) {
      if (!sub.resubscribe(deadline)) return attempt().acquired;
    }
    last = attempt();
    asked = true;
    if (last.acquired) return true;
  }
}

}  // namespace locklab::redis::detail
