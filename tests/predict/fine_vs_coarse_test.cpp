// Fine (discrete-event) and coarse (phases + heuristics) predictors on scenarios where there is
// nothing to overlap and nothing contends, so both must reduce to the same closed form (DESIGN.md
// 3.2); and the coarse PS model against the PS NIC bounds.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/placement.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::predict {
namespace {
namespace fine_vs_coarse_test {  // this file's own names: test files are compiled several to a unit

using scheme::Mode;
using scheme::PsPartition;
using scheme::Scheme;
using scheme::SchemeConfig;
using workload::OpKind;
using workload::Workload;

const Options kFine{.predictor = Predictor::Fine, .warmup_steps = 1, .measure_steps = 3};
const Options kCoarse{.predictor = Predictor::Coarse, .warmup_steps = 1, .measure_steps = 3};

cluster::ClusterSpec cluster_of(int workers, double nic_bw, double latency) {
  cluster::ClusterSpec spec;
  spec.workers = workers;
  spec.nic_bw = nic_bw;
  spec.latency = latency;
  return spec;
}

/// A scenario file with `sets` applied, predicted by fine and by coarse at `workers` (0: the
/// scenario's own count) with the scenario's options.
struct FineAndCoarse {
  Result fine, coarse;
};
FineAndCoarse fine_and_coarse(const std::string& file, const std::vector<std::string>& sets,
                              int workers = 0) {
  const scenario::Scenario s = scenario::load_scenario(file, sets);
  const Workload w = scenario::build_workload(s);
  cluster::ClusterSpec spec = s.cluster;
  if (workers > 0) spec.workers = workers;
  Options fine = s.options, coarse = s.options;
  fine.predictor = Predictor::Fine;
  coarse.predictor = Predictor::Coarse;
  return {predict(w, spec, s.scheme, fine), predict(w, spec, s.scheme, coarse)};
}

/// L layers, one tensor each (forward op l reads tensor l, backward op of layer l produces it).
Workload layered(int layers, double total_bytes, double forward_time, double backward_time) {
  Workload w;
  w.name = "layered";
  w.batch_per_worker = 32;
  for (int l = 0; l < layers; ++l) {
    workload::Op op{.name = std::string("fwd") + std::to_string(l),
                    .kind = OpKind::Forward,
                    .duration = forward_time,
                    .lane = 0,
                    .layer = l,
                    .deps = {}};
    if (l > 0) op.deps = {l - 1};
    w.ops.push_back(op);
  }
  for (int l = layers - 1; l >= 0; --l) {
    const int index = static_cast<int>(w.ops.size());
    w.ops.push_back({.name = std::string("bwd") + std::to_string(l),
                     .kind = OpKind::Backward,
                     .duration = backward_time,
                     .lane = 0,
                     .layer = l,
                     .deps = {index - 1}});
  }
  for (int l = 0; l < layers; ++l) {
    w.tensors.push_back({.name = std::string("w") + std::to_string(l),
                         .bytes = total_bytes / layers,
                         .producer = 2 * layers - 1 - l,
                         .consumers = {l}});
  }
  EXPECT_EQ(workload::validate(w), "");
  return w;
}

SchemeConfig ps(Mode mode, int shards, PsPartition partition) {
  SchemeConfig s;
  s.scheme = Scheme::ParameterServer;
  s.mode = mode;
  s.ps.count = shards;
  s.ps.partition = partition;
  return s;
}

TEST(FineVsCoarse, AllReduceWithOneBucketAgrees) {
  // One bucket holding every gradient: its collective starts only when the backward pass ended on
  // every worker (all identical), and nothing else runs meanwhile, so both models give T = compute
  // + 2(N-1)(a + S/(N B)). The overlap heuristic has nothing to hide (all but the last bucket:
  // none), so it must not matter.
  const Workload w =
      zoo::to_workload(zoo::get_model("resnet50"), {.batch_per_worker = 64, .step_time = 0.29});
  const double bytes = w.parameter_bytes();
  SchemeConfig scheme;  // ring all-reduce
  scheme.allreduce.bucket_bytes = 2 * bytes;
  const double bw = 1.25e9;
  const double latency = 5e-6;
  for (int n : {2, 3, 4, 8, 16}) {
    SCOPED_TRACE(std::string("N = ") + std::to_string(n));
    const cluster::ClusterSpec spec = cluster_of(n, bw, latency);
    const double expected = w.compute_time() + 2.0 * (n - 1) * (latency + bytes / (n * bw));
    const Result fine = predict(w, spec, scheme, kFine);
    EXPECT_NEAR(fine.step_time, expected, 0.01 * expected);
    for (bool overlap : {true, false}) {
      SCOPED_TRACE(overlap ? "overlap heuristic on" : "overlap heuristic off");
      Options options = kCoarse;
      options.overlap_heuristic = overlap;
      const Result coarse = predict(w, spec, scheme, options);
      EXPECT_NEAR(coarse.step_time, expected, 1e-9 * expected);
      EXPECT_NEAR(coarse.step_time, fine.step_time, 0.05 * fine.step_time);
      EXPECT_NEAR(coarse.throughput, fine.throughput, 0.05 * fine.throughput);
      // Same bytes per measured step: each worker sends 2(N-1)/N S.
      EXPECT_NEAR(coarse.bytes_sent, fine.bytes_sent, 0.05 * fine.bytes_sent);
    }
  }
}

// With size regimes each bucket runs in its own regime in both predictors: several buckets of
// different sizes, one per regime, still give the same step time as long as nothing overlaps
// (overlap heuristic off, one worker lane), and the fine model pays each regime's cost.
TEST(FineVsCoarse, AllReduceRegimesAgree) {
  const Workload w = layered(3, 300e6, 0.01, 0.02);
  SchemeConfig scheme;
  scheme.allreduce.bucket_bytes = 150e6;  // buckets of 200 MB then 100 MB: one in each regime
  const int n = 8;
  cluster::ClusterSpec spec = cluster_of(n, 25e9, 5e-6);
  spec.collective_regimes = {{0, 5e-6, 5e9}, {120e6, 40e-6, 20e9}};
  Options coarse = kCoarse;
  coarse.overlap_heuristic = false;
  const Result c = predict(w, spec, scheme, coarse);
  const Result f = predict(w, spec, scheme, kFine);
  // Buckets are what make_buckets says; each costs the ring closed form in its regime.
  double comm = 0;
  const std::vector<workload::Bucket> buckets = workload::make_buckets(w, scheme.allreduce.bucket_bytes);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_NE(spec.regime_for(buckets[0].bytes), spec.regime_for(buckets[1].bytes));
  for (const workload::Bucket& b : buckets) {
    const cluster::CollectiveRegime* r = spec.regime_for(b.bytes);
    ASSERT_NE(r, nullptr);
    comm += 2.0 * (n - 1) * (r->step_latency + b.bytes / (n * std::min(r->bw, spec.nic_bw)));
  }
  EXPECT_NEAR(c.step_time, w.compute_time() + comm, 1e-9 * c.step_time);
  // The fine model overlaps buckets with the backward pass, so it is faster by at most that.
  EXPECT_LE(f.step_time, c.step_time * (1 + 1e-9));
  EXPECT_GE(f.step_time, c.step_time - w.compute_time(OpKind::Backward) - 1e-9);
  // Slower regimes are slower: dropping the regimes (links only, 25 GB/s) is faster.
  cluster::ClusterSpec plain = spec;
  plain.collective_regimes.clear();
  EXPECT_LT(predict(w, plain, scheme, kFine).step_time, f.step_time);
  EXPECT_LT(predict(w, plain, scheme, coarse).step_time, c.step_time);
}

TEST(FineVsCoarse, OneWorkerOneShardOneTensorAgrees) {
  // One worker, one shard, one 10 MB tensor on a 1.25 GB/s NIC, 10 + 20 ms of compute: pull (S/B +
  // a), forward, backward, push (S/B + a); the update is free and nobody else takes part, so T =
  // compute + 2 (S/B + a) = 0.03 + 2 (0.008 + 5e-6) = 0.04601 s in both models.
  const Workload w = layered(1, 10e6, 10e-3, 20e-3);
  const cluster::ClusterSpec spec = cluster_of(1, 1.25e9, 5e-6);
  const double expected = 0.03 + 2 * (10e6 / 1.25e9 + 5e-6);
  for (PsPartition partition : {PsPartition::Whole, PsPartition::Split}) {
    const SchemeConfig scheme = ps(Mode::Sync, 1, partition);
    const Result fine = predict(w, spec, scheme, kFine);
    const Result coarse = predict(w, spec, scheme, kCoarse);
    EXPECT_NEAR(fine.step_time, expected, 0.01 * expected);
    EXPECT_NEAR(coarse.step_time, expected, 0.01 * expected);
    EXPECT_NEAR(coarse.step_time, fine.step_time, 0.05 * fine.step_time);
    EXPECT_NEAR(coarse.throughput, fine.throughput, 0.05 * fine.throughput);
  }
}

TEST(FineVsCoarse, SyncPsAtTheNicBoundAgrees) {
  // Negligible compute (16 ns), fifo order, split: in the fine model the symmetric workers pull N
  // S/P through each shard NIC, then push as much (scheme/parameter_server_test.cpp); the coarse
  // model's two contended phases are N S/(P B) + a each. Both: T = 2 N S/(P B).
  const Workload w = layered(8, 8e6, 1e-9, 1e-9);
  for (auto [n, p] : std::vector<std::pair<int, int>>{{2, 1}, {4, 1}, {8, 2}, {16, 4}}) {
    SCOPED_TRACE(std::string("N = ") + std::to_string(n) + std::string(", P = ") + std::to_string(p));
    SchemeConfig scheme = ps(Mode::Sync, p, PsPartition::Split);
    scheme.ps.order = scheme::PsOrder::Fifo;
    const cluster::ClusterSpec spec = cluster_of(n, 1e9, 1e-9);
    const double expected = 2.0 * n * 8e6 / (p * 1e9);
    const Result fine = predict(w, spec, scheme, kFine);
    const Result coarse = predict(w, spec, scheme, kCoarse);
    EXPECT_NEAR(fine.step_time, expected, 0.01 * expected);
    EXPECT_NEAR(coarse.step_time, expected, 0.01 * expected);
    EXPECT_NEAR(coarse.step_time, fine.step_time, 0.05 * fine.step_time);
  }
}

TEST(CoarseParameterServer, SyncStepRespectsThePsNicBound) {
  // DESIGN.md 3.2: each sync step moves N S_s bytes into and out of a shard holding S_s bytes. In
  // fifo order the coarse model does the two phases one after the other, so T >= compute + 2 N
  // S_max/B; in random order the duplex heuristic lets the next step's pulls overlap this step's
  // pushes but for one piece's share, so T >= compute + N S_max/B (one direction's bytes). With
  // split S_max = S/P.
  const Workload w = layered(8, 8e6, 1e-3, 2e-3);
  const double bw = 1e9;
  for (PsPartition partition : {PsPartition::Split, PsPartition::Whole}) {
    for (int n : {1, 2, 4, 8, 16}) {
      for (int p : {1, 2, 3, 4}) {
        for (scheme::PsOrder order : {scheme::PsOrder::Random, scheme::PsOrder::Fifo}) {
          SCOPED_TRACE(std::string("N = ") + std::to_string(n) + std::string(", P = ") + std::to_string(p) +
                       (partition == PsPartition::Split ? " split" : " whole") +
                       (order == scheme::PsOrder::Fifo ? " fifo" : " random"));
          SchemeConfig scheme = ps(Mode::Sync, p, partition);
          scheme.ps.order = order;
          const double phases = order == scheme::PsOrder::Fifo ? 2.0 : 1.0;
          const auto shards = scheme::shard_bytes(scheme::place_parameters(w, scheme.ps), p);
          const double largest = *std::max_element(shards.begin(), shards.end());
          if (partition == PsPartition::Split) {
            EXPECT_DOUBLE_EQ(largest, 8e6 / p);
          }
          // The phase model (compute-overlap heuristic off) puts compute and the phases in series;
          // with it a need-ordered step still takes the longer of its compute and its two phases.
          Options serial = kCoarse;
          serial.ps_compute_overlap_heuristic = false;
          const Result r = predict(w, cluster_of(n, bw, 1e-9), scheme, serial);
          const double bound = phases * n * largest / bw;
          EXPECT_GE(r.step_time, (w.compute_time() + bound) * (1 - 1e-12));
          const Result overlapped = predict(w, cluster_of(n, bw, 1e-9), scheme, kCoarse);
          EXPECT_GE(overlapped.step_time, std::max(w.compute_time(), bound) * (1 - 1e-12));
          EXPECT_GE(r.step_time, phases * n * 8e6 / (p * bw) * (1 - 1e-12));
        }
      }
    }
  }
}

TEST(CoarseParameterServer, RandomOrderExposesOnePhaseAndOnePiecesShareOfTheOther) {
  // Negligible compute, 8 tensors split over P shards (8 pieces per connection), random order,
  // more than two workers: T = (1 + 1/8) (N S/(P B) + a); fifo: 2 (N S/(P B) + a); one tensor (one piece): 2
  // phases in both; with training.ps.barrier: step, 2 phases. Without the heuristic
  // (Options::ps_duplex_heuristic) random is fifo's.
  const double bw = 1e9, a = 1e-9;
  // Two workers stay in step (a lead is not amplified by fair sharing at N = 2), so both phases
  // are exposed, in fine and coarse.
  {
    const SchemeConfig scheme = ps(Mode::Sync, 1, PsPartition::Split);
    const Workload eight = layered(8, 8e6, 1e-12, 1e-12);
    const double phase = 2 * 8e6 / bw + a;
    EXPECT_NEAR(predict(eight, cluster_of(2, bw, a), scheme, kCoarse).step_time, 2 * phase, 1e-6 * phase);
    EXPECT_NEAR(predict(eight, cluster_of(2, bw, a), scheme, kFine).step_time, 2 * phase, 0.01 * phase);
  }
  for (auto [n, p] : std::vector<std::pair<int, int>>{{4, 1}, {8, 2}, {16, 4}}) {
    SCOPED_TRACE(std::string("N = ") + std::to_string(n) + std::string(", P = ") + std::to_string(p));
    SchemeConfig scheme = ps(Mode::Sync, p, PsPartition::Split);
    const double phase = n * 8e6 / (p * bw) + a;
    const Workload eight = layered(8, 8e6, 1e-12, 1e-12);
    EXPECT_NEAR(predict(eight, cluster_of(n, bw, a), scheme, kCoarse).step_time, 1.125 * phase, 1e-6 * phase);
    Options sequential = kCoarse;
    sequential.ps_duplex_heuristic = false;
    EXPECT_NEAR(predict(eight, cluster_of(n, bw, a), scheme, sequential).step_time, 2 * phase, 1e-6 * phase);
    const Workload one = layered(1, 8e6, 1e-12, 1e-12);
    EXPECT_NEAR(predict(one, cluster_of(n, bw, a), scheme, kCoarse).step_time, 2 * phase, 1e-6 * phase);
    // TensorFlow's step barrier: no pull before the last push is applied, two phases (fine: the
    // same closed form, tests/scheme/ps_order_test.cpp).
    scheme.ps.barrier = scheme::PsBarrier::Step;
    EXPECT_NEAR(predict(eight, cluster_of(n, bw, a), scheme, kCoarse).step_time, 2 * phase, 1e-6 * phase);
    EXPECT_NEAR(predict(eight, cluster_of(n, bw, a), scheme, kFine).step_time, 2 * phase, 0.01 * phase);
    scheme.ps.barrier = scheme::PsBarrier::PerTensor;
    scheme.ps.order = scheme::PsOrder::Fifo;
    EXPECT_NEAR(predict(eight, cluster_of(n, bw, a), scheme, kCoarse).step_time, 2 * phase, 1e-6 * phase);
  }
  // One worker, random order: it requests the next step's pulls once its own pushes are done,
  // and no other worker's pushes are there to overlap them: two phases, fine and coarse.
  {
    const SchemeConfig scheme = ps(Mode::Sync, 1, PsPartition::Split);
    const Workload eight = layered(8, 8e6, 1e-12, 1e-12);
    const double phase = 8e6 / bw + a;
    EXPECT_NEAR(predict(eight, cluster_of(1, bw, a), scheme, kCoarse).step_time, 2 * phase, 1e-6 * phase);
    EXPECT_NEAR(predict(eight, cluster_of(1, bw, a), scheme, kFine).step_time, 2 * phase, 0.01 * phase);
  }
  // Async, one worker, random order: it requests its next pulls once its pushes are out, so with
  // negligible compute nothing overlaps its own link: pulls then pushes, two phases, fine and
  // coarse (coarse used to take 1 + 1/8 phases here, as if its pulls overlapped its pushes).
  const SchemeConfig async = ps(Mode::Async, 1, PsPartition::Split);
  const Workload eight = layered(8, 8e6, 1e-12, 1e-12);
  const double alone = 8e6 / bw + a;
  EXPECT_NEAR(predict(eight, cluster_of(1, bw, a), async, kCoarse).step_time, 2 * alone, 1e-6 * alone);
  EXPECT_NEAR(predict(eight, cluster_of(1, bw, a), async, kFine).step_time, 2 * alone, 0.01 * alone);
}

// The duplex heuristic counts the busiest shard's pieces by bytes: m_eff = (sum b)^2 / sum b^2.
// Two pieces on one shard, 7 MB and 1 MB: m_eff = 64 / 50 = 1.28, so with negligible compute a
// server-bound step exposes (1 + 50/64) phases; eight equal pieces, 1 + 1/8. Negligible compute
// and latency, 16 workers on one shard: the servers bound the phase (16 x 8 MB against 8 MB).
TEST(CoarseParameterServer, DuplexCountsPiecesByBytes) {
  const double bw = 1e9, a = 1e-9;
  Workload skewed = layered(2, 8e6, 1e-12, 1e-12);
  skewed.tensors[0].bytes = 7e6;
  skewed.tensors[1].bytes = 1e6;
  const SchemeConfig scheme = ps(Mode::Sync, 1, PsPartition::Whole);
  const double phase = 16 * 8e6 / bw + a;
  EXPECT_NEAR(predict(skewed, cluster_of(16, bw, a), scheme, kCoarse).step_time, (1 + 50.0 / 64.0) * phase,
              1e-6 * phase);
  EXPECT_NEAR(predict(layered(8, 8e6, 1e-12, 1e-12), cluster_of(16, bw, a), scheme, kCoarse).step_time,
              1.125 * phase, 1e-6 * phase);
}

// A worker requests its next pulls once its own pushes are out, so its own link never overlaps
// the two: when that link, not the servers', bounds the phase (2 workers, 8 shards: 8 MB on the
// worker's link against 2 x 1 MB on a shard's), a step is two phases of it, fine and coarse.
TEST(FineVsCoarse, AWorkerBoundByItsOwnLinkExposesBothPhases) {
  const double bw = 1e9, a = 1e-9;
  const Workload eight = layered(8, 8e6, 1e-12, 1e-12);
  const SchemeConfig scheme = ps(Mode::Sync, 8, PsPartition::Whole);
  const double alone = 8e6 / bw + a;
  EXPECT_NEAR(predict(eight, cluster_of(2, bw, a), scheme, kCoarse).step_time, 2 * alone, 1e-6 * alone);
  EXPECT_NEAR(predict(eight, cluster_of(2, bw, a), scheme, kFine).step_time, 2 * alone, 0.01 * alone);
}

// The duplex heuristic overlaps the two directions of the servers' NICs, not their message
// lane: with free bandwidth and 1 ms per message, 16 workers and 8 pieces on one shard, a step in
// random order is the lane's 2 x 16 x 8 messages, 256 ms, in fine and in coarse.
TEST(FineVsCoarse, TheMessageLaneHandlesPullsAndPushesOneAtATime) {
  const double bw = 1e12, a = 1e-9;
  const Workload eight = layered(8, 8e6, 1e-12, 1e-12);
  SchemeConfig scheme = ps(Mode::Sync, 1, PsPartition::Whole);
  scheme.ps.message_overhead = 1e-3;
  const double lane = 2 * 16 * 8 * 1e-3;
  EXPECT_GE(predict(eight, cluster_of(16, bw, a), scheme, kCoarse).step_time, lane);
  EXPECT_NEAR(predict(eight, cluster_of(16, bw, a), scheme, kCoarse).step_time, lane, 0.05 * lane);
  EXPECT_NEAR(predict(eight, cluster_of(16, bw, a), scheme, kFine).step_time, lane, 0.05 * lane);
}

// A shard applies each gradient as it arrives, so its apply lane works during the push phase,
// not after it: with 8 workers, 8 shards and 1 ms per apply (64 ms of applies a step on each
// shard) under the step barrier in fifo order, on a fast network the step is the compute (0.2 s)
// plus little, both ways; coarse used to add the 64 ms after the pushes.
TEST(FineVsCoarse, ShardAppliesOverlapThePushes) {
  const double bw = 100e9, a = 1e-6;
  const Workload w = layered(64, 64e6, 1e-3, 2e-3);  // 64 ms forward, 128 ms backward
  SchemeConfig scheme = ps(Mode::Sync, 8, PsPartition::Whole);
  scheme.ps.order = scheme::PsOrder::Fifo;
  scheme.ps.barrier = scheme::PsBarrier::Step;
  scheme.ps.apply_time = 1e-3;
  const double fine = predict(w, cluster_of(8, bw, a), scheme, kFine).step_time;
  const double coarse = predict(w, cluster_of(8, bw, a), scheme, kCoarse).step_time;
  EXPECT_LT(fine, w.compute_time() + 0.5 * 64e-3);
  EXPECT_NEAR(coarse, fine, 0.05 * fine);
}

// The first ask: coarse within 10% of fine on every example, at the example's own worker
// count; the bound is that goal. Measured at f750b82 (2026-12-05) from -7.7% (gpt3-175b-3d) to
// +8.7% (single-server-analytic; the profiled small CNN +7.8%); -2.1% to +7.8% at 335a2f8
// (2026-12-03), before the parallel-layout examples.
TEST(FineVsCoarse, EveryExampleAgreesWithin10Percent) {
  int examples = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(STEPCAST_SOURCE_DIR) + "/examples")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().filename().string());
    const FineAndCoarse r = fine_and_coarse(entry.path().string(), {});
    EXPECT_NEAR(r.coarse.throughput, r.fine.throughput, 0.10 * r.fine.throughput);
    ++examples;
  }
  EXPECT_GE(examples, 10);
}

