// Test helper shared by the parameter-server suites: a one-lane chain of layers, each with one
// tensor, a switch cluster, and the mean step of a simulation.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast::scheme::test_workloads {

/// Forward ops of layers 0..L-1 then backward ops L-1..0 on one lane; layer l has one tensor of
/// tensor_bytes[l], read by its forward op and produced by its backward op. The tensors are created
/// in layer order (as a model creates its variables), or with `head_first` from the last layer down.
inline workload::Workload layered(const std::vector<double>& tensor_bytes, double forward_time,
                                  double backward_time, bool head_first = false) {
  const int layers = static_cast<int>(tensor_bytes.size());
  workload::Workload w;
  w.name = "layered";
  w.batch_per_worker = 32;
  for (int l = 0; l < layers; ++l) {
    w.ops.push_back({.name = fmt::format("fwd{}", l),
                     .kind = workload::OpKind::Forward,
                     .duration = forward_time,
                     .lane = 0,
                     .layer = l,
                     .deps = {}});
    if (l > 0) w.ops.back().deps = {l - 1};
  }
  for (int l = layers - 1; l >= 0; --l) {
    const int index = static_cast<int>(w.ops.size());
    w.ops.push_back({.name = fmt::format("bwd{}", l),
                     .kind = workload::OpKind::Backward,
                     .duration = backward_time,
                     .lane = 0,
                     .layer = l,
                     .deps = {index - 1}});
  }
  for (int i = 0; i < layers; ++i) {
    const int l = head_first ? layers - 1 - i : i;
    w.tensors.push_back({.name = fmt::format("w{}", l),
                         .bytes = tensor_bytes[static_cast<size_t>(l)],
                         .producer = 2 * layers - 1 - l,
                         .consumers = {l}});
  }
  EXPECT_EQ(workload::validate(w), "");
  return w;
}

inline workload::Workload layered(int layers, double tensor_bytes, double forward_time, double backward_time,
                                  bool head_first = false) {
  return layered(std::vector<double>(static_cast<size_t>(layers), tensor_bytes), forward_time, backward_time,
                 head_first);
}

/// The same nodes with GPUs moved between them at random (four tries, each node keeping 1 to
/// workers_per_node): an uneven cluster.placement. `pick(lo, hi)` draws an integer in [lo, hi].
template <class Pick>
std::vector<int> moved_placement(const cluster::ClusterSpec& s, Pick& pick) {
  std::vector<int> placement;
  for (int node = 0; node < s.num_worker_nodes(); ++node) placement.push_back(s.workers_on_node(node));
  for (int move = 0; move < 4; ++move) {
    const auto from = static_cast<size_t>(pick(0, static_cast<int>(placement.size()) - 1));
    const auto to = static_cast<size_t>(pick(0, static_cast<int>(placement.size()) - 1));
    if (placement[from] > 1 && placement[to] < s.workers_per_node) {
      placement[from]--;
      placement[to]++;
    }
  }
  return placement;
}

/// `workers` workers, one per node, on a switch with NICs of nic_bw (bytes/s) and `latency` (s).
inline cluster::ClusterSpec cluster_of(int workers, double nic_bw, double latency) {
  cluster::ClusterSpec spec;
  spec.workers = workers;
  spec.nic_bw = nic_bw;
  spec.latency = latency;
  return spec;
}

/// s, the mean over workers of their step cycle.
inline double mean_cycle(const SimulationResult& r) {
  double sum = 0;
  for (const WorkerTimes& t : r.workers) sum += t.cycle;
  return sum / static_cast<double>(r.workers.size());
}

/// A parameter-server scheme with the settings the PS suites vary.
inline SchemeConfig ps(Mode mode, int shards, PsPartition partition, PsOrder order = PsOrder::Random,
                       double message_overhead = 0) {
  SchemeConfig s;
  s.scheme = Scheme::ParameterServer;
  s.mode = mode;
  s.ps.count = shards;
  s.ps.partition = partition;
  s.ps.order = order;
  s.ps.message_overhead = message_overhead;
  return s;
}

}  // namespace stepcast::scheme::test_workloads
