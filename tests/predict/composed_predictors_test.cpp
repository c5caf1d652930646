// The coarse and analytic predictors of parallel layouts against the fine engine: coarse within
// 5% of fine on a seeded random set of layouts (the bar), analytic never slower than
// fine (a bound), all three equal to today's at t = p = c = 1 (the composed engine is not
// taken there), and the pipeline closed forms in coarse with no communication.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>

#include "layout_fixtures.hpp"
#include "moe_fixtures.hpp"
#include "stepcast/detail/scheme/composed_costs.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/scheme/rank_layout.hpp"
#include "stepcast/scheme/validate.hpp"
#include "stepcast/zoo/activation_memory.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::predict {
namespace {
namespace composed_predictors_test {  // this file's own names: test files are compiled several to a unit

using Layout = testing::SeededLayout;

/// A random layout of a decoder on nodes of 8 GPUs with NVLink inside and 400 Gbps NICs: the
/// kind of job the composed engine is for (t within a node, pipelines across nodes).
Layout random_layout(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](std::vector<int> v) { return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)]; };
  Layout l;
  const int t = pick({1, 2, 4, 8}), c = pick({1, 1, 2}), p = pick({1, 2, 4, 8}), d = pick({1, 2, 4});
  const int v = p > 1 ? pick({1, 1, 2}) : 1;
  const int blocks = p * v * pick({1, 2, 3});
  const auto checkpointing = static_cast<workload::ActivationCheckpointing>(pick({0, 1, 2}));
  const int micro_batch = pick({1, 2});
  l.workload = testing::llama_like(blocks, checkpointing, micro_batch);
  scheme::SchemeConfig& s = l.scheme;
  s.parallel.tensor = t;
  s.parallel.context = c;
  s.parallel.pipeline = p;
  s.parallel.virtual_stages = v;
  s.parallel.sequence = pick({0, 1, 1}) == 1;
  s.pipeline.schedule = v > 1 ? scheme::PipelineSchedule::Interleaved
                              : static_cast<scheme::PipelineSchedule>(pick({0, 1, 1, 3}));
  s.tensor.overlap = static_cast<scheme::TensorOverlap>(pick({0, 0, 1}));
  const int m = p * pick({1, 2, 4}) + (v > 1 ? 0 : pick({0, 0, 1}));
  s.parallel.global_batch = static_cast<int64_t>(m) * d * micro_batch;
  if (pick({0, 1}) == 1) {
    s.scheme = scheme::Scheme::Fsdp;
    // full, grad_op, optimizer; ZB-H1 on one stage (a schedule plan does not search there) with
    // optimizer alone: coarse misses full and grad_op there by up to 25% (seed 32, one
    // micro-batch bound by its data collectives: docs/models.md, "ZB-H1 with FSDP").
    s.fsdp.sharding = static_cast<scheme::FsdpSharding>(
        s.pipeline.schedule == scheme::PipelineSchedule::ZeroBubble && p == 1 ? 2 : pick({0, 1, 2}));
  }
  l.cluster = testing::nvlink_nodes(t * c * p * d, 8);
  l.label = fmt::format("seed {}: {} on {} GPUs, m {}, sched {}, fsdp {}, ckpt {}, {}{}", seed, scheme::RankLayout::describe(s.parallel, l.cluster.workers),
                        l.cluster.workers, m, static_cast<int>(s.pipeline.schedule), s.scheme == scheme::Scheme::Fsdp ? static_cast<int>(s.fsdp.sharding) : -1, static_cast<int>(checkpointing),
                        s.parallel.sequence ? "sp " : "", s.tensor.overlap == scheme::TensorOverlap::Collective ? "overlap" : "");
  return l;
}

Result run(const Layout& l, Predictor predictor) { return testing::predict_layout(l, predictor); }

