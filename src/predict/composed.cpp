// The coarse and analytic predictors of a composed layout (tensor, context and pipeline
// parallelism with micro-batches), from scheme/composed_costs.hpp's per-stage closed forms.
//
// Coarse: with S_s = F_s + B_s (+ W_s) the time of one micro-batch's passes on stage s (exposed
// tensor and context collectives included) and delta one pipeline message alone, the
// pipeline's part of the step is the longest path through the schedule's passes (pipeline_ends),
// which with free messages is the schedule's length in micro-batches (Narayanan et al. 2019,
// 2021; Qi et al. 2023) for stages that need not be equal:
//   gpipe, 1f1b:   sum_s S_s + (m - 1) max_s S_s
//   interleaved:   m max_s S_s + (sum_s S_s - max_s S_s) / v
// (equal stages: (m + p - 1) S, (m + (p - 1)/v) S, ZB-H1 m S + (p - 1)(F + B - W)); with messages,
// GPipe adds 2 (p - 1) delta, and 1F1B and interleaving more, as their steady state waits on them
// too. Each stage's last pass ends where the path says; then its gradient reduction (each
// collective once its gradients are in and the one before it ended, what runs past the
// backward), its optimizer step and the distributed optimizer's gathers. The step is the latest
// stage's end.
//
// Analytic: the busiest resource: a stage's compute over the step, or the link that carries the
// most bytes for its bandwidth (every collective and message of the step on the links); the
// utilization names each class of link by its busiest, as the fine predictor does.
#include "predict/composed.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "predict/summary.hpp"
#include "scheme/stage_programs.hpp"
#include "stepcast/detail/scheme/composed_costs.hpp"
#include "stepcast/detail/scheme/costs.hpp"
#include "stepcast/error.hpp"
#include "stepcast/scheme/rank_layout.hpp"

