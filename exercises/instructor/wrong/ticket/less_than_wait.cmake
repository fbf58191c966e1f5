# WRONG VERSION (grader fixture): the solution waiting with `serving_ < ticket` instead of `!=`: at the wrap
# of the counters ticket 0 counts as served while 2^32 - 2 holds; MyTicketLockTest.WaitersStayOut* fails.
# Built from the solution, instructor/ticket/my_ticket_lock.hpp, by replacing
# fixture_find with fixture_replace (exercises/CMakeLists.txt), so the fixture
# is exactly its one bug.
# The check written for this hole: ci_check.sh runs it alone and requires it to FAIL (a failed
# assertion, exit 1), besides the whole test executable failing.
set(fixture_caught_by "MyTicketLockTest.WaitersStayOut*")
set(fixture_find [==[
    while (serving_.load(std::memory_order_acquire) != ticket) {
]==])
set(fixture_replace [==[
    while (serving_.load(std::memory_order_acquire) < ticket) {  // WRONG (the fixture's bug): < is not != at the wrap
]==])
