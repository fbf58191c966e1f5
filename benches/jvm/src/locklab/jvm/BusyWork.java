// BusyWork.java — benches/harness/busy_work.hpp for the JVM: "work" of a given
// length in nanoseconds (the critical section of the locks suite), done by
// spinning a calibrated loop instead of reading a clock or sleeping.
//
// Same method as busy_work.cpp: measure once how many iterations of a tiny loop
// take a nanosecond (best of several trials, so a preempted trial does not skew
// it), then just count. Why not sleep or read the clock: see busy_work.hpp.
//
// What differs: C++ keeps its empty loop with an empty asm statement; Java has
// none, and C2 deletes a loop whose result nobody uses. So each iteration
// advances a multiply-add chain, seeded from a volatile field the JIT cannot
// constant-fold, and the result is "used" by a branch that is never taken.
// The chain is JMH's Blackhole.consumeCPU: a plain x = x * M + C is not
// enough, C2 unrolls it and folds two steps into one multiply-add with
// constants M*M and C*M + C, so its speed would depend on how the loop was
// unrolled where it got inlined; the `+ i` and the mask stop that folding, so
// every iteration is a true dependency and runs at the same speed (~2 ns
// here, ~4 cycles, against ~0.5 ns for the C++ loop) wherever it is compiled.
// A coarser grain is fine for critical sections of 100 ns and more.
// The calibration runs the loop until C2 has compiled it: the first trials are
// interpreted and lose the best-of.
package locklab.jvm;

final class BusyWork {
  private BusyWork() {}

  private static final long CALIBRATION_ITERATIONS = 1_000_000;
  private static final int CALIBRATION_TRIALS = 30;

  // Read once per spin so the JIT cannot precompute the chain; written only if
  // the chain ever hits 42, which is never in practice (a shared line that no
  // one writes costs a cache hit).
  private static volatile long seed = 1;

  // Written by calibrate() before any waiter thread starts (Thread.start orders
  // it before every read). 1.0 until calibrated.
  private static double iterationsPerNs = 1.0;

  /** Measures the loop speed: best of 30 trials of 1M iterations (~2 ms each once compiled). */
  static void calibrate() {
    long bestNs = Long.MAX_VALUE;
    for (int trial = 0; trial < CALIBRATION_TRIALS; trial++) {
      long start = System.nanoTime();
      spinIterations(CALIBRATION_ITERATIONS);
      bestNs = Math.min(bestNs, System.nanoTime() - start);
    }
    iterationsPerNs = (double) CALIBRATION_ITERATIONS / Math.max(bestNs, 1);
  }

  static double iterationsPerNs() {
    return iterationsPerNs;
  }

  /** The loop count for about {@code ns} nanoseconds of this core's time; 0 for ns <= 0. */
  static long iterationsFor(long ns) {
    return ns <= 0 ? 0 : Math.round(ns * iterationsPerNs);
  }

  /** Spins {@code n} iterations of the calibrated loop; returns at once for n <= 0. */
  static void spinIterations(long n) {
    if (n <= 0) return;
    long x = seed;
    for (long i = 0; i < n; i++) x += (x * 0x5DEECE66DL + 0xBL + i) & 0xFFFFFFFFFFFFL;
    if (x == 42) seed = x;
  }
}