/// examples/gpt3-175b-3d.yaml with `overrides`, predicted by `predictor`.
Result gpt3_layout(std::vector<std::string> overrides, const char* predictor) {
  overrides.push_back(std::string("predictor=") + predictor);
  const scenario::Scenario s =
      scenario::load_scenario(std::string(STEPCAST_SOURCE_DIR) + "/examples/gpt3-175b-3d.yaml", overrides);
  return predict(scenario::build_workload(s), s.cluster, s.scheme, s.options);
}

TEST(ComposedPredictors, CoarseWithinFivePercentOfFineOnRandomLayouts) {
  // Within 5% everywhere but where FSDP gathers units inside a pipeline's passes (full or
  // grad_op with p > 1): there each pass's first gather holds up the pipeline's fill and drain,
  // which coarse's schedule length counts only once per pass; within 10% there (docs/models.md,
  // "Coarse"). The bounds are those goals; measured: 8.3% the worst at dc9762b (2026-12-05), 4.1%
  // at f750b82 (2026-12-05), -2.5% to +1.3% where FSDP gathers inside a pipeline; 2.8% with each
  // pass's gathers run as a chain (branch coarsefsdp, 2026-12-07), -0.8% to +2.5% there.
  int beyond = 0;
  double worst = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const Layout l = random_layout(seed);
    const Result fine = run(l, Predictor::Fine), coarse = run(l, Predictor::Coarse),
                 analytic = run(l, Predictor::Analytic);
    const double error = coarse.step_time / fine.step_time - 1;
    fmt::print("{}: fine {:.4f} coarse {:.4f} ({:+.2f}%) analytic {:.4f}\n", l.label, fine.step_time,
               coarse.step_time, 100 * error, analytic.step_time);
    if (std::getenv("SHOW_BREAKDOWN") != nullptr && std::fabs(error) > 0.05) {
      for (const Result* x : {&fine, &coarse}) {
        fmt::print("  {}: compute {:.4f} tensor {:.4f} context {:.4f} pipeline {:.4f} data {:.4f} wait {:.4f} bubble {:.3f}\n",
                   to_string(x->predictor), x->breakdown.compute, x->breakdown.tensor, x->breakdown.context,
                   x->breakdown.pipeline, x->breakdown.data, x->breakdown.wait, x->bubble_fraction);
      }
    }
    const bool fsdp_in_pipeline = l.scheme.scheme == scheme::Scheme::Fsdp &&
                                  l.scheme.fsdp.sharding != scheme::FsdpSharding::Optimizer &&
                                  l.scheme.parallel.pipeline > 1;
    worst = std::max(worst, std::fabs(error));
    if (std::fabs(error) > (fsdp_in_pipeline ? 0.10 : 0.05)) ++beyond;
    EXPECT_LE(analytic.step_time, fine.step_time * (1 + 1e-9)) << l.label;
  }
  fmt::print("worst {:.2f}%, {} beyond the bound\n", 100 * worst, beyond);
  EXPECT_EQ(beyond, 0);
}

