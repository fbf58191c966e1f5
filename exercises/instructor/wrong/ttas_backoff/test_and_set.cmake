# WRONG VERSION (grader fixture): the solution with lock() as a plain test-and-set loop, an exchange on
# every spin, no test and no backoff; MyBackoffLockTest.ContendedWaitersPollInsteadOfExchanging must fail.
# Built from the solution, instructor/ttas_backoff/my_backoff_lock.hpp, by replacing
# fixture_find with fixture_replace (exercises/CMakeLists.txt), so the fixture
# is exactly its one bug.
# The check written for this hole: ci_check.sh runs it alone and requires it to FAIL (a failed
# assertion, exit 1), besides the whole test executable failing.
set(fixture_caught_by "MyBackoffLockTest.ContendedWaitersPollInsteadOfExchanging")
set(fixture_find [==[
    if (!locked_.exchange(true, std::memory_order_acquire)) return;  // uncontended
    std::int64_t spins = 0;
    std::uint32_t limit = kMinBackoff;
    for (;;) {
      while (locked_.load(std::memory_order_relaxed)) {  // test
        cpu_relax();
        ++spins;
      }
      if (!locked_.exchange(true, std::memory_order_acquire)) break;  // test-and-set
      const std::uint32_t pauses = 1 + next_random() % limit;         // back off
      for (std::uint32_t i = 0; i < pauses; ++i) cpu_relax();
      spins += pauses;
      limit = std::min(limit * 2, kMaxBackoff);
    }
    stats_.record_contended_acquire(spins);
]==])
set(fixture_replace [==[
    // WRONG (the fixture's bug): test-and-set, an exchange on every spin.
    std::int64_t spins = 0;
    while (locked_.exchange(true, std::memory_order_acquire)) {
      cpu_relax();
      ++spins;
    }
    if (spins > 0) stats_.record_contended_acquire(spins);
]==])