// Where the phase form missed, now piece by piece (scheme::push_streams, forward_end_after_pulls),
// examples/resnet50-ps.yaml with 300 samples/s and 20 us an apply. Before: ResNet-50 in fifo order
// under the step barrier 11.5% fast (the lane's backlog of small pieces pushed last); AlexNet in
// tic order 10.2% slow (its classifier's gradient leaves early in the backward, its weights are
// read last in the forward); ResNet-152 in tic order with 8 split shards 21.6% slow (fine pulls a
// piece while the lane applies the next).
TEST(FineVsCoarse, PiecesStreamThroughTheShardsAndTheirApplyLanes) {
  const std::string example = std::string(STEPCAST_SOURCE_DIR) + "/examples/resnet50-ps.yaml";
  const std::vector<std::pair<int, std::vector<std::string>>> cases = {
      {16,
       {"workload.model=resnet50", "cluster.nic_bandwidth=40Gbps", "workload.batch_per_worker=32",
        "training.ps.order=fifo", "training.ps.count=4", "training.ps.partition=split",
        "training.ps.barrier=step"}},
      {8,
       {"workload.model=alexnet", "cluster.nic_bandwidth=100Gbps", "workload.batch_per_worker=64",
        "training.ps.order=tic", "training.ps.count=4", "training.ps.partition=whole"}},
      {32,
       {"workload.model=resnet152", "cluster.nic_bandwidth=40Gbps", "workload.batch_per_worker=32",
        "training.ps.order=tic", "training.ps.count=8", "training.ps.partition=split"}},
  };
  for (const auto& [workers, sets] : cases) {
    std::vector<std::string> all = sets;
    all.push_back("workload.single_worker_throughput=300");
    SCOPED_TRACE(fmt::format("{} workers, {}", workers, fmt::join(sets, " ")));
    const FineAndCoarse r = fine_and_coarse(example, all, workers);
    EXPECT_NEAR(r.coarse.step_time, r.fine.step_time, 0.02 * r.fine.step_time);
  }
}

