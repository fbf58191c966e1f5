// BenchmarkJson.java — writes the JVM results in the JSON that the C++ suites
// get from Google Benchmark's JSONReporter (see results/counters.json), so
// notebooks/locklab_plots.py and compare.py read both without knowing which
// language wrote them.
//
// The same shape, field for field: a `context` with Google Benchmark's machine
// keys (date, host_name, executable, num_cpus, mhz_per_cpu, load_avg) and
// locklab's string keys (locklab_suite tells which C++ suite these points
// overlay; compiler names the JVM; locklab_build is "jvm"), then one entry per
// repetition of a point: one iteration, real_time = wall time and cpu_time =
// process CPU time in ms, and the counters of suite.hpp's report_to in
// alphabetical order, as Google Benchmark sorts them. A failed point is an
// entry with error_occurred and error_message, as SkipWithError writes it.
//
// What differs: no aggregate entries (mean, median, ...) after a point's
// repetitions in full mode; the plot module takes the median of the
// iteration entries itself. Written by hand because the JDK has no JSON
// library; SelfTest.java reads the files back with a small parser.
package locklab.jvm;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

final class BenchmarkJson {
  private BenchmarkJson() {}

  /** "OpenJDK 17.0.15+6-Debian-1deb12u1 (OpenJDK 64-Bit Server VM)" */
  static String jvmName() {
    return "OpenJDK " + Runtime.version() + " (" + System.getProperty("java.vm.name") + ")";
  }

  /** The string context keys of suite.cpp's add_context, for the JVM, plus how the JVM ran. */
  static Map<String, String> locklabContext(String suite, JvmPeers.Options o, long jitMsDuringPoints) {
    String revision = System.getenv("LOCKLAB_GIT_REVISION");
    Map<String, String> c = new TreeMap<>();
    c.put("locklab_suite", suite);
    c.put("locklab_mode", o.mode());
    c.put("duration_ms", Long.toString(o.durationMs()));
    c.put("cpu_model", cpuinfo("model name", "unknown"));
    c.put("cores", Integer.toString(Runtime.getRuntime().availableProcessors()));
    c.put("kernel", System.getProperty("os.name") + " " + System.getProperty("os.version"));
    c.put("compiler", jvmName());
    c.put("locklab_build", "jvm");
    c.put("git_revision", revision != null && !revision.isEmpty() ? revision : "unknown");
    c.put("busy_work_iterations_per_ns", String.format(Locale.ROOT, "%.6f", BusyWork.iterationsPerNs()));
    c.put("busy_work_counted_fixed_ns", String.format(Locale.ROOT, "%.6f", BusyWork.countedFixedNs()));
    c.put("busy_work_clock_checked_fixed_ns", String.format(Locale.ROOT, "%.6f", BusyWork.clockCheckedFixedNs()));
    c.put("jvm_flags", String.join(" ", ManagementFactory.getRuntimeMXBean().getInputArguments()));
    c.put("warmup_ms", Long.toString(o.warmupMs()));
    c.put("jit_ms_during_points", Long.toString(jitMsDuringPoints));
    return c;
  }

