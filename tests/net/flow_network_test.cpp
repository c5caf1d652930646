// Max-min flow network: hand-solved sharing cases with the expected rates derived in comments,
// flow groups, restart and release, and property tests over seeded random instances.
#include "net/flow_network.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "stepcast/detail/net/network_model.hpp"

namespace stepcast::net {
namespace {
namespace flow_network_test {  // this file's own names: test files are compiled several to a unit

constexpr double kRel = 1e-9;

// Relative EXPECT_NEAR for values that may be large or small.
#define EXPECT_REL(actual, expected) \
  EXPECT_NEAR((actual), (expected), kRel* std::max(1.0, std::fabs(expected)))

FlowSpec on(std::vector<uint32_t> links, double bytes) {
  FlowSpec spec;
  for (uint32_t l : links) spec.path.push_back({l, 1});
  spec.bytes = bytes;
  return spec;
}

struct Event {
  double time;
  uint32_t flow;
  bool operator==(const Event&) const = default;
};

// Runs every active flow to completion; returns (time, flow) in completion order.
std::vector<Event> run_to_end(NetworkModel& net) {
  std::vector<Event> events;
  for (double t = net.next_completion(); !std::isinf(t); t = net.next_completion()) {
    const std::vector<FlowId> done = net.advance_to(t);
    EXPECT_FALSE(done.empty()) << "next_completion() = " << t << " finished nothing";
    if (done.empty()) break;
    for (FlowId f : done) events.push_back({t, index(f)});
  }
  return events;
}

// ---- One link -----------------------------------------------------------------------------

TEST(FlowNetwork, OneFlowGetsTheFullLink) {
  auto net = make_maxmin_network({1e9});
  const FlowId f = net->start_flow(on({0}, 5e8), 0.0);
  EXPECT_DOUBLE_EQ(net->rate(f), 1e9);
  EXPECT_DOUBLE_EQ(net->next_completion(), 0.5);
  const std::vector<FlowId> done = net->advance_to(0.5);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0], f);
  EXPECT_EQ(net->next_completion(), kInfinity);
  EXPECT_EQ(net->num_active(), 0u);
  EXPECT_DOUBLE_EQ(net->link_bytes()[0], 5e8);
}

TEST(FlowNetwork, EmptyNetworkNeverCompletes) {
  auto net = make_maxmin_network({1.0, 2.0});
  EXPECT_EQ(net->next_completion(), kInfinity);
  EXPECT_TRUE(net->advance_to(10.0).empty());
  EXPECT_EQ(net->num_active(), 0u);
  EXPECT_EQ(net->max_link_flows(), 0u);
}

TEST(FlowNetwork, FlowStartedLaterCompletesRelativeToItsStart) {
  auto net = make_maxmin_network({4.0});
  EXPECT_TRUE(net->advance_to(3.0).empty());
  net->start_flow(on({0}, 8.0), 3.0);
  EXPECT_DOUBLE_EQ(net->next_completion(), 5.0);  // 3 + 8/4
}

TEST(FlowNetwork, TwoFlowsOnOneLinkGetHalfEach) {
  auto net = make_maxmin_network({10.0});
  const FlowId a = net->start_flow(on({0}, 10.0), 0.0);
  const FlowId b = net->start_flow(on({0}, 10.0), 0.0);
  EXPECT_DOUBLE_EQ(net->rate(a), 5.0);
  EXPECT_DOUBLE_EQ(net->rate(b), 5.0);
  EXPECT_DOUBLE_EQ(net->next_completion(), 2.0);
  EXPECT_EQ(net->advance_to(2.0).size(), 2u);  // both at once
}

// k senders, each on its own uplink (links 1..k), into one receiver's NIC downlink (link 0): the
// downlink is the only bottleneck, cap/k each; all finish together at k * bytes / cap.
TEST(FlowNetwork, IncastSharesTheDownlinkEvenly) {
  const double cap = 1.25e9;
  const double bytes = 1e8;
  for (uint32_t k = 1; k <= 8; ++k) {
    SCOPED_TRACE("k = " + std::to_string(k));
    auto net = make_maxmin_network(std::vector<double>(k + 1, cap));
    std::vector<FlowId> flows;
    for (uint32_t i = 1; i <= k; ++i) flows.push_back(net->start_flow(on({i, 0}, bytes), 0.0));
    for (FlowId f : flows) EXPECT_REL(net->rate(f), cap / k);
    const double t = net->next_completion();
    EXPECT_REL(t, k * bytes / cap);
    EXPECT_EQ(net->advance_to(t).size(), k);
    EXPECT_EQ(net->num_active(), 0u);
    EXPECT_EQ(net->max_link_flows(), k);
    EXPECT_REL(net->link_bytes()[0], k * bytes);
    for (uint32_t i = 1; i <= k; ++i) EXPECT_REL(net->link_bytes()[i], bytes);
  }
}

// ---- Hand-solved max-min -------------------------------------------------------------------

// Links A=10 (0), B=4 (1). f1 on A, f2 on A and B, f3 on B.
// Fair shares per flow: A 10/2 = 5, B 4/2 = 2. B is the tighter bottleneck: f2 = f3 = 2.
// A then has 10 - 2 = 8 left for f1 alone: f1 = 8. Both links saturated.
TEST(FlowNetwork, TwoBottlenecksHandSolved) {
  auto net = make_maxmin_network({10.0, 4.0});
  const FlowId f1 = net->start_flow(on({0}, 100.0), 0.0);
  const FlowId f2 = net->start_flow(on({0, 1}, 100.0), 0.0);
  const FlowId f3 = net->start_flow(on({1}, 100.0), 0.0);
  EXPECT_DOUBLE_EQ(net->rate(f1), 8.0);
  EXPECT_DOUBLE_EQ(net->rate(f2), 2.0);
  EXPECT_DOUBLE_EQ(net->rate(f3), 2.0);
}

// The classic chain: links L0=1, L1=2, L2=3; f0 crosses all three, f1, f2, f3 each one link.
// Shares: L0 1/2, L1 2/2, L2 3/2. L0 first: f0 = f1 = 0.5. Then L1 has 2 - 0.5 = 1.5 for f2
// and L2 has 3 - 0.5 = 2.5 for f3.
TEST(FlowNetwork, ChainOfThreeLinksHandSolved) {
  auto net = make_maxmin_network({1.0, 2.0, 3.0});
  const FlowId f0 = net->start_flow(on({0, 1, 2}, 100.0), 0.0);
  const FlowId f1 = net->start_flow(on({0}, 100.0), 0.0);
  const FlowId f2 = net->start_flow(on({1}, 100.0), 0.0);
  const FlowId f3 = net->start_flow(on({2}, 100.0), 0.0);
  EXPECT_DOUBLE_EQ(net->rate(f0), 0.5);
  EXPECT_DOUBLE_EQ(net->rate(f1), 0.5);
  EXPECT_DOUBLE_EQ(net->rate(f2), 1.5);
  EXPECT_DOUBLE_EQ(net->rate(f3), 2.5);
}

// Three levels of bottleneck. Links L0=3, L1=10, L2=20.
//   a on L0, b on L0 and L1, c on L1, d on L1 and L2, e on L2.
// Shares: L0 3/2 = 1.5, L1 10/3 = 3.33, L2 20/2 = 10. L0 first: a = b = 1.5.
// L1 then has 10 - 1.5 = 8.5 over c and d: 4.25 each (< L2's 20/2). L2 has 20 - 4.25 = 15.75
// left for e.
TEST(FlowNetwork, ThreeLevelsOfBottleneckHandSolved) {
  auto net = make_maxmin_network({3.0, 10.0, 20.0});
  const FlowId a = net->start_flow(on({0}, 1.0), 0.0);
  const FlowId b = net->start_flow(on({0, 1}, 1.0), 0.0);
  const FlowId c = net->start_flow(on({1}, 1.0), 0.0);
  const FlowId d = net->start_flow(on({1, 2}, 1.0), 0.0);
  const FlowId e = net->start_flow(on({2}, 1.0), 0.0);
  EXPECT_DOUBLE_EQ(net->rate(a), 1.5);
  EXPECT_DOUBLE_EQ(net->rate(b), 1.5);
  EXPECT_DOUBLE_EQ(net->rate(c), 4.25);
  EXPECT_DOUBLE_EQ(net->rate(d), 4.25);
  EXPECT_DOUBLE_EQ(net->rate(e), 15.75);
}

// Weighted: link A=12 (0), B=2 (1). Group g has 2 members on A; h crosses A and B.
// Shares per member: A 12/3 = 4, B 2/1 = 2. B first: h = 2. A has 12 - 2 = 10 for g's two
// members: 5 each.
TEST(FlowNetwork, WeightedGroupHandSolved) {
  auto net = make_maxmin_network({12.0, 2.0});
  const FlowId g = net->start_flow({{{0, 2}}, 10.0}, 0.0);
  const FlowId h = net->start_flow(on({0, 1}, 10.0), 0.0);
  EXPECT_DOUBLE_EQ(net->rate(g), 5.0);
  EXPECT_DOUBLE_EQ(net->rate(h), 2.0);
  EXPECT_EQ(net->max_link_flows(), 3u);
}

// ---- Rates change as flows come and go ------------------------------------------------------

// Link of 10. Short flow 10 bytes, long flow 30 bytes, both at 5: the short one ends at t=2,
// when the long one has 30 - 10 = 20 left; alone at 10 it ends at 2 + 20/10 = 4.
TEST(FlowNetwork, LongFlowSpeedsUpWhenShortOneEnds) {
  auto net = make_maxmin_network({10.0});
  const FlowId shorter = net->start_flow(on({0}, 10.0), 0.0);
  const FlowId longer = net->start_flow(on({0}, 30.0), 0.0);
  EXPECT_DOUBLE_EQ(net->rate(longer), 5.0);
  EXPECT_DOUBLE_EQ(net->next_completion(), 2.0);
  const std::vector<FlowId> first = net->advance_to(2.0);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0], shorter);
  EXPECT_DOUBLE_EQ(net->next_completion(), 4.0);
  EXPECT_DOUBLE_EQ(net->rate(longer), 10.0);
  const std::vector<FlowId> second = net->advance_to(4.0);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0], longer);
  EXPECT_DOUBLE_EQ(net->link_bytes()[0], 40.0);
}

