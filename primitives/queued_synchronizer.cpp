// queued_synchronizer.cpp — QueuedSynchronizer (the synchronizer over OS
// threads in the ParkingLot) compiled once; its slow paths are in
// queued_synchronizer_impl.hpp.
#include "primitives/queued_synchronizer_impl.hpp"

namespace locklab {

template class BasicQueuedSynchronizer<ThreadLot>;

}  // namespace locklab
