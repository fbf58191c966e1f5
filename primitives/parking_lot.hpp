// parking_lot.hpp — the parking substrate every blocking primitive can sit
// on: a per-thread Parker with a permit (java.util.concurrent.locks.
// LockSupport's park/unpark, HotSpot's Parker), and an address-keyed
// ParkingLot (WebKit's WTF::ParkingLot, Rust's parking_lot_core) that queues
// threads on behalf of any word in memory.
//
// The problem
// -----------
// Every parking primitive in this folder runs its own futex protocol on its
// own lock word: FutexMutex sleeps in futex_wait(state_, 2). The kernel
// puts a thread to sleep only while the word still holds the value it
// expects, so a holder that keeps locking and unlocking the word makes the
// waiter's futex_wait return at once; the waiter then re-arms the word
// (writes 2 again), and the next release sees 2 and pays a futex_wake for a
// thread that never slept. The reference run measured exactly that churn
// (results/reference/amd-epyc-2core-2026-11-30/README.md: wakes_per_acquire
// 0.15-0.36 at cs_ns:200 with parks_per_acquire ~0), and counting the
// sleepers did not remove it (FutexMutex, "Counting sleepers"). Each new
// primitive would also need its own queue (Semaphore keeps one) and its own
// lost-wake-up argument.
//
// The idea
// --------
// Sleep on a word that only a wake-up changes. Each thread owns a Parker (a
// 32-bit futex word with a permit); the lot keeps, for any address, a FIFO
// queue of the threads parked "on" it. The primitive's own word keeps just a
// "has parked" bit, set by a thread before it parks and cleared by the
// releaser when the lot says the last parked thread is leaving. Lock and
// unlock traffic on the word no longer touches any sleeper's futex word, so
// a parked waiter stays asleep until it is unparked, as a parked Java thread
// does.
//
// Why keyed by address, not a queue per synchronizer (AQS)
// --------------------------------------------------------
// AQS gives every synchronizer its own intrusive wait queue (head, tail,
// state); Semaphore here does the same with a spin-locked list. We key by
// address instead, as WebKit does, for three reasons:
//   - size: a lock built on the lot needs one byte (held + parked bits); the
//     queue, its lock and the fairness clock live in the lot, shared by all
//     primitives, and cost nothing for the many locks that are never
//     contended. A queue per synchronizer costs its head, tail and lock in
//     every instance (Semaphore: two cache lines before its statistics).
//   - one implementation: FIFO order, timeouts, cancellation and the
//     lost-wake-up argument are written and tested once, here.
//   - validate under the bucket lock: park_if() checks the caller's
//     condition and enqueues the caller in one critical section, and
//     unpark_one() dequeues and runs the caller's callback in the same kind
//     of critical section. That atomicity is what a futex's compare gives,
//     but for any predicate on any number of words of any size, and it is
//     what makes an exact "has parked" bit possible (see "What it guarantees").
// The cost: unrelated addresses that hash to the same bucket share its lock
// and queue (a longer scan), and a thread can be parked on one address at a
// time (it is asleep, so that is no limit).
//
// What it guarantees
// ------------------
// - FIFO per address: unpark_one() wakes the thread that has been parked on
//   the address longest; unpark_all() wakes them oldest first.
// - No lost wake-up: park_if() enqueues only if validate() held under the
//   bucket lock, and unpark_one() dequeues and runs its callback under the
//   same lock. Take a lock whose releaser, finding "parked" set, calls
//   unpark_one() and rewrites the word in the callback, while a waiter that
//   set "parked" calls park_if() validating "held + parked": if the
//   unparker's critical section comes first, it finds nobody, its callback
//   releases the word, and the waiter's validate() (later, same lock) sees
//   that and returns kInvalid, so the waiter retries; if the waiter's comes
//   first, the unparker finds it queued and dequeues it.
//   The Parker's permit covers the rest, the window between leaving the
//   bucket lock and falling asleep: an unpark that comes first is kept.
// - Exact may_have_more_threads: computed under the bucket lock by scanning
//   the bucket's queue for another thread on the same address, so a callback
//   that clears the "has parked" bit when it is false races with no parker
//   (a new parker's validate runs under the same bucket lock, after the
//   callback, and sees the bit clear). It is exact about threads *queued*;
//   a thread that timed out leaves the bit set, and the next unpark_one()
//   finds nobody (did_unpark false, may_have_more_threads false), so its
//   callback clears the bit.
// - One wake per dequeue: a thread dequeued by an unparker returns kUnparked
//   with that unparker's token, exactly once, even if its deadline passed
//   meanwhile (it then waits for the imminent unpark instead of reporting a
//   timeout). A thread that times out removes itself under the bucket lock,
//   so no unparker can count it afterwards: did_unpark is true exactly when
//   some park_if() returns kUnparked because of it.
//
// What it costs
// -------------
// Nothing on a primitive's fast path: the lot is touched only when a thread
// parks or a release finds the "has parked" bit set. A park: one bucket lock
// (two if it times out), validate(), an O(1) append, one futex_wait on the
// thread's own word. An unpark: one bucket lock, a scan of the bucket's
// queue (every thread parked on any address of that bucket; with 256
// buckets and up to ~128 parked threads, usually just the address's own),
// the callback, one clock read (only if a thread was found), one exchange
// and one futex_wake on the woken thread's word (skipped if it has not gone
// to sleep yet). So one bucket lock round trip plus one futex system call
// per park/unpark pair, the price of any parking lock. Memory: 32 KiB of
// buckets for the process, and per thread one ~32-byte node plus one Parker
// (static thread_locals: no allocation, ever).
//
// How a lock uses it
// ------------------
// A one-byte lock, WebKit's WTF::Lock without the spinning (the test file's
// ToyMutex is this, complete and tested):
//   lock:   CAS 0 -> held; if that fails, loop: take the word if it is free;
//           else set "parked" and park_if(&word, validate: word is still
//           held + parked); a token "handed off" means we own it.
//   unlock: CAS held -> 0; if that fails ("parked" is set), unpark_one(&word,
//           callback: if time_to_be_fair and a thread was found, leave the
//           word held (plus "parked" if may_have_more_threads) and return
//           "handed off"; else store "parked" if may_have_more_threads, 0
//           otherwise).
// Fast paths never touch the lot; only a release that finds "parked" does,
// and "parked" is cleared by the release that wakes the last parked thread.
//
// Time to be fair
// ---------------
// unpark_one() reports time_to_be_fair when it dequeues a thread and this
// bucket has not reported it for kFairInterval (1 ms); it then schedules the
// next report 1 ms later, whether or not the caller acts on it (the lot
// cannot know). A lock uses it to hand itself directly to the woken thread
// (token, and the held bit left set) instead of letting running threads
// barge ahead, which bounds how long a parked thread can be overtaken. The
// interval: a hand-off idles the lock for one wake-to-run latency, measured
// at 2.6 us median and 24 us p99 (physical_limits' FutexWakeToRun, medians
// of five runs on the reference 2-core EPYC), so one hand-off per ms costs
// 0.3% of the lock's time typically and 2.4% at the p99, while a waiter
// behind k others in its address's queue is handed the lock within about
// (k + 1) ms of contention. 100 us would cost up to a quarter of the lock
// at the p99; 10 ms approaches a scheduler time slice, the wait that
// unfairness is supposed to stay well below. FutexMutex's periodic
// hand-off and QueuedSynchronizer's starvation mode use the same 1 ms.
// Per bucket, not per address (as WebKit and Rust's parking_lot): a
// per-address clock would need a record that outlives the address's queue,
// and the lot keeps nothing for an address with no parked thread (that is
// what keeps it allocation-free). The cost: two contended addresses in one
// bucket share one fair turn per ms, and in a strict alternation one of
// them could take every turn. Fairness is pacing here, not correctness; a
// lock that needs a hard bound must count waits itself. The clock starts at
// 0, so the first unpark a bucket ever sees is fair.
//
// The bucket lock: a test-and-test-and-set word that yields
// ---------------------------------------------------------
// Held for a few dozen instructions (a list walk, validate or callback, a
// pointer move) and never across a system call, so a waiter nearly always
// finds it free within a few polls; after 64 polls (~1.3 us at 20 ns a
// `pause`) it yields, so a holder preempted on this 2-core machine gets the
// core back instead of being spun against for a time slice. A lock that
// parks would need a parking lot of its own (WebKit's WordLock keeps its own
// queue for that reason); std::mutex would do, but adds a call into libc
// and a futex protocol of its own for sections this short.
//
// Bucket count: 256, fixed
// ------------------------
// A power of two, indexed by the top 8 bits of a Fibonacci hash of the
// address (adjacent words and same-offset fields of adjacent objects land
// in different buckets). A collision only lengthens a scan under the bucket
// lock. 256 buckets keep the load below 0.5 up to the 128 waiters the
// benches use (WebKit and Rust grow their table to ~3 buckets per thread);
// a fixed table needs no rehash, so no thread ever locks two buckets and
// the code stays short. The cost: above a few hundred parked threads the
// scans grow linearly (each extra thread in a bucket is one pointer chase
// per unpark, under the bucket lock), and bucket locks start to be shared.
// 256 x 128-byte buckets (one per cache line, so that buckets do not
// false-share) = 32 KiB.
//
// Memory orders
// -------------
// - Everything the lot does to its queues happens under a bucket lock
//   (acquire exchange, release store), so queue links, the node's address
//   and token, and the fair clock are plain fields.
// - Parker: unpark() stores the permit with a release exchange; park()
//   consumes it with an acquire RMW (fetch_sub, compare-exchange or
//   exchange) that reads it. So everything before unpark() happens-before
//   everything after the park() that consumed its permit.
// - Hence, for unpark_one: the unparker's actions before the call, its
//   callback, and the token it returned all happen-before park_if()
//   returning kUnparked in the woken thread (callback -> bucket unlock ->
//   Parker::unpark's release exchange -> the woken thread's acquire). A lock
//   that hands itself off through the token needs nothing more.
// - validate() of a parker that ran after the callback sees everything the
//   callback wrote (the bucket lock), and the callback sees everything a
//   validate() that ran before it wrote.
// - The caller's own word needs no particular order for the lot's sake: the
//   bucket lock orders validate() and the callback. Its orders are the
//   caller's business (a lock still needs acquire/release on its fast path).
//
// What is invalid
// ---------------
// - validate() and the callback run with the bucket lock held: they must be
//   short, must not block, and must not call into the lot (the bucket lock
//   is not reentrant, and no lot call may hold two bucket locks).
//   before_sleep() runs after the thread is queued, without the bucket lock:
//   it may unpark (a condition variable releases its mutex there) but must
//   not park.
// - None of the three may throw: they run inside noexcept functions, and an
//   exception terminates the process (a throw under the bucket lock would
//   leave it locked).
// - A null address (nullptr marks a node that is not queued).
// - park_if() from a signal handler (the thread's node may be in use).
// - Parker: park() / park_until() from two threads at once on one Parker
//   (it has one sleeper's place); unpark() of a Parker that has been
//   destroyed (this_thread_parker() of a thread that has exited).
#pragma once

