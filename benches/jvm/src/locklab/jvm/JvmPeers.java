// JvmPeers.java — the JVM peer driver: runs java.util.concurrent's counters and
// locks on the locklab contention harness (Harness.java) and writes the
// results in the JSON of the C++ suites (BenchmarkJson.java), so that the plots
// overlay the JVM curves on ours. The names start with `java.`, which is how
// notebooks/locklab_plots.py tells a peer from our own implementations.
//
// Command line, the same as a C++ suite binary's (benches/harness/suite.hpp):
//   --mode=quick|full   quick (default): waiters 1,2,4,16,64, 200 ms a point,
//                       1 repetition. full: waiters 1..128 in powers of 2,
//                       1 s a point, 5 repetitions interleaved at random
//                       across implementations, like
//                       --benchmark_enable_random_interleaving.
//   --duration_ms=N     override the time per point
//   --waiters=LIST      override the waiter counts, e.g. 1,2,8
//   --suite=counters|locks|rwlocks|all   which suites (default all)
//   --out=DIR           where to write jvm_<suite>.json (default: results)
// and its own:
//   --cs_ns=LIST        critical sections of the locks suite (default 0,1000)
//   --read_permille=LIST  read fractions of the rwlocks suite (default: 990 in
//                       quick mode, 1000,990,900,500 in full; ReadWrite.java)
//   --warmup_ms=N       warm-up time per point (default: half of --duration_ms)
//   --selftest          every implementation at 2 waiters for 20 ms, then
//                       checks the JSON it wrote (SelfTest.java); exit 0 = pass
//
// JIT warm-up, and why this much
// ------------------------------
// Before measuring anything, the driver runs one discarded pass over every
// point of every implementation: the same waiter counts and knobs, each for
// --warmup_ms (default: half the time of a point). C2 compiles a hot loop
// after some 10^4 iterations, i.e. within milliseconds, so time is not the
// issue; coverage is. C2 compiles for the paths it has seen and deoptimises
// (drops back to the interpreter and recompiles, inside a measured point) when
// another path is taken: the first CAS failure, a LongAdder growing its cells
// at 16 waiters, AQS queueing behind a parked thread. Warming up at 1 and 4
// waiters only is not enough: -XX:+PrintCompilation then shows the CAS loop,
// LongAdder.add and the fair ReentrantLock deoptimised in measured points.
// Warming *all* implementations first matters too because they share JDK code
// (Locks.java). Then the driver waits until the JIT has been idle for 200 ms,
// so that no compilation queued by the warm-up runs during the first points.
// Whether that was enough is measured, not assumed: the JIT compilation time
// that falls into each measured point is printed with it and summed into the
// context as jit_ms_during_points. What remains is a few ms of C1 compiling
// the driver's own code (formatting, thread start) on a 2-core machine.
//
// Exit status: 0; 1 when a point failed (written as an error entry, as Google
// Benchmark does) or the self-test failed; 2 for a bad command line.
package locklab.jvm;

import java.io.IOException;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.function.Supplier;

public final class JvmPeers {
  private JvmPeers() {}

  /** A knob besides the waiter count, named in the point's name: `/cs_ns:1000`. */
  record Knob(String name, long value) {}

  /** One curve: an implementation in a suite at fixed knobs; a fresh Subject per run. */
  record Family(String suite, String impl, long csNs, List<Knob> knobs, Supplier<Harness.Subject> subject) {
    /** `<suite>/<impl>/waiters:<n>[/<knob>:<v>]`, the name grammar of suite.hpp. */
    String pointName(int waiters) {
      StringBuilder name = new StringBuilder(suite + "/" + impl + "/waiters:" + waiters);
      for (Knob k : knobs) name.append('/').append(k.name()).append(':').append(k.value());
      return name.toString();
    }
  }

  /** One point: a family at a waiter count; familyIndex numbers the points as Google Benchmark does. */
  record Point(Family family, int waiters, int familyIndex) {
    String name() {
      return family.pointName(waiters);
    }
  }

  /** One repetition of a point: its result, or the error that failed it; jitMs compiled meanwhile. */
  record Outcome(Point point, int repetitionIndex, Harness.Result result, String error, long jitMs) {}

  record Options(String mode, long durationMs, List<Integer> waiters, List<Long> csNs, List<Long> readPermilles,
                 long warmupMs, int repetitions, List<String> suites, Path out, boolean selftest) {}

  private static final CompilationMXBean JIT = ManagementFactory.getCompilationMXBean();