TEST(ComposedPredictors, CoarseCountsTheMessagesOfThePipelinesSteadyState) {
  // Pipelines whose only traffic across nodes is their messages (one replica, tensor x context
  // groups inside a node), over NICs slow enough for a message to be a sizeable share of a pass:
  // under 1F1B and interleaving stages s and s + 1 exchange each micro-batch's activation and
  // gradient within a few micro-batches of their own work, so the steady state waits on messages
  // as well as the fill and drain (GPipe only there). Coarse's pipeline is the longest path
  // through the schedule's passes, each message alone; it counted 2 (p - 1) messages before
  // (tp8 pp8 dp8 of GPT-3 at 50 Gbps: coarse 8.29 s against fine's 9.12 s; now 9.06 s).
  double worst = 0;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](std::vector<int> v) {
      return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
    };
    Layout l;
    const int t = pick({1, 2, 4, 8}), c = t == 8 ? 1 : pick({1, 2}), p = pick({2, 4, 8});
    const int v = pick({1, 1, 2});
    // One pick a statement: the order a call's arguments are evaluated in differs between compilers.
    const int blocks = p * v * pick({1, 2});
    const int micro_batch = pick({1, 2});
    l.workload = testing::llama_like(blocks, workload::ActivationCheckpointing::Selective, micro_batch);
    scheme::SchemeConfig& s = l.scheme;
    s.parallel.tensor = t;
    s.parallel.context = c;
    s.parallel.pipeline = p;
    s.parallel.virtual_stages = v;
    s.parallel.sequence = pick({0, 1}) == 1;
    s.pipeline.schedule = v > 1 ? scheme::PipelineSchedule::Interleaved
                                : static_cast<scheme::PipelineSchedule>(pick({0, 1, 3}));
    const int m = p * pick({2, 4});
    s.parallel.global_batch = static_cast<int64_t>(m) * l.workload.batch_per_worker;
    l.cluster = testing::nvlink_nodes(t * c * p, 8);
    l.cluster.nic_bw = pick({1, 2}) * 12.5e9;  // 100 or 200 Gbps
    l.label = fmt::format("seed {}: {}, m {}, schedule {}, {}, {} Gbps", seed,
                          scheme::RankLayout::describe(s.parallel, l.cluster.workers), m,
                          scheme::name_of(s.pipeline.schedule), s.parallel.sequence ? "sp" : "no sp",
                          l.cluster.nic_bw * 8 / 1e9);
    const Result fine = run(l, Predictor::Fine), coarse = run(l, Predictor::Coarse);
    const double error = coarse.step_time / fine.step_time - 1;
    // The longest message alone against the shortest chunk's forward pass.
    double message = 0, pass = std::numeric_limits<double>::infinity();
    for (const scheme::StageCost& stage : scheme::composed_costs(l.workload, l.cluster, l.scheme).stages) {
      message = std::max({message, stage.message_next, stage.message_previous});
      pass = std::min(pass, stage.forward / v);
    }
    fmt::print(
        "{}: fine {:.4f} coarse {:.4f} ({:+.2f}%), messages exposed {:.4f} / {:.4f}, message / pass {:.2f}\n",
        l.label, fine.step_time, coarse.step_time, 100 * error, fine.breakdown.pipeline,
        coarse.breakdown.pipeline, message / pass);
    // Where a message alone lasts more than half a chunk's forward pass (tensor ranks without
    // sequence parallelism each send the whole activation, 33.5 MB a micro-batch, 1.3-2.7 ms on
    // these NICs), fine is slower than coarse under 1F1B, ZB-H1 and interleaving. Fine's trace
    // shows a stage's forward and backward messages overlapping on its NIC and sharing it fairly
    // (both late, 3.5-5.4 ms for 2.7 ms alone), and at the receiver's; coarse shares a stage's
    // ways out and in among the messages in flight since 2026-12-08 (each direction's one after
    // another), which is part of it (docs/models.md, "Coarse"). Regression pin, measured
    // 2026-12-08: -5.6%, -0.3%, -5.7% on seeds 2, 7, 17 of this set (-8.7%, -5.5%, -5.7% when
    // coarse sent a stage's messages one after another); over seeds 1-160 of this generator the
    // 45 such layouts are 3.4% off in mean, 13.1% at most (4.3% and 16.1% before).
    const bool whole_messages = message > 0.5 * pass;
    if (whole_messages) {
      EXPECT_LT(std::fabs(error), 0.15) << l.label;
    } else {
      EXPECT_LT(std::fabs(error), 0.05) << l.label;
      worst = std::max(worst, std::fabs(error));
    }
  }
  fmt::print("worst {:.2f}% where messages are not pass-sized\n", 100 * worst);
}