  static void write(Path file, Map<String, String> locklabContext, List<JvmPeers.Outcome> outcomes, int repetitions)
      throws IOException {
    StringBuilder out = new StringBuilder("{\n  \"context\": {\n");
    out.append("    \"date\": ").append(quote(ZonedDateTime.now().truncatedTo(ChronoUnit.SECONDS)
        .format(DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ssxxx")))).append(",\n");
    out.append("    \"host_name\": ").append(quote(firstLine(Path.of("/proc/sys/kernel/hostname"), "unknown"))).append(",\n");
    out.append("    \"executable\": ").append(quote("java " + JvmPeers.class.getName())).append(",\n");
    out.append("    \"num_cpus\": ").append(Runtime.getRuntime().availableProcessors()).append(",\n");
    out.append("    \"mhz_per_cpu\": ").append(Math.round(Double.parseDouble(cpuinfo("cpu MHz", "0")))).append(",\n");
    String[] load = firstLine(Path.of("/proc/loadavg"), "0 0 0").split(" ");
    out.append("    \"load_avg\": [").append(load[0]).append(',').append(load[1]).append(',').append(load[2]).append("]");
    for (Map.Entry<String, String> e : locklabContext.entrySet()) {
      out.append(",\n    ").append(quote(e.getKey())).append(": ").append(quote(e.getValue()));
    }
    out.append("\n  },\n  \"benchmarks\": [");
    String separator = "\n";
    for (JvmPeers.Outcome x : outcomes) {
      out.append(separator);
      entry(out, x, repetitions);
      separator = ",\n";
    }
    out.append("\n  ]\n}\n");
    Files.writeString(file, out, StandardCharsets.UTF_8);
  }

  private static void entry(StringBuilder out, JvmPeers.Outcome x, int repetitions) {
    Map<String, Object> e = new LinkedHashMap<>();
    String name = x.point().name();
    e.put("name", name);
    e.put("family_index", x.point().familyIndex());
    e.put("per_family_instance_index", 0);
    e.put("run_name", name);
    e.put("run_type", "iteration");
    e.put("repetitions", repetitions);
    e.put("repetition_index", x.repetitionIndex());
    e.put("threads", 1);
    e.put("iterations", x.result() != null ? 1 : 0);
    if (x.result() == null) {
      e.put("real_time", 0.0);
      e.put("cpu_time", 0.0);
      e.put("time_unit", "ms");
      e.put("error_occurred", true);
      e.put("error_message", x.error());
    } else {
      Harness.Result r = x.result();
      e.put("real_time", r.wallSeconds() * 1e3);
      e.put("cpu_time", r.cpuSeconds() * 1e3);
      e.put("time_unit", "ms");
      Map<String, Double> counters = new TreeMap<>();
      counters.put("items_per_second", r.opsPerSecond());
      counters.put("ns_per_op", r.nsPerOp());
      counters.put("cpu_per_wall", r.cpuPerWall());
      counters.put("fairness", r.fairness());
      counters.put("fairness_steady", r.fairnessSteady());
      counters.put("waiters", (double) r.workload().waiters());
      counters.put("cs_ns", (double) x.point().family().csNs());
      counters.put("think_ns", 0.0);
      long ops = r.totalOps();
      r.events().forEach((event, count) -> counters.put(event + "_per_op", ops > 0 ? (double) count / ops : 0.0));
      counters.putAll(r.extra());
      e.putAll(counters);
    }
    out.append("    {");
    String separator = "\n";
    for (Map.Entry<String, Object> field : e.entrySet()) {
      out.append(separator).append("      ").append(quote(field.getKey())).append(": ").append(value(field.getValue()));
      separator = ",\n";
    }
    out.append("\n    }");
  }

  private static String value(Object v) {
    if (v instanceof String s) return quote(s);
    if (v instanceof Double d) {
      if (!Double.isFinite(d)) throw new IllegalArgumentException("not a JSON number: " + d);
      return String.format(Locale.ROOT, "%.16e", d);
    }
    return v.toString();  // Integer, Boolean
  }

  /** A JSON string literal: quotes, backslashes and control characters escaped. */
  static String quote(String s) {
    StringBuilder q = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      switch (c) {
        case '"' -> q.append("\\\"");
        case '\\' -> q.append("\\\\");
        case '\n' -> q.append("\\n");
        case '\r' -> q.append("\\r");
        case '\t' -> q.append("\\t");
        default -> {
          if (c < 0x20) q.append(String.format("\\u%04x", (int) c));
          else q.append(c);
        }
      }
    }
    return q.append('"').toString();
  }

  private static String firstLine(Path path, String fallback) {
    try {
      return Files.readAllLines(path).get(0).trim();
    } catch (IOException | IndexOutOfBoundsException e) {
      return fallback;
    }
  }

  /** The value of the first "key : value" line of /proc/cpuinfo that starts with key. */
  private static String cpuinfo(String key, String fallback) {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
        int colon = line.indexOf(':');
        if (line.startsWith(key) && colon > 0) return line.substring(colon + 1).trim();
      }
    } catch (IOException e) {
      // no /proc: not Linux
    }
    return fallback;
  }
}
