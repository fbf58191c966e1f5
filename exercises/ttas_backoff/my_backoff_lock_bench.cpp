// my_backoff_lock_bench.cpp — your lock on the `locks` suite's workloads, as
// `my.BackoffLock` (exercises/check.sh ttas_backoff --bench writes
// results/exercise_ttas_backoff.json; ./lab plot draws it beside BackoffLock).
#include <my_backoff_lock.hpp>

#include "exercises/support/local_lock_bench.hpp"

int main(int argc, char** argv) {
  return locklab::exercises::local_lock_bench_main<locklab::exercises::MyBackoffLock>(argc, argv, "my.BackoffLock");
}