TEST(ComposedPredictors, OneFOneBWaitsOnMessagesInItsSteadyStateAsFineDoes) {
  // GPT-3's shapes cut to 16 blocks, tp8 pp8 on 64 GPUs, 100 Gbps NICs, 32 micro-batches: a
  // message (50 MB, 4 ms) is a sizeable share of a pass. GPipe's stages feed forward only, so its
  // messages add their fill and drain, 2 (p - 1) of them; under 1F1B stages s and s + 1 trade
  // each micro-batch's activation and gradient within p - s micro-batches of their own work, and
  // the messages hold up the steady state too (before, coarse counted 2 (p - 1) messages for
  // every schedule and was 9% fast under 1F1B on the full model at 50 Gbps).
  auto predict_with = [](const char* schedule, const char* predictor) {
    return gpt3_layout(
        {"cluster.workers=64", "training.parallel.tensor=8", "training.parallel.pipeline=8",
         "training.parallel.virtual_stages=1", "training.parallel.sequence=false",
         "training.scheme=allreduce", "workload.global_batch=32", "workload.transformer.layers=16",
         "cluster.nic_bandwidth=100Gbps", std::string("training.pipeline.schedule=") + schedule},
        predictor);
  };
  const Result gpipe = predict_with("gpipe", "coarse"), fine_gpipe = predict_with("gpipe", "fine");
  const Result coarse = predict_with("1f1b", "coarse"), fine = predict_with("1f1b", "fine");
  fmt::print(
      "gpipe: fine {:.4f} coarse {:.4f}; 1f1b: fine {:.4f} coarse {:.4f}; messages exposed {:.4f} {:.4f} / "
      "{:.4f} {:.4f}\n",
      fine_gpipe.step_time, gpipe.step_time, fine.step_time, coarse.step_time, fine_gpipe.breakdown.pipeline,
      gpipe.breakdown.pipeline, fine.breakdown.pipeline, coarse.breakdown.pipeline);
  EXPECT_NEAR(coarse.step_time / fine.step_time, 1.0, 0.02);
  EXPECT_NEAR(gpipe.step_time / fine_gpipe.step_time, 1.0, 0.02);
  // Both engines: 1F1B exposes more than twice GPipe's fill-and-drain messages.
  EXPECT_GT(coarse.breakdown.pipeline, 2 * gpipe.breakdown.pipeline);
  EXPECT_GT(fine.breakdown.pipeline, 2 * fine_gpipe.breakdown.pipeline);
}

TEST(ComposedPredictors, InterleavedReductionsStartAsEachChunksLastBackwardEnds) {
  // tp2 pp4 vp4 dp32 with the distributed optimizer over 100 Gbps NICs: in the interleaved
  // schedule a stage's chunks end their last backward far apart (the cooldown runs the last group
  // through every chunk in turn), and each chunk's reduce-scatter starts then, as Megatron-core
  // starts each chunk's gradient sync. Coarse took every reduction within the last chunk's pass
  // (the last micro-batch's passes back to back), 3% slow on GPT-3 175B tp2 cp2 pp16 vp6 dp64
  // at 4,096 GPUs (3.50 s against fine's 3.40 s; now 3.42 s).
  auto predict_with = [](const char* predictor) {
    return gpt3_layout(
        {"cluster.workers=256", "training.parallel.tensor=2", "training.parallel.pipeline=4",
         "training.parallel.virtual_stages=4", "workload.transformer.layers=32", "workload.global_batch=256",
         "workload.activation_checkpointing=none", "cluster.nic_bandwidth=100Gbps"},
        predictor);
  };
  const Result coarse = predict_with("coarse"), fine = predict_with("fine");
  fmt::print("fine {:.4f} (data {:.4f}), coarse {:.4f} (data {:.4f})\n", fine.step_time, fine.breakdown.data,
             coarse.step_time, coarse.breakdown.data);
  EXPECT_GT(fine.breakdown.data, 0.1 * fine.step_time);  // the tail matters here
  EXPECT_NEAR(coarse.breakdown.data / fine.breakdown.data, 1.0, 0.05);
  EXPECT_NEAR(coarse.step_time / fine.step_time, 1.0, 0.05);
}

