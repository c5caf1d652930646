// The optimizer step (scheme/costs.hpp: optimizer_step_time): memory-bound at the GPU's memory
// bandwidth, over the parameters a worker updates, run after the step's gradient exchange and
// before the next step (worker_runtime.hpp). Closed forms on chains of layers where nothing
// overlaps it: one worker alone, DDP's all-reduce then the update, ZeRO-3's collectives then the
// shard's update, ZeRO-1's update between its reduce-scatter and its gathers; the same through
// the coarse and analytic predictors; and measured steps, which hold one worker's whole update.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "layered_workload.hpp"
#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/costs.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/error.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scenario/scenario.hpp"

namespace stepcast::scheme {
namespace {
namespace optimizer_step_test {  // this file's own names: test files are compiled several to a unit

constexpr double kExact = 1e-9;

bool close(double a, double b, double tolerance = kExact) {
  return std::fabs(a - b) <= tolerance * std::max({std::fabs(a), std::fabs(b), 1e-12});
}

using test_workloads::layered;

cluster::ClusterSpec plain_switch(int workers, double bw, double latency, double memory_bw) {
  cluster::ClusterSpec s;
  s.workers = workers;
  s.topology = cluster::Topology::Switch;
  s.nic_bw = bw;
  s.latency = latency;
  s.gpu_memory_bw = memory_bw;
  return s;
}

SchemeConfig scheme_of(Scheme kind, FsdpSharding sharding = FsdpSharding::Full) {
  SchemeConfig s;
  s.scheme = kind;
  s.fsdp.sharding = sharding;
  return s;
}

// fp32 parameters: 4 bytes each. 1e8 bytes = 2.5e7 parameters.
constexpr double kBytes = 1e8, kParameters = kBytes / 4;
constexpr double kMemoryBw = 2e12;

TEST(OptimizerStep, TimeIsTheBytesEachParameterMovesOverTheParametersUpdated) {
  // Adam reads the gradient, the weight and two moments and writes the weight and two moments;
  // momentum one moment; sgd none: 4 + 4 + 4 + 2 s bytes with s bytes of state.
  const workload::Workload w = layered({kBytes / 2, kBytes / 2}, 1e-3, 2e-3);
  const double adam = kParameters * 28 / kMemoryBw;
  const cluster::ClusterSpec eight = plain_switch(8, 1.25e9, 5e-6, kMemoryBw);
  EXPECT_TRUE(close(optimizer_step_time(w, eight, scheme_of(Scheme::AllReduce)), adam));
  SchemeConfig sgd = scheme_of(Scheme::AllReduce);
  sgd.optimizer = Optimizer::Sgd;
  EXPECT_TRUE(close(optimizer_step_time(w, eight, sgd), kParameters * 12 / kMemoryBw));
  sgd.optimizer = Optimizer::Momentum;
  EXPECT_TRUE(close(optimizer_step_time(w, eight, sgd), kParameters * 20 / kMemoryBw));
  // Every sharding updates the worker's shard only (ZeRO-1 included); hybrid its group's shard.
  for (FsdpSharding sharding : {FsdpSharding::Full, FsdpSharding::GradOp, FsdpSharding::Optimizer}) {
    EXPECT_TRUE(close(optimizer_step_time(w, eight, scheme_of(Scheme::Fsdp, sharding)), adam / 8));
  }
  SchemeConfig hybrid = scheme_of(Scheme::Fsdp, FsdpSharding::Hybrid);
  hybrid.fsdp.shard_group = 4;
  EXPECT_TRUE(close(optimizer_step_time(w, eight, hybrid), adam / 4));
  // Mixed precision moves the same bytes per parameter: fewer in the gradient read, a working
  // copy written.
  workload::Workload half = layered({kBytes / 4, kBytes / 4}, 1e-3, 2e-3);  // same 2.5e7 parameters
  half.precision = workload::Precision::FP16;
  EXPECT_TRUE(close(optimizer_step_time(half, eight, scheme_of(Scheme::AllReduce)), adam));
  // No cost: the servers apply the gradients; the bandwidth is unknown; the ops already hold it.
  EXPECT_EQ(optimizer_step_time(w, eight, scheme_of(Scheme::ParameterServer)), 0.0);
  EXPECT_EQ(optimizer_step_time(w, plain_switch(8, 1.25e9, 5e-6, 0), scheme_of(Scheme::AllReduce)), 0.0);
  workload::Workload traced = w;
  traced.optimizer_in_ops = true;
  EXPECT_EQ(optimizer_step_time(traced, eight, scheme_of(Scheme::AllReduce)), 0.0);
}

TEST(OptimizerStep, OneWorkerRunsItsComputeThenItsUpdate) {
  const workload::Workload w = layered({kBytes / 2, kBytes / 2}, 1e-3, 2e-3);
  const double compute = 2 * (1e-3 + 2e-3);
  const double update = kParameters * 28 / kMemoryBw;
  for (Scheme kind : {Scheme::AllReduce, Scheme::Fsdp}) {
    for (bool fast : {true, false}) {
      const SimulationResult r = simulate_steps(w, plain_switch(1, 1.25e9, 5e-6, kMemoryBw), scheme_of(kind),
                                                {.warmup_steps = 1, .measure_steps = 3, .fast_paths = fast});
      const WorkerTimes& t = r.workers.front();
      EXPECT_TRUE(close(t.cycle, compute + update))
          << static_cast<int>(kind) << " fast " << fast << ": " << t.cycle;
      // The update keeps the worker busy: it is compute, not communication.
      EXPECT_TRUE(close(t.compute, compute + update)) << static_cast<int>(kind);
      EXPECT_TRUE(close(t.communication + t.wait, 0.0)) << static_cast<int>(kind);
    }
  }
}

TEST(OptimizerStep, FollowsTheStepsLastCollectiveInEveryScheme) {
  // One tensor, negligible compute, N workers on a switch: a ring over N workers of S bytes takes
  // (N - 1) (S / (N B) + a). The update cannot start before the gradient is reduced, and the next
  // step's collectives cannot start before it ends, so the cycle is the collectives plus it:
  //   DDP: the all-reduce, 2 rings, then the whole update;
  //   ZeRO-3: gather, gather again, reduce-scatter, then 1/N of it;
  //   ZeRO-1: reduce-scatter, 1/N of the update, then the gather of the updated parameters.
  constexpr double kB = 12.5e9, kA = 5e-6, kOp = 1e-12;
  const workload::Workload w = layered({kBytes}, kOp, kOp);
  const double whole = kParameters * 28 / kMemoryBw;
  for (int n : {2, 4, 8}) {
    const double ring = (n - 1) * (kBytes / (n * kB) + kA);
    struct Variant {
      SchemeConfig scheme;
      double collectives, update;
    };
    const Variant variants[] = {{scheme_of(Scheme::AllReduce), 2 * ring, whole},
                                {scheme_of(Scheme::Fsdp, FsdpSharding::Full), 3 * ring, whole / n},
                                {scheme_of(Scheme::Fsdp, FsdpSharding::Optimizer), 2 * ring, whole / n}};
    for (const Variant& v : variants) {
      for (bool fast : {true, false}) {
        const SimulationResult r =
            simulate_steps(w, plain_switch(n, kB, kA, kMemoryBw), v.scheme,
                           {.warmup_steps = 1, .measure_steps = 2, .fast_paths = fast});
        const std::string what =
            fmt::format("{} workers, scheme {} sharding {}, fast {}", n, static_cast<int>(v.scheme.scheme),
                        static_cast<int>(v.scheme.fsdp.sharding), fast);
        const WorkerTimes& t = r.workers.front();
        EXPECT_TRUE(close(t.cycle, v.collectives + v.update + 2 * kOp)) << what << ": " << t.cycle;
        EXPECT_TRUE(close(t.communication + t.wait, v.collectives)) << what;
        EXPECT_TRUE(close(t.compute, v.update + 2 * kOp)) << what;
      }
    }
  }
}

TEST(OptimizerStep, CoarseAndAnalyticCountItAsTheFineEngineDoes) {
  // Compute far above communication (1 s of ops, 1 MB over 100 Gb/s): every predictor's step is
  // the compute plus what cannot hide plus the update; the update is the same term in all three.
  const workload::Workload w = layered({5e5, 5e5}, 0.25, 0.25);
  const cluster::ClusterSpec spec = plain_switch(4, 12.5e9, 5e-6, kMemoryBw);
  cluster::ClusterSpec free_update = spec;
  free_update.gpu_memory_bw = 0;
  const double update = (1e6 / 4) * 28 / kMemoryBw;
  for (const SchemeConfig& scheme : {scheme_of(Scheme::AllReduce), scheme_of(Scheme::Fsdp)}) {
    for (predict::Predictor p :
         {predict::Predictor::Fine, predict::Predictor::Coarse, predict::Predictor::Analytic}) {
      const predict::Options options{.predictor = p, .warmup_steps = 1, .measure_steps = 2};
      const predict::Result with = predict::predict(w, spec, scheme, options);
      const predict::Result without = predict::predict(w, free_update, scheme, options);
      const double expected = scheme.scheme == Scheme::Fsdp ? update / 4 : update;
      EXPECT_TRUE(close(with.optimizer_step_time, expected)) << to_string(p);
      EXPECT_TRUE(close(with.step_time - without.step_time, expected, 1e-6))
          << to_string(p) << " scheme " << static_cast<int>(scheme.scheme);
      EXPECT_TRUE(close(with.breakdown.compute - without.breakdown.compute, expected, 1e-6)) << to_string(p);
      EXPECT_EQ(without.optimizer_step_time, 0.0);
    }
  }
}

TEST(OptimizerStep, MoreMemoryBandwidthNeverSlowsAStep) {
  const workload::Workload w = layered({3e7, 1e7, 5e7, 2e7}, 2e-3, 4e-3);
  for (const SchemeConfig& scheme :
       {scheme_of(Scheme::AllReduce), scheme_of(Scheme::Fsdp, FsdpSharding::Full),
        scheme_of(Scheme::Fsdp, FsdpSharding::GradOp), scheme_of(Scheme::Fsdp, FsdpSharding::Optimizer)}) {
    double previous = 1e300;
    for (double bw : {1e10, 1e11, 1e12, 0.0}) {  // 0: a free update, the limit
      const SimulationResult r =
          simulate_steps(w, plain_switch(8, 3e9, 5e-6, bw), scheme, {.warmup_steps = 1, .measure_steps = 2});
      EXPECT_LE(r.workers.front().cycle, previous * (1 + kExact)) << "bandwidth " << bw;
      previous = r.workers.front().cycle;
    }
  }
}

// ---- Scenarios: a measured step holds one worker's whole update.

constexpr const char* kMeasured =
    "workload: {model: resnet50, step_time: 100ms, batch_per_worker: 32}\n"
    "cluster: {workers: 1, gpu: {memory_bandwidth: 900GB/s}}\n"
    "training: {scheme: allreduce}\n";

TEST(OptimizerStepScenario, AMeasuredStepKeepsItsTimeForOneWorkerWithItsUpdateTakenOut) {
  const scenario::Scenario s = scenario::parse_scenario(kMeasured, "m.yaml");
  EXPECT_EQ(s.cluster.gpu_memory_bw, 900e9);
  const workload::Workload w = scenario::build_workload(s);
  const double update = 25557032.0 * 28 / 900e9;  // ResNet-50's parameters, Adam
  EXPECT_TRUE(close(w.compute_time(), 0.1 - update, 1e-12)) << w.compute_time();
  for (predict::Predictor p :
       {predict::Predictor::Fine, predict::Predictor::Coarse, predict::Predictor::Analytic}) {
    predict::Options options = s.options;
    options.predictor = p;
    const predict::Result r = predict::predict(w, s.cluster, s.scheme, options);
    EXPECT_TRUE(close(r.step_time, 0.1, 1e-9)) << to_string(p) << " " << r.step_time;
    EXPECT_TRUE(close(r.optimizer_step_time, update)) << to_string(p);
  }
  // Sharded over 8 workers, each worker updates an eighth of the parameters.
  const scenario::Scenario sharded =
      scenario::parse_scenario(kMeasured, "m.yaml", {"cluster.workers=8", "training.scheme=fsdp"});
  const predict::Result r =
      predict::predict(scenario::build_workload(sharded), sharded.cluster, sharded.scheme, sharded.options);
  EXPECT_TRUE(close(r.optimizer_step_time, update / 8));
  // A parameter server's workers run no update: the servers apply the gradients.
  const scenario::Scenario ps = scenario::parse_scenario(kMeasured, "m.yaml", {"training.scheme=ps"});
  const predict::Result served =
      predict::predict(scenario::build_workload(ps), ps.cluster, ps.scheme, ps.options);
  EXPECT_EQ(served.optimizer_step_time, 0.0);
}

TEST(OptimizerStepScenario, ABandwidthTooLowForTheMeasuredStepIsAnErrorAtItsLine) {
  try {
    (void)scenario::parse_scenario(kMeasured, "m.yaml", {"cluster.gpu.memory_bandwidth=1GB/s"});
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cluster.gpu.memory_bandwidth"), std::string::npos) << what;
    EXPECT_NE(what.find("measured step"), std::string::npos) << what;
  }
}

}  // namespace optimizer_step_test
}  // namespace
}  // namespace stepcast::scheme
