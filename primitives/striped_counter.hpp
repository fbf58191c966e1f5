// striped_counter.hpp — a counter that scales by not being one memory
// location: Java's LongAdder idea, taken one step further than Java can.
//
// The algorithm
// -------------
// A counter starts as a single `base` word updated by compare-exchange,
// exactly like an AtomicLong, and costs one cache line. The first time an add
// loses a compare-exchange race on `base` (proof that two threads hit it at
// once), the counter *inflates*: from then on every thread adds into a cell
// of its own, padded to its own cache line, and sum() adds base and all cells.
//
// LongAdder hashes threads onto a few shared cells and must update them with
// compare-exchange, because two threads may land on one cell. Here every
// thread holds a process-wide *slot* (a small integer, handed out on first
// use and recycled when the thread exits; see thread_slot.hpp), and cell
// number `slot` belongs to that thread alone. A cell with a single writer
// needs no read-modify-write at all: the owner loads its cell and stores the
// sum, two plain moves on x86, with no `lock` prefix. That is the whole
// speed-up, measured on this lab's 2-core machine (`bench_counters
// --mode=full`, results/reference/amd-epyc-2core-2026-11-30/counters.json):
//   an uncontended locked RMW, 1 waiter (FetchAddCounter)   172.7 M adds/s
//   this counter at 2 waiters (2 threads, own cells)        1,375 M adds/s
//   Java's LongAdder at 2 waiters (jvm_counters.json)         333 M adds/s
// i.e. ~690 M adds/s per thread without the `lock` prefix against ~170 with
// it, a cap that any design updating shared cells by RMW shares.
//
// Guarantees
// ----------
// - add() never loses an increment: base changes only by successful
//   compare-exchange, and a cell has one writer at a time (the slot's owner;
//   a slot passes to a new thread only through the slot registry's mutex,
//   which orders the old owner's last store before the new owner's first
//   load).
// - add() is wait-free after the thread's first add to an inflated counter
//   (which may allocate a segment of cells).
// - sum() is exact when no add runs concurrently (e.g. after joining the
//   writers). While writers run it is NOT a snapshot: it reads each cell at a
//   slightly different moment. With only non-negative adds it is monotonic
//   for any one reader: each cell only grows, and read-read coherence forbids
//   a later load of an atomic from seeing an older value than an earlier one.
//
// Memory
// ------
// One cache line (base) plus a 128-byte segment directory (one line) until the first
// contention; then one 2 KiB segment (16 cells of 128 bytes) per 16 slots in
// use, allocated when a thread with a slot in that range first adds. So a
// counter contended by T threads holds about ceil(T/16) x 2 KiB. Segments are
// never freed before the counter (slots are reused, so they do not leak).
// The trade-off against LongAdder (cells ~ number of cores, shared) is memory
// proportional to the number of threads, for adds without a locked
// instruction. Slots beyond kSegments x kCellsPerSegment (256 threads alive
// at once) fall back to an atomic add on base: correct, just slower.
//
// Use it for statistics (hit counts, "how many spins"), not for values that
// must be read atomically with other state (a sequence number, a balance).
//
// Memory orders
// -------------
// - base and cells: relaxed. A counter publishes no other data, and
//   exactness comes from each word's modification order, not from ordering.
//   The cell's load and store are separate atomics, which is safe only
//   because nobody else writes that cell (see Guarantees).
// - inflated_: relaxed; it is only a hint that base is contended, and either
//   path is correct.
// - segments_[i]: the allocating thread value-initialises a segment and
//   publishes its pointer with a release compare-exchange; adders and sum()
//   load it with acquire, so they never see a segment without its zeroed
//   cells.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "primitives/cache_line.hpp"
#include "primitives/thread_slot.hpp"

namespace locklab {

class StripedCounter {
 public:
  static constexpr std::uint32_t kCellsPerSegment = 16;
  static constexpr std::uint32_t kSegments = 16;

  StripedCounter() = default;
  ~StripedCounter();
  StripedCounter(const StripedCounter&) = delete;
  StripedCounter& operator=(const StripedCounter&) = delete;

  // Adds x. See the essay above.
  void add(std::int64_t x) noexcept {
    if (!inflated_.load(std::memory_order_relaxed)) {
      std::int64_t seen = base_.load(std::memory_order_relaxed);
      if (base_.compare_exchange_weak(seen, seen + x, std::memory_order_relaxed)) return;
      inflated_.store(true, std::memory_order_relaxed);  // contention seen
    }
    const std::uint32_t slot = this_thread_slot();
    if (slot >= kSegments * kCellsPerSegment) return add_to_base(x);
    Cell* segment = segments_[slot / kCellsPerSegment].load(std::memory_order_acquire);
    if (segment == nullptr) segment = allocate_segment(slot / kCellsPerSegment);
    std::atomic<std::int64_t>& cell = segment[slot % kCellsPerSegment].value;
    cell.store(cell.load(std::memory_order_relaxed) + x, std::memory_order_relaxed);
  }
  void increment() noexcept { add(1); }

  // base + every cell. See "Guarantees" for what it means while adds run.
  std::int64_t sum() const noexcept;
  std::int64_t get() const noexcept { return sum(); }

  // Cells allocated so far (a multiple of kCellsPerSegment; 0 until the
  // first contention and the first add after it). For tests and teaching.
  std::uint32_t cell_count() const noexcept;

 private:
  struct alignas(kCacheLineSize) Cell {
    std::atomic<std::int64_t> value{0};
  };

  Cell* allocate_segment(std::uint32_t index) noexcept;
  void add_to_base(std::int64_t x) noexcept;

  alignas(kCacheLineSize) std::atomic<std::int64_t> base_{0};
  std::atomic<bool> inflated_{false};
  // Read on every add, written once per segment: keep it off base's line.
  alignas(kCacheLineSize) std::array<std::atomic<Cell*>, kSegments> segments_{};
};

}  // namespace locklab
