#include "stepcast/detail/scheme/composed_costs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>

#include "scheme/composed_plans.hpp"
#include "scheme/stage_programs.hpp"
#include "stepcast/detail/scheme/costs.hpp"

namespace stepcast::scheme {
namespace {

/// A search (stepcast plan) predicts many layouts on one cluster, and many of them share their
/// groups: the cluster, each layout's collective plans and their closed forms are kept per thread
/// between calls. Plans depend on the rank layout (t, c, p, e, ETP, order, workers), the
/// collectives each dimension needs (sequence parallelism, the scheme), the all-reduce settings and
/// the expert loads, and hybrid sharding's shard groups; the rest of a layout (chunks, schedule,
/// the other shardings, micro-batches) does not change them. Each plan's closed form at a size is a function
/// of the plan and the size.
struct PlansKey {
  ParallelConfig parallel;  // virtual_stages and global_batch reset: they do not change the groups
  int workers = 0;
  Scheme scheme = Scheme::AllReduce;
  AllReduceConfig allreduce;
  std::vector<double> expert_loads;
  int data_shard = 0;
  [[nodiscard]] auto tied() const {
    return std::tie(parallel.tensor, parallel.context, parallel.pipeline, parallel.expert,
                    parallel.expert_tensor, parallel.order, parallel.sequence, workers, scheme,
                    allreduce.algorithm, allreduce.protocol, expert_loads, data_shard);
  }
  bool operator<(const PlansKey& other) const { return tied() < other.tied(); }
};

struct CachedPlans {
  ComposedPlans plans;
  /// (plan, bytes) -> the terms it runs with and its time alone
  std::map<std::pair<const CollectivePlan*, double>, std::pair<CollectiveTerms, double>> cost;
  /// plan -> the links it crosses, in order
  std::map<const CollectivePlan*, std::vector<uint32_t>> links;
};

struct ClusterCache {
  std::unique_ptr<cluster::ClusterSpec> spec;
  std::shared_ptr<const cluster::Cluster> cluster;
  std::map<PlansKey, std::unique_ptr<CachedPlans>> plans;
};

/// How many layouts' plans a thread keeps (each up to a few MB at thousands of ranks).
constexpr std::size_t kCachedPlans = 64;

ClusterCache& cluster_cache(const cluster::ClusterSpec& spec) {
  thread_local ClusterCache cache;
  if (!cache.spec || !(*cache.spec == spec)) {
    cache.plans.clear();  // before the cluster its planners refer to
    cache.cluster = std::make_shared<const cluster::Cluster>(cluster::build_cluster(spec));
    cache.spec = std::make_unique<cluster::ClusterSpec>(spec);
  }
  return cache;
}

/// A stage's passes as StageFootprint::activations lists them. A search checks many layouts of
/// the same schedule, p, v and micro-batches (they differ in t, c, sharding, recomputation): the
/// thread keeps the lists it made.
std::shared_ptr<const std::vector<std::pair<int, int>>> activation_passes(PipelineSchedule schedule, int p,
                                                                          int v, int m, int stage,
                                                                          int group) {
  using Key = std::tuple<PipelineSchedule, int, int, int, int, int>;
  using Passes = std::vector<std::pair<int, int>>;
  thread_local std::map<Key, std::shared_ptr<const Passes>> made;
  thread_local std::size_t kept = 0;          // passes in `made`
  constexpr std::size_t kMostKept = 1 << 21;  // 16 MB a thread
  const Key key{schedule, p, v, m, stage, group};
  if (auto it = made.find(key); it != made.end()) return it->second;
  const std::vector<PipelinePass> order = schedule_order(schedule, p, v, m, stage, group);
  if (kept + order.size() > kMostKept) {
    made.clear();
    kept = 0;
  }
  auto passes = std::make_shared<Passes>();
  passes->reserve(order.size());
  for (const PipelinePass& pass : order) {
    passes->emplace_back(pass.chunk, pass.kind == PipelinePass::Kind::Forward ? 1 : -1);
  }
  kept += passes->size();
  made.emplace(key, passes);
  return passes;
}

}  // namespace

ModelLayers::ModelLayers(const workload::Workload& w)
    : units(w),
      experts(w.facts.transformer ? w.facts.transformer->experts : 0),
      mla(w.facts.transformer && w.facts.transformer->mla()) {
  const double element = workload::bytes_per_element(w.precision);
  tensors.reserve(w.tensors.size());
  for (const workload::Tensor& t : w.tensors) {
    tensors.push_back({.layer = w.ops[static_cast<size_t>(t.consumers.front())].layer,
                       .expert = expert_of_tensor(t.name),
                       .whole = whole_on_tensor_ranks(t.name),
                       .elements = t.bytes / element});
  }
  without_expert_parallelism = layer_parameters(1);
}

ModelLayers::LayerParameters ModelLayers::layer_parameters(int e) const {
  LayerParameters out;
  for (const TensorFacts& t : tensors) {
    const auto layer = static_cast<size_t>(t.layer);
    if (out.parameters.size() <= layer) {
      out.parameters.resize(layer + 1, 0);
      out.experts.resize(layer + 1, 0);
      out.whole.resize(layer + 1, 0);
    }
    const int expert = e > 1 ? t.expert : -1;
    if (expert >= 0 && expert >= experts / e) continue;
    out.parameters[layer] += t.elements;
    if (expert >= 0) out.experts[layer] += t.elements;
    if (mla && expert < 0 && t.whole) out.whole[layer] += t.elements;
  }
  return out;
}

std::vector<StageFootprint> stage_footprints(const workload::Workload& w, const SchemeConfig& scheme,
                                             int workers, bool every_micro_batch, const ModelLayers* model) {
  std::optional<ModelLayers> own;
  if (model == nullptr) model = &own.emplace(w);
  const ChunkLayers chunks = split_chunks(model->units, scheme);
  const int p = scheme.parallel.pipeline, v = scheme.parallel.virtual_stages;
  // What a stage holds peaks within its first 2p micro-batches under 1f1b, interleaved and ZB-H1
  // (at most p v chunks in flight, then one freed per one started); gpipe holds all m.
  const int all = micro_batches(scheme.parallel, workers, w.batch_per_worker);
  const bool gpipe = scheme.pipeline.schedule == PipelineSchedule::GPipe;
  // Interleaved in groups of g > p holds up to (v - 1) g + 2 (p - 1) passes before its first
  // backward: its first 2g micro-batches, in the same groups as all m.
  const int group = interleaved_group(scheme.pipeline.microbatch_group, p, all);
  const int m = every_micro_batch || gpipe ? all : std::min(all, 2 * std::max(p, group));
  // Per layer: the parameters one rank holds (under expert parallelism experts / e of each MoE
  // layer's experts, split over ETP ranks instead of t) and how many of them are experts'.
  const int e = scheme.parallel.expert;
  // And how many are held whole on every tensor rank (whole_on_tensor_ranks).
  const ModelLayers::LayerParameters with_experts =
      e > 1 ? model->layer_parameters(e) : ModelLayers::LayerParameters{};
  const ModelLayers::LayerParameters& held = e > 1 ? with_experts : model->without_expert_parallelism;
  const std::vector<double>& layer_parameters = held.parameters;
  const std::vector<double>& layer_experts = held.experts;
  const std::vector<double>& layer_whole = held.whole;
  const int last_layer = static_cast<int>(layer_parameters.size()) - 1;
  auto block_of = [&](int l) {
    return static_cast<size_t>(l) < w.block_of_layer.size() ? w.block_of_layer[static_cast<size_t>(l)] : -1;
  };
  const workload::TransformerShape* shape = w.facts.transformer ? &*w.facts.transformer : nullptr;
  const std::vector<double> loads = shape != nullptr && shape->experts > 1
                                        ? busiest_expert_gpu_by_block(w, scheme.parallel)
                                        : std::vector<double>{};
  std::vector<StageFootprint> out(static_cast<size_t>(p));
  for (int s = 0; s < p; ++s) {
    StageFootprint& f = out[static_cast<size_t>(s)];
    double whole = 0;  // elements held whole on every tensor rank
    for (int k = 0; k < v; ++k) {
      int blocks = 0, moe_blocks = 0, previous = -1;
      double load = 0;
      for (int l : chunks[static_cast<size_t>(k * p + s)]) {
        if (static_cast<size_t>(l) < layer_parameters.size()) {
          f.parameters += layer_parameters[static_cast<size_t>(l)];
          f.expert_parameters += layer_experts[static_cast<size_t>(l)];
          whole += layer_whole[static_cast<size_t>(l)];
        }
        const int block = block_of(l);
        if (block >= 0 && block != previous) {
          ++blocks;
          if (shape != nullptr && shape->is_moe_block(block)) {
            ++moe_blocks;
            // A capacity factor pads every expert's buffers to its capacity (c x the mean
            // tokens); dropless, they hold the routing's worst case.
            const double c = w.facts.moe_capacity_factor;
            const double g = c > 0 ? c : loads[static_cast<size_t>(block)];
            load += g;
            f.most_expert_load = std::max(f.most_expert_load, g);
          }
        }
        previous = block;
        if (l == 0 && block < 0) f.embedding = true;
        if (l == last_layer && block < 0) f.head = true;
      }
      f.chunk_blocks.push_back(blocks);
      f.chunk_moe_blocks.push_back(moe_blocks);
      f.chunk_expert_load.push_back(load);
    }
    const int expert_split = e > 1 ? scheme.parallel.expert_tensor_degree() : scheme.parallel.tensor;
    f.parameters = (f.parameters - f.expert_parameters - whole) / scheme.parallel.tensor + whole +
                   f.expert_parameters / expert_split;
    f.expert_parameters /= expert_split;
    f.activations = activation_passes(scheme.pipeline.schedule, p, v, m, s, group);
  }
  return out;
}

namespace {
/// The dimensions that reduce gradients and gather parameters: data (or hybrid sharding's shard
/// groups), its replicas, and the experts' data groups.
bool reduces_gradients(ParallelDimension d) {
  switch (d) {
    case ParallelDimension::Data:
    case ParallelDimension::ExpertData:
    case ParallelDimension::DataReplicate:
      return true;
    case ParallelDimension::Tensor:
    case ParallelDimension::Context:
    case ParallelDimension::Pipeline:
    case ParallelDimension::Expert:
    case ParallelDimension::ExpertTensor:
      return false;
  }
  return false;
}

/// One op of a pass in run_pass: on the path (a compute op on its lane, with its layer's exposed
/// collectives), instant (a collective on the path counted with its layer's compute, a message),
/// or on one of sharded data parallelism's streams.
struct PassOp {
  double duration = 0;
  int lane = -1;     ///< a compute op's lane, else -1
  int channel = -1;  ///< a data stream (dimension x 2 + stream), else -1
  int unmet = 0;     ///< dependencies inside the pass (run_pass counts them down on a copy)
  std::vector<int> dependents;
};

struct PassRun {
  double end = 0;    ///< s: the pass's last compute op ends
  double after = 0;  ///< s: the data-parallel group's reductions run on past that
};

/// A pass of one micro-batch as the fine engine runs it, on its own: each lane's ops in program
/// order once their dependencies are done; each data stream's collectives one at a time in the
/// order they are issued, each at its closed form alone; streams whose collectives cross the
/// same links (`shares_with`, each stream's such streams, itself too: FSDP's gathers and
/// reduce-scatters over the data-parallel group; hybrid sharding's all-reduces where the replicas
/// meet on the same NICs) share them, each at 1/k of its speed while k of them run (max-min
/// sharing of one bottleneck). `backlog`: s of reduce-scatters a previous pass left on the
/// group's reduction stream. So a unit's compute waits for its gather, which goes out when the
/// prefetch rule lets it: the chain gather -> compute -> gather ... where the gathers are not
/// hidden. Deterministic and cheap: a pass's ops, each stream's and lane's in order.
PassRun run_pass(const std::vector<PassOp>& ops, double backlog,
                 const std::vector<std::vector<int>>& shares_with) {
  constexpr int kData = static_cast<int>(ParallelDimension::Data);  // its channels 2d, 2d + 1
  const int reductions = 2 * kData + 1;
  int channels = static_cast<int>(shares_with.size());
  std::map<int, std::vector<int>> lane_ops;
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    const PassOp& o = ops[static_cast<size_t>(i)];
    if (o.lane >= 0) lane_ops[o.lane].push_back(i);
    channels = std::max(channels, o.channel + 1);
  }
  struct Lane {
    const std::vector<int>* ops = nullptr;
    size_t next = 0;
    int running = -1;
    double ends = 0;
  };
  std::vector<Lane> lanes;
  for (const auto& [lane, list] : lane_ops) lanes.push_back({.ops = &list});
  struct Channel {
    std::vector<int> queue;  // issued, not started
    size_t next = 0;
    int running = -1;  // op, or kBacklog
    double remaining = 0;
  };
  constexpr int kBacklog = -2;
  std::vector<Channel> streams(static_cast<size_t>(channels));
  if (backlog > 0) {
    streams[static_cast<size_t>(reductions)].running = kBacklog;
    streams[static_cast<size_t>(reductions)].remaining = backlog;
  }
  double now = 0, end = 0, drained = 0;
  std::vector<int> shares(streams.size(), 1);
  std::vector<int> ready, unmet(ops.size());
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    unmet[static_cast<size_t>(i)] = ops[static_cast<size_t>(i)].unmet;
    if (unmet[static_cast<size_t>(i)] == 0) ready.push_back(i);
  }
  auto finish = [&](int i) {
    for (int d : ops[static_cast<size_t>(i)].dependents) {
      if (--unmet[static_cast<size_t>(d)] == 0) ready.push_back(d);
    }
  };
  auto share = [&](size_t c) {
    if (c >= shares_with.size()) return 1;
    int running = 0;
    for (int other : shares_with[c]) running += streams[static_cast<size_t>(other)].running != -1 ? 1 : 0;
    return std::max(running, 1);
  };
  while (true) {
    // Issue what is due (instant ops end at once), then start each idle lane and stream.
    while (!ready.empty()) {
      const int i = ready.back();
      ready.pop_back();
      const PassOp& o = ops[static_cast<size_t>(i)];
      if (o.channel >= 0) {
        streams[static_cast<size_t>(o.channel)].queue.push_back(i);
      } else if (o.lane < 0) {
        finish(i);
      }
    }
    for (Lane& l : lanes) {
      if (l.running < 0 && l.next < l.ops->size() && unmet[static_cast<size_t>((*l.ops)[l.next])] == 0) {
        l.running = (*l.ops)[l.next++];
        l.ends = now + ops[static_cast<size_t>(l.running)].duration;
      }
    }
    for (Channel& c : streams) {
      if (c.running == -1 && c.next < c.queue.size()) {
        c.running = c.queue[c.next++];
        c.remaining = ops[static_cast<size_t>(c.running)].duration;
      }
    }
    double next = std::numeric_limits<double>::infinity();
    for (const Lane& l : lanes) {
      if (l.running >= 0) next = std::min(next, l.ends);
    }
    for (size_t c = 0; c < streams.size(); ++c) {
      if (streams[c].running != -1) next = std::min(next, now + streams[c].remaining * share(c));
    }
    if (!std::isfinite(next)) break;
    // Advance to the first end; the shares hold until then.
    for (size_t c = 0; c < streams.size(); ++c) shares[c] = share(c);
    for (size_t c = 0; c < streams.size(); ++c) {
      Channel& s = streams[c];
      if (s.running == -1) continue;
      if (now + s.remaining * shares[c] <= next) {
        if (s.running >= 0) finish(s.running);
        if (static_cast<int>(c) == reductions) drained = next;
        s.running = -1;
        s.remaining = 0;
      } else {
        s.remaining -= (next - now) / shares[c];
      }
    }
    now = next;
    for (Lane& l : lanes) {
      if (l.running >= 0 && l.ends <= now) {
        finish(l.running);
        end = std::max(end, now);
        l.running = -1;
      }
    }
  }
  return {.end = end, .after = std::max(0.0, drained - end)};
}

}  // namespace