TEST(ComposedPredictors, ZeroBubbleWithShardedDataParallelismWithinTenPercentOfFine) {
  // ZB-H1 with FSDP full, grad_op or hybrid (each unit reduced after its deferred W passes) on
  // the seeded layouts with p > 1: the bound of FSDP inside a pipeline above; analytic at or below
  // fine.
  int checked = 0;
  double worst = 0;
  for (uint64_t seed = 1; seed <= 80 && checked < 16; ++seed) {
    Layout l = random_layout(seed);
    if (l.scheme.parallel.pipeline == 1 || l.scheme.parallel.virtual_stages > 1) continue;
    l.scheme.pipeline.schedule = scheme::PipelineSchedule::ZeroBubble;
    l.scheme.scheme = scheme::Scheme::Fsdp;
    l.scheme.fsdp.sharding = std::array{scheme::FsdpSharding::Full, scheme::FsdpSharding::GradOp,
                                        scheme::FsdpSharding::Hybrid}[seed % 3];
    if (scheme::layout_problem(l.workload, l.cluster, l.scheme).has_value()) continue;
    ++checked;
    const Result fine = run(l, Predictor::Fine), coarse = run(l, Predictor::Coarse),
                 analytic = run(l, Predictor::Analytic);
    const double error = coarse.step_time / fine.step_time - 1;
    fmt::print("{} (now zero_bubble, fsdp {}): fine {:.4f} coarse {:.4f} ({:+.2f}%)\n", l.label,
               name_of(l.scheme.fsdp.sharding), fine.step_time, coarse.step_time, 100 * error);
    worst = std::max(worst, std::fabs(error));
    EXPECT_LE(std::fabs(error), 0.10) << l.label;
    EXPECT_LE(analytic.step_time, fine.step_time * (1 + 1e-9)) << l.label;
  }
  fmt::print("worst {:.2f}% over {} layouts\n", 100 * worst, checked);
  EXPECT_GE(checked, 12);
}

/// composed_costs of l as built (one micro-batch's programs, in GPipe's order under interleaving) against the
/// programs of all m micro-batches: the same stage costs and link bytes.
void expect_costs_of_all_micro_batches(const Layout& l) {
  auto near = [](double a, double b) {
    return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
  };
  const scheme::ComposedCosts kept = scheme::composed_costs(l.workload, l.cluster, l.scheme);
  const scheme::ComposedCosts all = scheme::composed_costs(l.workload, l.cluster, l.scheme, true);
  ASSERT_EQ(kept.micro_batches, all.micro_batches) << l.label;
  ASSERT_EQ(kept.stages.size(), all.stages.size()) << l.label;
  for (size_t s = 0; s < all.stages.size(); ++s) {
    const scheme::StageCost &a = kept.stages[s], &b = all.stages[s];
    for (auto [x, y] : {std::pair{a.forward, b.forward},
                        {a.backward, b.backward},
                        {a.weight, b.weight},
                        {a.compute, b.compute},
                        {a.tensor_exposed, b.tensor_exposed},
                        {a.context_exposed, b.context_exposed},
                        {a.expert_exposed, b.expert_exposed},
                        {a.data_exposed, b.data_exposed},
                        {a.data_per_micro_batch, b.data_per_micro_batch},
                        {a.message_next, b.message_next},
                        {a.message_previous, b.message_previous},
                        {a.optimizer, b.optimizer}}) {
      EXPECT_TRUE(near(x, y)) << l.label << " stage " << s << ": " << x << " vs " << y;
    }
    EXPECT_EQ(a.reductions, b.reductions) << l.label;
    EXPECT_EQ(a.reduction_streams, b.reduction_streams) << l.label;
    EXPECT_EQ(a.ready_before_end, b.ready_before_end) << l.label;
    EXPECT_EQ(a.ready_chunk, b.ready_chunk) << l.label;
    EXPECT_EQ(a.gathers, b.gathers) << l.label;
  }
  ASSERT_EQ(kept.link_bytes.size(), all.link_bytes.size());
  for (size_t k = 0; k < all.link_bytes.size(); ++k) {
    EXPECT_TRUE(near(kept.link_bytes[k], all.link_bytes[k])) << l.label << " link " << k;
  }
  EXPECT_TRUE(near(kept.bytes_sent, all.bytes_sent)) << l.label;
}

