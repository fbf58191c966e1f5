// my_futex_mutex_bench.cpp — your lock on the `locks` suite's workloads, as
// `my.FutexMutex` (exercises/check.sh futex_mutex --bench writes
// results/exercise_futex_mutex.json; ./lab plot draws it beside
// FutexMutex(park-only), FutexMutex(3-state) and std::mutex).
#include <my_futex_mutex.hpp>

#include "exercises/support/local_lock_bench.hpp"

int main(int argc, char** argv) {
  return locklab::exercises::local_lock_bench_main<locklab::exercises::MyFutexMutex>(argc, argv, "my.FutexMutex");
}
