// SelfTest.java — `--selftest`: a smoke run of the whole driver that `./lab
// test` can afford (a few seconds with the JVM's start). Every implementation
// of both suites runs one 20 ms point at 2 waiters after a 20 ms warm-up, so
// every counter checks its total (Counters.java) and every lock runs
// contended; then the JSON files are read back and checked against the schema
// the plots rely on: the structure, names that parse as
// `<suite>/java.<Impl>/waiters:<N>[/<knob>:<v>]` and agree with the counters,
// exactly the expected points, positive throughput. It also checks that the
// calibrated busy work really spins (that C2 did not delete the loop), and that
// a counted and a clock-checked section last roughly what was asked.
//
// It tests the driver, not the JVM: 20 ms points say nothing about speed.
package locklab.jvm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

final class SelfTest {
  private SelfTest() {}

  // '/' and ':' separate the parts of a name, so an implementation may not contain them.
  private static final Pattern NAME =
      Pattern.compile("(counters|locks|rwlocks)/(java\\.[^/:]+)/waiters:([0-9]+)((?:/[a-z_]+:[0-9]+)*)");

  private static final List<String> CONTEXT_STRINGS = List.of("date", "host_name", "locklab_suite", "locklab_mode",
      "duration_ms", "cpu_model", "cores", "kernel", "compiler", "locklab_build", "git_revision");

  /** Runs the smoke suites and checks them; prints what failed; true when all passed. */
  static boolean run(JvmPeers.Options o) throws IOException, InterruptedException {
    List<String> problems = new ArrayList<>();
    checkBusyWork(problems);
    checkLatencySampler(problems);
    boolean tempDir = o.out() == null;
    Path dir = tempDir ? Files.createTempDirectory("locklab-jvm-selftest") : o.out();
    JvmPeers.Options smoke = new JvmPeers.Options(o.mode(), o.durationMs(), o.waiters(), o.csNs(), o.readPermilles(),
        o.warmupMs(),
        o.repetitions(), o.suites(), dir, true);
    List<JvmPeers.Outcome> outcomes = JvmPeers.runSuites(smoke);
    for (JvmPeers.Outcome x : outcomes) {
      if (x.error() != null) problems.add(x.point().name() + ": " + x.error());
    }
    for (String suite : o.suites()) {
      Set<String> expected = new HashSet<>();
      for (JvmPeers.Family f : JvmPeers.families(smoke)) {
        if (f.suite().equals(suite)) for (int w : smoke.waiters()) expected.add(f.pointName(w));
      }
      Path file = dir.resolve("jvm_" + suite + ".json");
      try {
        checkFile(Json.parse(Files.readString(file)), suite, expected, problems);
      } catch (IllegalArgumentException | IOException e) {
        problems.add(file + ": " + e.getMessage());
      }
    }
    if (problems.isEmpty()) {
      System.out.println("selftest: " + outcomes.size() + " points, JSON checked: OK");
      if (tempDir) {
        for (String suite : o.suites()) Files.delete(dir.resolve("jvm_" + suite + ".json"));
        Files.delete(dir);
      }
      return true;
    }
    problems.forEach(p -> System.err.println("selftest FAILED: " + p));
    System.err.println("selftest: output kept in " + dir);
    return false;
  }

  /**
   * The latency sampler's rules (latency_sampler_test.cpp checks the C++ one): operations whose latency is their
   * index, 10 ns apart, are timed at most about once per MIN_INTERVAL_NS and exactly at indices K-1, 2K-1, ...; 1 ms
   * apart, every one is timed until the buffer fills.
   */
  private static void checkLatencySampler(List<String> problems) {
    LatencySampler fast = new LatencySampler();
    int ops = 100_000;
    for (int i = 0; i < ops; i++) if (fast.due()) fast.record(i, i * 10L);
    long allowed = 2L * ops * 10 / LatencySampler.MIN_INTERVAL_NS + LatencySampler.WINDOW;
    if (fast.size == 0 || fast.size > allowed) {
      problems.add("latency sampler: " + fast.size + " samples of 1 ms of 10 ns operations, expected 1.." + allowed);
    }
    for (int j = 0; j < fast.size; j++) {
      if (fast.samples[j] != (j + 1) * fast.stride - 1) {
        problems.add("latency sampler: sample " + j + " is operation " + fast.samples[j] + " at stride " + fast.stride);
        break;
      }
    }
    LatencySampler slow = new LatencySampler();
    for (int i = 0; i < LatencySampler.CAPACITY; i++) if (slow.due()) slow.record(i, i * 1_000_000L);
    if (slow.stride != 1 || slow.size != LatencySampler.CAPACITY) {
      problems.add("latency sampler: 1 ms operations were not all timed (stride " + slow.stride + ", " + slow.size + ")");
    }
  }