// Coarse against fine on a seeded random set drawn from the space of tools/coarse_vs_fine.py
// (ResNet-50/152, VGG-16, AlexNet; 1-64 workers; 1-100 Gbps; PS sync and async in every order,
// shards, partition and barrier; all-reduce). The issue asks for every point within 10%. Here
// every all-reduce point is within 1% and every synchronous one within 10%; an asynchronous
// step has no one answer near the servers' knee (fine's moves with where its workers start), so
// there fine must lie in coarse's range, out of step to a convoy (Result::async_phases), as it
// does at every start on tools/coarse_vs_fine.py's 88 asynchronous points. This set was drawn
// before any of that was measured; on the larger sets of seeds 7-12, 3 of the 272 synchronous
// and all-reduce points are beyond 10% (docs/models.md, "Coarse").
// Regression pin: the count of these 40 within 10%: 35 when it was written (from -17.9% to
// +34.1%), 36 once pieces streamed through the shards, 38 once two workers were kept in step
// (3b90707, 2026-12-03), 39 at f750b82 (2026-12-05; the one left, +47.6%, AlexNet async on 8
// whole shards, is inside the asynchronous range). Pinned so that a change that loses a point
// is noticed; the goal is the per-point check above, not the count.
TEST(FineVsCoarse, SeededRandomSetAgreesWithin10PercentOrInTheAsynchronousRange) {
  const std::string example = std::string(STEPCAST_SOURCE_DIR) + "/examples/resnet50-ps.yaml";
  std::mt19937_64 rng(11);
  auto pick = [&rng](const std::vector<std::string>& from) {
    return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
  };
  int within = 0, total = 0;
  std::string beyond;  // for the failure message
  for (int k = 0; k < 40; ++k) {
    const std::string model = pick({"resnet50", "resnet152", "vgg16", "alexnet"});
    const int workers = std::stoi(pick({"1", "2", "4", "8", "16", "32", "64"}));
    const std::string bandwidth = pick({"1Gbps", "10Gbps", "25Gbps", "40Gbps", "100Gbps"});
    const std::string scheme = pick({"ps", "ps", "ps", "allreduce"});
    const std::string order = pick({"random", "random", "fifo", "tic"});
    const std::string shards = pick({"1", "2", "4", "8"});
    const std::string partition = pick({"whole", "split"});
    const std::string mode = pick({"sync", "sync", "async"});
    const std::string barrier = mode == "async" ? "per_tensor" : pick({"per_tensor", "per_tensor", "step"});
    const std::string batch = pick({"32", "64"});
    std::vector<std::string> sets = {"workload.model=" + model, "cluster.nic_bandwidth=" + bandwidth,
                                     "training.scheme=" + scheme, "workload.batch_per_worker=" + batch,
                                     "workload.single_worker_throughput=300"};
    if (scheme == "ps") {
      for (const std::string& s :
           {"training.ps.order=" + order, "training.ps.count=" + shards, "training.ps.partition=" + partition,
            "training.mode=" + mode, "training.ps.barrier=" + barrier}) {
        sets.push_back(s);
      }
    }
    const std::string name = fmt::format("{} N={} {} {} {} {} P={} {} {}", model, workers, bandwidth, scheme,
                                         mode, order, shards, partition, barrier);
    SCOPED_TRACE(name);
    const FineAndCoarse r = fine_and_coarse(example, sets, workers);
    const double f = r.fine.throughput;
    const double c = r.coarse.throughput;
    const double relative = c / f - 1;
    if (scheme == "allreduce") {
      EXPECT_NEAR(c, f, 0.01 * f);
    } else if (mode == "sync") {
      EXPECT_NEAR(c, f, 0.10 * f);
    } else {
      const predict::AsyncPhases& range = r.coarse.async_phases;
      EXPECT_GE(r.fine.step_time, 0.95 * range.out_of_step);
      EXPECT_LE(r.fine.step_time, 1.03 * range.convoy);
    }
    ++total;
    if (std::fabs(relative) <= 0.10) {
      ++within;
    } else {
      beyond += fmt::format("\n  {:+.1f}% {}", 100 * relative, name);
    }
  }
  EXPECT_GE(within, 39) << "of " << total << " within 10% (regression pin); beyond:" << beyond;
}

