// replica_wait.hpp — internal (namespace detail): the one hook that makes
// every lock honour Client::Options::wait_replicas. DeadlineLockable calls
// it after every successful acquire_until (SpinLock, AdaptiveLock, FairLock,
// PubSubLock, and FencedSpinLock through its SpinLock), PermitSemaphore
// after every granted permit (and so GuardedLock); RedLock does not (below).
//
// The protocol: after the acquire's reply, one round trip carrying two
// commands on one pooled connection,
//   SET <derived_key(name, "replicated")> 1 PX 1
//   WAIT <wait_replicas> <wait_timeout ms>
// WAIT counts the replicas that acknowledged every write made earlier ON ITS
// OWN CONNECTION, and the pool may have run the acquire on another one. The
// SET gives this connection a write whose replication offset is past the
// acquire's (the acquire's reply came before the SET was sent, and a
// replication stream is applied in order), so the replicas that acknowledge
// the SET hold the lock key too. The key lives 1 ms, in the lock's own slot
// (lock_keys.hpp), so it also works where keys are sharded. Fewer
// acknowledgements than asked: the lock's own release runs (unlock(), or the
// permit's release) and NotReplicated is thrown; an Error from the WAIT
// itself (the primary died under it) releases the same way and is rethrown.
//
// What it buys, and what not: a grant that WAIT confirmed survives the death
// of the primary if Sentinel promotes a replica that acknowledged it. WAIT
// does not make Redis strongly consistent: with 2 replicas and
// wait_replicas = 1, Sentinel may promote the other one (it picks by
// priority, then the replication offset it last saw in INFO, then run id),
// and a replica can acknowledge and still lose the key if it restarts
// without persistence. benches/scenarios/failover.hpp measures the
// difference; fencing (fencing.hpp) is what closes the window.
//
// RedLock: its nodes are independent primaries by design (a quorum of them
// replaces replication), and its Clients are per node; wait_replicas set on
// a node's Client is not consulted.
//
// Cost with wait_replicas = 0: one integer test. With n > 0: one round trip
// per acquire, plus the time the slowest of the n replicas takes to
// acknowledge (loopback: well under a millisecond).
#pragma once

#include <cstdint>
#include <string>

#include "distributed/client.hpp"
#include "distributed/not_replicated.hpp"

namespace locklab::redis::detail {

// The SET + WAIT round trip above: how many replicas acknowledged.
std::int64_t acknowledging_replicas(Client& client, const std::string& lock_name);

// After a successful acquire of `lock_name`: nothing when wait_replicas is
// 0 or enough replicas acknowledge; else release() (its exceptions
// swallowed) and throw NotReplicated, or rethrow the WAIT's own Error.
template <class Release>
void confirm_replicated(Client& client, const std::string& lock_name, Release&& release) {
  const int wanted = client.options().wait_replicas;
  if (wanted <= 0) return;
  auto release_quietly = [&]() noexcept {
    try {
      release();
      return true;
    } catch (...) {
      return false;
    }
  };
  std::int64_t acknowledged = 0;
  try {
    acknowledged = acknowledging_replicas(client, lock_name);
  } catch (...) {
    release_quietly();
    throw;
  }
  if (acknowledged >= wanted) return;
  const bool released = release_quietly();
  throw NotReplicated(lock_name, wanted, acknowledged, released);
}

}  // namespace locklab::redis::detail
