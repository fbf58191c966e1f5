// spin_policy_variants.hpp — a lock that takes a SpinPolicy, made default-
// constructible with one fixed policy, so that the typed conformance suite
// (which default-constructs its TypeParam) can run every policy of
// FutexMutex and AdaptiveMutex without a hand-written subclass each.
#pragma once

#include <gtest/gtest.h>

#include "primitives/spin_policy.hpp"

namespace locklab::testing {

// The policies the suites run besides the default (adaptive) one.
constexpr SpinPolicy park_only() noexcept { return SpinPolicy::park_only(); }
constexpr SpinPolicy spin_only() noexcept { return SpinPolicy::spin_only(); }
constexpr SpinPolicy fixed_100() noexcept { return SpinPolicy::fixed(100); }

template <class Lock, SpinPolicy (*Policy)() noexcept>
struct WithSpinPolicy : Lock {
  WithSpinPolicy() : Lock(Policy()) {}
};

// Lock with the default policy and the three above, as a ::testing::Types list.
template <class Lock>
using SpinPolicyVariants = ::testing::Types<Lock, WithSpinPolicy<Lock, park_only>, WithSpinPolicy<Lock, spin_only>,
                                            WithSpinPolicy<Lock, fixed_100>>;

}  // namespace locklab::testing
