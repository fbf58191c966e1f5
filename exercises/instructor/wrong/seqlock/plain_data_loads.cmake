# WRONG VERSION (grader fixture): the solution with plain loads of the four words in load() (data_.a
# instead of std::atomic_ref(data_.a).load(relaxed)); the writer's stores stay atomic. A reader runs
# concurrently with a writer by design, so a plain load beside an atomic store is a data race: undefined
# behaviour in C++, however reliably validate() rejects the torn reads afterwards.
# The Release checks PASS anyway on x86 (a plain load of an aligned word is the same mov, and the fences
# keep the compiler from moving it past the sequence loads); the bug is in the C++ memory model, not in the
# code this compiler emits here. The grade's ThreadSanitizer level (check.sh level 3) checks the model and
# reports a data race between load() and store() in MySeqLockTest.ReadsThatValidateAreNeverTorn:
# ci_check.sh requires that (fixture_caught_by "tsan").
# Built from the solution, instructor/seqlock/my_seqlock.hpp, by one rule applied to every load of a word
# (exercises/CMakeLists.txt), so the fixture is exactly its one bug.
set(fixture_regex_find "std::atomic_ref\\((data_\\.[a-d])\\)\\.load\\(std::memory_order_relaxed\\)")
set(fixture_regex_replace "\\1")
set(fixture_caught_by "tsan")