// Asynchronous workers in a convoy (all pulling, then all pushing) run the synchronous step under
// the step barrier: each worker's pushes complete once applied, and the shard's lane applies every
// worker's copies as they come in, so a worker's next pulls follow nearly every apply. Out of step
// they do better, so an async job is never slower than that, whatever its phases: checked on a
// seeded set near the servers' knee, where the phases matter most (measured on
// tools/coarse_vs_fine.py's 88 async points of seeds 7-12 at five starts each: at most 1.0009
// times it). Under the per-tensor barrier the synchronous step pipelines the applies with the next
// pulls, which a convoy cannot: ResNet-152, 32 workers, 40 Gbps, 8 split shards in tic order, 20 us
// an apply, started together runs 472.5 ms a step against 385.3 ms in sync.
TEST(FinePs, AsyncIsNeverSlowerThanAConvoy) {
  const std::string example = std::string(STEPCAST_SOURCE_DIR) + "/examples/resnet50-ps.yaml";
  std::mt19937_64 rng(5);
  auto pick = [&rng](const std::vector<std::string>& from) {
    return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
  };
  for (int k = 0; k < 16; ++k) {
    const std::vector<std::string> sets = {
        "workload.model=" + pick({"resnet50", "vgg16", "alexnet"}),
        "cluster.nic_bandwidth=" + pick({"1Gbps", "10Gbps", "25Gbps"}),
        "training.ps.order=" + pick({"random", "fifo", "tic"}),
        "training.ps.count=" + pick({"1", "2", "4"}),
        "training.ps.partition=" + pick({"whole", "split"}),
        "training.mode=async",
        "training.ps.async_start=" + pick({"spread", "together", "random"}),
        "workload.single_worker_throughput=300"};
    const int workers = std::stoi(pick({"2", "4", "8"}));
    SCOPED_TRACE(fmt::format("N={} {}", workers, fmt::join(sets, " ")));
    const scenario::Scenario s = scenario::load_scenario(example, sets);
    const Workload w = scenario::build_workload(s);
    cluster::ClusterSpec spec = s.cluster;
    spec.workers = workers;
    SchemeConfig async = s.scheme;
    async.mode = Mode::Async;
    SchemeConfig convoy = async;
    convoy.mode = Mode::Sync;
    convoy.ps.barrier = scheme::PsBarrier::Step;
    convoy.ps.async_start = scheme::PsAsyncStart::Spread;
    const Result a = predict(w, spec, async, s.options);
    const Result b = predict(w, spec, convoy, s.options);
    EXPECT_LE(a.step_time, 1.01 * b.step_time);
  }
}

