# WRONG VERSION (grader fixture): the solution clearing owner_ AFTER inner_.unlock(): it can erase the next
# owner; MyReentrantLockTest.TheNextOwnerStaysTheOwner* fails.
# Built from the solution, instructor/reentrant/my_reentrant_lock.hpp, by replacing
# fixture_find with fixture_replace (exercises/CMakeLists.txt), so the fixture
# is exactly its one bug.
# The check written for this hole: ci_check.sh runs it alone and requires it to FAIL (a failed
# assertion, exit 1), besides the whole test executable failing.
set(fixture_caught_by "MyReentrantLockTest.TheNextOwnerStaysTheOwner*")
set(fixture_find [==[
    owner_.store(std::thread::id(), std::memory_order_relaxed);  // before the inner unlock: see the essay
    inner_.unlock();
]==])
set(fixture_replace [==[
    inner_.unlock();
    owner_.store(std::thread::id(), std::memory_order_relaxed);  // WRONG (the fixture's bug): after the inner unlock
]==])
