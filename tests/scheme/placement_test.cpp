// Where whole tensors go on parameter-server shards (training.ps.placement_strategy): each
// strategy's assignment on a workload solved by hand, the balance of round-robin against the
// sorted greedy rule on a model with one huge tensor, and the step time of a PS-bound job
// following the largest shard.
#include "stepcast/detail/scheme/placement.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "layered_workload.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/workload/workload.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::scheme {
namespace {
namespace placement_test {  // this file's own names: test files are compiled several to a unit

using test_workloads::layered;

using workload::Workload;

PsConfig whole(int shards, PsPlacementStrategy strategy) {
  PsConfig ps;
  ps.count = shards;
  ps.partition = PsPartition::Whole;
  ps.placement_strategy = strategy;
  return ps;
}

std::vector<int> shards_of(const Workload& w, const PsConfig& ps) {
  std::vector<int> shard;
  for (const Piece& p : place_parameters(w, ps)) {
    EXPECT_EQ(p.tensor, static_cast<int>(shard.size()));  // one piece per tensor, in tensor order
    shard.push_back(p.shard);
  }
  return shard;
}

double largest_shard(const Workload& w, const PsConfig& ps) {
  const std::vector<double> bytes = shard_bytes(place_parameters(w, ps), ps.count);
  return *std::max_element(bytes.begin(), bytes.end());
}

constexpr PsPlacementStrategy kStrategies[] = {
    PsPlacementStrategy::LeastLoaded, PsPlacementStrategy::GreedySorted, PsPlacementStrategy::RoundRobin};

TEST(PsPlacementStrategy, EachStrategyGivesItsKnownAssignment) {
  // Tensors of 1, 1, 1 and 3 MB in creation order on 2 shards.
  // least_loaded: 1 -> s0 (loads 1, 0), 1 -> s1 (1, 1), 1 -> s0 (tie, lowest; 2, 1), 3 -> s1 (2, 4).
  // greedy_sorted: 3 first -> s0 (3, 0), then the three 1s, each to the lighter s1 (3, 3).
  // round_robin: 0, 1, 0, 1 whatever the sizes (2, 4).
  const Workload w = layered({1e6, 1e6, 1e6, 3e6}, 1e-3, 1e-3);
  EXPECT_EQ(shards_of(w, whole(2, PsPlacementStrategy::LeastLoaded)), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(shards_of(w, whole(2, PsPlacementStrategy::GreedySorted)), (std::vector<int>{1, 1, 1, 0}));
  EXPECT_EQ(shards_of(w, whole(2, PsPlacementStrategy::RoundRobin)), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(largest_shard(w, whole(2, PsPlacementStrategy::GreedySorted)), 3e6);
  EXPECT_EQ(largest_shard(w, whole(2, PsPlacementStrategy::LeastLoaded)), 4e6);

  // 5, 1, 4, 2, 3 MB on 3 shards.
  // least_loaded: 5 -> s0 (5,0,0), 1 -> s1 (5,1,0), 4 -> s2 (5,1,4), 2 -> s1 (5,3,4), 3 -> s1 (5,6,4).
  // greedy_sorted over 5 (t0), 4 (t2), 3 (t4), 2 (t3), 1 (t1): t0 -> s0, t2 -> s1, t4 -> s2 (5,4,3),
  //   t3 -> s2 (5,4,5), t1 -> s1 (5,5,5): perfectly balanced.
  // round_robin: 0, 1, 2, 0, 1.
  const Workload five = layered({5e6, 1e6, 4e6, 2e6, 3e6}, 1e-3, 1e-3);
  EXPECT_EQ(shards_of(five, whole(3, PsPlacementStrategy::LeastLoaded)), (std::vector<int>{0, 1, 2, 1, 1}));
  EXPECT_EQ(shards_of(five, whole(3, PsPlacementStrategy::GreedySorted)), (std::vector<int>{0, 1, 1, 2, 2}));
  EXPECT_EQ(shards_of(five, whole(3, PsPlacementStrategy::RoundRobin)), (std::vector<int>{0, 1, 2, 0, 1}));
  EXPECT_EQ(shard_bytes(place_parameters(five, whole(3, PsPlacementStrategy::GreedySorted)), 3),
            (std::vector<double>{5e6, 5e6, 5e6}));

  // Split cuts every tensor over every shard whatever the strategy.
  for (PsPlacementStrategy strategy : kStrategies) {
    PsConfig split = whole(3, strategy);
    split.partition = PsPartition::Split;
    EXPECT_EQ(shard_bytes(place_parameters(five, split), 3), (std::vector<double>{5e6, 5e6, 5e6}));
  }
}

TEST(PsPlacementStrategy, RoundRobinIsNoBetterBalancedThanSortedGreedyWithOneHugeTensor) {
  // VGG-16: fc6 holds 411 MB of its 553 MB. The sorted greedy rule gives fc6 a shard of its own
  // and spreads the rest, which is optimal once fc6 outweighs the rest's share; round-robin (and
  // least-loaded in creation order) can only put more beside it.
  const Workload w = zoo::to_workload(zoo::get_model("vgg16"), {.batch_per_worker = 32, .step_time = 0.1});
  double huge = 0;
  for (const workload::Tensor& t : w.tensors) huge = std::max(huge, t.bytes);
  for (int p : {2, 3, 4, 8}) {
    SCOPED_TRACE("P = " + std::to_string(p));
    const double sorted = largest_shard(w, whole(p, PsPlacementStrategy::GreedySorted));
    EXPECT_GE(largest_shard(w, whole(p, PsPlacementStrategy::RoundRobin)), sorted);
    EXPECT_GE(largest_shard(w, whole(p, PsPlacementStrategy::LeastLoaded)), sorted);
    // No placement of whole tensors does better than max(largest tensor, total / P).
    EXPECT_NEAR(sorted, std::max(huge, w.parameter_bytes() / p), 1e-9 * sorted);
  }
  // Round-robin on ResNet-50 (many small tensors in creation order) is worse than the sorted rule too.
  const Workload resnet =
      zoo::to_workload(zoo::get_model("resnet50"), {.batch_per_worker = 32, .step_time = 0.1});
  EXPECT_GT(largest_shard(resnet, whole(4, PsPlacementStrategy::RoundRobin)),
            largest_shard(resnet, whole(4, PsPlacementStrategy::GreedySorted)));
}

TEST(PsPlacementStrategy, StepTimeFollowsTheLargestShardWhenPsBound) {
  // Compute ~8 us a step against ~tens of ms of transfers through two shard NICs of 1 GB/s:
  // a sync step is bound by the largest shard (2 N S_max / B, parameter_server_test.cpp), so a
  // placement with a larger largest shard is never faster, in any order policy and predictor.
  const Workload w = layered({3e6, 1e6, 2e6, 1e6, 1e6, 1e6, 4e6, 0.5e6}, 1e-6, 1e-6);
  cluster::ClusterSpec spec;
  spec.workers = 4;
  spec.nic_bw = 1e9;
  spec.latency = 1e-6;
  for (PsOrder order : {PsOrder::Fifo, PsOrder::Random}) {
    for (predict::Predictor predictor :
         {predict::Predictor::Fine, predict::Predictor::Coarse, predict::Predictor::Analytic}) {
      SCOPED_TRACE(std::string(order == PsOrder::Fifo ? "fifo, " : "random, ") +
                   predict::to_string(predictor));
      std::vector<std::pair<double, double>> load_and_step;
      for (PsPlacementStrategy strategy : kStrategies) {
        SchemeConfig scheme;
        scheme.scheme = Scheme::ParameterServer;
        scheme.ps = whole(2, strategy);
        scheme.ps.order = order;
        const predict::Result r = predict::predict(
            w, spec, scheme, {.predictor = predictor, .warmup_steps = 1, .measure_steps = 3});
        load_and_step.emplace_back(largest_shard(w, scheme.ps), r.step_time);
      }
      std::sort(load_and_step.begin(), load_and_step.end());
      // The strategies differ here: 7 MB (sorted) < 8 MB (least-loaded) < 10 MB (round-robin).
      EXPECT_LT(load_and_step.front().first, load_and_step.back().first);
      for (size_t i = 1; i < load_and_step.size(); ++i) {
        EXPECT_GE(load_and_step[i].second, load_and_step[i - 1].second * (1 - 1e-9))
            << "largest shard " << load_and_step[i].first << " B vs " << load_and_step[i - 1].first << " B";
      }
      // Strictly slower with the largest shard, since the step is all transfer.
      EXPECT_GT(load_and_step.back().second, 1.1 * load_and_step.front().second);
    }
  }
}

// P3's slicing (training.ps.slice_size): each piece becomes ceil(bytes / slice) equal slices on
// its shard, adjacent and in order, so the bytes on each shard are unchanged. 10 MB with 4 MB
// slices: 3 slices of 3.33 MB; 4 MB: not cut; 1 MB: one slice.
TEST(PsSlicing, PiecesBecomeEqualSlicesOnTheirShard) {
  const Workload w = layered({10e6, 4e6, 1e6}, 1e-3, 1e-3);
  PsConfig ps = whole(2, PsPlacementStrategy::RoundRobin);
  const std::vector<Piece> plain = place_parameters(w, ps);
  ps.slice_bytes = 4e6;
  const std::vector<Piece> sliced = place_parameters(w, ps);
  ASSERT_EQ(sliced.size(), 5u);
  EXPECT_EQ(count_pieces(w, ps), 5.0);
  const std::vector<int> tensor{0, 0, 0, 1, 2};
  for (std::size_t i = 0; i < sliced.size(); ++i) {
    EXPECT_EQ(sliced[i].tensor, tensor[i]) << i;
    EXPECT_EQ(sliced[i].shard, plain[static_cast<std::size_t>(tensor[i])].shard) << i;
    EXPECT_LE(sliced[i].bytes, ps.slice_bytes) << i;
  }
  EXPECT_DOUBLE_EQ(sliced[0].bytes, 10e6 / 3);
  EXPECT_EQ(shard_bytes(sliced, 2), shard_bytes(plain, 2));
  // Split partition: each shard's part of each tensor is sliced on its own.
  ps.partition = PsPartition::Split;
  ps.slice_bytes = 1e6;
  const std::vector<Piece> split = place_parameters(w, ps);
  EXPECT_EQ(split.size(), static_cast<std::size_t>(count_pieces(w, ps)));
  EXPECT_EQ(split.size(), 2u * 5 + 2u * 2 + 2u * 1);  // 5 MB -> 5, 2 MB -> 2, 0.5 MB -> 1 per shard
  EXPECT_EQ(shard_bytes(split, 2), (std::vector<double>{7.5e6, 7.5e6}));
}

}  // namespace placement_test
}  // namespace
}  // namespace stepcast::scheme
