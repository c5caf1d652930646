// stepcast as a library: a scenario built in code (ResNet-50 from the zoo, 8 workers on 10 GbE,
// ring all-reduce), one prediction, and the stepcast::Error a bad input throws. Uses only the
// installed headers. scripts/test-package.sh builds and runs it against an install, and checks
// that the README's copy ("Use it as a library") still matches these lines.
#include <cstdio>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/error.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/units.hpp"
#include "stepcast/version.hpp"
#include "stepcast/zoo/model_zoo.hpp"

int main() {
  namespace sc = stepcast;
  std::printf("stepcast %s\n", STEPCAST_VERSION);

  // One V100 trains ResNet-50 at about 367 images/s with batch 64: 64 / 367 s per step.
  const sc::zoo::ModelSpec& model = sc::zoo::get_model("resnet50");
  auto workload = sc::zoo::to_workload(model, {.batch_per_worker = 64, .step_time = 64.0 / 367});
  // Internal units are SI: bytes/s and seconds (10 Gbps = 1.25e9 bytes/s).
  sc::cluster::ClusterSpec cluster{.workers = 8, .nic_bw = 1.25e9, .latency = 20e-6};
  sc::scheme::SchemeConfig scheme{.scheme = sc::scheme::Scheme::AllReduce};
  scheme.allreduce.algorithm = sc::scheme::AllReduceAlgorithm::Ring;
  sc::predict::Options options{.predictor = sc::predict::Predictor::Fine};

  sc::predict::Result r = sc::predict::predict(workload, cluster, scheme, options);
  std::printf("%s on %d workers, ring all-reduce over %s\n", model.name.c_str(), r.workers,
              sc::format_bandwidth(cluster.nic_bw).c_str());
  std::printf("step time: %s\n", sc::format_duration(r.step_time).c_str());
  std::printf("throughput: %.1f samples/s\n", r.throughput);
  std::printf("efficiency: %.0f%%, bottleneck: %s\n", 100 * r.efficiency, r.bottleneck.c_str());

  // Bad input throws stepcast::Error naming file, line and key; here a misspelt scenario key.
  try {
    auto bad = sc::scenario::parse_scenario("cluster: {worker: 8}\n", "inline.yaml");
  } catch (const sc::Error& e) {
    std::printf("rejected: %s\n", e.what());
  }
  return 0;
}
