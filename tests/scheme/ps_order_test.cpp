// Transfer orders for parameter servers (training.ps.order: tic | tac | priority, issue 11): on a
// model whose parameters are created in another order than the forward pass reads them, tic and
// tac send what is needed first and beat creation order (fifo); on a plain chain of layers they
// are fifo. Against random (averaged over seeds) they are NOT faster in this model's synchronous
// PS (README, "Parameter server (fine)"): the comparison is printed, not asserted.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "layered_workload.hpp"
#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/workload/workload.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::scheme {
namespace {

using test_workloads::layered;
using test_workloads::mean_cycle;

using workload::Workload;

SchemeConfig ps_with(PsOrder order, double slice_bytes = 0) {
  SchemeConfig s;
  s.scheme = Scheme::ParameterServer;
  s.mode = Mode::Sync;
  s.ps.count = 2;
  s.ps.order = order;
  s.ps.slice_bytes = slice_bytes;
  return s;
}

double step_time(const Workload& w, const cluster::ClusterSpec& spec, PsOrder order, uint64_t seed = 1,
                 double slice_bytes = 0) {
  return mean_cycle(simulate_steps(w, spec, ps_with(order, slice_bytes),
                                   {.warmup_steps = 1, .measure_steps = 3, .seed = seed}));
}

double mean_random(const Workload& w, const cluster::ClusterSpec& spec) {
  double sum = 0;
  constexpr int kSeeds = 6;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) sum += step_time(w, spec, PsOrder::Random, seed);
  return sum / kSeeds;
}

cluster::ClusterSpec eight_workers(double nic_bw) {
  cluster::ClusterSpec spec;
  spec.workers = 8;
  spec.nic_bw = nic_bw;
  return spec;
}

TEST(TicTac, NeededFirstBeatsCreationOrderWhenTheyDiffer) {
  // 8 layers of 4 MB, 5 ms of forward each: with creation order the first forward op waits for
  // every other parameter; tic and tac send layer 0's first.
  const Workload w = layered(8, 4e6, 5e-3, 10e-3, /*head_first=*/true);
  const cluster::ClusterSpec spec = eight_workers(1.25e9);
  const double tic = step_time(w, spec, PsOrder::Tic);
  const double tac = step_time(w, spec, PsOrder::Tac);
  EXPECT_LT(tic, step_time(w, spec, PsOrder::Fifo) * 0.95);
  EXPECT_DOUBLE_EQ(tic, tac);  // one lane: depth order and start order agree
  std::cout << "reversed chain, 8 workers, 10 GbE: tic " << tic << " s, random (6 seeds) "
            << mean_random(w, spec) << " s\n";
}

TEST(TicTac, OnAChainOfLayersTicIsFifo) {
  // VGG-16, 8 workers, 10 GbE, sync: creation order is the forward order, so tic = fifo.
  const Workload w = zoo::to_workload(zoo::get_model("vgg16"), {.batch_per_worker = 32, .step_time = 0.25});
  const cluster::ClusterSpec slow = eight_workers(1.25e9);
  const double tic = step_time(w, slow, PsOrder::Tic);
  // (fifo takes the exact fast path, tic the full engine: equal to rounding)
  const double fifo = step_time(w, slow, PsOrder::Fifo);
  EXPECT_NEAR(tic, fifo, 1e-9 * fifo);
  std::cout << "VGG-16, 8 workers, 10 GbE: tic " << tic << " s, random (6 seeds) " << mean_random(w, slow)
            << " s\n";
}

// P3's priority (order: priority) ranks by the position of a parameter's first reader in the op
// order: on a chain that is the dependency depth, so priority = tic, and it beats creation order
// where the model creates its parameters head first.
TEST(P3Priority, OnAChainPriorityIsTicAndBeatsCreationOrderWhenTheyDiffer) {
  const Workload reversed = layered(8, 4e6, 5e-3, 10e-3, /*head_first=*/true);
  const cluster::ClusterSpec spec = eight_workers(1.25e9);
  const double priority = step_time(reversed, spec, PsOrder::Priority);
  EXPECT_DOUBLE_EQ(priority, step_time(reversed, spec, PsOrder::Tic));
  EXPECT_LT(priority, step_time(reversed, spec, PsOrder::Fifo) * 0.95);
}

// Slicing moves the same bytes: every slice of a piece crosses the same links, so the bytes sent
// in the measured steps are those of whole pieces, whatever the order.
TEST(P3Priority, SlicingConservesTheBytesSent) {
  const Workload w = layered({1e6, 1e6, 1e6, 40e6}, 2e-3, 4e-3);
  const cluster::ClusterSpec spec = eight_workers(1.25e9);
  for (PsOrder order : {PsOrder::Random, PsOrder::Fifo, PsOrder::Priority}) {
    const SimulationResult whole =
        simulate_steps(w, spec, ps_with(order), {.warmup_steps = 1, .measure_steps = 3});
    const SimulationResult sliced =
        simulate_steps(w, spec, ps_with(order, 1e6), {.warmup_steps = 1, .measure_steps = 3});
    EXPECT_NEAR(sliced.bytes_sent, whole.bytes_sent, 1e-9 * whole.bytes_sent) << static_cast<int>(order);
  }
}

}  // namespace
}  // namespace stepcast::scheme