  public static void main(String[] args) throws Exception {
    Options o;
    try {
      o = parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("JvmPeers: " + e.getMessage());
      System.exit(2);
      return;
    }
    BusyWork.calibrate();
    try {
      if (o.selftest()) System.exit(SelfTest.run(o) ? 0 : 1);
      System.exit(runSuites(o).stream().anyMatch(x -> x.error() != null) ? 1 : 0);
    } catch (IllegalStateException e) {  // a point failed during the warm-up
      System.err.println("JvmPeers: FAILED: " + e.getMessage());
      System.exit(1);
    }
  }

  static Options parse(String[] args) {
    Map<String, String> flags = new TreeMap<>();
    boolean selftest = false;
    for (String a : args) {
      if (a.equals("--selftest")) {
        selftest = true;
        continue;
      }
      int eq = a.indexOf('=');
      String key = eq > 0 ? a.substring(0, eq) : a;
      if (eq < 0 || !List.of("--mode", "--duration_ms", "--waiters", "--cs_ns", "--read_permille", "--warmup_ms", "--suite",
          "--out")
          .contains(key)) {
        throw new IllegalArgumentException("unknown flag '" + a + "' (see the header of JvmPeers.java)");
      }
      flags.put(key.substring(2), a.substring(eq + 1));
    }
    String mode = flags.getOrDefault("mode", "quick");
    if (!mode.equals("quick") && !mode.equals("full")) {
      throw new IllegalArgumentException("--mode must be quick or full, got '" + mode + "'");
    }
    boolean full = mode.equals("full");
    String suite = flags.getOrDefault("suite", "all");
    List<String> suites = switch (suite) {
      case "all" -> List.of(Counters.SUITE, Locks.SUITE, ReadWrite.SUITE);
      case Counters.SUITE, Locks.SUITE, ReadWrite.SUITE -> List.of(suite);
      default -> throw new IllegalArgumentException(
          "--suite must be counters, locks, rwlocks or all, got '" + suite + "'");
    };
    List<Long> permilles = flags.containsKey("read_permille")
        ? list(flags.get("read_permille"), "--read_permille", 0, Long::valueOf)
        : full ? ReadWrite.ALL_PERMILLES : ReadWrite.QUICK_PERMILLES;
    for (long p : permilles) {
      if (p > 1000) throw new IllegalArgumentException("--read_permille must be within 0..1000, got " + p);
    }
    if (selftest) {
      return new Options(mode, 20, List.of(2), List.of(0L, 1000L), List.of(990L, 500L), 20, 1, suites,
          flags.containsKey("out") ? Path.of(flags.get("out")) : null, true);
    }
    long durationMs =
        flags.containsKey("duration_ms") ? positive(flags.get("duration_ms"), "--duration_ms") : full ? 1000 : 200;
    return new Options(mode, durationMs,
        flags.containsKey("waiters") ? list(flags.get("waiters"), "--waiters", 1, Long::intValue)
            : full ? List.of(1, 2, 4, 8, 16, 32, 64, 128) : List.of(1, 2, 4, 16, 64),
        flags.containsKey("cs_ns") ? list(flags.get("cs_ns"), "--cs_ns", 0, Long::valueOf) : List.of(0L, 200L, 1000L),
        permilles,
        flags.containsKey("warmup_ms") ? positive(flags.get("warmup_ms"), "--warmup_ms") : Math.max(1, durationMs / 2),
        full ? 5 : 1, suites, Path.of(flags.getOrDefault("out", "results")), false);
  }

  private static long positive(String text, String flag) {
    return list(text, flag, 1, Long::valueOf).get(0);
  }

  private static <T> List<T> list(String text, String flag, long min, Function<Long, T> convert) {
    List<T> values = new ArrayList<>();
    for (String item : text.split(",", -1)) {
      long v;
      try {
        v = Long.parseLong(item);
      } catch (NumberFormatException e) {
        v = min - 1;
      }
      if (v < min || v > Integer.MAX_VALUE) {
        throw new IllegalArgumentException(flag + ": expected integers >= " + min + " separated by commas, got '" + text + "'");
      }
      values.add(convert.apply(v));
    }
    return values;
  }

  static List<Family> families(Options o) {
    List<Family> families = new ArrayList<>();
    if (o.suites().contains(Counters.SUITE)) families.addAll(Counters.families());
    if (o.suites().contains(Locks.SUITE)) families.addAll(Locks.families(o.csNs()));
    if (o.suites().contains(ReadWrite.SUITE)) {
      families.addAll(ReadWrite.families(o.readPermilles(), o.mode().equals("full")));
    }
    return families;
  }

