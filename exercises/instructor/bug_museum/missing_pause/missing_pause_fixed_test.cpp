// missing_pause_fixed_test.cpp — the fix passes the conformance suite too
// (as the exhibit did: the difference is only in the benchmark).
#include "exercises/instructor/bug_museum/missing_pause/spin_without_pause_lock.hpp"
#include "tests/primitives/lock_conformance.hpp"

using MuseumSpinWithPause = ::testing::Types<locklab::museum::fixed::SpinWithoutPauseLock>;
INSTANTIATE_TYPED_TEST_SUITE_P(MuseumMissingPauseFixed, LockConformance, MuseumSpinWithPause);