#include <atomic>
#include <cassert>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace locklab {

// A permit and a sleeping place for one thread: LockSupport's park/unpark.
// The permit is binary: unpark() makes it available (a second unpark before
// a park adds nothing), park() consumes it, sleeping until there is one. An
// unpark that comes before the park is therefore not lost.
//
// Unlike LockSupport.park, park() never returns spuriously: it returns only
// with a permit consumed. park_until() returns true if it consumed a permit,
// false if the deadline passed first (a permit that arrives between the
// timeout and the return is consumed, and it returns true).
//
// Cost: unpark() is one exchange, plus one futex_wake only if the owner is
// asleep (or about to be); park() with a permit waiting is one fetch_sub,
// otherwise one futex_wait. 4 bytes, no destructor.
class Parker {
 public:
  constexpr Parker() noexcept = default;
  Parker(const Parker&) = delete;
  Parker& operator=(const Parker&) = delete;

  // Consumes the permit, sleeping until one is available. Pre: no other
  // thread is parking on this Parker.
  void park() noexcept {
    // 1 -> 0 consumes a waiting permit; 0 -> kParked announces a sleeper
    // (0 - 1 wraps to 0xFFFFFFFF, the one value unpark() must wake).
    // Acquire: reading the permit synchronises with unpark()'s release.
    const std::uint32_t prev = word_.fetch_sub(1, std::memory_order_acquire);
    assert(prev != kParked && "Parker: two threads parked on one Parker");
    if (prev == kPermit) return;
    park_slow();
  }

