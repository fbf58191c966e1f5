// Harness.java — benches/harness/contention.hpp written again for the JVM, so
// that a curve of java.util.concurrent lands on the same axis as the C++ ones.
//
// The method is the same, step by step
// ------------------------------------
// - N waiter threads run one operation on one shared object in a loop until a
//   shared deadline, then stop by themselves; each counts its own operations.
//   Fixed duration, not a fixed count, for the reason contention.hpp gives: a
//   FIFO lock (here the fair ReentrantLock) with more waiters than cores would
//   take minutes to finish a fixed count on 2 cores.
// - The waiters are started together: each counts down a `ready` latch and
//   parks on a `go` latch (parks, not spins: 64 spinning threads on 2 cores
//   would delay the thread that must give the signal). The main thread reads
//   the CPU clock and the wall clock, opens `go`, sleeps for the duration and
//   raises the stop flag.
// - The loop polls the stop flag with an *opaque* read, the Java name for C++'s
//   relaxed load: it cannot be hoisted out of the loop (a plain field read
//   could be, and the loop would never end), and it adds no fence. On x86 it is
//   a plain load, as in C++. The counts travel back through Thread.join, a
//   happens-before edge like std::thread::join.
// - Reported: operations / wall second, wall ns per operation, process CPU /
//   wall, fairness = min / max operations per waiter, and fairness_steady,
//   the same over the run after its first fifth. Wall time runs from the
//   start signal to the moment the last waiter left its loop. A suite adds
//   counters of its own (Subject.counters): the locks suite the sampled
//   acquire latency that run_lock_contention reports (Locks.java).
// - The warm-up mark (contention.hpp, "Fairness over the whole run, and after
//   the warm-up", says why): each waiter runs its subject's loop twice, first
//   until a warm-up flag is raised at a fifth of the duration, then until the
//   stop flag, so the loops themselves are unchanged.
//
// What differs, and why it is still the same axis
// -----------------------------------------------
// - Inlining. In C++ the operation is a template argument compiled into the
//   loop. A Java loop that called the operation through an interface would be
//   compiled once for all implementations, see several receiver types, and
//   make a virtual call per operation. So the loop lives in each Subject (see
//   Counters.java, Locks.java): every implementation gets its own compiled
//   loop with its operation inlined, as a template instantiation would.
// - The JIT. Code starts interpreted and is compiled (C1, then C2) while it
//   runs; JvmPeers warms every implementation up before measuring anything.
// - Safepoints. The compiled loop polls a thread-local safepoint word on every
//   iteration (one extra load), and a GC or deoptimisation stops all waiters
//   at once. Neither exists in C++; both are part of what a JVM user gets.
// - CPU time. getProcessCpuTime() counts every JVM thread (JIT compilers and
//   GC included), like CLOCK_PROCESS_CPUTIME_ID in C++, but on Linux it comes
//   from times(2) in 10 ms ticks: on a 200 ms point with 2 busy cores the
//   cpu_per_wall counter is good to about 2-5 %, on a 1 s point to about 1 %.
// - No think time yet: the C++ suites use think_ns = 0 so far, and so does
//   this harness (it reports think_ns 0).
package locklab.jvm;

import com.sun.management.OperatingSystemMXBean;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

final class Harness {
  private Harness() {}

  /** One point on a curve: how many waiters, and for how long. */
  record Workload(int waiters, long durationMs) {
    Workload {
      if (waiters < 1) throw new IllegalArgumentException("waiters must be >= 1, got " + waiters);
      if (durationMs <= 0) throw new IllegalArgumentException("duration must be positive, got " + durationMs + " ms");
    }
  }

  /**
   * One implementation on one point: a fresh shared object (a counter, a lock) that every waiter
   * drives. Each implementation writes its own loop; see the header for why.
   */
  interface Subject {
    /**
     * Called by each waiter thread, twice (until the warm-up flag, then until the stop flag): runs the
     * operation until {@code stop} is set, returns how many it did this call. Counts and events add up.
     */
    long runUntil(StopFlag stop);

    /** Cumulative family events after the run (e.g. "cas_failures"), reported per operation. */
    default Map<String, Long> events() {
      return Map.of();
    }

    /** Throws IllegalStateException if the object's final state contradicts the counted operations. */
    default void verify(long totalOps) {}

    /** Counters of the suite's own, reported as they are (e.g. "reads_per_s"); read after verify. */
    default Map<String, Double> counters(double wallSeconds) {
      return Map.of();
    }
  }

