// Parameter servers with multi-GPU nodes: local aggregation sends one gradient per node and
// pulls one copy per node, so a node's NIC carries 1/g of the bytes it carries when each of its
// g GPUs talks to the servers.
#include <gtest/gtest.h>

#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::scheme {
namespace {
namespace local_aggregation_test {  // this file's own names: test files are compiled several to a unit

struct Outcome {
  double step_time = 0;
  double bytes_per_step = 0;  // over all NICs and intra-node links, sent
};

Outcome run(int workers, int per_node, bool local_aggregation) {
  const workload::Workload w =
      zoo::to_workload(*zoo::find_model("alexnet"), {.batch_per_worker = 32, .step_time = 0.05});
  cluster::ClusterSpec spec;
  spec.workers = workers;
  spec.workers_per_node = per_node;
  spec.nic_bw = 3.125e9;
  spec.intra_node_bw = 100e9;
  SchemeConfig scheme;
  scheme.scheme = Scheme::ParameterServer;
  scheme.ps.count = 2;
  scheme.ps.partition = PsPartition::Split;
  scheme.ps.order = PsOrder::Fifo;
  scheme.ps.local_aggregation = local_aggregation;
  const SimulationResult r = simulate_steps(w, spec, scheme, {.warmup_steps = 1, .measure_steps = 3});
  double cycle = 0;
  for (const WorkerTimes& t : r.workers) cycle += t.cycle;
  return {cycle / workers, r.bytes_sent / (r.window / (cycle / workers))};
}

TEST(LocalAggregation, NodeNicCarriesOneCopyPerNode) {
  const workload::Workload w =
      zoo::to_workload(*zoo::find_model("alexnet"), {.batch_per_worker = 32, .step_time = 0.05});
  const double model = w.parameter_bytes();
  // 2 nodes x 4 GPUs. Without aggregation every GPU pulls and pushes the model through the node
  // NIC: 8 x 2 x S per step over the NICs. With it, each node pulls and pushes once over its NIC
  // (2 x 2 x S) and moves 3 copies each way over the intra-node links (2 x 2 x 3 x S).
  const Outcome flat = run(8, 4, false);
  const Outcome local = run(8, 4, true);
  EXPECT_NEAR(flat.bytes_per_step, 8 * 2 * model, 0.15 * 8 * 2 * model);
  EXPECT_NEAR(local.bytes_per_step, 2 * 2 * model + 2 * 2 * 3 * model, 0.15 * 16 * model);
  EXPECT_LT(local.step_time, flat.step_time);
}

TEST(LocalAggregation, OneGpuPerNodeChangesNothing) {
  const Outcome flat = run(4, 1, false);
  const Outcome local = run(4, 1, true);
  EXPECT_DOUBLE_EQ(flat.step_time, local.step_time);
}

TEST(LocalAggregation, ScalesWithNodesNotGpusWhenTheNicIsTheBottleneck) {
  // The node NIC moves 2S per step whatever g is, so adding GPUs to a node keeps the step time
  // while the servers are not saturated.
  const double two = run(4, 2, true).step_time;
  const double four = run(8, 4, true).step_time;
  EXPECT_NEAR(four, two, 0.1 * two);
}

// Async with local aggregation: GPUs of a node that drift apart used to receive the broadcast of
// the node's next pull while still finishing the previous step, lose it, and wait forever. Every
// GPU must complete its steps, with the node NIC still carrying one copy per node.
TEST(LocalAggregation, AsyncNodesCompleteEveryStep) {
  const workload::Workload w =
      zoo::to_workload(*zoo::find_model("resnet50"), {.batch_per_worker = 32, .step_time = 0.2});
  for (int per_node : {2, 3, 4}) {
    SCOPED_TRACE(per_node);
    cluster::ClusterSpec spec;
    spec.workers = 12;
    spec.workers_per_node = per_node;
    spec.nic_bw = 12e9;
    spec.latency = 5e-6;
    SchemeConfig scheme;
    scheme.scheme = Scheme::ParameterServer;
    scheme.mode = Mode::Async;
    scheme.ps.count = 2;
    scheme.ps.local_aggregation = true;
    const SimulationResult r = simulate_steps(w, spec, scheme, {.warmup_steps = 1, .measure_steps = 3});
    ASSERT_EQ(r.workers.size(), 12u);
    for (const WorkerTimes& t : r.workers) {
      EXPECT_GE(t.cycle, w.step_time_alone() * (1 - 1e-9));
      EXPECT_LT(t.cycle, 2 * w.step_time_alone()) << "12 GB/s moves ResNet-50 in under 10 ms";
    }
  }
}

}  // namespace local_aggregation_test
}  // namespace
}  // namespace stepcast::scheme