// Coarse's asynchronous step is a range (Result::async_phases): the workers out of step (the
// prediction) and in a convoy (the synchronous step under the step barrier, as above). Under fair
// sharing fine's workers keep their phases, so its step moves with where they start, and lies in
// the range: on tools/coarse_vs_fine.py's 88 async points of seeds 7-12 at five starts each
// (spread, together, three random), from 0.964 times the out-of-step step to 1.015 times the
// convoy, where the out-of-step value alone is more than 10% off on 22 (docs/validation.md). One
// worker has no phases: the range is one value.
// Regression pin: the margins 0.95 and 1.03 sit just outside those measured extremes (0.964 and
// 1.015, a7de674, 2026-12-03); on this seeded set fine lies from 0.979 times the out-of-step step
// to 1.000 times the convoy (f750b82, 2026-12-05). Not targets: fine must lie in the range.
TEST(FineVsCoarse, AsyncFineLiesBetweenCoarsesOutOfStepAndConvoySteps) {
  const std::string example = std::string(STEPCAST_SOURCE_DIR) + "/examples/resnet50-ps.yaml";
  std::mt19937_64 rng(17);
  auto pick = [&rng](const std::vector<std::string>& from) {
    return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
  };
  int wide = 0;  // points where the phases matter (the convoy over 10% slower)
  for (int k = 0; k < 10; ++k) {
    std::vector<std::string> sets = {"workload.model=" + pick({"resnet50", "vgg16", "alexnet"}),
                                     "cluster.nic_bandwidth=" + pick({"1Gbps", "10Gbps", "25Gbps"}),
                                     "training.ps.order=" + pick({"random", "fifo", "tic"}),
                                     "training.ps.count=" + pick({"1", "2", "4", "8"}),
                                     "training.ps.partition=" + pick({"whole", "split"}),
                                     "training.mode=async",
                                     "workload.single_worker_throughput=300"};
    const int workers = std::stoi(pick({"2", "4", "8", "16"}));
    SCOPED_TRACE(fmt::format("N={} {}", workers, fmt::join(sets, " ")));
    const FineAndCoarse spread = fine_and_coarse(example, sets, workers);
    const predict::AsyncPhases& range = spread.coarse.async_phases;
    EXPECT_EQ(range.out_of_step, spread.coarse.step_time);
    EXPECT_GE(range.convoy, range.out_of_step);
    if (range.convoy > 1.1 * range.out_of_step) ++wide;
    for (const char* start : {"spread", "together", "random"}) {
      std::vector<std::string> at = sets;
      at.push_back(std::string("training.ps.async_start=") + start);
      const double fine = start == std::string("spread") ? spread.fine.step_time
                                                          : fine_and_coarse(example, at, workers).fine.step_time;
      EXPECT_GE(fine, 0.95 * range.out_of_step) << start;
      EXPECT_LE(fine, 1.03 * range.convoy) << start;
    }
    const FineAndCoarse one = fine_and_coarse(example, sets, 1);
    EXPECT_NEAR(one.coarse.async_phases.convoy, one.coarse.async_phases.out_of_step,
                1e-9 * one.coarse.step_time);
  }
  EXPECT_GE(wide, 3);  // the set reaches the servers' knee, where the range matters
}

