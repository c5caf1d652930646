// The step simulation's assembly: a cluster, a network model and one engine; the worker runtime
// (worker_runtime.hpp) and the scheme's exchange (make_exchange) on them; then the measured
// window's loads. Also the stand-alone collective on the same engine.
#include "stepcast/detail/scheme/step_simulation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numbers>
#include <optional>
#include <string>
#include <utility>

#include "scheme/allreduce_exchange.hpp"
#include "scheme/collective_timing.hpp"
#include "scheme/composed_plans.hpp"
#include "scheme/exchange.hpp"
#include "scheme/fsdp_exchange.hpp"
#include "scheme/group_exchange.hpp"
#include "scheme/parameter_server_exchange.hpp"
#include "scheme/pipeline_exchange.hpp"
#include "scheme/plan_runner.hpp"
#include "scheme/step_paths.hpp"
#include "scheme/trace_network.hpp"
#include "scheme/worker_runtime.hpp"
#include "stepcast/detail/hash.hpp"
#include "stepcast/detail/net/network_model.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/error.hpp"
#include "stepcast/limits.hpp"
#include "stepcast/scheme/rank_layout.hpp"
#include "stepcast/scheme/validate.hpp"

namespace stepcast::scheme {
namespace {

using cluster::Cluster;
using workload::Workload;

/// The one exchange of a data-parallel run owns every flow and event of the engine.
constexpr int kOwner = 0;

std::unique_ptr<Exchange> make_exchange(const StepContext& context, WorkerRuntime& runtime) {
  switch (context.scheme.scheme) {
    case Scheme::ParameterServer:
      return std::make_unique<ParameterServerExchange>(context, runtime, kOwner);
    case Scheme::AllReduce:
      return std::make_unique<AllReduceExchange>(context, runtime, kOwner);
    case Scheme::Fsdp:
      return std::make_unique<FsdpExchange>(context, runtime, kOwner);
  }
  return nullptr;
}

/// The workers a default trace of a pipeline keeps: `budget` of them (at least one a stage),
/// taken a rank from each stage in turn, each stage's lowest ranks first. The first `budget`
/// ranks would all be stage 0 under Megatron's tp-cp-dp-pp order, and show a quarter of the model.
std::vector<int> default_trace_workers(const ParallelConfig& parallel, int workers, int budget) {
  const RankLayout ranks(parallel, workers);
  std::vector<std::vector<int>> by_stage(static_cast<size_t>(ranks.size(ParallelDimension::Pipeline)));
  for (int r = 0; r < workers; ++r) {
    by_stage[static_cast<size_t>(ranks.coordinates(r)[ParallelDimension::Pipeline])].push_back(r);
  }
  const size_t want = std::max(static_cast<size_t>(budget), by_stage.size());
  std::vector<int> kept;
  for (size_t i = 0; kept.size() < want; ++i) {
    for (const std::vector<int>& stage : by_stage) {
      if (i < stage.size() && kept.size() < want) kept.push_back(stage[i]);
    }
  }
  std::sort(kept.begin(), kept.end());
  return kept;
}

sim::Trace make_trace_layout(const Workload& w, const SchemeConfig& scheme, const SimulationOptions& options,
                             int workers, TraceLayout& layout) {
  const sim::TraceSelection& kept = options.trace_selection;
  const bool pipelined = scheme.parallel.composed() && scheme.parallel.pipeline > 1;
  layout.kept_workers.assign(workers, kept.workers.empty() ? 1 : 0);
  for (int v : kept.workers) {
    if (v >= 0 && v < workers) layout.kept_workers[v] = 1;
  }
  if (kept.workers.empty() && kept.first_workers > 0 && workers > kept.first_workers) {
    if (pipelined) {
      layout.kept_workers.assign(workers, 0);
      for (int v : default_trace_workers(scheme.parallel, workers, kept.first_workers))
        layout.kept_workers[v] = 1;
    } else {
      for (int v = kept.first_workers; v < workers; ++v) layout.kept_workers[v] = 0;
    }
  }
  layout.first_step = kept.steps > 0 ? options.warmup_steps : 0;
  layout.last_step = kept.steps > 0 ? options.warmup_steps + kept.steps - 1
                                    : options.warmup_steps + options.measure_steps - 1;

  sim::Trace trace;
  // Workers not kept keep their index, unnamed (not written).
  // A pipeline's tracks say their stage: under tp-cp-dp-pp order neighbouring ranks share one,
  // so the rank alone does not tell which layers a track runs.
  std::optional<RankLayout> ranks;
  if (pipelined) ranks.emplace(scheme.parallel, workers);
  for (int i = 0; i < workers; ++i) {
    if (layout.kept_workers[i] == 0) {
      trace.add_process("");
    } else if (ranks) {
      trace.add_process(
          fmt::format("worker {} (stage {})", i, ranks->coordinates(i)[ParallelDimension::Pipeline]));
    } else {
      trace.add_process(fmt::format("worker {}", i));
    }
  }
  layout.first_ps_process = workers;
  if (scheme.scheme == Scheme::ParameterServer) {
    for (int s = 0; s < scheme.ps.count; ++s) trace.add_process(fmt::format("ps {}", s));
  }
  layout.network_process = trace.add_process("network");
  for (const std::string& lane : w.lanes) trace.add_thread(lane);  // thread = lane (worker_runtime.cpp)
  layout.steps = trace.add_thread("steps");
  switch (scheme.scheme) {
    case Scheme::ParameterServer:
      // One track per connection: a connection sends one message at a time, so its spans never
      // overlap, where one track for all of a worker's pulls would hold concurrent ones.
      layout.first_pull = static_cast<int>(trace.threads.size());
      for (int s = 0; s < scheme.ps.count; ++s) trace.add_thread(fmt::format("pull from ps {}", s));
      layout.first_push = static_cast<int>(trace.threads.size());
      for (int s = 0; s < scheme.ps.count; ++s) trace.add_thread(fmt::format("push to ps {}", s));
      layout.broadcast = trace.add_thread("broadcast from leader");
      layout.local_gather = trace.add_thread("gather to leader");
      layout.apply = trace.add_thread("apply");
      break;
    case Scheme::AllReduce:
      layout.allreduce = trace.add_thread("allreduce");
      break;
    case Scheme::Fsdp:
      layout.gather = trace.add_thread("all-gather");
      layout.reduce = trace.add_thread("reduce-scatter");
      break;
  }
  if (scheme.parallel.composed()) {
    layout.tensor = trace.add_thread("tensor-parallel collectives");
    layout.context = trace.add_thread("context-parallel ring steps");
    layout.data_gathers = trace.add_thread("data-parallel gathers");
    layout.data_reductions = trace.add_thread("data-parallel reductions");
    layout.to_next_stage = trace.add_thread("pipeline: to next stage");
    layout.to_previous_stage = trace.add_thread("pipeline: to previous stage");
    if (scheme.parallel.expert > 1) layout.experts = trace.add_thread("expert all-to-alls");
  }
  return trace;
}

/// The time the trace's spans cover.
std::pair<double, double> span_window(const sim::Trace& trace) {
  double t0 = net::kInfinity, t1 = -net::kInfinity;
  for (const sim::TraceSpan& s : trace.spans) {
    t0 = std::min(t0, s.start);
    t1 = std::max(t1, s.start + s.duration);
  }
  return {t0, t1};
}

/// The first 8 bytes of a name as a big-endian number (zero-padded): ordering two names by it
/// and, where equal, by the whole name is their lexicographic order (names hold no NUL).
uint64_t name_prefix(const std::string& name) {
  uint64_t key = 0;
  for (size_t i = 0; i < 8; ++i) key = (key << 8) | (i < name.size() ? static_cast<unsigned char>(name[i]) : 0U);
  return key;
}

/// Busiest first, ties by name. Thousands of links tie in a ring (every NIC alike): the names'
/// prefixes settle most ties without comparing the strings (a fifth of a 10,000-worker DDP step
/// went to string compares).
void sort_links(std::vector<LinkLoad>& links) {
  struct Key {
    double busy;
    uint64_t prefix;
    uint32_t index;
  };
  std::vector<Key> keys(links.size());
  for (size_t i = 0; i < links.size(); ++i) keys[i] = {links[i].busy, name_prefix(links[i].name), static_cast<uint32_t>(i)};
  std::sort(keys.begin(), keys.end(), [&links](const Key& a, const Key& b) {
    if (a.busy != b.busy) return a.busy > b.busy;
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    return links[a.index].name < links[b.index].name;
  });
  std::vector<LinkLoad> sorted;
  sorted.reserve(links.size());
  for (const Key& k : keys) sorted.push_back(std::move(links[k.index]));
  links = std::move(sorted);
}

/// The links that carried bytes, busiest first (ties by name), the `kept` busiest of them (0:
/// every one); `left_out` gets how many others carried bytes. Only the links kept are named and
/// held: naming every link held 80 bytes a link, over 300 MB at 2^20 GPUs, for a table of ten.
std::vector<LinkLoad> busiest_links(const cluster::LinkTable& table, const std::vector<double>& bytes,
                                    double duration, size_t kept, size_t& left_out) {
  struct Key {
    double busy;
    uint64_t prefix;
    uint32_t index;
  };
  std::vector<Key> keys;
  for (size_t l = 0; l < bytes.size(); ++l) {
    if (bytes[l] <= 0) continue;
    const double busy = duration > 0 ? bytes[l] / (table[l].bw * duration) : 0.0;
    keys.push_back({busy, kept > 0 ? name_prefix(table.name(l)) : 0, static_cast<uint32_t>(l)});
  }
  const size_t carrying = keys.size();
  if (kept > 0 && carrying > kept) {
    // The kept busiest are among the keys not after the kept-th by (busy, prefix), whatever the
    // rest of their names say: sort_links settles those.
    auto before = [](const Key& a, const Key& b) {
      return a.busy != b.busy ? a.busy > b.busy : a.prefix < b.prefix;
    };
    std::nth_element(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(kept - 1), keys.end(), before);
    const Key last = keys[kept - 1];
    keys.erase(std::partition(keys.begin(), keys.end(), [&](const Key& k) { return !before(last, k); }),
               keys.end());
  }
  std::vector<LinkLoad> links;
  links.reserve(keys.size());
  for (const Key& k : keys) links.push_back({table.name(k.index), k.busy, bytes[k.index]});
  sort_links(links);
  left_out = 0;
  if (kept > 0 && carrying > kept) {
    links.resize(kept);
    left_out = carrying - kept;
  }
  return links;
}

}  // namespace

std::vector<ResourceLoad> link_loads(const Cluster& cluster, const SchemeConfig& scheme,
                                     const std::vector<double>& bytes, double window) {
  std::vector<ResourceLoad> loads;
  auto busy = [&](uint32_t l) { return window > 0 ? bytes[l] / (cluster.links[l].bw * window) : 0.0; };
  const int worker_nodes = cluster.spec.num_worker_nodes();
  double worker_out = 0, worker_in = 0, server_out = 0, server_in = 0, bus = 0;
  for (size_t nic = 0; nic < cluster.nic_up.size(); ++nic) {
    const int node = cluster.links[cluster.nic_up[nic]].from;
    const double out = busy(cluster.nic_up[nic]);
    const double in = busy(cluster.nic_down[nic]);
    if (node < worker_nodes) {
      worker_out = std::max(worker_out, out);
      worker_in = std::max(worker_in, in);
    } else {
      server_out = std::max(server_out, out);
      server_in = std::max(server_in, in);
    }
  }
  for (size_t i = 0; i < cluster.bus_up.size(); ++i) {
    bus = std::max({bus, busy(cluster.bus_up[i]), busy(cluster.bus_down[i])});
  }
  for (size_t i = 0; i < cluster.pcie_up.size(); ++i) {
    bus = std::max({bus, busy(cluster.pcie_up[i]), busy(cluster.pcie_down[i])});
  }
  const bool colocated =
      scheme.scheme == Scheme::ParameterServer && scheme.ps.placement == PsPlacement::Colocated;
  const char* node_nic = colocated ? "node NIC" : "worker NIC";
  loads.push_back({fmt::format("{} out", node_nic), worker_out});
  loads.push_back({fmt::format("{} in", node_nic), worker_in});
  if (cluster.num_nodes > worker_nodes) {
    loads.push_back({"PS NIC out", server_out});
    loads.push_back({"PS NIC in", server_in});
  }
  if (bus > 0) loads.push_back({"intra-node link", bus});
  for (ResourceLoad& load : fabric_loads(cluster, bytes, window)) loads.push_back(std::move(load));
  return loads;
}

namespace {

/// A switch-to-switch link's class: its name without the switches' numbers ("leaf->spine link").
std::string fabric_class(const Cluster& cluster, uint32_t l) {
  std::string name = cluster.links.name(l);
  std::erase_if(name, [](char ch) { return ch >= '0' && ch <= '9'; });
  return name + " link";
}

}  // namespace

std::vector<ResourceLoad> fabric_loads(const Cluster& cluster, const std::vector<double>& bytes,
                                       double window) {
  // Switch-to-switch links by class (leaf->spine, spine->leaf, edge->agg, router->router, a custom
  // fabric's names): the switches' names without their numbers. An oversubscribed uplink can be
  // the busiest resource of a step while every NIC is half idle.
  std::map<std::string, double> fabric;
  for (const std::vector<uint32_t>& out : cluster.switch_out) {
    for (uint32_t l : out) {
      if (!(bytes[l] > 0)) continue;
      double& busiest = fabric[fabric_class(cluster, l)];
      busiest = std::max(busiest, window > 0 ? bytes[l] / (cluster.links[l].bw * window) : 0.0);
    }
  }
  std::vector<ResourceLoad> loads;
  for (const auto& [name, load] : fabric) loads.push_back({name, load});
  return loads;
}

std::vector<sim::LinkClassLoad> link_class_loads(const Cluster& cluster, const SchemeConfig& scheme,
                                                 const std::vector<double>& bytes, double window,
                                                 double steps) {
  const bool colocated =
      scheme.scheme == Scheme::ParameterServer && scheme.ps.placement == PsPlacement::Colocated;
  // The node roles first, in fixed slots (a million GPUs have millions of such links); the
  // fabric's classes after them, by name.
  enum Slot : size_t { kWorkerNic, kServerNic, kPcie, kBus };
  std::vector<sim::LinkClassLoad> classes{{.name = colocated ? "node NIC" : "worker NIC"},
                                          {.name = "PS NIC"},
                                          {.name = "PCIe link"},
                                          {.name = "intra-node link"}};
  auto add = [&](size_t slot, uint32_t l) {
    if (!(bytes[l] > 0)) return;
    sim::LinkClassLoad& c = classes[slot];
    const double busy = window > 0 ? bytes[l] / (cluster.links[l].bw * window) : 0.0;
    ++c.links;
    c.busiest = std::max(c.busiest, busy);
    c.mean_busy += busy;  // a sum until the end
    c.bytes += bytes[l] * steps;
  };
  const int worker_nodes = cluster.spec.num_worker_nodes();
  for (size_t nic = 0; nic < cluster.nic_up.size(); ++nic) {
    const size_t slot = cluster.links[cluster.nic_up[nic]].from < worker_nodes ? kWorkerNic : kServerNic;
    add(slot, cluster.nic_up[nic]);
    add(slot, cluster.nic_down[nic]);
  }
  for (size_t i = 0; i < cluster.pcie_up.size(); ++i) {
    add(kPcie, cluster.pcie_up[i]);
    add(kPcie, cluster.pcie_down[i]);
  }
  for (size_t i = 0; i < cluster.bus_up.size(); ++i) {
    add(kBus, cluster.bus_up[i]);
    add(kBus, cluster.bus_down[i]);
  }
  std::map<std::string, size_t> fabric;
  for (const std::vector<uint32_t>& out : cluster.switch_out) {
    for (uint32_t l : out) {
      if (!(bytes[l] > 0)) continue;
      auto [it, added] = fabric.try_emplace(fabric_class(cluster, l), classes.size());
      if (added) classes.push_back({.name = it->first});
      add(it->second, l);
    }
  }
  std::erase_if(classes, [](const sim::LinkClassLoad& c) { return c.links == 0; });
  for (sim::LinkClassLoad& c : classes) c.mean_busy /= static_cast<double>(c.links);
  std::stable_sort(
      classes.begin(), classes.end(),
      [](const sim::LinkClassLoad& a, const sim::LinkClassLoad& b) { return a.busiest > b.busiest; });
  return classes;
}

void add_window_loads(SimulationResult& r, const Cluster& cluster, const SchemeConfig& scheme,
                      const std::vector<double>& bytes, size_t links_kept) {
  double compute_busy = 0;
  for (const WorkerTimes& times : r.workers)
    compute_busy += times.cycle > 0 ? times.compute / times.cycle : 1.0;
  r.loads.push_back({"worker compute (mean)", compute_busy / static_cast<double>(r.workers.size())});

  for (ResourceLoad& load : link_loads(cluster, scheme, bytes, r.window)) r.loads.push_back(std::move(load));
  for (size_t nic = 0; nic < cluster.nic_up.size(); ++nic) {
    r.bytes_sent += bytes[cluster.nic_up[nic]];
    r.bytes_received += bytes[cluster.nic_down[nic]];
  }
  for (size_t i = 0; i < cluster.bus_up.size(); ++i) {
    r.bytes_sent += bytes[cluster.bus_up[i]];
    r.bytes_received += bytes[cluster.bus_down[i]];
  }
  r.links = busiest_links(cluster.links, bytes, r.window, links_kept, r.links_left_out);
  r.link_classes = link_class_loads(cluster, scheme, bytes, r.window);
}

SimulationResult run_steps(const Workload& w, const Cluster& cluster, const SchemeConfig& scheme,
                           const SimulationOptions& options, net::NetworkModel& network,
                           const RepresentativeClient* representative, const LinkBytesToCluster& to_cluster,
                           const FsdpPlans* fsdp_plans, const ComposedRun* composed,
                           const ComposedPlans* composed_plans) {
  STEPCAST_ASSERT(workload::validate(w).empty());
  STEPCAST_ASSERT(options.measure_steps >= 1 && options.warmup_steps >= 0);
  // A trace also records the links' load, through a network that forwards every call.
  std::optional<TracedNetwork> traced;
  if (options.record_trace) traced.emplace(network, cluster.links.size());
  StepEngine engine(traced ? static_cast<net::NetworkModel&>(*traced) : network);
  TraceLayout layout;
  sim::Trace trace;
  // The lanes a trace names: the stage programs' (all alike) or the workload's.
  const Workload& laned = composed != nullptr ? composed->programs.front().ops : w;
  if (options.record_trace) trace = make_trace_layout(laned, scheme, options, cluster.spec.workers, layout);
  const StepContext context{
      w,      scheme,         options,    cluster, engine, options.record_trace ? &trace : nullptr,
      layout, representative, fsdp_plans, composed};
  WorkerRuntime runtime(context);
  // The owner of a flow or event is its exchange's index here: one exchange, or one per parallel
  // dimension in ParallelDimension order.
  std::vector<std::unique_ptr<Exchange>> exchanges;
  if (composed != nullptr) {
    for (int d = 0; d < kParallelDimensions; ++d) {
      const auto dimension = static_cast<ParallelDimension>(d);
      if (dimension == ParallelDimension::Pipeline) {
        exchanges.push_back(std::make_unique<PipelineExchange>(context, runtime, *composed_plans, d));
      } else {
        exchanges.push_back(std::make_unique<GroupExchange>(context, runtime, dimension, *composed_plans, d));
      }
    }
  } else {
    exchanges.push_back(make_exchange(context, runtime));
  }
  for (const std::unique_ptr<Exchange>& e : exchanges) runtime.attach(*e);

  exchanges.front()->begin(runtime);
  constexpr uint64_t kProgressEvery = 1024;
  uint64_t until_progress = kProgressEvery;
  // Only a run that simulates every worker reports progress: a fast path that simulates one
  // worker per class has a fraction done that says nothing of a full engine's time (and the plans
  // built before it, every rank's, made a 131,072-GPU layout look like 25 minutes to the
  // long-run warning).
  const bool every_worker = context.workers() == cluster.spec.workers && representative == nullptr &&
                            !(composed != nullptr && composed->one_per_stage);
  const std::function<void(double)> no_progress;
  const std::function<void(double)>& progress = every_worker ? options.progress : no_progress;
  engine.run_until(
      [&] { return runtime.all_done(); },
      [&](net::FlowId id) { exchanges[static_cast<size_t>(engine.owner_of(id))]->flow_done(id); },
      [&](const Event& e) {
        if (progress && --until_progress == 0) {
          until_progress = kProgressEvery;
          progress(runtime.fraction_done());
        }
        if (const auto* op = std::get_if<OpDone>(&e)) {
          runtime.op_done(op->worker, op->op);
        } else if (const auto* start = std::get_if<StartStep>(&e)) {
          runtime.start_step(start->worker);
        } else if (const auto* optimized = std::get_if<OptimizerDone>(&e)) {
          runtime.optimizer_done(optimized->worker);
        } else if (const auto* hosted = std::get_if<HostWorkDone>(&e)) {
          runtime.host_work_done(hosted->worker);
        } else if (const auto* stage = std::get_if<StageDone>(&e)) {
          exchanges[static_cast<size_t>(stage->owner)]->handle(e);
        } else if (const auto* arrived = std::get_if<TransferArrived>(&e)) {
          exchanges[static_cast<size_t>(arrived->owner)]->handle(e);
        } else {
          exchanges.front()->handle(e);  // the parameter server's own events
        }
      });

  SimulationResult r;
  r.events = engine.events();
  r.max_link_flows = network.max_link_flows();
  const bool one_for_all = (representative != nullptr || fsdp_plans != nullptr) && context.workers() == 1;
  const bool one_per_stage = composed != nullptr && composed->one_per_stage;
  r.engine =
      one_for_all || one_per_stage || fsdp_plans != nullptr ? SimulationEngine::Fast : SimulationEngine::Full;
  const double window_start = std::max(runtime.window_start(), 0.0);
  r.window = engine.now() - window_start;
  r.workers = runtime.times();
  if (one_for_all) r.workers.assign(cluster.spec.workers, r.workers.front());
  if (one_per_stage) {
    // Every rank runs its class's simulated worker's timeline.
    std::vector<WorkerTimes> all(static_cast<size_t>(cluster.spec.workers));
    for (int rank = 0; rank < cluster.spec.workers; ++rank) {
      all[static_cast<size_t>(rank)] =
          r.workers[static_cast<size_t>(composed->worker_of_rank[static_cast<size_t>(rank)])];
    }
    r.workers = std::move(all);
  }
  // Transfers completed by the end, less what each link had carried when the window opened, the
  // part of the transfers then in flight included: each transfer counts what it moved inside
  // the window, but for those still in flight at the end, so no link's utilization passes 1.
  std::vector<double> bytes = network.link_bytes();
  const std::vector<double>& at_window = runtime.link_bytes_at_window();
  if (!at_window.empty()) {
    for (size_t l = 0; l < bytes.size(); ++l) bytes[l] -= at_window[l];
  }
  add_window_loads(r, cluster, scheme, to_cluster ? to_cluster(bytes) : bytes, options.links_kept);
  for (const std::unique_ptr<Exchange>& e : exchanges) e->add_loads(r, window_start);
  std::stable_sort(r.loads.begin(), r.loads.end(),
                   [](const ResourceLoad& a, const ResourceLoad& b) { return a.busy > b.busy; });
  if (traced) {
    if (options.warmup_steps == 0) trace.instants.push_back({-1, "measured window opens", 0.0});
    traced->finish(engine.now());
    const auto [t0, t1] = span_window(trace);
    traced->add_counters(trace, cluster, layout.network_process, t0, t1);
  }
  r.trace = std::move(trace);
  return r;
}

void require_simulable_workers(int workers, const SchemeConfig& scheme, const SimulationOptions& options) {
  if (workers <= limits::kMaxSimulatedWorkers) return;
  std::string reason;
  if (options.record_trace) {
    reason = "a trace records every worker's events (leave out --trace-out)";
  } else if (options.compute_cv > 0) {
    reason = "workload.compute_cv gives every worker its own compute times (set it to 0)";
  } else if (!options.fast_paths) {
    reason = "simulation.fast_paths is false (set it to true)";
  } else {
    switch (scheme.scheme) {
      case Scheme::ParameterServer:
        reason = "parameter servers are simulated connection by connection";
        break;
      case Scheme::AllReduce:
      case Scheme::Fsdp:
        reason = "no fast path applies to this scenario (docs/models.md, \"Exact fast paths\")";
        break;
    }
  }
  throw Error({"", 0, "cluster.workers"},
              fmt::format("{} workers need the full engine, which simulates at most {} (every worker's ops "
                          "and transfers): {}; predictor: coarse or analytic answer at any size",
                          workers, limits::kMaxSimulatedWorkers, reason));
}

SimulationResult simulate_steps_full(const Workload& w, const cluster::ClusterSpec& spec,
                                     const SchemeConfig& scheme, const SimulationOptions& options) {
  require_simulable_workers(spec.workers, scheme, options);
  const bool dedicated =
      scheme.scheme == Scheme::ParameterServer && scheme.ps.placement == PsPlacement::Dedicated;
  const Cluster cluster = cluster::build_cluster(spec, dedicated ? scheme.ps.count : 0);
  const std::unique_ptr<net::NetworkModel> network = make_network(cluster, options.network);
  return run_steps(w, cluster, scheme, options, *network, nullptr, {});
}

const char* to_string(SimulationEngine engine) {
  return name_c_str(engine);
}

double straggler_factor(uint64_t seed, int worker, int step, double cv) {
  if (!(cv > 0)) return 1;
  // Box-Muller from two seeded uniforms in (0, 1]; lognormal exp(mu + sigma z) has mean 1 and
  // coefficient of variation cv when sigma^2 = ln(1 + cv^2) and mu = -sigma^2 / 2.
  const uint64_t key =
      mix64(seed ^ mix64((static_cast<uint64_t>(worker) << 32) + static_cast<uint64_t>(step)) ^
            0x7374726167676c65ULL);
  const double u1 = unit_interval(key) + 0x1.0p-53;  // (0, 1]: log(u1) stays finite
  const double u2 = unit_interval(mix64(key));
  const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
  const double sigma2 = std::log1p(cv * cv);
  return std::exp(-sigma2 / 2 + std::sqrt(sigma2) * z);
}

SimulationResult simulate_steps(const Workload& workload, const cluster::ClusterSpec& cluster,
                                const SchemeConfig& scheme, const SimulationOptions& options) {
  validate(workload, cluster, scheme);
  if (options.warmup_steps < 0 || options.measure_steps < 1) {
    throw Error({"", 0, options.measure_steps < 1 ? "steps.measure" : "steps.warmup"},
                fmt::format("needs steps.warmup >= 0 and steps.measure >= 1, got {} and {}",
                            options.warmup_steps, options.measure_steps));
  }
  if (scheme.parallel.composed()) return simulate_composed(workload, cluster, scheme, options);
  // A trace shows every event, so it comes from the full engine.
  if (options.fast_paths && !options.record_trace) {
    switch (scheme.scheme) {
      case Scheme::AllReduce:
        if (auto fast = simulate_allreduce_fast(workload, cluster, scheme, options)) return std::move(*fast);
        break;
      case Scheme::ParameterServer:
        if (auto fast = simulate_ps_fast(workload, cluster, scheme, options)) return std::move(*fast);
        break;
      case Scheme::Fsdp:
        if (auto fast = simulate_fsdp_fast(workload, cluster, scheme, options)) return std::move(*fast);
        break;
    }
  }
  return simulate_steps_full(workload, cluster, scheme, options);
}

RingBottleneck ring_bottleneck(const cluster::Cluster& cluster) {
  const CollectivePlan plan = plan_collective(cluster, CollectiveOp::AllReduce, AllReduceAlgorithm::Ring);
  if (plan.patterns.empty()) return {net::kInfinity, 0};
  const Pattern& ring = plan.patterns.front();
  RingBottleneck r{net::kInfinity, ring.latency};
  for (const FlowGroup& g : ring.groups) {
    // A channel's transfer carries size_factor of a step's share, so its link rate counts for
    // 1 / size_factor of the step's.
    for (const net::LinkUse& u : g.path)
      r.bw = std::min(r.bw, cluster.links[u.link].bw / (u.count * g.size_factor));
  }
  return r;
}

CollectiveResult simulate_collective(const cluster::ClusterSpec& spec, double bytes, CollectiveOp op,
                                     AllReduceAlgorithm algorithm, NetworkKind network, bool fast_path,
                                     CollectiveProtocol protocol, size_t links_kept) {
  SchemeConfig scheme;
  scheme.allreduce.algorithm = algorithm;
  scheme.allreduce.protocol = protocol;
  validate(spec, scheme);
  if (!(std::isfinite(bytes) && bytes >= 0)) {
    throw Error({"", 0, "--size"},
                fmt::format("expected a finite collective size >= 0 bytes, got {}", bytes));
  }
  CollectiveResult r;
  r.algorithm = algorithm;
  // Only an all-reduce runs under NCCL's protocol model; the others are rings on the links.
  r.protocol = op == CollectiveOp::AllReduce ? protocol : CollectiveProtocol::Links;
  if (spec.workers <= 1) return r;
  const Cluster c = cluster::build_cluster(spec);
  // An all-reduce runs as training.allreduce would run it (auto: chosen for this size); the other
  // collectives are rings under the links' costs.
  const bool allreduce = op == CollectiveOp::AllReduce;
  const AllReducePlanner planner(c, allreduce ? algorithm : AllReduceAlgorithm::Ring,
                                 allreduce ? protocol : CollectiveProtocol::Links);
  const AllReducePlanner::Choice choice = planner.choose(bytes);
  const CollectivePlan other =
      allreduce ? CollectivePlan{} : plan_collective(c, op, AllReduceAlgorithm::Ring);
  const CollectivePlan& plan = allreduce ? planner.plan(choice) : other;
  const CollectiveTerms terms = allreduce ? choice.terms : CollectiveTerms{.regime = spec.regime_for(bytes)};
  if (allreduce) {
    r.algorithm = choice.algorithm;
    r.protocol = choice.protocol;
  }
  std::vector<double> bytes_on(c.links.size(), 0.0);
  for (const Stage& stage : plan.stages)
    r.max_link_flows = std::max(r.max_link_flows, plan.patterns[stage.pattern].max_link_members);
  r.stages = 0;
  for (const Stage& stage : plan.stages) r.stages += stage.steps;
  if (fast_path) {
    CollectiveTiming timing(c, plan, network);
    r.time = timing.time(bytes, terms);
    r.events = timing.events();
    timing.add_link_bytes(bytes_on, bytes, 1, terms);
    r.engine = SimulationEngine::Fast;
  } else {
    if (spec.workers > limits::kMaxSimulatedWorkers) {
      throw Error({"", 0, "cluster.workers"},
                  fmt::format("{} workers: the full engine runs a collective over at most {}; the fast path "
                              "runs any size",
                              spec.workers, limits::kMaxSimulatedWorkers));
    }
    // Stage after stage on the engine, as an exchange runs it (PlanRunner).
    const std::unique_ptr<net::NetworkModel> net = make_network(c, network);
    StepEngine engine(*net);
    PlanRunner runner(engine, 0);
    bool done = runner.start(plan, bytes, terms, 0) == kNone;
    engine.run_until([&] { return done; }, [&](net::FlowId id) { runner.flow_done(id); },
                     [&](const Event& e) {
                       if (const auto* stage = std::get_if<StageDone>(&e))
                         done = runner.stage_done(stage->slot).has_value();
                     });
    r.time = engine.now();
    r.events = engine.events() - plan.stages.size();
    bytes_on = net->link_bytes();
    r.engine = SimulationEngine::Full;
  }
  // Busiest links over the whole collective.
  if (r.time > 0) r.links = busiest_links(c.links, bytes_on, r.time, links_kept, r.links_left_out);
  return r;
}

CollectiveResult simulate_allreduce(const cluster::ClusterSpec& spec, double bytes,
                                    AllReduceAlgorithm algorithm, NetworkKind network, bool fast_path,
                                    CollectiveProtocol protocol) {
  return simulate_collective(spec, bytes, CollectiveOp::AllReduce, algorithm, network, fast_path, protocol);
}

}  // namespace stepcast::scheme
