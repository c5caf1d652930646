// The event queue is a header-only template; this file keeps the sim library target non-empty
// and checks that the header compiles on its own.
#include "stepcast/detail/sim/event_queue.hpp"

#include "stepcast/sim/trace.hpp"
