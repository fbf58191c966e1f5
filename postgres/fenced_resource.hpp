// fenced_resource.hpp — fencing checked by the database: a row that takes a
// write only if its token is above the highest it has accepted, decided by
// PostgreSQL in one statement. The PostgreSQL form of redis::FencedResource
// (distributed/fenced_resource.hpp; the protocol, the strict rule and what a
// token does not protect against: the essay in distributed/fencing.hpp).
//
// Why the database
// ----------------
// In production the thing a lock protects is usually a row. A resource that
// reads the token, compares in the application and then writes has the race
// the lock had; a resource that compares and writes in ONE statement does
// not, because PostgreSQL's row lock orders the writers: the write is
//
//   UPDATE locklab_fenced_resource
//      SET value = $3, token = $2, accepted = accepted + 1
//    WHERE name = $1 AND token < $2            -- the fence (strict: < )
//
// and when it matches no row the same statement counts the refusal
// (rejected = rejected + 1), so the database keeps both counts. Two
// writers on one row: the second UPDATE waits for the first's row lock,
// then (READ COMMITTED) re-evaluates its WHERE against the row the first
// committed, so a stale token is refused even when both were sent at the
// same instant. An equal token is refused too, as in Redis (the lab's
// strict rule: one write per critical section).
//
// The table (created if missing): locklab_fenced_resource(name text primary
// key, value text, token bigint, accepted bigint, rejected bigint), one row
// per resource name, created by the constructor. Tokens are bigint: exact
// to 2^63 - 1 (Redis's script compares doubles: exact to 2^53).
//
// Costs: write, read and totals 1 round trip each (write: one statement,
// one row lock held until its implicit commit); the constructor 2 (CREATE
// TABLE IF NOT EXISTS, the row's INSERT ... ON CONFLICT DO NOTHING).
// Thread safety: as its Connection, one thread at a time; writers on
// several threads each build their own FencedResource on their own
// Connection, all naming the same row.
//
// Failure outcomes: pg::Error (connection.hpp) when PostgreSQL fails: then
// this object's counters are unchanged and, after kIo, the write may or may
// not have committed. Error(kProtocol) if the row was deleted behind the
// object's back. std::invalid_argument for a token < 1 (nothing is sent).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "distributed/fenced_resource_base.hpp"
#include "postgres/connection.hpp"

namespace locklab::pg {

using redis::FenceVerdict;

// Its name, accepted(), rejected() (this object's own verdicts) and Totals:
// redis::FencedResourceBase (distributed/fenced_resource_base.hpp), shared
// with redis::FencedResource.
class FencedResource : public redis::FencedResourceBase {
 public:
  static constexpr const char* kTable = "locklab_fenced_resource";

  // Creates the table if missing and the row `name` if missing (value
  // NULL, token 0, counts 0); a row that exists is left as it is.
  // std::invalid_argument for an empty name; pg::Error if PostgreSQL fails.
  FencedResource(Connection& db, std::string name);

  // Writes `value` if `token` > the highest accepted token, atomically;
  // counts the verdict in the row. std::invalid_argument if token < 1.
  FenceVerdict write(std::int64_t token, const std::string& value);
  // The current value, nullopt if never written.
  std::optional<std::string> read();
  // The database's totals over all writers.
  Totals totals();
  // Back to the state of a fresh row (value NULL, token 0, counts 0): for a
  // scenario that reuses its row run after run.
  void clear();

 private:
  Connection& db_;
};

}  // namespace locklab::pg
