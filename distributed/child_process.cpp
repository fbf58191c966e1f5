#include "distributed/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

extern char** environ;

namespace locklab {

pid_t spawn_process(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env) {
  if (argv.empty()) return -1;
  std::vector<std::string> args = argv;  // posix_spawn wants char*, not const char*
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  // An inherited variable that extra_env sets again is left out: with two
  // entries of one name, C's getenv() reads the first but a shell keeps the
  // last, and the child must see one value whatever it is written in.
  std::vector<std::string> envs = extra_env;
  auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string inherited = *e;
    bool overridden = false;
    for (const auto& x : extra_env) overridden = overridden || name_of(x) == name_of(inherited);
    if (!overridden) envs.push_back(inherited);
  }
  std::vector<char*> envp;
  for (auto& e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  if (::posix_spawn(&pid, cargv[0], nullptr, nullptr, cargv.data(), envp.data()) != 0) return -1;
  return pid;
}

int wait_process(pid_t pid, std::chrono::milliseconds bound) {
  if (pid <= 0) return -1;
  const auto deadline = std::chrono::steady_clock::now() + bound;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

CapturedOutput run_capturing_output(const std::vector<std::string>& argv, std::chrono::milliseconds bound,
                                    std::size_t max_output) {
  CapturedOutput r;
  if (argv.empty()) {
    r.output = "nothing to run";
    return r;
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    r.output = "pipe failed";
    return r;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (auto& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    r.output = "cannot start " + argv[0];
    return r;
  }
  r.started = true;
  const auto deadline = std::chrono::steady_clock::now() + bound;
  char buf[4096];
  bool overstayed = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      overstayed = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      overstayed = ready == 0;
      break;
    }
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) {
      const std::size_t room = max_output - std::min(max_output, r.output.size());
      r.output.append(buf, std::min(room, static_cast<std::size_t>(n)));  // read on to EOF all the same
    } else if (n == 0 || errno != EINTR) {
      break;  // EOF: the tool (and whatever it started) closed its output
    }
  }
  ::close(fds[0]);
  if (overstayed) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exited = !overstayed && WIFEXITED(status);
  r.status = r.exited ? WEXITSTATUS(status) : -1;
  return r;
}

int ChildProcess::wait(std::chrono::milliseconds bound) {
  const int rc = wait_process(pid_, bound);
  pid_ = -1;  // reaped by wait_process, whatever it returned
  return rc;
}

void ChildProcess::kill() noexcept {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

}  // namespace locklab
