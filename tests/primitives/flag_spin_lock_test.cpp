// TasLock, TtasLock and BackoffLock share everything but their wait loop
// (primitives/flag_spin_lock.hpp), so one file runs the conformance suite on
// all three; their differences show on the locks bench, not in correctness.
#include "primitives/flag_spin_lock.hpp"

#include <gtest/gtest.h>

#include "primitives/backoff_lock.hpp"
#include "primitives/tas_lock.hpp"
#include "primitives/ttas_lock.hpp"
#include "tests/primitives/lock_conformance.hpp"

using FlagSpinLockTypes = ::testing::Types<locklab::TasLock, locklab::TtasLock, locklab::BackoffLock>;
INSTANTIATE_TYPED_TEST_SUITE_P(FlagSpinLock, LockConformance, FlagSpinLockTypes);
