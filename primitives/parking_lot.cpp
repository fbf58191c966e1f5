// Slow paths of Parker, and the whole ParkingLot: buckets, their locks and
// queues, parking, unparking, timeouts. The design, its guarantees and the
// memory-order argument are in parking_lot.hpp.
#include "primitives/parking_lot.hpp"

#include <thread>

#include "primitives/cache_line.hpp"
#include "primitives/cpu_relax.hpp"
#include "primitives/futex.hpp"

namespace locklab {

// --- Parker -----------------------------------------------------------------

// park() found no permit and set the word to kParked. Sleep while it stays
// kParked; only unpark() changes it (to kPermit), so a wake-up that finds
// kParked is spurious (or a signal) and we sleep again.
void Parker::park_slow() noexcept {
  for (;;) {
    futex_wait(word_, kParked);
    std::uint32_t expected = kPermit;
    // Acquire: see park(). Relaxed on failure: nothing was read that matters.
    if (word_.compare_exchange_strong(expected, kEmpty, std::memory_order_acquire, std::memory_order_relaxed)) {
      return;
    }
  }
}

bool Parker::park_until_slow(std::chrono::steady_clock::time_point deadline) noexcept {
  for (;;) {
    const FutexWaitResult r = futex_wait_until(word_, kParked, deadline);
    std::uint32_t expected = kPermit;
    if (word_.compare_exchange_strong(expected, kEmpty, std::memory_order_acquire, std::memory_order_relaxed)) {
      return true;
    }
    if (r == FutexWaitResult::kTimedOut) {
      // Withdraw the announcement. An unpark() between the wait and this
      // exchange left its permit here: consume it rather than lose it (and
      // acquire, as for any consumed permit).
      return word_.exchange(kEmpty, std::memory_order_acquire) == kPermit;
    }
  }
}

// unpark() read kParked: the owner is asleep or about to call futex_wait
// (which then returns at once, the word being kPermit). The owner may
// return, and its Parker die, before this call; the kernel uses the address
// only as a key, so a late wake lands as a spurious wake-up on whatever
// futex lives there now (every futex wait in locklab re-checks its word;
// Semaphore's "one deliberate, benign race" is the same).
void Parker::wake() noexcept { futex_wake_one(word_); }

namespace {
constinit thread_local Parker this_threads_parker;
}  // namespace

Parker& this_thread_parker() noexcept { return this_threads_parker; }

// --- the lot ----------------------------------------------------------------

namespace parking_lot {
namespace {

// One per thread (a constinit thread_local: no allocation, no TLS guard, no
// destructor). While the thread is parked it is linked into one bucket's
// queue; a thread cannot exit while parked, so a queued node is always alive.
struct ThreadNode {
  Parker parker;  // the lot's own; only an unparker that dequeued us unparks it
  // Guarded by the bucket lock of bucket_index(address) while queued:
  const void* address = nullptr;  // non-null exactly while queued
  ThreadNode* next = nullptr;     // queue link; unpark_all's wake list after
  // Written by the unparker under the bucket lock, before parker.unpark();
  // read by this thread after consuming that permit.
  std::intptr_t token = 0;
};

constinit thread_local ThreadNode this_threads_node;

// A bucket: its lock, its FIFO of threads parked on any address that hashes
// here, and its fairness clock. One cache line each, so that a busy bucket
// does not slow its neighbours down.
struct alignas(kCacheLineSize) Bucket {
  std::atomic<std::uint32_t> lock{0};
  // Guarded by `lock`:
  ThreadNode* head = nullptr;
  ThreadNode* tail = nullptr;
  std::int64_t next_fair_ns = 0;  // steady_clock ns; see "Time to be fair"
};

constinit Bucket buckets[kBucketCount];

// Polls of a held bucket lock before each yield (see "The bucket lock").
constexpr int kSpinPolls = 64;

class BucketGuard {
 public:
  explicit BucketGuard(Bucket& b) noexcept : b_(b) {
    // Test-and-test-and-set: poll with plain loads (relaxed: they only say
    // when to retry the acquiring exchange), exchange when it looks free.
    while (b_.lock.exchange(1, std::memory_order_acquire) != 0) {
      for (int polls = 0; b_.lock.load(std::memory_order_relaxed) != 0; ++polls) {
        if (polls < kSpinPolls) {
          cpu_relax();
        } else {
          std::this_thread::yield();  // the holder may have been preempted
        }
      }
    }
  }
  ~BucketGuard() { b_.lock.store(0, std::memory_order_release); }
  BucketGuard(const BucketGuard&) = delete;
  BucketGuard& operator=(const BucketGuard&) = delete;