  /**
   * The flag every waiter polls once per operation. It is read by all cores all the time, so it must
   * not share a cache line with anything that is written during the run: 128 bytes of padding on
   * each side (kCacheLineSize in primitives/cache_line.hpp says why 128 and not 64). The padding
   * is in superclasses because the JVM lays out superclass fields first and may reorder the fields
   * within one class.
   */
  static final class StopFlag extends StopFlagField {
    long q0, q1, q2, q3, q4, q5, q6, q7, q8, q9, q10, q11, q12, q13, q14, q15;

    private static final VarHandle STOPPED;

    static {
      try {
        STOPPED = MethodHandles.lookup().findVarHandle(StopFlagField.class, "stopped", boolean.class);
      } catch (ReflectiveOperationException e) {
        throw new ExceptionInInitializerError(e);
      }
    }

    boolean isSet() {
      return (boolean) STOPPED.getOpaque(this);
    }

    void set() {
      STOPPED.setOpaque(this, true);
    }
  }

  private static class StopFlagPadding {
    long p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14, p15;
  }

  private static class StopFlagField extends StopFlagPadding {
    boolean stopped;
  }

  /** What one run measured; the derived figures are the JSON counters of suite.hpp. */
  record Result(Workload workload, long[] opsPerWaiter, long[] opsAfterWarmup, double wallSeconds,
                double cpuSeconds, Map<String, Long> events, Map<String, Double> extra) {
    long totalOps() {
      return Arrays.stream(opsPerWaiter).sum();
    }

    double opsPerSecond() {
      return wallSeconds > 0 ? totalOps() / wallSeconds : 0;
    }

    double nsPerOp() {
      long ops = totalOps();
      return ops > 0 ? wallSeconds * 1e9 / ops : 0;
    }

    double cpuPerWall() {
      return wallSeconds > 0 ? cpuSeconds / wallSeconds : 0;
    }

    /** min / max operations per waiter, in [0, 1]; 1 for a single waiter. */
    double fairness() {
      return minOverMax(opsPerWaiter);
    }

    /** fairness() over the operations after the warm-up mark. */
    double fairnessSteady() {
      return minOverMax(opsAfterWarmup);
    }

    private static double minOverMax(long[] counts) {
      long max = Arrays.stream(counts).max().orElse(0);
      return max == 0 ? 0 : (double) Arrays.stream(counts).min().orElse(0) / max;
    }
  }

  private static final OperatingSystemMXBean OS =
      (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

  /**
   * Runs {@code subject} from w.waiters() threads for w.durationMs(), then checks it with
   * Subject.verify. Throws what a waiter threw, or IllegalStateException from verify.
   */
  static Result run(Workload w, Subject subject) throws InterruptedException {
    int n = w.waiters();
    long[] ops = new long[n];
    long[] afterWarmup = new long[n];
    long[] leftLoop = new long[n];
    CountDownLatch ready = new CountDownLatch(n);
    CountDownLatch go = new CountDownLatch(1);
    StopFlag warmupOver = new StopFlag();
    StopFlag stop = new StopFlag();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Thread[] threads = new Thread[n];
    for (int i = 0; i < n; i++) {
      final int index = i;
      threads[i] = new Thread(() -> {
        ready.countDown();
        try {
          go.await();
          long warmup = subject.runUntil(warmupOver);
          afterWarmup[index] = subject.runUntil(stop);
          ops[index] = warmup + afterWarmup[index];
        } catch (Throwable t) {
          failure.compareAndSet(null, t);
        }
        leftLoop[index] = System.nanoTime();
      }, "waiter-" + i);
      threads[i].start();
    }
    ready.await();
    long cpuStart = OS.getProcessCpuTime();
    long start = System.nanoTime();
    go.countDown();
    sleepUntil(start + w.durationMs() * 1_000_000 / 5);
    warmupOver.set();
    sleepUntil(start + w.durationMs() * 1_000_000);
    stop.set();
    for (Thread t : threads) t.join();
    long cpuEnd = OS.getProcessCpuTime();
    if (failure.get() != null) throw new IllegalStateException("a waiter failed: " + failure.get(), failure.get());
    long last = Arrays.stream(leftLoop).max().orElse(start);
    double wall = (last - start) * 1e-9;
    long total = Arrays.stream(ops).sum();
    subject.verify(total);
    return new Result(w, ops, afterWarmup, wall, (cpuEnd - cpuStart) * 1e-9, subject.events(), subject.counters(wall));
  }

  private static void sleepUntil(long nanoTime) {
    for (long left; (left = nanoTime - System.nanoTime()) > 0; ) LockSupport.parkNanos(left);
  }
}
