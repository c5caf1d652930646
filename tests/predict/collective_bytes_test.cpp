// The bytes every predictor reports for an all-reduce step: coarse and analytic count what the
// collective plan sends (scheme/costs.hpp), which is what the fine simulator moves, for every
// algorithm. Both used to count the ring's 2 (N-1)/N S per worker whatever the algorithm, which
// is wrong for the tree (its plan sends (depth + 7)/8 times that) and for hierarchical with a
// partly filled last node.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::predict {
namespace {
namespace collective_bytes_test {  // this file's own names: test files are compiled several to a unit

using scheme::AllReduceAlgorithm;

struct Case {
  AllReduceAlgorithm algorithm;
  cluster::ClusterSpec spec;
  bool ring_bytes;  ///< the plan sends the ring's 2 (N-1)/N S per worker
};

cluster::ClusterSpec cluster_of(int workers, int per_node) {
  cluster::ClusterSpec spec;
  spec.workers = workers;
  spec.workers_per_node = per_node;
  spec.nic_bw = 12.5e9;
  spec.latency = 5e-6;
  return spec;
}

TEST(CollectiveBytes, CoarseAndAnalyticCountWhatTheFineSimulatorSends) {
  const workload::Workload w =
      zoo::to_workload(zoo::get_model("resnet50"), {.batch_per_worker = 64, .step_time = 0.29});
  const double model = w.parameter_bytes();
  cluster::ClusterSpec bigraph = cluster_of(8, 1);
  bigraph.topology = cluster::Topology::BiGraph;
  bigraph.bigraph = {.switches_per_half = 4, .hosts_per_switch = 1};
  const std::vector<Case> cases = {
      {AllReduceAlgorithm::Ring, cluster_of(8, 1), true},
      {AllReduceAlgorithm::Ring, cluster_of(6, 4), true},
      {AllReduceAlgorithm::HalvingDoubling, cluster_of(8, 1), true},
      {AllReduceAlgorithm::Hdrm, bigraph, true},
      // Each of the trees has N - 1 edges and moves its share over each once each way: the ring's.
      {AllReduceAlgorithm::Tree, cluster_of(8, 1), true},
      {AllReduceAlgorithm::Tree, cluster_of(13, 1), true},
      {AllReduceAlgorithm::Tree, cluster_of(12, 4), true},
      {AllReduceAlgorithm::Auto, cluster_of(16, 8), true},
      {AllReduceAlgorithm::Hierarchical, cluster_of(8, 4), true},  // full nodes: as the ring
      {AllReduceAlgorithm::Hierarchical, cluster_of(5, 4), false},
  };
  for (const Case& c : cases) {
    const int n = c.spec.workers;
    SCOPED_TRACE(std::string(scheme::to_string(c.algorithm)) + ", N = " + std::to_string(n) + ", per node " +
                 std::to_string(c.spec.workers_per_node));
    scheme::SchemeConfig scheme;
    scheme.allreduce.algorithm = c.algorithm;
    Options options{.warmup_steps = 1, .measure_steps = 3};
    options.predictor = Predictor::Fine;
    const Result fine = predict(w, c.spec, scheme, options);
    options.predictor = Predictor::Coarse;
    const Result coarse = predict(w, c.spec, scheme, options);
    options.predictor = Predictor::Analytic;
    const Result analytic = predict(w, c.spec, scheme, options);
    ASSERT_GT(fine.bytes_sent, 0);
    EXPECT_NEAR(coarse.bytes_sent, fine.bytes_sent, 1e-9 * fine.bytes_sent);
    EXPECT_NEAR(analytic.bytes_sent, fine.bytes_sent, 1e-9 * fine.bytes_sent);
    EXPECT_EQ(coarse.bytes_received, coarse.bytes_sent);
    EXPECT_EQ(analytic.bytes_received, analytic.bytes_sent);
    // The number coarse and analytic reported before: the ring's bytes for every algorithm.
    const double ring = 2.0 * (n - 1) / n * model * n * options.measure_steps;
    if (c.ring_bytes) {
      EXPECT_NEAR(fine.bytes_sent, ring, 1e-9 * ring);
    } else {
      EXPECT_GT(std::abs(fine.bytes_sent - ring), 0.05 * ring) << "the ring's count would still be right";
    }
  }
}

}  // namespace collective_bytes_test
}  // namespace
}  // namespace stepcast::predict
