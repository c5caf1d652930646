#include "predict/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/detail/scheme/costs.hpp"
#include "stepcast/detail/scheme/fsdp_units.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/error.hpp"
#include "stepcast/scheme/rank_layout.hpp"
#include "stepcast/units.hpp"

namespace stepcast::predict {
namespace {
// Below this, no single resource explains the step time: latency and dependencies do.
constexpr double kSaturatedBusy = 0.5;
// Exposed communication or waiting above this share of the step is worth naming.
constexpr double kNoticeableLoss = 0.05;
// A resource explains exposed communication when it is busy for at least this share of it.
constexpr double kExplains = 0.5;
// A profiled step whose GPUs are idle more than this share of it is host-bound.
constexpr double kHostBound = 0.5;

bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

BottleneckKind kind_of(const std::string& resource) {
  if (contains(resource, "compute")) return BottleneckKind::Compute;
  if (contains(resource, "PS apply")) return BottleneckKind::PsApply;
  if (contains(resource, "PS messages")) return BottleneckKind::PsMessages;
  if (contains(resource, "PS NIC") || resource.starts_with("server")) return BottleneckKind::PsNic;
  if (resource == cluster::kIncastStall) return BottleneckKind::Incast;
  return BottleneckKind::NetworkBandwidth;
}

/// The busiest resource that moves bytes (not compute), among the utilization and the links.
std::optional<Utilization> busiest_network(const Result& r) {
  std::optional<Utilization> best;
  auto consider = [&](const std::string& resource, double busy) {
    const BottleneckKind kind = kind_of(resource);
    if (kind == BottleneckKind::Compute || kind == BottleneckKind::PsApply ||
        kind == BottleneckKind::PsMessages) {
      return;
    }
    if (!best || busy > best->busy) best = Utilization{resource, busy};
  };
  for (const Utilization& u : r.utilization) consider(u.resource, u.busy);
  for (const sim::LinkLoad& l : r.links) consider(l.name, l.busy);
  return best;
}

/// "worker NIC out 84% busy"; incast's load is a stall, not work: said as such.
std::string busy_phrase(const std::string& resource, double busy) {
  const double percent = 100 * std::min(busy, 1.0);
  if (kind_of(resource) == BottleneckKind::Incast) {
    return fmt::format(
        "TCP incast: a switch port stalled {:.0f}% of the step, its senders waiting out cluster.tcp_rto_min "
        "after overflowing cluster.switch.buffer",
        percent);
  }
  return fmt::format("{} {:.0f}% busy", resource, percent);
}

double busy_of(const Result& r, std::string_view resource) {
  for (const Utilization& u : r.utilization) {
    if (u.resource == resource) return u.busy;
  }
  return 0;
}

}  // namespace

const char* to_string(BottleneckKind kind) {
  return name_c_str(kind);
}

void finish_result(Result& r, const workload::Workload& workload) {
  const double baseline =
      workload.facts.baseline_step_time > 0 ? workload.facts.baseline_step_time : workload.step_time_alone();
  finish_result(r, baseline, workload.batch_per_worker);
}

void finish_result(Result& r, double alone_step_time, int batch_per_worker) {
  // Speed-up against one worker training alone at its measured rate: the number users compare
  // with ("one GPU does X samples/s"), not against a one-worker run of the distributed setup.
  const double alone = batch_per_worker / alone_step_time;
  r.speedup = r.throughput / alone;
  r.efficiency = r.workers > 0 ? r.speedup / r.workers : 0;
  std::stable_sort(r.utilization.begin(), r.utilization.end(),
                   [](const Utilization& a, const Utilization& b) { return a.busy > b.busy; });
  if (!r.utilization.empty() && r.utilization.front().busy >= kSaturatedBusy) {
    const Utilization& top = r.utilization.front();
    r.bottleneck = busy_phrase(top.resource, top.busy);
    r.bottleneck_kind = kind_of(top.resource);
    r.bottleneck_resource = top.resource;
    // Compute-bound but still losing time: name what the lost time waits on, since that is what
    // limits scaling.
    const double lost =
        (r.breakdown.communication_exposed + r.breakdown.wait) / std::max(r.step_time, 1e-300);
    if (top.resource.find("compute") != std::string::npos && lost >= kNoticeableLoss &&
        r.utilization.size() > 1) {
      const Utilization& next = r.utilization[1];
      r.bottleneck +=
          fmt::format("; {:.0f}% of step lost to {} ({} {:.0f}% busy)", 100 * lost,
                      r.breakdown.wait > r.breakdown.communication_exposed ? "waiting" : "communication",
                      next.resource, 100 * std::min(next.busy, 1.0));
    }
    return;
  }
  const double step = std::max(r.step_time, 1e-300);
  const double exposed = r.breakdown.communication_exposed / step, wait = r.breakdown.wait / step;
  const std::optional<Utilization> net = busiest_network(r);
  if (r.breakdown.wait >= r.breakdown.communication_exposed) {
    r.bottleneck = fmt::format("waiting for other workers or servers ({:.0f}% of step)", 100 * wait);
    // Waiting behind a barrier that the servers (or the network) hold up.
    r.bottleneck_kind = net.has_value() ? kind_of(net->resource) : BottleneckKind::NetworkLatency;
    r.bottleneck_resource = net.has_value() ? net->resource : "";
    return;
  }
  // Exposed communication: a NIC busy one way then the other (pulls then pushes, serialised by
  // the step's dependencies) explains it as much as one busy link does; else latency. That NIC
  // is the worker's, or the servers' when the workers pull together and then push together
  // (asynchronous workers in a convoy: the PS NIC is half busy each way and the step all exposed).
  struct TakingTurns {
    const char* nic;
    const char* what;
    BottleneckKind kind;
  };
  const TakingTurns nics[] = {
      {"worker NIC", "pull then push serialised on the worker NIC", BottleneckKind::NetworkBandwidth},
      {"PS NIC", "workers pull together then push together, taking turns on the PS NIC",
       BottleneckKind::PsNic}};
  const TakingTurns* turns = nullptr;
  double turns_out = 0, turns_in = 0;
  // Only a parameter server's pulls and pushes take turns; a ring's or an all-to-all's sends and
  // receives run at once, so a NIC busy both ways there is just busy.
  const bool parameter_server =
      std::any_of(r.utilization.begin(), r.utilization.end(),
                  [](const Utilization& u) { return u.resource.starts_with("PS "); });
  for (const TakingTurns& nic :
       parameter_server ? std::span<const TakingTurns>(nics) : std::span<const TakingTurns>()) {
    const double out = busy_of(r, std::string(nic.nic) + " out"),
                 in = busy_of(r, std::string(nic.nic) + " in");
    if (out + in >= kExplains * exposed && std::min(out, in) > 0.25 * std::max(out, in) &&
        (!net || out + in > net->busy) && out + in > turns_out + turns_in) {
      turns = &nic;
      turns_out = out;
      turns_in = in;
    }
  }
  if (turns != nullptr) {
    r.bottleneck = fmt::format("{} (out {:.0f}% + in {:.0f}% of the step; {:.0f}% of step exposed)",
                               turns->what, 100 * turns_out, 100 * turns_in, 100 * exposed);
    r.bottleneck_kind = turns->kind;
    r.bottleneck_resource = turns->nic;
    return;
  }
  if (net.has_value() && net->busy >= kExplains * exposed) {
    r.bottleneck = fmt::format("{} ({:.0f}% of step exposed communication)", busy_phrase(net->resource, net->busy),
                               100 * exposed);
    r.bottleneck_kind = kind_of(net->resource);
    r.bottleneck_resource = net->resource;
    return;
  }
  r.bottleneck = fmt::format(
      "network latency, no link busy enough to explain it ({:.0f}% of step exposed{})", 100 * exposed,
      net.has_value() ? fmt::format("; busiest {} {:.0f}%", net->resource, 100 * net->busy) : std::string());
  r.bottleneck_kind = BottleneckKind::NetworkLatency;
  r.bottleneck_resource = "";
}

void add_link_loads(Result& r, const cluster::Cluster& cluster, const scheme::SchemeConfig& scheme,
                    const std::vector<double>& link_bytes, int steps) {
  for (scheme::ResourceLoad& load : scheme::link_loads(cluster, scheme, link_bytes, r.step_time))
    r.utilization.push_back({std::move(load.resource), load.busy});
  r.link_classes = scheme::link_class_loads(cluster, scheme, link_bytes, r.step_time, steps);
}

void add_fabric_loads(Result& r, const cluster::Cluster& cluster, const std::vector<double>& link_bytes) {
  if (link_bytes.empty()) return;
  for (scheme::ResourceLoad& load : scheme::fabric_loads(cluster, link_bytes, r.step_time))
    r.utilization.push_back({std::move(load.resource), load.busy});
}

void attribute_experts(Result& r, const workload::Workload& w, const scheme::SchemeConfig& scheme) {
  if (scheme.parallel.expert <= 1 || !w.facts.transformer) return;
  const double share = r.breakdown.expert / std::max(r.step_time, 1e-300);
  const std::vector<double> loads = scheme::busiest_expert_gpu_by_block(w, scheme.parallel);
  const double busiest = *std::max_element(loads.begin(), loads.end());
  if (share >= kNoticeableLoss) {
    // With ETP > 1 the expert-tensor gathers and reduce-scatters are part of it.
    const bool gathers = scheme.parallel.expert_tensor_degree() > 1;
    r.bottleneck +=
        fmt::format("; expert all-to-all{} {:.0f}% of step", gathers ? " and gathers" : "", 100 * share);
  }
  if (busiest > 1 + 1e-9) {
    r.bottleneck += fmt::format(
        "; the busiest expert GPU receives {:.2f}x the mean tokens and its expert group waits for it", busiest);
  }
}

void attribute_dimensions(Result& r, const cluster::ClusterSpec& cluster,
                          const scheme::SchemeConfig& scheme) {
  using scheme::ParallelDimension;
  if (!scheme.parallel.composed()) return;
  const double step = std::max(r.step_time, 1e-300);
  const double bubble = r.bubble_fraction, exposed = r.breakdown.communication_exposed / step;
  // The dimension holding most of the exposed communication, with the links it runs on, when it
  // holds at least half of it: "(mostly tensor-parallel collectives: 15% of step, on the
  // intra-node link 14% busy)".
  auto mostly = [&]() -> std::optional<std::string> {
    struct Part {
      ParallelDimension dimension;
      double seconds;
      const char* what;
    };
    const Breakdown& b = r.breakdown;
    const std::array<Part, 5> parts{{{ParallelDimension::Tensor, b.tensor, "tensor-parallel collectives"},
                                     {ParallelDimension::Context, b.context, "ring attention's K/V exchange"},
                                     {ParallelDimension::Pipeline, b.pipeline, "pipeline messages"},
                                     {ParallelDimension::Data, b.data, "data-parallel collectives"},
                                     {ParallelDimension::Expert, b.expert, "expert all-to-alls"}}};
    const Part& top = *std::max_element(parts.begin(), parts.end(),
                                        [](const Part& x, const Part& y) { return x.seconds < y.seconds; });
    if (!(top.seconds >= 0.5 * b.communication_exposed) || !(top.seconds > 0)) return std::nullopt;
    const scheme::RankLayout layout(
        scheme.parallel, cluster.workers,
        scheme::hybrid_shard_ranks(scheme, cluster.workers, cluster.workers_per_node));
    const std::vector<int> group =
        top.dimension == ParallelDimension::Data ? layout.data_group(0) : layout.group(top.dimension, 0);
    const bool in_node = std::all_of(group.begin(), group.end(), [&](int rank) {
      return rank / cluster.workers_per_node == group.front() / cluster.workers_per_node;
    });
    const std::string link = in_node                                                      ? "intra-node link"
                             : busy_of(r, "worker NIC in") > busy_of(r, "worker NIC out") ? "worker NIC in"
                                                                                          : "worker NIC out";
    return fmt::format("(mostly {}: {:.0f}% of step, on the {} {:.0f}% busy)", top.what,
                       100 * top.seconds / step, link, 100 * std::min(busy_of(r, link), 1.0));
  };
  // A layout whose stages wait on the schedule: the bubble, not "other workers or servers".
  const std::string waiting = "waiting for other workers or servers (";
  if (const std::size_t at = r.bottleneck.find(waiting);
      at != std::string::npos && scheme.parallel.pipeline > 1 && bubble >= exposed) {
    const std::size_t close = r.bottleneck.find(')', at);
    if (close == std::string::npos) return;
    r.bottleneck.replace(at, close - at + 1,
                         fmt::format("pipeline bubble ({:.0f}% of step, {} stages; exposed communication "
                                     "{:.0f}%)",
                                     100 * bubble, scheme.parallel.pipeline, 100 * exposed));
    if (r.bottleneck_kind != BottleneckKind::Memory) r.bottleneck_kind = BottleneckKind::PipelineBubble;
    r.bottleneck_resource = "";
    return;
  }
  if (r.bottleneck_kind != BottleneckKind::Compute) return;
  // Compute-bound, losing time: "30% of step lost to waiting (worker NIC out 9% busy)" said part
  // by part, the bubble and the communication, each with its share.
  const std::string lost = "% of step lost to ";
  const std::size_t at = r.bottleneck.find(lost);
  if (at == std::string::npos) return;
  const std::size_t open = r.bottleneck.find('(', at), close = r.bottleneck.find(')', at);
  if (open == std::string::npos || close == std::string::npos) return;
  const std::optional<std::string> dimension = mostly();
  if (bubble < 0.005) {
    // All of it is communication: name the dimension holding it, if one does.
    if (dimension && r.bottleneck.compare(at + lost.size(), 13, "communication") == 0)
      r.bottleneck.replace(open, close - open + 1, *dimension);
    return;
  }
  const std::size_t number = r.bottleneck.rfind("; ", at);
  if (number == std::string::npos) return;
  const double waiting_else = r.breakdown.wait / step - bubble;  // stragglers: not the schedule
  std::string parts = fmt::format("pipeline bubble {:.0f}%", 100 * bubble);
  if (exposed >= 0.005) {
    parts += fmt::format(", communication {:.0f}%", 100 * exposed);
    if (dimension) parts += " " + *dimension;
  }
  if (waiting_else >= 0.005)
    parts += fmt::format(", waiting for the slowest worker {:.0f}%", 100 * waiting_else);
  r.bottleneck.replace(
      number, close - number + 1,
      fmt::format("; {:.0f}% of step lost: {}", 100 * (exposed + r.breakdown.wait / step), parts));
}

void account_collectives(Result& r, const workload::Workload& w, const cluster::ClusterSpec& spec,
                         const scheme::SchemeConfig& scheme) {
  const scheme::AllReduceConfig& allreduce = scheme.allreduce;
  const bool chosen = allreduce.algorithm == scheme::AllReduceAlgorithm::Auto ||
                      allreduce.protocol != scheme::CollectiveProtocol::Links;
  if (scheme.scheme != scheme::Scheme::AllReduce || !chosen || spec.workers <= 1) return;
  const cluster::Cluster c = cluster::build_cluster(spec);
  const scheme::AllReducePlanner planner(c, allreduce.algorithm, allreduce.protocol);
  for (const workload::Bucket& b :
       workload::make_buckets(w, allreduce.bucket_bytes, scheme::reduced_share(w, scheme))) {
    const scheme::AllReducePlanner::Choice choice = planner.choose(b.bytes);
    r.collectives.push_back(
        {b.bytes, scheme::to_string(choice.algorithm), scheme::to_string(choice.protocol)});
  }
}

void attribute_after_prediction(Result& r, const workload::Workload& w) {
  const double step = std::max(r.step_time, 1e-300);
  if (w.traced_workers > 0) r.mode = w.replayed ? "replay" : "extrapolated";
  // Host-bound profiles: a step whose GPUs are idle most of the time on one worker alone is bound
  // by the host (data loading, Python, kernel launches), and that part does not shrink with more
  // workers; the compute "100% busy" of the table would hide it.
  const bool has_host =
      std::any_of(w.lanes.begin(), w.lanes.end(), [](const std::string& l) { return l.starts_with("cpu"); });
  const bool has_gpu =
      std::any_of(w.lanes.begin(), w.lanes.end(), [](const std::string& l) { return l.starts_with("gpu"); });
  const double alone = w.step_time_alone();
  if (has_host && has_gpu && alone > 0) {
    r.gpu_busy_fraction = std::min(1.0, w.busy_alone("gpu") / alone);
    const double idle = 1 - r.gpu_busy_fraction;
    if (idle > kHostBound && r.bottleneck_kind == BottleneckKind::Compute) {
      r.bottleneck = fmt::format(
          "host-bound: GPU idle {:.0f}% of the step (data loading, Python, kernel launches); "
          "the host part does not shrink with more workers",
          100 * idle);
      r.bottleneck_kind = BottleneckKind::Host;
      r.bottleneck_resource = "host";
    }
  }
  if (r.compute_cv > 0 && r.breakdown.wait >= r.breakdown.communication_exposed &&
      r.breakdown.wait / step >= kNoticeableLoss && r.bottleneck.starts_with("waiting")) {
    r.bottleneck =
        fmt::format("waiting for the slowest worker ({:.0f}% of step; compute varies {:.1f}% per step)",
                    100 * r.breakdown.wait / step, 100 * r.compute_cv);
    r.bottleneck_kind = BottleneckKind::Stragglers;
    r.bottleneck_resource = "";
  }
  if (r.memory.known && !r.memory.fits()) {
    r.bottleneck = fmt::format("does not fit in GPU memory ({} reserved > {}); if it did: {}",
                               format_bytes(r.memory.reserved()), format_bytes(r.memory.gpu_memory), r.bottleneck);
    r.bottleneck_kind = BottleneckKind::Memory;
    r.bottleneck_resource = "gpu memory";
  }
}

StepSpread step_spread(std::vector<double> step_times) {
  StepSpread s;
  s.samples = step_times.size();
  s.step_times = step_times;
  if (step_times.empty()) return s;
  std::sort(step_times.begin(), step_times.end());
  const auto quantile = [&](double q) {
    const double pos = q * static_cast<double>(step_times.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, step_times.size() - 1);
    return step_times[lo] + (pos - static_cast<double>(lo)) * (step_times[hi] - step_times[lo]);
  };
  s.mean =
      std::accumulate(step_times.begin(), step_times.end(), 0.0) / static_cast<double>(step_times.size());
  s.p50 = quantile(0.5);
  s.p95 = quantile(0.95);
  s.min = step_times.front();
  s.max = step_times.back();
  return s;
}

Staleness staleness_of(const std::vector<uint64_t>& counts) {
  Staleness s;
  double sum = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    s.pushes += counts[k];
    sum += static_cast<double>(k) * static_cast<double>(counts[k]);
    if (counts[k] > 0) s.max = static_cast<double>(k);
  }
  if (s.pushes == 0) return s;
  s.mean = sum / static_cast<double>(s.pushes);
  // The i-th smallest staleness (0-based), read off the counts.
  const auto order_statistic = [&](uint64_t i) {
    uint64_t seen = 0;
    for (size_t k = 0; k < counts.size(); ++k) {
      seen += counts[k];
      if (i < seen) return static_cast<double>(k);
    }
    return s.max;
  };
  const double pos = 0.95 * static_cast<double>(s.pushes - 1);
  const auto lo = static_cast<uint64_t>(std::floor(pos));
  const uint64_t hi = std::min(lo + 1, s.pushes - 1);
  const double at_lo = order_statistic(lo);
  s.p95 = at_lo + (pos - static_cast<double>(lo)) * (order_statistic(hi) - at_lo);
  return s;
}

