// Properties every prediction must have, over seeded random scenarios (zoo model, scheme, N, P,
// bandwidth); the seed is printed on failure. STYLE.md "Testing": same seed same result, bytes
// conserved, all-reduce at N = 1 equals the compute-only rate; plus monotonicity in bandwidth and a
// breakdown that adds up to the step time.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::predict {
namespace {
namespace properties_test {  // this file's own names: test files are compiled several to a unit

using scheme::Mode;
using scheme::PsOrder;
using scheme::PsPartition;
using scheme::PsPlacement;
using scheme::Scheme;
using scheme::SchemeConfig;

struct Scenario {
  workload::Workload workload;
  cluster::ClusterSpec cluster;
  SchemeConfig scheme;
  std::string description;
};

/// A scenario drawn from `seed`: one of the smaller zoo models with a plausible single-worker step
/// time, PS (sync or async, 1..4 shards, any partition/order, co-located when it fits) or ring
/// all-reduce (DDP 25 MB buckets or one per gradient), N in 1..16, 1..100 Gbps.
Scenario random_scenario(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  struct ModelChoice {
    const char* name;
    int batch;
    double step_time;
  };
  const ModelChoice models[] = {{"alexnet", 128, 0.12}, {"resnet50", 64, 0.29}, {"bert-base", 32, 0.35}};
  const ModelChoice& m = models[pick(0, 2)];
  Scenario s;
  s.workload =
      zoo::to_workload(zoo::get_model(m.name), {.batch_per_worker = m.batch, .step_time = m.step_time});
  s.cluster.workers = pick(1, 16);
  s.cluster.workers_per_node = pick(1, 2);
  const double gbps = std::uniform_real_distribution<double>(1, 100)(rng);
  s.cluster.nic_bw = gbps * 1e9 / 8;
  s.cluster.latency = 5e-6;
  const int kind = pick(0, 2);
  if (kind == 2) {
    s.scheme.scheme = Scheme::AllReduce;
    s.scheme.allreduce.bucket_bytes = pick(0, 1) ? 25e6 : 0;
  } else {
    s.scheme.scheme = Scheme::ParameterServer;
    s.scheme.mode = kind == 0 ? Mode::Sync : Mode::Async;
    s.scheme.ps.count = pick(1, 4);
    s.scheme.ps.partition = pick(0, 1) ? PsPartition::Split : PsPartition::Whole;
    s.scheme.ps.order = pick(0, 1) ? PsOrder::Fifo : PsOrder::Random;
    const bool fits = s.scheme.ps.count <= s.cluster.num_worker_nodes();
    s.scheme.ps.placement = fits && pick(0, 3) == 0 ? PsPlacement::Colocated : PsPlacement::Dedicated;
    if (s.scheme.ps.placement == PsPlacement::Dedicated && pick(0, 1))
      s.cluster.ps_nic_bw = 2 * s.cluster.nic_bw;
  }
  s.description = fmt::format(
      "seed {}: {} N={} per_node={} {:.1f} Gbps ps_nic_bw={} {}", seed, m.name, s.cluster.workers,
      s.cluster.workers_per_node, gbps, s.cluster.ps_nic_bw,
      s.scheme.scheme == Scheme::AllReduce
          ? fmt::format("allreduce bucket={}", s.scheme.allreduce.bucket_bytes)
          : fmt::format("ps {} P={} {} {} {}", s.scheme.mode == Mode::Sync ? "sync" : "async",
                        s.scheme.ps.count, s.scheme.ps.partition == PsPartition::Split ? "split" : "whole",
                        s.scheme.ps.order == PsOrder::Fifo ? "fifo" : "random",
                        s.scheme.ps.placement == PsPlacement::Colocated ? "colocated" : "dedicated"));
  return s;
}

/// 30 by default (~0.3 s in Release); STEPCAST_PROPERTY_SCENARIOS=N explores more.
int scenario_count() {
  const char* env = std::getenv("STEPCAST_PROPERTY_SCENARIOS");
  return env != nullptr && std::atoi(env) > 0 ? std::atoi(env) : 30;
}
const Options kFine{.predictor = Predictor::Fine, .warmup_steps = 1, .measure_steps = 2};
const Options kCoarse{.predictor = Predictor::Coarse, .warmup_steps = 1, .measure_steps = 2};

double relative(double a, double b) { return std::abs(a - b) / std::max({std::abs(a), std::abs(b), 1e-300}); }

TEST(PredictProperties, RandomScenarios) {
  const auto scenarios = static_cast<uint64_t>(scenario_count());
  for (uint64_t seed = 1; seed <= scenarios; ++seed) {
    const Scenario s = random_scenario(seed);
    SCOPED_TRACE(s.description);
    const Result fine = predict(s.workload, s.cluster, s.scheme, kFine);
    ASSERT_GT(fine.step_time, 0);
    ASSERT_GT(fine.throughput, 0);

    // (a) More bandwidth never hurts: doubling every NIC (worker and server) leaves each transfer
    // at most as long, so the step can only shorten. 1e-6 relative slack for rounding.
    cluster::ClusterSpec fast = s.cluster;
    fast.nic_bw *= 2;
    fast.ps_nic_bw *= 2;
    const Result fine_fast = predict(s.workload, fast, s.scheme, kFine);
    EXPECT_GE(fine_fast.throughput, fine.throughput * (1 - 1e-6));
    const Result coarse = predict(s.workload, s.cluster, s.scheme, kCoarse);
    const Result coarse_fast = predict(s.workload, fast, s.scheme, kCoarse);
    EXPECT_GE(coarse_fast.throughput, coarse.throughput * (1 - 1e-6));

    // (b) Every byte that leaves a device over a link arrives at one: a path is up links then the
    // same number of down links (a ring member too), so totals match.
    EXPECT_LE(relative(fine.bytes_sent, fine.bytes_received), 1e-9)
        << fine.bytes_sent << " sent vs " << fine.bytes_received << " received";
    EXPECT_EQ(coarse.bytes_sent, coarse.bytes_received);
    if (s.cluster.workers > 1) {
      EXPECT_GT(fine.bytes_sent, 0);
    }

    // (c) Deterministic for a seed.
    EXPECT_TRUE(predict(s.workload, s.cluster, s.scheme, kFine) == fine);
    EXPECT_TRUE(predict(s.workload, s.cluster, s.scheme, kCoarse) == coarse);

    // (d) compute + exposed communication + wait = step time (each worker's cycle splits that way,
    // and both sides are means over the same workers and steps).
    const Breakdown& b = fine.breakdown;
    EXPECT_LE(relative(b.compute + b.communication_exposed + b.wait, fine.step_time), 1e-6);
    EXPECT_GE(b.compute, 0);
    EXPECT_GE(b.communication_exposed, 0);
    EXPECT_GE(b.wait, 0);
    // One lane: a worker computes exactly the workload's op time per step.
    EXPECT_LE(relative(b.compute, s.workload.compute_time()), 1e-9);

    // Derived fields agree with each other; no resource busier than 100%.
    EXPECT_LE(relative(fine.efficiency * fine.workers, fine.speedup), 1e-12);
    EXPECT_LE(
        relative(fine.speedup, fine.throughput * s.workload.compute_time() / s.workload.batch_per_worker),
        1e-9);
    for (const Utilization& u : fine.utilization) EXPECT_LE(u.busy, 1 + 1e-6) << u.resource;
    // Nobody beats training alone without communication.
    EXPECT_LE(fine.efficiency, 1 + 1e-9);

    // (e) The links: with every link kept (--all-links), the NICs' and buses' uplinks carry
    // exactly bytes_sent (the same bytes, counted per link); the default keeps the busiest 10 of
    // that list, in its order, and counts the others.
    Options all_links = kFine;
    all_links.links_kept = 0;
    const Result every = predict(s.workload, s.cluster, s.scheme, all_links);
    EXPECT_EQ(every.links_left_out, 0u);
    double uplinks = 0;
    for (std::size_t i = 0; i < every.links.size(); ++i) {
      const sim::LinkLoad& l = every.links[i];
      EXPECT_GT(l.bytes, 0) << l.name;
      EXPECT_LE(l.busy, 1 + 1e-6) << l.name;
      if (i > 0) {
        EXPECT_GE(every.links[i - 1].busy, l.busy) << "busiest first";
      }
      const bool device_uplink = l.name.ends_with(".up") && (l.name.find(".nic") != std::string::npos ||
                                                             l.name.find(".bus") != std::string::npos);
      if (device_uplink) uplinks += l.bytes;
    }
    EXPECT_LE(relative(uplinks, fine.bytes_sent), 1e-9)
        << uplinks << " on uplinks, " << fine.bytes_sent << " sent";
    const std::size_t kept = std::min<std::size_t>(every.links.size(), 10);
    ASSERT_EQ(fine.links.size(), kept);
    EXPECT_EQ(fine.links_left_out, every.links.size() - kept);
    for (std::size_t i = 0; i < kept; ++i) EXPECT_EQ(fine.links[i], every.links[i]);
  }
}

TEST(PredictProperties, SlowingTimeByKScalesTheStepByK) {
  // Units check: multiply every duration (ops, latencies) by k and divide every bandwidth by k;
  // each event happens k times later, so the step time scales by k and the bytes stay the same. Any
  // hidden absolute time or rate constant in a model would break this. k is a power of two so that
  // the scaling is exact in floating point: with k = 3, rounding can reorder near-ties and a
  // random-order sync PS schedule then drifts (seen: 0.08% on 2 of 200 scenarios).
  for (const double k : {2.0, 0.5}) {
    for (uint64_t seed = 1; seed <= static_cast<uint64_t>(scenario_count()); ++seed) {
      const Scenario s = random_scenario(seed);
      SCOPED_TRACE(s.description + ", k = " + std::to_string(k));
      Scenario slow = s;
      for (workload::Op& op : slow.workload.ops) op.duration *= k;
      slow.cluster.nic_bw /= k;
      slow.cluster.ps_nic_bw /= k;
      slow.cluster.intra_node_bw /= k;
      slow.cluster.latency *= k;
      slow.cluster.intra_node_latency *= k;
      for (const Options& options : {kFine, kCoarse}) {
        SCOPED_TRACE(to_string(options.predictor));
        const Result a = predict(s.workload, s.cluster, s.scheme, options);
        const Result b = predict(slow.workload, slow.cluster, slow.scheme, options);
        EXPECT_LE(relative(b.step_time, k * a.step_time), 1e-6);
        EXPECT_LE(relative(b.throughput, a.throughput / k), 1e-6);
        EXPECT_LE(relative(b.speedup, a.speedup), 1e-6);
        EXPECT_LE(relative(b.bytes_sent, a.bytes_sent), 1e-6);
      }
    }
  }
}

TEST(PredictProperties, AllReduceOnOneWorkerIsTheComputeRate) {
  // (e) N = 1: nothing to reduce, so the step is the compute time and the rate batch/compute, for
  // every model, bucket size and bandwidth; speed-up exactly 1.
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    Scenario s = random_scenario(seed);
    s.cluster.workers = 1;
    s.cluster.workers_per_node = 1;
    s.scheme = SchemeConfig{};
    s.scheme.allreduce.bucket_bytes = seed % 2 ? 25e6 : 0;
    SCOPED_TRACE(s.description);
    const double rate = s.workload.batch_per_worker / s.workload.compute_time();
    for (const Options& options : {kFine, kCoarse}) {
      SCOPED_TRACE(to_string(options.predictor));
      const Result r = predict(s.workload, s.cluster, s.scheme, options);
      EXPECT_NEAR(r.throughput, rate, 1e-9 * rate);
      EXPECT_NEAR(r.step_time, s.workload.compute_time(), 1e-9 * s.workload.compute_time());
      EXPECT_NEAR(r.speedup, 1.0, 1e-9);
      EXPECT_NEAR(r.breakdown.communication_exposed + r.breakdown.wait, 0.0, 1e-12);
      EXPECT_EQ(r.bytes_sent, 0);
    }
  }
}

// Two lanes that overlap (a CPU thread launching while the GPU computes, as in a profile): the
// compute part of the breakdown is the wall time with some lane busy, not the sum over lanes, so
// compute + exposed communication + wait still equals the step time when the all-reduce shows.
TEST(PredictProperties, BreakdownAddsUpWithOverlappingLanes) {
  workload::Workload w;
  w.name = "two-lanes";
  w.lanes = {"cpu", "gpu"};
  // cpu: 30 ms of launching; gpu: forward 40 ms, backward 60 ms producing one 100 MB gradient.
  auto add = [&w](const char* name, workload::OpKind kind, double duration, int lane, std::vector<int> deps) {
    workload::Op op;
    op.name = name;
    op.kind = kind;
    op.duration = duration;
    op.lane = lane;
    op.deps = std::move(deps);
    w.ops.push_back(std::move(op));
  };
  add("launch", workload::OpKind::Other, 0.030, 0, {});
  add("fwd", workload::OpKind::Forward, 0.040, 1, {});
  add("bwd", workload::OpKind::Backward, 0.060, 1, {1});
  w.tensors.push_back({.name = "w", .bytes = 100e6, .producer = 2, .consumers = {1}});
  ASSERT_EQ(workload::validate(w), "");
  ASSERT_NEAR(w.step_time_alone(), 0.100, 1e-12);  // the lanes overlap: 100 ms, not 130
  cluster::ClusterSpec spec;
  spec.workers = 4;
  spec.nic_bw = 1.25e9;  // 10 Gbps: a 150 ms ring, fully exposed after the backward op
  spec.latency = 5e-6;
  SchemeConfig scheme;
  scheme.scheme = Scheme::AllReduce;
  const Result r = predict(w, spec, scheme, kFine);
  const Breakdown& b = r.breakdown;
  EXPECT_NEAR(b.compute + b.communication_exposed + b.wait, r.step_time, 1e-9 * r.step_time);
  EXPECT_NEAR(b.compute, 0.100, 1e-9) << "busy wall time, each lane counted once";
  EXPECT_NEAR(b.communication_exposed, ring_allreduce_time(100e6, 4, 1.25e9, 5e-6), 1e-9);
}

}  // namespace properties_test
}  // namespace
}  // namespace stepcast::predict
