// Test helpers shared by the expert-parallelism suites (tests/scheme, tests/predict): a small
// mixture of experts in Mixtral's layout timed at a FLOP rate, and nodes of GPUs on NVLink-like
// links with one 50 GB/s NIC per GPU.
#pragma once

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::testing {

struct MoeShape {
  int64_t hidden = 1024, ffn_hidden = 2048, heads = 8, kv_heads = 8, vocab = 1000, seq_len = 512;
  int64_t dense_layers_first = 0;  ///< DeepSeek's dense first blocks
};

/// `experts` experts, top-2, `blocks` blocks, at 400 TFLOP/s, with workload.moe.imbalance.
inline workload::Workload small_moe(const MoeShape& m, int experts, int blocks, double imbalance,
                                    int micro_batch = 1) {
  zoo::TransformerShape shape{.layers = blocks, .hidden = m.hidden, .ffn_hidden = m.ffn_hidden, .heads = m.heads,
                              .kv_heads = m.kv_heads, .vocab = m.vocab, .seq_len = m.seq_len};
  shape.experts = experts;
  shape.top_k = 2;
  shape.dense_layers_first = m.dense_layers_first;
  const zoo::ModelSpec model = zoo::make_transformer("moe", "test mixture of experts", shape);
  workload::Workload w = zoo::to_workload(
      model, {.batch_per_worker = micro_batch,
              .step_time = micro_batch * zoo::step_flops_per_sample(model, 2.0, workload::ActivationCheckpointing::None) /
                           400e12,
              .precision = workload::Precision::BF16});
  w.facts.moe_imbalance = imbalance;
  return w;
}

/// Nodes of `per_node` GPUs (450 GB/s inside), a 50 GB/s NIC each, HBM at 3.35 TB/s.
inline cluster::ClusterSpec nvlink_nodes(int workers, int per_node) {
  cluster::ClusterSpec c;
  c.workers = workers;
  c.workers_per_node = per_node;
  c.nics_per_node = per_node;
  c.nic_bw = 50e9;
  c.latency = 5e-6;
  c.intra_node_bw = 450e9;
  c.intra_node_latency = 2e-6;
  c.gpu_memory_bw = 3.35e12;
  return c;
}

}  // namespace stepcast::testing
