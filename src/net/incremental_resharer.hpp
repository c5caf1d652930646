// Private: incremental re-sharing, the flow network's default strategy (Resharing::Incremental).
// Every link keeps the list of flows crossing it (a flow that runs alone on all its links joins the
// lists only once another flow meets it), the links of flows that started or ended since the last
// re-share are marked, and only the flows whose rate may change are re-filled:
//  - the affected set starts as the new flows and the flows held by a marked link (a flow's rate
//    is set by the link that holds it); progressive filling runs over the set with the capacity
//    the other flows leave on each link;
//  - the result is max-min fair if every flow still has a bottleneck (a saturated link on its
//    path where no flow is faster, or its own bound). Every flow remembers the link that holds it
//    and every link how many flows it holds and at what rate (its level), so this is checked on
//    the links the affected flows cross, in O(1) for a link that holds none of the others;
//  - where it fails, every flow on that link joins the set and the filling runs again. The set
//    only grows, and never beyond the connected component of the change (max-min rates in one
//    component do not depend on any other); past half the active flows or a few rounds the whole
//    component is re-filled instead (component_fill.hpp).
// An incast (N clients to P servers) re-shares about N flows per change, not N x P.
//
// Flows held by one link move as a group on its virtual clock (flow_groups.hpp). When a change only
// moves the levels of some links (each changed link holds every flow on it, every new flow joins
// one of them, and every other link their flows cross holds nothing and keeps room to spare), the
// groups take their new levels in time proportional to the links their flows cross, with no
// filling (a level move). Otherwise the flows leave their groups, are re-filled one by one as
// above (a changed group whose flows share no other link with the change is re-filled as one
// unit), and join the group of the link that then holds them.
//
//   IncrementalResharer resharer(system, groups);
//   resharer.reshare();   // level move, else affected fill, else component fill
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "net/component_fill.hpp"
#include "net/flow_groups.hpp"
#include "net/maxmin_system.hpp"
#include "net/progressive_filling.hpp"
#include "net/resharer.hpp"

namespace stepcast::net {

class IncrementalResharer final : public Resharer {
 public:
  /// Borrows `system` and `groups`, which must outlive it.
  IncrementalResharer(MaxMinSystem& system, FlowGroups& groups);
  void reshare() override;

  // A link crossed by the affected flows of the re-share in progress. FillLink: progressive
  // filling's capacity not yet given out and members not yet fixed.
  struct AffectedLink : FillLink {
    uint32_t link = 0;
    uint32_t weight = 0;                ///< members of affected flows crossing it
    uint32_t held_before = 0;           ///< affected flows it held before the re-share
    bool expanded = false;              ///< all of its flows are affected
    double capacity_left = 0;           ///< by the unaffected flows
    double old_load = 0, new_load = 0;  ///< of the affected flows, before and after
    uint32_t first = 0, end = 0;        ///< its affected flows in affected_on_link_[first, end)
    // Its group re-filled as one (a unit): the flows of the group that share no other link with
    // the re-share stay in it and take the level the filling gives the link.
    bool unit = false;
    uint32_t unit_weight = 0;  ///< members the unit puts on the link (at the last filling)
    uint32_t unit_flows = 0;   ///< its flows
    double unit_old_rate = 0;  ///< the group's rate before
    double unit_rate = 0;      ///< progressive filling: the level it was fixed at
  };

 private:
  /// The affected set as progressive filling sees it (links by local index).
  struct AffectedView;

  // Level moves (see the file comment).
  /// The re-share where only the levels of the changed links move; false, having changed nothing,
  /// when the change is not of that kind.
  bool move_levels();

  // Affected-set fills.
  /// Re-shares only the flows whose rate may change; false if it gave up for the whole component,
  /// whose links it then leaves marked.
  bool fill_affected_set();
  uint32_t affected_link(uint32_t link);
  void add_affected(uint32_t f);
  /// Takes out of the units (as affected flows of their own) every flow that crosses a link of the
  /// re-share or one that holds flows; repeated until none is left.
  void entangle();
  /// After a filling: takes out of the units the flows that cross a link without room for their
  /// new level; true if it took any.
  bool entangle_crowded();
  void expand(uint32_t local);
  void fill();
  /// fill() when every affected flow crosses one link whose share is the lowest level: sets their
  /// rates to it and one_link_ to that link's local index; false (one_link_ kNoLink) when that is
  /// not the case.
  bool fill_at_one_link();
  /// Local indices of links where the filled rates break max-min fairness with unaffected flows.
  void find_violations();
  void commit();

  /// A fresh round for load_saved_ (the links whose load before a trial change was saved).
  uint32_t next_save_round();

  MaxMinSystem& system_;
  FlowGroups& groups_;
  ComponentFill component_;
  // Affected-set buffers, reused across re-shares.
  std::vector<uint32_t> affected_flows_;
  std::vector<AffectedLink> affected_links_;
  std::vector<uint32_t> local_of_;  ///< link -> index in affected_links_ (this stamp)
  std::vector<uint32_t> affected_on_link_;
  std::vector<uint32_t> violations_;
  std::vector<uint32_t> unit_links_;  ///< local indices of the links re-filled as units
  std::vector<uint32_t> entangled_, crowded_;
  uint32_t one_link_ = kNoLink;  ///< local index of the link the last fill used alone
  std::vector<uint8_t> fixed_;   ///< per flow
  std::vector<Level> levels_;    ///< progressive filling's heap
  // Level-move buffers: the changed links; the new flows that cross no link holding flows
  // (deferred); per link, the members joining its group, the members of deferred flows crossing
  // it, the load of the new flows that cross it and are held elsewhere, and its next level.
  std::vector<uint32_t> changed_links_, deferred_;
  std::vector<uint32_t> joining_weight_, deferred_weight_;
  std::vector<double> new_load_, next_level_;
  // Loads changed on trial (by level moves and entangle_crowded) and put back: the links whose load
  // moved, with their load before; per link, the round that saved it.
  std::vector<std::pair<uint32_t, double>> load_before_;
  std::vector<uint32_t> load_saved_;
  uint32_t save_round_ = 0;
};

}  // namespace stepcast::net
