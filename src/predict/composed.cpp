// The coarse and analytic predictors of a composed layout (tensor, context and pipeline
// parallelism with micro-batches), from scheme/composed_costs.hpp's per-stage closed forms.
//
// Coarse: with S_s = F_s + B_s (+ W_s) the time of one micro-batch's passes on stage s (exposed
// tensor and context collectives included) and delta one pipeline message alone, the
// pipeline's part of the step is the schedule's length in micro-batches (Narayanan et al. 2019,
// 2021; Qi et al. 2023), written for stages that need not be equal:
//   gpipe, 1f1b:   sum_s S_s + (m - 1) max_s S_s + 2 (p - 1) delta
//   interleaved:   m max_s S_s + (sum_s S_s - max_s S_s) / v + 2 (p - 1) delta
//   zero_bubble:   max_b [m S_b - b W_b + sum_{s<b} (F_s + B_s) + sum_{s>b} (F_s + B_s - W_s)]
//                  + 2 (p - 1) delta (stage b defers b of its Ws into the tail of the pipeline)
// (equal stages: (m + p - 1) S, (m + (p - 1)/v) S, m S + (p - 1)(F + B - W)). Stage s ends its
// last backward earlier than stage 0 by the backward passes between them; then its gradient
// reduction (each collective once its gradients are in and the one before it ended, what runs
// past the backward), its optimizer step and the distributed optimizer's gathers. The step is the
// latest stage's end.
//
// Analytic: the busiest resource: a stage's compute over the step, or the link that carries the
// most bytes for its bandwidth (every collective and message of the step on the links); the
// utilization names each class of link by its busiest, as the fine predictor does.
#include "predict/composed.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "predict/summary.hpp"
#include "stepcast/detail/scheme/composed_costs.hpp"
#include "stepcast/detail/scheme/costs.hpp"
#include "stepcast/scheme/rank_layout.hpp"

