// my_reentrant_lock_bench.cpp — your wrapper around std::mutex on the `locks`
// suite's workloads, as `my.Reentrant(std::mutex)`: what does ownership
// bookkeeping cost on top of the mutex it wraps? (exercises/check.sh
// reentrant --bench writes results/exercise_reentrant.json; ./lab plot draws
// it beside std::mutex and ReentrantLock.)
#include <my_reentrant_lock.hpp>

#include <mutex>

#include "exercises/support/local_lock_bench.hpp"

int main(int argc, char** argv) {
  using Lock = locklab::exercises::MyReentrantLock<std::mutex>;
  return locklab::exercises::local_lock_bench_main<Lock>(argc, argv, "my.Reentrant(mutex)");
}