// Link of 10. f1 (30 bytes) alone at 10 until t=1 (20 left); f2 (10 bytes) joins at t=1, both at
// 5: f2 ends at t=3, f1 then has 20 - 10 = 10 left and ends at 3 + 10/10 = 4.
TEST(FlowNetwork, LateFlowSlowsTheRunningOne) {
  auto net = make_maxmin_network({10.0});
  const FlowId f1 = net->start_flow(on({0}, 30.0), 0.0);
  EXPECT_DOUBLE_EQ(net->next_completion(), 3.0);
  EXPECT_TRUE(net->advance_to(1.0).empty());
  const FlowId f2 = net->start_flow(on({0}, 10.0), 1.0);
  EXPECT_DOUBLE_EQ(net->rate(f1), 5.0);
  EXPECT_DOUBLE_EQ(net->rate(f2), 5.0);
  EXPECT_DOUBLE_EQ(net->next_completion(), 3.0);
  std::vector<FlowId> done = net->advance_to(3.0);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0], f2);
  EXPECT_DOUBLE_EQ(net->next_completion(), 4.0);
  done = net->advance_to(4.0);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0], f1);
}

// Ending a flow elsewhere frees capacity transitively. Links A=10, B=4; f1 on A, f2 on A and B,
// f3 on B (rates 8, 2, 2 as above). f3 (4 bytes) ends at t=2; then f2 alone on B could take 4,
// A's share is 10/2 = 5 > 4, so f2 = 4 and f1 = 6.
TEST(FlowNetwork, EndingFlowReleasesBandwidthAcrossLinks) {
  auto net = make_maxmin_network({10.0, 4.0});
  const FlowId f1 = net->start_flow(on({0}, 1000.0), 0.0);
  const FlowId f2 = net->start_flow(on({0, 1}, 1000.0), 0.0);
  const FlowId f3 = net->start_flow(on({1}, 4.0), 0.0);
  EXPECT_DOUBLE_EQ(net->next_completion(), 2.0);
  const std::vector<FlowId> done = net->advance_to(2.0);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0], f3);
  (void)net->next_completion();  // the finished flow is dropped before the next reshare
  EXPECT_DOUBLE_EQ(net->rate(f1), 6.0);
  EXPECT_DOUBLE_EQ(net->rate(f2), 4.0);
}

// ---- Flow groups ---------------------------------------------------------------------------

// N members over N disjoint (uplink, downlink) pairs, count 1 each: no member shares a link
// with another, so the group runs at full capacity.
TEST(FlowNetwork, GroupOverDisjointLinksRunsAtFullCapacity) {
  const double cap = 5.0;
  for (uint32_t n = 1; n <= 6; ++n) {
    SCOPED_TRACE("N = " + std::to_string(n));
    auto net = make_maxmin_network(std::vector<double>(2 * n, cap));
    FlowSpec spec;
    for (uint32_t i = 0; i < 2 * n; ++i) spec.path.push_back({i, 1});
    spec.bytes = 20.0;
    const FlowId g = net->start_flow(spec, 0.0);
    EXPECT_DOUBLE_EQ(net->rate(g), cap);
    EXPECT_DOUBLE_EQ(net->next_completion(), 4.0);
    EXPECT_EQ(net->max_link_flows(), 1u);
    EXPECT_EQ(net->advance_to(4.0).size(), 1u);
    for (double b : net->link_bytes()) EXPECT_DOUBLE_EQ(b, 20.0);
  }
}

// Two members on one link split it: cap/2 each, and the link carries both members' bytes.
TEST(FlowNetwork, GroupWithTwoMembersOnALinkGetsHalfEach) {
  auto net = make_maxmin_network({8.0, 8.0});
  const FlowId g = net->start_flow({{{0, 2}, {1, 1}}, 16.0}, 0.0);
  EXPECT_DOUBLE_EQ(net->rate(g), 4.0);
  EXPECT_DOUBLE_EQ(net->next_completion(), 4.0);
  EXPECT_EQ(net->advance_to(4.0).size(), 1u);
  EXPECT_DOUBLE_EQ(net->link_bytes()[0], 32.0);
  EXPECT_DOUBLE_EQ(net->link_bytes()[1], 16.0);
}

// A link listed twice in a path counts as one use with the counts added.
TEST(FlowNetwork, RepeatedLinkInPathAddsCounts) {
  auto net = make_maxmin_network({9.0});
  const FlowId g = net->start_flow({{{0, 1}, {0, 2}}, 3.0}, 0.0);
  EXPECT_DOUBLE_EQ(net->rate(g), 3.0);
  EXPECT_EQ(net->max_link_flows(), 3u);
  EXPECT_DOUBLE_EQ(net->next_completion(), 1.0);
  net->advance_to(1.0);
  EXPECT_DOUBLE_EQ(net->link_bytes()[0], 9.0);
}

// A group and a plain flow on one link: 3 members share 12, 4 each, the plain flow included.
TEST(FlowNetwork, GroupMembersAndPlainFlowShareEqually) {
  auto net = make_maxmin_network({12.0});
  const FlowId g = net->start_flow({{{0, 2}}, 8.0}, 0.0);
  const FlowId p = net->start_flow(on({0}, 8.0), 0.0);
  EXPECT_DOUBLE_EQ(net->rate(g), 4.0);
  EXPECT_DOUBLE_EQ(net->rate(p), 4.0);
  EXPECT_DOUBLE_EQ(net->next_completion(), 2.0);
  EXPECT_EQ(net->advance_to(2.0).size(), 2u);
}

// ---- max_link_flows ----------------------------------------------------------------------

TEST(FlowNetwork, MaxLinkFlowsCountsMembersAndKeepsThePeak) {
  auto net = make_maxmin_network({10.0, 10.0});
  EXPECT_EQ(net->max_link_flows(), 0u);
  net->start_flow({{{0, 3}}, 10.0}, 0.0);
  net->start_flow(on({0, 1}, 100.0), 0.0);
  net->start_flow(on({1}, 100.0), 0.0);
  (void)net->next_completion();
  EXPECT_EQ(net->max_link_flows(), 4u);  // link 0: 3 members + 1
  run_to_end(*net);
  EXPECT_EQ(net->max_link_flows(), 4u);  // a peak, not the current count
}