namespace stepcast::predict {

namespace {

double samples_per_step(const workload::Workload& w, const cluster::ClusterSpec& spec,
                        const scheme::SchemeConfig& scheme) {
  return scheme::samples_per_worker_step(scheme.parallel, spec.workers, w.batch_per_worker) * spec.workers;
}

}  // namespace

Result coarse_composed(const workload::Workload& w, const cluster::ClusterSpec& spec,
                       const scheme::SchemeConfig& scheme, const Options& options) {
  const scheme::ComposedCosts costs = scheme::composed_costs(w, spec, scheme, false, options.link_loads);
  const int p = scheme.parallel.pipeline, v = scheme.parallel.virtual_stages, m = costs.micro_batches;
  double sum = 0, slowest = 0, message = 0;
  for (const scheme::StageCost& s : costs.stages) {
    // A micro-batch takes its passes, or the sharded-data-parallel collectives it needs when
    // they take longer (they run beside the other micro-batches' passes).
    const double passes = std::max(s.forward + s.backward + s.weight, s.data_per_micro_batch);
    sum += passes;
    slowest = std::max(slowest, passes);
    message = std::max(message, s.message);
  }
  const double messages = 2.0 * (p - 1) * message;
  double pipeline = 0;
  switch (scheme.pipeline.schedule) {
    case scheme::PipelineSchedule::GPipe:
    case scheme::PipelineSchedule::OneFOneB:
      pipeline = sum + (m - 1) * slowest;
      break;
    case scheme::PipelineSchedule::Interleaved:
      pipeline = m * slowest + (sum - slowest) / v;
      break;
    case scheme::PipelineSchedule::ZeroBubble: {
      double before = 0;  // sum over s < b of F_s + B_s
      double after = 0;   // sum over s > b of F_s + B_s - W_s
      for (const scheme::StageCost& s : costs.stages) after += s.forward + s.backward - s.weight;
      for (size_t b = 0; b < costs.stages.size(); ++b) {
        const scheme::StageCost& s = costs.stages[b];
        after -= s.forward + s.backward - s.weight;
        // As above, a micro-batch takes no less than its sharded-data-parallel collectives (ZB-H1
        // with FSDP reduces each unit after its last W: the W passes no longer wait for them).
        const double passes = std::max(s.forward + s.backward + s.weight, s.data_per_micro_batch);
        pipeline = std::max(pipeline, m * passes - static_cast<double>(b) * s.weight + before + after);
        before += s.forward + s.backward;
      }
      break;
    }
  }
  pipeline += messages;
  // Each stage's end: its last backward, then what of its reduction the backward did not hide.
  double step = pipeline, behind = 0, data = 0;
  for (size_t s = 0; s < costs.stages.size(); ++s) {
    const scheme::StageCost& c = costs.stages[s];
    // The reductions one after another on their stream, each once its gradients are in (on the
    // clock of the last backward's end, 0). The experts' run on a stream of their own over the
    // same NICs: the two streams share the links, taken here as one stream in the order their
    // gradients come in.
    std::vector<size_t> order(c.reductions.size());
    std::iota(order.begin(), order.end(), size_t{0});
    if (std::find(c.reduction_streams.begin(), c.reduction_streams.end(), 1) != c.reduction_streams.end()) {
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return c.ready_before_end[a] > c.ready_before_end[b]; });
    }
    double end = -c.last_backward;
    for (size_t k : order) end = std::max(end, -c.ready_before_end[k]) + c.reductions[k];
    const double tail = std::max(0.0, end) + std::accumulate(c.gathers.begin(), c.gathers.end(), 0.0);
    step = std::max(step, pipeline - behind + tail + c.optimizer);
    data = std::max(data, tail);
    behind += c.last_backward + message;
  }
  // Every rank's step waits for the slowest at the gradient reduction and the pipeline's
  // messages: the expected slowest of the workers' factors, on the compute.
  double compute = 0, tensor = 0, context = 0, expert = 0, data_in_passes = 0, optimizer = 0;
  for (const scheme::StageCost& c : costs.stages) {
    compute += m * c.compute;
    tensor += m * c.tensor_exposed;
    context += m * c.context_exposed;
    expert += m * c.expert_exposed;
    // A micro-batch held up by its sharded-data-parallel collectives (above) waits on them: that
    // time is theirs, not a bubble.
    data_in_passes +=
        m * (c.data_exposed + std::max(0.0, c.data_per_micro_batch - (c.forward + c.backward + c.weight)));
    optimizer += c.optimizer;
  }
  const double n = static_cast<double>(costs.stages.size());
  compute = compute / n + optimizer / n;
  tensor /= n;
  context /= n;
  expert /= n;
  const double straggle = compute * (expected_slowest_factor(spec.workers, options.compute_cv) - 1);
  step += straggle;

  Result r;
  r.step_time = step;
  r.breakdown.compute = compute;
  r.breakdown.tensor = tensor;
  r.breakdown.context = context;
  r.breakdown.expert = expert;
  r.breakdown.pipeline = messages;
  // A difference of two sums of the same parts leaves rounding residue (1e-16 s on a 1 s step) where
  // nothing is exposed; below this share of the step it is nothing, not a tiny time to print.
  auto residue_to_zero = [step](double part) { return std::fabs(part) <= 1e-12 * step ? 0.0 : part; };
  r.breakdown.data =
      residue_to_zero(data_in_passes / n + std::max(0.0, step - straggle - pipeline - optimizer / n));
  r.breakdown.communication_exposed =
      r.breakdown.tensor + r.breakdown.context + r.breakdown.pipeline + r.breakdown.data + r.breakdown.expert;
  r.breakdown.wait =
      residue_to_zero(std::max(0.0, step - r.breakdown.compute - r.breakdown.communication_exposed));
  if (r.breakdown.wait == 0) {
    // The parts overlap more than their sum allows: scale the exposed parts to fit the step.
    const double room = std::max(0.0, step - r.breakdown.compute);
    const double scale = r.breakdown.communication_exposed > 0 ? room / r.breakdown.communication_exposed : 0;
    for (double* part : {&r.breakdown.tensor, &r.breakdown.context, &r.breakdown.pipeline, &r.breakdown.data,
                         &r.breakdown.expert, &r.breakdown.communication_exposed}) {
      *part *= std::min(1.0, scale);
    }
  }
  // Without a pipeline nothing waits on a schedule: what is left is not a bubble.
  r.bubble_fraction = step > 0 && p > 1 ? std::max(0.0, r.breakdown.wait - straggle) / step : 0;
  r.layout = scheme::RankLayout::describe(
      scheme.parallel, spec.workers, scheme::hybrid_shard_ranks(scheme, spec.workers, spec.workers_per_node));
  r.workers = spec.workers;
  r.predictor = Predictor::Coarse;
  r.throughput = samples_per_step(w, spec, scheme) / step;
  r.bytes_sent = r.bytes_received = costs.bytes_sent * options.measure_steps;
  r.utilization.push_back({"worker compute (mean)", std::min(1.0, compute / step)});
  if (!costs.link_bytes.empty())
    add_link_loads(r, *costs.cluster, scheme, costs.link_bytes, options.measure_steps);
  finish_result(r, w);
  return r;
}

Result analytic_composed(const workload::Workload& w, const cluster::ClusterSpec& spec,
                         const scheme::SchemeConfig& scheme, const Options& options) {
  const scheme::ComposedCosts costs = scheme::composed_costs(w, spec, scheme);
  const int m = costs.micro_batches;
  double compute = 0;
  for (const scheme::StageCost& c : costs.stages) compute = std::max(compute, m * c.compute + c.optimizer);
  // The busiest link: bytes of the step over its bandwidth.
  const double link_time =
      costs.link_bytes.empty() ? 0.0 : scheme::busiest_link_time(*costs.cluster, costs.link_bytes);
  Result r;
  r.step_time = std::max(compute, link_time);
  r.breakdown.compute = compute;
  r.breakdown.communication_exposed = std::max(0.0, r.step_time - compute);
  r.layout = scheme::RankLayout::describe(
      scheme.parallel, spec.workers, scheme::hybrid_shard_ranks(scheme, spec.workers, spec.workers_per_node));
  r.workers = spec.workers;
  r.predictor = Predictor::Analytic;
  r.throughput = samples_per_step(w, spec, scheme) / r.step_time;
  r.utilization.push_back({"worker compute (busiest stage)", compute / r.step_time});
  // Each class's busiest link, not one link by name: the uplinks of an oversubscribed fabric, or
  // the NICs, whichever the busiest link is.
  add_link_loads(r, *costs.cluster, scheme, costs.link_bytes, options.measure_steps);
  r.bytes_sent = r.bytes_received = costs.bytes_sent * options.measure_steps;
  finish_result(r, w);
  return r;
}

}  // namespace stepcast::predict
