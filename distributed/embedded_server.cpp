#include "distributed/embedded_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "distributed/connection.hpp"

namespace locklab::redis {

namespace {

using Clock = std::chrono::steady_clock;

int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("EmbeddedServer: socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw std::runtime_error("EmbeddedServer: cannot find a free port on 127.0.0.1: " + why);
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

bool executable(const std::string& path) { return !path.empty() && ::access(path.c_str(), X_OK) == 0; }

// The process_id line of an INFO server reply; 0 if absent or unreadable.
pid_t process_id(const Reply& info) {
  if (!info.is_string()) return 0;
  constexpr std::string_view kField = "process_id:";
  const std::string& text = info.as_string();
  const auto at = text.find(kField);
  if (at == std::string::npos) return 0;
  const char* first = text.data() + at + kField.size();
  pid_t pid = 0;
  std::from_chars(first, text.data() + text.size(), pid);
  return pid;
}

}  // namespace

std::string EmbeddedServer::find_executable() {
  if (const char* env = std::getenv("LOCKLAB_REDIS_SERVER"); env != nullptr && *env != '\0') {
    if (executable(env)) return env;
    throw std::runtime_error(std::string("EmbeddedServer: LOCKLAB_REDIS_SERVER=") + env + " is not an executable");
  }
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::stringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      if (!dir.empty() && executable(dir + "/redis-server")) return dir + "/redis-server";
    }
  }
  for (const char* p : {"/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server"}) {
    if (executable(p)) return p;
  }
  throw std::runtime_error(
      "EmbeddedServer: redis-server not found (set LOCKLAB_REDIS_SERVER, or install Debian's package redis-server: "
      "./lab setup)");
}

EmbeddedServer::EmbeddedServer() : EmbeddedServer(Options{}) {}

EmbeddedServer::EmbeddedServer(Options options) : options_(std::move(options)) {
  if (!options_.bind.empty()) host_ = options_.bind.front();
  executable_ = options_.executable.empty() ? find_executable() : options_.executable;
  if (!executable(executable_)) throw std::runtime_error("EmbeddedServer: " + executable_ + " is not an executable");
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/locklab-redis-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("EmbeddedServer: mkdtemp(" + pattern + "): " + std::strerror(errno));
  }
  dir_ = pattern;
  std::string why;
  for (int attempt = 0; attempt < 5; ++attempt) {
    int port = 0;
    try {
      port = free_loopback_port();
    } catch (...) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      throw;
    }
    if (launch(port, why)) {
      port_ = port;
      return;
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  throw std::runtime_error("EmbeddedServer: redis-server did not start: " + why);
}

EmbeddedServer::~EmbeddedServer() {
  stop();
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

std::vector<std::unique_ptr<EmbeddedServer>> EmbeddedServer::start_many(int n) { return start_many(n, Options{}); }

std::vector<std::unique_ptr<EmbeddedServer>> EmbeddedServer::start_many(int n, const Options& options) {
  std::vector<std::unique_ptr<EmbeddedServer>> servers;
  for (int i = 0; i < n; ++i) servers.push_back(std::make_unique<EmbeddedServer>(options));
  return servers;
}

Client::Options EmbeddedServer::client_options() const {
  Client::Options o;
  o.host = host_;
  o.port = port_;
  return o;
}

bool EmbeddedServer::launch(int port, std::string& why) {
  const std::string log = dir_ + "/redis.log";
  std::vector<std::string> args = options_.launch_prefix;
  args.push_back(executable_);
  if (!options_.config_text.empty()) {
    const std::string conf = dir_ + "/redis.conf";
    std::ofstream out(conf, std::ios::trunc);
    out << options_.config_text;
    if (!out) {
      why = "cannot write " + conf;
      return false;
    }
    args.push_back(conf);
  }
  args.insert(args.end(), {"--port", std::to_string(port), "--bind"});
  if (options_.bind.empty()) args.push_back(host_);
  args.insert(args.end(), options_.bind.begin(), options_.bind.end());
  args.insert(args.end(), {"--save", "", "--appendonly", "no", "--dir", dir_, "--daemonize", "no",
                           "--protected-mode", "yes", "--logfile", log});
  if (options_.enable_debug_command) {
    args.push_back("--enable-debug-command");
    args.push_back("local");
  }
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  // Everything the child needs is prepared before fork: after fork in a
  // multi-threaded parent only async-signal-safe calls are allowed.
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    why = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died already
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    // Start-up errors (a bad option) go to stderr before the log file opens.
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (out >= 0) {
      ::dup2(out, 1);
      ::dup2(out, 2);
    }
    ::setpgid(0, 0);  // a Ctrl-C to the test runner's group is handled by the parent
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  pid_ = pid;
  port_ = port;
  Client::Options probe = client_options();
  probe.connect_timeout = std::chrono::milliseconds(200);
  probe.command_timeout = std::chrono::milliseconds(500);
  const auto deadline = Clock::now() + options_.start_timeout;
  pid_t foreign = 0;  // the process_id of a server on the port that is not ours
  while (Clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      why = "redis-server exited at start (port " + std::to_string(port) + ")";
      if (foreign != 0) {
        why += "; the port is served by another redis-server, process_id " + std::to_string(foreign) +
               ", which was left alone";
      }
      why += "; log:\n" + log_tail();
      return false;
    }
    try {
      auto c = detail::Connection::open(probe);
      if (c->exchange({"PING"}).describe() == "PONG") {
        // Someone answers; make sure it is the process we started, not a
        // server that held the port first (ours will then fail to bind and
        // exit, which the waitpid above sees).
        const pid_t answering = process_id(c->exchange({"INFO", "server"}));
        if (answering == pid_) return true;
        foreign = answering;
      }
    } catch (const Error&) {
      // not listening yet
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  why = foreign != 0 ? "only another redis-server, process_id " + std::to_string(foreign) + ", answered within " +
                          std::to_string(options_.start_timeout.count()) + " ms; log:\n" + log_tail()
                    : "no PING answer within " + std::to_string(options_.start_timeout.count()) + " ms; log:\n" +
                          log_tail();
  reap(std::chrono::milliseconds(0));
  return false;
}

void EmbeddedServer::reap(std::chrono::milliseconds grace) noexcept {
  if (pid_ <= 0) return;
  if (grace.count() > 0) {
    ::kill(pid_, SIGTERM);
    const auto deadline = Clock::now() + grace;
    while (Clock::now() < deadline) {
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_ || (r < 0 && errno == ECHILD)) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

void EmbeddedServer::stop() noexcept { reap(std::chrono::milliseconds(2'000)); }

void EmbeddedServer::kill() noexcept { reap(std::chrono::milliseconds(0)); }

void EmbeddedServer::restart() {
  stop();
  std::string why;
  for (int attempt = 0; attempt < 20; ++attempt) {
    if (launch(port_, why)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a socket still closing
  }
  throw std::runtime_error("EmbeddedServer: restart on port " + std::to_string(port_) + " failed: " + why);
}

std::string EmbeddedServer::log_tail(std::size_t max_bytes) const {
  std::ifstream in(dir_ + "/redis.log", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > max_bytes ? text.substr(text.size() - max_bytes) : text;
}

}  // namespace locklab::redis
