// The analytic predictor (DESIGN.md 3.3, after the CNTK performance model): no simulation and
// no phases, only how much each resource must do per step. Every resource works in parallel
// with the others (perfect overlap), so the step lasts as long as the busiest one: an upper bound
// on throughput that the fine predictor can only approach, and a closed form for where a
// parameter server saturates. Also the whole-job accounting (start-up I/O, steps) that every
// predictor's Result gets.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "predict/composed.hpp"
#include "predict/summary.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/detail/scheme/costs.hpp"
#include "stepcast/detail/scheme/fsdp_units.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scheme/rank_layout.hpp"

namespace stepcast::predict {
namespace {

// Per step, for one worker (s): its compute, and the time its NIC needs per direction.
struct WorkerSide {
  double compute = 0;
  double network = 0;
};

Result allreduce_bound(const workload::Workload& w, const cluster::ClusterSpec& spec,
                       const scheme::SchemeConfig& scheme, const WorkerSide& worker) {
  Result r;
  double collective = 0;
  std::optional<cluster::Cluster> c;
  std::vector<double> link_bytes;  // per link, one step
  if (spec.workers > 1) {
    // The whole gradient through the algorithm once: every bucket's bytes at its size regime's
    // rate, and one collective's latency (the others' only add to it). Without regimes this is
    // the cost of one collective of the whole gradient.
    c = cluster::build_cluster(spec);
    const scheme::AllReducePlanner planner(*c, scheme.allreduce.algorithm, scheme.allreduce.protocol);
    double latency = std::numeric_limits<double>::infinity();
    std::vector<double> wire(planner.plans().size(), 0.0);  // per plan, the step's buffers on the wire
    for (const workload::Bucket& b :
         workload::make_buckets(w, scheme.allreduce.bucket_bytes, scheme::reduced_share(w, scheme))) {
      const scheme::AllReducePlanner::Choice choice = planner.choose(b.bytes);
      const scheme::CollectivePlan& plan = planner.plan(choice);
      const scheme::CollectiveCost cost = scheme::collective_cost(*c, plan, choice.terms);
      collective += b.bytes * cost.seconds_per_byte;
      latency = std::min(latency, cost.latency);
      // per step, all workers
      r.bytes_sent += scheme::collective_bytes_sent(plan, b.bytes * scheme::wire_factor(choice.terms));
      wire[static_cast<size_t>(choice.plan)] += b.bytes * scheme::wire_factor(choice.terms);
    }
    if (std::isfinite(latency)) collective += latency;
    link_bytes.assign(c->links.size(), 0.0);
    for (size_t p = 0; p < wire.size(); ++p) scheme::add_link_bytes(planner.plans()[p], wire[p], link_bytes);
  }
  r.step_time = std::max(worker.compute, collective);
  r.breakdown.compute = worker.compute;
  r.breakdown.communication_exposed = r.step_time - worker.compute;
  r.utilization.push_back({"worker compute (mean)", worker.compute / r.step_time});
  // Not the all-reduce as one resource: its links, each class's busiest (an oversubscribed
  // uplink busier than the NICs is what the step waits on).
  if (c) add_link_loads(r, *c, scheme, link_bytes, 1);
  return r;
}

Result ps_bound(const workload::Workload& w, const cluster::ClusterSpec& spec,
                const scheme::SchemeConfig& scheme, WorkerSide worker) {
  Result r;
  const int n = spec.workers;
  const int per_node = spec.busiest_node_workers();  // the busiest node bounds the step
  const scheme::ShardLoads shards = scheme::shard_loads(w, scheme.ps);
  const double largest_shard = shards.largest_bytes();
  const double server_bw = scheme::ps_server_bw(spec, scheme.ps);
  // Who talks to the servers: every worker, or one aggregated copy per node. The node's NIC
  // carries per_node copies per direction, or one.
  const bool aggregate = scheme.ps.local_aggregation && per_node > 1;
  const double clients = aggregate ? spec.num_worker_nodes() : n;
  const double model = w.parameter_bytes();
  worker.network = (aggregate ? model : per_node * model) / spec.nic_bw;
  const double apply = shards.largest_apply();          // s per client step at the busiest shard's apply lane
  const double server_nic = largest_shard / server_bw;  // s per client step, per direction
  // The busiest shard's message lane: one pull and one push per piece and client step, each
  // costing training.ps.message_overhead, one at a time.
  const double messages = 2 * shards.largest_messages() * scheme.ps.message_overhead;
  const double server = std::max({server_nic, apply, messages});
  const double worker_step = std::max(worker.compute, worker.network);
  // clients x server = worker_step at N*: the servers take updates exactly as fast as the workers
  // make them (per worker: server time per client step, spread over the workers of a client).
  const double server_per_worker = server * clients / n;
  r.bytes_sent = 2 * model * n;  // per step: every worker pulls and pushes the whole model
  r.saturation_workers = server_per_worker > 0 ? worker_step / server_per_worker : 0;
  // The fabric's links are resources too: the busiest one's bytes of the step over its bandwidth
  // (none on one switch). Workers wait on an oversubscribed uplink as on a busy server.
  const cluster::Cluster c = scheme::ps_cluster(spec, scheme.ps);
  const std::vector<double> fabric_bytes = scheme::ps_fabric_bytes(c, w, scheme.ps);
  const double fabric = scheme::busiest_link_time(c, fabric_bytes);
  r.step_time = std::max({worker_step, clients * server, fabric});
  r.breakdown.compute = worker.compute;
  r.breakdown.communication_exposed = worker_step - worker.compute;
  r.breakdown.wait = r.step_time - worker_step;
  r.utilization.push_back({"worker compute (mean)", worker.compute / r.step_time});
  r.utilization.push_back({"worker NIC", worker.network / r.step_time});
  r.utilization.push_back({"PS NIC (busiest shard)", clients * server_nic / r.step_time});
  if (apply > 0) r.utilization.push_back({"PS apply (busiest shard)", clients * apply / r.step_time});
  if (messages > 0) {
    r.utilization.push_back({"PS messages (busiest shard)", clients * messages / r.step_time});
  }
  add_fabric_loads(r, c, fabric_bytes);
  return r;
}

/// Sharded data parallelism: every collective's bytes at its plan's rate, overlapping compute
/// perfectly. The shard-group collectives (gathers, reduce-scatters) share one set of links and
/// add up; HSDP's all-reduce across groups runs on others (the NICs when a group is a node), so
/// the step lasts as long as the busier of the two, or compute, plus one collective's latency.
Result fsdp_bound(const workload::Workload& w, const cluster::ClusterSpec& spec,
                  const scheme::SchemeConfig& scheme, const WorkerSide& worker) {
  Result r;
  const cluster::Cluster c = cluster::build_cluster(spec);
  const std::vector<scheme::FsdpUnit> units = scheme::fsdp_units(w, scheme.fsdp.unit_blocks);
  const scheme::FsdpPlans plans = scheme::make_fsdp_plans(c, scheme.fsdp);
  int gathers = 0;  // per unit and step
  switch (scheme.fsdp.sharding) {
    case scheme::FsdpSharding::Full:
    case scheme::FsdpSharding::Hybrid:
      gathers = scheme.fsdp.reshard_after_forward ? 2 : 1;
      break;
    case scheme::FsdpSharding::GradOp:
    case scheme::FsdpSharding::Optimizer:
      gathers = 1;
      break;
  }
  double shard_group = 0, across = 0;
  double latency = std::numeric_limits<double>::infinity();
  double gathered = 0, reduced = 0, replicated = 0;  // bytes of the step's buffers, per plan
  auto add = [&](const scheme::CollectivePlan& plan, double bytes, double count, double& into, double& wire) {
    if (plan.stages.empty()) return;
    const scheme::CollectiveCost cost = scheme::collective_cost(c, plan, {.regime = spec.regime_for(bytes)});
    into += count * bytes * cost.seconds_per_byte;
    latency = std::min(latency, cost.latency);
    r.bytes_sent += count * scheme::collective_bytes_sent(plan, bytes);
    wire += count * bytes;
  };
  const double gather_share = scheme::gathered_share(w, scheme.fsdp);  // fp8 all-gathers: 1/2
  const double reduce_share = scheme::reduced_share(w, scheme);        // fp32 reductions: 2
  for (const scheme::FsdpUnit& u : units) {
    add(plans.gather, u.bytes * gather_share, gathers, shard_group, gathered);
    add(plans.reduce, u.bytes * reduce_share, 1, shard_group, reduced);
    add(plans.replicate, u.bytes * reduce_share / plans.shard_degree, 1, across, replicated);
  }
  double network = std::max(shard_group, across);
  if (std::isfinite(latency)) network += latency;
  r.step_time = std::max(worker.compute, network);
  r.breakdown.compute = worker.compute;
  r.breakdown.communication_exposed = r.step_time - worker.compute;
  r.utilization.push_back({"worker compute (mean)", worker.compute / r.step_time});
  std::vector<double> link_bytes(c.links.size(), 0.0);
  scheme::add_link_bytes(plans.gather, gathered, link_bytes);
  scheme::add_link_bytes(plans.reduce, reduced, link_bytes);
  scheme::add_link_bytes(plans.replicate, replicated, link_bytes);
  add_link_loads(r, c, scheme, link_bytes, 1);
  return r;
}

}  // namespace

Result predict_analytic(const workload::Workload& workload, const cluster::ClusterSpec& cluster,
                        const scheme::SchemeConfig& scheme, const Options& options) {
  validate(workload, cluster, scheme, options);  // public: bad structs throw Error
  if (workload.num_samples() > 0) {
    return predict_over_samples(workload, false, [&](const workload::Workload& step, bool) {
      return predict_analytic(step, cluster, scheme, options);
    });
  }
  if (scheme.parallel.composed()) return analytic_composed(workload, cluster, scheme, options);
  // The optimizer step and the host CPU of the transfers keep the worker busy like its compute
  // (scheme/costs.hpp).
  WorkerSide worker{workload.step_time_alone() + scheme::optimizer_step_time(workload, cluster, scheme) +
                        scheme::comm_cpu_time(workload, scheme),
                    0};
  Result r;
  switch (scheme.scheme) {
    case scheme::Scheme::AllReduce:
      r = allreduce_bound(workload, cluster, scheme, worker);
      break;
    case scheme::Scheme::ParameterServer:
      r = ps_bound(workload, cluster, scheme, worker);
      break;
    case scheme::Scheme::Fsdp:
      r = fsdp_bound(workload, cluster, scheme, worker);
      break;
  }
  r.workers = cluster.workers;
  r.predictor = Predictor::Analytic;
  r.throughput = cluster.workers * workload.batch_per_worker / r.step_time;
  // allreduce_bound and ps_bound give the bytes of one step; the Result counts the measured ones.
  r.bytes_sent = r.bytes_received = r.bytes_sent * options.measure_steps;
  for (sim::LinkClassLoad& c : r.link_classes) c.bytes *= options.measure_steps;
  finish_result(r, workload);
  if (r.saturation_workers > 0) {
    r.bottleneck += fmt::format("; parameter servers saturate at N* = {:.1f} workers", r.saturation_workers);
  }
  return r;
}

void account_job(Result& r, const workload::Workload& workload, const scheme::SchemeConfig& scheme,
                 const Options& options) {
  const JobOptions& job = options.job;
  r.job = {};
  // workload.tokens: the job in samples of the workload's tokens (validate() rejects tokens for a
  // workload without them).
  const double samples = job.tokens > 0 && workload.facts.tokens_per_sample > 0
                             ? job.tokens / workload.facts.tokens_per_sample
                             : job.samples;
  if (!(samples > 0) || !(r.step_time > 0)) return;
  // The step's batch: each worker's samples, or under a layout the d replicas' micro-batches
  // shared by each replica's t c p ranks (rounded: a whole number of sequences).
  const double per_step =
      std::round(scheme::samples_per_worker_step(scheme.parallel, r.workers, workload.batch_per_worker) *
                 static_cast<double>(r.workers));
  const double bytes = job.startup_bytes >= 0 ? job.startup_bytes : workload.parameter_bytes();
  const double read = job.storage_bw > 0 ? bytes / job.storage_bw : 0;
  r.job.samples = samples;
  r.job.tokens = job.tokens > 0 ? job.tokens : 0;
  r.job.steps = std::ceil(samples / per_step);
  r.job.startup_time = job.startup_fixed + (job.io == StartupIo::Sequential ? r.workers : 1) * read;
  r.job.time = r.job.startup_time + r.job.steps * r.step_time;
  r.job.throughput = samples / r.job.time;
  if (job.epochs > 0) {
    r.job.epochs = job.epochs;
    r.job.epoch_time = (r.job.time - r.job.startup_time) / job.epochs;
  }
}

void account_cost(Result& r, const Options& options) {
  r.cost = {};
  const double rate = options.cost.gpu_hour;
  if (!(rate > 0)) return;
  // Every GPU is paid for the whole step (and the whole job, start-up included), busy or not.
  const double per_second = static_cast<double>(r.workers) * rate / 3600;
  r.cost.gpu_hour = rate;
  r.cost.currency = options.cost.currency;
  r.cost.per_step = per_second * r.step_time;
  if (r.tokens.tokens_per_s > 0) r.cost.per_million_tokens = per_second / r.tokens.tokens_per_s * 1e6;
  r.cost.job = per_second * r.job.time;
}

}  // namespace stepcast::predict
