// my_ticket_lock_bench.cpp — your lock on the `locks` suite's workloads, as
// `my.TicketLock` (exercises/check.sh ticket --bench writes
// results/exercise_ticket.json; ./lab plot draws it beside TicketLock).
#include <my_ticket_lock.hpp>

#include "exercises/support/local_lock_bench.hpp"

int main(int argc, char** argv) {
  return locklab::exercises::local_lock_bench_main<locklab::exercises::MyTicketLock>(argc, argv, "my.TicketLock");
}