  /** Warms up, measures every point, writes one JSON file per suite; returns every outcome. */
  static List<Outcome> runSuites(Options o) throws IOException, InterruptedException {
    List<Family> families = families(o);
    System.out.printf(Locale.ROOT,
        "%s, %s mode, %d ms a point, busy work %.3f iterations/ns, fixed cost %.1f ns counted, %.1f ns clock-checked%n",
        BenchmarkJson.jvmName(), o.mode(), o.durationMs(), BusyWork.iterationsPerNs(), BusyWork.countedFixedNs(),
        BusyWork.clockCheckedFixedNs());

    List<Point> points = new ArrayList<>();
    for (Family f : families) {
      for (int waiters : o.waiters()) points.add(new Point(f, waiters, points.size()));
    }

    long jitBefore = JIT.getTotalCompilationTime();
    for (Point p : points) {
      try {
        Harness.run(new Harness.Workload(p.waiters(), o.warmupMs()), p.family().subject().get());
      } catch (IllegalStateException e) {
        throw new IllegalStateException(p.name() + " (warm-up): " + e.getMessage(), e);
      }
    }
    long quietAfterMs = awaitIdleJit();
    System.out.printf(Locale.ROOT, "warm-up: every point for %d ms, %d ms of JIT compilation, JIT idle %d ms later%n",
        o.warmupMs(), JIT.getTotalCompilationTime() - jitBefore, quietAfterMs);

    List<Point> schedule = new ArrayList<>();
    for (int rep = 0; rep < o.repetitions(); rep++) schedule.addAll(points);
    if (o.repetitions() > 1) Collections.shuffle(schedule);

    int[] repetitionsDone = new int[points.size()];
    List<Outcome> outcomes = new ArrayList<>();
    for (Point p : schedule) {
      Outcome outcome = measure(p, repetitionsDone[p.familyIndex()]++, o.durationMs());
      outcomes.add(outcome);
      System.out.println(consoleLine(outcome));
    }
    outcomes.sort(Comparator.comparingInt((Outcome x) -> x.point().familyIndex()).thenComparingInt(Outcome::repetitionIndex));

    Files.createDirectories(o.out());
    for (String suite : o.suites()) {
      Path file = o.out().resolve("jvm_" + suite + ".json");
      List<Outcome> ofSuite = outcomes.stream().filter(x -> x.point().family().suite().equals(suite)).toList();
      long jitDuringPoints = ofSuite.stream().mapToLong(Outcome::jitMs).sum();
      BenchmarkJson.write(file, BenchmarkJson.locklabContext(suite, o, jitDuringPoints), ofSuite, o.repetitions());
      System.out.println("wrote " + file);
    }
    return outcomes;
  }

  /**
   * Sleeps until the JIT's total compilation time has not grown for 200 ms (at most 5 s); returns
   * how long it waited.
   */
  private static long awaitIdleJit() throws InterruptedException {
    long start = System.nanoTime();
    long idleSince = start;
    long last = JIT.getTotalCompilationTime();
    while (System.nanoTime() - idleSince < 200_000_000L && System.nanoTime() - start < 5_000_000_000L) {
      Thread.sleep(20);
      long now = JIT.getTotalCompilationTime();
      if (now != last) {
        last = now;
        idleSince = System.nanoTime();
      }
    }
    return (idleSince - start) / 1_000_000;
  }

  private static Outcome measure(Point p, int repetitionIndex, long durationMs) throws InterruptedException {
    long jitBefore = JIT.getTotalCompilationTime();
    try {
      Harness.Result r = Harness.run(new Harness.Workload(p.waiters(), durationMs), p.family().subject().get());
      return new Outcome(p, repetitionIndex, r, null, JIT.getTotalCompilationTime() - jitBefore);
    } catch (IllegalStateException e) {
      return new Outcome(p, repetitionIndex, null, e.getMessage(), JIT.getTotalCompilationTime() - jitBefore);
    }
  }

  private static String consoleLine(Outcome x) {
    if (x.error() != null) return String.format(Locale.ROOT, "%-48s FAILED: %s", x.point().name(), x.error());
    Harness.Result r = x.result();
    return String.format(Locale.ROOT, "%-48s %10.2f M/s  %8.2f ns/op  cpu/wall %.2f  fairness %.2f (steady %.2f)%s",
        x.point().name(), r.opsPerSecond() / 1e6, r.nsPerOp(), r.cpuPerWall(), r.fairness(), r.fairnessSteady(),
        x.jitMs() > 0 ? "  (JIT compiled for " + x.jitMs() + " ms during the point)" : "");
  }
}