  /**
   * 2 ms of calibrated spin must take at least 1 ms; less means the JIT removed the loop. And a
   * 300 ns and a 2000 ns section must last roughly that long.
   */
  private static void checkBusyWork(List<String> problems) {
    long best = Long.MAX_VALUE;
    for (int trial = 0; trial < 5; trial++) {
      long start = System.nanoTime();
      BusyWork.spinIterations(BusyWork.iterationsFor(2_000_000));
      best = Math.min(best, System.nanoTime() - start);
    }
    if (best < 1_000_000) problems.add("busy work: 2 ms of spin took " + best + " ns");
    // A section on either path (counted, clock-checked) lasts between half and
    // ten times what was asked: loose, so it checks the fixed-cost arithmetic
    // and not this machine's speed; best of 5 runs of 100 calls.
    for (long ns : new long[] {300, 2000}) {
      long bestRun = Long.MAX_VALUE;
      for (int trial = 0; trial < 5; trial++) {
        long start = System.nanoTime();
        for (int i = 0; i < 100; i++) BusyWork.spinNs(ns);
        bestRun = Math.min(bestRun, System.nanoTime() - start);
      }
      double perCall = bestRun / 100.0;
      if (perCall < 0.5 * ns || perCall > 10.0 * ns) {
        problems.add("busy work: a " + ns + " ns section took " + perCall + " ns");
      }
    }
  }

