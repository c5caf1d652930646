#include "stepcast/sweep/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <utility>

#include "scheme/stage_programs.hpp"
#include "stepcast/detail/scheme/composed_costs.hpp"
#include "stepcast/detail/scheme/fsdp_units.hpp"
#include "stepcast/enum_names.hpp"
#include "stepcast/error.hpp"
#include "stepcast/limits.hpp"
#include "stepcast/scheme/rank_layout.hpp"
#include "stepcast/scheme/validate.hpp"
#include "stepcast/sweep/sweep.hpp"
#include "stepcast/units.hpp"
#include "sweep/ranks.hpp"
#include "sweep/result_wire.hpp"

namespace stepcast::sweep {
namespace {

using scheme::FsdpSharding;
using scheme::PipelineSchedule;
using scheme::Scheme;
using scheme::TensorOverlap;
using workload::ActivationCheckpointing;

/// Every divisor of n >= 1 up to INT_MAX, ascending (in O(sqrt n): a replica's batch can be
/// 2^40 sequences).
std::vector<int> divisors(int64_t n) {
  std::vector<int64_t> low, high;
  for (int64_t k = 1; k * k <= n; ++k) {
    if (n % k != 0) continue;
    low.push_back(k);
    if (k * k != n) high.push_back(n / k);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  std::vector<int> out;
  for (int64_t k : low) {
    if (k <= std::numeric_limits<int>::max()) out.push_back(static_cast<int>(k));
  }
  return out;
}

bool listed(const std::vector<std::string>& keys, std::string_view key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

/// Whether plan searches `key` for this scenario: by default unless plan.fixed holds it, or
/// because plan.vary adds it.
bool searched(const scenario::Scenario& s, std::string_view key) {
  for (const scenario::PlanKey& k : scenario::plan_keys()) {
    if (k.key == key) return k.by_default ? !listed(s.plan.fixed, key) : listed(s.plan.vary, key);
  }
  return false;
}

/// The decoder's blocks; throws Error when the scenario has no decoder or no global batch.
int decoder_blocks(const scenario::Scenario& s) {
  if (!s.workload.profile.empty()) {
    throw Error({s.file, 0, "workload.profile"},
                "stepcast plan lays out a decoder by its shape; give workload.model (a zoo decoder) or "
                "workload.transformer instead of a profile");
  }
  const zoo::ModelSpec model = scenario::model_of(s);
  if (!model.transformer) {
    throw Error(
        {s.file, 0, "workload.model"},
        fmt::format("stepcast plan lays out a transformer decoder by its blocks; {} is not one (give a zoo "
                    "decoder or workload.transformer)",
                    model.name));
  }
  if (s.scheme.parallel.global_batch <= 0) {
    throw Error(
        {s.file, 0, "workload.global_batch"},
        "stepcast plan keeps the global batch and searches how to split it: give workload.global_batch "
        "(sequences per optimizer step)");
  }
  return static_cast<int>(model.transformer->layers);
}

/// Where the candidates of one GPU count stand after the search.
struct Tally {
  std::map<std::string, uint64_t> invalid;  ///< by key
  uint64_t no_fit = 0;
  std::optional<std::pair<double, std::size_t>> closest;  ///< (memory / gpu memory, candidate)
  std::vector<std::pair<double, std::size_t>> fitting;    ///< (coarse tokens/s per GPU, candidate)
  std::exception_ptr error;                               ///< a failure that is not a rule (a bug)

  void merge(Tally&& other) {
    for (const auto& [key, n] : other.invalid) invalid[key] += n;
    no_fit += other.no_fit;
    if (other.closest && (!closest || *other.closest < *closest)) closest = other.closest;
    fitting.insert(fitting.end(), other.fitting.begin(), other.fitting.end());
    if (!error) error = other.error;
  }
};

/// Runs body(i, tally) for i in [0, n) on `threads` threads, candidates handed out in blocks;
/// the tallies are merged, which is order-independent (sums, minima with the index as tie-break,
/// a list sorted afterwards).
template <class Body>
Tally parallel_tally(std::size_t n, int threads, Body body) {
  constexpr std::size_t kBlock = 64;
  std::atomic<std::size_t> next{0};
  std::vector<Tally> tallies(static_cast<size_t>(threads));
  auto work = [&](Tally& tally) {
    try {
      for (std::size_t begin; (begin = next.fetch_add(kBlock)) < n;) {
        for (std::size_t i = begin; i < std::min(n, begin + kBlock); ++i) body(i, tally);
      }
    } catch (...) {
      tally.error = std::current_exception();
    }
  };
  if (threads == 1) {
    work(tallies.front());
  } else {
    std::vector<std::thread> pool;
    for (Tally& t : tallies) pool.emplace_back(work, std::ref(t));
    for (std::thread& th : pool) th.join();
  }
  Tally out;
  for (Tally& t : tallies) out.merge(std::move(t));
  return out;
}

/// Gives every rank the coarse values of a batch that the ranks computed every size-th; a rank
/// that failed sends its error instead, which every rank then throws.
void share_batch(std::vector<double>& tokens, std::exception_ptr& error, const Ranks& ranks) {
  std::string mine;
  if (error) {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      mine = fmt::format("!rank {}: {}", ranks.rank, e.what());
    } catch (...) {
      mine = fmt::format("!rank {}: unknown error", ranks.rank);
    }
  } else {
    // A mark first: the values' own first byte can be '!' (a double's low byte is any byte).
    mine = "=";
    for (std::size_t j = static_cast<std::size_t>(ranks.rank); j < tokens.size();
         j += static_cast<std::size_t>(ranks.size)) {
      mine.append(reinterpret_cast<const char*>(&tokens[j]), sizeof(double));  // bit for bit
    }
  }
  const std::vector<std::string> all = detail::all_gather(mine);
  for (int r = 0; r < ranks.size; ++r) {
    const std::string& bytes = all[static_cast<size_t>(r)];
    if (!bytes.empty() && bytes.front() == '!') {
      if (!error) error = std::make_exception_ptr(std::runtime_error(bytes.substr(1)));
      continue;
    }
    if (bytes.empty() || bytes.front() != '=') throw std::runtime_error("plan: a rank's batch has no mark");
    std::size_t at = 1;
    for (std::size_t j = static_cast<std::size_t>(r); j < tokens.size();
         j += static_cast<std::size_t>(ranks.size)) {
      if (at + sizeof(double) > bytes.size()) throw std::runtime_error("plan: a rank's batch is short");
      std::memcpy(&tokens[j], bytes.data() + at, sizeof(double));
      at += sizeof(double);
    }
  }
}

/// Brings the top k's coarse and fine results (or errors) that other ranks predicted to rank 0.
void gather_rows(std::vector<report::PlanRow>& rows, std::vector<std::exception_ptr>& errors,
                 const Ranks& ranks) {
  const auto owner = [&](std::size_t j) {
    return static_cast<int>(j % static_cast<std::size_t>(ranks.size));
  };
  constexpr int kTag = 1;
  if (ranks.rank != 0) {
    for (std::size_t j = 0; j < rows.size(); ++j) {
      if (owner(j) != ranks.rank) continue;
      wire::Outcome o;
      if (errors[j]) {
        o = wire::failure(errors[j]);
        errors[j] = nullptr;  // rank 0 reports it
      } else {
        o.results = {rows[j].coarse, rows[j].fine};
      }
      detail::send_to_root(kTag, wire::encode(o));
    }
    return;
  }
  // Messages between two ranks arrive in the order they were sent: rows in order.
  for (std::size_t j = 0; j < rows.size(); ++j) {
    if (owner(j) == 0) continue;
    wire::Outcome o = wire::decode(detail::receive_at_root(owner(j), kTag));
    if (o.failed) {
      errors[j] = std::make_exception_ptr(Error(o.where, o.message));
    } else {
      rows[j].coarse = std::move(o.results.at(0));
      rows[j].fine = std::move(o.results.at(1));
    }
  }
}

}  // namespace

BoundContext bound_context(const cluster::ClusterSpec& spec, const scheme::SchemeConfig& scheme) {
  const cluster::Cluster c = cluster::build_cluster(spec);
  double bus = 0, nic = 0;
  for (uint32_t l : c.bus_up) bus = std::max(bus, c.links[l].bw);
  for (uint32_t l : c.nic_down) nic = std::max(nic, c.links[l].bw);
  for (uint32_t l : c.nic_up) nic = std::max(nic, c.links[l].bw);
  BoundContext out;
  out.gpu_send = bus + nic;
  out.node_receive = nic * spec.nics_per_node;
  out.nic = nic;
  out.intra_node = bus;
  out.workers_per_node = spec.workers_per_node;
  for (int n = 0; n < spec.num_worker_nodes(); ++n) {
    out.most_workers_on_a_node = std::max(out.most_workers_on_a_node, spec.workers_on_node(n));
  }
  const auto& order = scheme.parallel.order;
  // An uneven placement (cluster.placement) puts other ranks together on a node.
  out.gradient_groups_strided = order[0] == scheme::ParallelDimension::Tensor &&
                                order[1] == scheme::ParallelDimension::Context &&
                                order[2] == scheme::ParallelDimension::Data && spec.placement.empty();
  out.tensor_groups_in_nodes = order[0] == scheme::ParallelDimension::Tensor && spec.placement.empty();
  out.fsdp = scheme.fsdp;
  out.expert = scheme.parallel.expert;
  return out;
}

namespace {

/// How a group of n ranks, `stride` apart under the default order (tensor, then context, then
/// data), sits on the nodes: the nodes it spans (k) and how many groups of the stage share each
/// node's NICs. k = 1 when it stays in a node or the layout does not tile the nodes evenly.
struct Spread {
  int nodes = 1;
  int groups_per_node = 0;
};
Spread spread_of(const Layout& l, int n, int stride, const BoundContext& net) {
  const int wpn = net.workers_per_node;
  const int stage = l.gpus / l.pipeline;  // consecutive ranks under the default order
  const bool aligned = wpn % stride == 0 || stride % wpn == 0;
  if (!net.gradient_groups_strided || !aligned || stage % wpn != 0) return {};
  const int r = std::min(n, std::max(1, wpn / stride));  // a group's ranks in a node
  if (n % r != 0 || n / r < 2) return {};
  return {n / r, wpn / r};
}

/// s at least for an all-gather or a reduce-scatter of `bytes` over the gradient group of `l`
/// (c d ranks t apart; see tokens_bound).
double gradient_collective_bound(const Layout& l, double bytes, const BoundContext& net) {
  const int n = l.gpus / (l.tensor * l.pipeline);  // c d
  if (n <= 1) return 0;
  double time = static_cast<double>(n - 1) / n * bytes / net.gpu_send;
  const Spread at = spread_of(l, n, l.tensor, net);
  if (at.nodes >= 2) {
    const double k = at.nodes;
    time = std::max(time, at.groups_per_node * (k - 1) / k * bytes / net.node_receive);
  }
  return time;
}

/// s at least for one step of the context group's ring (each rank sends `bytes` to the next):
/// a ring over k >= 2 nodes leaves each node at least once per group, and some rank's message
/// leaves its node through its one NIC (cluster::Cluster::path), which the step waits for.
double ring_step_bound(const Layout& l, double bytes, const BoundContext& net) {
  double time = bytes / net.gpu_send;
  const Spread at = spread_of(l, l.context, l.tensor, net);
  if (at.nodes >= 2) time = std::max(time, at.groups_per_node * bytes / net.node_receive);
  if (at.nodes >= 2 || l.context > net.most_workers_on_a_node) time = std::max(time, bytes / net.nic);
  return time;
}

/// Each pipeline stage's layers, over all its model chunks (scheme::chunk_layers: chunk k p + s
/// is stage s's).
std::vector<std::vector<int>> stage_layers_of(const workload::Workload& w, const scheme::SchemeConfig& scheme,
                                              const scheme::ModelUnits* units) {
  const scheme::ChunkLayers chunks =
      units ? scheme::split_chunks(*units, scheme) : scheme::split_chunks(scheme::ModelUnits(w), scheme);
  const auto p = static_cast<size_t>(std::max(1, scheme.parallel.pipeline));
  std::vector<std::vector<int>> stages(p);
  for (size_t chunk = 0; chunk < chunks.size(); ++chunk) {
    stages[chunk % p].insert(stages[chunk % p].end(), chunks[chunk].begin(), chunks[chunk].end());
  }
  return stages;
}

/// s per micro-batch by layer (at each block's first, its attention) that coarse's ring attention
/// leaves exposed at least: each of the c - 1 ring steps of a pass beyond the core's chunk it
/// overlaps (at most the layer's pass over c). `passes`: each layer's forward and backward, s.
std::vector<double> context_exposed_by_layer(const workload::Workload& w, const Layout& l,
                                             const std::vector<std::pair<double, double>>& passes,
                                             double rank_share, const BoundContext& net) {
  std::vector<double> exposed(passes.size(), 0.0);
  if (l.context <= 1) return exposed;
  const double c = l.context;
  scheme::ParallelConfig parallel;
  parallel.tensor = l.tensor;
  parallel.context = l.context;
  const double kv = scheme::ring_kv_message(w, parallel);
  const double forward_step = ring_step_bound(l, kv, net), backward_step = ring_step_bound(l, 2 * kv, net);
  int previous_block = -1;
  for (size_t layer = 0; layer < passes.size() && layer < w.block_of_layer.size(); ++layer) {
    const int block = w.block_of_layer[layer];
    if (block >= 0 && block != previous_block) {
      exposed[layer] = (c - 1) * (std::max(0.0, forward_step - passes[layer].first / rank_share / c) +
                                  std::max(0.0, backward_step - passes[layer].second / rank_share / c));
    }
    previous_block = block;
  }
  return exposed;
}

}  // namespace

double tokens_bound(const workload::Workload& w, const Layout& l, const scheme::SchemeConfig& layout_scheme,
                    const BoundContext& net, const scheme::ModelUnits* units) {
  constexpr double kNone = std::numeric_limits<double>::infinity();
  const bool zero_bubble = l.schedule == PipelineSchedule::ZeroBubble && l.pipeline > 1;
  if (zero_bubble && w.facts.timed_per_rank) return kNone;
  const double p = l.pipeline, t = l.tensor;
  const double rank_share = w.facts.timed_per_rank ? 1.0 : t * l.context;
  // s per micro-batch on one rank, by layer: its forward and backward, then all that is on a
  // stage's path (its compute, its blocks' tensor collectives, its exposed ring steps); ops of
  // no layer count in the sum alone (no stage is known to run them).
  std::vector<std::pair<double, double>> passes;
  double unplaced = 0;
  for (const workload::Op& op : w.ops) {
    if (op.layer < 0) {
      unplaced += op.duration / rank_share;
      continue;
    }
    if (passes.size() <= static_cast<size_t>(op.layer)) passes.resize(static_cast<size_t>(op.layer) + 1);
    (op.kind == workload::OpKind::Forward ? passes[static_cast<size_t>(op.layer)].first
                                          : passes[static_cast<size_t>(op.layer)].second) += op.duration;
  }
  std::vector<double> on_path(passes.size());
  for (size_t layer = 0; layer < passes.size(); ++layer) {
    on_path[layer] = (passes[layer].first + passes[layer].second) / rank_share;
  }
  double message = 0;  // s: one message between stages
  const bool network = net.gpu_send > 0 && std::isfinite(net.gpu_send);
  if (w.facts.transformer && network) {
    scheme::ParallelConfig parallel;
    parallel.context = l.context;
    const double activation = scheme::block_activation_message(w, parallel);
    const bool scattered = l.tensor > 1 && (l.sequence || layout_scheme.pipeline.scatter_gather);
    message = (scattered ? activation / t : activation) / net.gpu_send;
    // Per block: two layers, each a collective in the forward and one in the backward (a third
    // re-run by full recomputation), each sending 2 (t - 1) / t of the activation.
    // A tensor group inside a node sends on its intra-node links alone.
    double tensor = 0;
    if (l.tensor > 1 && l.overlap == TensorOverlap::None) {
      const bool in_node = net.tensor_groups_in_nodes && net.workers_per_node % l.tensor == 0;
      const double send = in_node ? std::min(net.gpu_send, net.intra_node) : net.gpu_send;
      const double layers = w.facts.transformer->experts > 1 ? 1 : 2;
      const double passes_run = l.checkpointing == ActivationCheckpointing::Full ? 3 : 2;
      tensor = layers * passes_run * 2 * (t - 1) / t * activation / send;
    }
    const std::vector<double> context = context_exposed_by_layer(w, l, passes, rank_share, net);
    int previous_block = -1;
    for (size_t layer = 0; layer < on_path.size() && layer < w.block_of_layer.size(); ++layer) {
      const int block = w.block_of_layer[layer];
      if (block >= 0 && block != previous_block) on_path[layer] += tensor;
      on_path[layer] += context[layer];
      previous_block = block;
    }
  }
  // Each stage's micro-batch (S_s, all its chunks): their sum and the busiest's; and the ZB-H1
  // term of each stage b (below), from its forward compute F_s and its backward's B_s + W_s.
  struct StageTimes {
    double on_path, forward, backward;
  };
  std::vector<StageTimes> stage_times;
  double sum = unplaced, busiest = 0;
  for (double s : on_path) sum += s;
  const std::vector<std::vector<int>> stages = stage_layers_of(w, layout_scheme, units);
  for (const std::vector<int>& layers : stages) {
    StageTimes stage{0, 0, 0};
    for (int layer : layers) {
      if (static_cast<size_t>(layer) >= on_path.size()) continue;
      stage.on_path += on_path[static_cast<size_t>(layer)];
      stage.forward += passes[static_cast<size_t>(layer)].first / rank_share;
      stage.backward += passes[static_cast<size_t>(layer)].second / rank_share;
    }
    busiest = std::max(busiest, stage.on_path);
    stage_times.push_back(stage);
  }
  busiest = std::max(busiest, sum / p);
  // The parameters FSDP gathers over the gradient group: all, or with expert parallelism the dense
  // ones (the experts go over their expert-data group; leaving them out keeps the bound below).
  double dense_bytes = w.parameter_bytes();
  if (net.expert > 1) {
    dense_bytes = 0;
    for (const workload::Tensor& tensor : w.tensors) {
      if (scheme::expert_of_tensor(tensor.name) < 0) dense_bytes += tensor.bytes;
    }
  }
  // Sharded data parallelism's collectives of a micro-batch, the mean stage's (a floor under
  // each stage's micro-batch: the busiest's is at least the mean's, the sum at least p of them).
  double data = 0;
  if (network && l.scheme == Scheme::Fsdp &&
      (l.sharding == FsdpSharding::Full || l.sharding == FsdpSharding::GradOp)) {
    // Every micro-batch gathers the stage's parameters (again in the backward when full sharding
    // reshards them) and reduce-scatters their gradients: the mean stage's share of the model's
    // bytes over t, one after another on the links (data_per_micro_batch).
    const double bytes = dense_bytes / (t * p);
    const double gathers = l.sharding == FsdpSharding::Full && net.fsdp.reshard_after_forward ? 2 : 1;
    data = gathers * gradient_collective_bound(l, bytes * scheme::gathered_share(w, net.fsdp), net) +
           gradient_collective_bound(l, bytes, net);
  }
  if (network && l.scheme == Scheme::Fsdp && l.sharding == FsdpSharding::Hybrid) {
    // Hybrid sharding: the same over a shard group of s ranks (the scenario's, or under the default
    // order those of a d c group in a node, t apart), then the shard's all-reduce over the d c / s
    // replicas; each at least its bytes at what one GPU sends.
    const int n = l.gpus / (l.tensor * l.pipeline);
    const int shard = net.fsdp.shard_group > 0 ? net.fsdp.shard_group
                      : net.gradient_groups_strided
                          ? std::min(n, (net.workers_per_node + l.tensor - 1) / l.tensor)
                          : 0;
    if (shard >= 1 && n % shard == 0) {
      const double bytes = dense_bytes / (t * p), s_ = shard, r = static_cast<double>(n) / shard;
      const double gathers = net.fsdp.reshard_after_forward ? 2 : 1;
      const double replicas = 2 * (r - 1) / r * bytes / s_;
      data = ((gathers * scheme::gathered_share(w, net.fsdp) + 1) * (s_ - 1) / s_ * bytes + replicas) /
             net.gpu_send;
      // The default shard group holds the group's ranks of a node: each replica then sits on a node
      // of its own, and a rank sends all of its all-reduce through its NIC (while the shard
      // group's collectives may run on the intra-node links beside it).
      if (net.fsdp.shard_group <= 0 && net.gradient_groups_strided && r >= 2) {
        data = std::max(data, replicas / net.nic);
      }
    }
  }
  const double mean = std::max(sum / p, data);
  busiest = std::max(busiest, data);
  sum = std::max(sum, p * data);
  const int64_t global_batch = layout_scheme.parallel.global_batch;
  const double d = static_cast<double>(l.gpus) / (t * l.context * p);
  const double m = static_cast<double>(global_batch) / (d * l.micro_batch);
  double pipeline = m * busiest;  // s: one stage
  if (l.pipeline > 1) {
    switch (l.schedule) {
      case PipelineSchedule::GPipe:
      case PipelineSchedule::OneFOneB:
        pipeline = sum + (m - 1) * busiest;
        break;
      case PipelineSchedule::Interleaved:
        pipeline = m * busiest + (sum - busiest) / l.virtual_stages;
        break;
      case PipelineSchedule::ZeroBubble: {
        // At least m mean (see the header). Coarse's ZB-H1 (predict/composed.cpp) takes, over the
        // stages b, the longest of m S_b - b W_b + sum_{s < b} (F_s + B_s) + sum_{s > b} (F_s +
        // B_s - W_s): stage b's passes less the W it defers into the drain, after the passes
        // before it and before those after it. The stage programs split each linear's backward
        // into B and W half each and give the attention core and recomputation to B, so on a
        // dense model W_s <= K_s / 2 <= B_s for its backward compute K_s, but the first stage's,
        // whose embedding's backward is all W (B_0 >= 0 there); a mixture of experts scales its
        // experts' passes by their load, past these, and keeps the mean.
        pipeline = m * mean;
        if (w.facts.transformer && w.facts.transformer->experts > 1) break;
        double after = 0;  // sum over s > b of F_s
        for (const StageTimes& stage : stage_times) after += stage.forward;
        double before = 0;  // sum over s < b of F_s + K_s / 2 (F_0 alone)
        for (size_t b = 0; b < stage_times.size(); ++b) {
          const StageTimes& stage = stage_times[b];
          after -= stage.forward;
          pipeline = std::max(
              pipeline, m * stage.on_path - static_cast<double>(b) * stage.backward / 2 + before + after);
          before += stage.forward + (b > 0 ? stage.backward / 2 : 0.0);
        }
        break;
      }
    }
  }
  // The distributed optimizer (ZeRO-1) gathers each stage's updated parameters after the step
  // (on its gradient group, at the gathered precision): coarse ends the step no sooner than the
  // pipeline, then the first stage's gathers (predict/composed.cpp), which nothing hides.
  double after_step = 0;
  if (network && l.scheme == Scheme::Fsdp && l.sharding == FsdpSharding::Optimizer && !stages.empty()) {
    std::vector<char> on_first(on_path.size(), 0);
    for (int layer : stages.front()) {
      if (static_cast<size_t>(layer) < on_first.size()) on_first[static_cast<size_t>(layer)] = 1;
    }
    double bytes = 0;  // the first stage's dense parameters (the experts gather over their own group)
    for (const workload::Tensor& tensor : w.tensors) {
      if (tensor.consumers.empty() || (net.expert > 1 && scheme::expert_of_tensor(tensor.name) >= 0))
        continue;
      const int layer = w.ops[static_cast<size_t>(tensor.consumers.front())].layer;
      if (layer >= 0 && static_cast<size_t>(layer) < on_first.size() &&
          on_first[static_cast<size_t>(layer)]) {
        bytes += tensor.bytes;
      }
    }
    after_step = gradient_collective_bound(l, bytes / t * scheme::gathered_share(w, net.fsdp), net);
  }
  const double step = pipeline + 2 * (p - 1) * message + after_step;
  if (!(step > 0)) return kNone;
  return static_cast<double>(global_batch) * static_cast<double>(w.facts.tokens_per_sample) / step / l.gpus;
}

namespace {
/// Whether hybrid sharding is a layout of its own at t, c, p on `gpus`: its shard group
/// (training.fsdp.shard_group, or the ranks of a data x context group in one node) is smaller than
/// the group and divides it; one as large is full sharding. With expert parallelism each expert
/// group must sit inside a shard group (e x ETP divides t s), as validation requires.
bool hybrid_differs(const scheme::SchemeConfig& base, int workers_per_node, int gpus, int t, int c, int p) {
  scheme::SchemeConfig hybrid = base;
  hybrid.scheme = Scheme::Fsdp;
  hybrid.fsdp.sharding = FsdpSharding::Hybrid;
  hybrid.parallel.tensor = t;
  hybrid.parallel.context = c;
  hybrid.parallel.pipeline = p;
  hybrid.parallel.global_batch = std::max<int64_t>(1, hybrid.parallel.global_batch);
  const int group = gpus / (t * c * p) * c;
  const int shard = scheme::hybrid_shard_ranks(hybrid, gpus, workers_per_node);
  const int experts = hybrid.parallel.expert * hybrid.parallel.expert_tensor_degree();
  return shard >= 1 && shard < group && group % shard == 0 && (t * shard) % experts == 0;
}
}  // namespace

namespace {
/// Calls visit(layout) for each combination candidate_layouts returns, in its order.
template <class Visit>
void visit_candidates(const scenario::Scenario& s, int gpus, Visit&& visit) {
  const int blocks = decoder_blocks(s);
  const scheme::SchemeConfig& base = s.scheme;
  auto values_of = [&](std::string_view key, std::vector<int> all, int held) {
    return searched(s, key) ? all : std::vector<int>{held};
  };
  const std::vector<int> all_divisors = divisors(gpus);
  const bool micro_batch_searched = searched(s, "workload.micro_batch");
  const int64_t global_batch = base.parallel.global_batch;
  // Per data-parallel degree d: the divisors of a replica's global_batch / d sequences that a
  // micro-batch may hold (at most limits::kMaxBatch).
  std::map<int, std::vector<int>> micro_batches_of;
  auto replica_micro_batches = [&](int d) -> const std::vector<int>& {
    auto [it, added] = micro_batches_of.try_emplace(d);
    if (added) {
      it->second = divisors(global_batch / d);
      std::erase_if(it->second, [](int b) { return b > limits::kMaxBatch; });
    }
    return it->second;
  };
  std::vector<ActivationCheckpointing> checkpointings{s.workload.checkpointing};
  if (searched(s, "workload.activation_checkpointing")) {
    checkpointings = {ActivationCheckpointing::None, ActivationCheckpointing::Selective,
                      ActivationCheckpointing::Full};
  }
  const std::vector<int> tensors = values_of("training.parallel.tensor", all_divisors, base.parallel.tensor);
  const std::vector<int> contexts =
      values_of("training.parallel.context", all_divisors, base.parallel.context);
  const std::vector<int> pipelines =
      values_of("training.parallel.pipeline", all_divisors, base.parallel.pipeline);

  Layout l;
  l.gpus = gpus;
  l.expert = base.parallel.expert;
  for (ActivationCheckpointing ckpt : checkpointings) {
    l.checkpointing = ckpt;
    for (int t : tensors) {
      l.tensor = t;
      for (int c : contexts) {
        l.context = c;
        for (int p : pipelines) {
          l.pipeline = p;
          const long long model = static_cast<long long>(t) * c * p;
          const int d = gpus % model == 0 ? static_cast<int>(gpus / model) : 0;
          // Every micro-batch that splits a replica's share of the global batch (as Calculon
          // searches them); where d is not whole or does not divide the batch, the combination is
          // one layout whatever its micro-batch (1), which the rules reject.
          std::vector<int> held{s.workload.batch_per_worker}, none{1};
          const std::vector<int>* micro_batches = &held;
          if (micro_batch_searched) {
            micro_batches = d > 0 && global_batch % d == 0 ? &replica_micro_batches(d) : &none;
          }
          for (int b : *micro_batches) {
            l.micro_batch = b;
            std::vector<int> chunks{1};
            // Interleaving as Megatron-LM allows it: every chunk the same number of blocks.
            for (int v = 2; p >= 2 && v * p <= blocks; ++v) {
              if (blocks % (v * p) == 0) chunks.push_back(v);
            }
            if (!searched(s, "training.parallel.virtual_stages")) chunks = {base.parallel.virtual_stages};
            for (int v : chunks) {
              l.virtual_stages = v;
              std::vector<PipelineSchedule> schedules{PipelineSchedule::Interleaved};
              if (v == 1) {
                schedules = {PipelineSchedule::OneFOneB};
                if (p > 1)
                  schedules = {PipelineSchedule::OneFOneB, PipelineSchedule::GPipe,
                               PipelineSchedule::ZeroBubble};
              }
              if (!searched(s, "training.pipeline.schedule")) schedules = {base.pipeline.schedule};
              // Nothing to shard with one replica of each parameter (d c = 1): allreduce alone.
              std::vector<std::pair<Scheme, FsdpSharding>> schemes{{Scheme::AllReduce, base.fsdp.sharding}};
              const bool shards = static_cast<long long>(d) * c > 1;
              if (shards) {
                for (FsdpSharding sharding :
                     {FsdpSharding::Optimizer, FsdpSharding::GradOp, FsdpSharding::Full}) {
                  schemes.emplace_back(Scheme::Fsdp, sharding);
                }
                if (hybrid_differs(base, s.cluster.workers_per_node, gpus, t, c, p)) {
                  schemes.emplace_back(Scheme::Fsdp, FsdpSharding::Hybrid);
                }
              }
              if (!searched(s, "training.scheme")) {
                std::erase_if(schemes, [&](const auto& x) { return x.first != base.scheme; });
                if (schemes.empty() || base.scheme != Scheme::Fsdp)
                  schemes = {{base.scheme, base.fsdp.sharding}};
              }
              if (!searched(s, "training.fsdp.sharding")) {
                std::erase_if(schemes, [&](const auto& x) {
                  return x.first == Scheme::Fsdp && x.second != base.fsdp.sharding;
                });
                if (schemes.empty()) schemes = {{base.scheme, base.fsdp.sharding}};
              }
              std::vector<bool> sequences{base.parallel.sequence};
              if (t > 1 && searched(s, "training.parallel.sequence")) sequences = {true, false};
              std::vector<TensorOverlap> overlaps{base.tensor.overlap};
              if (t > 1 && searched(s, "training.tensor.overlap"))
                overlaps = {TensorOverlap::None, TensorOverlap::Collective};
              for (PipelineSchedule schedule : schedules) {
                l.schedule = schedule;
                for (const auto& [scheme_kind, sharding] : schemes) {
                  l.scheme = scheme_kind;
                  l.sharding = sharding;
                  for (bool sequence : sequences) {
                    l.sequence = sequence;
                    // Megatron-LM's scatter-gather of pipeline messages acts without sequence
                    // parallelism alone (with it each rank sends its 1/t already).
                    std::vector<bool> scatter_gathers{base.pipeline.scatter_gather};
                    if (t > 1 && p > 1 && !sequence && searched(s, "training.pipeline.scatter_gather"))
                      scatter_gathers = {false, true};
                    for (bool scatter_gather : scatter_gathers) {
                      l.scatter_gather = scatter_gather;
                      for (TensorOverlap overlap : overlaps) {
                        l.overlap = overlap;
                        visit(l);
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}
}  // namespace

std::vector<Layout> candidate_layouts(const scenario::Scenario& s, int gpus, std::size_t most) {
  // Counted before they are held: a global batch with many divisors (each a micro-batch) can make
  // more combinations than memory holds.
  std::size_t count = 0;
  visit_candidates(s, gpus, [&count](const Layout&) { ++count; });
  if (count > most) {
    throw Error({"", 0, "--gpus"},
                fmt::format("at {} GPUs the search holds {}, more than the {} plan checks at one count "
                            "({} for their list alone): hold keys at the scenario's value with plan.fixed "
                            "(workload.micro_batch "
                            "searches every divisor of a replica's share of the {} sequences)",
                            gpus, format_count(static_cast<double>(count), "layout", "layouts"),
                            format_count(static_cast<double>(most), "layout", "layouts"),
                            format_bytes(static_cast<double>(most * sizeof(Layout))),
                            s.scheme.parallel.global_batch));
  }
  std::vector<Layout> out;
  out.reserve(count);
  visit_candidates(s, gpus, [&out](const Layout& l) { out.push_back(l); });
  return out;
}

void apply_layout(cluster::ClusterSpec& cluster, scheme::SchemeConfig& s, const Layout& l) {
  cluster.workers = l.gpus;
  const bool same_chunks = s.parallel.pipeline == l.pipeline && s.parallel.virtual_stages == l.virtual_stages;
  // An uneven split names p x v chunks; another p or v splits evenly.
  if (!same_chunks) s.pipeline.layers_per_stage.clear();
  s.parallel.tensor = l.tensor;
  s.parallel.context = l.context;
  s.parallel.pipeline = l.pipeline;
  s.parallel.virtual_stages = l.virtual_stages;
  s.parallel.sequence = l.sequence;
  s.pipeline.schedule = l.schedule;
  s.scheme = l.scheme;
  s.fsdp.sharding = l.sharding;
  s.tensor.overlap = l.overlap;
  s.pipeline.scatter_gather = l.scatter_gather;
}

scenario::Scenario apply_layout(const scenario::Scenario& s, const Layout& layout) {
  scenario::Scenario at = scenario::with_micro_batch(s, layout.micro_batch, layout.checkpointing);
  apply_layout(at.cluster, at.scheme, layout);
  return at;
}

report::Config layout_config(const Layout& l) {
  auto number = [](const char* key, int value) { return report::Input{key, std::to_string(value), true}; };
  auto word = [](const char* key, const char* value) { return report::Input{key, value, false}; };
  return {number("training.parallel.tensor", l.tensor),
          number("training.parallel.context", l.context),
          number("training.parallel.pipeline", l.pipeline),
          number("training.parallel.virtual_stages", l.virtual_stages),
          word("training.parallel.sequence", l.sequence ? "true" : "false"),
          word("training.pipeline.schedule", name_c_str(l.schedule)),
          word("training.scheme", name_c_str(l.scheme)),
          word("training.fsdp.sharding", name_c_str(l.sharding)),
          number("workload.micro_batch", l.micro_batch),
          word("workload.activation_checkpointing", name_c_str(l.checkpointing)),
          word("training.tensor.overlap", name_c_str(l.overlap)),
          word("training.pipeline.scatter_gather", l.scatter_gather ? "true" : "false")};
}

std::string layout_label(const Layout& l) {
  scheme::ParallelConfig par;
  par.tensor = l.tensor;
  par.context = l.context;
  par.pipeline = l.pipeline;
  par.virtual_stages = l.virtual_stages;
  par.expert = l.expert;
  std::string out = scheme::RankLayout::describe(par, l.gpus);
  out += l.scheme == Scheme::Fsdp ? fmt::format(", fsdp {}", name_c_str(l.sharding))
                                  : fmt::format(", {}", name_c_str(l.scheme));
  out += fmt::format(", mb {}, ckpt {}", l.micro_batch, name_c_str(l.checkpointing));
  if (l.tensor > 1 && l.sequence) out += ", sp";
  if (l.tensor > 1 && l.overlap == TensorOverlap::Collective) out += ", async tp";
  if (l.tensor > 1 && l.pipeline > 1 && !l.sequence && l.scatter_gather) out += ", scatter-gather";
  if (l.pipeline > 1) out += fmt::format(", {}", name_c_str(l.schedule));
  return out;
}

report::Plan plan(const PlanRequest& request) {
  // Under mpirun every rank enumerates and checks every layout (cheap, and the same everywhere),
  // then each predicts every size-th layout of each coarse batch and of the top k; the batches'
  // coarse values go to every rank (each decides the pruning alike), the top k's results to rank
  // 0, which alone returns the answer.
  const Ranks ranks = process_ranks();
  const auto owns = [&ranks](std::size_t j) {
    return static_cast<int>(j % static_cast<std::size_t>(ranks.size)) == ranks.rank;
  };
  if (request.top < 1) throw Error({"", 0, "--top"}, "expected a number of layouts >= 1, got 0");
  const auto started = std::chrono::steady_clock::now();
  Request files;
  files.scenario = request.scenario;
  files.scenario_text = request.scenario_text;
  files = with_scenario_text(std::move(files));  // read once: a pipe can be read only once
  const scenario::Scenario base = load_scenario(files, request.overrides);
  const std::vector<int> counts =
      request.gpus.empty() ? std::vector<int>{base.cluster.workers} : request.gpus;
  (void)decoder_blocks(base);
  // One line at a time, made under the lock (fine's rows finish on several threads).
  std::mutex progress_lock;
  auto progress = [&](auto&& line) {
    if (!request.progress) return;
    const std::lock_guard<std::mutex> hold(progress_lock);
    request.progress(line());
  };
  const bool job = base.options.job.tokens > 0 || base.options.job.samples > 0;
  if (request.rank_by == report::PlanRank::Time && !job) {
    throw Error({"", 0, "--rank-by"},
                "ranking by time needs the job's size: set workload.tokens (tokens to train) or job.samples");
  }
  if (request.rank_by == report::PlanRank::Cost && !(base.options.cost.gpu_hour > 0)) {
    throw Error({"", 0, "--rank-by"},
                "ranking by cost needs cluster.cost.gpu_hour (money per GPU-hour, e.g. 2.5 or '2.5 USD')");
  }

  report::Plan out;
  out.scenario = base.name;
  out.compute_source = scenario::compute_source_text(base);
  out.top_k = request.top;
  out.rank_by = request.rank_by;
  for (const scenario::PlanKey& k : scenario::plan_keys()) {
    (searched(base, k.key) ? out.searched : out.held).emplace_back(k.key);
  }

  // One scenario and workload per micro-batch and checkpointing: they set the compute time.
  std::map<std::pair<int, ActivationCheckpointing>, std::pair<scenario::Scenario, workload::Workload>>
      at_batch;
  // And what its memory check reads of each (its FSDP units), found once for all its layouts.
  std::map<std::pair<int, ActivationCheckpointing>, predict::WorkloadMemory> memory_at_batch;
  auto prepared = [&](const Layout& l) -> const std::pair<scenario::Scenario, workload::Workload>& {
    auto it = at_batch.find({l.micro_batch, l.checkpointing});
    if (it == at_batch.end()) {
      scenario::Scenario at = scenario::with_micro_batch(base, l.micro_batch, l.checkpointing);
      workload::Workload w = scenario::build_workload(at);
      it = at_batch.emplace(std::pair{l.micro_batch, l.checkpointing}, std::pair{std::move(at), std::move(w)})
               .first;
      memory_at_batch.emplace(it->first,
                              predict::WorkloadMemory(it->second.second, base.scheme.fsdp.unit_blocks));
    }
    return it->second;
  };
  auto memory_of = [&](const Layout& l) -> const predict::WorkloadMemory& {
    return memory_at_batch.at({l.micro_batch, l.checkpointing});
  };
  predict::Options coarse = base.options;
  coarse.predictor = predict::Predictor::Coarse;
  coarse.record_trace = false;
  predict::Options ranking = coarse;  // the batches read the step alone
  ranking.link_loads = false;
  predict::Options fine = base.options;
  fine.predictor = predict::Predictor::Fine;
  fine.record_trace = false;
  // The top layouts often share a warning (a tensor group across nodes): each is said once.
  std::mutex warn_mutex;
  std::set<std::string> warned;
  const predict::WarningSink warn = [&](const std::string& text) {
    if (!request.warn) return;
    std::lock_guard<std::mutex> lock(warn_mutex);
    if (warned.insert(text).second) request.warn(text);
  };

  std::map<std::pair<int, ActivationCheckpointing>, bool> checked_alone;
  for (int gpus : counts) {
    // The cluster at this count, by the rules that do not depend on the layout.
    BoundContext bounds;  // what the bounds know of the cluster at this count
    std::vector<Layout> candidates;
    {
      cluster::ClusterSpec spec = base.cluster;
      spec.workers = gpus;
      scheme::SchemeConfig plain = base.scheme;
      plain.parallel = {};
      plain.pipeline = {};
      try {
        scheme::validate(spec, plain);
      } catch (const Error& e) {
        throw Error({"", 0, "--gpus"}, fmt::format("at {} GPUs, {}: {}", gpus, e.where().key, e.message()));
      }
      bounds = bound_context(spec, base.scheme);
      candidates = candidate_layouts(base, gpus);
      for (const Layout& l : candidates) (void)prepared(l);  // before the threads share the map
      // What predict::validate checks of each workload and of the options, once: a layout of a
      // workload that passes needs its rules (layout_problem) and scheme::validate(cluster,
      // scheme) alone; one that fails has every layout checked in full, naming the same keys.
      for (const auto& [key, entry] : at_batch) {
        try {
          predict::validate(entry.second, spec, plain, coarse);
          checked_alone[key] = true;
        } catch (const Error&) {
          checked_alone[key] = false;
        }
      }
    }

    auto scenario_of = [&](const Layout& l) {
      scenario::Scenario at = prepared(l).first;
      apply_layout(at.cluster, at.scheme, l);
      return at;
    };
    const int threads = threads_for(request.jobs, candidates.size());
    progress([&] { return fmt::format("{} GPUs: checking {} layouts", gpus, candidates.size()); });
    Tally tally = parallel_tally(candidates.size(), threads, [&](std::size_t i, Tally& t) {
      const Layout& l = candidates[i];
      const auto& [at_batch_scenario, w] = prepared(l);
      cluster::ClusterSpec spec = at_batch_scenario.cluster;
      scheme::SchemeConfig sc = at_batch_scenario.scheme;
      apply_layout(spec, sc, l);
      // The rules first (the same as validation's), then memory, then time.
      const scheme::ModelUnits& units = memory_of(l).layers().units;
      if (std::optional<Error> broken = scheme::layout_problem(w, spec, sc, units)) {
        ++t.invalid[broken->where().key];
        return;
      }
      try {
        if (checked_alone.at({l.micro_batch, l.checkpointing})) {
          scheme::validate(spec, sc);
        } else {
          predict::validate(w, spec, sc, coarse);
        }
      } catch (const Error& e) {
        ++t.invalid[e.where().key];
        return;
      }
      predict::Result memory;
      predict::account_model(memory, w, spec, sc, &memory_of(l));
      if (!memory.memory.fits()) {
        ++t.no_fit;
        // By what the GPU must reserve (the allocator's pool and what lives outside it), as fits() is.
        const std::pair<double, std::size_t> miss{memory.memory.reserved() / spec.gpu_memory, i};
        if (!t.closest || miss < *t.closest) t.closest = miss;
        return;
      }
      t.fitting.emplace_back(
          request.prune ? tokens_bound(w, l, sc, bounds, &units) : std::numeric_limits<double>::infinity(),
          i);
    });
    if (tally.error) std::rethrow_exception(tally.error);

    // Coarse on the fitting layouts, those with the highest bound first, a batch at a time; once
    // the k-th best so far beats every bound left, the rest cannot reach the top k (their coarse
    // is at most their bound) and are pruned. The batches do not depend on the threads, so neither
    // does what is pruned.
    std::sort(tally.fitting.begin(), tally.fitting.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    std::vector<std::pair<double, std::size_t>> scored;  // (coarse tokens/s per GPU, candidate)
    std::vector<double> best;                            // the k highest so far, a min-heap
    std::size_t done = 0;
    constexpr std::size_t kBatch = 256;
    while (done < tally.fitting.size()) {
      if (best.size() == request.top && tally.fitting[done].first * (1 + 1e-9) < best.front()) break;
      progress([&] {
        return fmt::format("{} GPUs: {} layouts fit; coarse on {} so far, highest bound first", gpus,
                           tally.fitting.size(), done);
      });
      const std::size_t size = std::min(kBatch, tally.fitting.size() - done);
      std::vector<std::size_t> mine;  // this rank's part of the batch
      for (std::size_t j = 0; j < size; ++j) {
        if (owns(j)) mine.push_back(j);
      }
      // Layouts of the same groups together: each thread keeps their collective plans between
      // layouts (composed_costs), and takes the batch in blocks of consecutive layouts.
      std::stable_sort(mine.begin(), mine.end(), [&](std::size_t a, std::size_t b) {
        const Layout& x = candidates[tally.fitting[done + a].second];
        const Layout& y = candidates[tally.fitting[done + b].second];
        return std::tie(x.tensor, x.context, x.pipeline, x.sequence, x.scheme) <
               std::tie(y.tensor, y.context, y.pipeline, y.sequence, y.scheme);
      });
      std::vector<double> tokens(size);
      Tally batch =
          parallel_tally(mine.size(), threads_for(request.jobs, mine.size()), [&](std::size_t i, Tally&) {
            const std::size_t j = mine[i];
            const Layout& l = candidates[tally.fitting[done + j].second];
            const auto& [at_batch_scenario, w] = prepared(l);
            cluster::ClusterSpec spec = at_batch_scenario.cluster;
            scheme::SchemeConfig sc = at_batch_scenario.scheme;
            apply_layout(spec, sc, l);
            tokens[j] = predict::predict(w, spec, sc, ranking).tokens.tokens_per_s_per_worker;
          });
      if (ranks.size > 1) share_batch(tokens, batch.error, ranks);
      if (batch.error) std::rethrow_exception(batch.error);
      for (std::size_t j = 0; j < size; ++j) {
        scored.emplace_back(tokens[j], tally.fitting[done + j].second);
        best.push_back(tokens[j]);
        std::push_heap(best.begin(), best.end(), std::greater<>());
        if (best.size() > request.top) {
          std::pop_heap(best.begin(), best.end(), std::greater<>());
          best.pop_back();
        }
      }
      done += size;
    }
    const std::size_t pruned = tally.fitting.size() - done;
    tally.fitting = std::move(scored);

    report::PlanCount count;
    count.gpus = gpus;
    count.considered = candidates.size();
    count.fitting = tally.fitting.size() + pruned;
    count.rejected.no_fit = tally.no_fit;
    count.rejected.pruned = pruned;
    for (const auto& [key, n] : tally.invalid) {
      count.rejected.invalid += n;
      count.rejected.invalid_by_key.emplace_back(key, n);
    }
    if (tally.closest) {
      const Layout& l = candidates[tally.closest->second];
      const scenario::Scenario at = scenario_of(l);
      predict::Result memory;
      predict::account_model(memory, prepared(l).second, at.cluster, at.scheme, &memory_of(l));
      count.closest_miss = report::PlanMiss{layout_config(l), layout_label(l), memory.memory};
    }
    // Coarse's order: most tokens/s per GPU first, the candidate order breaking ties.
    std::sort(tally.fitting.begin(), tally.fitting.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    const std::size_t k = std::min(request.top, tally.fitting.size());
    count.top.resize(k);
    // Fine on the top k, in threads (each row its own slot).
    std::atomic<std::size_t> next{0};
    std::vector<std::exception_ptr> errors(k);
    for (std::size_t j = 0; j < k; ++j) {
      const Layout& l = candidates[tally.fitting[j].second];
      report::PlanRow& row = count.top[j];
      row.config = layout_config(l);
      row.label = layout_label(l);
      row.coarse_rank = j;
    }
    std::size_t mine = 0;  // this rank's rows
    for (std::size_t j = 0; j < k; ++j) mine += owns(j) ? 1 : 0;
    // Longest first, so that the threads end together (the rows' fine runs differ tenfold at
    // 16,384 GPUs): a step's ops as validate() counts them, m micro-batches through every layer.
    std::vector<std::size_t> order(k);
    std::iota(order.begin(), order.end(), std::size_t{0});
    {
      std::vector<double> ops(k);
      for (std::size_t j = 0; j < k; ++j) {
        const Layout& l = candidates[tally.fitting[j].second];
        const scenario::Scenario at = scenario_of(l);
        const workload::Workload& w = prepared(l).second;
        ops[j] = static_cast<double>(scheme::micro_batches(at.scheme.parallel, at.cluster.workers, w.batch_per_worker)) *
                 static_cast<double>(w.ops.size()) * (l.context + 4.0);
      }
      std::stable_sort(order.begin(), order.end(), [&ops](std::size_t a, std::size_t b) { return ops[a] > ops[b]; });
    }
    std::size_t finished = 0;  // under progress_lock
    progress([&] { return fmt::format("{} GPUs: fine on the top {}, 0 of {} done", gpus, k, mine); });
    auto work = [&] {
      for (std::size_t i; (i = next.fetch_add(1)) < k;) {
        const std::size_t j = order[i];
        if (!owns(j)) continue;
        try {
          const Layout& l = candidates[tally.fitting[j].second];
          const scenario::Scenario at = scenario_of(l);
          const workload::Workload& w = prepared(l).second;
          report::PlanRow& row = count.top[j];
          row.coarse = predict::predict(w, at.cluster, at.scheme, coarse);
          row.fine = predict::predict(w, at.cluster, at.scheme, fine, warn);
        } catch (...) {
          errors[j] = std::current_exception();
        }
        progress([&] {
          return fmt::format("{} GPUs: fine on the top {}, {} of {} done", gpus, k, ++finished, mine);
        });
      }
    };
    const int fine_threads = threads_for(request.jobs, k);
    std::vector<std::thread> pool;
    for (int th = 1; th < fine_threads; ++th) pool.emplace_back(work);
    work();
    for (std::thread& th : pool) th.join();
    if (ranks.size > 1) gather_rows(count.top, errors, ranks);
    for (const std::exception_ptr& e : errors) {
      if (e) std::rethrow_exception(e);
    }
    // Fine's order by the rank's value (most tokens/s per GPU, least time or cost first), coarse's
    // order breaking ties.
    std::stable_sort(count.top.begin(), count.top.end(),
                     [rank = request.rank_by](const report::PlanRow& a, const report::PlanRow& b) {
                       return report::rank_value(a.fine, rank) < report::rank_value(b.fine, rank);
                     });
    out.counts.push_back(std::move(count));
  }
  if (ranks.rank != 0) return {};  // rank 0 answers
  for (std::size_t i = 0; i < out.counts.size(); ++i) {
    if (out.counts[i].top.empty()) continue;
    const double value = report::rank_value(out.counts[i].top.front().fine, request.rank_by);
    if (!out.best_count ||
        value < report::rank_value(out.counts[*out.best_count].top.front().fine, request.rank_by))
      out.best_count = i;
  }
  out.elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return out;
}

}  // namespace stepcast::sweep
