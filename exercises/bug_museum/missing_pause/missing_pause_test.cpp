// missing_pause_test.cpp — EXHIBIT missing_pause, graded (graded.hpp): the
// whole conformance suite. It PASSES on the exhibit, and rightly: the lock
// is correct. That is the exhibit: no correctness test can see this bug;
// run the benchmark (README.md) to see it.
#include <spin_without_pause_lock.hpp>

#include "exercises/bug_museum/graded.hpp"
#include "tests/primitives/lock_conformance.hpp"

using MuseumSpinWithoutPause = ::testing::Types<locklab::museum::graded::SpinWithoutPauseLock>;
INSTANTIATE_TYPED_TEST_SUITE_P(MuseumMissingPause, LockConformance, MuseumSpinWithoutPause);