TEST(FineVsCoarse, TheExampleParameterServerAgreesWithin12PercentFromOneTo64Workers) {
  // examples/resnet50-ps.yaml (ResNet-50, 10 GbE, dedicated servers, random order) at 1 to 64
  // workers and 1 to 8 shards. Measured (coarse against fine, throughput) on 1, 2, 4 and 8 shards
  // at 1-64 workers: from -10.6% (64 workers, 8 shards) to +8.6% (32 workers, 1 shard), 27 of 28
  // points within 10%, and all 28 within 10% of fine with ten warm-up steps or the example's two
  // (before the pieces applied last were drained after their applies: -7.2% to +12.5%, 26 of 28;
  // before two workers were kept in step: up to +20.4% at 2 workers, 25 of 28;
  // before the timeline streamed pieces: -9.0% to +17.6%, 25 of 28; before pieces were counted by bytes,
  // the worker's own link kept out of the overlap and the applies overlapped: -17.6% to +13.5%,
  // 19 of 28); without the duplex heuristic coarse is 26-41% slower from 4 workers on.
  // Regression pin: the bound, 12%, sits just above the worst of the 12 points checked here,
  // -10.6% (64 workers, 8 shards; the largest above is +8.3%, 64 workers, 1 shard), measured at
  // f750b82 (2026-12-05), as on the 28-point grid above at 4fcc362 (2026-12-03); pinned so that
  // a change moving it is noticed. The goal is 10%, which this grid misses at that one point.
  const std::string example = std::string(STEPCAST_SOURCE_DIR) + "/examples/resnet50-ps.yaml";
  for (int shards : {1, 2, 8}) {
    const scenario::Scenario s =
        scenario::load_scenario(example, {"training.ps.count=" + std::to_string(shards)});
    const Workload w = scenario::build_workload(s);
    for (int n : {1, 4, 16, 64}) {
      cluster::ClusterSpec spec = s.cluster;
      spec.workers = n;
      Options fine = s.options, coarse = s.options;
      coarse.predictor = Predictor::Coarse;
      const double f = predict(w, spec, s.scheme, fine).throughput;
      const double c = predict(w, spec, s.scheme, coarse).throughput;
      EXPECT_NEAR(c, f, 0.12 * f) << n << " workers, " << shards << " shards";
    }
  }
}

