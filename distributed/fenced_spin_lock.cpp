#include "distributed/fenced_spin_lock.hpp"

#include <utility>

namespace locklab::redis {

namespace {

SpinLock::Options spin_options(const FencedSpinLock::Options& o) {
  SpinLock::Options s;
  s.lease = o.lease;
  s.retry_interval = o.retry_interval;
  s.jitter = o.jitter;
  s.fenced = true;
  return s;
}

}  // namespace

FencedSpinLock::FencedSpinLock(Client& client, std::string name) : FencedSpinLock(client, std::move(name), Options{}) {}

FencedSpinLock::FencedSpinLock(Client& client, std::string name, Options options)
    : lock_(client, std::move(name), spin_options(options)) {}

}  // namespace locklab::redis
