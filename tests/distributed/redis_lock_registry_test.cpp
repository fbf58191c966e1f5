// The Redis lock registry (benches/harness/redis_lock_registry.hpp, from
// benches/redis_locks.json) against the lock classes and against its
// readers: every entry builds by name and works; the flags the JSON states
// (reentrant, watchdog) are what the class does, so a wrong flag fails here
// instead of quietly dropping a lock from a test suite or a scenario; and
// every scenario that lists Redis locks has a row for every entry, so a
// hand-kept list that forgets a lock fails here. The bench's list and the
// plotting module are checked from Python
// (notebooks/tests/test_redis_lock_registry.py).
#include "benches/harness/redis_lock_registry.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "benches/scenarios/batch.hpp"
#include "benches/scenarios/stock.hpp"
#include "benches/scenarios/vus_table.hpp"
#include "tests/distributed/redis_test_support.hpp"

namespace locklab::bench {
namespace {

using namespace std::chrono_literals;
using redis::testing::RedisTest;

// "SpinLock(poll:50ms)" -> "SpinLock": the registry entry a row is a
// configuration of.
std::string base_of(const std::string& row) { return row.substr(0, row.find('(')); }

// Every registry entry is the base of some row of `rows`, and every row is a
// configuration of an entry or one of `outside` (rows that are not locks of
// the registry).
void expect_rows_cover_the_registry(const std::vector<std::string>& rows, const std::set<std::string>& outside,
                                    const std::string& where) {
  std::set<std::string> bases;
  for (const std::string& row : rows) {
    if (outside.contains(row)) continue;
    bases.insert(base_of(row));
    EXPECT_NO_THROW((void)redis_lock_info(base_of(row))) << where << ": row '" << row << "' is no registry lock";
  }
  for (const RedisLockInfo& info : redis_locks()) {
    EXPECT_TRUE(bases.contains(std::string(info.name))) << where << " has no row for " << info.name;
  }
}

class RedisLockRegistry : public RedisTest {};

TEST_F(RedisLockRegistry, EveryEntryIsBuiltByNameSendsNothingAndLocks) {
  ASSERT_FALSE(redis_locks().empty());
  std::set<std::string_view> names;
  for (const RedisLockInfo& info : redis_locks()) {
    SCOPED_TRACE(std::string(info.name));
    EXPECT_TRUE(names.insert(info.name).second) << "listed twice";
    const std::string name = key(std::string(info.name));
    const auto before = client().round_trips();
    auto lock = make_redis_lock(info.name, client(), name, {.lease = 10s, .fenced = true});
    EXPECT_EQ(client().round_trips(), before) << "building the lock sent a command";
    ASSERT_TRUE(lock->try_lock_for(1s));
    EXPECT_EQ(client().command({"EXISTS", name}).as_integer(), 1);
    lock->unlock();
    EXPECT_EQ(client().command({"EXISTS", name}).as_integer(), 0) << "unlock left the key";
  }
}

TEST_F(RedisLockRegistry, AnUnknownLockIsInvalidArgumentNamingTheKnownOnes) {
  try {
    (void)make_redis_lock("NoSuchLock", client(), key(), {});
    FAIL() << "an unknown lock was built";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("NoSuchLock"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::string(redis_locks().front().name)), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)scenarios::stock::stock_row("NoSuchLock"), std::invalid_argument);
  EXPECT_THROW((void)scenarios::vus::vu_lock("NoSuchLock"), std::invalid_argument);
}

// "reentrant": a relock by the holder nests (and needs as many unlocks), or
// is resource_deadlock_would_occur. "watchdog": a lease of 0 is accepted
// (renewed while held), or refused with std::invalid_argument.
TEST_F(RedisLockRegistry, TheFlagsOfEachEntryAreWhatItsClassDoes) {
  for_each_redis_lock([&]<class L>(const RedisLockInfo& info) {
    SCOPED_TRACE(std::string(info.name));
    L lock(client(), key(std::string(info.name)), redis_lock_options<L>({.lease = 10s}));
    lock.lock();
    if (info.reentrant) {
      EXPECT_TRUE(lock.try_lock_for(10ms)) << "marked reentrant, but a relock by the holder failed";
      lock.unlock();
      EXPECT_TRUE(lock.is_held_by_current_thread()) << "marked reentrant, but one unlock ended a nested hold";
    } else {
      try {
        (void)lock.try_lock_for(10ms);
        ADD_FAILURE() << "marked not reentrant, but a relock by the holder returned";
      } catch (const std::system_error& e) {
        EXPECT_EQ(e.code(), std::errc::resource_deadlock_would_occur);
      }
    }
    lock.unlock();
    EXPECT_FALSE(lock.is_held_by_current_thread());
    if (info.watchdog) {
      L watched(client(), key(std::string(info.name) + ":watched"), redis_lock_options<L>({.lease = 0ms}));
      ASSERT_TRUE(watched.try_lock_for(1s));
      watched.unlock();
    } else {
      EXPECT_THROW(L(client(), key(), redis_lock_options<L>({.lease = 0ms})), std::invalid_argument)
          << "marked without a watchdog, but lease 0 was accepted";
    }
  });
}

TEST_F(RedisLockRegistry, EveryScenarioHasARowForEveryEntry) {
  std::vector<std::string> stock_rows, vus_rows, batch_rows;
  for (const auto& row : scenarios::stock::stock_rows()) stock_rows.push_back(row.name);
  for (const auto& lock : scenarios::vus::vu_locks()) vus_rows.push_back(lock.name);
  for (const auto& set : scenarios::batch::lock_key_sets(client(), key())) batch_rows.push_back(set.lock);
  expect_rows_cover_the_registry(stock_rows, {"none"}, "stock_rows()");
  expect_rows_cover_the_registry(vus_rows, {}, "vu_locks()");
  expect_rows_cover_the_registry(batch_rows, {"PermitSemaphore", "RedLock"}, "lock_key_sets()");
}

}  // namespace
}  // namespace locklab::bench
