#include "distributed/count_down_latch.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "distributed/lock_keys.hpp"
#include "distributed/publishing_script.hpp"

namespace locklab::redis {

namespace {

// KEYS[1] the count; ARGV[1] the channel. The count left; at zero the key
// is deleted first and the opening published with pcall (a refused
// PUBLISH must not leave the latch closed: a script is not rolled back).
// DECR fails on a foreign value before anything is written.
const PublishingScript kCountDown("count_down_latch.count_down", R"lua(
if redis.call('exists', KEYS[1]) == 0 then return 0 end
local n = redis.call('decr', KEYS[1])
if n > 0 then return n end
redis.call('del', KEYS[1])
redis.pcall(publish, ARGV[1], '0')
return 0
)lua");

std::int64_t count_of(const Reply& r) { return r.is_nil() ? 0 : r.as_decimal(); }

}  // namespace

CountDownLatch::CountDownLatch(Client& client, std::string name) : client_(client), name_(std::move(name)) {
  check_lock_name("CountDownLatch", name_);
  channel_ = derived_key(name_, "channel");
}

bool CountDownLatch::try_set_count(std::int64_t n) {
  if (n < 0) throw std::invalid_argument("CountDownLatch::try_set_count: negative count " + std::to_string(n));
  if (n == 0) return get_count() == 0;
  return !client_.command({"SET", name_, std::to_string(n), "NX"}).is_nil();
}

std::int64_t CountDownLatch::count_down() { return client_.eval(kCountDown.on(client_), {name_}, {channel_}).as_integer(); }

std::int64_t CountDownLatch::get_count() { return count_of(client_.command({"GET", name_})); }

bool CountDownLatch::await_for(std::chrono::milliseconds timeout) {
  if (timeout.count() < 0) {
    throw std::invalid_argument("CountDownLatch::await_for: negative timeout " + std::to_string(timeout.count()) +
                                " ms");
  }
  return wait_until(detail::deadline_after(timeout));
}

bool CountDownLatch::wait_until(detail::Clock::time_point deadline) {
  if (get_count() == 0) return true;
  if (deadline <= detail::Clock::now()) return false;
  std::optional<Subscriber::Subscription> sub = client_.subscriber().subscribe(channel_, deadline);
  if (get_count() == 0) return true;  // opened before the subscription was live
  if (!sub) return false;
  {
    std::lock_guard g(parked_mu_);
    parked_.push_back(&*sub);
  }
  struct Unpark {
    CountDownLatch& latch;
    Subscriber::Subscription* sub;
    ~Unpark() {
      std::lock_guard g(latch.parked_mu_);
      latch.parked_.erase(std::find(latch.parked_.begin(), latch.parked_.end(), sub));
    }
  } unpark{*this, &*sub};
  for (;;) {
    const Subscriber::Wake why = sub->wait_until(deadline);
    if (why == Subscriber::Wake::kReconnected && !sub->resubscribe(deadline)) return get_count() == 0;
    if (get_count() == 0) {
      if (why == Subscriber::Wake::kMessage) {
        // Woken by the one permit of a message: pass the opening on to the
        // others ("Waking everyone").
        {
          std::lock_guard g(parked_mu_);
          for (Subscriber::Subscription* s : parked_) {
            if (s != &*sub) s->poke();
          }
        }
        relays_.fetch_add(1, std::memory_order_relaxed);
        try {
          client_.command({client_.sharded_pub_sub() ? "SPUBLISH" : "PUBLISH", channel_, "0"});
        } catch (const Error&) {
          // The latch is open and this waiter passes; waiters of other
          // objects or processes then learn it by their own deadline.
        }
      }
      return true;
    }
    if (why == Subscriber::Wake::kTimeout || detail::Clock::now() >= deadline) return false;
  }
}

}  // namespace locklab::redis
