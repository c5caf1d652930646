// Scaling of a zoo model under ring all-reduce: more bandwidth means higher efficiency, one worker
// means speed-up 1.
#include <gtest/gtest.h>

#include <string>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::predict {
namespace {
namespace zoo_scaling_test {  // this file's own names: test files are compiled several to a unit

// ResNet-50 (25.6 M parameters, 102 MB of FP32 gradients), batch 64, 0.292 s per step alone.
workload::Workload resnet50() {
  return zoo::to_workload(zoo::get_model("resnet50"), {.batch_per_worker = 64, .step_time = 0.292});
}

cluster::ClusterSpec cluster_of(int workers, double gbps) {
  cluster::ClusterSpec spec;
  spec.workers = workers;
  spec.nic_bw = gbps * 1e9 / 8;
  spec.latency = 5e-6;
  return spec;
}

const Options kFine{.predictor = Predictor::Fine, .warmup_steps = 1, .measure_steps = 3};
const Options kCoarse{.predictor = Predictor::Coarse, .warmup_steps = 1, .measure_steps = 3};

TEST(ZooScaling, ResNet50RingEfficiencyRisesWithBandwidth) {
  // At 10 Gbps a 2(N-1)/N x 102 MB ring takes ~140-160 ms against 195 ms of backward, mostly hidden
  // but the last bucket is exposed; at 100 Gbps it takes ~15 ms. The exposed tail shrinks, so
  // efficiency = speedup / N is strictly higher with 100 Gbps, for both models.
  const workload::Workload w = resnet50();
  const scheme::SchemeConfig ring;  // DDP 25 MB buckets
  for (const Options& options : {kFine, kCoarse}) {
    double previous_slow = 2;
    double previous_fast = 2;
    for (int n : {2, 4, 8, 16}) {
      SCOPED_TRACE(std::string(to_string(options.predictor)) + ", N = " + std::to_string(n));
      const Result slow = predict(w, cluster_of(n, 10), ring, options);
      const Result fast = predict(w, cluster_of(n, 100), ring, options);
      EXPECT_GT(fast.efficiency, slow.efficiency);
      EXPECT_LE(fast.efficiency, 1 + 1e-9);
      EXPECT_GT(fast.efficiency, 0.9);  // 15 ms of ring under 195 ms of backward
      // The ring's per-worker bytes 2(N-1)/N S grow with N: efficiency never rises with N.
      EXPECT_LE(slow.efficiency, previous_slow * (1 + 1e-6));
      EXPECT_LE(fast.efficiency, previous_fast * (1 + 1e-6));
      previous_slow = slow.efficiency;
      previous_fast = fast.efficiency;
    }
  }
}

TEST(ZooScaling, OneWorkerHasSpeedupOne) {
  // N = 1: no collective at all, throughput = batch / compute time, the reference of speed-up.
  const workload::Workload w = resnet50();
  const scheme::SchemeConfig ring;
  for (const Options& options : {kFine, kCoarse}) {
    for (double gbps : {10.0, 100.0}) {
      SCOPED_TRACE(std::string(to_string(options.predictor)) + ", " + std::to_string(gbps) + " Gbps");
      const Result r = predict(w, cluster_of(1, gbps), ring, options);
      EXPECT_NEAR(r.speedup, 1.0, 1e-9);
      EXPECT_NEAR(r.efficiency, 1.0, 1e-9);
      EXPECT_NEAR(r.throughput, 64 / 0.292, 1e-9 * 64 / 0.292);
    }
  }
}

}  // namespace zoo_scaling_test
}  // namespace
}  // namespace stepcast::predict