TEST(CoarseParameterServer, AsyncThroughputRespectsThePsNicBound) {
  // Async: every worker step moves S_s bytes each way through a shard's NIC, so the servers allow
  // at most B/S_max steps/s (P B/S with split), i.e. batch B/S_max samples/s; and no more than N
  // times the rate of one worker alone.
  const Workload w = layered(8, 8e6, 4e-3, 8.5e-3);
  const double bw = 1e9;
  for (PsPartition partition : {PsPartition::Split, PsPartition::Whole}) {
    for (int n : {1, 2, 8, 16, 64, 256}) {
      for (int p : {1, 2, 4}) {
        SCOPED_TRACE(std::string("N = ") + std::to_string(n) + std::string(", P = ") + std::to_string(p) +
                     (partition == PsPartition::Split ? " split" : " whole"));
        const SchemeConfig scheme = ps(Mode::Async, p, partition);
        const auto shards = scheme::shard_bytes(scheme::place_parameters(w, scheme.ps), p);
        const double largest = *std::max_element(shards.begin(), shards.end());
        const Result r = predict(w, cluster_of(n, bw, 5e-6), scheme, kCoarse);
        const double cap = bw / largest * w.batch_per_worker;
        EXPECT_LE(r.throughput, cap * (1 + 1e-9));
        if (partition == PsPartition::Split) {
          EXPECT_LE(r.throughput, p * bw / 8e6 * w.batch_per_worker * (1 + 1e-9));
        }
        const Result one = predict(w, cluster_of(1, bw, 5e-6), scheme, kCoarse);
        EXPECT_LE(r.throughput, n * one.throughput * (1 + 1e-9));
        // The bound is reached: min(N x single, cap).
        const double expected = std::min(n * one.throughput, cap);
        EXPECT_NEAR(r.throughput, expected, 1e-9 * expected);
      }
    }
  }
}

}  // namespace fine_vs_coarse_test
}  // namespace
}  // namespace stepcast::predict