ComposedCosts composed_costs(const workload::Workload& w, const cluster::ClusterSpec& spec,
                             const SchemeConfig& scheme, bool every_micro_batch, bool links) {
  ClusterCache& cache = cluster_cache(spec);
  const cluster::Cluster& cluster = *cache.cluster;
  const int data_shard = hybrid_shard_ranks(scheme, spec.workers, spec.workers_per_node);
  const RankLayout layout(scheme.parallel, spec.workers, data_shard);
  ComposedRun run;
  run.layout = &layout;
  const int p = layout.size(ParallelDimension::Pipeline);
  // The costs read micro-batch 0's passes and the last micro-batch's backward; every
  // micro-batch's ops are alike (their order differs, which the costs do not read). So programs of
  // one micro-batch give the same, at a cost that does not grow with m (an interleaved one in
  // GPipe's order over its v chunks: the interleaved order needs whole groups of p, and the ops
  // of a pass do not depend on the order); the transfers of every micro-batch are then counted
  // m / m' times (tests/predict/composed_predictors_test.cpp: equal to the programs of all m).
  const int m = micro_batches(scheme.parallel, spec.workers, w.batch_per_worker);
  // An interleaved schedule in groups other than p (m not a multiple of p) keeps every micro-batch.
  const bool interleaved = scheme.pipeline.schedule == PipelineSchedule::Interleaved;
  const bool groups_of_p = !interleaved || interleaved_group(scheme.pipeline.microbatch_group, p, m) == p;
  const int kept = every_micro_batch || !groups_of_p ? m : 1;
  SchemeConfig reduced = scheme;
  if (kept < m && interleaved) reduced.pipeline.schedule = PipelineSchedule::GPipe;
  if (kept < m) {
    reduced.parallel.global_batch =
        static_cast<int64_t>(data_parallel_degree(scheme.parallel, spec.workers)) * w.batch_per_worker * kept;
  }
  run.programs = build_stage_programs(w, spec, reduced, layout, /*names=*/false);
  const double repeat = static_cast<double>(m) / kept;
  choose_representatives(run, false);  // worker s stands for stage s
  PlansKey key{.parallel = scheme.parallel,
               .workers = spec.workers,
               .scheme = scheme.scheme,
               .allreduce = scheme.allreduce,
               .expert_loads = expert_load_variants(w, scheme.parallel),
               .data_shard = data_shard};
  auto found = cache.plans.find(key);
  if (found == cache.plans.end()) {
    if (cache.plans.size() >= kCachedPlans) cache.plans.clear();
    auto made = std::make_unique<CachedPlans>();
    made->plans = make_composed_plans(cluster, scheme, run, true, key.expert_loads);
    found = cache.plans.emplace(std::move(key), std::move(made)).first;
  }
  const ComposedPlans& plans = found->second->plans;
  auto& cost_of = found->second->cost;

  ComposedCosts costs;
  costs.micro_batches = m;
  costs.cluster = cache.cluster;
  if (links) costs.link_bytes.assign(cluster.links.size(), 0.0);
  // What the kept micro-batches' ops carry.
  std::vector<double> per_micro_batch(links ? cluster.links.size() : 0, 0.0);
  for (int s = 0; s < p; ++s) {
    const StageProgram& program = run.programs[static_cast<size_t>(s)];
    const std::vector<workload::Op>& ops = program.ops.ops;
    // One communication op alone: its plan's closed form, and the bytes it puts on the links.
    auto plan_of = [&](const CommOp& c, CollectiveTerms& terms) -> const CollectivePlan& {
      terms = {.regime = spec.regime_for(c.bytes)};
      if (c.dimension == ParallelDimension::Pipeline) {
        const int peer = c.peer_chunk % p;
        terms = {};
        return plans.transfers.at({s, peer});
      }
      const auto d = static_cast<size_t>(c.dimension);
      const GroupPlans& g =
          plans.groups[d][static_cast<size_t>(plans.group_of_worker[d][static_cast<size_t>(s)])];
      switch (c.kind) {
        case CommKind::AllReduce:
          if (g.planner) {
            const AllReducePlanner::Choice choice = g.planner->choose(c.bytes);
            terms = choice.terms;
            return g.planner->plan(choice);
          }
          return g.all_reduce;
        case CommKind::AllGather:
          return g.all_gather;
        case CommKind::ReduceScatter:
          return g.reduce_scatter;
        case CommKind::RingShift:
          return g.ring_shift;
        case CommKind::ToExperts:
          return g.to_experts[static_cast<size_t>(c.tag)];
        case CommKind::FromExperts:
          return g.from_experts[static_cast<size_t>(c.tag)];
        case CommKind::Send:
        case CommKind::Recv:
          break;
      }
      return g.all_reduce;  // not reached: messages are the pipeline's
    };
    // A program repeats a few collectives (a plan and a size) many times: each is timed once, and
    // its bytes put on the links once with its count.
    struct Repeated {
      CollectiveTerms terms;
      double time = 0;
      int in_step = 0, in_micro_batches = 0;
    };
    std::map<std::pair<const CollectivePlan*, double>, Repeated> repeated;
    std::vector<double> time_of(ops.size(), 0.0);
    for (size_t op = 0; op < ops.size(); ++op) {
      if (!program.is_comm(static_cast<int>(op))) {
        time_of[op] = ops[op].duration;
        continue;
      }
      const CommOp& c = program.comms[static_cast<size_t>(program.comm_of_op[op])];
      if (c.kind == CommKind::Recv) continue;  // the sender's op carries the message
      CollectiveTerms terms;
      const CollectivePlan& plan = plan_of(c, terms);
      auto [it, fresh] = repeated.try_emplace({&plan, c.bytes});
      if (fresh) {
        auto [known, added] = cost_of.try_emplace({&plan, c.bytes});
        if (added) known->second = {terms, collective_cost(cluster, plan, terms).time(c.bytes)};
        it->second.terms = known->second.first;
        it->second.time = known->second.second;
      }
      time_of[op] = it->second.time;
      ++(program.pass_of_op[op] == ProgramPass::Step ? it->second.in_step : it->second.in_micro_batches);
    }
    if (links) {
      for (const auto& [key, r] : repeated) {
        if (r.in_step > 0) add_link_bytes(*key.first, key.second * r.in_step * wire_factor(r.terms), costs.link_bytes);
        if (r.in_micro_batches > 0)
          add_link_bytes(*key.first, key.second * r.in_micro_batches * wire_factor(r.terms), per_micro_batch);
      }
    }

    StageCost cost;
    const bool overlap = scheme.tensor.overlap == TensorOverlap::Collective;
    std::vector<int> layer_chunk(w.ops.size(), 0);  // layer -> the stage's chunk that runs it
    for (size_t op = 0; op < ops.size(); ++op) {
      if (ops[op].layer >= 0 && program.chunk_of_op[op] != kNone) {
        layer_chunk[static_cast<size_t>(ops[op].layer)] = program.chunk_of_op[op];
      }
    }
    // Micro-batch 0's passes (every micro-batch's are alike), layer by layer: its compute, its
    // tensor-parallel collectives (all exposed, or with overlap what exceeds the compute), and
    // each core chunk's wait for its ring step beyond the chunk before it.
    struct LayerPass {
      double compute = 0, tensor = 0, context = 0, expert = 0;
    };
    std::map<std::pair<ProgramPass, int>, LayerPass> by_layer;
    // Sharded data parallelism's gathers and reduce-scatters inside a pass (run with the pass
    // below, run_pass).
    struct PassData {
      double gathers = 0, reductions = 0;
      double replicas = 0;  // of reductions: hybrid sharding's all-reduces over the replicas
    };
    std::map<std::pair<ProgramPass, int>, PassData> data_in;  // (pass, chunk)
    std::map<std::pair<ProgramPass, int>, std::vector<size_t>> ops_in;  // (pass, chunk): its ops in order
    const bool by_units = scheme.scheme == Scheme::Fsdp && scheme.fsdp.sharding != FsdpSharding::Optimizer;
    double previous_core = 0;
    for (size_t op = 0; op < ops.size(); ++op) {
      if (program.micro_batch_of_op[op] != 0) continue;
      const ProgramPass pass = program.pass_of_op[op];
      if (by_units) ops_in[{pass, program.chunk_of_op[op]}].push_back(op);
      if (program.is_comm(static_cast<int>(op))) {
        const CommOp& c = program.comms[static_cast<size_t>(program.comm_of_op[op])];
        if (c.dimension == ParallelDimension::Tensor) by_layer[{pass, ops[op].layer}].tensor += time_of[op];
        // An expert group's all-to-alls and expert-tensor gathers sit between the router and the
        // experts: on the path.
        if (c.dimension == ParallelDimension::Expert || c.dimension == ParallelDimension::ExpertTensor)
          by_layer[{pass, ops[op].layer}].expert += time_of[op];
        if (c.dimension == ParallelDimension::Pipeline && c.kind == CommKind::Send) {
          double& way = pass == ProgramPass::Forward ? cost.message_next : cost.message_previous;
          way = std::max(way, time_of[op]);
        }
        if (reduces_gradients(c.dimension)) {
          PassData& d = data_in[{pass, program.chunk_of_op[op]}];
          if (c.kind == CommKind::AllGather) {
            d.gathers += time_of[op];
          } else {
            d.reductions += time_of[op];
            if (c.dimension == ParallelDimension::DataReplicate) d.replicas += time_of[op];
          }
        }
        continue;
      }
      LayerPass& lp = by_layer[{pass, ops[op].layer}];
      lp.compute += ops[op].duration;
      for (int d : ops[op].deps) {
        if (!program.is_comm(d)) continue;
        const CommOp& c = program.comms[static_cast<size_t>(program.comm_of_op[static_cast<size_t>(d)])];
        if (c.kind == CommKind::RingShift)
          lp.context += std::max(0.0, time_of[static_cast<size_t>(d)] - previous_core);
      }
      previous_core = ops[op].duration;
    }
    // The data-parallel group's gathers and reduce-scatters share its links; hybrid sharding's
    // all-reduces over the replicas run on others (across the shard groups).
    {
      double shared = 0, replicas = 0;
      for (const auto& [key, d] : data_in) {
        shared += d.gathers + d.reductions - d.replicas;
        replicas += d.replicas;
      }
      cost.data_per_micro_batch = std::max(shared, replicas);
    }
    std::map<std::pair<ProgramPass, int>, double> pass_time;  // (pass, chunk)
    std::map<std::pair<ProgramPass, int>, double> exposed_of_layer;  // (pass, layer): beside its compute
    for (const auto& [key, lp] : by_layer) {
      const double tensor = overlap ? std::max(0.0, lp.tensor - lp.compute - lp.expert) : lp.tensor;
      exposed_of_layer[key] = tensor + lp.context + lp.expert;
      pass_time[{key.first, layer_chunk[static_cast<size_t>(std::max(key.second, 0))]}] +=
          lp.compute + tensor + lp.context + lp.expert;
      cost.compute += lp.compute;
      cost.tensor_exposed += tensor;
      cost.context_exposed += lp.context;
      cost.expert_exposed += lp.expert;
    }
    // Sharded data parallelism's collectives in a pass (FSDP's gathers, its reduce-scatters and
    // hybrid sharding's all-reduces) run on their streams beside its compute: each (pass, chunk)
    // of micro-batch 0 is run with them (run_pass), so each unit's compute waits for its gather
    // and the gathers go out as the prefetch rule lets them; where they are not hidden the pass
    // is the chain gather -> compute -> gather ... (few large units: the embedding's and the
    // head's gathers are several blocks' worth). A pass's reductions do not hold up its end; those
    // still running share the links with the gathers of the pass after it on the stage, which
    // start as the pass ends (a forward after a backward under 1f1b, a backward after a backward
    // under gpipe): each pass of the stage's schedule starts with what the pass before it left,
    // unless its gathers wait for a pipeline message instead (they go out when the message
    // arrives, in a steady pipeline while the stage still runs the pass before). A pass's
    // exposure is the mean over its m runs.
    // Which data streams share links: those whose collectives' plans cross a common link.
    std::vector<std::vector<int>> shares_with;
    if (!data_in.empty()) {
      std::vector<std::vector<uint32_t>> on_links;  // per stream: the links its collectives cross, in order
      std::set<std::pair<size_t, const CollectivePlan*>> seen;  // (stream, plan)
      for (const auto& [key, list] : ops_in) {
        for (size_t op : list) {
          if (!program.is_comm(static_cast<int>(op))) continue;
          const CommOp& c = program.comms[static_cast<size_t>(program.comm_of_op[op])];
          if (!reduces_gradients(c.dimension)) continue;
          const auto channel = static_cast<size_t>(2 * static_cast<int>(c.dimension) + c.stream);
          CollectiveTerms terms;
          const CollectivePlan& plan = plan_of(c, terms);
          if (!seen.emplace(channel, &plan).second) continue;
          auto [known, fresh] = found->second->links.try_emplace(&plan);
          if (fresh) {
            std::vector<double> bytes(cluster.links.size(), 0.0);
            add_link_bytes(plan, 1.0, bytes);
            for (size_t l = 0; l < bytes.size(); ++l) {
              if (bytes[l] > 0) known->second.push_back(static_cast<uint32_t>(l));
            }
          }
          if (on_links.size() <= channel) on_links.resize(channel + 1);
          std::vector<uint32_t> both;
          std::set_union(on_links[channel].begin(), on_links[channel].end(), known->second.begin(),
                         known->second.end(), std::back_inserter(both));
          on_links[channel] = std::move(both);
        }
      }
      shares_with.resize(
          std::max<size_t>(on_links.size(), 2 * static_cast<int>(ParallelDimension::Data) + 2));
      for (size_t a = 0; a < on_links.size(); ++a) {
        for (size_t b = 0; b < on_links.size(); ++b) {
          bool common = a == b;
          for (size_t i = 0, j = 0; !common && i < on_links[a].size() && j < on_links[b].size();) {
            if (on_links[a][i] == on_links[b][j]) {
              common = true;
            } else if (on_links[a][i] < on_links[b][j]) {
              ++i;
            } else {
              ++j;
            }
          }
          if (common) shares_with[a].push_back(static_cast<int>(b));
        }
      }
    }
    std::vector<int> local(ops.size(), -1);
    auto pass_ops = [&](const std::vector<size_t>& list) {
      std::vector<PassOp> out(list.size());
      for (size_t k = 0; k < list.size(); ++k) local[list[k]] = static_cast<int>(k);
      std::vector<int> layers;  // those whose exposed collectives are counted: a pass has few
      for (size_t k = 0; k < list.size(); ++k) {
        const size_t op = list[k];
        PassOp& o = out[k];
        if (program.is_comm(static_cast<int>(op))) {
          const CommOp& c = program.comms[static_cast<size_t>(program.comm_of_op[op])];
          if (reduces_gradients(c.dimension)) {
            o.channel = 2 * static_cast<int>(c.dimension) + c.stream;
            o.duration = time_of[op];
          }
        } else {
          o.lane = ops[op].lane;
          o.duration = ops[op].duration;
          if (std::find(layers.begin(), layers.end(), ops[op].layer) == layers.end()) {
            layers.push_back(ops[op].layer);
            o.duration += exposed_of_layer[{program.pass_of_op[op], ops[op].layer}];
          }
        }
        for (int d : ops[op].deps) {
          const int from = local[static_cast<size_t>(d)];
          if (from < 0) continue;  // before the pass: done as it starts
          ++o.unmet;
          out[static_cast<size_t>(from)].dependents.push_back(static_cast<int>(k));
        }
      }
      for (size_t op : list) local[op] = -1;
      return out;
    };
    std::map<std::pair<ProgramPass, int>, PassRun> alone;  // (pass, chunk), with no backlog
    std::map<std::pair<ProgramPass, int>, std::vector<PassOp>> pass_programs;
    for (const auto& [key, d] : data_in) {
      pass_programs[key] = pass_ops(ops_in[key]);
      alone[key] = run_pass(pass_programs[key], 0, shares_with);
    }
    std::map<std::pair<ProgramPass, int>, double> data_exposed_in;  // (pass, chunk): mean over m
    if (!data_in.empty()) {
      std::map<std::pair<std::pair<ProgramPass, int>, double>, double> exposed_after;  // (pass, backlog)
      std::map<std::pair<ProgramPass, int>, int> runs;
      double backlog = 0;
      std::map<std::pair<ProgramPass, int>, bool> received;  // its gathers wait for a message
      for (const auto& [key, list] : ops_in) {
        for (size_t op : list) {
          if (program.is_comm(static_cast<int>(op)) &&
              program.comms[static_cast<size_t>(program.comm_of_op[op])].kind == CommKind::Recv)
            received[key] = true;
        }
      }
      const int group = interleaved_group(scheme.pipeline.microbatch_group, p, m);
      for (const PipelinePass& pp :
           schedule_order(scheme.pipeline.schedule, p, scheme.parallel.virtual_stages, m, s, group)) {
        const ProgramPass kind = pp.kind == PipelinePass::Kind::Forward    ? ProgramPass::Forward
                                 : pp.kind == PipelinePass::Kind::Backward ? ProgramPass::Backward
                                                                           : ProgramPass::Weight;
        const std::pair<ProgramPass, int> key{kind, pp.chunk};
        const auto it = alone.find(key);
        if (it == alone.end()) {
          backlog = 0;
          continue;
        }
        if (received[key]) backlog = 0;
        auto [known, fresh] = exposed_after.try_emplace({key, backlog}, 0.0);
        if (fresh) {
          const PassRun r = backlog > 0 ? run_pass(pass_programs[key], backlog, shares_with) : it->second;
          known->second = std::max(0.0, r.end - pass_time[key]);
        }
        data_exposed_in[key] += known->second;
        ++runs[key];
        backlog = it->second.after;
      }
      for (auto& [key, exposed] : data_exposed_in) exposed /= runs[key];
    }
    std::map<ProgramPass, double> pass_total;
    for (auto& [key, time] : pass_time) {
      const auto it = data_exposed_in.find(key);
      if (it != data_exposed_in.end()) {
        cost.data_exposed += it->second;
        time += it->second;
      }
      pass_total[key.first] += time;
    }
    cost.forward = pass_total[ProgramPass::Forward];
    cost.backward = pass_total[ProgramPass::Backward];
    cost.weight = pass_total[ProgramPass::Weight];
    // When, in the last micro-batch's backward passes (its ops back to back in program order,
    // tensor collectives on the path), each op has ended.
    const int last_mb = program.micro_batches - 1;
    std::vector<double> done_at(ops.size(), 0.0);
    // The clock when each chunk's backward (and W) passes of the last micro-batch have ended.
    std::vector<double> chunk_done(static_cast<size_t>(scheme.parallel.virtual_stages), 0.0);
    double clock = 0;
    for (size_t op = 0; op < ops.size(); ++op) {
      if (program.micro_batch_of_op[op] != last_mb || program.pass_of_op[op] == ProgramPass::Forward)
        continue;
      if (program.is_comm(static_cast<int>(op))) {
        const CommOp& c = program.comms[static_cast<size_t>(program.comm_of_op[op])];
        if (reduces_gradients(c.dimension)) {
          // Off the path, on its stream: ready when its inputs are (hybrid sharding's all-reduce
          // after its reduce-scatter; the stream orders them in the tail below).
          for (int d : ops[op].deps) done_at[op] = std::max(done_at[op], done_at[static_cast<size_t>(d)]);
          continue;
        }
        if ((c.dimension == ParallelDimension::Tensor && !overlap) ||
            c.dimension == ParallelDimension::Expert || c.dimension == ParallelDimension::ExpertTensor)
          clock += time_of[op];
      } else {
        clock += ops[op].duration;
      }
      done_at[op] = clock;
      if (program.chunk_of_op[op] != kNone) chunk_done[static_cast<size_t>(program.chunk_of_op[op])] = clock;
    }
    for (size_t op = 0; op < ops.size(); ++op) {
      const bool step_op = program.pass_of_op[op] == ProgramPass::Step;
      if (!step_op) {
        // FSDP's reduce-scatters of the last micro-batch end the step as the reductions do.
        const bool comm = program.is_comm(static_cast<int>(op));
        const CommOp* c = comm ? &program.comms[static_cast<size_t>(program.comm_of_op[op])] : nullptr;
        const bool last_reduction = program.micro_batch_of_op[op] == last_mb && c != nullptr &&
                                    c->kind != CommKind::AllGather && reduces_gradients(c->dimension);
        if (!last_reduction) continue;
      }
      if (!program.is_comm(static_cast<int>(op))) {
        cost.optimizer += ops[op].duration;
        continue;
      }
      const CommOp& c = program.comms[static_cast<size_t>(program.comm_of_op[op])];
      if (c.kind == CommKind::AllGather) {
        cost.gathers.push_back(time_of[op]);
        continue;
      }
      cost.reductions.push_back(time_of[op]);
      cost.reduction_streams.push_back(c.dimension == ParallelDimension::ExpertData ? 1 : 0);
      // Counted from the end of the chunk whose pass produced its last gradient: in an interleaved
      // schedule a chunk's last backward comes well before the next chunk's (Megatron-core starts
      // each chunk's gradient reduction then).
      double ready = 0;
      int chunk = 0;  // the last chunk of the program order: its end is the clock's
      for (int d : ops[op].deps) {
        if (done_at[static_cast<size_t>(d)] <= ready) continue;
        ready = done_at[static_cast<size_t>(d)];
        if (program.chunk_of_op[static_cast<size_t>(d)] != kNone)
          chunk = program.chunk_of_op[static_cast<size_t>(d)];
      }
      cost.ready_chunk.push_back(chunk);
      cost.ready_before_end.push_back(std::max(0.0, chunk_done[static_cast<size_t>(chunk)] - ready));
    }
    costs.stages.push_back(std::move(cost));
  }
  if (!links) return costs;
  for (size_t l = 0; l < costs.link_bytes.size(); ++l) costs.link_bytes[l] += repeat * per_micro_batch[l];
  for (uint32_t l : cluster.nic_up) costs.bytes_sent += costs.link_bytes[l];
  for (uint32_t l : cluster.bus_up) costs.bytes_sent += costs.link_bytes[l];
  return costs;
}

}  // namespace stepcast::scheme