namespace {

// Busy fractions of like-named resources over the run of all samples: weighted by step time.
std::vector<Utilization> weighted_busy(const std::vector<Result>& results) {
  std::vector<Utilization> out;
  double total = 0;
  for (const Result& r : results) {
    total += r.step_time;
    for (const Utilization& u : r.utilization) {
      auto it = std::find_if(out.begin(), out.end(),
                             [&](const Utilization& o) { return o.resource == u.resource; });
      if (it == out.end()) {
        out.push_back({u.resource, 0});
        it = out.end() - 1;
      }
      it->busy += u.busy * r.step_time;
    }
  }
  for (Utilization& u : out) u.busy = total > 0 ? u.busy / total : 0;
  return out;
}

// The links over the run of all samples, busiest first: busy weighted by step time, bytes the
// mean per sample step (as bytes_sent). Every link of every sample (a cluster has tens of
// thousands), so by name through a map, not a search per link.
std::vector<sim::LinkLoad> merged_links(const std::vector<Result>& results) {
  std::vector<sim::LinkLoad> out;
  std::unordered_map<std::string, std::size_t> index;
  double total = 0;
  for (const Result& r : results) {
    total += r.step_time;
    for (const sim::LinkLoad& l : r.links) {
      auto [it, added] = index.try_emplace(l.name, out.size());
      if (added) out.push_back({l.name, 0, 0});
      sim::LinkLoad& merged = out[it->second];
      merged.busy += l.busy * r.step_time;
      merged.bytes += l.bytes / static_cast<double>(results.size());
    }
  }
  for (sim::LinkLoad& l : out) l.busy = total > 0 ? l.busy / total : 0;
  std::sort(out.begin(), out.end(), [](const sim::LinkLoad& a, const sim::LinkLoad& b) {
    return a.busy != b.busy ? a.busy > b.busy : a.name < b.name;
  });
  return out;
}

// The link classes over the run of all samples, as merged_links: busy fractions weighted by step
// time, bytes the mean per sample step, the count the most links a step's class had.
std::vector<sim::LinkClassLoad> merged_link_classes(const std::vector<Result>& results) {
  std::vector<sim::LinkClassLoad> out;
  double total = 0;
  for (const Result& r : results) {
    total += r.step_time;
    for (const sim::LinkClassLoad& c : r.link_classes) {
      auto it =
          std::find_if(out.begin(), out.end(), [&](const sim::LinkClassLoad& o) { return o.name == c.name; });
      if (it == out.end()) {
        out.push_back({.name = c.name});
        it = std::prev(out.end());
      }
      it->links = std::max(it->links, c.links);
      it->busiest += c.busiest * r.step_time;
      it->mean_busy += c.mean_busy * r.step_time;
      it->bytes += c.bytes / static_cast<double>(results.size());
    }
  }
  for (sim::LinkClassLoad& c : out) {
    c.busiest = total > 0 ? c.busiest / total : 0;
    c.mean_busy = total > 0 ? c.mean_busy / total : 0;
  }
  std::stable_sort(out.begin(), out.end(), [](const sim::LinkClassLoad& a, const sim::LinkClassLoad& b) {
    return a.busiest > b.busiest;
  });
  return out;
}

}  // namespace

