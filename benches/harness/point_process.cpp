#include "benches/harness/point_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace locklab::bench {

// ------------------------------------------------------------------ flags

std::string take_flag(std::vector<std::string>& args, const std::string& flag) {
  std::string value;
  for (auto it = args.begin(); it != args.end();) {
    if (it->rfind(flag + "=", 0) == 0) {
      value = it->substr(flag.size() + 1);
      it = args.erase(it);
    } else {
      ++it;
    }
  }
  return value;
}

bool has_flag(const std::vector<std::string>& args, const std::string& flag) {
  return std::any_of(args.begin(), args.end(), [&](const std::string& a) { return a.rfind(flag + "=", 0) == 0; });
}

int parse_positive(const std::string& text, const std::string& what) {
  int v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || p != text.data() + text.size() || v < 1) {
    throw std::invalid_argument(what + ": expected a positive integer, got '" + text + "'");
  }
  return v;
}

std::vector<int> parse_positive_list(const std::string& text, const std::string& what) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(parse_positive(item, what));
  if (out.empty()) throw std::invalid_argument(what + ": empty list");
  return out;
}

std::string first_line_with(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto value = line.substr(colon + 1);
        value.erase(0, value.find_first_not_of(" \t"));
        return value;
      }
    }
  }
  return "unknown";
}

// ------------------------------------------------------------ wire format

namespace {

void check_name(const std::string& name, const char* what) {
  const bool blank = std::any_of(name.begin(), name.end(), [](unsigned char c) { return std::isspace(c) != 0; });
  if (name.empty() || blank) {
    throw std::invalid_argument(std::string("format_result: ") + what + " '" + name +
                                "' must be non-empty and free of white space");
  }
}

// Splits a line at white space (the format writes single spaces).
std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

[[noreturn]] void bad_line(const std::string& line, const std::string& why) {
  throw std::runtime_error("malformed result line '" + line + "': " + why);
}

template <class T>
T number(const std::string& text, const std::string& line) {
  T v{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || p != text.data() + text.size()) bad_line(line, "'" + text + "' is not a number");
  return v;
}

}  // namespace

std::string format_result(const ContentionResult& r) {
  check_name(r.per_unit, "per_unit");
  for (const auto& [k, v] : r.event_deltas) check_name(k, "event name");
  for (const auto& [k, v] : r.extra) check_name(k, "extra name");
  std::ostringstream out;
  out.precision(17);
  out << "per_unit " << r.per_unit << "\nwall_seconds " << r.wall_seconds << "\ncpu_seconds " << r.cpu_seconds
      << "\n";
  for (const auto& [k, v] : r.event_deltas) out << "event " << k << " " << v << "\n";
  for (const auto& [k, v] : r.extra) out << "extra " << k << " " << v << "\n";
  out << "ops";
  for (auto n : r.ops_per_waiter) out << " " << n;
  out << "\n";
  return out.str();
}

ContentionResult parse_result(const std::string& text, const Workload& w) {
  ContentionResult r;
  r.workload = w;
  bool have_wall = false, have_cpu = false, have_ops = false;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const std::vector<std::string> f = fields_of(line);
    if (f.empty()) continue;
    const std::string& kind = f[0];
    auto arity = [&](std::size_t n) {
      if (f.size() != n) bad_line(line, "expected " + std::to_string(n - 1) + " value(s) after '" + kind + "'");
    };
    if (kind == "per_unit") {
      arity(2);
      r.per_unit = f[1];
    } else if (kind == "wall_seconds") {
      arity(2);
      r.wall_seconds = number<double>(f[1], line);
      have_wall = true;
    } else if (kind == "cpu_seconds") {
      arity(2);
      r.cpu_seconds = number<double>(f[1], line);
      have_cpu = true;
    } else if (kind == "event" || kind == "extra") {
      arity(3);
      (kind == "event" ? r.event_deltas : r.extra).emplace_back(f[1], number<double>(f[2], line));
    } else if (kind == "ops") {
      for (std::size_t i = 1; i < f.size(); ++i) r.ops_per_waiter.push_back(number<std::uint64_t>(f[i], line));
      have_ops = true;
    } else {
      bad_line(line, "unknown kind '" + kind + "'");
    }
  }
  if (!have_wall || !have_cpu || !have_ops) {
    throw std::runtime_error(std::string("no result: the '") +
                             (!have_wall ? "wall_seconds" : !have_cpu ? "cpu_seconds" : "ops") +
                             "' line is missing (" + std::to_string(text.size()) + " bytes of output)");
  }
  if (!(r.wall_seconds > 0)) {
    throw std::runtime_error("no result: wall_seconds must be > 0, got " + std::to_string(r.wall_seconds));
  }
  return r;
}

// -------------------------------------------------------- child processes

std::string self_path() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) throw std::runtime_error("cannot find my own executable in /proc/self/exe");
  return std::string(buf, static_cast<std::size_t>(n));
}

