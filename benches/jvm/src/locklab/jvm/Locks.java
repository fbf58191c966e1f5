// Locks.java — the JVM side of suite `locks`: one operation is lock, cs_ns of
// calibrated busy work while holding, unlock — run_lock_contention in
// benches/harness/contention.hpp, with the same knob in the name
// (`locks/java.ReentrantLock(unfair)/waiters:4/cs_ns:0`).
//
//   java.ReentrantLock(unfair)  AbstractQueuedSynchronizer: one CAS on `state`
//                               to acquire; a newcomer may barge past queued
//                               threads, so the running thread keeps the lock
//   java.ReentrantLock(fair)    the same, but a newcomer queues behind waiting
//                               threads: every hand-off under contention is a
//                               park/unpark (a futex wake, ~35 us here)
//   java.synchronized           the object monitor, see below
//   java.Semaphore(1)           AQS in shared mode, non-fair, one permit
//   java.StampedLock(write)     its exclusive mode: a CAS on a version word,
//                               then (since JDK 15) an AQS-style queue of
//                               parked waiters
//
// synchronized on JDK 17 is not one lock but three states. Biased locking,
// which made an uncontended monitor nearly free for its first thread, is off
// by default since JDK 15 (and removed in 18), so an uncontended monitor is a
// "thin" lock: a CAS of a pointer to a stack slot into the object's header.
// The first contention *inflates* it to an ObjectMonitor (a C++ object in the
// VM with an adaptive spin, then a park on the thread's event); it then stays
// inflated until the VM's deflation thread reclaims it when idle. Every point
// uses a fresh object, so 1 waiter measures the thin lock and 2+ waiters
// measure the inflated monitor after the first collision.
//
// Acquire latency is sampled as run_lock_contention samples it (every K-th
// lock() timed, LatencySampler.java) and reported as p50_us, p99_us and
// p999_us, so that both harnesses pay the same two clock reads per timed
// acquire and the JVM's tail sits beside ours. Each waiter keeps one sampler
// across its two loops (warm-up, then the measured run), as a C++ waiter does.
//
// The lock classes share JDK code: ReentrantLock fair and unfair run the same
// AQS methods, and Semaphore runs AQS too. C2 compiles those methods with the
// types it has seen, so JvmPeers warms every implementation up before it
// measures any of them: each point then runs against the same compiled JDK,
// whatever the order of the points (as it would in an application that uses
// several of these locks).
package locklab.jvm;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Semaphore;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.StampedLock;

final class Locks {
  private Locks() {}

  static final String SUITE = "locks";

  /** Every implementation at every critical-section length, cs_ns in the point's name. */
  static List<JvmPeers.Family> families(List<Long> csNsValues) {
    List<JvmPeers.Family> families = new ArrayList<>();
    for (long cs : csNsValues) {
      List<JvmPeers.Knob> knobs = List.of(new JvmPeers.Knob("cs_ns", cs));
      families.add(new JvmPeers.Family(SUITE, "java.ReentrantLock(unfair)", cs, knobs,
          () -> new ReentrantLockSubject(false, cs)));
      families.add(new JvmPeers.Family(SUITE, "java.ReentrantLock(fair)", cs, knobs,
          () -> new ReentrantLockSubject(true, cs)));
      families.add(new JvmPeers.Family(SUITE, "java.synchronized", cs, knobs, () -> new SynchronizedSubject(cs)));
      families.add(new JvmPeers.Family(SUITE, "java.Semaphore(1)", cs, knobs, () -> new SemaphoreSubject(cs)));
      families.add(new JvmPeers.Family(SUITE, "java.StampedLock(write)", cs, knobs, () -> new StampedLockSubject(cs)));
    }
    return families;
  }

  /**
   * What every subject of this suite shares: one latency sampler per waiter thread, kept across
   * the waiter's two runUntil calls, and the percentiles over all of them.
   */
  abstract static class SampledSubject implements Harness.Subject {
    private final List<LatencySampler> samplers = new ArrayList<>();
    // Read once per runUntil call, never per operation.
    private final ThreadLocal<LatencySampler> perWaiter = ThreadLocal.withInitial(() -> {
      LatencySampler s = new LatencySampler();
      synchronized (samplers) {
        samplers.add(s);
      }
      return s;
    });

    /** The calling waiter's sampler. */
    final LatencySampler sampler() {
      return perWaiter.get();
    }

