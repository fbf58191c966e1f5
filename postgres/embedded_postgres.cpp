#include "postgres/embedded_postgres.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "distributed/child_process.hpp"

namespace locklab::pg {

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Error(Error::Kind::kStart, std::string("EmbeddedPostgres: socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw Error(Error::Kind::kStart, "EmbeddedPostgres: cannot find a free port on 127.0.0.1: " + why);
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

bool executable(const std::string& path) { return !path.empty() && ::access(path.c_str(), X_OK) == 0; }
bool server_binaries_in(const std::string& dir) {
  return executable(dir + "/initdb") && executable(dir + "/postgres");
}

// Whether `uid` (group `gid`) may enter every directory on the way to and
// including `path`: the server's user must reach its temporary directory.
bool searchable_by(const std::string& path, uid_t uid, gid_t gid) {
  fs::path p = fs::absolute(path);
  for (fs::path at = p; !at.empty(); at = at.parent_path()) {
    struct stat st {};
    if (::stat(at.c_str(), &st) != 0) return false;
    const bool ok = st.st_uid == uid ? (st.st_mode & S_IXUSR) != 0
                    : st.st_gid == gid ? (st.st_mode & S_IXGRP) != 0
                                       : (st.st_mode & S_IXOTH) != 0;
    if (!ok) return false;
    if (at == at.root_path()) break;
  }
  return true;
}

std::string random_password() {
  std::random_device rd;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string pw;
  for (int i = 0; i < 4; ++i) {
    std::uint32_t word = rd();
    for (int j = 0; j < 8; ++j, word >>= 4) pw.push_back(kHex[word & 0xF]);
  }
  return pw;
}

std::string tail_of(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > max_bytes ? text.substr(text.size() - max_bytes) : text;
}

}  // namespace

std::string EmbeddedPostgres::find_bindir() {
  if (const char* env = std::getenv("LOCKLAB_PG_BINDIR"); env != nullptr && *env != '\0') {
    if (server_binaries_in(env)) return env;
    throw Error(Error::Kind::kNotInstalled,
                std::string("EmbeddedPostgres: LOCKLAB_PG_BINDIR=") + env + " holds no initdb and postgres");
  }
  // Debian installs each major version side by side; take the newest.
  std::vector<std::pair<int, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string version = entry.path().filename().string();
    const std::string bin = entry.path().string() + "/bin";
    if (!version.empty() && std::all_of(version.begin(), version.end(), ::isdigit) && server_binaries_in(bin)) {
      found.emplace_back(std::atoi(version.c_str()), bin);
    }
  }
  if (!found.empty()) return std::max_element(found.begin(), found.end())->second;
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::stringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      if (!dir.empty() && server_binaries_in(dir)) return dir;
    }
  }
  throw Error(Error::Kind::kNotInstalled,
              "EmbeddedPostgres: PostgreSQL server binaries (initdb, postgres) not found in "
              "/usr/lib/postgresql/<version>/bin or on PATH (install Debian's package postgresql: ./lab setup; or "
              "set LOCKLAB_PG_BINDIR)");
}

EmbeddedPostgres::EmbeddedPostgres() : EmbeddedPostgres(Options{}) {}

