// The library read-write peers of the `rwlocks` suite (benches/
// read_write_peers.hpp: absl::Mutex's reader mode, tbb::spin_rw_mutex,
// tbb::queuing_rw_mutex) held to the read-write conformance checks our own
// locks pass (tests/primitives/read_write_conformance.hpp), so that a broken
// adapter (a read side that excludes, a write side that does not, a queue
// node released into the wrong slot) fails here before it draws a curve.
// All three prefer a waiting writer, so each must also let a writer in
// under a continuous read stream; the reader-preferring glibc rwlock fails
// that check (tests/primitives/reentrant_read_write_lock_test.cpp).
#include "benches/read_write_peers.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>

#include "benches/harness/read_write.hpp"
#include "tests/primitives/lock_conformance.hpp"
#include "tests/primitives/read_write_conformance.hpp"

// The write side through the lock suite (mutual exclusion, try_lock never
// blocks, no lost wake-ups, FIFO where promised).
template <>
struct locklab::testing::LockTraits<locklab::bench::peers::TbbQueuingRwMutex> {
  static constexpr bool fifo = true;
};
using ReadWritePeerWriteSides =
    ::testing::Types<locklab::bench::peers::AbslReaderWriterMutex, locklab::bench::peers::TbbSpinRwMutex,
                     locklab::bench::peers::TbbQueuingRwMutex>;
INSTANTIATE_TYPED_TEST_SUITE_P(ReadWritePeerWriteSide, LockConformance, ReadWritePeerWriteSides);

namespace locklab::bench::peers {
namespace {

using std::chrono::milliseconds;

template <class L>
class ReadWritePeer : public ::testing::Test {};

using ReadWritePeerTypes = ::testing::Types<AbslReaderWriterMutex, TbbSpinRwMutex, TbbQueuingRwMutex>;
TYPED_TEST_SUITE(ReadWritePeer, ReadWritePeerTypes);

TYPED_TEST(ReadWritePeer, ReadersRunConcurrently) {
  TypeParam rw;
  const auto r = testing::check_readers_overlap(rw, 3);
  EXPECT_TRUE(r.ok) << r.message;
}

TYPED_TEST(ReadWritePeer, WritersExcludeEveryone) {
  TypeParam rw;
  testing::ExclusionOptions o;
  o.budget = milliseconds(200);
  const auto r = testing::check_writers_exclude(rw, o);
  EXPECT_TRUE(r.ok) << r.message;
}

TYPED_TEST(ReadWritePeer, AWaitingWriterIsNotStarvedByAReadStream) {
  TypeParam rw;
  const auto run = testing::check_writer_not_starved(rw);
  EXPECT_TRUE(run.result.ok) << run.result.message;
}

TYPED_TEST(ReadWritePeer, RunsUnderTheReadWriteHarness) {
  TypeParam rw;
  const auto r = run_read_write_contention(rw, Workload{.waiters = 3, .duration = milliseconds(30)},
                                           ReadWriteMix{.read_permille = 900});
  EXPECT_GT(r.total_ops(), 0U);
  EXPECT_EQ(r.ops_per_waiter.size(), 3U);
}

// The per-thread node table is local_peers.hpp's (tested with its queue
// locks in local_peers_test.cpp); here only that this adapter uses it.
TEST(TbbQueuingRwMutexTest, ZeroThreadCapacityIsRejected) {
  EXPECT_THROW(TbbQueuingRwMutex(0), std::invalid_argument);
}

}  // namespace
}  // namespace locklab::bench::peers