    @Override
    public Map<String, Double> counters(double wallSeconds) {
      Map<String, Double> c = new LinkedHashMap<>();
      synchronized (samplers) {
        double p50 = LatencySampler.percentileNs(samplers, 0.50);
        if (!Double.isNaN(p50)) {
          c.put("p50_us", p50 / 1e3);
          c.put("p99_us", LatencySampler.percentileNs(samplers, 0.99) / 1e3);
          c.put("p999_us", LatencySampler.percentileNs(samplers, 0.999) / 1e3);
        }
      }
      return c;
    }
  }

  // Each class below writes the same loop around its own lock (Harness.java
  // says why the loop is not shared). Fields are copied into locals so that
  // the waiter touches only the lock's cache lines and the stop flag. The
  // try/finally is what Java code around a lock looks like; it costs nothing
  // unless an exception is thrown. The timed acquire is the C++ loop's: the
  // clock before the acquire, the clock and record() once it returned.

  static final class ReentrantLockSubject extends SampledSubject {
    private final ReentrantLock lock;
    private final long csNs;

    ReentrantLockSubject(boolean fair, long csNs) {
      lock = new ReentrantLock(fair);
      this.csNs = csNs;
    }

    @Override
    public long runUntil(Harness.StopFlag stop) {
      final ReentrantLock lock = this.lock;
      final long cs = csNs;
      final LatencySampler sampler = sampler();
      long ops = 0;
      while (!stop.isSet()) {
        if (sampler.due()) {
          long t0 = System.nanoTime();
          lock.lock();
          sampler.record(System.nanoTime() - t0, t0);
        } else {
          lock.lock();
        }
        try {
          BusyWork.spinNs(cs);
        } finally {
          lock.unlock();
        }
        ops++;
      }
      return ops;
    }
  }

  static final class SynchronizedSubject extends SampledSubject {
    private final Object monitor = new Object();
    private final long csNs;

    SynchronizedSubject(long csNs) {
      this.csNs = csNs;
    }

    @Override
    public long runUntil(Harness.StopFlag stop) {
      final Object monitor = this.monitor;
      final long cs = csNs;
      final LatencySampler sampler = sampler();
      long ops = 0;
      while (!stop.isSet()) {
        if (sampler.due()) {
          long t0 = System.nanoTime();
          synchronized (monitor) {
            sampler.record(System.nanoTime() - t0, t0);
            BusyWork.spinNs(cs);
          }
        } else {
          synchronized (monitor) {
            BusyWork.spinNs(cs);
          }
        }
        ops++;
      }
      return ops;
    }
  }

  static final class SemaphoreSubject extends SampledSubject {
    private final Semaphore permits = new Semaphore(1);
    private final long csNs;

    SemaphoreSubject(long csNs) {
      this.csNs = csNs;
    }

    // acquireUninterruptibly: the lock() of a semaphore (acquire() would add
    // an interrupt check and a checked exception, not a different algorithm).
    @Override
    public long runUntil(Harness.StopFlag stop) {
      final Semaphore permits = this.permits;
      final long cs = csNs;
      final LatencySampler sampler = sampler();
      long ops = 0;
      while (!stop.isSet()) {
        if (sampler.due()) {
          long t0 = System.nanoTime();
          permits.acquireUninterruptibly();
          sampler.record(System.nanoTime() - t0, t0);
        } else {
          permits.acquireUninterruptibly();
        }
        try {
          BusyWork.spinNs(cs);
        } finally {
          permits.release();
        }
        ops++;
      }
      return ops;
    }
  }

  static final class StampedLockSubject extends SampledSubject {
    private final StampedLock lock = new StampedLock();
    private final long csNs;

    StampedLockSubject(long csNs) {
      this.csNs = csNs;
    }

    @Override
    public long runUntil(Harness.StopFlag stop) {
      final StampedLock lock = this.lock;
      final long cs = csNs;
      final LatencySampler sampler = sampler();
      long ops = 0;
      while (!stop.isSet()) {
        long stamp;
        if (sampler.due()) {
          long t0 = System.nanoTime();
          stamp = lock.writeLock();
          sampler.record(System.nanoTime() - t0, t0);
        } else {
          stamp = lock.writeLock();
        }
        try {
          BusyWork.spinNs(cs);
        } finally {
          lock.unlockWrite(stamp);
        }
        ops++;
      }
      return ops;
    }
  }
}
