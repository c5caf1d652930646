// The composed engine (tensor, context and pipeline parallelism with micro-batches): the rank
// layout against Megatron's rule, the schedules' orders, and the step against closed forms with
// no communication (GPipe and 1F1B (m + p - 1)(F + B), interleaved (m + (p - 1) / v)(F + B),
// ZB-H1 m (F + B + W) + (p - 1)(F + B - W)), the stage programs' tensor-parallel bytes against
// the closed forms of all-reduce and reduce-scatter + all-gather, plain data parallelism (t = p =
// c = 1) equal to today's DDP and ZeRO-1 steps, and the fast path equal to the full engine on
// seeded random layouts.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "scheme/stage_programs.hpp"
#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/scheme/rank_layout.hpp"
#include "stepcast/scheme/validate.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::scheme {
namespace {
namespace composed_test {  // this file's own names: test files are compiled several to a unit

using workload::Workload;

bool close(double a, double b, double tolerance) {
  return std::fabs(a - b) <= tolerance * std::max({std::fabs(a), std::fabs(b), 1e-30});
}

/// A decoder's one-micro-batch workload whose blocks all take `forward` (attention and MLP half
/// each) and `backward`, and whose embedding and head take no time, so that pipeline stages of
/// equal block counts are equal: what the closed forms assume.
Workload even_decoder(int blocks, double forward, double backward, bool mlp_only = false) {
  // Tiny activations: a stage's message of 64 bytes takes 6.4e-14 s on the links of fast_links.
  zoo::TransformerShape shape{.layers = blocks, .hidden = 8, .ffn_hidden = 32, .heads = 2, .kv_heads = 2,
                              .vocab = 16, .seq_len = 4};
  const zoo::ModelSpec model = zoo::make_transformer("even", "test decoder", shape);
  Workload w = zoo::to_workload(model, {.batch_per_worker = 1, .step_time = 1, .precision = workload::Precision::BF16});
  const int layers = static_cast<int>(model.layers.size());
  for (workload::Op& op : w.ops) {
    const bool alone = op.layer == 0 || op.layer == layers - 1;
    const bool attention = op.layer % 2 == 1;  // layers: embeddings, then attention and MLP per block
    const double share = mlp_only ? (attention ? 0.0 : 1.0) : 0.5;
    op.duration = alone ? 0.0 : (op.kind == workload::OpKind::Forward ? forward : backward) * share;
  }
  return w;
}

/// Stages on nodes of their own joined by links so fast that a message takes under 1e-12 s.
cluster::ClusterSpec fast_links(int workers, int per_node = 1) {
  cluster::ClusterSpec c;
  c.workers = workers;
  c.workers_per_node = per_node;
  c.nic_bw = 1e15;
  c.latency = 0;
  c.intra_node_bw = 1e15;
  c.intra_node_latency = 0;
  return c;
}

SimulationResult run(const Workload& w, const cluster::ClusterSpec& c, const SchemeConfig& s, bool fast = true,
                     double cv = 0) {
  SimulationOptions o;
  o.warmup_steps = 1;
  o.measure_steps = 2;
  o.fast_paths = fast;
  o.compute_cv = cv;
  return simulate_steps(w, c, s, o);
}

double mean_cycle(const SimulationResult& r) {
  double sum = 0;
  for (const WorkerTimes& t : r.workers) sum += t.cycle;
  return sum / static_cast<double>(r.workers.size());
}

SchemeConfig pipeline(int p, int v, PipelineSchedule schedule, int64_t global_batch) {
  SchemeConfig s;
  s.parallel.pipeline = p;
  s.parallel.virtual_stages = v;
  s.parallel.global_batch = global_batch;
  s.pipeline.schedule = schedule;
  return s;
}

TEST(RankLayout, MegatronOrderPutsTensorFastestThenContextDataPipeline) {
  ParallelConfig par;
  par.tensor = 2;
  par.context = 3;
  par.pipeline = 2;
  const RankLayout layout(par, 24);  // d = 2
  EXPECT_EQ(layout.size(ParallelDimension::Data), 2);
  for (int r = 0; r < 24; ++r) {
    const RankCoordinates c = layout.coordinates(r);
    // rank = tp + t (cp + c (dp + d pp))
    EXPECT_EQ(r, c[ParallelDimension::Tensor] +
                     2 * (c[ParallelDimension::Context] + 3 * (c[ParallelDimension::Data] + 2 * c[ParallelDimension::Pipeline])));
    EXPECT_EQ(layout.rank(c), r);
  }
  EXPECT_EQ(layout.group(ParallelDimension::Tensor, 7), (std::vector<int>{6, 7}));
  EXPECT_EQ(layout.group(ParallelDimension::Context, 7), (std::vector<int>{7, 9, 11}));
  EXPECT_EQ(layout.group(ParallelDimension::Data, 7), (std::vector<int>{1, 7}));
  EXPECT_EQ(layout.group(ParallelDimension::Pipeline, 7), (std::vector<int>{7, 19}));
  // The gradient group: every rank with the same tensor and pipeline coordinates.
  EXPECT_EQ(layout.gradient_group(7), (std::vector<int>{1, 3, 5, 7, 9, 11}));
  EXPECT_EQ(layout.groups(ParallelDimension::Tensor, 1).size(), 6u);
  EXPECT_EQ(layout.gradient_groups(0).size(), 2u);
  EXPECT_EQ(RankLayout::describe(par, 24), "tp2 cp3 pp2 dp2");
}

TEST(RankLayout, AnotherOrderMovesTheStrides) {
  ParallelConfig par;
  par.tensor = 2;
  par.pipeline = 4;
  par.order = {ParallelDimension::Tensor, ParallelDimension::Pipeline, ParallelDimension::Data,
               ParallelDimension::Context};
  const RankLayout layout(par, 16);  // d = 2
  EXPECT_EQ(layout.group(ParallelDimension::Pipeline, 0), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(layout.group(ParallelDimension::Data, 0), (std::vector<int>{0, 8}));
}

TEST(PipelineSchedule, EveryPassOnceAndOneFOneBKeepsAtMostPInFlight) {
  for (PipelineSchedule schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB,
                                    PipelineSchedule::Interleaved}) {
    const int p = 4, m = 8;
    const int v = schedule == PipelineSchedule::Interleaved ? 2 : 1;
    for (int s = 0; s < p; ++s) {
      const std::vector<PipelinePass> order = schedule_order(schedule, p, v, m, s, /*group=*/0);
      ASSERT_EQ(order.size(), static_cast<size_t>(2 * m * v));
      std::map<std::tuple<int, int, int>, int> seen;
      int in_flight = 0, most = 0;
      for (const PipelinePass& pass : order) {
        seen[{static_cast<int>(pass.kind), pass.chunk, pass.micro_batch}]++;
        in_flight += pass.kind == PipelinePass::Kind::Forward ? 1 : -1;
        most = std::max(most, in_flight);
        if (pass.kind == PipelinePass::Kind::Backward) {
          // A backward follows its own forward on the stage.
          EXPECT_EQ(seen.count({static_cast<int>(PipelinePass::Kind::Forward), pass.chunk, pass.micro_batch}), 1u);
        }
      }
      EXPECT_EQ(seen.size(), static_cast<size_t>(2 * m * v));
      if (schedule == PipelineSchedule::OneFOneB) {
        EXPECT_EQ(most, std::min(p - s, m)) << "stage " << s;
      }
      if (schedule == PipelineSchedule::GPipe) {
        EXPECT_EQ(most, m);
      }
    }
  }
}

TEST(PipelineSchedule, InterleavedGroupsAreMegatronCoresValidGroups) {
  // g in [p, m], the last group m mod g of 0 or at least p; auto: the smallest such g.
  EXPECT_EQ(interleaved_group(0, 8, 16), 8);
  EXPECT_EQ(interleaved_group(0, 8, 21), 11);  // 21 = 11 + 10; 8, 9, 10 leave 5, 3, 1
  EXPECT_EQ(interleaved_group(0, 4, 6), 6);    // 6 mod 4 = 2, 6 mod 5 = 1
  EXPECT_EQ(interleaved_group(0, 4, 9), 5);    // 9 = 5 + 4
  EXPECT_EQ(interleaved_group(0, 8, 7), 0);    // fewer micro-batches than stages
  EXPECT_EQ(interleaved_group(13, 8, 21), 13);  // 21 = 13 + 8
  EXPECT_EQ(interleaved_group(8, 8, 21), 0);    // a last group of 5 < p
  EXPECT_EQ(interleaved_group(22, 8, 21), 0);   // more than m
  for (int p = 2; p <= 8; ++p) {
    for (int m = p; m <= 40; ++m) {
      const int g = interleaved_group(0, p, m);
      ASSERT_GE(g, p);
      ASSERT_LE(g, m);
      EXPECT_TRUE(m % g == 0 || m % g >= p) << "p " << p << " m " << m << " g " << g;
      if (m % p == 0) {
        EXPECT_EQ(g, p);
      }
    }
  }
}

TEST(PipelineSchedule, InterleavedForwardsFollowMegatronsScheduleTable) {
  // Megatron-core's schedules.py documents its table for PP2 N3 M5 with VP2: micro-batches
  // 0 1 2 0 1 2 3 4 3 4 through chunks 0 0 0 1 1 1 0 0 1 1.
  const std::vector<std::pair<int, int>> table{{0, 0}, {1, 0}, {2, 0}, {0, 1}, {1, 1},
                                               {2, 1}, {3, 0}, {4, 0}, {3, 1}, {4, 1}};
  for (int s = 0; s < 2; ++s) {
    std::vector<std::pair<int, int>> forwards;
    int in_flight = 0, most = 0;
    for (const PipelinePass& pass : schedule_order(PipelineSchedule::Interleaved, 2, 2, 5, s, 3)) {
      if (pass.kind == PipelinePass::Kind::Forward) forwards.emplace_back(pass.micro_batch, pass.chunk);
      in_flight += pass.kind == PipelinePass::Kind::Forward ? 1 : -1;
      most = std::max(most, in_flight);
    }
    EXPECT_EQ(forwards, table) << "stage " << s;
    // Warm-up: 2 (p - s - 1) + (v - 1) g forwards, then one more before the first backward.
    EXPECT_EQ(most, std::min(10, 2 * (2 - s - 1) + 3 + 1)) << "stage " << s;
  }
}

class ZeroCommunicationPipeline : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(ZeroCommunicationPipeline, GPipeAndOneFOneBTakeMPlusPMinusOneSlots) {
  const auto [p, m] = GetParam();
  const double F = 3e-3, B = 6e-3;  // per block
  const int blocks_per_stage = 2;
  const Workload w = even_decoder(p * blocks_per_stage, F, B);
  for (PipelineSchedule schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
    const SchemeConfig s = pipeline(p, 1, schedule, m);
    const double expected = (m + p - 1) * blocks_per_stage * (F + B);
    EXPECT_TRUE(close(mean_cycle(run(w, fast_links(p), s)), expected, 1e-9))
        << "p " << p << " m " << m << " " << static_cast<int>(schedule) << ": " << mean_cycle(run(w, fast_links(p), s))
        << " vs " << expected;
  }
}

TEST_P(ZeroCommunicationPipeline, InterleavedShrinksTheBubbleByV) {
  const auto [p, m] = GetParam();
  // m not a multiple of p: micro-batches in Megatron-core's groups (interleaved_group).
  const double F = 3e-3, B = 6e-3;
  for (int v : {2, 3}) {
    const Workload w = even_decoder(p * v, F, B);  // one block per chunk
    const SchemeConfig s = pipeline(p, v, PipelineSchedule::Interleaved, m);
    // Narayanan et al. 2021: (m + (p - 1) / v)(F + B) for a stage's whole F and B (v blocks).
    const double expected = (m + (p - 1.0) / v) * v * (F + B);
    EXPECT_TRUE(close(mean_cycle(run(w, fast_links(p), s)), expected, 1e-9))
        << "p " << p << " v " << v << " m " << m << ": " << mean_cycle(run(w, fast_links(p), s)) << " vs " << expected;
  }
}

TEST_P(ZeroCommunicationPipeline, ZeroBubbleH1FillsTheBubbleWithWeightGradients) {
  const auto [p, m] = GetParam();
  const double F = 4e-3, B = 8e-3;  // all in the MLPs: B and W half of the backward each, F = B = W
  const Workload w = even_decoder(p, F, B, true);
  const SchemeConfig s = pipeline(p, 1, PipelineSchedule::ZeroBubble, m);
  // Qi et al. 2023, ZB-H1: m (F + B + W) + (p - 1)(F + B - W). Every layer here splits its
  // backward in half (attention: its core is input gradient only, so B and W differ by layer).
  const SimulationResult r = run(w, fast_links(p), s);
  const StageProgram program = build_stage_programs(w, fast_links(p), s, RankLayout(s.parallel, p)).front();
  double b = 0, wgrad = 0;
  for (size_t op = 0; op < program.ops.ops.size(); ++op) {
    const workload::Op& o = program.ops.ops[op];
    if (o.kind != workload::OpKind::Backward || program.is_comm(static_cast<int>(op))) continue;
    (o.name.starts_with("W ") ? wgrad : b) += o.duration;
  }
  b /= m;
  wgrad /= m;
  const double expected = m * (F + b + wgrad) + (p - 1) * (F + b - wgrad);
  EXPECT_NEAR(b + wgrad, B, 1e-12);
  EXPECT_TRUE(close(mean_cycle(r), expected, 1e-9)) << mean_cycle(r) << " vs " << expected;
  // And it beats 1F1B by (p - 1) 2 W.
  const double one_f_one_b = (m + p - 1) * (F + B);
  EXPECT_TRUE(close(one_f_one_b - mean_cycle(r), (p - 1) * 2 * wgrad, 1e-9));
}

/// ZB-H1 under FSDP full, grad_op and hybrid: each unit's gradients are whole only after its
/// deferred W passes, so its reduce-scatter (and hybrid's all-reduce after it) waits for the last
/// of them, once per unit and micro-batch.
TEST(ZeroBubbleWithFsdp, EachUnitIsReducedOnceAfterItsLastWeightGradient) {
  const int p = 2, d = 2, m = 4;
  const Workload w = even_decoder(2 * p, 4e-3, 8e-3, true);
  for (FsdpSharding sharding : {FsdpSharding::Full, FsdpSharding::GradOp, FsdpSharding::Hybrid}) {
    SchemeConfig s = pipeline(p, 1, PipelineSchedule::ZeroBubble, static_cast<int64_t>(m) * d);
    s.scheme = Scheme::Fsdp;
    s.fsdp.sharding = sharding;
    s.fsdp.shard_group = sharding == FsdpSharding::Hybrid ? 1 : 0;  // hybrid: replicas only
    const cluster::ClusterSpec c = fast_links(p * d);
    validate(w, c, s);
    const RankLayout layout(s.parallel, c.workers, hybrid_shard_ranks(s, c.workers, c.workers_per_node));
    for (const StageProgram& program : build_stage_programs(w, c, s, layout)) {
      SCOPED_TRACE(fmt::format("sharding {}, stage {}", name_of(sharding), program.stage));
      const std::vector<workload::Op>& ops = program.ops.ops;
      // A unit is a block here (training.fsdp.unit 1); the embedding and the head are units alone.
      auto unit_of = [&](int layer) {
        const int block = program.ops.block_of_layer[static_cast<size_t>(layer)];
        return block >= 0 ? block : -1 - layer;
      };
      auto is_weight = [&](size_t op) {
        return !program.is_comm(static_cast<int>(op)) && ops[op].name.starts_with("W ");
      };
      std::map<std::pair<int, int>, int> reduced;  // (unit, micro-batch) -> reductions
      for (size_t op = 0; op < ops.size(); ++op) {
        if (!program.is_comm(static_cast<int>(op))) continue;
        const CommOp& comm = program.comms[static_cast<size_t>(program.comm_of_op[op])];
        const ParallelDimension first =
            sharding == FsdpSharding::Hybrid ? ParallelDimension::DataReplicate : ParallelDimension::Data;
        if (comm.kind == CommKind::AllGather || comm.dimension != first) continue;
        ASSERT_EQ(ops[op].deps.size(), 1u);
        const auto ready = static_cast<size_t>(ops[op].deps.front());
        const int mb = program.micro_batch_of_op[op], unit = unit_of(ops[ready].layer);
        EXPECT_EQ(program.micro_batch_of_op[ready], mb);
        ++reduced[{unit, mb}];
        // No W of the unit's layers in this micro-batch after the op it waits for (none at all
        // when it waits for a B: a unit whose layers have no weight gradient to defer).
        for (size_t later = is_weight(ready) ? ready + 1 : 0; later < ops.size(); ++later) {
          if (is_weight(later) && program.micro_batch_of_op[later] == mb && unit_of(ops[later].layer) == unit)
            ADD_FAILURE() << ops[op].name << " waits for " << ops[ready].name << ", not for "
                          << ops[later].name;
        }
      }
      // Each unit of the stage once per micro-batch: its block(s), and the embedding or head.
      EXPECT_EQ(reduced.size(), static_cast<size_t>(m * (2 + 1)));
      for (const auto& [key, count] : reduced) EXPECT_EQ(count, 1);
    }
  }
}

TEST_P(ZeroCommunicationPipeline, ZeroBubbleWithFsdpKeepsItsClosedForm) {
  // With free communication FSDP's gathers and reduce-scatters take no time, so ZB-H1 with full
  // sharding over d = 2 keeps m (F + B + W) + (p - 1)(F + B - W): the reduce-scatters after the
  // deferred W passes hold no compute up.
  const auto [p, m] = GetParam();
  const double F = 4e-3, B = 8e-3;
  const Workload w = even_decoder(p, F, B, true);
  SchemeConfig s = pipeline(p, 1, PipelineSchedule::ZeroBubble, 2 * m);
  s.scheme = Scheme::Fsdp;
  s.fsdp.sharding = FsdpSharding::Full;
  const cluster::ClusterSpec c = fast_links(2 * p);
  const double W = B / 2;  // every layer's backward split in half (ZeroBubbleH1FillsTheBubble...)
  const double expected = m * (F + B) + (p - 1) * (F + B / 2 - W);
  EXPECT_TRUE(close(mean_cycle(run(w, c, s)), expected, 1e-9))
      << mean_cycle(run(w, c, s)) << " vs " << expected;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ZeroCommunicationPipeline,
                         ::testing::Values(std::tuple{2, 2}, std::tuple{2, 5}, std::tuple{4, 4}, std::tuple{4, 8},
                                           std::tuple{4, 12}, std::tuple{8, 16}, std::tuple{4, 6}, std::tuple{4, 9},
                                           std::tuple{8, 21}));

TEST(StagePrograms, TensorBytesPerBlockAreTwoAllReducesOrTheirReduceScatterAndAllGatherEachWay) {
  const zoo::ModelSpec model = zoo::get_model("llama2-7b");
  const Workload w = zoo::to_workload(model, {.batch_per_worker = 2, .step_time = 1, .precision = workload::Precision::BF16});
  const workload::TransformerShape& shape = *model.transformer;
  const double S = 2.0 * static_cast<double>(shape.seq_len) * static_cast<double>(shape.hidden) * 2;  // b s h, bf16
  for (bool sequence : {false, true}) {
    SchemeConfig s;
    s.parallel.tensor = 4;
    s.parallel.sequence = sequence;
    cluster::ClusterSpec four;
    four.workers = 4;
    const StageProgram program = build_stage_programs(w, four, s, RankLayout(s.parallel, 4)).front();
    std::map<std::pair<CommKind, workload::OpKind>, int> count;
    for (size_t op = 0; op < program.ops.ops.size(); ++op) {
      if (!program.is_comm(static_cast<int>(op))) continue;
      const CommOp& c = program.comms[static_cast<size_t>(program.comm_of_op[op])];
      if (c.dimension != ParallelDimension::Tensor) continue;
      EXPECT_DOUBLE_EQ(c.bytes, S);
      count[{c.kind, program.ops.ops[op].kind}]++;
    }
    const int L = static_cast<int>(shape.layers);
    if (sequence) {
      // Per block and pass an all-gather before and a reduce-scatter after attention and MLP;
      // the embedding reduce-scatters its output, the head all-gathers its input.
      EXPECT_EQ((count[{CommKind::AllGather, workload::OpKind::Forward}]), 2 * L + 1);
      EXPECT_EQ((count[{CommKind::ReduceScatter, workload::OpKind::Forward}]), 2 * L + 1);
      EXPECT_EQ((count[{CommKind::AllGather, workload::OpKind::Backward}]), 2 * L + 1);
      EXPECT_EQ((count[{CommKind::ReduceScatter, workload::OpKind::Backward}]), 2 * L + 1);
    } else {
      EXPECT_EQ((count[{CommKind::AllReduce, workload::OpKind::Forward}]), 2 * L + 1);
      EXPECT_EQ((count[{CommKind::AllReduce, workload::OpKind::Backward}]), 2 * L + 1);
    }
  }
  // Per rank, a ring all-reduce of S bytes sends 2 (t - 1) / t S, a reduce-scatter and an
  // all-gather (t - 1) / t S each: the same bytes either way.
  cluster::ClusterSpec four;
  four.workers = 4;
  const cluster::Cluster c = cluster::build_cluster(four);
  auto sent = [&](CollectiveOp op) {
    const CollectivePlan plan = plan_group_ring(c, op, {{0, 1, 2, 3}});
    double fraction = 0;
    for (const Stage& st : plan.stages) fraction += st.fraction;
    return fraction;
  };
  EXPECT_DOUBLE_EQ(sent(CollectiveOp::AllReduce), 2 * 3.0 / 4);
  EXPECT_DOUBLE_EQ(sent(CollectiveOp::ReduceScatter) + sent(CollectiveOp::AllGather), 2 * 3.0 / 4);
}

TEST(StagePrograms, ScatterGatherSendsOneTthOfEachPipelineMessageAndGathersIt) {
  // Megatron-LM's scatter-gather of pipeline messages (training.pipeline.scatter_gather): without
  // sequence parallelism each tensor rank sends 1/t of the activation b s h and the receiving
  // stage all-gathers it over its tensor group, once per message received; with sequence
  // parallelism the key changes nothing (each rank sends its 1/t already).
  const zoo::ModelSpec model = zoo::get_model("llama2-7b");
  const Workload w = zoo::to_workload(
      model, {.batch_per_worker = 1, .step_time = 1, .precision = workload::Precision::BF16});
  const workload::TransformerShape& shape = *model.transformer;
  const double S = static_cast<double>(shape.seq_len) * static_cast<double>(shape.hidden) * 2;  // b s h, bf16
  const int t = 4, p = 2, m = 4;
  for (bool sequence : {false, true}) {
    for (bool scatter : {false, true}) {
      SCOPED_TRACE(fmt::format("sequence {}, scatter_gather {}", sequence, scatter));
      SchemeConfig s = pipeline(p, 1, PipelineSchedule::OneFOneB, m);
      s.parallel.tensor = t;
      s.parallel.sequence = sequence;
      s.pipeline.scatter_gather = scatter;
      const cluster::ClusterSpec c = fast_links(t * p, t);
      validate(w, c, s);
      const bool scattered = sequence || scatter;
      for (const StageProgram& program : build_stage_programs(w, c, s, RankLayout(s.parallel, c.workers))) {
        int messages = 0, gathers = 0;
        for (size_t op = 0; op < program.ops.ops.size(); ++op) {
          if (!program.is_comm(static_cast<int>(op))) continue;
          const CommOp& comm = program.comms[static_cast<size_t>(program.comm_of_op[op])];
          if (comm.dimension == ParallelDimension::Pipeline) {
            ++messages;
            EXPECT_DOUBLE_EQ(comm.bytes, scattered ? S / t : S);
          } else if (comm.dimension == ParallelDimension::Tensor && program.ops.ops[op].layer < 0) {
            // A tensor collective of no layer: the gather of a received message.
            ++gathers;
            EXPECT_EQ(comm.kind, CommKind::AllGather);
            EXPECT_DOUBLE_EQ(comm.bytes, S);  // the whole activation, gathered from t pieces
            // It waits for the received piece.
            ASSERT_EQ(program.ops.ops[op].deps.size(), 1u);
            const auto received = static_cast<size_t>(program.ops.ops[op].deps.front());
            ASSERT_TRUE(program.is_comm(static_cast<int>(received)));
            EXPECT_EQ(program.comms[static_cast<size_t>(program.comm_of_op[received])].kind, CommKind::Recv);
          }
        }
        // Each stage sends and receives one message per micro-batch and direction it has a
        // neighbour for: the first and last of two stages, m each way.
        EXPECT_EQ(messages, 2 * m);
        EXPECT_EQ(gathers, scatter && !sequence ? m : 0);
      }
    }
  }
}

/// Plain data parallelism on the composed engine (a global batch of one micro-batch a replica
/// forces it) against the step as it was before layouts existed.
void expect_same_as_today(const Workload& w, const cluster::ClusterSpec& c, SchemeConfig today) {
  SchemeConfig composed = today;
  composed.parallel.global_batch = static_cast<int64_t>(c.workers) * w.batch_per_worker;
  ASSERT_TRUE(composed.parallel.composed());
  for (bool fast : {true, false}) {
    const SimulationResult a = run(w, c, today, fast), b = run(w, c, composed, fast);
    ASSERT_EQ(a.workers.size(), b.workers.size());
    for (size_t i = 0; i < a.workers.size(); ++i) {
      EXPECT_TRUE(close(a.workers[i].cycle, b.workers[i].cycle, 1e-12)) << a.workers[i].cycle << " " << b.workers[i].cycle;
      EXPECT_TRUE(close(a.workers[i].compute, b.workers[i].compute, 1e-12));
      EXPECT_NEAR(a.workers[i].communication, b.workers[i].communication, 1e-12 * a.workers[i].cycle);
      EXPECT_NEAR(a.workers[i].wait, b.workers[i].wait, 1e-12 * a.workers[i].cycle);
    }
    EXPECT_TRUE(close(a.bytes_sent, b.bytes_sent, 1e-12));
  }
}

TEST(ComposedEngine, PlainDataParallelismIsTodaysDdpAndFsdp) {
  const Workload w = zoo::to_workload(zoo::get_model("gpt2"),
                                      {.batch_per_worker = 4, .step_time = 0.2, .precision = workload::Precision::BF16});
  for (int workers : {1, 2, 8, 16}) {
    cluster::ClusterSpec c;
    c.workers = workers;
    c.workers_per_node = 4;
    c.nic_bw = 12.5e9;
    c.latency = 5e-6;
    c.gpu_memory_bw = 2e12;
    for (AllReduceAlgorithm algorithm : {AllReduceAlgorithm::Ring, AllReduceAlgorithm::Tree, AllReduceAlgorithm::Auto}) {
      SchemeConfig ddp;
      ddp.allreduce.algorithm = algorithm;
      ddp.allreduce.protocol =
          algorithm == AllReduceAlgorithm::Auto ? CollectiveProtocol::Auto : CollectiveProtocol::Links;
      expect_same_as_today(w, c, ddp);
    }
    for (FsdpSharding sharding : {FsdpSharding::Full, FsdpSharding::GradOp, FsdpSharding::Optimizer}) {
      for (int prefetch : {0, 1, 2}) {
        SchemeConfig fsdp;
        fsdp.scheme = Scheme::Fsdp;
        fsdp.fsdp.sharding = sharding;
        fsdp.fsdp.prefetch = prefetch;
        SCOPED_TRACE(fmt::format("{} workers, sharding {}, prefetch {}", workers, static_cast<int>(sharding), prefetch));
        expect_same_as_today(w, c, fsdp);
      }
    }
  }
}

/// A random composed layout on a small cluster: degrees, schedule, sequence parallelism,
/// recomputation, scheme, nodes.
struct RandomLayout {
  Workload workload;
  cluster::ClusterSpec cluster;
  SchemeConfig scheme;
};
RandomLayout random_layout(std::mt19937_64& rng) {
  auto pick = [&](std::vector<int> v) { return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)]; };
  RandomLayout r;
  const int t = pick({1, 2, 4}), c = pick({1, 2}), p = pick({1, 2, 3, 4}), d = pick({1, 2, 3});
  const int v = p > 1 ? pick({1, 1, 2}) : 1;
  const int blocks = p * v * pick({1, 2});
  zoo::TransformerShape shape{.layers = blocks, .hidden = 512, .ffn_hidden = 1536, .heads = 8, .kv_heads = pick({4, 8}),
                              .vocab = 4000, .seq_len = 1024};
  const auto checkpointing = static_cast<workload::ActivationCheckpointing>(pick({0, 1, 2}));
  const zoo::ModelSpec model = zoo::make_transformer("random", "", shape);
  r.workload = zoo::to_workload(model, {.batch_per_worker = pick({1, 2}),
                                        .step_time = std::uniform_real_distribution<double>(0.01, 0.1)(rng),
                                        .precision = workload::Precision::BF16,
                                        .checkpointing = checkpointing});
  r.scheme.parallel.tensor = t;
  r.scheme.parallel.context = c;
  r.scheme.parallel.pipeline = p;
  r.scheme.parallel.virtual_stages = v;
  r.scheme.parallel.sequence = pick({0, 1}) == 1;
  r.scheme.pipeline.schedule = v > 1 ? PipelineSchedule::Interleaved
                                     : static_cast<PipelineSchedule>(pick({0, 1, 3}));
  // Not always whole groups of p, but for the interleaved schedule, which needs them.
  const int m = p * pick({1, 2}) + (v > 1 ? 0 : pick({0, 0, 1}));
  r.scheme.parallel.global_batch = static_cast<int64_t>(m) * d * r.workload.batch_per_worker;
  r.scheme.tensor.overlap = static_cast<TensorOverlap>(pick({0, 1}));
  if (pick({0, 1}) == 1) {
    r.scheme.scheme = Scheme::Fsdp;
    r.scheme.fsdp.sharding = static_cast<FsdpSharding>(pick({0, 1, 2}));  // full, grad_op, optimizer
    r.scheme.fsdp.prefetch = pick({0, 1, 2});
  }
  r.scheme.allreduce.bucket_bytes = pick({1, 25}) * 1e6;
  const int workers = t * c * p * d;
  r.cluster.workers = workers;
  r.cluster.workers_per_node = pick({1, 2, 4, 8});
  r.cluster.nics_per_node = std::min(pick({1, 2}), r.cluster.workers_per_node);
  r.cluster.nic_bw = pick({25, 100}) * 1.25e8;
  r.cluster.latency = 3e-6;
  r.cluster.intra_node_bw = 2e11;
  r.cluster.intra_node_latency = 1e-6;
  r.cluster.gpu_memory_bw = pick({0, 1}) * 2e12;
  if (pick({0, 1}) == 1 && workers >= 4) {
    r.cluster.topology = cluster::Topology::FatTree;
  }
  r.scheme.pipeline.scatter_gather = pick({0, 1}) == 1;  // drawn last: the picks above stay as they were
  return r;
}