// ---- restart_flow and release ---------------------------------------------------------------

// f and g share a link of 10 (5 each). f (10 bytes) ends at t=2 and is restarted for 10 more:
// the active set is unchanged, so it keeps rate 5 and ends at 4; no reshare is counted.
TEST(FlowNetwork, RestartKeepsTheRateWithoutRecomputing) {
  auto net = make_maxmin_network({10.0});
  const FlowId f = net->start_flow(on({0}, 10.0), 0.0);
  const FlowId g = net->start_flow(on({0}, 100.0), 0.0);
  EXPECT_DOUBLE_EQ(net->next_completion(), 2.0);
  const uint64_t before = net->recomputations();
  EXPECT_EQ(before, 1u);  // both starts, one lazy reshare
  const std::vector<FlowId> done = net->advance_to(2.0);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0], f);
  net->restart_flow(f, 10.0);
  EXPECT_DOUBLE_EQ(net->rate(f), 5.0);
  EXPECT_DOUBLE_EQ(net->rate(g), 5.0);
  EXPECT_DOUBLE_EQ(net->next_completion(), 4.0);
  EXPECT_EQ(net->recomputations(), before);
  EXPECT_EQ(net->num_active(), 2u);
  EXPECT_EQ(net->advance_to(4.0).size(), 1u);
  EXPECT_DOUBLE_EQ(net->link_bytes()[0], 20.0);  // f's two transfers; g has not completed
}

// A finished flow that is not restarted is dropped on the next call: the other flow gets the
// whole link. g had 100 - 2*5 = 90 left at t=2, alone at 10: done at 11.
TEST(FlowNetwork, FinishedFlowNotRestartedReleasesBandwidth) {
  auto net = make_maxmin_network({10.0});
  const FlowId f = net->start_flow(on({0}, 10.0), 0.0);
  const FlowId g = net->start_flow(on({0}, 100.0), 0.0);
  EXPECT_EQ(net->advance_to(net->next_completion()).size(), 1u);
  EXPECT_DOUBLE_EQ(net->next_completion(), 11.0);
  EXPECT_EQ(net->num_active(), 1u);
  EXPECT_DOUBLE_EQ(net->rate(g), 10.0);
  EXPECT_EQ(net->recomputations(), 2u);
  (void)f;
}

// Flows returned by advance_to are no longer active (unless restarted), so a loop on
// num_active() ends without advancing to +inf; time stays finite and new flows can start.
TEST(FlowNetwork, FinishedFlowsAreNotCountedActive) {
  auto net = make_maxmin_network({10.0});
  const FlowId f = net->start_flow(on({0}, 10.0), 0.0);
  net->start_flow(on({0}, 20.0), 0.0);
  EXPECT_EQ(net->num_active(), 2u);
  EXPECT_EQ(net->advance_to(net->next_completion()).size(), 1u);  // f at t=2
  EXPECT_EQ(net->num_active(), 1u);
  net->restart_flow(f, 10.0);
  EXPECT_EQ(net->num_active(), 2u);
  int steps = 0;
  while (net->num_active() > 0 && ++steps < 10) net->advance_to(net->next_completion());
  EXPECT_EQ(steps, 1);  // f (restarted, 10 at 5) and the other (10 left at 5) both end at t=4
  EXPECT_EQ(net->num_active(), 0u);
  // Still at t=4, not at +inf: a new flow starts and completes normally.
  net->start_flow(on({0}, 10.0), 4.0);
  EXPECT_DOUBLE_EQ(net->next_completion(), 5.0);
}

// Restarting for zero bytes completes at once, at the same time.
TEST(FlowNetwork, RestartWithZeroBytesCompletesImmediately) {
  auto net = make_maxmin_network({10.0});
  const FlowId f = net->start_flow(on({0}, 10.0), 0.0);
  EXPECT_EQ(net->advance_to(1.0).size(), 1u);
  net->restart_flow(f, 0.0);
  EXPECT_DOUBLE_EQ(net->next_completion(), 1.0);
  const std::vector<FlowId> done = net->advance_to(1.0);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0], f);
}

// Many flows finishing at once, some restarted (in any order): the others leave at the next call,
// in the order advance_to returned them (so the slot freed last is the next one reused), and the
// restarted ones share the link that is left. The filling overload of advance_to clears `done`.
TEST(FlowNetwork, RestartingSomeOfManyFinishedFlowsDropsTheRest) {
  auto net = make_maxmin_network({12.0});
  std::vector<FlowId> flows;
  for (int i = 0; i < 6; ++i) flows.push_back(net->start_flow(on({0}, 10.0), 0.0));
  // 2 bytes/s each: all six end at t = 5, returned by index.
  std::vector<FlowId> done = {flows[0]};
  net->advance_to(net->next_completion(), done);
  ASSERT_EQ(done, flows);
  EXPECT_EQ(net->num_active(), 0u);
  net->restart_flow(flows[4], 12.0);
  net->restart_flow(flows[1], 12.0);
  EXPECT_EQ(net->num_active(), 2u);
  // The four others are dropped (slots 0, 2, 3, 5 freed in that order); the two restarted share
  // 12 bytes/s at 6 each: both end at 5 + 12/6 = 7.
  EXPECT_DOUBLE_EQ(net->next_completion(), 7.0);
  EXPECT_EQ(net->num_active(), 2u);
  EXPECT_DOUBLE_EQ(net->rate(flows[1]), 6.0);
  EXPECT_EQ(net->start_flow(on({0}, 0.0), 5.0), flows[5]);  // the slot freed last
  EXPECT_EQ(net->start_flow(on({0}, 0.0), 5.0), flows[3]);
  net->advance_to(5.0, done);
  EXPECT_EQ(done, (std::vector<FlowId>{flows[3], flows[5]}));  // the empty ones, by index
  net->advance_to(7.0, done);
  EXPECT_EQ(done, (std::vector<FlowId>{flows[1], flows[4]}));
  EXPECT_EQ(net->num_active(), 0u);
  EXPECT_DOUBLE_EQ(net->link_bytes()[0], 6 * 10.0 + 2 * 12.0);
}

// Flow ids of dropped flows are reused; a stale completion of the old flow must not fire for the
// new one.
TEST(FlowNetwork, ReusedFlowSlotIgnoresStaleCompletion) {
  auto net = make_maxmin_network({10.0});
  const FlowId a = net->start_flow(on({0}, 10.0), 0.0);
  const FlowId b = net->start_flow(on({0}, 30.0), 0.0);
  EXPECT_EQ(net->advance_to(net->next_completion()).size(), 1u);  // a at t=2; b has 20 left
  const FlowId c = net->start_flow(on({0}, 50.0), 2.0);           // reuses a's slot
  EXPECT_EQ(c, a);
  // b and c at 5: b ends at 2 + 20/5 = 6 (c has 30 left), then c alone: 6 + 3 = 9.
  EXPECT_DOUBLE_EQ(net->next_completion(), 6.0);
  std::vector<FlowId> done = net->advance_to(6.0);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0], b);
  EXPECT_DOUBLE_EQ(net->next_completion(), 9.0);
  done = net->advance_to(9.0);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0], c);
}

// ---- Degenerate flows -------------------------------------------------------------------------

