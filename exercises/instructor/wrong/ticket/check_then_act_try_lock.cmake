# WRONG VERSION (grader fixture): the solution with a check-then-act try_lock (load both counters, then
# fetch_add next_ if equal, not a CAS): it enters beside a lock(); MyTicketLockTest.ALockThatArrives* fails.
# Built from the solution, instructor/ticket/my_ticket_lock.hpp, by replacing
# fixture_find with fixture_replace (exercises/CMakeLists.txt), so the fixture
# is exactly its one bug.
# The check written for this hole: ci_check.sh runs it alone and requires it to FAIL (a failed
# assertion, exit 1), besides the whole test executable failing.
set(fixture_caught_by "MyTicketLockTest.ALockThatArrives*")
set(fixture_find [==[
    std::uint32_t s = serving_.load(std::memory_order_acquire);
    return next_.compare_exchange_strong(s, s + 1, std::memory_order_relaxed, std::memory_order_relaxed);
]==])
set(fixture_replace [==[
    // WRONG (the fixture's bug): check, then act. Between the loads and the
    // fetch_add a lock() may take ticket n and enter; this try then takes n + 1
    // and enters too.
    const std::uint32_t s = serving_.load(std::memory_order_acquire);
    const std::uint32_t n = next_.load(std::memory_order_relaxed);
    if (s != n) return false;
    next_.fetch_add(1, std::memory_order_relaxed);
    return true;
]==])
