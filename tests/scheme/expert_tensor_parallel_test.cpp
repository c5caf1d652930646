// Expert-tensor parallelism (training.parallel.expert_tensor, ETP) and Megatron's parallel
// folding: the expert layout folded over each stage's t c d ranks (ETP consecutive ranks share
// each expert's weights, e such blocks form an expert group), worked out by hand on small
// layouts; the stage programs' all-to-alls of each rank's sequence-parallel tokens and the
// expert-tensor gathers and reduce-scatters around the experts; the experts' weights split over
// ETP instead of t; how the experts are split changing nothing on a free fabric; and the fast path
// equal to the full engine with ETP.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "moe_fixtures.hpp"
#include "scheme/stage_programs.hpp"
#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/scheme/rank_layout.hpp"
#include "stepcast/scheme/validate.hpp"

namespace stepcast::scheme {
namespace {
namespace expert_tensor_parallel_test {  // this file's own names: test files are compiled several to a unit

using workload::Workload;

using Groups = std::vector<std::vector<int>>;

ParallelConfig layout_of(int t, int e, int etp, int p = 1) {
  ParallelConfig par;
  par.tensor = t;
  par.expert = e;
  par.expert_tensor = etp;
  par.pipeline = p;
  return par;
}

/// Every rank of every stage in exactly one group of `d`, each group as group() says.
void expect_partition(const RankLayout& layout, ParallelDimension d) {
  std::vector<int> seen(static_cast<size_t>(layout.workers()), 0);
  for (int s = 0; s < layout.size(ParallelDimension::Pipeline); ++s) {
    for (const std::vector<int>& g : layout.groups(d, s)) {
      EXPECT_EQ(static_cast<int>(g.size()), layout.size(d)) << to_string(d);
      for (int r : g) {
        ++seen[static_cast<size_t>(r)];
        EXPECT_EQ(layout.coordinates(r)[ParallelDimension::Pipeline], s) << "rank " << r << " off its stage";
        EXPECT_EQ(layout.group(d, r), g) << to_string(d) << " rank " << r;
      }
    }
  }
  EXPECT_EQ(seen, std::vector<int>(static_cast<size_t>(layout.workers()), 1)) << to_string(d);
}

TEST(RankLayout, ExpertLayoutFoldsOverTheStageRanksTensorFastest) {
  // t 2, d 4 on 8 GPUs, tp-cp-dp-pp: rank r has tensor coordinate r % 2 and data coordinate r / 2,
  // so the fold (tensor fastest, then the place in the gradient group) is 0, 1, ..., 7.
  {
    // ETP 1: whole experts, expert groups of 4 consecutive ranks spanning the tensor groups.
    const RankLayout layout(layout_of(2, 4, 1), 8);
    EXPECT_EQ(layout.size(ParallelDimension::ExpertTensor), 1);
    EXPECT_EQ(layout.size(ParallelDimension::ExpertData), 2);
    EXPECT_EQ(layout.groups(ParallelDimension::Expert, 0), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
    EXPECT_EQ(layout.groups(ParallelDimension::ExpertData, 0), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
    EXPECT_EQ(layout.group(ParallelDimension::ExpertTensor, 5), (std::vector<int>{5}));
    EXPECT_EQ(RankLayout::describe(layout_of(2, 4, 1), 8), "tp2 cp1 pp1 ep4 etp1 dp4");
  }
  {
    // ETP 2 = t: the expert-tensor groups are the tensor groups; e = 2 blocks of them.
    const RankLayout layout(layout_of(2, 2, 2), 8);
    EXPECT_EQ(layout.groups(ParallelDimension::ExpertTensor, 0), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
    EXPECT_EQ(layout.groups(ParallelDimension::Expert, 0), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
    EXPECT_EQ(layout.groups(ParallelDimension::ExpertData, 0), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
    EXPECT_EQ(RankLayout::describe(layout_of(2, 2, 2), 8), "tp2 cp1 pp1 ep2 dp4");
  }
  {
    // t 1 with ETP 2: expert-tensor groups of two data-parallel ranks.
    const RankLayout layout(layout_of(1, 2, 2), 8);
    EXPECT_EQ(layout.groups(ParallelDimension::ExpertTensor, 0), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
    EXPECT_EQ(layout.groups(ParallelDimension::Expert, 0), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  }
}

TEST(RankLayout, DefaultExpertTensorGroupsAreTheTensorGroupsAndEveryFoldPartitionsTheStage) {
  for (int t : {1, 2, 4}) {
    for (int p : {1, 2}) {
      for (int e : {1, 2, 4}) {
        for (int etp : {0, 1, 2, 4}) {
          const int workers = 16 * p;
          ParallelConfig par = layout_of(t, e, etp, p);
          const int stage = workers / p;
          if (stage % (e * par.expert_tensor_degree()) != 0 || (e == 1 && par.expert_tensor_degree() != t))
            continue;
          SCOPED_TRACE(RankLayout::describe(par, workers));
          const RankLayout layout(par, workers);
          EXPECT_EQ(layout.size(ParallelDimension::Expert) * layout.size(ParallelDimension::ExpertTensor) *
                        layout.size(ParallelDimension::ExpertData),
                    stage);
          for (ParallelDimension d :
               {ParallelDimension::Expert, ParallelDimension::ExpertTensor, ParallelDimension::ExpertData}) {
            expect_partition(layout, d);
          }
          if (etp == 0) {
            for (int r = 0; r < workers; ++r) {
              EXPECT_EQ(layout.group(ParallelDimension::ExpertTensor, r),
                        layout.group(ParallelDimension::Tensor, r));
            }
          }
        }
      }
    }
  }
}

Workload moe(int experts = 8, int blocks = 4, double imbalance = 1, int micro_batch = 1) {
  return testing::small_moe(testing::MoeShape{}, experts, blocks, imbalance, micro_batch);
}

SchemeConfig expert_layout(int t, int e, int etp, int64_t global_batch, int p = 1) {
  SchemeConfig s;
  s.parallel = layout_of(t, e, etp, p);
  s.parallel.global_batch = global_batch;
  return s;
}

struct MoeTraffic {
  std::map<std::pair<CommKind, ParallelDimension>, int> count;
  std::map<ParallelDimension, double> bytes;  ///< of one such collective (all equal)
  int tensor_in_moe = 0;                      ///< tensor-parallel collectives of MoE layers
  double expert_parameters = 0;
};

MoeTraffic traffic(const StageProgram& program, const std::vector<int>& moe_layers) {
  MoeTraffic t;
  for (size_t op = 0; op < program.ops.ops.size(); ++op) {
    if (!program.is_comm(static_cast<int>(op))) continue;
    const CommOp& c = program.comms[static_cast<size_t>(program.comm_of_op[op])];
    const bool in_moe =
        std::find(moe_layers.begin(), moe_layers.end(), program.ops.ops[op].layer) != moe_layers.end();
    if (c.dimension == ParallelDimension::Tensor && in_moe) ++t.tensor_in_moe;
    if (c.dimension == ParallelDimension::Expert || c.dimension == ParallelDimension::ExpertTensor) {
      ++t.count[{c.kind, c.dimension}];
      const auto [it, added] = t.bytes.emplace(c.dimension, c.bytes);
      EXPECT_DOUBLE_EQ(it->second, c.bytes) << program.ops.ops[op].name;
    }
  }
  for (const workload::Tensor& tensor : program.ops.tensors) {
    if (expert_of_tensor(tensor.name) >= 0) t.expert_parameters += tensor.bytes / 2;  // bf16
  }
  return t;
}

std::vector<int> moe_layers_of(const Workload& w) {
  std::vector<int> layers;
  for (const workload::Op& op : w.ops) {
    if (op.name.find(".moe") != std::string::npos &&
        std::find(layers.begin(), layers.end(), op.layer) == layers.end())
      layers.push_back(op.layer);
  }
  return layers;
}

TEST(StagePrograms, EachRankRoutesItsSequenceShareAndTheExpertTensorGroupGathersWhatItReceived) {
  // t 2, d 4 on 8 GPUs, micro-batches of 2 sequences of 512 tokens, hidden 1024, top-2, bf16.
  const Workload w = moe(8, 4, 1.0, 2);
  const double routed = 2.0 * 512 / 2 * 1024 * 2 * 2;  // b (s / t) h x top_k x 2 bytes
  const double per_expert = 3.0 * 1024 * 2048;         // SwiGLU, no biases
  const cluster::ClusterSpec c = testing::nvlink_nodes(8, 8);
  const std::vector<int> moe_layers = moe_layers_of(w);
  ASSERT_EQ(moe_layers.size(), 4u);
  const int per_pass = 4 * 3;  // MoE layers x micro-batches
  for (int etp : {1, 2}) {
    const int e = etp == 1 ? 4 : 2;
    const SchemeConfig s = expert_layout(2, e, etp, 4 * 2 * 3);
    validate(w, c, s);
    SCOPED_TRACE(RankLayout::describe(s.parallel, 8));
    const StageProgram program = build_stage_programs(w, c, s, RankLayout(s.parallel, 8)).front();
    const MoeTraffic t = traffic(program, moe_layers);
    // The MoE layer keeps the sequence split: no tensor-parallel collective around it.
    EXPECT_EQ(t.tensor_in_moe, 0);
    // Dispatch, combine and their backwards: each rank's own b s / t tokens x top_k.
    EXPECT_DOUBLE_EQ(t.bytes.at(ParallelDimension::Expert), routed);
    EXPECT_EQ((t.count.at({CommKind::ToExperts, ParallelDimension::Expert})), 2 * per_pass);
    EXPECT_EQ((t.count.at({CommKind::FromExperts, ParallelDimension::Expert})), 2 * per_pass);
    if (etp == 1) {
      EXPECT_EQ(t.bytes.count(ParallelDimension::ExpertTensor), 0u);
    } else {
      // Forward and backward: the received rows gathered over ETP before the experts, the
      // outputs reduce-scattered after.
      EXPECT_DOUBLE_EQ(t.bytes.at(ParallelDimension::ExpertTensor), etp * routed);
      EXPECT_EQ((t.count.at({CommKind::AllGather, ParallelDimension::ExpertTensor})), 2 * per_pass);
      EXPECT_EQ((t.count.at({CommKind::ReduceScatter, ParallelDimension::ExpertTensor})), 2 * per_pass);
    }
    // 8 / e experts of each of the 4 MoE layers, each split over ETP (not over t).
    EXPECT_DOUBLE_EQ(t.expert_parameters, 4.0 * (8 / e) * per_expert / etp);
  }
}

double mean_cycle(const SimulationResult& r) {
  double sum = 0;
  for (const WorkerTimes& t : r.workers) sum += t.cycle;
  return sum / static_cast<double>(r.workers.size());
}

SimulationResult run(const Workload& w, const cluster::ClusterSpec& c, const SchemeConfig& s,
                     bool fast = true) {
  SimulationOptions o;
  o.warmup_steps = 1;
  o.measure_steps = 2;
  o.fast_paths = fast;
  return simulate_steps(w, c, s, o);
}

TEST(ExpertTensorParallelism, HowTheExpertsAreSplitChangesNothingOnAFreeFabric) {
  // Balanced routing: a rank computes b s top_k / (t c) tokens' worth of expert FLOPs whether it
  // holds whole experts (ETP 1) or halves of twice the tokens (ETP 2); on links that take no
  // time the step is the same, to within the collectives' few nanoseconds and the gradient
  // buckets the layouts cut differently.
  const Workload w = moe(8);
  cluster::ClusterSpec c = testing::nvlink_nodes(8, 8);
  c.nic_bw = c.intra_node_bw = 1e15;
  c.latency = c.intra_node_latency = 0;
  c.gpu_memory_bw = 0;  // no optimizer step: it shrinks with the experts a rank holds
  // Each layout is slower than no expert parallelism by at most what its collectives on the path
  // take at 1e15 B/s (per MoE layer and pass: two all-to-alls of the routed rows, and with ETP an
  // all-gather and a reduce-scatter of ETP times them), twice over for the buckets.
  auto on_path = [](int t, int etp) {
    const double routed = 512.0 / t * 1024 * 2 * 2;  // b (s / t) h x top_k x 2 bytes
    return 2 * 4 /* MoE layers */ * 2 /* passes */ * (2 * routed + (etp > 1 ? 2 * etp * routed : 0)) / 1e15;
  };
  // t 2: whole experts over 4 ranks, halves over 2 x 2, and no expert parallelism (t-split).
  const double t2 = mean_cycle(run(w, c, expert_layout(2, 1, 0, 8)));
  for (auto [e, etp] : {std::pair{4, 1}, std::pair{2, 2}}) {
    const double step = mean_cycle(run(w, c, expert_layout(2, e, etp, 8)));
    EXPECT_NEAR(step, t2, on_path(2, etp)) << "e " << e << " etp " << etp;
  }
  // t 1: experts whole, in halves and in quarters over e 2.
  const double t1 = mean_cycle(run(w, c, expert_layout(1, 1, 0, 8)));
  for (int etp : {1, 2, 4}) {
    EXPECT_NEAR(mean_cycle(run(w, c, expert_layout(1, 2, etp, 8))), t1, on_path(1, etp)) << "etp " << etp;
  }
}

TEST(ExpertTensorParallelism, GatheringOverExpertTensorRanksCostsItsRingOnTheLinks) {
  // t 1, e 2 on 8 GPUs of one node: ETP 2 adds, per MoE layer and pass, an all-gather and a
  // reduce-scatter of 2 x the routed rows over two NVLink GPUs; the exposed expert time grows by
  // their rings, (ETP - 1) (a + 2 routed / (ETP B)) each, at least (they run alone in the forward)
  // and at most at half the link's bandwidth (in the backward the gradient all-reduce shares the
  // links with them).
  const Workload w = moe(8);
  cluster::ClusterSpec c = testing::nvlink_nodes(8, 8);
  c.gpu_memory_bw = 0;
  const double routed = 1.0 * 512 * 1024 * 2 * 2;  // b s h x top_k x 2 bytes, t 1
  const SimulationResult without = run(w, c, expert_layout(1, 2, 1, 8));
  const SimulationResult with = run(w, c, expert_layout(1, 2, 2, 8));
  auto expert_exposed = [](const SimulationResult& r) {
    double sum = 0;
    for (const WorkerTimes& t : r.workers) {
      sum += t.exposed[static_cast<size_t>(ParallelDimension::Expert)] +
             t.exposed[static_cast<size_t>(ParallelDimension::ExpertTensor)];
    }
    return sum / static_cast<double>(r.workers.size());
  };
  auto rings = [&](double bandwidth) {
    return 4 /* MoE layers */ * 4 /* AG + RS, forward and backward */ * (2e-6 + 2 * routed / (2 * bandwidth));
  };
  const double added = expert_exposed(with) - expert_exposed(without);
  EXPECT_GE(added, rings(450e9) * (1 - 1e-9));
  EXPECT_LE(added, rings(225e9));
}

TEST(ExpertTensorParallelism, FastPathEqualsTheFullEngineOnSeededLayouts) {
  int fast_taken = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](std::vector<int> v) {
      return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
    };
    const int t = pick({1, 2}), p = pick({1, 2}), d = pick({2, 4}), etp = pick({1, 2});
    const int e = pick({2, 4});
    if ((t * d) % (e * etp) != 0) continue;
    const int per_node = pick({4, 8});
    const double imbalance = pick({0, 1}) == 1 ? 1.0 : 1.5;
    const Workload w = moe(8, 4, imbalance);
    const SchemeConfig s = expert_layout(t, e, etp, static_cast<int64_t>(d) * 2 * p, p);
    const cluster::ClusterSpec c = testing::nvlink_nodes(t * p * d, per_node);
    SCOPED_TRACE(fmt::format("seed {}: {} on {} GPUs, {} per node, imbalance {}", seed,
                             RankLayout::describe(s.parallel, c.workers), c.workers, per_node, imbalance));
    validate(w, c, s);
    const SimulationResult fast = run(w, c, s, true);
    const SimulationResult full = run(w, c, s, false);
    if (fast.engine != SimulationEngine::Fast) continue;
    ++fast_taken;
    ASSERT_EQ(fast.workers.size(), full.workers.size());
    for (size_t i = 0; i < full.workers.size(); ++i) {
      EXPECT_NEAR(fast.workers[i].cycle, full.workers[i].cycle, 1e-9 * full.workers[i].cycle) << "rank " << i;
    }
    EXPECT_NEAR(fast.bytes_sent, full.bytes_sent, 1e-9 * full.bytes_sent);
  }
  EXPECT_GE(fast_taken, 4);
}

}  // namespace expert_tensor_parallel_test
}  // namespace
}  // namespace stepcast::scheme