namespace stepcast::predict {
namespace {
namespace fine_vs_coarse_test {  // this file's own names: test files are compiled several to a unit

// The compute-overlap heuristic (Options::ps_compute_overlap_heuristic): ResNet-50, sync PS,
// need order (fifo), 8 and 16 workers, 2-4 shards split, 10-100 Gbps. Without it coarse put
// compute and both phases in series (29-37% slow at 16 workers and 100 Gbps, measured); with it
// coarse is within 10% of fine at every point, and never faster than compute or the two phases.
TEST(FineVsCoarse, NeedOrderedParameterServerOverlapsComputeWithin10Percent) {
  const Workload w = zoo::to_workload(zoo::get_model("resnet50"), {.batch_per_worker = 32, .step_time = 0.2});
  for (int n : {8, 16}) {
    for (int p : {2, 4}) {
      for (double gbps : {10.0, 25.0, 100.0}) {
        SCOPED_TRACE(fmt::format("N = {}, P = {}, {} Gbps", n, p, gbps));
        SchemeConfig scheme = ps(Mode::Sync, p, PsPartition::Split);
        scheme.ps.order = scheme::PsOrder::Fifo;
        const cluster::ClusterSpec spec = cluster_of(n, gbps * 1e9 / 8, 5e-6);
        const double fine = predict(w, spec, scheme, kFine).step_time;
        const double coarse = predict(w, spec, scheme, kCoarse).step_time;
        EXPECT_NEAR(coarse, fine, 0.1 * fine);
        EXPECT_GE(coarse, w.compute_time() * (1 - 1e-12));
      }
    }
  }
}

TEST(FineVsCoarse, AsyncNeedOrderedWorkersOverlapComputeWithin5Percent) {
  // Asynchronous tic and fifo with servers far from saturation: a worker's pulls feed its forward
  // and its pushes leave during its backward, as in the synchronous case. Without the
  // compute-overlap heuristic in async mode coarse put compute and two phases in series
  // (measured through the CLI: 32% slow on AlexNet, 2 workers, 25 Gbps, 8 shards, tic).
  for (const char* model : {"resnet50", "alexnet"}) {
    const Workload w = zoo::to_workload(zoo::get_model(model), {.batch_per_worker = 32, .step_time = 0.2});
    for (int n : {1, 2}) {
      for (double gbps : {10.0, 25.0, 100.0}) {
        for (scheme::PsOrder order : {scheme::PsOrder::Tic, scheme::PsOrder::Fifo}) {
          SCOPED_TRACE(fmt::format("{}, N = {}, {} Gbps, {}", model, n, gbps,
                                   order == scheme::PsOrder::Tic ? "tic" : "fifo"));
          SchemeConfig scheme = ps(Mode::Async, 2, PsPartition::Split);
          scheme.ps.order = order;
          const cluster::ClusterSpec spec = cluster_of(n, gbps * 1e9 / 8, 5e-6);
          const double fine = predict(w, spec, scheme, kFine).throughput;
          const double coarse = predict(w, spec, scheme, kCoarse).throughput;
          EXPECT_NEAR(coarse, fine, 0.05 * fine);
          Options serial = kCoarse;
          serial.ps_compute_overlap_heuristic = false;
          EXPECT_LE(predict(w, spec, scheme, serial).throughput, coarse * (1 + 1e-12));
        }
      }
    }
  }
}

}  // namespace fine_vs_coarse_test
}  // namespace
}  // namespace stepcast::predict
