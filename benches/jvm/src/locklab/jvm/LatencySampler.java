// LatencySampler.java — benches/harness/latency_sampler.hpp written again for
// the JVM: acquire-latency percentiles from every K-th acquire, K chosen by
// the same two rules, so that both harnesses time the same acquires and pay
// the same for it.
//
// The rules (the C++ header gives the reasons and the measurements):
// - The last acquire of each block of K is timed (indices K-1, 2K-1, ...),
//   and K starts at 1.
// - When the buffer of CAPACITY samples fills, every second sample is kept
//   and K doubles: an even spread over the run, bounded memory.
// - The rate bound: at the end of every window of WINDOW samples, a waiter
//   whose samples started less than MIN_INTERVAL_NS (10 us) apart on average
//   doubles K, as many times as it takes. A waiter then times about one
//   acquire per 10 us of its running, and a waiter that waits long for each
//   acquire keeps K small, so a tail's slow acquires are still timed.
// - Percentiles over several waiters weigh each sample by its waiter's K.
//
// The clock is System.nanoTime(), which on Linux reads CLOCK_MONOTONIC through
// the vDSO, as C++'s steady_clock does: the same ~20 ns per read.
//
// Not thread-safe: each waiter owns one, and the results are read after the
// waiters joined (Thread.join is the happens-before edge). C++ aligns each
// sampler to a cache line so that neighbours do not share one; here each
// waiter allocates its own, in its own thread-local allocation buffer, which
// keeps them apart.
package locklab.jvm;

import java.util.Arrays;
import java.util.Collection;

final class LatencySampler {
  static final int CAPACITY = 2048;
  static final int WINDOW = 16;
  static final long MIN_INTERVAL_NS = 10_000;
  final long[] samples = new long[CAPACITY];
  int size;
  long stride = 1;
  long index;
  private int windowCount;
  private long windowStartNs;

  /** Whether to time this operation; call once per operation. */
  boolean due() {
    return (index++ & (stride - 1)) == stride - 1;
  }

  /** The latency of an operation for which due() was true, and when it started (System.nanoTime()). */
  void record(long ns, long startNs) {
    if (windowCount == 0) windowStartNs = startNs;
    if (++windowCount == WINDOW) {
      windowCount = 0;
      // At twice the stride the window's samples would have been twice as far apart.
      boolean halved = false;
      for (long span = startNs - windowStartNs; span < (WINDOW - 1) * MIN_INTERVAL_NS && stride < (1L << 40);
          span = span * 2 + 1) {
        halveRate();
        halved = true;
      }
      if (halved && !currentIsKept()) return;
    }
    if (size == CAPACITY) {
      halveRate();
      if (!currentIsKept()) return;
    }
    samples[size++] = ns;
  }

  /** Doubles K, keeping the samples that end a block of 2K: position p holds index (p + 1) K - 1. */
  private void halveRate() {
    int kept = 0;
    for (int p = 1; p < size; p += 2) samples[kept++] = samples[p];
    size = kept;
    stride *= 2;
  }

  /** Whether the operation being recorded (index - 1) ends a block of K. */
  private boolean currentIsKept() {
    return ((index - 1) & (stride - 1)) == stride - 1;
  }

  /** Weighted percentile (q in [0, 1]) of the samplers' samples, in ns; NaN when there are none. */
  static double percentileNs(Collection<LatencySampler> samplers, double q) {
    int n = samplers.stream().mapToInt(s -> s.size).sum();
    if (n == 0) return Double.NaN;
    long[][] pairs = new long[n][];
    long total = 0;
    int k = 0;
    for (LatencySampler s : samplers) {
      for (int i = 0; i < s.size; i++) pairs[k++] = new long[] {s.samples[i], s.stride};
      total += s.size * s.stride;
    }
    Arrays.sort(pairs, (a, b) -> Long.compare(a[0], b[0]));
    double target = q * total;
    long seen = 0;
    for (long[] p : pairs) {
      seen += p[1];
      if (seen >= target) return p[0];
    }
    return pairs[n - 1][0];
  }
}