EmbeddedPostgres::EmbeddedPostgres(Options options) : options_(std::move(options)) {
  bindir_ = options_.bindir.empty() ? find_bindir() : options_.bindir;
  if (!server_binaries_in(bindir_)) {
    throw Error(Error::Kind::kNotInstalled,
                "EmbeddedPostgres: " + bindir_ + " holds no initdb and postgres (install Debian's package postgresql)");
  }
  if (::geteuid() == 0) {
    // PostgreSQL refuses to run as root ("root execution of the PostgreSQL
    // server is not permitted"): hand the cluster to an unprivileged user.
    for (const char* name : {"postgres", "nobody"}) {
      if (const passwd* pw = ::getpwnam(name); pw != nullptr && pw->pw_uid != 0) {
        run_as_ = name;
        uid_ = pw->pw_uid;
        gid_ = pw->pw_gid;
        drop_privileges_ = true;
        break;
      }
    }
    if (!drop_privileges_) {
      throw Error(Error::Kind::kStart, "EmbeddedPostgres: running as root and neither the user postgres nor nobody "
                                       "exists to run the server as");
    }
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  // Root's $TMPDIR may be closed to the server's user (under /root, say):
  // then /tmp, which every user may enter.
  if (drop_privileges_ && !searchable_by(base, uid_, gid_)) base = "/tmp";
  std::string pattern = base + "/locklab-pg-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw Error(Error::Kind::kStart, "EmbeddedPostgres: mkdtemp(" + pattern + "): " + std::strerror(errno));
  }
  dir_ = pattern;
  auto give_up = [&](const std::string& why) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    dir_.clear();
    throw Error(Error::Kind::kStart, "EmbeddedPostgres: " + why);
  };
  password_ = random_password();
  const std::string pwfile = dir_ + "/superuser-password";
  {
    std::ofstream out(pwfile);
    out << password_ << "\n";
    if (!out) give_up("cannot write " + pwfile);
  }
  if (drop_privileges_ && (::chown(dir_.c_str(), uid_, gid_) != 0 || ::chown(pwfile.c_str(), uid_, gid_) != 0)) {
    give_up("chown " + dir_ + " to " + run_as_ + ": " + std::strerror(errno));
  }
  const std::string initdb_log = dir_ + "/initdb.log";
  const pid_t initdb = spawn({bindir_ + "/initdb", "-D", dir_ + "/data", "-U", user_, "--pwfile=" + pwfile,
                              "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C",
                              "--no-sync", "--no-instructions"},
                             initdb_log);
  if (initdb < 0) give_up("cannot start initdb: " + std::string(std::strerror(errno)));
  const int rc = wait_process(initdb, options_.start_timeout);  // distributed/child_process.hpp
  ::unlink(pwfile.c_str());
  if (rc != 0) {
    give_up("initdb failed (status " + std::to_string(rc) + (run_as_.empty() ? "" : ", as user " + run_as_) +
            "); its log:\n" + tail_of(initdb_log, 2'000));
  }
  std::string why;
  for (int attempt = 0; attempt < 5; ++attempt) {
    int port = 0;
    try {
      port = free_loopback_port();
    } catch (const Error& e) {
      give_up(e.what());
    }
    if (launch(port, why)) return;
  }
  give_up("the server did not start: " + why);
}

EmbeddedPostgres::~EmbeddedPostgres() {
  stop();
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

std::string EmbeddedPostgres::url_for(const std::string& user, const std::string& password) const {
  return "postgresql://" + user + ":" + password + "@" + host_ + ":" + std::to_string(port_) + "/" + database_;
}

pid_t EmbeddedPostgres::spawn(const std::vector<std::string>& args, const std::string& log) const {
  // Everything the child needs is prepared before fork: after fork in a
  // multi-threaded parent only async-signal-safe calls are allowed.
  std::vector<std::string> arg_store = args;
  std::vector<char*> argv;
  for (auto& a : arg_store) argv.push_back(a.data());
  argv.push_back(nullptr);
  // A small fixed environment: the server's behaviour must not depend on
  // the caller's locale (./lab runs with none) or PG* variables.
  std::vector<std::string> env_store = {"PATH=/usr/bin:/bin", "LC_ALL=C", "HOME=" + dir_};
  std::vector<char*> envp;
  for (auto& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);
  const bool drop = drop_privileges_;
  const uid_t uid = uid_;
  const gid_t gid = gid_;
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid != 0) return pid;  // the parent, or -1
  const int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, 0);
  const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (out >= 0) {
    ::dup2(out, 1);
    ::dup2(out, 2);
  }
  ::setpgid(0, 0);  // its own group: a Ctrl-C to the test runner's group is handled by the parent
  if (drop && (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0)) {
    static constexpr char kMessage[] = "EmbeddedPostgres: cannot drop privileges\n";
    (void)!::write(2, kMessage, sizeof kMessage - 1);
    ::_exit(126);
  }
  // After setuid: a change of credentials clears the parent-death signal.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the parent died already
  if (::chdir(dir_.c_str()) != 0) ::_exit(125);
  ::execve(argv[0], argv.data(), envp.data());
  ::_exit(127);
}

