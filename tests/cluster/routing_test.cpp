// Routing over equal-cost paths (cluster.routing) and oversubscription as fewer uplinks
// (cluster.fat_tree.uplinks, .uplink_bandwidth). Expected values are closed forms derived in the
// comments: a permutation's rate over bundled uplinks, balls into bins for ECMP's hash, the
// capacity arithmetic k/2 x B = oversubscription x uplinks x uplink_bandwidth.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/net/network_model.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"

namespace stepcast::cluster {
namespace {
namespace routing_test {  // this file's own names: test files are compiled several to a unit

constexpr double kBw = 10e9;    // bytes/s of a NIC
constexpr double kBytes = 1e9;  // per flow

using Flows = std::vector<std::pair<Endpoint, Endpoint>>;

ClusterSpec leaf_spine(int nodes, int radix, double oversubscription, Routing routing) {
  ClusterSpec spec;
  spec.workers = nodes;
  spec.nic_bw = kBw;
  spec.latency = 0;
  spec.topology = Topology::FatTree;
  spec.fat_tree = {
      .levels = 2, .radix = radix, .oversubscription = oversubscription, .uplinks = 0, .uplink_bw = 0};
  spec.routing = routing;
  return spec;
}

/// When the last of `flows` (kBytes each, all starting at 0) ends under max-min sharing.
double makespan(const Cluster& c, const Flows& flows) {
  std::vector<double> capacities;
  for (size_t l = 0; l < c.links.size(); ++l) capacities.push_back(c.links[l].bw);
  std::unique_ptr<net::NetworkModel> network = net::make_maxmin_network(std::move(capacities));
  for (const auto& [from, to] : flows) {
    net::FlowSpec flow;
    for (uint32_t l : c.path(from, to).links) flow.path.push_back({l, 1});
    flow.bytes = kBytes;
    network->start_flow(flow, 0);
  }
  double t = 0;
  for (size_t done = 0; done < flows.size();) {
    t = network->next_completion();
    done += network->advance_to(t).size();
  }
  return t;
}

/// Node i sends to node (i + shift) % nodes: with shift = hosts per leaf, every flow leaves its
/// leaf and every leaf sends and receives as many flows as it has hosts.
Flows shift_permutation(int nodes, int shift) {
  Flows flows;
  for (int i = 0; i < nodes; ++i) flows.push_back({{i, 0}, {(i + shift) % nodes, 0}});
  return flows;
}

/// The fabric links leaving switch `s`, as (count, summed bandwidth).
std::pair<int, double> out_of(const Cluster& c, int s) {
  double sum = 0;
  for (uint32_t l : c.switch_out[static_cast<size_t>(s)]) sum += c.links[l].bw;
  return {static_cast<int>(c.switch_out[static_cast<size_t>(s)].size()), sum};
}

TEST(Oversubscription, UplinksKeepTheCapacityArithmetic) {
  // k/2 x B = oversubscription x uplinks x uplink_bandwidth, with full-speed uplinks whenever the
  // ratio divides k/2 (radix 16: 8 hosts per leaf).
  for (double r : {1.0, 2.0, 4.0, 8.0}) {
    const ClusterSpec spec = leaf_spine(32, 16, r, Routing::Ecmp);
    const FatTreeUplinks up = fat_tree_uplinks(spec);
    EXPECT_EQ(up.count, static_cast<int>(8 / r)) << r;
    EXPECT_EQ(up.bw, kBw) << r;
    // Built: leaf 0 has that many links up, of that total.
    const auto [links, total] = out_of(build_cluster(spec), 0);
    EXPECT_EQ(links, up.count);
    EXPECT_NEAR(8 * kBw / total, r, 1e-12 * r);
  }
  // 3:1 of 8 hosts: 3 uplinks (the nearest count), each at 8/9 of B, so the ratio stays 3.
  const FatTreeUplinks three = fat_tree_uplinks(leaf_spine(32, 16, 3, Routing::Ecmp));
  EXPECT_EQ(three.count, 3);
  EXPECT_NEAR(8 * kBw / (three.count * three.bw), 3, 1e-12);
  // Explicit uplinks at the NIC's speed; an explicit bandwidth gives the count the ratio needs.
  ClusterSpec spec = leaf_spine(32, 16, 1, Routing::Ecmp);
  spec.fat_tree.uplinks = 2;
  EXPECT_EQ(fat_tree_uplinks(spec).bw, kBw);
  spec.fat_tree.uplinks = 0;
  spec.fat_tree.oversubscription = 2;
  spec.fat_tree.uplink_bw = 2 * kBw;  // 8 x B / (2 x 2B) = 2:1 with 2 uplinks
  EXPECT_EQ(fat_tree_uplinks(spec).count, 2);
  // Three levels: fewer uplinks at the edge tier only; an aggregation switch keeps k/2 edge
  // links and k/2 core links (radix 8, 2:1: 2 aggregation switches per pod, 2 x 4 cores).
  ClusterSpec three_level = leaf_spine(40, 8, 2, Routing::Ecmp);
  three_level.fat_tree.levels = 3;
  const Cluster c = build_cluster(three_level);  // 40 nodes: 3 pods of 4 edges
  const int edges = 12, aggs = 6;
  EXPECT_EQ(c.num_switches, edges + aggs + 8);
  EXPECT_EQ(out_of(c, 0).first, 2);          // an edge switch: 2 uplinks
  EXPECT_EQ(out_of(c, edges).first, 4 + 4);  // an aggregation switch: 4 down, 4 up
  EXPECT_NEAR(4 * kBw / out_of(c, 0).second, 2, 1e-12);
}

TEST(Oversubscription, ARingCrossingTheCoreRunsAtFullSpeedOnFewerFullSpeedUplinks) {
  // The case: 100 MB over 32 GPUs on a 2:1 leaf-spine of radix 16 (4 leaves of 8). A ring
  // leaves each leaf once and enters each once, so no two of its flows can meet on an uplink or a
  // downlink: with full-speed uplinks it runs as on one switch, 2 (N-1) x S / (N B); the same 2:1
  // built as uplinks at B/2 (uplinks 8, uplink_bandwidth B/2) runs at B/2, twice as slow.
  const double bytes = 100e6;
  ClusterSpec spec = leaf_spine(32, 16, 2, Routing::Ecmp);
  const double closed = 2.0 * 31 * bytes / (32 * kBw);
  const double fewer = scheme::simulate_collective(spec, bytes, scheme::CollectiveOp::AllReduce,
                                                   scheme::AllReduceAlgorithm::Ring)
                           .time;
  EXPECT_NEAR(fewer, closed, 1e-9 * closed);
  for (Routing routing : {Routing::Ideal, Routing::Spray}) {
    spec.routing = routing;
    EXPECT_NEAR(scheme::simulate_collective(spec, bytes, scheme::CollectiveOp::AllReduce,
                                            scheme::AllReduceAlgorithm::Ring)
                    .time,
                closed, 1e-9 * closed)
        << name_of(routing);
  }
  spec.routing = Routing::Ecmp;
  spec.fat_tree = {.levels = 2, .radix = 16, .oversubscription = 2, .uplinks = 8, .uplink_bw = kBw / 2};
  const double slow = scheme::simulate_collective(spec, bytes, scheme::CollectiveOp::AllReduce,
                                                  scheme::AllReduceAlgorithm::Ring)
                          .time;
  EXPECT_NEAR(slow / closed, 2, 1e-9);
  // The same fabric written as a custom topology (4 leaves, 4 spines, full-speed links) gives
  // what the keys give.
  ClusterSpec custom = spec;
  custom.topology = Topology::Custom;
  custom.fat_tree = {};
  for (int l = 0; l < 4; ++l) custom.custom.switches.push_back("leaf" + std::to_string(l));
  for (int s = 0; s < 4; ++s) custom.custom.switches.push_back("spine" + std::to_string(s));
  for (int n = 0; n < 32; ++n)
    custom.custom.links.push_back({"node" + std::to_string(n), "leaf" + std::to_string(n / 8), kBw, 0});
  for (int l = 0; l < 4; ++l) {
    for (int s = 0; s < 4; ++s)
      custom.custom.links.push_back({"leaf" + std::to_string(l), "spine" + std::to_string(s), kBw, 0});
  }
  EXPECT_NEAR(scheme::simulate_collective(custom, bytes, scheme::CollectiveOp::AllReduce,
                                          scheme::AllReduceAlgorithm::Ring)
                  .time,
              fewer, 1e-9 * fewer);
}

TEST(Routing, IdealIsThePermutationClosedFormOnALeafSpine) {
  // 16 hosts, radix 8 (4 per leaf), each host sending to one on the next leaf: split evenly,
  // a leaf's h = 4 flows share its u uplinks of B, so each runs at min(B, u B / h).
  for (double r : {1.0, 2.0, 4.0}) {
    const int u = static_cast<int>(4 / r);
    const double expected = kBytes / std::min(kBw, u * kBw / 4);
    for (Routing routing : {Routing::Ideal, Routing::Spray}) {
      const Cluster c = build_cluster(leaf_spine(16, 8, r, routing));
      EXPECT_NEAR(makespan(c, shift_permutation(16, 4)), expected, 1e-9 * expected)
          << "oversubscription " << r << ", " << name_of(routing);
    }
  }
}

TEST(Routing, IdealIsThePermutationClosedFormOnAThreeLevelFatTree) {
  // Radix 4: 2 hosts per edge switch, 4 per pod, 16 hosts in 4 pods. Across pods (shift 4) a
  // flow is limited by its edge's u uplinks (2 flows) and its pod's u x 2 core links (4 flows):
  // min(B, u B / 2, 2 u B / 4). Inside a pod (host i to i ^ 2, the other edge switch) only the
  // edge's uplinks: min(B, u B / 2).
  for (double r : {1.0, 2.0}) {
    ClusterSpec spec = leaf_spine(16, 4, r, Routing::Ideal);
    spec.fat_tree.levels = 3;
    const Cluster c = build_cluster(spec);
    const int u = static_cast<int>(2 / r);
    const double across = kBytes / std::min(kBw, u * kBw / 2);
    EXPECT_NEAR(makespan(c, shift_permutation(16, 4)), across, 1e-9 * across) << r;
    Flows inside;
    for (int i = 0; i < 16; ++i) inside.push_back({{i, 0}, {i ^ 2, 0}});
    EXPECT_NEAR(makespan(c, inside), kBytes / std::min(kBw, u * kBw / 2), 1e-9 * across) << r;
    // The bundles carry the tiers' whole capacity: an edge's u x B up, a pod's u x 2 x B.
    EXPECT_NEAR(out_of(c, 0).second, u * kBw, 1e-6);
  }
}

/// The spine each flow's route crosses on a leaf-spine (its first fabric link's far end).
std::vector<int> spines_of(const Cluster& c, const Flows& flows) {
  std::vector<int> spines;
  for (const auto& [from, to] : flows) {
    for (uint32_t l : c.path(from, to).links) {
      if (c.links[l].from >= c.num_nodes && c.links[l].to >= c.num_nodes) {  // switch to switch
        spines.push_back(c.links[l].to);
        break;
      }
    }
  }
  return spines;
}

TEST(Routing, EcmpWithOneFlowPerPathAndAPerfectHashEqualsIdeal) {
  // u flows from leaf 0 to leaf 1, as many as the uplinks: where the seed's hash puts each on
  // its own spine (a perfect hash), every flow runs at B, as the even split gives; any other seed
  // makes a collision and is slower, never faster (ideal is the least makespan here).
  for (double r : {1.0, 2.0}) {
    const int u = static_cast<int>(4 / r);
    Flows flows;
    for (int i = 0; i < u; ++i) flows.push_back({{i, 0}, {4 + i, 0}});
    const double ideal = makespan(build_cluster(leaf_spine(8, 8, r, Routing::Ideal)), flows);
    EXPECT_NEAR(ideal, kBytes / kBw, 1e-9 * ideal);
    int perfect = 0;
    for (uint64_t seed = 1; seed <= 200; ++seed) {
      ClusterSpec spec = leaf_spine(8, 8, r, Routing::Ecmp);
      spec.routing_seed = seed;
      const Cluster c = build_cluster(spec);
      const std::vector<int> spines = spines_of(c, flows);
      const bool distinct = std::set<int>(spines.begin(), spines.end()).size() == spines.size();
      const double t = makespan(c, flows);
      if (distinct) {
        ++perfect;
        EXPECT_NEAR(t, ideal, 1e-9 * ideal) << "seed " << seed;
      } else {
        EXPECT_GT(t, 1.5 * ideal) << "seed " << seed;  // two flows on one uplink: B / 2 each
      }
    }
    EXPECT_GT(perfect, 0) << "no perfect hash among 200 seeds for " << u << " flows";
  }
}

TEST(Routing, EcmpCollisionsMatchBallsIntoBins) {
  // n flows hashed uniformly onto m = 4 uplinks (radix 8, leaf 0 to leaf 1; with two GPUs per
  // node, n = 8 flows of 4 node pairs, hashed per flow). Over seeds: occupied uplinks average
  // m (1 - (1 - 1/m)^n); pairs of flows sharing an uplink average C(n, 2) / m; the makespan
  // averages E[most flows on one uplink] x S / B, that expectation summed over all m^n
  // equally likely assignments.
  constexpr int m = 4, kSeeds = 3000;
  for (int gpus : {1, 2}) {
    const int n = 4 * gpus;
    Flows flows;
    for (int i = 0; i < 4; ++i) {
      for (int d = 0; d < gpus; ++d) flows.push_back({{i, d}, {4 + i, d}});
    }
    double expected_max = 0;
    int assignments = 1;
    for (int i = 0; i < n; ++i) assignments *= m;
    for (int a = 0; a < assignments; ++a) {
      int load[m] = {};
      for (int i = 0, x = a; i < n; ++i, x /= m) ++load[x % m];
      expected_max += *std::max_element(load, load + m);
    }
    expected_max /= assignments;
    const double expected_occupied = m * (1 - std::pow(1.0 - 1.0 / m, n));
    const double expected_pairs = n * (n - 1) / 2.0 / m;
    double occupied = 0, occupied2 = 0, pairs = 0, pairs2 = 0, slowest = 0, slowest2 = 0;
    for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
      ClusterSpec spec = leaf_spine(8 * gpus, 8, 1, Routing::Ecmp);
      spec.workers_per_node = gpus;
      spec.routing_seed = seed;
      const Cluster c = build_cluster(spec);
      const std::vector<int> spines = spines_of(c, flows);
      const double o = static_cast<double>(std::set<int>(spines.begin(), spines.end()).size());
      double p = 0;
      for (size_t i = 0; i < spines.size(); ++i) {
        for (size_t j = i + 1; j < spines.size(); ++j) p += spines[i] == spines[j] ? 1 : 0;
      }
      const double t = makespan(c, flows) * kBw / kBytes;  // most flows on one uplink
      occupied += o, occupied2 += o * o, pairs += p, pairs2 += p * p, slowest += t, slowest2 += t * t;
    }
    // Within 4 standard errors of the closed forms.
    auto check = [&](double sum, double sum2, double expected, const char* what) {
      const double mean = sum / kSeeds, sd = std::sqrt(std::max(0.0, sum2 / kSeeds - mean * mean));
      EXPECT_NEAR(mean, expected, 4 * sd / std::sqrt(kSeeds) + 1e-12) << what << ", n = " << n;
    };
    check(occupied, occupied2, expected_occupied, "occupied uplinks");
    check(pairs, pairs2, expected_pairs, "colliding pairs");
    check(slowest, slowest2, expected_max, "makespan in units of S / B");
  }
}

TEST(Routing, EcmpIsDeterministicPerSeedAndHashesEachFlow) {
  ClusterSpec spec = leaf_spine(16, 8, 1, Routing::Ecmp);
  spec.workers = 64;
  spec.workers_per_node = 4;  // 16 nodes of 4 GPUs, 4 leaves
  Flows flows;
  for (int d = 0; d < 4; ++d) flows.push_back({{0, d}, {4, d}});  // one node pair, four GPUs
  std::set<std::vector<int>> seen;
  bool split = false;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    spec.routing_seed = seed;
    const std::vector<int> first = spines_of(build_cluster(spec), flows);
    EXPECT_EQ(first, spines_of(build_cluster(spec), flows)) << "seed " << seed;  // same seed, same paths
    seen.insert(first);
    split |= std::set<int>(first.begin(), first.end()).size() > 1;
    const double a = scheme::simulate_collective(spec, 1e8, scheme::CollectiveOp::AllReduce,
                                                 scheme::AllReduceAlgorithm::Ring)
                         .time;
    EXPECT_EQ(a, scheme::simulate_collective(spec, 1e8, scheme::CollectiveOp::AllReduce,
                                             scheme::AllReduceAlgorithm::Ring)
                     .time)
        << "seed " << seed;
  }
  EXPECT_GT(seen.size(), 1u) << "the seed changes the paths";
  EXPECT_TRUE(split) << "flows of one node pair are hashed apart (per flow, not per pair)";
}

TEST(Routing, CollisionsCostTheSameOnTheFastPathAndTheEngineAndNeverBeatIdeal) {
  // Halving-doubling on 2:1 fat-trees sends every host of a leaf off the leaf in its later steps,
  // so ECMP's hash decides how many flows share an uplink. Each stage's flows are equal, so the
  // stage lasts max over links of (flows x S / capacity): a bundle's flows over its capacity is
  // the mean of its links', never above their maximum, so ideal is never slower than ecmp. The
  // fast path (a stage pattern solved once) and the full engine see the same paths and agree.
  const double bytes = 64e6;
  for (int levels : {2, 3}) {
    ClusterSpec spec = leaf_spine(32, levels == 2 ? 16 : 8, 2, Routing::Ideal);
    spec.fat_tree.levels = levels;
    const double ideal = scheme::simulate_collective(spec, bytes, scheme::CollectiveOp::AllReduce,
                                                     scheme::AllReduceAlgorithm::HalvingDoubling)
                             .time;
    spec.routing = Routing::Ecmp;
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      SCOPED_TRACE(std::to_string(levels) + " levels, seed " + std::to_string(seed));
      spec.routing_seed = seed;
      const scheme::CollectiveResult fast = scheme::simulate_collective(
          spec, bytes, scheme::CollectiveOp::AllReduce, scheme::AllReduceAlgorithm::HalvingDoubling,
          scheme::NetworkKind::MaxMin, true);
      const scheme::CollectiveResult full = scheme::simulate_collective(
          spec, bytes, scheme::CollectiveOp::AllReduce, scheme::AllReduceAlgorithm::HalvingDoubling,
          scheme::NetworkKind::MaxMin, false);
      EXPECT_NEAR(fast.time, full.time, 1e-9 * full.time);
      EXPECT_EQ(fast.max_link_flows, full.max_link_flows);
      EXPECT_GE(fast.time, ideal * (1 - 1e-9));
    }
  }
}

}  // namespace routing_test
}  // namespace
}  // namespace stepcast::cluster