namespace {

// Owns a started child until it is reaped: the destructor SIGKILLs and reaps
// one that is still running, so no exception leaves a process behind.
class Child {
 public:
  Child(pid_t pid, int out) : pid_(pid), out_(out) {}
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    close_out();
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }

  // Appends the child's stdout to `text` until EOF; false at the deadline.
  bool read_all(std::string& text, std::chrono::steady_clock::time_point deadline) {
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) return false;
      pollfd fd{out_, POLLIN, 0};
      const int n = ::poll(&fd, 1, static_cast<int>(std::min<long long>(left, 1000)));
      if (n < 0 && errno != EINTR) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
      if (n <= 0) continue;
      char buf[65536];
      const ssize_t got = ::read(out_, buf, sizeof(buf));
      if (got > 0) {
        text.append(buf, static_cast<std::size_t>(got));
      } else if (got == 0) {
        close_out();
        return true;
      } else if (errno != EINTR) {
        throw std::runtime_error(std::string("read: ") + std::strerror(errno));
      }
    }
  }

  // Waits for the exit (it has closed stdout, so it is normally exiting);
  // the wait status, or nullopt at the deadline.
  std::optional<int> reap(std::chrono::steady_clock::time_point deadline) {
    for (;;) {
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        return status;
      }
      if (r < 0 && errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

 private:
  void close_out() {
    if (out_ >= 0) ::close(out_);
    out_ = -1;
  }
  pid_t pid_;
  int out_;
};

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const char* name = ::strsignal(WTERMSIG(status));
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + (name != nullptr ? name : "?") + ")";
  }
  return "ended with wait status " + std::to_string(status);
}

}  // namespace

std::string run_child(const std::vector<std::string>& argv, std::chrono::milliseconds bound, const std::string& what) {
  if (argv.empty()) throw std::invalid_argument(what + ": no program to run");
  const auto deadline = std::chrono::steady_clock::now() + bound;
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error(what + ": pipe2: " + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  ::posix_spawn_file_actions_init(&fa);
  // dup2 clears O_CLOEXEC on the copy: the child keeps exactly its stdout.
  ::posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  std::vector<std::string> a = argv;
  std::vector<char*> args;
  for (auto& s : a) args.push_back(s.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  ::posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    throw std::runtime_error(what + ": cannot start " + argv[0] + ": " + std::strerror(rc));
  }
  Child child(pid, out[0]);
  std::string text;
  std::optional<int> status;
  if (child.read_all(text, deadline)) status = child.reap(deadline);
  if (!status) {
    const double s = std::chrono::duration<double>(bound).count();
    std::ostringstream msg;
    msg << what << ": still running after " << s << " s (killed; its message, if any, is on stderr)";
    throw std::runtime_error(msg.str());  // ~Child kills and reaps it
  }
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    throw std::runtime_error(what + ": the child process " + describe(*status) + " (its message is on stderr)");
  }
  return text;
}

ContentionResult measure_in_child(const std::string& name, const Workload& w) {
  const std::string what = "point " + name;
  const std::string text = run_child(
      {self_path(), "--point=" + name, "--duration_ms=" + std::to_string(w.duration.count())},
      w.duration + std::chrono::milliseconds(kParentBoundSlack), what);
  try {
    return parse_result(text, w);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(what + ": " + e.what());
  }
}

std::optional<PointRequest> take_point_request(std::vector<std::string>& args) {
  PointRequest request;
  request.name = take_flag(args, "--point");
  if (request.name.empty()) return std::nullopt;
  const std::string ms = take_flag(args, "--duration_ms");
  if (!ms.empty()) request.duration = std::chrono::milliseconds(parse_positive(ms, "--duration_ms"));
  return request;
}

int point_child_main(const PointRequest& request, const PointRunner& run) {
  // Never hang the suite: a configuration that deadlocks dies by SIGALRM.
  ::alarm(static_cast<unsigned>(request.duration.count() / 1000 + kChildAlarmSlack.count()));
  const ContentionResult r = run(request.name, request.duration);
  std::cout << format_result(r) << std::flush;
  return 0;
}

PointSpec parse_point_name(const std::string& name, const std::string& suite, const std::vector<std::string>& keys) {
  std::vector<std::string> parts;
  std::stringstream in(name);
  for (std::string part; std::getline(in, part, '/');) parts.push_back(part);
  if (parts.size() != keys.size() + 2 || parts[0] != suite) {
    const bool vowel = !suite.empty() && std::string("aeiou").find(suite[0]) != std::string::npos;
    throw std::invalid_argument("--point: not " + std::string(vowel ? "an " : "a ") + suite + " point: " + name);
  }
  PointSpec s;
  s.impl = parts[1];
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string& part = parts[i + 2];
    if (part.rfind(keys[i] + ":", 0) != 0) throw std::invalid_argument("--point: expected " + keys[i] + " in " + name);
    s.values.push_back(parse_positive(part.substr(keys[i].size() + 1), keys[i]));
  }
  return s;
}

}  // namespace locklab::bench
