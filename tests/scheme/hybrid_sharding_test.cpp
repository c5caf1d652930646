// Hybrid sharding (HSDP: FSDP's HYBRID_SHARD, TorchTitan's dp_replicate x dp_shard) inside a
// parallel layout: the shard and replica groups against the rank layout worked by hand, the bytes
// each rank sends against the ring closed forms, a shard group of the whole data x context group
// equal to full sharding, and the fast path equal to the full engine on seeded layouts.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/fsdp_units.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/scheme/rank_layout.hpp"
#include "stepcast/scheme/validate.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::scheme {
namespace {
namespace hybrid_sharding_test {  // this file's own names: test files are compiled several to a unit

using workload::Workload;

SimulationResult simulate(const Workload& w, const cluster::ClusterSpec& c, const SchemeConfig& s,
                          bool fast) {
  validate(w, c, s);
  SimulationOptions o;
  o.warmup_steps = 1;
  o.measure_steps = 2;
  o.fast_paths = fast;
  return simulate_steps(w, c, s, o);
}

SchemeConfig hybrid(int shard_group) {
  SchemeConfig s;
  s.scheme = Scheme::Fsdp;
  s.fsdp.sharding = FsdpSharding::Hybrid;
  s.fsdp.shard_group = shard_group;
  return s;
}

TEST(HybridSharding, ShardAndReplicaGroupsAreWorkedByHand) {
  ParallelConfig par;
  par.tensor = 2;
  par.pipeline = 2;
  par.global_batch = 16;
  // 32 ranks in Megatron's order tp-cp-dp-pp: rank = x_t + 2 x_d + 16 x_p, d = 8. Rank 0's
  // gradient group is 0, 2, .., 14; shard groups of 4 are its first and last four members.
  const RankLayout layout(par, 32, 4);
  EXPECT_EQ(layout.data_group_size(), 4);
  EXPECT_EQ(layout.size(ParallelDimension::DataReplicate), 2);
  EXPECT_EQ(layout.data_group(0), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(layout.data_group(10), (std::vector<int>{8, 10, 12, 14}));
  EXPECT_EQ(layout.data_group(17), (std::vector<int>{17, 19, 21, 23}));
  EXPECT_EQ(layout.group(ParallelDimension::DataReplicate, 0), (std::vector<int>{0, 8}));
  EXPECT_EQ(layout.group(ParallelDimension::DataReplicate, 6), (std::vector<int>{6, 14}));
  EXPECT_EQ(layout.group(ParallelDimension::DataReplicate, 31), (std::vector<int>{23, 31}));
  std::vector<std::vector<int>> replicas;
  for (int x = 16; x < 24; ++x) replicas.push_back({x, x + 8});
  EXPECT_EQ(layout.groups(ParallelDimension::DataReplicate, 1), replicas);
  EXPECT_EQ(layout.data_groups(1),
            (std::vector<std::vector<int>>{
                {16, 18, 20, 22}, {17, 19, 21, 23}, {24, 26, 28, 30}, {25, 27, 29, 31}}));
  // Context parallelism joins the gradient group: with c = 2 rank 0's is 0, 2, 4, .., and a shard
  // group of 4 holds both context ranks of two data ranks.
  ParallelConfig with_context = par;
  with_context.context = 2;
  const RankLayout context_layout(with_context, 32, 4);
  EXPECT_EQ(context_layout.data_group(0), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(context_layout.group(ParallelDimension::DataReplicate, 2), (std::vector<int>{2, 10}));
  // Without hybrid sharding the data groups are the gradient groups and nothing replicates.
  const RankLayout whole(par, 32);
  EXPECT_EQ(whole.size(ParallelDimension::DataReplicate), 1);
  EXPECT_EQ(whole.data_groups(0), whole.gradient_groups(0));
  // The default shard group: the ranks of a data group in one node (0, 2, 4, 6 of 8 GPUs).
  SchemeConfig s = hybrid(0);
  s.parallel = par;
  EXPECT_EQ(hybrid_shard_ranks(s, 32, 8), 4);
  EXPECT_EQ(hybrid_shard_ranks(s, 32, 2), 1);
  s.fsdp.shard_group = 2;
  EXPECT_EQ(hybrid_shard_ranks(s, 32, 8), 2);
  s.fsdp.sharding = FsdpSharding::Full;
  EXPECT_EQ(hybrid_shard_ranks(s, 32, 8), 0);
}

TEST(HybridSharding, EachRankSendsTheRingClosedForms) {
  // Data parallelism alone (t = c = p = 1) over 8 ranks, one a node (every byte on a NIC), two
  // micro-batches of a step. Per micro-batch and unit of U bytes, a rank of a shard group of s
  // with r = 8 / s replicas sends (s - 1) / s U in each of the forward's and the backward's
  // all-gathers (full resharding gathers again) and in the reduce-scatter, then 2 (r - 1) / r of
  // its shard U / s in the all-reduce over the replicas.
  const Workload w =
      zoo::to_workload(zoo::get_model("gpt2"),
                       {.batch_per_worker = 2, .step_time = 0.2, .precision = workload::Precision::BF16});
  cluster::ClusterSpec c;
  c.workers = 8;
  c.workers_per_node = 1;
  c.nic_bw = 12.5e9;
  c.latency = 5e-6;
  double units = 0;
  for (const FsdpUnit& u : fsdp_units(w, SchemeConfig{}.fsdp.unit_blocks)) units += u.bytes;
  const int m = 2, steps = 2;
  for (int shard : {1, 2, 4, 8}) {
    SCOPED_TRACE(fmt::format("shard group {}", shard));
    SchemeConfig s = hybrid(shard);
    s.parallel.global_batch = static_cast<int64_t>(c.workers) * w.batch_per_worker * m;
    const double r = 8.0 / shard;
    const double per_unit = 3 * (shard - 1.0) / shard + 2 * (r - 1) / r / shard;
    const double expected = steps * m * c.workers * per_unit * units;
    for (bool fast : {true, false}) {
      const SimulationResult got = simulate(w, c, s, fast);
      EXPECT_NEAR(got.bytes_sent, expected, 1e-9 * expected) << (fast ? "fast path" : "full engine");
    }
  }
}

/// A seeded layout of a small decoder on nodes of 1-8 GPUs, under hybrid sharding with one of
/// the shard groups that divide its data x context group.
struct HybridLayout {
  Workload workload;
  cluster::ClusterSpec cluster;
  SchemeConfig scheme;
};
HybridLayout random_hybrid(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](std::vector<int> v) {
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  HybridLayout l;
  const int t = pick({1, 2}), c = pick({1, 2}), p = pick({1, 2}), d = pick({2, 3, 4});
  zoo::TransformerShape shape{.layers = 2 * p,
                              .hidden = 512,
                              .ffn_hidden = 1536,
                              .heads = 8,
                              .kv_heads = 4,
                              .vocab = 4000,
                              .seq_len = 1024};
  const zoo::ModelSpec model = zoo::make_transformer("random", "", shape);
  l.workload = zoo::to_workload(model, {.batch_per_worker = 1,
                                        .step_time = std::uniform_real_distribution<double>(0.01, 0.1)(rng),
                                        .precision = workload::Precision::BF16});
  std::vector<int> shards;
  for (int s = 1; s <= d * c; ++s) {
    if (d * c % s == 0) shards.push_back(s);
  }
  l.scheme = hybrid(pick(shards));
  l.scheme.fsdp.reshard_after_forward = pick({0, 1}) == 1;
  l.scheme.fsdp.prefetch = pick({0, 1});
  l.scheme.parallel.tensor = t;
  l.scheme.parallel.context = c;
  l.scheme.parallel.pipeline = p;
  l.scheme.parallel.global_batch = static_cast<int64_t>(d) * p * pick({1, 2});
  l.cluster.workers = t * c * p * d;
  l.cluster.workers_per_node = pick({1, 2, 4});
  l.cluster.nics_per_node = 1;
  l.cluster.nic_bw = pick({25, 100}) * 1.25e8;
  l.cluster.latency = 3e-6;
  l.cluster.intra_node_bw = 2e11;
  l.cluster.intra_node_latency = 1e-6;
  return l;
}

TEST(HybridSharding, ShardGroupsOfTheWholeDataGroupAreFullSharding) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    HybridLayout l = random_hybrid(seed);
    const int group = l.cluster.workers / (l.scheme.parallel.tensor * l.scheme.parallel.pipeline);
    l.scheme.fsdp.shard_group = group;  // d x c
    SchemeConfig full = l.scheme;
    full.fsdp.sharding = FsdpSharding::Full;
    SCOPED_TRACE(fmt::format("seed {}: {} on {} GPUs", seed,
                             RankLayout::describe(l.scheme.parallel, l.cluster.workers), l.cluster.workers));
    for (bool fast : {true, false}) {
      const SimulationResult a = simulate(l.workload, l.cluster, l.scheme, fast);
      const SimulationResult b = simulate(l.workload, l.cluster, full, fast);
      ASSERT_EQ(a.workers.size(), b.workers.size());
      for (size_t i = 0; i < a.workers.size(); ++i) EXPECT_EQ(a.workers[i].cycle, b.workers[i].cycle);
      EXPECT_EQ(a.bytes_sent, b.bytes_sent);
    }
  }
}

TEST(HybridSharding, FastPathEqualsTheFullEngineOnRandomLayouts) {
  int fast_taken = 0;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    const HybridLayout l = random_hybrid(seed);
    SCOPED_TRACE(fmt::format("seed {}: {} on {} GPUs, {} a node, shard group {}", seed,
                             RankLayout::describe(l.scheme.parallel, l.cluster.workers), l.cluster.workers,
                             l.cluster.workers_per_node, l.scheme.fsdp.shard_group));
    const SimulationResult fast = simulate(l.workload, l.cluster, l.scheme, true);
    const SimulationResult full = simulate(l.workload, l.cluster, l.scheme, false);
    ASSERT_EQ(fast.workers.size(), full.workers.size());
    if (fast.engine != SimulationEngine::Fast) continue;  // groups laid unevenly: every rank ran
    ++fast_taken;
    for (size_t i = 0; i < fast.workers.size(); ++i) {
      EXPECT_NEAR(fast.workers[i].cycle, full.workers[i].cycle, 1e-9 * full.workers[i].cycle)
          << "worker " << i;
    }
    EXPECT_NEAR(fast.bytes_sent, full.bytes_sent, 1e-9 * full.bytes_sent);
  }
  EXPECT_GE(fast_taken, 12);  // the comparison ran on most of them
}

}  // namespace hybrid_sharding_test
}  // namespace
}  // namespace stepcast::scheme