TEST(ComposedEngine, FastPathEqualsTheFullEngineOnRandomLayouts) {
  int fast_taken = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    const RandomLayout l = random_layout(rng);
    SCOPED_TRACE(fmt::format("seed {}: {} workers, {} per node, {}", seed, l.cluster.workers,
                             l.cluster.workers_per_node, RankLayout::describe(l.scheme.parallel, l.cluster.workers)));
    scheme::validate(l.workload, l.cluster, l.scheme);
    const SimulationResult fast = run(l.workload, l.cluster, l.scheme, true);
    const SimulationResult full = run(l.workload, l.cluster, l.scheme, false);
    if (fast.engine == SimulationEngine::Fast) ++fast_taken;
    ASSERT_EQ(fast.workers.size(), full.workers.size());
    for (size_t i = 0; i < full.workers.size(); ++i) {
      ASSERT_TRUE(close(fast.workers[i].cycle, full.workers[i].cycle, 1e-9))
          << "rank " << i << ": " << fast.workers[i].cycle << " vs " << full.workers[i].cycle;
      EXPECT_TRUE(close(fast.workers[i].compute, full.workers[i].compute, 1e-9));
      EXPECT_NEAR(fast.workers[i].bubble, full.workers[i].bubble, 1e-9 * full.workers[i].cycle);
      for (size_t d = 0; d < full.workers[i].exposed.size(); ++d) {
        EXPECT_NEAR(fast.workers[i].exposed[d], full.workers[i].exposed[d], 1e-9 * full.workers[i].cycle);
      }
    }
    EXPECT_TRUE(close(fast.bytes_sent, full.bytes_sent, 1e-9)) << fast.bytes_sent << " vs " << full.bytes_sent;
  }
  // Most of these layouts are symmetric enough for the fast path.
  EXPECT_GE(fast_taken, 20);
}

