#include "distributed/child_process.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

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