  // Like park(), but gives up at `deadline` (steady clock). Returns whether
  // it consumed a permit. A deadline already past is one non-blocking try.
  bool park_until(std::chrono::steady_clock::time_point deadline) noexcept {
    const std::uint32_t prev = word_.fetch_sub(1, std::memory_order_acquire);
    assert(prev != kParked && "Parker: two threads parked on one Parker");
    if (prev == kPermit) return true;
    return park_until_slow(deadline);
  }

  // Makes the permit available and wakes the owner if it sleeps. Any
  // thread; any number of times (the permit stays one). Release: everything
  // before this call happens-before the return of the park that consumes it.
  void unpark() noexcept {
    if (word_.exchange(kPermit, std::memory_order_release) == kParked) wake();
  }

 private:
  static constexpr std::uint32_t kEmpty = 0;
  static constexpr std::uint32_t kPermit = 1;
  static constexpr std::uint32_t kParked = 0xFFFFFFFFu;  // kEmpty - 1

  void park_slow() noexcept;
  bool park_until_slow(std::chrono::steady_clock::time_point deadline) noexcept;
  void wake() noexcept;

  std::atomic<std::uint32_t> word_{kEmpty};
};

// This thread's own Parker, for LockSupport-style code: hand a reference to
// the thread that will unpark you. It lives as long as the thread. It is not
// the Parker the ParkingLot sleeps on (each thread's lot node has its own),
// so a stray unpark() of this one never cuts a lot park short, and the lot
// never consumes a permit meant for this one.
Parker& this_thread_parker() noexcept;