// The completion queue: independent flows (each alone on its link, so a flow's finish is start +
// bytes / capacity, computed here) come out in (finish, flow) order, each once, whatever the order
// they started and restarted in; flows that finish together come out by flow id.
TEST(FlowNetwork, CompletionsComeOutInTimeThenFlowOrder) {
  constexpr int kFlows = 300;
  std::mt19937_64 rng(7);
  std::vector<double> capacities(kFlows);
  // Powers of two, so that bytes = t x capacity and bytes / capacity are exact: equal finish times
  // are equal doubles.
  for (double& c : capacities) c = std::ldexp(1.0, std::uniform_int_distribution<int>(27, 30)(rng));
  auto net = make_maxmin_network(capacities);
  std::vector<double> finish(kFlows);
  for (int i = 0; i < kFlows; ++i) {
    // A third of them finish at one of three shared times, the others anywhere.
    const double t =
        i % 3 == 0 ? 0.5 * (1 + i % 9 / 3) : std::uniform_real_distribution<double>(0.01, 2)(rng);
    const FlowId f = net->start_flow(on({static_cast<uint32_t>(i)}, t * capacities[i]), 0.0);
    ASSERT_EQ(index(f), static_cast<uint32_t>(i));
    finish[i] = t;
  }
  std::vector<Event> expected;
  for (int i = 0; i < kFlows; ++i) expected.push_back({finish[i], static_cast<uint32_t>(i)});
  std::sort(expected.begin(), expected.end(), [](const Event& a, const Event& b) {
    return a.time != b.time ? a.time < b.time : a.flow < b.flow;
  });
  const std::vector<Event> events = run_to_end(*net);
  ASSERT_EQ(events.size(), expected.size());
  for (std::size_t k = 0; k < events.size(); ++k) {
    EXPECT_EQ(events[k].flow, expected[k].flow) << "completion " << k;
    EXPECT_REL(events[k].time, expected[k].time);
  }
}

// A flow whose rate changes many times keeps one place in the queue: after 200 flows come and go
// on its link, it completes once, when its bytes are done (the sum of bytes / share over the
// intervals, 1 GB/s shared equally).
TEST(FlowNetwork, ReschedulingManyTimesCompletesOnce) {
  auto net = make_maxmin_network({1e9});
  const FlowId long_flow = net->start_flow(on({0}, 1e9), 0.0);
  double t = 0, done_by_long = 0;
  for (int k = 0; k < 200; ++k) {
    // A short flow of 1 MB joins at t: both run at 0.5 GB/s until it ends at t + 2 ms.
    net->start_flow(on({0}, 1e6), t);
    EXPECT_REL(net->next_completion(), t + 2e-3);
    const std::vector<FlowId> done = net->advance_to(t + 2e-3);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_NE(index(done[0]), index(long_flow));
    t += 2e-3;
    done_by_long += 1e6;
  }
  // 200 MB done at half rate; the remaining 800 MB alone at 1 GB/s.
  EXPECT_REL(net->next_completion(), t + (1e9 - done_by_long) / 1e9);
  const std::vector<Event> rest = run_to_end(*net);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].flow, index(long_flow));
}

TEST(FlowNetwork, ZeroByteFlowCompletesImmediately) {
  auto net = make_maxmin_network({10.0});
  EXPECT_TRUE(net->advance_to(2.5).empty());
  const FlowId f = net->start_flow(on({0}, 0.0), 2.5);
  EXPECT_DOUBLE_EQ(net->next_completion(), 2.5);
  const std::vector<FlowId> done = net->advance_to(2.5);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0], f);
  EXPECT_DOUBLE_EQ(net->link_bytes()[0], 0.0);
}

TEST(FlowNetwork, EmptyPathFlowCompletesImmediatelyWithoutResharing) {
  auto net = make_maxmin_network({10.0});
  const FlowId busy = net->start_flow(on({0}, 100.0), 0.0);
  EXPECT_DOUBLE_EQ(net->next_completion(), 10.0);
  EXPECT_TRUE(net->advance_to(1.0).empty());
  const uint64_t before = net->recomputations();
  const FlowId local = net->start_flow({{}, 1e12}, 1.0);
  EXPECT_DOUBLE_EQ(net->next_completion(), 1.0);
  const std::vector<FlowId> done = net->advance_to(1.0);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0], local);
  EXPECT_DOUBLE_EQ(net->next_completion(), 10.0);  // the busy flow is unaffected
  EXPECT_EQ(net->recomputations(), before);
  EXPECT_DOUBLE_EQ(net->rate(busy), 10.0);
}

// ---- No contention -----------------------------------------------------------------------

TEST(NoContentionNetwork, FlowsDoNotShare) {
  auto net = make_no_contention_network({10.0, 4.0});
  const FlowId a = net->start_flow(on({0}, 20.0), 0.0);
  const FlowId b = net->start_flow(on({0, 1}, 8.0), 0.0);
  const FlowId g = net->start_flow({{{0, 2}}, 10.0}, 0.0);
  EXPECT_DOUBLE_EQ(net->rate(a), 10.0);
  EXPECT_DOUBLE_EQ(net->rate(b), 4.0);  // narrowest link
  EXPECT_DOUBLE_EQ(net->rate(g), 5.0);  // its own two members still share
  const std::vector<Event> events = run_to_end(*net);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0], (Event{2.0, index(a)}));  // a and b both at 2; a has the lower id
  EXPECT_EQ(events[1], (Event{2.0, index(b)}));
  EXPECT_EQ(events[2], (Event{2.0, index(g)}));
}

// ---- Incremental re-sharing -----------------------------------------------------------------

// Two independent pairs of flows (links 0 and 1). A flow ending on link 0 re-shares only the
// flow left on link 0; the flows on link 1 keep their rates and completion times.
TEST(FlowNetwork, EndingFlowLeavesIndependentFlowsAlone) {
  auto net = make_maxmin_network({10.0, 6.0});
  const FlowId a = net->start_flow(on({0}, 10.0), 0.0);   // 5/s while b runs
  const FlowId b = net->start_flow(on({0}, 40.0), 0.0);   // 5/s, then 10/s
  const FlowId c = net->start_flow(on({1}, 30.0), 0.0);   // 3/s each
  const FlowId d = net->start_flow(on({1}, 300.0), 0.0);  // 3/s, then 6/s
  EXPECT_DOUBLE_EQ(net->rate(c), 3.0);
  EXPECT_EQ(net->flows_reshared(), 4u);
  EXPECT_DOUBLE_EQ(net->next_completion(), 2.0);  // a: 10 B at 5/s
  ASSERT_EQ(net->advance_to(2.0), std::vector<FlowId>{a});
  EXPECT_DOUBLE_EQ(net->rate(b), 10.0);
  EXPECT_DOUBLE_EQ(net->rate(c), 3.0);
  EXPECT_EQ(net->flows_reshared(), 5u) << "only b is re-shared";
  // b: 30 B left at 10/s -> 5.0; c: 30 B at 3/s -> 10.0; then d alone: 270 B left at 6/s -> 55.
  EXPECT_DOUBLE_EQ(net->next_completion(), 5.0);
  ASSERT_EQ(net->advance_to(5.0), std::vector<FlowId>{b});
  EXPECT_DOUBLE_EQ(net->next_completion(), 10.0);
  ASSERT_EQ(net->advance_to(10.0), std::vector<FlowId>{c});
  EXPECT_DOUBLE_EQ(net->next_completion(), 55.0);
  ASSERT_EQ(net->advance_to(55.0), std::vector<FlowId>{d});
  EXPECT_EQ(net->flows_reshared(), 6u) << "b's end re-shares nothing, c's end re-shares d";
}

// A flow joining on link 1 slows down only what shares link 1 (and what shares links with that).
TEST(FlowNetwork, StartingFlowReachesOnlyItsComponent) {
  // a on {0,1}, b on {1,2}, c on {3}: a and b are connected through link 1, c is apart.
  auto net = make_maxmin_network({10.0, 10.0, 10.0, 10.0});
  const FlowId a = net->start_flow(on({0, 1}, 100.0), 0.0);
  const FlowId b = net->start_flow(on({1, 2}, 100.0), 0.0);
  const FlowId c = net->start_flow(on({3}, 100.0), 0.0);
  EXPECT_DOUBLE_EQ(net->rate(a), 5.0);
  EXPECT_DOUBLE_EQ(net->rate(c), 10.0);
  const uint64_t before = net->flows_reshared();
  const FlowId e = net->start_flow(on({2}, 100.0), 1.0);  // joins b on link 2
  EXPECT_DOUBLE_EQ(net->rate(e), 5.0);
  EXPECT_DOUBLE_EQ(net->rate(b), 5.0);
  // b is held by link 1 (5 each for a and b), which e does not cross: only e is re-filled, and
  // link 2 (b 5, e 5) is saturated with no flow faster than e. c is in another component.
  EXPECT_EQ(net->flows_reshared() - before, 1u) << "e; not a or b, not c";
  EXPECT_DOUBLE_EQ(net->rate(a), 5.0);
  EXPECT_DOUBLE_EQ(net->rate(c), 10.0);
}