namespace stepcast::predict {

namespace {

/// When each stage's last pass of the step ends, its passes run in the schedule's order
/// (scheme::schedule_order, and ZB-H1's W passes where the stage programs place them), each
/// after the one before it on its stage and after the message it receives: F of model chunk k
/// after F of chunk k - 1, B of chunk k after B of chunk k + 1, each the sender's message alone after the
/// other stage's pass ended (none between chunks of one stage). Passes of chunk c last forward / v (and
/// backward / v) of their stage. The longest path of that graph: the closed forms' lengths where
/// messages are free (equal stages: (m + p - 1) S for GPipe and 1F1B), and where they are not, the
/// steady state's wait as well as the fill's: under 1F1B stages s and s + 1 exchange one
/// micro-batch's activation and gradient within p - s micro-batches of each stage's own work, so
/// every micro-batch waits for messages, not only the first p - 1.
struct PipelineEnds {
  std::vector<double> stage;  ///< s: when each stage's last pass ends
  /// s: [stage][chunk]: when the last micro-batch's backward (under ZB-H1 its W) on the chunk ends
  std::vector<std::vector<double>> last_micro_batch;
};

PipelineEnds pipeline_ends(const std::vector<scheme::StageCost>& stages, const std::vector<double>& passes,
                           const scheme::SchemeConfig& scheme, int m, bool messages) {
  using Pass = scheme::PipelinePass::Kind;
  const int p = static_cast<int>(stages.size()), v = scheme.parallel.virtual_stages;
  const int chunks = p * v;
  const bool zero_bubble = scheme.pipeline.schedule == scheme::PipelineSchedule::ZeroBubble;
  const int group = scheme::interleaved_group(scheme.pipeline.microbatch_group, p, m);
  struct StageRun {
    std::vector<scheme::PipelinePass> order;
    size_t next = 0;
    double free = 0;     // s: when its last pass ended
    double sending = 0;  // s: when its last message has arrived
  };
  std::vector<StageRun> runs(static_cast<size_t>(p));
  for (int s = 0; s < p; ++s) {
    const std::vector<scheme::PipelinePass> order =
        scheme::schedule_order(scheme.pipeline.schedule, p, v, m, s, group);
    std::vector<scheme::PipelinePass>& placed = runs[static_cast<size_t>(s)].order;
    placed.reserve(order.size() * (zero_bubble ? 3 : 2) / 2);
    for (const scheme::PipelinePass& pass : order) {
      placed.push_back(pass);
      // ZB-H1: micro-batch k's W after the B of micro-batch k + s; the last s at the end.
      if (zero_bubble && pass.kind == Pass::Backward && pass.micro_batch >= s)
        placed.push_back({Pass::Weight, 0, pass.micro_batch - s});
    }
    if (zero_bubble) {
      for (int mb = std::max(0, m - s); mb < m; ++mb) placed.push_back({Pass::Weight, 0, mb});
    }
  }
  // [mb * chunks + k]: when the activation F of micro-batch mb on model chunk k sends (the
  // gradient B sends) has reached the stage of chunk k + 1 (k - 1); < 0: not yet.
  std::vector<double> forward_in(static_cast<size_t>(m) * chunks, -1), backward_in(forward_in);
  auto slot = [chunks](int mb, int k) { return static_cast<size_t>(mb) * chunks + static_cast<size_t>(k); };
  // A stage's messages leave one after another (its NIC, or the link to its neighbour), each
  // once its pass has ended.
  auto send = [&](StageRun& r, double message) {
    if (!messages) return r.free;
    r.sending = std::max(r.sending, r.free) + message;
    return r.sending;
  };
  // A pass starts once its stage is free and its message is in (-1: not yet sent).
  auto arrived = [](double in, double ready) { return in < 0 ? -1.0 : std::max(ready, in); };
  PipelineEnds ends;
  ends.last_micro_batch.assign(static_cast<size_t>(p), std::vector<double>(static_cast<size_t>(v), 0.0));
  size_t left = 0;
  for (const StageRun& r : runs) left += r.order.size();
  while (left > 0) {
    bool moved = false;
    for (int s = 0; s < p; ++s) {
      StageRun& r = runs[static_cast<size_t>(s)];
      const scheme::StageCost& c = stages[static_cast<size_t>(s)];
      const double scale =
          passes[static_cast<size_t>(s)] / std::max(c.forward + c.backward + c.weight, 1e-300);
      while (r.next < r.order.size()) {
        const scheme::PipelinePass& pass = r.order[r.next];
        const int k = pass.chunk * p + s;
        const size_t at = slot(pass.micro_batch, k);
        double ready = r.free, duration = 0;
        switch (pass.kind) {
          case Pass::Forward:
            if (k > 0) ready = arrived(forward_in[slot(pass.micro_batch, k - 1)], ready);
            duration = c.forward / v * scale;
            break;
          case Pass::Backward:
            if (k < chunks - 1) ready = arrived(backward_in[slot(pass.micro_batch, k + 1)], ready);
            duration = c.backward / v * scale;
            break;
          case Pass::Weight:
            duration = c.weight * scale;
            break;
        }
        if (ready < 0) break;  // its message has not been sent yet
        r.free = ready + duration;
        if (pass.kind == Pass::Forward && k < chunks - 1) forward_in[at] = send(r, c.message_next);
        if (pass.kind == Pass::Backward && k > 0) backward_in[at] = send(r, c.message_previous);
        if (pass.kind != Pass::Forward && pass.micro_batch == m - 1)
          ends.last_micro_batch[static_cast<size_t>(s)][static_cast<size_t>(pass.chunk)] = r.free;
        ++r.next;
        --left;
        moved = true;
      }
    }
    STEPCAST_ASSERT(moved);  // every schedule's order runs to its end
  }
  for (const StageRun& r : runs) ends.stage.push_back(r.free);
  return ends;
}

double samples_per_step(const workload::Workload& w, const cluster::ClusterSpec& spec,
                        const scheme::SchemeConfig& scheme) {
  return scheme::samples_per_worker_step(scheme.parallel, spec.workers, w.batch_per_worker) * spec.workers;
}

}  // namespace

Result coarse_composed(const workload::Workload& w, const cluster::ClusterSpec& spec,
                       const scheme::SchemeConfig& scheme, const Options& options) {
  const scheme::ComposedCosts costs = scheme::composed_costs(w, spec, scheme, false, options.link_loads);
  const int p = scheme.parallel.pipeline, m = costs.micro_batches;
  double message = 0;
  std::vector<double> passes;
  passes.reserve(costs.stages.size());
  for (const scheme::StageCost& s : costs.stages) {
    // A micro-batch takes its passes, or the sharded-data-parallel collectives it needs when
    // they take longer (they run beside the other micro-batches' passes).
    passes.push_back(std::max(s.forward + s.backward + s.weight, s.data_per_micro_batch));
    message = std::max({message, s.message_next, s.message_previous});
  }
  const PipelineEnds ends = pipeline_ends(costs.stages, passes, scheme, m, true);
  const double pipeline = *std::max_element(ends.stage.begin(), ends.stage.end());
  // What the messages add: the same schedule with free messages is the bubble's alone.
  double messages = 0;
  if (message > 0 && p > 1) {
    const std::vector<double> free = pipeline_ends(costs.stages, passes, scheme, m, false).stage;
    messages = std::max(0.0, pipeline - *std::max_element(free.begin(), free.end()));
  }
  // Each stage's end: its last pass, then what of its reduction the backward did not hide.
  double step = pipeline, data = 0;
  for (size_t s = 0; s < costs.stages.size(); ++s) {
    const scheme::StageCost& c = costs.stages[s];
    // The reductions one after another on their stream, each once its gradients are in: its
    // chunk's last backward (from the path above) less how long before it they were. The
    // experts' run on a stream of their own over the same NICs: the two streams share the links,
    // taken here as one stream in the order their gradients come in.
    std::vector<double> ready(c.reductions.size());
    for (size_t k = 0; k < ready.size(); ++k)
      ready[k] = ends.last_micro_batch[s][static_cast<size_t>(c.ready_chunk[k])] - c.ready_before_end[k];
    std::vector<size_t> order(c.reductions.size());
    std::iota(order.begin(), order.end(), size_t{0});
    if (std::find(c.reduction_streams.begin(), c.reduction_streams.end(), 1) != c.reduction_streams.end()) {
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ready[a] < ready[b]; });
    }
    double end = -std::numeric_limits<double>::infinity();
    for (size_t k : order) end = std::max(end, ready[k]) + c.reductions[k];
    const double tail =
        std::max(0.0, end - ends.stage[s]) + std::accumulate(c.gathers.begin(), c.gathers.end(), 0.0);
    step = std::max(step, ends.stage[s] + tail + c.optimizer);
    data = std::max(data, tail);
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