// What park_if() did.
enum class ParkStatus : std::uint8_t {
  kUnparked,  // an unpark_one()/unpark_all() on the address woke this thread
  kInvalid,   // validate() returned false: the thread never queued or slept
  kTimedOut,  // the deadline passed while queued; the thread left the queue
};

struct ParkResult {
  ParkStatus status = ParkStatus::kInvalid;
  // The token the unparking unpark_one()'s callback returned (0 from
  // unpark_all() and from unpark_one() without a callback); 0 unless
  // status == kUnparked.
  std::intptr_t token = 0;

  bool was_unparked() const noexcept { return status == ParkStatus::kUnparked; }
};

// What unpark_one() found, as its callback sees it (under the bucket lock)
// and as it returns it.
struct UnparkResult {
  bool did_unpark = false;             // a thread was dequeued and will be woken
  bool may_have_more_threads = false;  // exact: another thread is still queued
                                       // on this address (false if !did_unpark)
  bool time_to_be_fair = false;        // did_unpark, and this bucket's last fair
                                       // turn was >= kFairInterval ago
};

namespace detail {

// A non-owning, non-allocating reference to a callable: how the templates
// below hand their lambdas to the out-of-line slow paths. Valid only while
// the referenced callable lives (here: for the duration of one call).
template <class Signature>
class FunctionRef;

template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> && std::is_object_v<std::remove_reference_t<F>> &&
             std::is_invocable_r_v<R, F&, Args...>)
  FunctionRef(F&& f) noexcept  // implicit: it is only ever a parameter type
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, Args... args) -> R {
          return std::invoke(*static_cast<std::remove_reference_t<F>*>(object), std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace detail

namespace parking_lot {

using Clock = std::chrono::steady_clock;

inline constexpr unsigned kBucketBits = 8;
inline constexpr std::size_t kBucketCount = std::size_t{1} << kBucketBits;  // 256: see the essay
inline constexpr std::chrono::nanoseconds kFairInterval = std::chrono::milliseconds(1);

// The bucket an address queues in: the top kBucketBits of a Fibonacci hash
// (2^64 / golden ratio), which mixes every address bit into the index.
// Public so that tests can pick colliding addresses on purpose.
inline std::size_t bucket_index(const void* address) noexcept {
  static_assert(sizeof(std::uintptr_t) == 8, "the hash below assumes 64-bit addresses");
  return static_cast<std::size_t>((reinterpret_cast<std::uintptr_t>(address) * 0x9E3779B97F4A7C15ull) >>
                                  (64 - kBucketBits));
}

namespace detail {
ParkResult park_if(const void* address, locklab::detail::FunctionRef<bool()> validate,
                   locklab::detail::FunctionRef<void()> before_sleep,
                   std::optional<Clock::time_point> deadline) noexcept;
UnparkResult unpark_one(const void* address,
                        locklab::detail::FunctionRef<std::intptr_t(UnparkResult)> callback) noexcept;
}  // namespace detail

// Parks the calling thread on `address` if validate() says so.
// Under the address's bucket lock runs validate(); if it returns false,
// returns {kInvalid, 0} at once (the thread never queued). Otherwise queues
// the thread at the tail of the address's FIFO, releases the bucket lock,
// runs before_sleep() (queued, unlocked), and sleeps until an unpark on
// `address` dequeues it ({kUnparked, token}) or `deadline` passes while it
// is still queued ({kTimedOut, 0}; it has left the queue). A thread that an
// unparker dequeued just as its deadline passed returns kUnparked with the
// token, never kTimedOut. No deadline: sleeps until unparked. A deadline
// already past: validate(), and if it holds, queue, before_sleep(), and
// kTimedOut without sleeping (unless an unparker dequeued it meanwhile).
// Pre: address != nullptr; see "What is invalid" for the callables.
template <class Validate, class BeforeSleep>
  requires std::is_invocable_r_v<bool, Validate&> && std::is_invocable_v<BeforeSleep&>
ParkResult park_if(const void* address, Validate&& validate, BeforeSleep&& before_sleep,
                   std::optional<Clock::time_point> deadline = std::nullopt) noexcept {
  return detail::park_if(address, validate, before_sleep, deadline);
}

// Dequeues the thread parked longest on `address`, if any; then, still
// under the bucket lock, calls callback(result) with what it found (also
// when it found nobody) and hands the callback's return value to the woken
// thread as its token; then releases the bucket lock and wakes the thread.
// Returns the same result. The callback is where a lock updates its word:
// clear "has parked" when !may_have_more_threads, or hand itself off when
// time_to_be_fair.
template <class Callback>
  requires std::is_invocable_r_v<std::intptr_t, Callback&, UnparkResult>
UnparkResult unpark_one(const void* address, Callback&& callback) noexcept {
  return detail::unpark_one(address, callback);
}

// unpark_one() with no callback: the woken thread gets token 0.
UnparkResult unpark_one(const void* address) noexcept;

// Dequeues every thread parked on `address` and wakes them, oldest first,
// each with token 0. Returns how many it dequeued.
std::size_t unpark_all(const void* address) noexcept;

}  // namespace parking_lot
}  // namespace locklab