// A change that ripples two links away: the affected set starts with the flow on the changed
// link and has to grow twice. Links 0, 1, 2 of capacity 4, 10, 17; a on {0}, b on {0,1}, c on
// {1,2}, d on {2}. Before a ends: link 0 gives a and b 2 each; link 1 leaves c 10 - 2 = 8 (below
// link 2's 17/2); link 2 leaves d 17 - 8 = 9. After: b alone on link 0 gets 4, c gets 10 - 4 = 6,
// d gets 17 - 6 = 11.
TEST(FlowNetwork, EndingFlowRipplesThroughTwoLinks) {
  for (const Resharing resharing : {Resharing::Incremental, Resharing::Full}) {
    SCOPED_TRACE(resharing == Resharing::Full ? "full" : "incremental");
    auto net = make_maxmin_network({4.0, 10.0, 17.0}, resharing);
    const FlowId a = net->start_flow(on({0}, 2.0), 0.0);  // done at 1 s
    const FlowId b = net->start_flow(on({0, 1}, 1000.0), 0.0);
    const FlowId c = net->start_flow(on({1, 2}, 1000.0), 0.0);
    const FlowId d = net->start_flow(on({2}, 1000.0), 0.0);
    EXPECT_REL(net->rate(b), 2.0);
    EXPECT_REL(net->rate(c), 8.0);
    EXPECT_REL(net->rate(d), 9.0);
    EXPECT_REL(net->next_completion(), 1.0);
    ASSERT_EQ(net->advance_to(1.0), std::vector<FlowId>{a});
    EXPECT_REL(net->rate(b), 4.0);
    EXPECT_REL(net->rate(c), 6.0);
    EXPECT_REL(net->rate(d), 11.0);
    // d ends first: 1000 - 9 = 991 B left at 11/s (b has 998 B at 4/s, c 992 B at 6/s).
    EXPECT_REL(net->next_completion(), 1.0 + 991.0 / 11.0);
  }
}

// An incast, N clients to P servers (each client uplink {c}, each server downlink {N + s}, every
// client sending to every server): the server downlinks hold every flow at capacity / N. When
// one flow ends, only the flows its server's downlink holds are re-filled (N - 1), not the N x P
// of the connected component; they speed up to capacity / (N - 1).
TEST(FlowNetwork, IncastReSharesTheChangedLinksNotTheComponent) {
  constexpr uint32_t kClients = 8, kServers = 4;
  std::vector<double> capacities(kClients, 100.0);
  capacities.resize(kClients + kServers, 10.0);
  auto net = make_maxmin_network(capacities);
  std::vector<FlowId> flows;
  for (uint32_t c = 0; c < kClients; ++c) {
    for (uint32_t s = 0; s < kServers; ++s) {
      flows.push_back(net->start_flow(on({c, kClients + s}, c == 0 && s == 0 ? 10.0 : 1000.0), 0.0));
    }
  }
  EXPECT_REL(net->rate(flows[0]), 10.0 / kClients);
  const uint64_t before = net->flows_reshared();
  EXPECT_REL(net->next_completion(), 10.0 / (10.0 / kClients));
  ASSERT_EQ(net->advance_to(net->next_completion()).size(), 1u);
  for (uint32_t c = 0; c < kClients; ++c) {
    for (uint32_t s = 0; s < kServers; ++s) {
      if (c == 0 && s == 0) continue;
      EXPECT_REL(net->rate(flows[c * kServers + s]), s == 0 ? 10.0 / (kClients - 1) : 10.0 / kClients);
    }
  }
  EXPECT_EQ(net->flows_reshared() - before, kClients - 1);
}

// Flows that start alone stay out of the per-link lists; a later flow meeting two of them must
// still slow both down, and when it ends both must speed up again.
TEST(FlowNetwork, AloneFlowsAreResharedWhenAFlowMeetsThem) {
  auto net = make_maxmin_network({10.0, 10.0, 10.0});
  const FlowId a = net->start_flow(on({0, 1}, 100.0), 0.0);
  const FlowId b = net->start_flow(on({2}, 100.0), 0.0);
  EXPECT_REL(net->rate(a), 10.0);
  EXPECT_REL(net->rate(b), 10.0);
  EXPECT_EQ(net->recomputations(), 0u);  // both alone: no re-share
  const FlowId c = net->start_flow(on({1, 2}, 5.0), 0.0);
  EXPECT_REL(net->rate(a), 5.0);
  EXPECT_REL(net->rate(b), 5.0);
  EXPECT_REL(net->rate(c), 5.0);
  // c ends at 1 s; a and b have 95 bytes left and run at 10 again.
  EXPECT_REL(net->next_completion(), 1.0);
  ASSERT_EQ(net->advance_to(1.0).size(), 1u);
  EXPECT_REL(net->rate(a), 10.0);
  EXPECT_REL(net->rate(b), 10.0);
  EXPECT_REL(net->next_completion(), 10.5);
}

// ---- Flows with their own rate bound (FlowSpec::max_rate) ------------------------------------

TEST(FlowNetwork, BoundedFlowAloneRunsAtItsBound) {
  auto net = make_maxmin_network({10.0, 10.0});
  FlowSpec spec = on({0, 1}, 20.0);
  spec.max_rate = 4.0;
  const FlowId f = net->start_flow(spec, 0.0);
  EXPECT_REL(net->rate(f), 4.0);
  EXPECT_REL(net->next_completion(), 5.0);
}

TEST(FlowNetwork, BoundAboveTheLinkChangesNothing) {
  auto net = make_maxmin_network({10.0});
  FlowSpec spec = on({0}, 20.0);
  spec.max_rate = 25.0;
  const FlowId a = net->start_flow(spec, 0.0);
  const FlowId b = net->start_flow(on({0}, 20.0), 0.0);
  EXPECT_REL(net->rate(a), 5.0);
  EXPECT_REL(net->rate(b), 5.0);
}

// The capacity a bounded flow leaves goes to the others: 10 = 2 + 8 rather than 5 + 5.
TEST(FlowNetwork, BoundedFlowLeavesItsShareToTheOthers) {
  auto net = make_maxmin_network({10.0, 100.0});
  FlowSpec bounded = on({0}, 20.0);
  bounded.max_rate = 2.0;
  const FlowId a = net->start_flow(bounded, 0.0);
  const FlowId b = net->start_flow(on({0, 1}, 40.0), 0.0);
  EXPECT_REL(net->rate(a), 2.0);
  EXPECT_REL(net->rate(b), 8.0);
  // b ends at 5 s; a then still runs at its bound, not at the link's 10.
  EXPECT_REL(net->next_completion(), 5.0);
  ASSERT_EQ(net->advance_to(5.0).size(), 1u);
  EXPECT_REL(net->rate(a), 2.0);
  EXPECT_REL(net->next_completion(), 10.0);
}

// A bounded group: the bound is per member, so a link crossed by all 3 members carries 3x it.
TEST(FlowNetwork, BoundIsPerMemberOfAGroup) {
  auto net = make_maxmin_network({30.0});
  FlowSpec spec;
  spec.path = {{0, 3}};
  spec.bytes = 10.0;
  spec.max_rate = 4.0;
  const FlowId f = net->start_flow(spec, 0.0);
  EXPECT_REL(net->rate(f), 4.0);
  EXPECT_EQ(net->advance_to(2.5).size(), 1u);
  EXPECT_REL(net->link_bytes()[0], 30.0);
}

TEST(NoContentionNetwork, BoundStillApplies) {
  auto net = make_no_contention_network({10.0});
  FlowSpec spec = on({0}, 10.0);
  spec.max_rate = 1.0;
  EXPECT_REL(net->rate(net->start_flow(spec, 0.0)), 1.0);
}

// ---- Properties over seeded random instances -------------------------------------------------

