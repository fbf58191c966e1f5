// missing_pause_test.cpp — EXHIBIT missing_pause: the lock PASSES the whole
// conformance suite. That is the exhibit: no correctness test can see this
// bug; run the benchmark (README.md) to see it.
#include "exercises/bug_museum/missing_pause/spin_without_pause_lock.hpp"
#include "tests/primitives/lock_conformance.hpp"

using MuseumSpinWithoutPause = ::testing::Types<locklab::museum::SpinWithoutPauseLock>;
INSTANTIATE_TYPED_TEST_SUITE_P(MuseumMissingPauseIsInvisibleToTests, LockConformance, MuseumSpinWithoutPause);
