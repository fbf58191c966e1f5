#include "postgres/fenced_resource.hpp"

#include <stdexcept>

namespace locklab::pg {

namespace {

// Two data-modifying CTEs in one statement, so one round trip decides and
// counts. `accepted` is the fence itself; `rejected` runs only when it
// matched nothing (NOT EXISTS), so the row is updated exactly once either
// way. Both see the row that exists before the statement (the constructor
// made it); under a concurrent writer each UPDATE waits for the row lock
// and re-checks its WHERE on the committed row (READ COMMITTED).
constexpr const char* kWrite = R"sql(
WITH accepted AS (
  UPDATE locklab_fenced_resource
     SET value = $3, token = $2, accepted = accepted + 1
   WHERE name = $1 AND token < $2
  RETURNING token),
rejected AS (
  UPDATE locklab_fenced_resource
     SET rejected = rejected + 1
   WHERE name = $1 AND NOT EXISTS (SELECT FROM accepted)
  RETURNING token)
SELECT EXISTS (SELECT FROM accepted), (SELECT token FROM accepted), (SELECT token FROM rejected))sql";

constexpr const char* kCreateTable = R"sql(
CREATE TABLE IF NOT EXISTS locklab_fenced_resource (
  name     text PRIMARY KEY,
  value    text,
  token    bigint NOT NULL DEFAULT 0,
  accepted bigint NOT NULL DEFAULT 0,
  rejected bigint NOT NULL DEFAULT 0))sql";

}  // namespace

FencedResource::FencedResource(Connection& db, std::string name)
    : FencedResourceBase(std::move(name), "pg::FencedResource"), db_(db) {
  try {
    db_.exec(kCreateTable);
  } catch (const Error& e) {
    // CREATE TABLE IF NOT EXISTS is not safe against itself: two sessions
    // creating the table at once, one fails on the catalog's unique index
    // (23505) or finds it created meanwhile (42P07). Either way it exists.
    if (e.kind() != Error::Kind::kQuery || (e.sqlstate() != "23505" && e.sqlstate() != "42P07")) throw;
  }
  db_.exec("INSERT INTO locklab_fenced_resource (name) VALUES ($1) ON CONFLICT (name) DO NOTHING", {this->name()});
}

FenceVerdict FencedResource::write(std::int64_t token, const std::string& value) {
  redis::check_fencing_token(token);
  const Result r = db_.exec(kWrite, {name(), token, value});
  const bool accepted = r.text(0, 0) == "t";
  const std::optional<std::string> highest = r.get(0, accepted ? 1 : 2);
  if (!highest) {
    throw Error(Error::Kind::kProtocol, "unexpected reply from " + db_.endpoint() + ": the row '" + name() + "' of " +
                                            kTable + " is gone (deleted behind the FencedResource)");
  }
  return counted(FenceVerdict{accepted, r.int64(0, accepted ? 1 : 2)});
}

std::optional<std::string> FencedResource::read() {
  const Result r = db_.exec("SELECT value FROM locklab_fenced_resource WHERE name = $1", {name()});
  if (r.rows() == 0) return std::nullopt;
  return r.get(0, 0);
}

FencedResource::Totals FencedResource::totals() {
  const Result r = db_.exec("SELECT accepted, rejected, token FROM locklab_fenced_resource WHERE name = $1", {name()});
  if (r.rows() == 0) return Totals{};
  return Totals{r.int64(0, 0), r.int64(0, 1), r.int64(0, 2)};
}

void FencedResource::clear() {
  db_.exec("UPDATE locklab_fenced_resource SET value = NULL, token = 0, accepted = 0, rejected = 0 WHERE name = $1",
           {name()});
}

}  // namespace locklab::pg
