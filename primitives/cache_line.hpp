// cache_line.hpp — the padding unit that keeps independently written atomics
// from sharing a cache line ("false sharing").
//
// Why not std::hardware_destructive_interference_size: GCC 12 defines it (64
// on x86-64) but warns (-Winterference-size) whenever a header uses it,
// because its value may differ between -mtune settings and so between
// translation units, which would silently change struct layouts (an ODR
// hazard). A fixed project-wide constant has no such hazard.
//
// Why 128 and not 64: x86 lines are 64 bytes, but Intel's L2 "spatial
// prefetcher" fetches lines in aligned 128-byte pairs, so two hot atomics 64
// bytes apart can still slow each other down on Intel parts. folly, crossbeam
// and Java's @Contended padding use 128 for the same reason. On this lab's
// AMD machines 64 would suffice; the extra 64 bytes per padded cell are the
// price of numbers that transfer between machines.
#pragma once

#include <cstddef>

namespace locklab {

inline constexpr std::size_t kCacheLineSize = 128;

}  // namespace locklab