struct Instance {
  std::vector<double> capacities;
  std::vector<FlowSpec> flows;
  std::vector<double> start;  ///< start times (all 0 unless staggered)
};

Instance random_instance(uint64_t seed, bool weighted, bool staggered) {
  std::mt19937_64 rng(seed);
  auto uniform_int = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto uniform = [&rng](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  Instance in;
  const int num_links = uniform_int(5, 30);
  for (int l = 0; l < num_links; ++l) in.capacities.push_back(uniform(1.0, 100.0));
  const int num_flows = uniform_int(1, 60);
  std::vector<uint32_t> links(num_links);
  for (int l = 0; l < num_links; ++l) links[l] = static_cast<uint32_t>(l);
  for (int i = 0; i < num_flows; ++i) {
    std::shuffle(links.begin(), links.end(), rng);
    FlowSpec spec;
    const int length = uniform_int(1, 4);
    for (int j = 0; j < length; ++j) {
      spec.path.push_back({links[j], weighted ? static_cast<uint32_t>(uniform_int(1, 3)) : 1u});
    }
    spec.bytes = uniform(0.0, 1.0) < 0.05 ? 0.0 : uniform(1.0, 1000.0);
    in.flows.push_back(std::move(spec));
    in.start.push_back(staggered ? uniform(0.0, 20.0) : 0.0);
  }
  std::sort(in.start.begin(), in.start.end());
  return in;
}

// N clients to P servers with staggered starts: flow i goes from a random client uplink to a
// random server downlink, sometimes through a shared core link too. Changes ripple through both
// sides, which is what the affected-set re-share has to get right.
Instance random_incast(uint64_t seed, bool weighted) {
  std::mt19937_64 rng(seed);
  auto uniform_int = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto uniform = [&rng](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  Instance in;
  const int clients = uniform_int(2, 24), servers = uniform_int(1, 8);
  for (int l = 0; l < clients + servers; ++l) in.capacities.push_back(uniform(10.0, 100.0));
  const uint32_t core = static_cast<uint32_t>(clients + servers);
  in.capacities.push_back(uniform(50.0, 400.0));
  const int num_flows = uniform_int(clients, 6 * clients);
  for (int i = 0; i < num_flows; ++i) {
    FlowSpec spec;
    const uint32_t count = weighted ? static_cast<uint32_t>(uniform_int(1, 3)) : 1u;
    spec.path.push_back({static_cast<uint32_t>(uniform_int(0, clients - 1)), count});
    spec.path.push_back({static_cast<uint32_t>(clients + uniform_int(0, servers - 1)), count});
    if (uniform(0.0, 1.0) < 0.3) spec.path.push_back({core, count});
    spec.bytes = uniform(1.0, 1000.0);
    in.flows.push_back(std::move(spec));
    in.start.push_back(uniform(0.0, 20.0));
  }
  std::sort(in.start.begin(), in.start.end());
  return in;
}

// `in` with a rate bound on about a third of its flows, drawn from its own seeded stream so the
// unbounded instances stay as they are.
Instance with_bounds(Instance in, uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
  for (FlowSpec& spec : in.flows) {
    if (std::uniform_real_distribution<double>(0, 1)(rng) < 0.35)
      spec.max_rate = std::uniform_real_distribution<double>(0.5, 60.0)(rng);
  }
  return in;
}

std::string trace(uint64_t seed, bool weighted) {
  return "seed " + std::to_string(seed) + (weighted ? " (weighted)" : "");
}

double members(const FlowSpec& spec) {
  double m = 0;
  for (const LinkUse& u : spec.path) m += u.count;
  return m;
}

// Starts every flow of `in` at t=0 and returns the ids in order.
std::vector<FlowId> start_all(NetworkModel& net, const Instance& in) {
  std::vector<FlowId> ids;
  for (const FlowSpec& spec : in.flows) ids.push_back(net.start_flow(spec, 0.0));
  return ids;
}

class FlowNetworkProperty : public ::testing::TestWithParam<bool> {};

// No link above capacity, and every flow has a bottleneck: a saturated link on its path where
// no flow is faster. Together these characterize the max-min fair allocation.
TEST_P(FlowNetworkProperty, RatesAreFeasibleAndMaxMinFair) {
  const bool weighted = GetParam();
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE(trace(seed, weighted));
    const Instance in = random_instance(seed, weighted, false);
    auto net = make_maxmin_network(in.capacities);
    const std::vector<FlowId> ids = start_all(*net, in);
    const size_t num_links = in.capacities.size();
    std::vector<double> load(num_links, 0.0), fastest(num_links, 0.0);
    std::vector<double> rate(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      rate[i] = net->rate(ids[i]);
      ASSERT_GT(rate[i], 0.0);
      ASSERT_TRUE(std::isfinite(rate[i]));
      for (const LinkUse& u : in.flows[i].path) {
        load[u.link] += rate[i] * u.count;
        fastest[u.link] = std::max(fastest[u.link], rate[i]);
      }
    }
    for (size_t l = 0; l < num_links; ++l) {
      EXPECT_LE(load[l], in.capacities[l] * (1 + kRel)) << "link " << l;
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      bool has_bottleneck = false;
      for (const LinkUse& u : in.flows[i].path) {
        const bool saturated = load[u.link] >= in.capacities[u.link] * (1 - kRel);
        const bool none_faster = rate[i] >= fastest[u.link] * (1 - kRel);
        has_bottleneck = has_bottleneck || (saturated && none_faster);
      }
      EXPECT_TRUE(has_bottleneck) << "flow " << i << " at rate " << rate[i];
    }
    // Started together: one re-share if any two flows share a link; none if every flow is alone
    // on its links (each then runs at its narrowest link from the start).
    std::vector<int> flows_on(num_links, 0);
    bool shared = false;
    for (const FlowSpec& spec : in.flows) {
      for (const LinkUse& u : spec.path) shared = shared || ++flows_on[u.link] > 1;
    }
    EXPECT_EQ(net->recomputations(), shared ? 1u : 0u);
  }
}

TEST_P(FlowNetworkProperty, ScalingCapacitiesScalesRates) {
  const bool weighted = GetParam();
  const double k = 3.5;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE(trace(seed, weighted));
    const Instance in = random_instance(seed, weighted, false);
    std::vector<double> scaled = in.capacities;
    for (double& c : scaled) c *= k;
    auto net = make_maxmin_network(in.capacities);
    auto fast = make_maxmin_network(scaled);
    const std::vector<FlowId> ids = start_all(*net, in);
    const std::vector<FlowId> fast_ids = start_all(*fast, in);
    for (size_t i = 0; i < ids.size(); ++i) {
      const double expected = k * net->rate(ids[i]);
      EXPECT_NEAR(fast->rate(fast_ids[i]), expected, kRel * expected) << "flow " << i;
    }
  }
}

// Run to completion: every flow completes exactly once, bytes are conserved per link, the run is
// deterministic, and no flow finishes before it could have alone (the no-contention bound).
TEST_P(FlowNetworkProperty, RunToCompletionConservesBytes) {
  const bool weighted = GetParam();
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE(trace(seed, weighted));
    const Instance in = random_instance(seed, weighted, false);
    auto net = make_maxmin_network(in.capacities);
    start_all(*net, in);
    const std::vector<Event> events = run_to_end(*net);
    EXPECT_EQ(net->num_active(), 0u);

    std::vector<int> completions(in.flows.size(), 0);
    double prev = 0;
    for (const Event& e : events) {
      ASSERT_LT(e.flow, in.flows.size());
      completions[e.flow]++;
      EXPECT_GE(e.time, prev);
      prev = e.time;
    }
    for (size_t i = 0; i < in.flows.size(); ++i) EXPECT_EQ(completions[i], 1) << "flow " << i;

    std::vector<double> expected(in.capacities.size(), 0.0);
    double expected_total = 0, total = 0;
    for (const FlowSpec& spec : in.flows) {
      for (const LinkUse& u : spec.path) expected[u.link] += spec.bytes * u.count;
      expected_total += spec.bytes * members(spec);
    }
    for (size_t l = 0; l < expected.size(); ++l) {
      EXPECT_NEAR(net->link_bytes()[l], expected[l], kRel * std::max(1.0, expected[l])) << "link " << l;
      total += net->link_bytes()[l];
    }
    EXPECT_NEAR(total, expected_total, kRel * std::max(1.0, expected_total));

    auto again = make_maxmin_network(in.capacities);
    start_all(*again, in);
    EXPECT_EQ(run_to_end(*again), events) << "same instance, different completions";

    auto alone = make_no_contention_network(in.capacities);
    start_all(*alone, in);
    const std::vector<Event> bound = run_to_end(*alone);
    ASSERT_EQ(bound.size(), in.flows.size());
    std::vector<double> shared_time(in.flows.size()), alone_time(in.flows.size());
    for (const Event& e : events) shared_time[e.flow] = e.time;
    for (const Event& e : bound) alone_time[e.flow] = e.time;
    for (size_t i = 0; i < in.flows.size(); ++i) {
      EXPECT_LE(alone_time[i], shared_time[i] * (1 + kRel)) << "flow " << i;
      // The no-contention time is exactly bytes over the narrowest per-member capacity.
      double r = kInfinity;
      for (const LinkUse& u : in.flows[i].path) r = std::min(r, in.capacities[u.link] / u.count);
      EXPECT_NEAR(alone_time[i], in.flows[i].bytes / r, kRel * std::max(1.0, alone_time[i])) << "flow " << i;
    }
  }
}