TEST(ComposedPredictors, CoarseLeavesNoRoundingResidueWhereNothingWaits) {
  // Tensor parallelism alone on one node: one stage, no data group, so nothing waits and nothing
  // is exposed but the tensor collectives. Coarse's wait and data parts are differences of sums of
  // the same parts; they must come out 0, not 1e-16 s printed as "8.33e-08 ns".
  for (const int t : {2, 4, 8}) {
    for (const auto checkpointing :
         {workload::ActivationCheckpointing::None, workload::ActivationCheckpointing::Full}) {
      Layout l;
      l.workload = testing::llama_like(4, checkpointing, 2);
      l.scheme.parallel.tensor = t;
      l.scheme.parallel.global_batch = 8;
      l.cluster = testing::nvlink_nodes(t, 8);
      const Result r = run(l, Predictor::Coarse);
      SCOPED_TRACE(r.layout);
      EXPECT_EQ(r.breakdown.wait, 0);
      EXPECT_EQ(r.breakdown.data, 0);
      EXPECT_EQ(r.bubble_fraction, 0);
      EXPECT_GT(r.breakdown.tensor, 0);
      EXPECT_NEAR(r.breakdown.compute + r.breakdown.communication_exposed, r.step_time, 1e-12 * r.step_time);
    }
  }
}

TEST(ComposedPredictors, CoarseCostsOfOneMicroBatchAreThoseOfAll) {
  // composed_costs builds one micro-batch's programs (GPipe's order under interleaving): the first
  // micro-batch's passes and the last one's backward are the same as among all m, and the links
  // carry m / m' times the kept micro-batches' bytes. Four times each random layout's
  // micro-batches, so that it keeps fewer than it has.
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Layout l = random_layout(seed);
    l.scheme.parallel.global_batch *= 4;
    expect_costs_of_all_micro_batches(l);
  }
  // Experts (their all-to-alls in every pass, their gradients on a stream of their own), skewed or
  // not, under each schedule.
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](std::vector<int> v) {
      return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
    };
    Layout l;
    const int p = pick({2, 4}), d = pick({2, 4});
    l.workload = testing::small_moe({.hidden = 1024, .ffn_hidden = 2048, .heads = 8, .kv_heads = 4,
                                     .vocab = 32000, .seq_len = 1024},
                                    4, 8, pick({0, 1}) == 1 ? 1.5 : 1.0);
    l.scheme.parallel.tensor = pick({1, 2});
    l.scheme.parallel.pipeline = p;
    l.scheme.parallel.expert = d;
    l.scheme.pipeline.schedule = static_cast<scheme::PipelineSchedule>(pick({0, 1, 3}));
    if (pick({0, 1}) == 1) {
      l.scheme.scheme = scheme::Scheme::Fsdp;
      l.scheme.fsdp.sharding = scheme::FsdpSharding::Optimizer;
    }
    l.scheme.parallel.global_batch = static_cast<int64_t>(d) * 4 * p;
    l.cluster = testing::nvlink_nodes(l.scheme.parallel.tensor * p * d, 8);
    l.label = fmt::format("moe seed {}: {} {}", seed, scheme::RankLayout::describe(l.scheme.parallel, l.cluster.workers),
                          scheme::name_of(l.scheme.pipeline.schedule));
    scheme::validate(l.workload, l.cluster, l.scheme);
    expect_costs_of_all_micro_batches(l);
  }
}

