# WRONG VERSION (grader fixture): the solution with every memory order relaxed. Nothing then orders one
# holder's critical section before the next one's: the next holder may read serving_'s new value without
# the writes made under the lock (no release store for it to read, no acquire load to read it with).
# The Release checks PASS anyway on x86, where every load is an acquire and every store a release in
# hardware; the bug is in the C++ memory model, not in the code this compiler emits here. The grade's
# ThreadSanitizer level (check.sh level 3) checks the model and reports a data race on the first variable
# written under the lock: ci_check.sh requires that (fixture_caught_by "tsan").
# Built from the solution, instructor/ticket/my_ticket_lock.hpp, by one rule applied to every
# memory order (exercises/CMakeLists.txt), so the fixture is exactly its one bug.
set(fixture_regex_find "std::memory_order_(acquire|release|acq_rel|seq_cst)")
set(fixture_regex_replace "std::memory_order_relaxed")
set(fixture_caught_by "tsan")
