// The fine-grained predictor: runs the step simulation and summarizes it as a Result.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "predict/long_run.hpp"
#include "predict/summary.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/error.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scheme/rank_layout.hpp"

namespace stepcast::predict {
namespace {

Result simulate(const workload::Workload& workload, const cluster::ClusterSpec& cluster,
                const scheme::SchemeConfig& scheme, const Options& options, const WarningSink& warn) {
  scheme::SimulationOptions sim_options;
  sim_options.warmup_steps = options.warmup_steps;
  sim_options.measure_steps = options.measure_steps;
  sim_options.seed = options.seed;
  sim_options.record_trace = options.record_trace;
  sim_options.trace_selection = options.trace_selection;
  sim_options.compute_cv = options.compute_cv;
  sim_options.fast_paths = options.fast_paths;
  // The samples' results merge every link by name (merged_links): each keeps all of them.
  if (workload.num_samples() == 0) sim_options.links_kept = options.links_kept;
  LongRunWarning long_run(warn, cluster.workers);
  if (warn) sim_options.progress = [&](double fraction) { long_run.progress(fraction); };
  scheme::SimulationResult sim = scheme::simulate_steps(workload, cluster, scheme, sim_options);

  Result r;
  r.workers = cluster.workers;
  r.predictor = Predictor::Fine;
  double steps_per_second = 0;
  double bubble = 0;
  for (const scheme::WorkerTimes& t : sim.workers) {
    steps_per_second += 1.0 / t.cycle;
    r.step_time += t.cycle;
    r.breakdown.compute += t.compute;
    r.breakdown.communication_exposed += t.communication;
    r.breakdown.wait += t.wait;
    r.breakdown.tensor += t.exposed[static_cast<size_t>(scheme::ParallelDimension::Tensor)];
    r.breakdown.context += t.exposed[static_cast<size_t>(scheme::ParallelDimension::Context)];
    r.breakdown.pipeline += t.exposed[static_cast<size_t>(scheme::ParallelDimension::Pipeline)];
    r.breakdown.data += t.exposed[static_cast<size_t>(scheme::ParallelDimension::Data)] +
                        t.exposed[static_cast<size_t>(scheme::ParallelDimension::ExpertData)] +
                        t.exposed[static_cast<size_t>(scheme::ParallelDimension::DataReplicate)];
    r.breakdown.expert += t.exposed[static_cast<size_t>(scheme::ParallelDimension::Expert)] +
                          t.exposed[static_cast<size_t>(scheme::ParallelDimension::ExpertTensor)];
    bubble += t.cycle > 0 ? t.bubble / t.cycle : 0;
  }
  const double n = static_cast<double>(sim.workers.size());
  r.step_time /= n;
  r.breakdown.compute /= n;
  r.breakdown.communication_exposed /= n;
  r.breakdown.wait /= n;
  r.breakdown.tensor /= n;
  r.breakdown.context /= n;
  r.breakdown.pipeline /= n;
  r.breakdown.data /= n;
  r.breakdown.expert /= n;
  r.throughput = steps_per_second *
                 scheme::samples_per_worker_step(scheme.parallel, cluster.workers, workload.batch_per_worker);
  if (scheme.parallel.composed()) {
    r.layout = scheme::RankLayout::describe(
        scheme.parallel, cluster.workers,
        scheme::hybrid_shard_ranks(scheme, cluster.workers, cluster.workers_per_node));
    r.bubble_fraction = bubble / n;
  }
  for (const scheme::ResourceLoad& load : sim.loads) r.utilization.push_back({load.resource, load.busy});
  r.bytes_sent = sim.bytes_sent;
  r.bytes_received = sim.bytes_received;
  r.events = sim.events;
  r.engine = scheme::to_string(sim.engine);
  if (sim.engine == scheme::SimulationEngine::Approximate && warn) {
    warn(fmt::format(
        "the fine prediction for {} workers ran one rank per pipeline stage as an approximation: the "
        "groups of a stage cross the links unevenly, and every rank would be too many ops "
        "(docs/models.md, \"Parallel layouts\"); simulation.fast_paths=false runs every rank",
        cluster.workers));
  }
  r.max_link_flows = sim.max_link_flows;
  r.links = std::move(sim.links);
  r.links_left_out = sim.links_left_out;
  r.link_classes = std::move(sim.link_classes);
  r.staleness = staleness_of(sim.staleness_counts);
  r.trace = std::move(sim.trace);
  finish_result(r, workload);
  return r;
}

}  // namespace

Result predict_fine(const workload::Workload& workload, const cluster::ClusterSpec& cluster,
                    const scheme::SchemeConfig& scheme, const Options& options, const WarningSink& warn) {
  validate(workload, cluster, scheme, options);
  // One simulation per sample step (k times the work of one); the representative's is traced.
  Result r = workload.num_samples() == 0
                 ? simulate(workload, cluster, scheme, options, warn)
                 : predict_over_samples(workload, options.record_trace,
                                        [&](const workload::Workload& step, bool trace) {
                                          Options one = options;
                                          one.record_trace = trace;
                                          return simulate(step, cluster, scheme, one, warn);
                                        });
  // Every link is kept through the samples' merge; only the result keeps the busiest.
  if (options.links_kept > 0 && r.links.size() > options.links_kept) {
    r.links_left_out += r.links.size() - options.links_kept;
    r.links.resize(options.links_kept);
  }
  return r;
}

Result predict(const workload::Workload& workload, const cluster::ClusterSpec& cluster,
               const scheme::SchemeConfig& scheme, const Options& given, const WarningSink& warn) {
  // A caller who built the structs by hand gets an Error here, not an abort deep in a predictor.
  validate(workload, cluster, scheme, given);
  Options options = given;
  if (options.compute_cv_auto) {
    if (workload.num_samples() < 2) {
      throw Error({"", 0, "workload.compute_cv"},
                  fmt::format("'auto' takes the variation from the profile's steady steps, but the workload "
                              "'{}' has {} sampled steps (needs a profile with at least two steady steps "
                              "and workload.step_samples: all); give a number instead",
                              workload.name, workload.num_samples()));
    }
    options.compute_cv = workload::step_variation(workload);
    options.compute_cv_auto = false;
  }
  if (warn && scheme.parallel.composed() && scheme.parallel.tensor > cluster.workers_per_node) {
    // Allowed (a node of few GPUs), but every block's collectives then cross the NICs.
    warn(
        fmt::format("training.parallel.tensor: a tensor group of {} GPUs spans {} nodes of {}: every block's "
                    "collectives cross the NICs",
                    scheme.parallel.tensor,
                    (scheme.parallel.tensor + cluster.workers_per_node - 1) / cluster.workers_per_node,
                    cluster.workers_per_node));
  }
  if (warn && scheme.parallel.composed() && scheme.parallel.tensor > 1 &&
      scheme.parallel.tensor < cluster.workers_per_node &&
      cluster.workers_per_node % scheme.parallel.tensor != 0) {
    // Megatron's order puts tensor groups in consecutive ranks: some then straddle two nodes.
    warn(fmt::format(
        "training.parallel.tensor: tensor groups of {} GPUs do not divide nodes of {}: some span two "
        "nodes, and their collectives cross the NICs",
        scheme.parallel.tensor, cluster.workers_per_node));
  }
  if (warn && scheme.parallel.composed() && scheme.parallel.pipeline > 1 && workload.facts.transformer &&
      scheme.pipeline.layers_per_stage.empty()) {
    const int64_t chunks = static_cast<int64_t>(scheme.parallel.pipeline) * scheme.parallel.virtual_stages;
    const int64_t blocks =
        workload.facts.transformer->layers + (scheme.pipeline.account_for_embedding ? 2 : 0);
    if (blocks % chunks != 0) {
      // Spread as evenly as possible: chunks differ by one block, so stages do too.
      warn(fmt::format(
          "training.pipeline: {} blocks do not divide into {} chunks (p = {} x v = {}): chunks of {} and "
          "{} blocks, and the stages holding the larger run the schedule's pace",
          blocks, chunks, scheme.parallel.pipeline, scheme.parallel.virtual_stages, blocks / chunks,
          blocks / chunks + 1));
    }
  }
  if (warn && scheme.parallel.composed() && scheme.pipeline.schedule == scheme::PipelineSchedule::Interleaved &&
      scheme.pipeline.microbatch_group == 0) {
    const int p = scheme.parallel.pipeline;
    const int m = scheme::micro_batches(scheme.parallel, cluster.workers, workload.batch_per_worker);
    const int group = scheme::interleaved_group(0, p, m);
    // Megatron-core's default group is p, which refuses this m: a run must set the group.
    if (group != p) {
      warn(fmt::format("training.pipeline.microbatch_group: {} micro-batches are not a multiple of p = {}; the "
                       "interleaved schedule runs them in groups of {} (Megatron-core: "
                       "--microbatch-group-size-per-virtual-pipeline-stage {})",
                       m, p, group, group));
    }
  }
  Result r;
  switch (options.predictor) {
    case Predictor::Fine:
      r = predict_fine(workload, cluster, scheme, options, warn);
      break;
    case Predictor::Coarse:
      r = predict_coarse(workload, cluster, scheme, options);
      break;
    case Predictor::Analytic:
      r = predict_analytic(workload, cluster, scheme, options);
      break;
  }
  // Inputs are held to physical ranges, so this should not happen; if a combination still
  // overflows, say so rather than print "nan".
  if (!(std::isfinite(r.step_time) && std::isfinite(r.throughput))) {
    throw Error({"", 0, ""},
                fmt::format("the {} prediction for {} workers is not a finite number (step time {} s, "
                            "throughput {} samples/s): the inputs are outside what stepcast models",
                            to_string(options.predictor), cluster.workers, r.step_time, r.throughput));
  }
  account_job(r, workload, scheme, options);
  account_model(r, workload, cluster, scheme);
  account_cost(r, options);
  account_collectives(r, workload, cluster, scheme);
  r.compute_cv = options.compute_cv;
  attribute_after_prediction(r, workload);
  attribute_experts(r, workload, scheme);
  attribute_dimensions(r, cluster, scheme);
  return r;
}

}  // namespace stepcast::predict