TEST(ComposedPredictors, ActivationsHeldPeakWithinTwoPMicroBatches) {
  // stage_footprints lists the passes of min(m, 2p) micro-batches (all of them under gpipe): what
  // each stage holds at its peak, in blocks and the head, is what all m give.
  auto peak = [](const scheme::StageFootprint& f) {
    const auto chunks = static_cast<int>(f.chunk_blocks.size());
    double held = 0, most = 0;
    for (const auto& [chunk, sign] : *f.activations) {
      // The head counts as a large block, so that a peak with it differs from one without.
      held += sign *
              (f.chunk_blocks[static_cast<size_t>(chunk)] + (f.head && chunk == chunks - 1 ? 1000.5 : 0.0));
      most = std::max(most, held);
    }
    return most;
  };
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Layout l = random_layout(seed);
    l.scheme.parallel.global_batch *= 4;
    const auto kept = scheme::stage_footprints(l.workload, l.scheme, l.cluster.workers);
    const auto all = scheme::stage_footprints(l.workload, l.scheme, l.cluster.workers, true);
    ASSERT_EQ(kept.size(), all.size());
    for (size_t s = 0; s < all.size(); ++s) {
      EXPECT_EQ(peak(kept[s]), peak(all[s])) << l.label << " stage " << s;
      EXPECT_EQ(kept[s].parameters, all[s].parameters);
      EXPECT_EQ(kept[s].chunk_blocks, all[s].chunk_blocks);
    }
  }
}

TEST(ComposedPredictors, OneFOneBFirstStageHoldsPMicroBatchesOfActivations) {
  // 8 blocks on 4 stages of 2. Under 1F1B the first stage holds min(p, m) = 4 micro-batches'
  // activations, the most (the last holds one micro-batch with the head's). Under GPipe every
  // stage holds all m = 8, so the last stage, with the head, holds the most.
  const zoo::ModelSpec model = zoo::get_model("llama2-7b");
  zoo::TransformerShape shape = *model.transformer;
  shape.layers = 8;
  const zoo::ModelSpec small = zoo::make_transformer("small", "", shape);
  const workload::Workload w =
      zoo::to_workload(small, {.batch_per_worker = 1, .step_time = 1, .precision = workload::Precision::BF16});
  cluster::ClusterSpec c;
  c.workers = 4;
  c.workers_per_node = 4;
  scheme::SchemeConfig s;
  s.parallel.pipeline = 4;
  s.parallel.global_batch = 8;
  const zoo::ActivationSplit one{};
  const double block = zoo::block_activation_bytes(shape, 1, workload::ActivationCheckpointing::None, 2, true, one);
  const double head = zoo::head_activation_bytes(shape, 1, 2, one);
  Options o;
  o.predictor = Predictor::Analytic;
  s.pipeline.schedule = scheme::PipelineSchedule::OneFOneB;
  Result r = predict(w, c, s, o);
  ASSERT_TRUE(r.memory.known);
  // The embedding's output is its first block's input, counted there.
  EXPECT_NEAR(r.memory.per_worker.activations, 4 * 2 * block, 1e-9 * block);
  s.pipeline.schedule = scheme::PipelineSchedule::GPipe;
  r = predict(w, c, s, o);
  // At the first backward of the head the fp32 loss holds, beside the 8 log-softmax outputs
  // (in `head`), their gradient and the fp32 logits' gradient: 2 x 4 bytes x s x V.
  const double loss_gradients = 2 * 4 * 4096.0 * 32000;
  EXPECT_NEAR(r.memory.per_worker.activations, 8 * (2 * block + head) + loss_gradients, 1e-9 * block);
}

}  // namespace composed_predictors_test
}  // namespace
}  // namespace stepcast::predict
