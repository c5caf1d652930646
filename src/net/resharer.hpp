// Private: the re-sharing strategies of the flow network behind one interface (SimGrid's solvers,
// maxmin.cpp and bmf.cpp, over one lmm::System). A strategy reads the change recorded in the
// max-min system since the last re-share (the links whose set of flows changed, the new flows that
// share a link), gives the flows it may reach their max-min rates and bottlenecks, books them on
// their links, and settles them in their groups or the completion heap (flow_groups.hpp).
//  - Full (component_fill.hpp): every flow re-filled on every change; no groups. The reference.
//  - Incremental (incremental_resharer.hpp): only the flows the change may reach, with groups on a
//    link's virtual clock; falls back to re-filling the change's connected component.
//
//   auto resharer = make_resharer(Resharing::Incremental, system, groups);
//   if (system.changed()) resharer->reshare();
#pragma once

#include <memory>

#include "net/flow_groups.hpp"
#include "net/maxmin_system.hpp"
#include "stepcast/detail/net/network_model.hpp"

namespace stepcast::net {

class Resharer {
 public:
  virtual ~Resharer() = default;
  /// Re-shares after the change recorded in the system (its marked links sorted, each once), and
  /// empties the change. Counts what it re-shared in the system's counters.
  virtual void reshare() = 0;
};

/// The strategy `resharing` selects, borrowing `system` and `groups` (which must outlive it).
std::unique_ptr<Resharer> make_resharer(Resharing resharing, MaxMinSystem& system, FlowGroups& groups);

}  // namespace stepcast::net