// Flows arriving at random times: each still completes exactly once, no earlier than its start
// plus its time alone, and bytes are conserved.
TEST_P(FlowNetworkProperty, StaggeredArrivalsComplete) {
  const bool weighted = GetParam();
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE(trace(seed, weighted));
    const Instance in = random_instance(seed, weighted, true);
    auto net = make_maxmin_network(in.capacities);
    std::map<uint32_t, size_t> live;  // flow id -> instance index
    std::vector<double> finish(in.flows.size(), -1.0);
    size_t next = 0;
    int guard = 0;
    while ((next < in.flows.size() || net->num_active() > 0) && ++guard < 100000) {
      const double t_done = net->next_completion();
      if (next < in.flows.size() && in.start[next] < t_done) {
        for (FlowId f : net->advance_to(in.start[next])) {
          finish[live.at(index(f))] = in.start[next];
          live.erase(index(f));
        }
        const FlowId f = net->start_flow(in.flows[next], in.start[next]);
        ASSERT_EQ(live.count(index(f)), 0u) << "id of a live flow handed out again";
        live[index(f)] = next++;
      } else {
        const std::vector<FlowId> done = net->advance_to(t_done);
        ASSERT_FALSE(done.empty());
        for (FlowId f : done) {
          finish[live.at(index(f))] = t_done;
          live.erase(index(f));
        }
      }
    }
    ASSERT_LT(guard, 100000);
    EXPECT_TRUE(live.empty());
    double expected_total = 0, total = 0;
    for (size_t i = 0; i < in.flows.size(); ++i) {
      ASSERT_GE(finish[i], 0.0) << "flow " << i << " never finished";
      double r = kInfinity;
      for (const LinkUse& u : in.flows[i].path) r = std::min(r, in.capacities[u.link] / u.count);
      const double earliest = in.start[i] + in.flows[i].bytes / r;
      EXPECT_GE(finish[i], earliest * (1 - kRel)) << "flow " << i;
      expected_total += in.flows[i].bytes * members(in.flows[i]);
    }
    for (double b : net->link_bytes()) total += b;
    EXPECT_NEAR(total, expected_total, kRel * std::max(1.0, expected_total));
  }
}

struct RestartRun {
  std::vector<Event> events;  ///< every completion as (time, instance index)
  uint64_t flows_reshared = 0;
  FlowNetwork::ReshareCounts counts;
};

// Runs `in` with staggered starts; a finished flow is given more bytes (restart) with a seeded
// probability.
RestartRun run_with_restarts(const Instance& in, Resharing resharing, uint64_t seed) {
  auto net = std::make_unique<FlowNetwork>(in.capacities, true, resharing);
  std::mt19937_64 rng(seed);
  std::map<uint32_t, size_t> live;
  std::vector<int> restarts(in.flows.size(), 0);
  std::vector<Event> events;
  size_t next = 0;
  int guard = 0;
  while ((next < in.flows.size() || net->num_active() > 0) && ++guard < 100000) {
    const double t_done = net->next_completion();
    const bool arrival = next < in.flows.size() && in.start[next] < t_done;
    const double t = arrival ? in.start[next] : t_done;
    for (FlowId f : net->advance_to(t)) {
      const size_t i = live.at(index(f));
      events.push_back({t, static_cast<uint32_t>(i)});
      if (restarts[i] < 2 && std::uniform_real_distribution<double>(0, 1)(rng) < 0.4) {
        restarts[i]++;
        net->restart_flow(f, std::uniform_real_distribution<double>(1.0, 500.0)(rng));
      } else {
        live.erase(index(f));
      }
    }
    if (arrival) {
      const FlowId f = net->start_flow(in.flows[next], t);
      live[index(f)] = next++;
    }
  }
  EXPECT_LT(guard, 100000);
  return {events, net->flows_reshared(), net->reshare_counts()};
}

void expect_same_completions(const std::vector<Event>& incremental, const std::vector<Event>& full) {
  EXPECT_EQ(incremental.size(), full.size());
  for (size_t k = 0; k < std::min(full.size(), incremental.size()); ++k) {
    EXPECT_EQ(incremental[k].flow, full[k].flow) << "completion " << k;
    EXPECT_REL(incremental[k].time, full[k].time);
  }
}

// Runs `in` both ways and expects the same completions; returns the flows each re-shared, and
// how the incremental run re-shared.
struct Comparison {
  uint64_t incremental_flows = 0, full_flows = 0;
  FlowNetwork::ReshareCounts counts;
};
Comparison expect_incremental_matches_full(const Instance& in, uint64_t seed) {
  const RestartRun incremental = run_with_restarts(in, Resharing::Incremental, seed);
  const RestartRun full = run_with_restarts(in, Resharing::Full, seed);
  expect_same_completions(incremental.events, full.events);
  // The reference keeps no groups and fills every change over the whole component.
  EXPECT_EQ(full.counts.level_moves + full.counts.affected_fills + full.counts.rebases, 0u);
  return {incremental.flows_reshared, full.flows_reshared, incremental.counts};
}

void add(FlowNetwork::ReshareCounts& total, const FlowNetwork::ReshareCounts& c) {
  total.level_moves += c.level_moves;
  total.affected_fills += c.affected_fills;
  total.component_fills += c.component_fills;
  total.unit_groups += c.unit_groups;
  total.rebases += c.rebases;
}

// Incremental re-sharing (only the component reached from the changed links) gives the same
// completions as re-sharing every flow on every change, and never re-shares more flows.
TEST_P(FlowNetworkProperty, IncrementalMatchesFullResharing) {
  const bool weighted = GetParam();
  uint64_t incremental_total = 0, full_total = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE(trace(seed, weighted));
    const Comparison c = expect_incremental_matches_full(random_instance(seed, weighted, true), seed);
    EXPECT_LE(c.incremental_flows, c.full_flows);
    incremental_total += c.incremental_flows;
    full_total += c.full_flows;
  }
  // Random paths of 1-4 links out of 5-30 often leave independent flow sets: the saving must show.
  EXPECT_LT(incremental_total, full_total);
}