 private:
  Bucket& b_;
};

Bucket& bucket_for(const void* address) noexcept { return buckets[bucket_index(address)]; }

// Unlinks `n`, whose predecessor in b's queue is `prev` (null: n is the
// head). Bucket lock held. Leaves n->next as it was (callers still read it).
void unlink_locked(Bucket& b, ThreadNode* prev, ThreadNode* n) noexcept {
  (prev != nullptr ? prev->next : b.head) = n->next;
  if (b.tail == n) b.tail = prev;
}

std::int64_t now_ns() noexcept { return Clock::now().time_since_epoch().count(); }

}  // namespace

ParkResult detail::park_if(const void* address, locklab::detail::FunctionRef<bool()> validate,
                           locklab::detail::FunctionRef<void()> before_sleep,
                           std::optional<Clock::time_point> deadline) noexcept {
  assert(address != nullptr && "parking_lot::park_if: null address");
  ThreadNode& me = this_threads_node;
  assert(me.address == nullptr && "parking_lot::park_if: already parked (called from before_sleep?)");
  Bucket& b = bucket_for(address);
  {
    BucketGuard g(b);
    if (!validate()) return {ParkStatus::kInvalid, 0};
    me.address = address;
    me.next = nullptr;
    me.token = 0;
    (b.tail != nullptr ? b.tail->next : b.head) = &me;
    b.tail = &me;
  }
  before_sleep();

  // The token was written before the unpark() whose permit we consume, so
  // reading it after the park is ordered (see "Memory orders").
  if (!deadline.has_value()) {
    me.parker.park();
    return {ParkStatus::kUnparked, me.token};
  }
  if (me.parker.park_until(*deadline)) return {ParkStatus::kUnparked, me.token};
  // The deadline passed with no permit. Leave the queue, unless an unparker
  // has already taken us out of it: then its unpark() is on its way (it
  // runs right after that unparker drops the bucket lock), and we must wait
  // for it and report the wake-up, or the unparker's did_unpark would be a
  // lie and its token lost.
  {
    BucketGuard g(b);
    if (me.address != nullptr) {
      ThreadNode* prev = nullptr;
      for (ThreadNode* n = b.head; n != &me; n = n->next) prev = n;
      unlink_locked(b, prev, &me);
      me.address = nullptr;
      me.next = nullptr;
      return {ParkStatus::kTimedOut, 0};
    }
  }
  me.parker.park();  // no deadline: the permit is imminent
  return {ParkStatus::kUnparked, me.token};
}

UnparkResult detail::unpark_one(const void* address,
                                locklab::detail::FunctionRef<std::intptr_t(UnparkResult)> callback) noexcept {
  assert(address != nullptr && "parking_lot::unpark_one: null address");
  Bucket& b = bucket_for(address);
  ThreadNode* woken = nullptr;
  UnparkResult result;
  {
    BucketGuard g(b);
    ThreadNode* prev = nullptr;
    ThreadNode* n = b.head;
    while (n != nullptr && n->address != address) {
      prev = n;
      n = n->next;
    }
    if (n != nullptr) {
      unlink_locked(b, prev, n);
      result.did_unpark = true;
      // Exact, not conservative: the rest of this address's FIFO can only be
      // behind n, so scan n's successors for another thread on `address`.
      for (const ThreadNode* s = n->next; s != nullptr; s = s->next) {
        if (s->address == address) {
          result.may_have_more_threads = true;
          break;
        }
      }
      // A clock read only when there is someone to be fair to.
      const std::int64_t now = now_ns();
      if (now >= b.next_fair_ns) {
        result.time_to_be_fair = true;
        b.next_fair_ns = now + std::chrono::nanoseconds(kFairInterval).count();
      }
      woken = n;
    }
    const std::intptr_t token = callback(result);
    if (woken != nullptr) {
      woken->token = token;
      woken->next = nullptr;
      woken->address = nullptr;  // dequeued: a timed-out owner now waits for us
    }
  }
  // After the bucket lock: the woken thread does not run into it. From this
  // call on the node may be reused by its thread, so touch nothing after.
  if (woken != nullptr) woken->parker.unpark();
  return result;
}

UnparkResult unpark_one(const void* address) noexcept {
  return detail::unpark_one(address, [](UnparkResult) -> std::intptr_t { return 0; });
}

std::size_t unpark_all(const void* address) noexcept {
  assert(address != nullptr && "parking_lot::unpark_all: null address");
  Bucket& b = bucket_for(address);
  ThreadNode* wake_head = nullptr;
  ThreadNode* wake_tail = nullptr;
  std::size_t count = 0;
  {
    BucketGuard g(b);
    ThreadNode* prev = nullptr;
    ThreadNode* n = b.head;
    while (n != nullptr) {
      ThreadNode* const next = n->next;
      if (n->address == address) {
        unlink_locked(b, prev, n);
        n->address = nullptr;
        n->token = 0;
        // Reuse the queue link for the wake list, in queue order.
        n->next = nullptr;
        (wake_tail != nullptr ? wake_tail->next : wake_head) = n;
        wake_tail = n;
        ++count;
      } else {
        prev = n;
      }
      n = next;
    }
  }
  // Read each link before the unpark: once woken, a thread may park again
  // and rewrite its node.
  for (ThreadNode* n = wake_head; n != nullptr;) {
    ThreadNode* const next = n->next;
    n->parker.unpark();
    n = next;
  }
  return count;
}

}  // namespace parking_lot
}  // namespace locklab
