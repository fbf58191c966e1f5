// my_backoff_lock_test.cpp — the checks of the exercise ttas_backoff: the
// lab's conformance suite (tests/primitives/lock_conformance.hpp), the same
// one TtasLock and BackoffLock pass. Built against your file (starter) or the
// reference (solution) by exercises/CMakeLists.txt; run with
//   exercises/check.sh ttas_backoff
#include <my_backoff_lock.hpp>  // angle brackets: the build picks whose file

#include "tests/primitives/lock_conformance.hpp"

using MyBackoffLocks = ::testing::Types<locklab::exercises::MyBackoffLock>;
INSTANTIATE_TYPED_TEST_SUITE_P(MyBackoffLock, LockConformance, MyBackoffLocks);
