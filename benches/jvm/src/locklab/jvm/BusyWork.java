// BusyWork.java — benches/harness/busy_work.hpp for the JVM: "work" of a given
// length in nanoseconds (the critical section of the locks suite), done by
// spinning a calibrated loop instead of sleeping, and watching the clock too
// from CLOCK_CHECKED_FROM_NS on.
//
// Same method as busy_work.cpp, step by step: measure how many iterations of a
// tiny loop take a nanosecond (best of several trials, so a preempted trial
// does not skew it); measure the fixed cost of a call on each path; then a
// section under 500 ns counts iterations, and a longer one reads the clock
// every ~50 ns and counts its last piece of at most 50 ns. Why not sleep, and
// why the clock only from 500 ns: see busy_work.hpp.
//
// What differs: C++ keeps its empty loop with an empty asm statement; Java has
// none, and C2 deletes a loop whose result nobody uses. So each iteration
// advances a multiply-add chain, seeded from a volatile field the JIT cannot
// constant-fold, and the result is "used" by a branch that is never taken.
// The chain is JMH's Blackhole.consumeCPU: a plain x = x * M + C is not
// enough, C2 unrolls it and folds two steps into one multiply-add with
// constants M*M and C*M + C, so its speed would depend on how the loop was
// unrolled where it got inlined; the `+ i` and the mask stop that folding, so
// every iteration is a true dependency and runs at the same speed (~1.45 ns
// here, a chain of multiply, add, and, add: ~6 cycles; the C++ loop ~0.12 ns)
// wherever it is compiled.
// A coarser grain is fine for critical sections of 100 ns and more.
//
// Why the fixed cost is measured, not assumed zero
// ------------------------------------------------
// "N ns" means what it means in busy_work.hpp: a loop of lock; spinNs(N);
// unlock runs N ns slower per operation than with spinNs(0). Counting N times
// the long-run speed gave sections ~28 ns SHORT whatever N, measured on the
// 2-core Intel VM (1 waiter, java.ReentrantLock(unfair), ns/op minus the
// cs_ns:0 op's ~13 ns): 50 -> 21, 100 -> 65, 200 -> 170, 400 -> 370, 1000 ->
// 975, 2000 -> 1990 (and java.synchronized the same). The likely reason: the
// chain only feeds a branch that is predicted, so the core runs on past the
// loop: the unlock,
// the next lock and the start of the next chain execute while the last ~20
// iterations of this one are still in flight (a latency-bound chain leaves
// the execution ports idle). busy_work.cpp's loop errs the other way (~+12
// ns; likely its mispredicted exit, with nothing to overlap: at 8.4
// iterations/ns it is bound by issue width, not by a chain). So each side measures its own fixed costs (a counted 200 ns
// section, a clock-checked 1000 ns one) the way the suite sees them: a loop
// of lock; spinNs(N); unlock on an uncontended ReentrantLock against the same
// loop with N = 0, and subtracts them. Under a lock, not back to back: bare
// back-to-back calls measured -16.5 ns here, and the "200 ns" sections then
// ran 190 ns under the lock. Measured after this change (same runs): 200 ->
// 206 (ReentrantLock) and 200 (synchronized), 1000 -> 1015 (both), with a
// fixed cost of -29 ns counted and +16 ns clock-checked. What is left, +0-3%,
// is of the size of what a long spin loses here to interrupts and the
// hypervisor (busy_work.hpp), and busy_work.cpp is left with the same.
//
// The calibration runs each measured loop until C2 has compiled it: the first
// trials are interpreted and lose the best-of.
package locklab.jvm;

import java.util.concurrent.locks.ReentrantLock;

final class BusyWork {
  private BusyWork() {}

  /** From here on a section also reads the clock (busy_work.hpp's kClockCheckedFromNs). */
  static final long CLOCK_CHECKED_FROM_NS = 500;
  /** The clock-checked path counts the rest without a read once at most this much is left. */
  static final long LAST_PIECE_NS = 50;
  private static final double CHUNK_NS = 50;

  private static final long CALIBRATION_ITERATIONS = 1_000_000;
  private static final int CALIBRATION_TRIALS = 30;
  // Fixed costs: 200 locked calls a trial, as many trials as it takes C2 to
  // compile the loop around them (a trial is 3-200 us; all ~50 ms).
  private static final int FIXED_COST_CALLS = 200;
  private static final int FIXED_COST_TRIALS = 200;
  // Bounds on the measured fixed costs, a few times what the 2-core VM
  // measures (counted ~-29 ns, clock-checked ~+16 ns), so that one wild
  // calibration cannot make sections vanish or double.
  private static final double MAX_COUNTED_FIXED_NS = 60;
  private static final double MAX_CLOCK_CHECKED_FIXED_NS = 250;