Result predict_over_samples(const workload::Workload& workload, bool record_trace,
                            const PredictStep& predict_step) {
  const std::size_t k = workload.num_samples();
  STEPCAST_ASSERT(k > 0);
  // The representative step: its samples are the op durations (a Kineto conversion's own step).
  std::size_t rep = 0;
  for (std::size_t i = 0; i < k; ++i) {
    const bool same = std::all_of(workload.ops.begin(), workload.ops.end(), [&](const workload::Op& op) {
      return i < op.samples.size() && op.samples[i] == op.duration;
    });
    if (same) {
      rep = i;
      break;
    }
  }
  std::vector<Result> results;
  results.reserve(k);
  std::vector<double> times;
  double alone = 0;  // s, summed over the sample steps
  for (std::size_t i = 0; i < k; ++i) {
    const workload::Workload step = workload::with_sample(workload, i);
    results.push_back(predict_step(step, record_trace && i == rep));
    times.push_back(results.back().step_time);
    alone += step.step_time_alone();
  }
  const double n = static_cast<double>(k);
  Result r;
  r.workers = results.front().workers;
  r.predictor = results.front().predictor;
  // "full" if any step needed the full engine (a traced one does), as the costlier path.
  r.engine = results.front().engine;
  for (const Result& s : results) {
    if (s.engine == "full") r.engine = s.engine;
  }
  double seconds_per_sample = 0;
  r.step_samples = step_spread(std::move(times));
  r.step_time = r.step_samples.mean;
  for (const Result& s : results) {
    r.breakdown.compute += s.breakdown.compute / n;
    r.breakdown.communication_exposed += s.breakdown.communication_exposed / n;
    r.breakdown.wait += s.breakdown.wait / n;
    r.bytes_sent += s.bytes_sent / n;
    r.bytes_received += s.bytes_received / n;
    r.async_phases.out_of_step += s.async_phases.out_of_step / n;  // means over the steps, as step_time
    r.async_phases.convoy += s.async_phases.convoy / n;
    r.events += s.events;
    r.max_link_flows = std::max(r.max_link_flows, s.max_link_flows);
    seconds_per_sample += s.throughput > 0 ? 1.0 / s.throughput : 0;
    // Staleness over all sample steps' pushes: the mean weighted by pushes, the largest max, and
    // (the counts being gone) the largest p95, an upper bound on the p95 of all pushes together.
    if (s.staleness.pushes > 0) {
      const auto before = static_cast<double>(r.staleness.pushes);
      r.staleness.pushes += s.staleness.pushes;
      r.staleness.mean =
          (r.staleness.mean * before + s.staleness.mean * static_cast<double>(s.staleness.pushes)) /
          static_cast<double>(r.staleness.pushes);
      r.staleness.p95 = std::max(r.staleness.p95, s.staleness.p95);
      r.staleness.max = std::max(r.staleness.max, s.staleness.max);
    }
  }
  r.throughput = seconds_per_sample > 0 ? n / seconds_per_sample : 0;
  r.utilization = weighted_busy(results);
  r.links = merged_links(results);
  r.link_classes = merged_link_classes(results);
  r.trace = std::move(results[rep].trace);
  finish_result(r, alone / n, workload.batch_per_worker);
  return r;
}

}  // namespace stepcast::predict
