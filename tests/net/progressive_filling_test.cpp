// Progressive filling alone, on systems solvable by hand (expected shares derived in the
// comments, as SimGrid's maxmin_test.cpp does), with both ways of treating a stale level: the two
// fills of the flow network must agree on them.
#include "net/progressive_filling.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace stepcast::net {
namespace {
namespace progressive_filling_test {  // this file's own names: test files are compiled several to a unit

// A system of its own: links by their number, each with every flow crossing it.
struct ToyView {
  std::vector<std::vector<LinkUse>> paths;
  std::vector<FillLink> links;
  std::vector<std::vector<uint32_t>> on_link;
  std::vector<double> rate;
  std::vector<uint32_t> held_by;
  // A unit (fix_rest): members on `unit_link` fixed with it, at `unit_rate`.
  uint32_t unit_link = kNoLink, unit_weight = 0;
  double unit_rate = -1;

  ToyView(std::vector<double> capacities, std::vector<std::vector<LinkUse>> flow_paths)
      : paths(std::move(flow_paths)),
        on_link(capacities.size()),
        rate(paths.size(), -1),
        held_by(paths.size(), kNoLink) {
    for (double c : capacities) links.push_back({c, 0});
    for (uint32_t f = 0; f < paths.size(); ++f) {
      for (const LinkUse& use : paths[f]) {
        on_link[use.link].push_back(f);
        links[use.link].unfixed += use.count;
      }
    }
  }
  const std::vector<LinkUse>& path(uint32_t f) { return paths[f]; }
  uint32_t slot(uint32_t link) { return link; }
  FillLink& at(uint32_t link) { return links[link]; }
  void set_rate(uint32_t f, double r, uint32_t link) {
    rate[f] = r;
    held_by[f] = link;
  }
  const std::vector<uint32_t>& flows_on(uint32_t link) { return on_link[link]; }
  uint32_t fix_rest(uint32_t link, double r) {
    if (link != unit_link) return 0;
    unit_rate = r;
    links[link].remaining = std::max(0.0, links[link].remaining - r * unit_weight);
    links[link].unfixed -= unit_weight;
    return 1;
  }
};

// Fills `view` (bounds: flow -> max rate) with one policy; `things` counts the flows and units.
template <StaleLevels kStale>
void fill(ToyView& view, const std::vector<std::pair<uint32_t, double>>& bounds, size_t things) {
  std::vector<Level> heap;
  for (const auto& [f, bound] : bounds) heap.push_back({bound, f, true});
  for (uint32_t l = 0; l < view.links.size(); ++l) {
    if (view.links[l].unfixed > 0) heap.push_back({view.links[l].remaining / view.links[l].unfixed, l});
  }
  std::vector<uint8_t> fixed(view.paths.size(), 0);
  progressive_fill<kStale>(view, heap, fixed, things);
  for (uint32_t f = 0; f < fixed.size(); ++f) EXPECT_EQ(fixed[f], 1) << "flow " << f;
}

// Links L0 = 10, L1 = 4, L2 = 8. Flow A crosses L0 and L1, B crosses L1, C crosses L0 and L2, and
// D crosses L2 with its own bound of 1.
// Starting levels: L0 10/2 = 5 (A, C), L1 4/2 = 2 (A, B), L2 8/2 = 4 (C, D), D's bound 1.
//  - the bound is lowest: D = 1, and L2 has 8 - 1 = 7 left for C alone (level 7);
//  - L1 at 2: A = B = 2, held by L1; L0 has 10 - 2 = 8 left for C alone (level 8);
//  - L2 at 7, below L0's 8: C = 7, held by L2. L0 keeps 1 to spare.
TEST(ProgressiveFilling, BoundAndThreeLinksHandSolved) {
  auto check = [](auto policy) {
    ToyView view({10.0, 4.0, 8.0}, {{{0, 1}, {1, 1}}, {{1, 1}}, {{0, 1}, {2, 1}}, {{2, 1}}});
    fill<decltype(policy)::value>(view, {{3, 1.0}}, 4);
    EXPECT_DOUBLE_EQ(view.rate[0], 2.0);
    EXPECT_DOUBLE_EQ(view.rate[1], 2.0);
    EXPECT_DOUBLE_EQ(view.rate[2], 7.0);
    EXPECT_DOUBLE_EQ(view.rate[3], 1.0);
    EXPECT_EQ(view.held_by, (std::vector<uint32_t>{1, 1, 2, kNoLink}));
    EXPECT_DOUBLE_EQ(view.links[0].remaining, 1.0);
    EXPECT_DOUBLE_EQ(view.links[1].remaining, 0.0);
    EXPECT_DOUBLE_EQ(view.links[2].remaining, 0.0);
  };
  check(std::integral_constant<StaleLevels, StaleLevels::Skip>{});
  check(std::integral_constant<StaleLevels, StaleLevels::Requeue>{});
}

// L0 = 9 is crossed by E's two members and by F, which also crosses L1 = 100: 9/3 = 3 per member,
// so E = F = 3 and E puts 6 on L0. A bound above the share (F's 5) changes nothing.
TEST(ProgressiveFilling, MembersCountOnTheirLink) {
  auto check = [](auto policy) {
    ToyView view({9.0, 100.0}, {{{0, 2}}, {{0, 1}, {1, 1}}});
    fill<decltype(policy)::value>(view, {{1, 5.0}}, 2);
    EXPECT_DOUBLE_EQ(view.rate[0], 3.0);
    EXPECT_DOUBLE_EQ(view.rate[1], 3.0);
    EXPECT_EQ(view.held_by, (std::vector<uint32_t>{0, 0}));
    EXPECT_DOUBLE_EQ(view.links[0].remaining, 0.0);
    EXPECT_DOUBLE_EQ(view.links[1].remaining, 97.0);
  };
  check(std::integral_constant<StaleLevels, StaleLevels::Skip>{});
  check(std::integral_constant<StaleLevels, StaleLevels::Requeue>{});
}

// A unit of 2 members (a group re-filled as one) on L0 = 12 beside flow G, which also crosses
// L1 = 2 and H there. L1's level 2/2 = 1 comes first: G = H = 1. L0 then has 12 - 1 = 11 for the
// unit's 2 members: 5.5 each, fixed with the link by fix_rest.
TEST(ProgressiveFilling, WhatALinkHoldsBesideItsFlowsIsFixedWithIt) {
  auto check = [](auto policy) {
    ToyView view({12.0, 2.0}, {{{0, 1}, {1, 1}}, {{1, 1}}});
    view.unit_link = 0;
    view.unit_weight = 2;
    view.links[0].unfixed += 2;
    fill<decltype(policy)::value>(view, {}, 3);
    EXPECT_DOUBLE_EQ(view.rate[0], 1.0);
    EXPECT_DOUBLE_EQ(view.rate[1], 1.0);
    EXPECT_DOUBLE_EQ(view.unit_rate, 5.5);
    EXPECT_DOUBLE_EQ(view.links[0].remaining, 0.0);
  };
  check(std::integral_constant<StaleLevels, StaleLevels::Skip>{});
  check(std::integral_constant<StaleLevels, StaleLevels::Requeue>{});
}

}  // namespace progressive_filling_test
}  // namespace
}  // namespace stepcast::net