  // Read once per spin so the JIT cannot precompute the chain; written only if
  // the chain ever hits 42, which is never in practice (a shared line that no
  // one writes costs a cache hit).
  private static volatile long seed = 1;

  // Written by calibrate() before any waiter thread starts (Thread.start orders
  // it before every read). 1.0 and 0 until calibrated.
  private static double iterationsPerNs = 1.0;
  private static double countedFixedNs = 0;
  private static double clockCheckedFixedNs = 0;

  /**
   * Measures the loop speed (best of 30 trials of 1M iterations, ~1.5 ms each once compiled), then
   * the fixed cost of a 200 ns and of a 1000 ns section under an uncontended lock (~50 ms).
   */
  static void calibrate() {
    long bestNs = Long.MAX_VALUE;
    for (int trial = 0; trial < CALIBRATION_TRIALS; trial++) {
      long start = System.nanoTime();
      spinIterations(CALIBRATION_ITERATIONS);
      bestNs = Math.min(bestNs, System.nanoTime() - start);
    }
    iterationsPerNs = (double) CALIBRATION_ITERATIONS / Math.max(bestNs, 1);
    countedFixedNs = 0;
    clockCheckedFixedNs = 0;
    ReentrantLock lock = new ReentrantLock();
    long emptyNs = Long.MAX_VALUE;
    long countedNs = Long.MAX_VALUE;
    long clockCheckedNs = Long.MAX_VALUE;
    for (int trial = 0; trial < FIXED_COST_TRIALS; trial++) {
      emptyNs = Math.min(emptyNs, timeLocked(lock, 0));
      countedNs = Math.min(countedNs, timeLocked(lock, 200));
      clockCheckedNs = Math.min(clockCheckedNs, timeLocked(lock, 1000));
    }
    countedFixedNs = clamp((double) (countedNs - emptyNs) / FIXED_COST_CALLS - 200, MAX_COUNTED_FIXED_NS);
    clockCheckedFixedNs = clamp((double) (clockCheckedNs - emptyNs) / FIXED_COST_CALLS - 1000,
        MAX_CLOCK_CHECKED_FIXED_NS);
  }

  private static double clamp(double v, double bound) {
    return Math.max(-bound, Math.min(bound, v));
  }

  /** FIXED_COST_CALLS times lock; spinNs(ns); unlock on an uncontended lock: the wall ns of them all. */
  private static long timeLocked(ReentrantLock lock, long ns) {
    long start = System.nanoTime();
    for (int i = 0; i < FIXED_COST_CALLS; i++) {
      lock.lock();
      try {
        spinNs(ns);
      } finally {
        lock.unlock();
      }
    }
    return System.nanoTime() - start;
  }

  static double iterationsPerNs() {
    return iterationsPerNs;
  }

  static double countedFixedNs() {
    return countedFixedNs;
  }

  static double clockCheckedFixedNs() {
    return clockCheckedFixedNs;
  }

  /** Spins for {@code ns} nanoseconds (see the header for what that means); returns at once for ns <= 0. */
  static void spinNs(long ns) {
    if (ns <= 0) return;
    if (ns < CLOCK_CHECKED_FROM_NS) {
      spinIterations(iterationsFor(ns));
    } else {
      spinUntil(ns);
    }
  }

  /**
   * The loop count for a counted section of {@code ns}: the time less a call's fixed cost, at the
   * calibrated speed; 0 for ns <= 0 or when the fixed cost alone is as long.
   */
  static long iterationsFor(long ns) {
    double n = (ns - countedFixedNs) * iterationsPerNs;
    return ns <= 0 || n <= 0 ? 0 : Math.round(n);
  }

  /** Spins {@code n} iterations of the calibrated loop; returns at once for n <= 0. */
  static void spinIterations(long n) {
    if (n <= 0) return;
    long x = seed;
    for (long i = 0; i < n; i++) x += (x * 0x5DEECE66DL + 0xBL + i) & 0xFFFFFFFFFFFFL;
    if (x == 42) seed = x;
  }

  // busy_work.cpp's spin_until: read the clock, spin chunks of at most 50 ns
  // until at most LAST_PIECE_NS is left (leaving at least half of it, so the
  // next read cannot land past the deadline), then count the rest without a
  // read. The budget is the section less its measured fixed cost.
  private static void spinUntil(long ns) {
    long start = System.nanoTime();
    double budget = ns - clockCheckedFixedNs;
    for (;;) {
      double left = budget - (System.nanoTime() - start);
      if (left <= LAST_PIECE_NS) {
        if (left > 0) spinIterations((long) (left * iterationsPerNs));
        return;
      }
      spinIterations((long) (Math.min(CHUNK_NS, left - LAST_PIECE_NS / 2.0) * iterationsPerNs));
    }
  }
}
