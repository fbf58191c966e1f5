// ReadWrite.java — the JVM side of suite `rwlocks`: the read-mostly workload of
// benches/harness/read_write.hpp. Every waiter mixes reads and writes of one
// lock in a fixed proportion: each operation is a read with probability
// read_permille / 1000 (a per-waiter xorshift64 draw, seeded as the C++ one:
// 0x9E3779B97F4A7C15 * (waiter + 1) | 1), else a write; a read holds the read
// lock for read_cs_ns of busy work, a write the write lock for write_cs_ns.
// The names carry the C++ knobs in the C++ order
// (`rwlocks/java.StampedLock(optimistic)/waiters:4/read_permille:990/read_cs_ns:0/write_cs_ns:0`),
// so `./lab plot` draws these points grey beside ours.
//
//   java.ReentrantReadWriteLock(unfair)  AQS: one int, reader count in the high
//                                        16 bits, write holds in the low 16; a
//                                        read is a CAS adding 1 << 16, plus the
//                                        per-thread hold count (a cached
//                                        HoldCounter, a ThreadLocal for the
//                                        second reader on); a new reader yields
//                                        to a writer at the head of the queue
//   java.ReentrantReadWriteLock(fair)    the same, but nobody barges past a
//                                        queued thread
//   java.StampedLock(read)               readLock(): a CAS adding a reader to
//                                        the version word (an overflow field
//                                        past 126 readers)
//   java.StampedLock(optimistic)         tryOptimisticRead(), the section,
//                                        validate(); on failure (or a stamp of
//                                        0) the section again under readLock():
//                                        Java's documented idiom, and what the
//                                        C++ StampedOptimistic adapter does
//
// Counters besides the harness's, as in read_write.hpp: reads_per_s,
// writes_per_s, read_fraction, optimistic_retries_per_read (optimistic only),
// write_wait_p50_us and write_wait_p99_us (sampled writeLock() latency, see
// LatencySampler; absent when the point made no write).
//
// The section of the optimistic read is BusyWork, which reads no shared data:
// the question measured is what the lock costs a reader, as in the C++ suite.
//
// Quick mode runs read_permille 990 only (the point the goals compare at) to
// keep the smoke run short; full mode runs 1000, 990, 900 and 500; both at
// sections 0/0, full also at 1000/1000. --read_permille overrides the list.
package locklab.jvm;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.concurrent.locks.StampedLock;

final class ReadWrite {
  private ReadWrite() {}

  static final String SUITE = "rwlocks";
  static final List<Long> ALL_PERMILLES = List.of(1000L, 990L, 900L, 500L);
  static final List<Long> QUICK_PERMILLES = List.of(990L);

  /** The section lengths (read, write) of a mode, as rwlocks_bench.cpp has them. */
  static List<long[]> sections(boolean full) {
    return full ? List.of(new long[] {0, 0}, new long[] {1000, 1000}) : List.<long[]>of(new long[] {0, 0});
  }

  static List<JvmPeers.Family> families(List<Long> permilles, boolean full) {
    List<JvmPeers.Family> families = new ArrayList<>();
    for (long[] s : sections(full)) {
      final long readCs = s[0];
      final long writeCs = s[1];
      for (long permille : permilles) {
        List<JvmPeers.Knob> knobs = List.of(new JvmPeers.Knob("read_permille", permille),
            new JvmPeers.Knob("read_cs_ns", readCs), new JvmPeers.Knob("write_cs_ns", writeCs));
        final int p = (int) permille;
        // cs_ns carries the read section, as in the C++ suite.
        families.add(new JvmPeers.Family(SUITE, "java.ReentrantReadWriteLock(unfair)", readCs, knobs,
            () -> new RrwlSubject(false, p, readCs, writeCs)));
        families.add(new JvmPeers.Family(SUITE, "java.ReentrantReadWriteLock(fair)", readCs, knobs,
            () -> new RrwlSubject(true, p, readCs, writeCs)));
        families.add(new JvmPeers.Family(SUITE, "java.StampedLock(read)", readCs, knobs,
            () -> new StampedSubject(false, p, readCs, writeCs)));
        families.add(new JvmPeers.Family(SUITE, "java.StampedLock(optimistic)", readCs, knobs,
            () -> new StampedSubject(true, p, readCs, writeCs)));
      }
    }
    return families;
  }

  /**
   * What every subject of this suite shares: the mix, the waiters' tallies (added once per waiter
   * when it leaves its loop, so nothing is shared during the run) and the counters.
   */
  abstract static class MixSubject implements Harness.Subject {
    final long readThreshold;
    final long readCsNs;
    final long writeCsNs;
    private final AtomicInteger nextWaiter = new AtomicInteger();
    private final AtomicLong reads = new AtomicLong();
    private final AtomicLong writes = new AtomicLong();
    private final AtomicLong retries = new AtomicLong();
    private final List<LatencySampler> samplers = new ArrayList<>();

    MixSubject(int readPermille, long readCsNs, long writeCsNs) {
      readThreshold = readPermille;
      this.readCsNs = readCsNs;
      this.writeCsNs = writeCsNs;
    }

