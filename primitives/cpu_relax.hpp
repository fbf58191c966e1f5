// cpu_relax.hpp — the instruction a spin-wait loop executes between polls.
//
// On x86 `pause` tells the core this is a spin-wait: it stops the loop from
// flooding the pipeline with speculative loads (whose mis-speculation costs a
// pipeline flush when the lock word finally changes), yields issue slots to a
// hyper-threaded sibling, and saves power. Its length varies by
// microarchitecture: ~10 cycles on AMD Zen and older Intel, ~140 on Intel
// Skylake and later, which is why spin *counts* tuned on one machine do not
// transfer (the `physical_limits` suite measures it). ARM's equivalent hint
// is `yield`.
#pragma once

namespace locklab {

// The name is parenthesized where it is defined and where code that may
// see Boost.Fiber's headers calls it: Boost.Fiber defines a function-like
// macro cpu_relax(), which a parenthesized name does not invoke.
inline void(cpu_relax)() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield" ::: "memory");
#else
  asm volatile("" ::: "memory");
#endif
}

}  // namespace locklab
