// Measured per-layer compute of a few layers, carried to a whole model: a transformer profiled
// with 2 of its 32 blocks (one GPU, a few steps) gives every block's forward and backward time,
// and the model's other blocks repeat the measured ones. Two sources, one result:
// - a layer table (profile/layer_table.hpp): rows of forward and backward time per layer;
// - a PyTorch profiler (Kineto) trace whose layers are marked with record_function ranges named
//   "stepcast:fwd:<layer>" and "stepcast:bwd:<layer>" (a forward pre-hook / forward hook and a
//   full backward pre-hook / backward hook per module do it). A layer's time is the sum of the
//   GPU kernels (NCCL excluded) launched from the range's thread while the range was open,
//   averaged over the range's occurrences (one per profiled step).
// Layer names are the zoo's ("embeddings", "model.layers.0.attention", "model.layers.0.mlp",
// "head"; `stepcast zoo show MODEL` lists them). Units: seconds.
//
//   LayerTimes t = read_layer_times("llama-2-blocks.json.gz");
//   apply_layer_times(workload, t);   // every op of the zoo workload gets a measured duration
#pragma once

#include <string>
#include <vector>

#include "stepcast/workload/workload.hpp"

namespace stepcast::profile {

struct LayerTime {
  std::string layer;
  double forward = 0;   ///< s
  double backward = 0;  ///< s
  bool operator==(const LayerTime&) const = default;
};

struct LayerTimes {
  std::string source;  ///< the file, for messages
  std::vector<LayerTime> layers;  ///< in forward order of the source
};

/// From a layer table (.csv) or a Kineto trace (.json, .json.gz), picked by extension. Throws
/// Error naming the file: unreadable, no layer marked, a layer with a forward range but no
/// backward one (or the reverse).
[[nodiscard]] LayerTimes read_layer_times(const std::string& path);

/// Sets the duration of every forward and backward op of `workload` (a zoo model's: one op per
/// layer and pass, Op::layer set, layer names after "fwd:" / "bwd:") from `measured`: a layer
/// measured by name takes its own times; a layer of a block (Workload::block_of_layer) that was
/// not measured takes the times of the layer at the same position in measured block
/// (b mod K)-th, K the number of measured blocks. Throws Error (key "workload.layer_times")
/// naming the first layer that is neither measured nor in a block like a measured one.
void apply_layer_times(workload::Workload& workload, const LayerTimes& measured);

}  // namespace stepcast::profile