TEST(ComposedEngine, ApproximateFastPathStaysNearTheFullEngineWhereGroupsCrossLinksUnevenly) {
  // Layouts the exact fast path declines, forced onto it as the approximation that very large
  // ones take (SimulationOptions::full_engine_ops).
  int approximated = 0;
  double worst = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    std::mt19937_64 rng(seed);
    const RandomLayout l = random_layout(rng);
    SimulationOptions o;
    o.warmup_steps = 1;
    o.measure_steps = 2;
    o.full_engine_ops = 0;
    const SimulationResult approx = simulate_steps(l.workload, l.cluster, l.scheme, o);
    if (approx.engine != SimulationEngine::Approximate) continue;
    ++approximated;
    const SimulationResult full = run(l.workload, l.cluster, l.scheme, false);
    const double error = mean_cycle(approx) / mean_cycle(full) - 1;
    worst = std::max(worst, std::fabs(error));
    fmt::print("seed {}: {} workers, {} per node, {}: approximate {:+.3f}%\n", seed, l.cluster.workers,
               l.cluster.workers_per_node, RankLayout::describe(l.scheme.parallel, l.cluster.workers), 100 * error);
  }
  fmt::print("{} approximated, worst {:.3f}%\n", approximated, 100 * worst);
  EXPECT_GE(approximated, 5);
  // Regression pin: the approximation's worst error on these seeded layouts is 8.7% (seed 9, tp2 pp4
  // dp3 on nodes of 8 with training.pipeline.scatter_gather: a message's two pieces cross
  // different links, one a NIC, and its gather waits for the later; 2.4% on the same seeds
  // without scatter-gather, 13 of the 60 approximated), measured 2026-12-07 as docs/models.md
  // quotes; the bound sits above it so that a worse approximation is noticed. No accuracy is
  // promised for the approximation: not a target.
  EXPECT_LT(worst, 0.095);
}

TEST(ComposedEngine, SameSeedSameStepWithStragglers) {
  std::mt19937_64 rng(7);
  const RandomLayout l = random_layout(rng);
  const SimulationResult a = run(l.workload, l.cluster, l.scheme, true, 0.1);
  const SimulationResult b = run(l.workload, l.cluster, l.scheme, true, 0.1);
  EXPECT_EQ(a.engine, SimulationEngine::Full);  // stragglers need every rank
  for (size_t i = 0; i < a.workers.size(); ++i) EXPECT_EQ(a.workers[i].cycle, b.workers[i].cycle);
  // Stragglers only slow a step down.
  const SimulationResult even = run(l.workload, l.cluster, l.scheme, true, 0.0);
  EXPECT_GT(mean_cycle(a), mean_cycle(even) * 0.999);
}

}  // namespace composed_test
}  // namespace
}  // namespace stepcast::scheme
