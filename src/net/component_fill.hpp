// Private: re-sharing by progressive filling over whole connected components of the flow network
// (flows and links joined by "crosses"): max-min rates in one component do not depend on any
// other. Resharing::Full (FullResharer) re-fills the components of every link on every change and
// keeps no groups: the reference that incremental re-sharing is tested and benchmarked against.
// The incremental resharer falls back to it for the component of a change it could not re-share
// more cheaply.
//
//   ComponentFill component(system, groups);
//   component.refill(/*all_links=*/false);   // the component of the marked links
#pragma once

#include <cstdint>
#include <vector>

#include "net/flow_groups.hpp"
#include "net/maxmin_system.hpp"
#include "net/progressive_filling.hpp"
#include "net/resharer.hpp"

namespace stepcast::net {

class ComponentFill {
 public:
  /// Borrows `system` and `groups`, which must outlive it.
  ComponentFill(MaxMinSystem& system, FlowGroups& groups);
  /// Re-fills every flow connected to a marked link (to any link if `all_links`), books the
  /// component's links from scratch, settles its flows, and empties the marked links.
  void refill(bool all_links);

 private:
  void collect(bool all_links);
  void fill();
  /// Brings the component's link bookkeeping (load, held flows, level) in line with its new rates.
  void commit();

  MaxMinSystem& system_;
  FlowGroups& groups_;
  // Buffers, reused across re-shares.
  std::vector<uint32_t> flows_, links_;  ///< the component
  std::vector<FillLink> fill_links_;     ///< per link (global numbers)
  std::vector<uint8_t> fixed_;           ///< per flow
  std::vector<Level> levels_;            ///< progressive filling's heap
};

class FullResharer final : public Resharer {
 public:
  FullResharer(MaxMinSystem& system, FlowGroups& groups) : system_(system), component_(system, groups) {}
  void reshare() override;

 private:
  MaxMinSystem& system_;
  ComponentFill component_;
};

}  // namespace stepcast::net
