// Transfer orders for parameter servers (training.ps.order: tic | tac | priority, issue 11): on a
// model whose parameters are created in another order than the forward pass reads them, tic and
// tac send what is needed first and beat creation order (fifo); on a plain chain of layers they
// are fifo. Under TensorFlow's step barrier (training.ps.barrier: step) they beat random averaged
// over seeds, the forward pass starts earlier, and the gain grows with the communication-to-
// compute ratio up to where communication is as long as the compute. Under the per-tensor
// barrier (the default) random is faster once the step is NIC-bound (10 GbE): the next step's
// pulls of pieces already updated overlap this step's pushes, which no order of a step's own
// pulls can beat (docs/models.md, "Parameter server (fine)").
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "layered_workload.hpp"
#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/workload/workload.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::scheme {
namespace {
namespace ps_order_test {  // this file's own names: test files are compiled several to a unit

using test_workloads::layered;
using test_workloads::mean_cycle;

using workload::Workload;

SchemeConfig ps_with(PsOrder order, double slice_bytes = 0, PsBarrier barrier = PsBarrier::PerTensor) {
  SchemeConfig s;
  s.scheme = Scheme::ParameterServer;
  s.mode = Mode::Sync;
  s.ps.count = 2;
  s.ps.order = order;
  s.ps.slice_bytes = slice_bytes;
  s.ps.barrier = barrier;
  return s;
}

double step_time(const Workload& w, const cluster::ClusterSpec& spec, PsOrder order, uint64_t seed = 1,
                 double slice_bytes = 0, PsBarrier barrier = PsBarrier::PerTensor) {
  return mean_cycle(simulate_steps(w, spec, ps_with(order, slice_bytes, barrier),
                                   {.warmup_steps = 1, .measure_steps = 3, .seed = seed}));
}

constexpr int kSeeds = 6;

double mean_random(const Workload& w, const cluster::ClusterSpec& spec,
                   PsBarrier barrier = PsBarrier::PerTensor) {
  double sum = 0;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed)
    sum += step_time(w, spec, PsOrder::Random, seed, 0, barrier);
  return sum / kSeeds;
}

/// Mean over the workers and measured steps of the time from a step's start to its first compute
/// op (the first forward op: it waits for its parameters), from the simulation's trace.
double first_forward_delay(const Workload& w, const cluster::ClusterSpec& spec, PsOrder order,
                           uint64_t seed) {
  SimulationOptions options{.warmup_steps = 1, .measure_steps = 3, .seed = seed};
  options.record_trace = true;
  const SimulationResult r = simulate_steps(w, spec, ps_with(order, 0, PsBarrier::Step), options);
  std::map<std::pair<int, int>, double> step_start, first_compute;
  for (const sim::TraceSpan& span : r.trace.spans) {
    if (span.step < options.warmup_steps) continue;
    const std::pair<int, int> key{span.process, span.step};
    if (span.category == "step") step_start[key] = span.start;
    if (span.category == "compute") {
      auto [it, added] = first_compute.emplace(key, span.start);
      if (!added) it->second = std::min(it->second, span.start);
    }
  }
  EXPECT_EQ(step_start.size(), static_cast<size_t>(spec.workers * options.measure_steps));
  double sum = 0;
  for (const auto& [key, start] : step_start) sum += first_compute.at(key) - start;
  return sum / static_cast<double>(step_start.size());
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

// The step barrier itself, closed form: negligible compute, 8 tensors of 8 MB (S = 64 MB) split
// over P shards. No pull
// of the next step leaves before the last push of this one is applied, so a step is the two
// contended phases one after the other, T = 2 (N S/(P B) + a), whatever the random order.
TEST(StepBarrier, RandomOrderExposesBothPhases) {
  const double bw = 1e9, a = 1e-9;
  const Workload eight = layered(8, 8e6, 1e-12, 1e-12);
  for (auto [n, p] : std::vector<std::pair<int, int>>{{2, 1}, {4, 1}, {8, 2}, {16, 4}}) {
    SCOPED_TRACE(fmt::format("N = {}, P = {}", n, p));
    cluster::ClusterSpec spec = eight_workers(bw);
    spec.workers = n;
    spec.latency = a;
    SchemeConfig scheme = ps_with(PsOrder::Random, 0, PsBarrier::Step);
    scheme.ps.count = p;
    scheme.ps.partition = PsPartition::Split;
    const double phase = n * 64e6 / (p * bw) + a;
    for (uint64_t seed : {1, 2, 3}) {
      const double t = mean_cycle(
          simulate_steps(eight, spec, scheme, {.warmup_steps = 1, .measure_steps = 3, .seed = seed}));
      EXPECT_NEAR(t, 2 * phase, 0.01 * phase) << "seed " << seed;
    }
  }
}

// TicTac's setting (the test): ResNet-50, 8 workers, 10 GbE, synchronous, TensorFlow's
// step barrier. tic, tac and priority are never slower than random averaged over six seeds, and a
// worker's first forward op starts earlier in every seed.
TEST(TicTac, UnderTheStepBarrierNeedOrdersBeatRandomAndStartTheForwardPassEarlier) {
  const Workload w = zoo::to_workload(zoo::get_model("resnet50"), {.batch_per_worker = 32, .step_time = 0.2});
  const cluster::ClusterSpec spec = eight_workers(1.25e9);
  const double random = mean_random(w, spec, PsBarrier::Step);
  for (PsOrder order : {PsOrder::Tic, PsOrder::Tac, PsOrder::Priority}) {
    const double t = step_time(w, spec, order, 1, 0, PsBarrier::Step);
    EXPECT_LE(t, random) << static_cast<int>(order);
    std::cout << "ResNet-50, 8 workers, 10 GbE, step barrier: order " << static_cast<int>(order) << " " << t
              << " s, random (6 seeds) " << random << " s\n";
  }
  const double tic_delay = first_forward_delay(w, spec, PsOrder::Tic, 1);
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    EXPECT_LT(tic_delay, first_forward_delay(w, spec, PsOrder::Random, seed)) << "seed " << seed;
  }
}

// The gain of tic over random grows with the communication-to-compute ratio while communication
// is shorter than the compute (ResNet-50, 8 workers, 2 shards: 400 to 50 Gbps NICs); past that the
// step is bound by the two transfer phases and ordering can hide at most the forward pass, so the
// relative gain falls again (docs/models.md, "Parameter server (fine)": 32.1% at 50 Gbps, 22.8% at
// 25, 5.2% at 10).
TEST(TicTac, TheGainGrowsWithTheCommunicationToComputeRatio) {
  const Workload w = zoo::to_workload(zoo::get_model("resnet50"), {.batch_per_worker = 32, .step_time = 0.2});
  double previous = 0;
  for (double gbps : {400.0, 200.0, 100.0, 50.0}) {
    const cluster::ClusterSpec spec = eight_workers(gbps * 1e9 / 8);
    const double gain =
        mean_random(w, spec, PsBarrier::Step) / step_time(w, spec, PsOrder::Tic, 1, 0, PsBarrier::Step) - 1;
    EXPECT_GT(gain, previous) << gbps << " Gbps";
    previous = gain;
  }
}

// The default per-tensor barrier lets random order's next-step pulls of pieces already updated
// overlap this step's pushes (the two directions of the links), which the step barrier forbids:
// random is faster under it, and there faster than tic (printed; docs/models.md, "Parameter server (fine)").
TEST(TicTac, PerTensorBarrierLetsRandomOrderOverlapTheNextStepsPulls) {
  const Workload w = zoo::to_workload(zoo::get_model("resnet50"), {.batch_per_worker = 32, .step_time = 0.2});
  const cluster::ClusterSpec spec = eight_workers(1.25e9);
  const double tic = step_time(w, spec, PsOrder::Tic);
  const double random = mean_random(w, spec);
  EXPECT_LT(random, 0.9 * mean_random(w, spec, PsBarrier::Step));
  std::cout << "ResNet-50, 8 workers, 10 GbE, per-tensor barrier: tic " << tic << " s, random (6 seeds) "
            << random << " s\n";
}

}  // namespace ps_order_test
}  // namespace
}  // namespace stepcast::scheme
