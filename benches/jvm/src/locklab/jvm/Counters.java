// Counters.java — the JVM side of suite `counters` (benches/counters_bench.cpp):
// every waiter increments one shared counter in a loop, and after the run the
// counter's value must equal the increments the harness counted, or the point
// fails instead of drawing a fast, wrong curve.
//
//   java.AtomicInteger       incrementAndGet: one `lock xadd`, an intrinsic
//                            (the C++ twin is FetchAddCounter)
//   java.AtomicLong.cas_loop a hand-written compareAndExchange retry loop that
//                            counts its failures -> cas_failures_per_op
//                            (the C++ twin is CasLoopCounter)
//   java.LongAdder           Doug Lea's striped counter: a CAS on one base
//                            field until that fails, then a CAS on one of
//                            several @Contended cells picked by a per-thread
//                            probe (the C++ rival is StripedCounter, which
//                            uses a plain store to a cell per thread instead)
//
// Each class writes its own loop so that C2 compiles it with exactly one
// operation inlined (Harness.java says why). The shared object is copied into
// a local before the loop, so the waiter touches only the counter's cache
// line and the stop flag, not the Subject object around them.
package locklab.jvm;

import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

final class Counters {
  private Counters() {}

  static final String SUITE = "counters";

  static List<JvmPeers.Family> families() {
    return List.of(
        new JvmPeers.Family(SUITE, "java.AtomicInteger", 0, List.of(), AtomicIntegerCounter::new),
        new JvmPeers.Family(SUITE, "java.AtomicLong.cas_loop", 0, List.of(), CasLoopCounter::new),
        new JvmPeers.Family(SUITE, "java.LongAdder", 0, List.of(), LongAdderCounter::new));
  }

  private static IllegalStateException lostUpdates(long value, long totalOps) {
    return new IllegalStateException("counter lost updates: value " + value + " after " + totalOps + " increments");
  }

  static final class AtomicIntegerCounter implements Harness.Subject {
    private final AtomicInteger value = new AtomicInteger();

    @Override
    public long runUntil(Harness.StopFlag stop) {
      final AtomicInteger value = this.value;
      long ops = 0;
      while (!stop.isSet()) {
        value.incrementAndGet();
        ops++;
      }
      return ops;
    }

    // An int wraps after 2^31 increments (~13 s at this machine's 170 M/s), so
    // compare the low 32 bits: a lost update still shows.
    @Override
    public void verify(long totalOps) {
      if (value.get() != (int) totalOps) throw lostUpdates(value.get(), totalOps);
    }
  }

  static final class CasLoopCounter implements Harness.Subject {
    private final AtomicLong value = new AtomicLong();
    // Each waiter counts its failures in a local and adds them here once, at
    // the end, so counting cannot become a second contended line.
    private final LongAdder failures = new LongAdder();

    // compareAndExchange returns the value it found, like C++'s
    // compare_exchange, so a failed attempt needs no separate reload.
    @Override
    public long runUntil(Harness.StopFlag stop) {
      final AtomicLong value = this.value;
      long ops = 0;
      long failed = 0;
      while (!stop.isSet()) {
        long seen = value.get();
        for (long witness; (witness = value.compareAndExchange(seen, seen + 1)) != seen; seen = witness) {
          failed++;
        }
        ops++;
      }
      failures.add(failed);
      return ops;
    }

    @Override
    public Map<String, Long> events() {
      return Map.of("cas_failures", failures.sum());
    }

    @Override
    public void verify(long totalOps) {
      if (value.get() != totalOps) throw lostUpdates(value.get(), totalOps);
    }
  }

  static final class LongAdderCounter implements Harness.Subject {
    private final LongAdder value = new LongAdder();

    @Override
    public long runUntil(Harness.StopFlag stop) {
      final LongAdder value = this.value;
      long ops = 0;
      while (!stop.isSet()) {
        value.increment();
        ops++;
      }
      return ops;
    }

    @Override
    public void verify(long totalOps) {
      if (value.sum() != totalOps) throw lostUpdates(value.sum(), totalOps);
    }
  }
}
