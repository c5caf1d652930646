// cluster.placement (issue 11): a job a scheduler spread unevenly over its nodes, [1, 1, 3, 4]
// GPUs in node order. An even placement written out equals workers_per_node exactly, in every
// scheme and predictor; moving a GPU to another node moves its traffic onto that node's NIC; the
// busiest node (most GPUs on one NIC) bounds a NIC-bound step; the scenario key and its errors.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/error.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/scheme/validate.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::cluster {
namespace {
namespace uneven_placement_test {  // this file's own names: test files are compiled several to a unit

using scheme::AllReduceAlgorithm;
using scheme::Scheme;
using scheme::SchemeConfig;

workload::Workload resnet(double step_time = 0.1) {
  return zoo::to_workload(zoo::get_model("resnet50"), {.batch_per_worker = 32, .step_time = step_time});
}

ClusterSpec nodes(std::vector<int> placement, int slots) {
  ClusterSpec spec;
  spec.workers = std::accumulate(placement.begin(), placement.end(), 0);
  spec.workers_per_node = slots;
  spec.placement = std::move(placement);
  spec.nic_bw = 3.125e9;  // 25 Gbps
  spec.intra_node_bw = 100e9;
  spec.nics_per_node = 1;
  return spec;
}

std::vector<SchemeConfig> schemes() {
  std::vector<SchemeConfig> out;
  for (AllReduceAlgorithm a : {AllReduceAlgorithm::Ring, AllReduceAlgorithm::Tree,
                               AllReduceAlgorithm::Hierarchical, AllReduceAlgorithm::HalvingDoubling}) {
    SchemeConfig s;
    s.scheme = Scheme::AllReduce;
    s.allreduce.algorithm = a;
    out.push_back(s);
  }
  for (bool aggregate : {false, true}) {
    SchemeConfig s;
    s.scheme = Scheme::ParameterServer;
    s.ps.count = 2;
    s.ps.order = scheme::PsOrder::Random;
    s.ps.local_aggregation = aggregate;
    out.push_back(s);
  }
  SchemeConfig fsdp;
  fsdp.scheme = Scheme::Fsdp;
  out.push_back(fsdp);
  fsdp.fsdp.sharding = scheme::FsdpSharding::Hybrid;
  out.push_back(fsdp);
  return out;
}

TEST(UnevenPlacement, AnEvenPlacementWrittenOutEqualsWorkersPerNode) {
  const workload::Workload w = resnet();
  ClusterSpec even;
  even.workers = 8;
  even.workers_per_node = 4;
  even.nic_bw = 3.125e9;
  even.intra_node_bw = 100e9;
  const ClusterSpec listed = nodes({4, 4}, 4);
  for (const SchemeConfig& s : schemes()) {
    for (predict::Predictor p :
         {predict::Predictor::Fine, predict::Predictor::Coarse, predict::Predictor::Analytic}) {
      const predict::Options options{.predictor = p, .warmup_steps = 1, .measure_steps = 2, .links_kept = 0};
      const predict::Result a = predict::predict(w, even, s, options);
      const predict::Result b = predict::predict(w, listed, s, options);
      EXPECT_EQ(a, b) << "scheme " << static_cast<int>(s.scheme) << " algorithm "
                      << static_cast<int>(s.allreduce.algorithm) << " " << to_string(p);
    }
  }
  // A partly filled last node, written out.
  ClusterSpec ragged = even;
  ragged.workers = 7;
  const ClusterSpec ragged_listed = nodes({4, 3}, 4);
  SchemeConfig ring;
  ring.scheme = Scheme::AllReduce;
  EXPECT_EQ(predict::predict(w, ragged, ring, {.warmup_steps = 1, .measure_steps = 2}),
            predict::predict(w, ragged_listed, ring, {.warmup_steps = 1, .measure_steps = 2}));
}

double nic_bytes(const predict::Result& r) {
  double bytes = 0;
  for (const sim::LinkLoad& l : r.links) {
    if (l.name.find(".nic") != std::string::npos && l.name.find(".up") != std::string::npos) bytes += l.bytes;
  }
  return bytes;
}

TEST(UnevenPlacement, MovingAGpuToAThirdNodeAddsItsNicTraffic) {
  // A ring over 8 GPUs crosses the NICs once per node boundary in each direction: 2 nodes, 2
  // crossings; 3 nodes, 3 crossings, each moving the same 2 (N-1)/N S per step.
  const workload::Workload w = resnet();
  SchemeConfig ring;
  ring.scheme = Scheme::AllReduce;
  const predict::Options options{.warmup_steps = 1, .measure_steps = 2, .links_kept = 0};
  const predict::Result two = predict::predict(w, nodes({4, 4}, 4), ring, options);
  const predict::Result three = predict::predict(w, nodes({4, 3, 1}, 4), ring, options);
  ASSERT_GT(nic_bytes(two), 0);
  EXPECT_NEAR(nic_bytes(three) / nic_bytes(two), 3.0 / 2.0, 1e-9);
  // (Each NIC still carries one ring each way, so the ring's step does not change.)
  // A parameter server's workers each talk to the servers through their node's NIC: the bytes
  // are the same wherever the GPUs sit, the NIC they share is not. One step counted from time 0;
  // within 1%: the next step's first pulls, which start as the run ends, are counted in part.
  SchemeConfig ps;
  ps.scheme = Scheme::ParameterServer;
  ps.ps.count = 2;
  const predict::Options whole_run{.warmup_steps = 0, .measure_steps = 1, .links_kept = 0};
  const predict::Result ps_two = predict::predict(w, nodes({4, 4}, 4), ps, whole_run);
  const predict::Result ps_three = predict::predict(w, nodes({4, 3, 1}, 4), ps, whole_run);
  EXPECT_NEAR(nic_bytes(ps_three), nic_bytes(ps_two), 0.01 * nic_bytes(ps_two));
  // With node-local aggregation each node sends one copy: a third node, a third copy.
  ps.ps.local_aggregation = true;
  const predict::Result agg_two = predict::predict(w, nodes({4, 4}, 4), ps, whole_run);
  const predict::Result agg_three = predict::predict(w, nodes({4, 3, 1}, 4), ps, whole_run);
  EXPECT_NEAR(nic_bytes(agg_three) / nic_bytes(agg_two), 3.0 / 2.0, 0.01 * 1.5);
}

TEST(UnevenPlacement, TheBusiestNodeBoundsANicBoundStep) {
  // Parameter server with fast servers (16 shards): the workers' NIC, shared by a node's GPUs, is
  // the bottleneck. [1, 1, 3, 4] has a node of 4 GPUs on one NIC; [3, 3, 3] none above 3.
  const workload::Workload w = resnet(0.01);
  SchemeConfig ps;
  ps.scheme = Scheme::ParameterServer;
  ps.ps.count = 16;
  ps.ps.order = scheme::PsOrder::Fifo;
  const predict::Options options{.warmup_steps = 1, .measure_steps = 2};
  const predict::Result uneven = predict::predict(w, nodes({1, 1, 3, 4}, 4), ps, options);
  const predict::Result spread = predict::predict(w, nodes({3, 3, 3}, 4), ps, options);
  const predict::Result packed = predict::predict(w, nodes({4, 4, 1}, 4), ps, options);
  // Measured: 0.249 s, 0.178 s for [3, 3, 3] and 0.262 s for [4, 4, 1] (two nodes of 4).
  EXPECT_GT(uneven.step_time, spread.step_time * 1.2);
  EXPECT_NEAR(uneven.step_time, packed.step_time, 0.1 * packed.step_time);
  // The analytic bound is the busiest node's NIC: the same for both placements with a node of 4.
  const predict::Options analytic{.predictor = predict::Predictor::Analytic};
  EXPECT_EQ(predict::predict(w, nodes({1, 1, 3, 4}, 4), ps, analytic).step_time,
            predict::predict(w, nodes({4, 4, 1}, 4), ps, analytic).step_time);
}

TEST(UnevenPlacement, ScenarioKeyGivesTheWorkersAndNamesItsErrors) {
  constexpr const char* kText =
      "workload: {model: resnet50, step_time: 100ms}\n"
      "cluster:\n"
      "  placement: [1, 1, 3, 4]\n";
  const scenario::Scenario s = scenario::parse_scenario(kText, "p.yaml");
  EXPECT_EQ(s.cluster.placement, (std::vector<int>{1, 1, 3, 4}));
  EXPECT_EQ(s.cluster.workers, 9);
  EXPECT_EQ(s.cluster.workers_per_node, 4);
  EXPECT_EQ(s.cluster.num_worker_nodes(), 4);
  bool echoed = false;
  for (const scenario::ResolvedKey& k : scenario::resolved_keys(s)) {
    if (k.key == "cluster.placement") echoed = k.value == "[1, 1, 3, 4]";
  }
  EXPECT_TRUE(echoed);
  // Back from --set, the same.
  EXPECT_EQ(scenario::parse_scenario(kText, "p.yaml", {"cluster.placement=[2, 2]"}).cluster.workers, 4);
  struct Bad {
    std::vector<std::string> sets;
    const char* key;
  };
  for (const Bad& bad :
       {Bad{{"cluster.workers=8"}, "cluster.workers"},
        Bad{{"cluster.workers_per_node=2"}, "cluster.placement"},
        Bad{{"cluster.placement=[1, 0, 2]"}, "cluster.placement"},
        Bad{{"cluster.placement=[1, x]"}, "cluster.placement"},
        Bad{{"training.scheme=fsdp", "training.fsdp.sharding=hybrid"}, "training.fsdp.shard_group"}}) {
    try {
      (void)scenario::parse_scenario(kText, "p.yaml", bad.sets);
      ADD_FAILURE() << bad.sets.front() << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.where().key, bad.key) << bad.sets.front() << ": " << e.what();
    }
  }
  // A worker sweep must keep to the placement's count.
  try {
    (void)scenario::parse_scenario(kText, "p.yaml", {}, scenario::Needs::Workload, {9, 16});
    ADD_FAILURE() << "--workers 16 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("16"), std::string::npos) << e.what();
  }
}

}  // namespace uneven_placement_test
}  // namespace
}  // namespace stepcast::cluster
