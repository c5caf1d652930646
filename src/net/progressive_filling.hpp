// Private: progressive filling, the max-min solver of the flow network, written once for the two
// fills that run it (SimGrid's lmm_solve in maxmin.cpp does the same on its System): the whole
// connected component (component_fill.hpp) and the affected set of incremental re-sharing
// (incremental_resharer.hpp). Repeatedly take the lowest level, a link's fair share per unfixed
// member or a flow's own bound, fix the flows it holds at that rate (every unfixed flow crossing
// the link, or the bounded flow), and take their use off their links. The fills differ only in
// how they see the links (global or local numbers, all of a link's flows or the affected ones) and
// in how they treat a link's entry in the heap once its share has moved (StaleLevels).
//
//   std::vector<Level> heap = {{10.0, 0}, {5.0, 1}};        // two links' starting shares
//   progressive_fill<StaleLevels::Requeue>(view, heap, fixed, num_flows);
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <functional>
#include <vector>

#include "net/maxmin_system.hpp"

namespace stepcast::net {

// A level at which progressive filling fixes flows: a link's fair share per unfixed member, or a
// flow's own bound (is_bound; `id` is then the flow). Equal shares: links before bounds, then by
// id, so that the order in which entries come out of the heap depends on the entries only.
struct Level {
  double share;
  uint32_t id;
  bool is_bound = false;
  bool operator>(const Level& o) const {
    if (share != o.share) return share > o.share;
    if (is_bound != o.is_bound) return is_bound;
    return id > o.id;
  }
};

/// A link as progressive filling sees it.
struct FillLink {
  double remaining = 0;  ///< capacity not yet given out, bytes/s
  uint32_t unfixed = 0;  ///< members not yet fixed
};

/// What happens to a link's entry in the heap once fixing flows moved its share.
enum class StaleLevels : uint8_t {
  /// Fixing a flow pushes the new share of each of its links (but the one fixing it); a popped
  /// entry that no longer gives its link's share is dropped.
  Skip,
  /// Fixing pushes nothing; a popped entry that no longer gives its link's share goes back in at
  /// the share. Fixing flows at the lowest level never lowers another link's share (it takes off
  /// at most that level per member, and the link's share was at least that), so an entry can
  /// only be stale by being too low: one entry per link suffices.
  Requeue,
};

/// How a fill shows its flows and links to progressive_fill. A link is named by its slot (what
/// Level::id holds for a link).
template <class V>
concept FillView = requires(V& view, uint32_t id, double rate) {
  /// The flow's path (global link numbers).
  { view.path(id) } -> std::same_as<const std::vector<LinkUse>&>;
  /// The slot of a global link.
  { view.slot(id) } -> std::same_as<uint32_t>;
  { view.at(id) } -> std::same_as<FillLink&>;
  /// Records flow `id`'s rate and the slot that holds it (kNoLink: its bound).
  view.set_rate(id, rate, id);
  /// The flows (fixed or not) that the link at a slot holds once its share is the lowest level.
  { *view.flows_on(id).begin() } -> std::convertible_to<uint32_t>;
  /// After the link's flows were fixed at `rate`: fixes whatever else the link holds (a group
  /// re-filled as a unit); returns how many such things it fixed.
  { view.fix_rest(id, rate) } -> std::same_as<uint32_t>;
};

/// Fixes `unfixed` things (the view's flows, and what fix_rest counts) by progressive filling,
/// starting from the levels in `heap` (any order; used as the heap, left in any state). `fixed`
/// has a 0 for each of the view's flows; fixing sets it to 1.
template <StaleLevels kStale, FillView View>
void progressive_fill(View& view, std::vector<Level>& heap, std::vector<uint8_t>& fixed, size_t unfixed) {
  std::make_heap(heap.begin(), heap.end(), std::greater<>());
  auto fix = [&](uint32_t f, double rate, uint32_t held_by) {
    fixed[f] = 1;
    --unfixed;
    view.set_rate(f, rate, held_by);
    for (const LinkUse& use : view.path(f)) {
      const uint32_t slot = view.slot(use.link);
      FillLink& link = view.at(slot);
      link.remaining = std::max(0.0, link.remaining - rate * use.count);
      link.unfixed -= use.count;
      if constexpr (kStale == StaleLevels::Skip) {
        if (link.unfixed > 0 && slot != held_by) {
          heap.push_back({link.remaining / link.unfixed, slot});
          std::push_heap(heap.begin(), heap.end(), std::greater<>());
        }
      }
    }
  };
  while (unfixed > 0 && !heap.empty()) {
    const Level top = heap.front();
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    heap.pop_back();
    if (top.is_bound) {
      if (!fixed[top.id]) fix(top.id, top.share, kNoLink);
      continue;
    }
    const FillLink& link = view.at(top.id);
    if (link.unfixed == 0) continue;
    if (const double share = link.remaining / link.unfixed; top.share != share) {
      if constexpr (kStale == StaleLevels::Requeue) {
        heap.push_back({share, top.id});
        std::push_heap(heap.begin(), heap.end(), std::greater<>());
      }
      continue;
    }
    for (const uint32_t f : view.flows_on(top.id)) {
      if (!fixed[f]) fix(f, top.share, top.id);
    }
    unfixed -= view.fix_rest(top.id, top.share);
  }
}

}  // namespace stepcast::net
