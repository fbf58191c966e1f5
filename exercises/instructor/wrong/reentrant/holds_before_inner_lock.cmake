# WRONG VERSION (grader fixture): the solution with lock() writing the hold count BEFORE the inner lock: a
# waiter overwrites the owner's count; MyReentrantLockTest.AWaiterChangesNothing* fails.
# Built from the solution, instructor/reentrant/my_reentrant_lock.hpp, by replacing
# fixture_find with fixture_replace (exercises/CMakeLists.txt), so the fixture
# is exactly its one bug.
# The check written for this hole: ci_check.sh runs it alone and requires it to FAIL (a failed
# assertion, exit 1), besides the whole test executable failing.
set(fixture_caught_by "MyReentrantLockTest.AWaiterChangesNothing*")
set(fixture_find [==[
    if (reenter()) return;
]==])
set(fixture_replace [==[
    if (reenter()) return;
    holds_ = 1;  // WRONG (the fixture's bug): written before this thread owns anything
]==])