// With bounds, max-min fairness reads: no link above capacity, and every flow either runs at its
// bound or has a saturated link on its path where no flow is faster.
TEST_P(FlowNetworkProperty, BoundedRatesAreFeasibleAndMaxMinFair) {
  const bool weighted = GetParam();
  int at_bound = 0, below_bound = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE(trace(seed, weighted));
    const Instance in = with_bounds(random_instance(seed, weighted, false), seed);
    auto net = make_maxmin_network(in.capacities);
    const std::vector<FlowId> ids = start_all(*net, in);
    const size_t num_links = in.capacities.size();
    std::vector<double> load(num_links, 0.0), fastest(num_links, 0.0), rate(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      rate[i] = net->rate(ids[i]);
      ASSERT_GT(rate[i], 0.0);
      ASSERT_LE(rate[i], in.flows[i].max_rate * (1 + kRel));
      for (const LinkUse& u : in.flows[i].path) {
        load[u.link] += rate[i] * u.count;
        fastest[u.link] = std::max(fastest[u.link], rate[i]);
      }
    }
    for (size_t l = 0; l < num_links; ++l) EXPECT_LE(load[l], in.capacities[l] * (1 + kRel)) << "link " << l;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (rate[i] >= in.flows[i].max_rate * (1 - kRel)) {
        at_bound++;
        continue;
      }
      if (in.flows[i].max_rate < kInfinity) below_bound++;
      bool has_bottleneck = false;
      for (const LinkUse& u : in.flows[i].path) {
        const bool saturated = load[u.link] >= in.capacities[u.link] * (1 - kRel);
        has_bottleneck = has_bottleneck || (saturated && rate[i] >= fastest[u.link] * (1 - kRel));
      }
      EXPECT_TRUE(has_bottleneck) << "flow " << i << " at rate " << rate[i];
    }
  }
  // The instances exercise both cases: flows held by their bound and bounded flows held by a link.
  EXPECT_GT(at_bound, 100);
  EXPECT_GT(below_bound, 100);
}

TEST_P(FlowNetworkProperty, BoundedIncrementalMatchesFullResharing) {
  const bool weighted = GetParam();
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE(trace(seed, weighted));
    (void)expect_incremental_matches_full(with_bounds(random_instance(seed, weighted, true), seed), seed);
  }
}

// The same on incasts, where one connected component holds every flow: the affected set must
// still give the full re-share's completions, and re-fill far fewer flows than it. Every way of
// re-sharing must have been taken, so that each is checked here: level moves of groups alone,
// affected fills with groups re-filled as one, and whole-component fills.
TEST_P(FlowNetworkProperty, IncastIncrementalMatchesFullResharing) {
  const bool weighted = GetParam();
  uint64_t incremental_total = 0, full_total = 0;
  FlowNetwork::ReshareCounts counts;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE(trace(seed, weighted));
    const Instance in = random_incast(seed, weighted);
    const Comparison c = expect_incremental_matches_full(in, seed);
    EXPECT_LE(c.incremental_flows, c.full_flows);
    incremental_total += c.incremental_flows;
    full_total += c.full_flows;
    add(counts, c.counts);
    add(counts, expect_incremental_matches_full(with_bounds(in, seed), seed).counts);
  }
  EXPECT_LT(incremental_total, full_total);
  EXPECT_GT(counts.level_moves, 1000u);
  EXPECT_GT(counts.affected_fills, 1000u);
  EXPECT_GT(counts.unit_groups, 1000u);
  EXPECT_GT(counts.component_fills, 0u);
}

// Flows that one link holds move on its clock; the clock's origin moves once it ran far past the
// transfers (a group that never empties: connections that always restart). Two connections
// restart for ever on one link, one with large transfers and one with small ones, while a third
// comes and goes (the level moves between a half and a third of the link): every completion
// must be the full re-share's, and the origin must have moved.
TEST(FlowNetwork, GroupClockMovesItsOriginAndCompletionsStayExact) {
  const std::vector<double> capacities{1000.0, 5000.0, 5000.0, 5000.0};
  auto run = [&](Resharing resharing) {
    FlowNetwork net(capacities, true, resharing);
    std::mt19937_64 rng(7);
    auto uniform = [&rng](double lo, double hi) {
      return std::uniform_real_distribution<double>(lo, hi)(rng);
    };
    std::vector<Event> events;
    const FlowId large = net.start_flow(on({0, 1}, 2e5), 0.0);
    const FlowId small = net.start_flow(on({0, 2}, 10.0), 0.0);
    net.start_flow(on({0, 3}, 5e3), 0.0);  // the third, which comes and goes
    bool third_running = true;
    double third_returns = 0;
    for (int guard = 0; guard < 400000; ++guard) {
      const double t_done = net.next_completion();
      const bool returns = !third_running && third_returns < t_done;
      const double t = returns ? third_returns : t_done;
      if (t > 2e5) break;
      for (FlowId f : net.advance_to(t)) {
        events.push_back({t, index(f) == index(large) ? 0u : index(f) == index(small) ? 1u : 2u});
        if (index(f) == index(large)) {
          net.restart_flow(f, uniform(1e5, 3e5));
        } else if (index(f) == index(small)) {
          net.restart_flow(f, uniform(100.0, 1000.0));
        } else {
          third_running = false;  // leaves for a while
          third_returns = t + uniform(1.0, 20.0);
        }
      }
      if (returns) {
        net.start_flow(on({0, 3}, uniform(1e3, 1e4)), t);
        third_running = true;
      }
    }
    return std::make_pair(events, net.reshare_counts());
  };
  const auto [incremental, counts] = run(Resharing::Incremental);
  const auto [full, full_counts] = run(Resharing::Full);
  ASSERT_GT(incremental.size(), 10000u);
  expect_same_completions(incremental, full);
  EXPECT_GT(counts.rebases, 10u);
  EXPECT_EQ(full_counts.rebases, 0u);
}

// An incast whose clients have room to spare: every change (a connection idles, or starts
// again) only moves the level of its server's group, with no filling, and the completions are
// those of re-filling every flow on every change.
TEST(FlowNetwork, IncastChurnOnlyMovesGroupLevels) {
  constexpr uint32_t kClients = 64, kServers = 8;
  std::vector<double> capacities(kClients, 100.0);  // client downlinks
  capacities.resize(kClients + kServers, 10.0);     // server uplinks: 8 clients each at most
  auto run = [&](Resharing resharing) {
    FlowNetwork net(capacities, true, resharing);
    std::mt19937_64 rng(3);
    auto uniform = [&rng](double lo, double hi) {
      return std::uniform_real_distribution<double>(lo, hi)(rng);
    };
    std::vector<Event> events;
    std::map<uint32_t, uint32_t> connection_of;  // flow id -> connection
    std::multimap<double, uint32_t> wakeups;     // time -> connection that starts (again)
    for (uint32_t c = 0; c < kClients * kServers; ++c) {
      if (uniform(0, 1) < 0.5) {
        connection_of[index(
            net.start_flow(on({c % kClients, kClients + c / kClients}, uniform(1, 10)), 0.0))] = c;
      } else {
        wakeups.emplace(uniform(0.0, 5.0), c);
      }
    }
    for (int completions = 0; completions < 20000;) {
      const double t_done = net.next_completion();
      const bool wake = !wakeups.empty() && wakeups.begin()->first < t_done;
      const double t = wake ? wakeups.begin()->first : t_done;
      for (FlowId f : net.advance_to(t)) {
        const uint32_t c = connection_of.at(index(f));
        events.push_back({t, c});
        ++completions;
        if (uniform(0, 1) < 0.7) {
          net.restart_flow(f, uniform(1, 10));
        } else {
          connection_of.erase(index(f));
          wakeups.emplace(t + uniform(0.1, 2.0), c);
        }
      }
      if (wake) {
        const uint32_t c = wakeups.begin()->second;
        wakeups.erase(wakeups.begin());
        connection_of[index(net.start_flow(on({c % kClients, kClients + c / kClients}, uniform(1, 10)), t))] =
            c;
      }
    }
    return std::make_pair(events, net.reshare_counts());
  };
  const auto [incremental, counts] = run(Resharing::Incremental);
  const auto [full, full_counts] = run(Resharing::Full);
  expect_same_completions(incremental, full);
  const uint64_t reshares = counts.level_moves + counts.affected_fills + counts.component_fills;
  EXPECT_GT(counts.level_moves, 0.95 * static_cast<double>(reshares))
      << counts.affected_fills << " affected fills, " << counts.component_fills << " component fills";
  EXPECT_EQ(full_counts.level_moves, 0u);
}

INSTANTIATE_TEST_SUITE_P(Plain, FlowNetworkProperty, ::testing::Values(false));
INSTANTIATE_TEST_SUITE_P(Weighted, FlowNetworkProperty, ::testing::Values(true));

}  // namespace flow_network_test
}  // namespace
}  // namespace stepcast::net