  private static void checkFile(Object json, String suite, Set<String> expected, List<String> problems) {
    String where = "jvm_" + suite + ".json";
    if (!(json instanceof Map<?, ?> top) || !(top.get("context") instanceof Map<?, ?> context)
        || !(top.get("benchmarks") instanceof List<?> entries)) {
      problems.add(where + ": expected an object with a 'context' object and a 'benchmarks' list");
      return;
    }
    for (String key : CONTEXT_STRINGS) {
      if (!(context.get(key) instanceof String)) problems.add(where + ": context." + key + " is not a string");
    }
    if (!suite.equals(context.get("locklab_suite"))) problems.add(where + ": context.locklab_suite is not " + suite);
    if (!"jvm".equals(context.get("locklab_build"))) problems.add(where + ": context.locklab_build is not jvm");
    if (!(context.get("num_cpus") instanceof Double)) problems.add(where + ": context.num_cpus is not a number");

    Set<String> seen = new HashSet<>();
    for (Object item : entries) {
      if (!(item instanceof Map<?, ?> e) || !(e.get("name") instanceof String name)) {
        problems.add(where + ": an entry without a name");
        continue;
      }
      seen.add(name);
      String at = where + ": " + name + ": ";
      Matcher m = NAME.matcher(name);
      if (!m.matches() || !m.group(1).equals(suite)) {
        problems.add(at + "does not parse as " + suite + "/java.<Impl>/waiters:<N>[/<knob>:<v>]");
        continue;
      }
      if (!name.equals(e.get("run_name"))) problems.add(at + "run_name differs from name");
      if (!"iteration".equals(e.get("run_type"))) problems.add(at + "run_type is not iteration");
      if (!"ms".equals(e.get("time_unit"))) problems.add(at + "time_unit is not ms");
      if (e.containsKey("error_occurred")) problems.add(at + "error: " + e.get("error_message"));
      Map<String, Double> knobs = new HashMap<>();
      for (String knob : m.group(4).split("/")) {
        if (!knob.isEmpty()) knobs.put(knob.substring(0, knob.indexOf(':')), Double.valueOf(knob.substring(knob.indexOf(':') + 1)));
      }
      // rwlocks: cs_ns carries the read section (read_write.hpp's calibration).
      double csInName = knobs.getOrDefault("cs_ns", knobs.getOrDefault("read_cs_ns", 0.0));
      requireNumber(e, "waiters", Double.parseDouble(m.group(3)), Double.parseDouble(m.group(3)), at, problems);
      requireNumber(e, "cs_ns", csInName, csInName, at, problems);
      requireNumber(e, "real_time", Double.MIN_VALUE, Double.MAX_VALUE, at, problems);
      requireNumber(e, "cpu_time", 0, Double.MAX_VALUE, at, problems);
      requireNumber(e, "items_per_second", Double.MIN_VALUE, Double.MAX_VALUE, at, problems);
      requireNumber(e, "ns_per_op", Double.MIN_VALUE, Double.MAX_VALUE, at, problems);
      requireNumber(e, "cpu_per_wall", 0, Double.MAX_VALUE, at, problems);
      requireNumber(e, "fairness", 0, 1, at, problems);
      requireNumber(e, "fairness_steady", 0, 1, at, problems);
      requireNumber(e, "think_ns", 0, 0, at, problems);
      for (String key : List.of("family_index", "repetitions", "repetition_index", "threads", "iterations")) {
        requireNumber(e, key, 0, Double.MAX_VALUE, at, problems);
      }
      if (name.contains("cas_loop")) requireNumber(e, "cas_failures_per_op", 0, Double.MAX_VALUE, at, problems);
      if (suite.equals(ReadWrite.SUITE)) checkReadWrite(e, knobs, at, problems);
      if (suite.equals(Locks.SUITE)) checkAcquireLatency(e, at, problems);
    }
    if (!seen.equals(expected)) problems.add(where + ": expected the points " + expected + ", found " + seen);
  }

  /**
   * The rwlocks counters: reads and writes per second adding up to the throughput, the read fraction
   * near the knob (a pseudo-random draw over thousands of operations), retries only for optimistic
   * reads, the writer's wait only where writes were made.
   */
  private static void checkReadWrite(Map<?, ?> e, Map<String, Double> knobs, String at, List<String> problems) {
    requireNumber(e, "reads_per_s", 0, Double.MAX_VALUE, at, problems);
    requireNumber(e, "writes_per_s", 0, Double.MAX_VALUE, at, problems);
    requireNumber(e, "read_fraction", 0, 1, at, problems);
    if (!(e.get("reads_per_s") instanceof Double r) || !(e.get("writes_per_s") instanceof Double w)
        || !(e.get("items_per_second") instanceof Double all) || !(e.get("read_fraction") instanceof Double f)) {
      return;  // reported above
    }
    if (Math.abs(r + w - all) > 1e-6 * all) problems.add(at + "reads_per_s + writes_per_s != items_per_second");
    double knob = knobs.getOrDefault("read_permille", -1.0) / 1000;
    if (Math.abs(f - knob) > 0.05) problems.add(at + "read_fraction " + f + " is not near read_permille's " + knob);
    String name = (String) e.get("name");
    if (name.contains("(optimistic)")) requireNumber(e, "optimistic_retries_per_read", 0, 1, at, problems);
    else if (e.containsKey("optimistic_retries_per_read")) problems.add(at + "retries on a non-optimistic read");
    if (w > 0) requireNumber(e, "write_wait_p99_us", 0, Double.MAX_VALUE, at, problems);
  }

  /** The locks suite's sampled acquire latency, as run_lock_contention reports it: p50 <= p99 <= p99.9. */
  private static void checkAcquireLatency(Map<?, ?> e, String at, List<String> problems) {
    for (String key : List.of("p50_us", "p99_us", "p999_us")) requireNumber(e, key, 0, Double.MAX_VALUE, at, problems);
    if (e.get("p50_us") instanceof Double p50 && e.get("p99_us") instanceof Double p99
        && e.get("p999_us") instanceof Double p999 && !(p50 <= p99 && p99 <= p999)) {
      problems.add(at + "acquire latency percentiles out of order: " + p50 + ", " + p99 + ", " + p999 + " us");
    }
  }

