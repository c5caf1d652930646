// Test helpers shared by the suites that compare the predictors on seeded parallel layouts
// (tests/predict): a layout with its label, a Llama-like decoder of a few blocks timed at a FLOP
// rate, and one prediction of it. The nodes are moe_fixtures.hpp's nvlink_nodes.
#pragma once

#include <fmt/format.h>

#include <cstdlib>
#include <string>

#include "moe_fixtures.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::testing {

struct SeededLayout {
  workload::Workload workload;
  cluster::ClusterSpec cluster;
  scheme::SchemeConfig scheme;
  std::string label;
};

/// A decoder of Llama 3 8B's shape (hidden 4096, ffn 14336, 32 heads, 8 KV heads, vocab 128256,
/// sequences of 4096) with `blocks` blocks, at 400 TFLOP/s per GPU.
inline workload::Workload llama_like(int blocks, workload::ActivationCheckpointing checkpointing,
                                     int micro_batch = 1) {
  const zoo::TransformerShape shape{.layers = blocks,
                                    .hidden = 4096,
                                    .ffn_hidden = 14336,
                                    .heads = 32,
                                    .kv_heads = 8,
                                    .vocab = 128256,
                                    .seq_len = 4096};
  const zoo::ModelSpec model = zoo::make_transformer("random", "", shape);
  return zoo::to_workload(
      model, {.batch_per_worker = micro_batch,
              .step_time = micro_batch * zoo::step_flops_per_sample(model, 2.0, checkpointing) / 400e12,
              .precision = workload::Precision::BF16,
              .checkpointing = checkpointing});
}

/// The layout's step by `predictor` (one warm-up step, two measured).
inline predict::Result predict_layout(const SeededLayout& l, predict::Predictor predictor) {
  predict::Options o;
  o.predictor = predictor;
  o.warmup_steps = 1;
  o.measure_steps = 2;
  return predict::predict(l.workload, l.cluster, l.scheme, o);
}

/// Prints `label`, fine's, coarse's and analytic's steps and coarse's error (with SHOW_BREAKDOWN
/// set, fine's and coarse's breakdowns too); returns coarse's error against fine.
inline double print_comparison(const std::string& label, const predict::Result& fine,
                               const predict::Result& coarse, const predict::Result& analytic) {
  const double error = coarse.step_time / fine.step_time - 1;
  fmt::print("{}: fine {:.4f} coarse {:.4f} ({:+.2f}%) analytic {:.4f}\n", label, fine.step_time,
             coarse.step_time, 100 * error, analytic.step_time);
  if (std::getenv("SHOW_BREAKDOWN") != nullptr) {
    for (const predict::Result* x : {&fine, &coarse}) {
      fmt::print(
          "  {}: compute {:.4f} tensor {:.4f} context {:.4f} pipeline {:.4f} data {:.4f} wait {:.4f} bubble "
          "{:.3f}\n",
          predict::to_string(x->predictor), x->breakdown.compute, x->breakdown.tensor, x->breakdown.context,
          x->breakdown.pipeline, x->breakdown.data, x->breakdown.wait, x->bubble_fraction);
    }
  }
  return error;
}

}  // namespace stepcast::testing
