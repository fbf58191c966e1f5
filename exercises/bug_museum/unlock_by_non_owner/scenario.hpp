// scenario.hpp — the experiment of the exhibit unlock_by_non_owner, for any
// room with StockRoom's interface (the exhibit, and the instructor's fix).
//
// Holder H calls reserve() and sits in the critical section for `hold`.
// While it is there, this thread calls try_reserve() (the room is busy, so
// it must change nothing). Then thread C calls reserve(): it must wait for
// H. Outcome: the most threads ever inside at once, and the items left
// (2 reservations of a stock of 10 must leave 8).
#pragma once

#include <chrono>
#include <thread>

#include "tests/eventually.hpp"

namespace locklab::museum {

struct NonOwnerUnlockRun {
  bool holder_was_inside = false;  // H was in its critical section when we tried
  bool busy_try_reserved = false;  // try_reserve() on a busy room took an item
  int max_inside = 0;              // 1 is correct
  int items_left = 0;              // 8 is correct
};

template <class Room>
NonOwnerUnlockRun run_non_owner_unlock(std::chrono::milliseconds hold = std::chrono::milliseconds(300)) {
  NonOwnerUnlockRun run;
  Room room(10, hold);
  std::thread holder([&] { room.reserve(); });
  run.holder_was_inside = testing::eventually([&] { return room.inside_now() == 1; });
  run.busy_try_reserved = room.try_reserve();
  std::thread second([&] { room.reserve(); });
  second.join();
  holder.join();
  run.max_inside = room.max_inside();
  run.items_left = room.items_left();
  return run;
}

}  // namespace locklab::museum
