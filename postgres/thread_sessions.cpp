#include "postgres/thread_sessions.hpp"

#include "postgres/session_lock_support.hpp"

namespace locklab::pg {

ThreadSessions::Session& ThreadSessions::mine() {
  const auto me = std::this_thread::get_id();
  std::unique_ptr<Connection> ready;
  Session* s = nullptr;
  {
    std::lock_guard lk(mu_);
    auto it = bound_.find(me);
    if (it != bound_.end() && it->second->connection) return *it->second;
    if (it != bound_.end()) s = it->second.get();
    if (!idle_.empty()) {
      ready = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  // Connect outside the mutex: a connect takes milliseconds, and other
  // threads' lookups must not wait for it.
  if (!ready) ready = std::make_unique<Connection>(options_);
  std::lock_guard lk(mu_);
  if (s == nullptr) {
    auto [it, inserted] = bound_.emplace(me, std::make_unique<Session>());
    s = it->second.get();
  }
  s->connection = std::move(ready);
  s->held = false;
  s->lock_timeout_ms = -1;
  return *s;
}

ThreadSessions::Session* ThreadSessions::mine_if_any() {
  std::lock_guard lk(mu_);
  auto it = bound_.find(std::this_thread::get_id());
  return it == bound_.end() ? nullptr : it->second.get();
}

void ThreadSessions::open(int n) {
  for (int i = 0; i < n; ++i) {
    auto c = std::make_unique<Connection>(options_);
    std::lock_guard lk(mu_);
    idle_.push_back(std::move(c));
  }
}

Result ThreadSessions::exec(Session& s, std::string_view sql) {
  round_trips_.fetch_add(1, std::memory_order_relaxed);
  try {
    return s.connection->exec(sql);
  } catch (const Error& e) {
    if (detail::session_ended(e)) drop(s);
    throw;
  }
}

void ThreadSessions::drop(Session& s) noexcept {
  s.connection.reset();
  s.held = false;
  s.lock_timeout_ms = -1;
}

}  // namespace locklab::pg