bool EmbeddedPostgres::launch(int port, std::string& why) {
  const std::string log = dir_ + "/postgres.log";
  std::vector<std::string> args = {bindir_ + "/postgres", "-D", dir_ + "/data", "-p", std::to_string(port),
                                   "-c", "listen_addresses=" + host_,
                                   "-c", "unix_socket_directories=" + dir_,
                                   "-c", "fsync=off",
                                   "-c", "synchronous_commit=off",
                                   "-c", "full_page_writes=off",
                                   "-c", "shared_buffers=16MB",
                                   "-c", "max_connections=" + std::to_string(options_.max_connections),
                                   "-c", "logging_collector=off"};
  for (const auto& s : options_.settings) {
    args.push_back("-c");
    args.push_back(s);
  }
  const pid_t pid = spawn(args, log);
  if (pid < 0) {
    why = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  pid_ = pid;
  port_ = port;
  Connection::Options probe = Connection::Options::from_url(url());
  probe.connect_timeout = std::chrono::seconds(2);
  probe.statement_timeout = std::chrono::milliseconds(2'000);
  const std::string ours = fs::weakly_canonical(dir_ + "/data").string();
  std::string foreign;  // the data directory of a server on the port that is not ours
  const auto deadline = Clock::now() + options_.start_timeout;
  while (Clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      why = "postgres exited at start (port " + std::to_string(port) + ")";
      if (!foreign.empty()) why += "; the port is served by another server (data directory " + foreign + "), left alone";
      why += "; log:\n" + log_tail();
      return false;
    }
    try {
      Connection c(probe);
      const std::string serving = c.exec("SHOW data_directory").text(0, 0);
      if (fs::weakly_canonical(serving).string() == ours) return true;
      foreign = serving;
    } catch (const Error&) {
      // not accepting connections yet ("the database system is starting up")
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  why = "no answer within " + std::to_string(options_.start_timeout.count()) + " ms; log:\n" + log_tail();
  stop();
  return false;
}

void EmbeddedPostgres::stop() noexcept {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGQUIT);  // immediate shutdown: the postmaster stops every backend, then exits
  // 5 s: the postmaster itself SIGKILLs backends that ignore its SIGQUIT
  // after 5 s too, so this waits out its own escalation only in the worst case.
  const auto deadline = Clock::now() + std::chrono::milliseconds(5'000);
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) break;
    if (Clock::now() >= deadline) {
      // Backends left over exit by themselves once the postmaster is gone
      // (see the header), so the postmaster is the one to kill.
      ::kill(pid_, SIGKILL);
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  pid_ = -1;
}

std::string EmbeddedPostgres::log_tail(std::size_t max_bytes) const { return tail_of(dir_ + "/postgres.log", max_bytes); }

// ------------------------------------------------------------ ServerFromEnvOrEmbedded

ServerFromEnvOrEmbedded::ServerFromEnvOrEmbedded() {
  if (auto env = Connection::Options::from_env()) {
    options_ = *env;
    return;
  }
  server_ = std::make_unique<EmbeddedPostgres>();
  options_ = server_->connection_options();
}

std::string ServerFromEnvOrEmbedded::describe() const {
  return server_ ? "embedded" : Connection::Options::redacted_url(options_.url);
}

}  // namespace locklab::pg
