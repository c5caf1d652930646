// Memory per GPU and token rates for every predictor's Result: what follows from the step time
// and the model, not from how the step was predicted.
#include <algorithm>

#include "stepcast/detail/scheme/costs.hpp"
#include "stepcast/detail/scheme/fsdp_units.hpp"
#include "stepcast/predict/memory.hpp"
#include "stepcast/predict/predict.hpp"

namespace stepcast::predict {

void account_model(Result& r, const workload::Workload& w, const cluster::ClusterSpec& cluster,
                   const scheme::SchemeConfig& scheme) {
  const double element = workload::bytes_per_element(w.precision);
  // A profile knows its gradients' bytes but not the parameter count: the bytes at the
  // workload's precision give it.
  const double parameters = w.facts.parameters > 0 ? w.facts.parameters : w.parameter_bytes() / element;
  r.memory = {};
  r.memory.gpu_memory = cluster.gpu_memory;
  if (parameters > 0) {
    r.memory.known = true;
    r.memory.per_worker =
        model_state_memory(parameters, w.precision, scheme, cluster.workers, cluster.workers_per_node);
    if (w.facts.activation_bytes >= 0) {
      r.memory.per_worker.activations = w.facts.activation_bytes;
      r.memory.activations_modelled = true;
    }
    if (scheme.scheme == scheme::Scheme::Fsdp) {
      double largest = 0;
      for (const scheme::FsdpUnit& u : scheme::fsdp_units(w, scheme.fsdp.unit_blocks)) largest = std::max(largest, u.bytes);
      r.memory.per_worker.buffers =
          gathered_buffer_bytes(largest / element, w.precision, scheme, cluster.workers, cluster.workers_per_node);
    }
  }
  r.optimizer_step_time = scheme::optimizer_step_time(w, cluster, scheme);
  r.tokens = {};
  if (w.facts.tokens_per_sample > 0 && r.step_time > 0) {
    const double samples_per_s = r.throughput;
    r.tokens.tokens_per_s = samples_per_s * w.facts.tokens_per_sample;
    r.tokens.tokens_per_s_per_worker = r.tokens.tokens_per_s / cluster.workers;
    r.tokens.model_flops_per_s_per_worker = samples_per_s * w.facts.flops_per_sample / cluster.workers;
    if (cluster.gpu_peak_flops > 0) {
      r.tokens.mfu = r.tokens.model_flops_per_s_per_worker / cluster.gpu_peak_flops;
      r.tokens.mfu_6nd = samples_per_s * w.facts.flops_per_sample_6n / cluster.workers / cluster.gpu_peak_flops;
    }
  }
}

}  // namespace stepcast::predict