  private static void requireNumber(Map<?, ?> entry, String key, double min, double max, String at,
                                    List<String> problems) {
    if (!(entry.get(key) instanceof Double v) || v < min || v > max) {
      problems.add(at + key + " = " + entry.get(key) + ", expected a number in [" + min + ", " + max + "]");
    }
  }

  /**
   * Just enough of a JSON reader to check what BenchmarkJson wrote: objects (LinkedHashMap),
   * arrays (List), strings, numbers (Double), true/false/null. Throws IllegalArgumentException with
   * the offset of the first syntax error.
   */
  static final class Json {
    private final String text;
    private int pos;

    private Json(String text) {
      this.text = text;
    }

    static Object parse(String text) {
      Json p = new Json(text);
      Object value = p.value();
      p.skipSpace();
      if (p.pos != text.length()) throw p.error("text after the value");
      return value;
    }

    private Object value() {
      skipSpace();
      if (pos >= text.length()) throw error("unexpected end");
      char c = text.charAt(pos);
      if (c == '{') return object();
      if (c == '[') return array();
      if (c == '"') return string();
      for (String word : List.of("true", "false", "null")) {
        if (text.startsWith(word, pos)) {
          pos += word.length();
          return word.equals("null") ? null : Boolean.valueOf(word);
        }
      }
      return number();
    }

    private Map<String, Object> object() {
      Map<String, Object> map = new LinkedHashMap<>();
      pos++;
      skipSpace();
      if (peek('}')) return map;
      do {
        skipSpace();
        String key = string();
        skipSpace();
        expect(':');
        map.put(key, value());
        skipSpace();
      } while (peek(','));
      expect('}');
      return map;
    }

    private List<Object> array() {
      List<Object> list = new ArrayList<>();
      pos++;
      skipSpace();
      if (peek(']')) return list;
      do {
        list.add(value());
        skipSpace();
      } while (peek(','));
      expect(']');
      return list;
    }

    private String string() {
      expect('"');
      StringBuilder s = new StringBuilder();
      while (pos < text.length() && text.charAt(pos) != '"') {
        char c = text.charAt(pos++);
        if (c < 0x20) throw error("control character in a string");
        if (c != '\\') {
          s.append(c);
          continue;
        }
        if (pos >= text.length()) throw error("unexpected end");
        char escaped = text.charAt(pos++);
        switch (escaped) {
          case '"', '\\', '/' -> s.append(escaped);
          case 'b' -> s.append('\b');
          case 'f' -> s.append('\f');
          case 'n' -> s.append('\n');
          case 'r' -> s.append('\r');
          case 't' -> s.append('\t');
          case 'u' -> {
            if (pos + 4 > text.length()) throw error("short \\u escape");
            s.append((char) Integer.parseInt(text.substring(pos, pos + 4), 16));
            pos += 4;
          }
          default -> throw error("bad escape \\" + escaped);
        }
      }
      expect('"');
      return s.toString();
    }

    private static final Pattern NUMBER = Pattern.compile("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?");

    private Double number() {
      Matcher m = NUMBER.matcher(text).region(pos, text.length());
      if (!m.lookingAt()) throw error("expected a value");
      pos = m.end();
      return Double.valueOf(m.group());
    }

    private void skipSpace() {
      while (pos < text.length() && " \t\r\n".indexOf(text.charAt(pos)) >= 0) pos++;
    }

    private boolean peek(char c) {
      if (pos < text.length() && text.charAt(pos) == c) {
        pos++;
        return true;
      }
      return false;
    }

    private void expect(char c) {
      if (!peek(c)) throw error("expected '" + c + "'");
    }

    private IllegalArgumentException error(String what) {
      return new IllegalArgumentException("JSON syntax error at offset " + pos + ": " + what);
    }
  }
}