    /** The waiter's seed, as read_write.hpp seeds its waiter i. */
    long seed() {
      return 0x9E3779B97F4A7C15L * (nextWaiter.getAndIncrement() + 1) | 1;
    }

    void tally(long r, long w, long retried, LatencySampler sampler) {
      reads.addAndGet(r);
      writes.addAndGet(w);
      retries.addAndGet(retried);
      synchronized (samplers) {
        samplers.add(sampler);
      }
    }

    /** Whether the draw is a read; xorshift64 as in read_write.hpp (unsigned modulo). */
    static boolean isRead(long[] rng, long threshold) {
      long s = rng[0];
      s ^= s << 13;
      s ^= s >>> 7;
      s ^= s << 17;
      rng[0] = s;
      return Long.remainderUnsigned(s, 1000) < threshold;
    }

    boolean optimistic() {
      return false;
    }

    @Override
    public Map<String, Double> counters(double wallSeconds) {
      Map<String, Double> c = new LinkedHashMap<>();
      double wall = wallSeconds > 0 ? wallSeconds : 1.0;
      long r = reads.get();
      long w = writes.get();
      c.put("reads_per_s", r / wall);
      c.put("writes_per_s", w / wall);
      c.put("read_fraction", r + w > 0 ? (double) r / (r + w) : 0.0);
      if (optimistic()) c.put("optimistic_retries_per_read", r > 0 ? (double) retries.get() / r : 0.0);
      synchronized (samplers) {
        double p50 = LatencySampler.percentileNs(samplers, 0.50);
        if (!Double.isNaN(p50)) {
          c.put("write_wait_p50_us", p50 / 1e3);
          c.put("write_wait_p99_us", LatencySampler.percentileNs(samplers, 0.99) / 1e3);
        }
      }
      return c;
    }

    @Override
    public void verify(long totalOps) {
      if (reads.get() + writes.get() != totalOps) {
        throw new IllegalStateException(
            "reads " + reads.get() + " + writes " + writes.get() + " != operations " + totalOps);
      }
    }
  }

  // Each subject writes its own loop (Harness.java says why the loop is not shared).

  static final class RrwlSubject extends MixSubject {
    private final ReentrantReadWriteLock lock;

    RrwlSubject(boolean fair, int readPermille, long readCsNs, long writeCsNs) {
      super(readPermille, readCsNs, writeCsNs);
      lock = new ReentrantReadWriteLock(fair);
    }

    @Override
    public long runUntil(Harness.StopFlag stop) {
      final ReentrantReadWriteLock.ReadLock readLock = lock.readLock();
      final ReentrantReadWriteLock.WriteLock writeLock = lock.writeLock();
      final long threshold = readThreshold;
      final long readCs = readCsNs;
      final long writeCs = writeCsNs;
      final long[] rng = {seed()};
      final LatencySampler sampler = new LatencySampler();
      long r = 0;
      long w = 0;
      while (!stop.isSet()) {
        if (isRead(rng, threshold)) {
          readLock.lock();
          try {
            BusyWork.spinNs(readCs);
          } finally {
            readLock.unlock();
          }
          r++;
        } else {
          if (sampler.due()) {
            long t0 = System.nanoTime();
            writeLock.lock();
            sampler.record(System.nanoTime() - t0, t0);
          } else {
            writeLock.lock();
          }
          try {
            BusyWork.spinNs(writeCs);
          } finally {
            writeLock.unlock();
          }
          w++;
        }
      }
      tally(r, w, 0, sampler);
      return r + w;
    }
  }

  static final class StampedSubject extends MixSubject {
    private final StampedLock lock = new StampedLock();
    private final boolean optimistic;

    StampedSubject(boolean optimistic, int readPermille, long readCsNs, long writeCsNs) {
      super(readPermille, readCsNs, writeCsNs);
      this.optimistic = optimistic;
    }

    @Override
    boolean optimistic() {
      return optimistic;
    }

    @Override
    public long runUntil(Harness.StopFlag stop) {
      final StampedLock lock = this.lock;
      final boolean optimistic = this.optimistic;
      final long threshold = readThreshold;
      final long readCs = readCsNs;
      final long writeCs = writeCsNs;
      final long[] rng = {seed()};
      final LatencySampler sampler = new LatencySampler();
      long r = 0;
      long w = 0;
      long retried = 0;
      while (!stop.isSet()) {
        if (isRead(rng, threshold)) {
          boolean done = false;
          if (optimistic) {
            long s = lock.tryOptimisticRead();
            if (s != 0) {
              BusyWork.spinNs(readCs);
              done = lock.validate(s);
            }
            if (!done) retried++;
          }
          if (!done) {
            long s = lock.readLock();
            try {
              BusyWork.spinNs(readCs);
            } finally {
              lock.unlockRead(s);
            }
          }
          r++;
        } else {
          long s;
          if (sampler.due()) {
            long t0 = System.nanoTime();
            s = lock.writeLock();
            sampler.record(System.nanoTime() - t0, t0);
          } else {
            s = lock.writeLock();
          }
          try {
            BusyWork.spinNs(writeCs);
          } finally {
            lock.unlockWrite(s);
          }
          w++;
        }
      }
      tally(r, w, retried, sampler);
      return r + w;
    }
  }
}
