#include "scheme/stage_programs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <optional>

#include "stepcast/detail/scheme/costs.hpp"
#include "stepcast/detail/scheme/fsdp_units.hpp"
#include "stepcast/error.hpp"

namespace stepcast::scheme {
namespace {

using workload::Op;
using workload::OpKind;
using workload::Workload;
using Pass = PipelinePass::Kind;

constexpr int kComputeLane = 0;
constexpr int kCommLane = 1;  // communication ops take no lane; this one names them in traces

/// What a decoder layer is, for its split and its collectives.
enum class Role : uint8_t { Embedding, Attention, Mlp, Head };

/// One layer of the source workload: its ops and role.
struct LayerInfo {
  int forward = -1, backward = -1;  // op indices in the source workload
  Role role = Role::Mlp;
  bool moe = false;  // a mixture of experts' MLP (the zoo's "<block>.moe" layer)
  int block = -1;
  std::vector<int> tensors;
};

std::vector<LayerInfo> layers_of(const Workload& w) {
  int num_layers = 0;
  for (const Op& op : w.ops) num_layers = std::max(num_layers, op.layer + 1);
  std::vector<LayerInfo> layers(static_cast<size_t>(num_layers));
  for (int i = 0; i < static_cast<int>(w.ops.size()); ++i) {
    const Op& op = w.ops[static_cast<size_t>(i)];
    STEPCAST_ASSERT(op.layer >= 0);
    LayerInfo& l = layers[static_cast<size_t>(op.layer)];
    (op.kind == OpKind::Forward ? l.forward : l.backward) = i;
  }
  for (int t = 0; t < static_cast<int>(w.tensors.size()); ++t) {
    const int consumer = w.tensors[static_cast<size_t>(t)].consumers.front();
    layers[static_cast<size_t>(w.ops[static_cast<size_t>(consumer)].layer)].tensors.push_back(t);
  }
  int previous_block = -1;
  for (int l = 0; l < num_layers; ++l) {
    LayerInfo& info = layers[static_cast<size_t>(l)];
    info.block = static_cast<size_t>(l) < w.block_of_layer.size() ? w.block_of_layer[static_cast<size_t>(l)] : -1;
    if (info.block < 0) {
      info.role = l == 0 ? Role::Embedding : Role::Head;
    } else {
      info.role = info.block != previous_block ? Role::Attention : Role::Mlp;
    }
    previous_block = info.block;
    info.moe = info.role == Role::Mlp && info.forward >= 0 &&
               w.ops[static_cast<size_t>(info.forward)].name.ends_with(".moe");
  }
  return layers;
}

double element_bytes(const Workload& w) { return workload::bytes_per_element(w.precision); }

}  // namespace

std::vector<PipelinePass> schedule_order(PipelineSchedule schedule, int p, int v, int m, int stage, int group) {
  std::vector<PipelinePass> order;
  order.reserve(static_cast<size_t>(2 * m * v));
  auto forward = [&](int chunk, int mb) { order.push_back({Pass::Forward, chunk, mb}); };
  auto backward = [&](int chunk, int mb) { order.push_back({Pass::Backward, chunk, mb}); };
  switch (schedule) {
    case PipelineSchedule::GPipe:
      for (int chunk = 0; chunk < v; ++chunk) {
        for (int mb = 0; mb < m; ++mb) forward(chunk, mb);
      }
      for (int chunk = v - 1; chunk >= 0; --chunk) {
        for (int mb = 0; mb < m; ++mb) backward(chunk, mb);
      }
      break;
    case PipelineSchedule::OneFOneB:
    case PipelineSchedule::ZeroBubble: {
      // PipeDream-Flush: p - s - 1 forwards in flight before the first backward.
      const int warmup = std::min(p - stage - 1, m);
      for (int i = 0; i < warmup; ++i) forward(0, i);
      for (int i = 0; i < m - warmup; ++i) {
        forward(0, warmup + i);
        backward(0, i);
      }
      for (int i = m - warmup; i < m; ++i) backward(0, i);
      break;
    }
    case PipelineSchedule::Interleaved: {
      // Megatron-LM's interleaved 1F1B (schedules.py, get_schedule_table): micro-batches in
      // groups of g (p by default; interleaved_group, checked by validate()), each group through
      // chunk 0, then chunk 1, ...; the last group (m mod g of them, 0 or at least p) takes in
      // what is left. The backwards visit the chunks in reverse. p - s - 1 forwards twice over and
      // a group of each other chunk first.
      const int g = group > 0 ? group : p;
      const int total = m * v;
      std::vector<std::pair<int, int>> table;  // (micro-batch, chunk) of the k-th forward
      for (int first = 0; first < m; first += g) {
        const int end = first + g >= m ? m : first + g;
        for (int chunk = 0; chunk < v; ++chunk) {
          for (int mb = first; mb < end; ++mb) table.emplace_back(mb, chunk);
        }
      }
      int warmup = (p - stage - 1) * 2 + (v - 1) * g;
      if (m == p) warmup = total;  // Megatron: every forward first when m equals p
      warmup = std::min(warmup, total);
      auto fwd = [&](int k) { forward(table[static_cast<size_t>(k)].second, table[static_cast<size_t>(k)].first); };
      auto bwd = [&](int k) {
        backward(v - 1 - table[static_cast<size_t>(k)].second, table[static_cast<size_t>(k)].first);
      };
      for (int k = 0; k < warmup; ++k) fwd(k);
      for (int i = 0; i < total - warmup; ++i) {
        fwd(warmup + i);
        bwd(i);
      }
      for (int i = total - warmup; i < total; ++i) bwd(i);
      break;
    }
  }
  return order;
}

double block_activation_message(const Workload& w, const ParallelConfig& parallel) {
  const workload::TransformerShape& s = *w.facts.transformer;
  return static_cast<double>(w.batch_per_worker) * static_cast<double>(s.seq_len) / parallel.context *
         static_cast<double>(s.hidden) * element_bytes(w);
}

double ring_kv_message(const Workload& w, const ParallelConfig& parallel) {
  const workload::TransformerShape& s = *w.facts.transformer;
  if (s.mla()) {
    return w.batch_per_worker * static_cast<double>(s.seq_len) / parallel.context *
           static_cast<double>(s.ring_kv_width()) * element_bytes(w);
  }
  const double kv_heads = std::max(1.0, static_cast<double>(s.kv_heads) / parallel.tensor);
  return 2.0 * w.batch_per_worker * static_cast<double>(s.seq_len) / parallel.context * kv_heads *
         static_cast<double>(s.head_dim()) * element_bytes(w);
}

ModelUnits::ModelUnits(const Workload& w) : decoder(w.facts.transformer.has_value()) {
  int num_layers = 0;
  for (const Op& op : w.ops) num_layers = std::max(num_layers, op.layer + 1);
  std::vector<int> forward(static_cast<size_t>(num_layers), 0), backward(forward);
  for (size_t i = 0; i < w.ops.size(); ++i) {
    const Op& op = w.ops[i];
    if (op.layer < 0 || op.lane != 0) {
      if (foreign_op < 0) foreign_op = static_cast<int>(i);
      continue;
    }
    ++(op.kind == workload::OpKind::Backward ? backward : forward)[static_cast<size_t>(op.layer)];
  }
  one_pass_each =
      forward == backward && std::all_of(forward.begin(), forward.end(), [](int n) { return n == 1; });
  int previous = -2;
  for (int l = 0; l < num_layers; ++l) {
    const int block =
        static_cast<size_t>(l) < w.block_of_layer.size() ? w.block_of_layer[static_cast<size_t>(l)] : -1;
    if (l > 0 && (block < 0 || block != previous)) offsets.push_back(static_cast<int>(layers.size()));
    layers.push_back(l);
    previous = block < 0 ? -2 : block;
  }
  if (!layers.empty()) offsets.push_back(static_cast<int>(layers.size()));
}

ChunkLayers split_chunks(const ModelUnits& units, const SchemeConfig& scheme) {
  const bool separate = units.decoder && !scheme.pipeline.account_for_embedding && units.count() >= 2;
  // Units first .. end - 1 are split; with `separate` unit 0 (the embedding) joins the first
  // chunk and the last unit (the head) the last.
  const int first = separate ? 1 : 0;
  const int end = separate ? units.count() - 1 : units.count();
  const int chunks = scheme.parallel.pipeline * scheme.parallel.virtual_stages;
  const int n = end - first;
  std::vector<int> counts(static_cast<size_t>(chunks));
  if (!scheme.pipeline.layers_per_stage.empty()) {
    counts = scheme.pipeline.layers_per_stage;
    const int given = std::accumulate(counts.begin(), counts.end(), 0);
    if (static_cast<int>(counts.size()) != chunks || given != n) {
      throw Error({"", 0, "training.pipeline.layers_per_stage"},
                  fmt::format("expected {} entries (p x v model chunks) summing to the {} blocks to split{}, got {} "
                              "entries summing to {}",
                              chunks, n, separate ? " (the embedding and the head are not counted)" : "",
                              counts.size(), given));
    }
  } else {
    if (n < chunks) {
      throw Error({"", 0, "training.parallel.pipeline"},
                  fmt::format("{} blocks cannot fill {} pipeline stages x {} chunks: each model chunk needs a block",
                              n, scheme.parallel.pipeline, scheme.parallel.virtual_stages));
    }
    for (int j = 0; j < chunks; ++j) counts[static_cast<size_t>(j)] = n / chunks + (j < n % chunks ? 1 : 0);
  }
  ChunkLayers out;
  out.layers.reserve(units.layers.size());
  out.offsets.reserve(static_cast<size_t>(chunks) + 1);
  auto add_units = [&](int from, int to) {
    out.layers.insert(out.layers.end(), units.layers.begin() + units.offsets[static_cast<size_t>(from)],
                      units.layers.begin() + units.offsets[static_cast<size_t>(to)]);
  };
  int unit = first;
  for (int j = 0; j < chunks; ++j) {
    const size_t before = out.layers.size();
    if (j == 0 && separate) add_units(0, 1);
    add_units(unit, unit + counts[static_cast<size_t>(j)]);
    unit += counts[static_cast<size_t>(j)];
    if (j == chunks - 1 && separate) add_units(end, end + 1);
    if (out.layers.size() == before) {
      throw Error({"", 0, "training.pipeline.layers_per_stage"},
                  fmt::format("model chunk {} (stage {}, chunk {}) holds no layer", j, j % scheme.parallel.pipeline,
                              j / scheme.parallel.pipeline));
    }
    out.offsets.push_back(static_cast<int>(out.layers.size()));
  }
  return out;
}

std::vector<std::vector<int>> chunk_layers(const Workload& w, const SchemeConfig& scheme) {
  const ChunkLayers split = split_chunks(ModelUnits(w), scheme);
  std::vector<std::vector<int>> out;
  out.reserve(split.size());
  for (size_t j = 0; j < split.size(); ++j) out.emplace_back(split[j].begin(), split[j].end());
  return out;
}

namespace {

/// Builds one stage's program pass by pass.
class ProgramBuilder {
 public:
  ProgramBuilder(const Workload& w, const cluster::ClusterSpec& spec, const SchemeConfig& scheme,
                 const RankLayout& layout, int stage, const std::vector<std::vector<int>>& chunks,
                 const std::vector<LayerInfo>& layers, const std::vector<FsdpUnit>& units, bool names)
      : names_(names),
        w_(w),
        spec_(spec),
        scheme_(scheme),
        layout_(layout),
        stage_(stage),
        chunks_(chunks),
        layers_(layers),
        t_(scheme.parallel.tensor),
        c_(scheme.parallel.context),
        p_(scheme.parallel.pipeline),
        v_(scheme.parallel.virtual_stages),
        m_(micro_batches(scheme.parallel, layout.workers(), w.batch_per_worker)),
        e_(scheme.parallel.expert),
        etp_(scheme.parallel.expert_tensor_degree()),
        sequence_(scheme.parallel.sequence && t_ > 1),
        scatter_gather_(scheme.pipeline.scatter_gather && !sequence_ && t_ > 1),
        split_(t_ > 1 || c_ > 1 || e_ > 1),
        shard_(layout.data_group_size()),
        replicas_(layout.size(ParallelDimension::DataReplicate)),
        reduced_(reduced_share(w, scheme)),
        expert_shard_(e_ > 1 ? layout.size(ParallelDimension::ExpertData) : 1),
        units_(units) {
    program_.stage = stage;
    program_.ops.name = fmt::format("{} stage {}", w.name, stage);
    program_.ops.batch_per_worker = w.batch_per_worker;
    program_.ops.precision = w.precision;
    program_.ops.facts = w.facts;
    program_.ops.block_of_layer = w.block_of_layer;
    program_.ops.optimizer_in_ops = true;
    program_.ops.lanes = {"gpu", "communication"};
    if (w.facts.transformer) {
      activation_ = block_activation_message(w, scheme.parallel);
      const workload::TransformerShape& shape = *w.facts.transformer;
      expert_share_ = expert_flop_share(shape);
      busiest_ = busiest_expert_gpu_by_block(w, scheme.parallel);
      load_variants_ = expert_load_variants(w, scheme.parallel);
    }
    last_of_layer_.assign(layers_.size(), kNone);
    // Sharded data parallelism over the data groups (the gradient group, or hybrid sharding's
    // shard groups): which units it gathers and reduces.
    const bool sharded = shard_ > 1 || expert_shard_ > 1;
    if (scheme.scheme == Scheme::Fsdp) {
      switch (scheme.fsdp.sharding) {
        case FsdpSharding::Full:
        case FsdpSharding::Hybrid:
          gather_forward_ = sharded;
          gather_backward_ = sharded && scheme.fsdp.reshard_after_forward;
          reduce_every_micro_batch_ = sharded || replicas_ > 1;
          break;
        case FsdpSharding::GradOp:
          gather_forward_ = sharded;
          reduce_every_micro_batch_ = sharded;
          break;
        case FsdpSharding::Optimizer:
          break;
      }
    }
    // Each unit's bytes on this rank: its dense tensors over the tensor group, with expert
    // parallelism its experts' (the rank's experts / e of them) over the expert-tensor group.
    for (const FsdpUnit& unit : units_) unit_bytes_.push_back(unit_bytes_on_rank(w, unit, scheme.parallel));
    unit_of_layer_.assign(layers_.size(), kNone);
    for (int u = 0; u < static_cast<int>(units_.size()); ++u) {
      for (int t : units_[static_cast<size_t>(u)].tensors) {
        const int consumer = w.tensors[static_cast<size_t>(t)].consumers.front();
        unit_of_layer_[static_cast<size_t>(w.ops[static_cast<size_t>(consumer)].layer)] = u;
      }
    }
    first_of_layer_.assign(layers_.size(), kNone);
  }

  /// The stage before's program has about as many ops: room for them up front (a program is
  /// rebuilt for every layout a search predicts, and growing its arrays op by op was a fifth of it).
  StageProgram build(size_t expected_ops = 0) {
    program_.ops.ops.reserve(expected_ops);
    program_.comm_of_op.reserve(expected_ops);
    program_.pass_of_op.reserve(expected_ops);
    program_.micro_batch_of_op.reserve(expected_ops);
    program_.chunk_of_op.reserve(expected_ops);
    const std::vector<PipelinePass> order = schedule_order(
        scheme_.pipeline.schedule, p_, v_, m_, stage_, interleaved_group(scheme_.pipeline.microbatch_group, p_, m_));
    const bool zero_bubble = scheme_.pipeline.schedule == PipelineSchedule::ZeroBubble;
    program_.micro_batches = m_;
    for (const PipelinePass& pass : order) {
      const int j = pass.chunk * p_ + stage_;  // model chunk (zero_bubble: v = 1, backwards in order)
      micro_batch_ = pass.micro_batch;
      chunk_ = pass.chunk;
      switch (pass.kind) {
        case Pass::Forward:
          pass_ = ProgramPass::Forward;
          forward_pass(j, pass.micro_batch);
          break;
        case Pass::Backward:
          pass_ = ProgramPass::Backward;
          backward_pass(j, pass.micro_batch, zero_bubble);
          break;
        case Pass::Weight:
          break;  // W passes are emitted with their B (zero_bubble)
      }
    }
    // ZB-H1's W passes not yet placed: the last `stage` micro-batches', in order.
    for (size_t mb = deferred_.size() - std::min(deferred_.size(), static_cast<size_t>(stage_)); mb < deferred_.size();
         ++mb) {
      emit_weights(mb);
    }
    add_tensors();
    pass_ = ProgramPass::Step;
    add_data_parallel();
    return std::move(program_);
  }

 private:
  /// An op's name, or none when the caller reads no names (composed_costs): formatting them is
  /// most of a program's cost.
  template <class... T>
  std::string named(fmt::format_string<T...> format, T&&... args) const {
    if (!names_) return {};
    return fmt::format(format, std::forward<T>(args)...);
  }

  int add_op(Op op, int comm = kNone) {
    // A unit's gathered parameters: the first op of the unit waits for them too.
    op.deps.insert(op.deps.end(), extra_deps_.begin(), extra_deps_.end());
    extra_deps_.clear();
    program_.ops.ops.push_back(std::move(op));
    program_.comm_of_op.push_back(comm);
    program_.pass_of_op.push_back(pass_);
    program_.micro_batch_of_op.push_back(pass_ == ProgramPass::Step ? kNone : micro_batch_);
    program_.chunk_of_op.push_back(pass_ == ProgramPass::Step ? kNone : chunk_);
    return static_cast<int>(program_.ops.ops.size()) - 1;
  }
  int add_compute(std::string name, OpKind kind, double duration, std::vector<int> deps, int layer,
                  int lane = kComputeLane) {
    return add_op({.name = std::move(name), .kind = kind, .duration = duration, .lane = lane, .layer = layer,
                   .deps = std::move(deps)});
  }
  int add_comm(std::string name, OpKind kind, const CommOp& comm, std::vector<int> deps, int layer) {
    program_.comms.push_back(comm);
    return add_op({.name = std::move(name), .kind = kind, .duration = 0, .lane = kCommLane, .layer = layer,
                   .deps = std::move(deps)},
                  static_cast<int>(program_.comms.size()) - 1);
  }
  static std::vector<int> after(int op) { return op == kNone ? std::vector<int>{} : std::vector<int>{op}; }

  /// Scatter-gather of pipeline messages: the received 1/t pieces all-gathered over the tensor
  /// group before the pass uses them (on the intra-node links where the group sits in a node).
  int gather_scattered_message(int received, OpKind pass) {
    if (!scatter_gather_) return received;
    return tensor_collective(CommKind::AllGather, "pp message", pass, received, kNone);
  }

  /// A tensor-parallel collective of the block activations after (or before) `previous`.
  int tensor_collective(CommKind kind, const std::string& what, OpKind pass, int previous, int layer) {
    if (t_ <= 1) return previous;
    return add_comm(named("tp {} {}", to_string(kind), what), pass,
                    {.dimension = ParallelDimension::Tensor, .kind = kind, .bytes = activation_},
                    after(previous), layer);
  }

  /// A layer's compute (`compute(previous)` returns its last op) between its tensor-parallel
  /// collectives: `before` (an all-gather, with sequence parallelism) and `following` (the
  /// all-reduce or reduce-scatter of its output). With training.tensor.overlap: collective, each
  /// overlaps the compute beside it (the all-gather feeds the GEMM chunk by chunk, the reduction
  /// drains it so: async TP), so both start with the compute and the next op waits for all three
  /// (a join of no duration); the exposed part is what the collectives take beyond the compute.
  template <class Compute>
  int around_collectives(std::optional<CommKind> before, Compute compute, std::optional<CommKind> following,
                         const std::string& name, OpKind pass, int previous, int layer) {
    if (t_ <= 1 || (!before && !following)) return compute(previous);
    if (scheme_.tensor.overlap == TensorOverlap::None) {
      int op = before ? tensor_collective(*before, name, pass, previous, layer) : previous;
      op = compute(op);
      return following ? tensor_collective(*following, name, pass, op, layer) : op;
    }
    std::vector<int> joined;
    if (before) joined.push_back(tensor_collective(*before, name, pass, previous, layer));
    if (following) joined.push_back(tensor_collective(*following, name, pass, previous, layer));
    joined.push_back(compute(previous));
    return add_compute(name + " (overlapped collectives)", pass, 0, std::move(joined), layer);
  }

  /// A mixture of experts' MLP layer with its experts split over an expert group.
  [[nodiscard]] bool experts_split(const LayerInfo& info) const { return e_ > 1 && is_moe(info); }
  [[nodiscard]] bool is_moe(const LayerInfo& info) const { return info.moe && expert_share_ > 0; }
  /// Of a MoE layer's balanced time in pass `pass` (forward or backward), its routed experts':
  /// their kernels' share where the layer was timed from shapes, else their share of its FLOPs.
  [[nodiscard]] double expert_share(OpKind pass) const {
    const double timed =
        pass == OpKind::Forward ? w_.facts.experts_time_forward : w_.facts.experts_time_backward;
    return timed > 0 ? timed : expert_share_;
  }
  /// A MoE layer's time over its balanced time: every rank of an expert group runs its experts as
  /// long as the busiest one, which the combine waits for (1 when balanced or e = 1).
  [[nodiscard]] double moe_scale(const LayerInfo& info, OpKind pass) const {
    const double share = expert_share(pass);
    return is_moe(info) ? 1 - share + share * busiest_of(info) : 1.0;
  }
  [[nodiscard]] double busiest_of(const LayerInfo& info) const {
    return busiest_[static_cast<size_t>(info.block)];
  }
  /// The router's share of a MoE layer's (scaled) time.
  [[nodiscard]] double router_part(const LayerInfo& info, OpKind pass) const {
    const double share = expert_share(pass);
    return (1 - share) / (1 - share + share * busiest_of(info));
  }
  /// An expert group's all-to-all of the micro-batch's token rows: b (s / (c t)) h x top_k elements
  /// each rank sends (its sequence-parallel share of the tokens, once per expert they visit; the
  /// MoE layer keeps the sequence split, as Megatron's all-to-all dispatcher does), on the plan of
  /// the block's busiest GPU (its variant in `tag`).
  int expert_all_to_all(CommKind kind, const std::string& what, OpKind pass, int previous,
                        const LayerInfo& info, int layer) {
    const auto variant =
        std::lower_bound(load_variants_.begin(), load_variants_.end(), busiest_of(info)) - load_variants_.begin();
    return add_comm(
        named("ep {}", what), pass,
        {.dimension = ParallelDimension::Expert, .kind = kind, .bytes = routed_tokens(), .tag = variant},
        after(previous), layer);
  }
  /// Bytes of the token rows one rank routes: b (s / (c t)) h x top_k.
  [[nodiscard]] double routed_tokens() const {
    return activation_ / t_ * static_cast<double>(w_.facts.transformer->top_k);
  }
  /// An expert-tensor group's all-gather of the tokens its ranks received (before the experts) or
  /// reduce-scatter of the experts' outputs (after): ETP x the rows the busiest GPU received.
  int expert_tensor_collective(CommKind kind, const std::string& what, OpKind pass, int previous,
                               const LayerInfo& info, int layer) {
    if (etp_ <= 1) return previous;
    return add_comm(named("etp {} {}", to_string(kind), what), pass,
                    {.dimension = ParallelDimension::ExpertTensor,
                     .kind = kind,
                     .bytes = routed_tokens() * etp_ * busiest_of(info)},
                    after(previous), layer);
  }
  /// A MoE layer's routed part, `pass` forward (router, dispatch, experts, combine) or backward
  /// (the conjugates in reverse); `router` and `experts` are the two computes' durations. No
  /// tensor-parallel collectives around it: each rank routes its own sequence-parallel tokens.
  int routed_experts(const std::string& name, OpKind pass, double router, double experts, int previous,
                     const LayerInfo& info, int layer) {
    const bool forward = pass == OpKind::Forward;
    int op = forward ? add_compute(name + " router", pass, router, after(previous), layer) : previous;
    op = expert_all_to_all(CommKind::ToExperts, (forward ? "dispatch " : "combine backward ") + name, pass,
                           op, info, layer);
    op = expert_tensor_collective(CommKind::AllGather, name, pass, op, info, layer);
    op = add_compute(name + " experts", pass, experts, after(op), layer);
    op = expert_tensor_collective(CommKind::ReduceScatter, name, pass, op, info, layer);
    op = expert_all_to_all(CommKind::FromExperts, (forward ? "combine " : "dispatch backward ") + name, pass,
                           op, info, layer);
    return forward ? op : add_compute(name + " router", pass, router, after(op), layer);
  }

  /// The fractions of an attention layer's forward FLOPs in its Q/K/V projection, its core
  /// (scores and context) and its output projection (zoo/transformer.cpp's accounting).
  struct AttentionSplit {
    double qkv = 0, core = 0, out = 0;
  };
  /// Timed from shapes (workload.compute: shapes), the shares of the pass's own time instead.
  [[nodiscard]] AttentionSplit attention_split(OpKind pass) const {
    const workload::AttentionShares& timed =
        pass == OpKind::Backward ? w_.facts.attention_backward : w_.facts.attention_forward;
    if (timed.before + timed.core + timed.after > 0) return {timed.before, timed.core, timed.after};
    const workload::TransformerShape& s = *w_.facts.transformer;
    const auto h = static_cast<double>(s.hidden), seq = static_cast<double>(s.seq_len);
    // Queries and the attention output are heads x head_dim wide, which is h unless the shape
    // sets its head_dim (Qwen3).
    const auto q = static_cast<double>(s.q_width()), g = static_cast<double>(s.key_width());
    double qkv = 2 * seq * h * (q + 2 * g), core = 4 * seq * seq * q, out = 2 * seq * q * h;
    if (s.mla()) {
      // Multi-head latent attention: the q (or q_a and q_b), kv_a and kv_b projections, Q K^T
      // over q and P V over the value width, o_proj from the value width.
      const auto o = static_cast<double>(s.attention_out_width());
      const auto q_rank = static_cast<double>(s.q_lora_rank), kv_rank = static_cast<double>(s.kv_lora_rank);
      const double q_proj = s.q_lora_rank > 0 ? h * q_rank + q_rank * q : h * q;
      const double kv_proj = h * (kv_rank + static_cast<double>(s.qk_rope_head_dim)) +
                             kv_rank * static_cast<double>(s.heads * (s.qk_nope_head_dim + s.v_head_dim));
      qkv = 2 * seq * (q_proj + kv_proj);
      core = 2 * seq * seq * (q + o);
      out = 2 * seq * o * h;
    }
    const double total = qkv + core + out;
    return {qkv / total, core / total, out / total};
  }
  /// What a source op's duration is divided by for one rank: t x c for one GPU's whole
  /// micro-batch, 1 for ops already timed per rank from their shapes.
  [[nodiscard]] double rank_share() const {
    return w_.facts.timed_per_rank ? 1.0 : static_cast<double>(t_) * c_;
  }
  /// Bytes of one ring step of K and V for one rank: 2 b (s / c) (kv width / t) elements; with
  /// multi-head latent attention b (s / c) (kv_lora_rank + qk_rope_head_dim) elements, the latent
  /// and the shared rotary key, whole on every rank of a tensor group (each up-projects its own
  /// heads' keys and values from them).
  [[nodiscard]] double kv_message() const { return ring_kv_message(w_, scheme_.parallel); }

  /// The compute of an attention layer's pass under context parallelism: a projection (`first`
  /// s), the core in c chunks (`core` s in all; chunk k >= 1 waits for ring step k, which passes
  /// the K and V chunk k needs while chunk k - 1 computes), a projection (`last` s).
  int ring_attention(const std::string& label, OpKind pass, double first, double core, double last,
                     double ring_bytes, int previous, int layer) {
    int op = add_compute(label + " proj", pass, first, after(previous), layer);
    int ring = op;  // the first ring step waits for the projection that made K and V
    for (int k = 0; k < c_; ++k) {
      std::vector<int> deps = after(op);
      if (k > 0) {
        ring = add_comm(
            named("cp ring step {} {}", k, label), pass,
            {.dimension = ParallelDimension::Context, .kind = CommKind::RingShift, .bytes = ring_bytes},
            after(ring), layer);
        deps.push_back(ring);
      }
      op = add_compute(named("{} core {}", label, k), pass, core / c_, deps, layer);
    }
    return add_compute(label + " proj out", pass, last, after(op), layer);
  }

  /// One layer's forward for micro-batch `mb` after op `previous`; returns its last op.
  int layer_forward(int l, int mb, int previous, const char* prefix) {
    const int first = static_cast<int>(program_.ops.ops.size());
    const int last = layer_forward_ops(l, mb, previous, prefix);
    if (first_of_layer_[static_cast<size_t>(l)] == kNone) first_of_layer_[static_cast<size_t>(l)] = first;
    return last;
  }
  int layer_forward_ops(int l, int mb, int previous, const char* prefix) {
    const LayerInfo& info = layers_[static_cast<size_t>(l)];
    const Op& source = w_.ops[static_cast<size_t>(info.forward)];
    const double duration = source.duration / rank_share() * moe_scale(info, OpKind::Forward);
    const std::string name = named("{}F mb{} {}", prefix, mb, source.name);
    const CommKind reduction = sequence_ ? CommKind::ReduceScatter : CommKind::AllReduce;
    const std::optional<CommKind> gather =
        sequence_ ? std::optional<CommKind>(CommKind::AllGather) : std::nullopt;
    auto whole = [&](int before) { return add_compute(name, OpKind::Forward, duration, after(before), l); };
    switch (info.role) {
      case Role::Embedding:
        // Vocabulary-parallel embedding: the partial lookups summed over the tensor group.
        return around_collectives(std::nullopt, whole, reduction, name, OpKind::Forward, previous, l);
      case Role::Attention:
      case Role::Mlp:
        if (info.role == Role::Attention && c_ > 1) {
          const AttentionSplit split = attention_split(OpKind::Forward);
          return around_collectives(
              gather,
              [&](int before) {
                return ring_attention(name, OpKind::Forward, duration * split.qkv, duration * split.core,
                                      duration * split.out, kv_message(), before, l);
              },
              reduction, name, OpKind::Forward, previous, l);
        }
        if (experts_split(info)) {
          return routed_experts(name, OpKind::Forward, duration * router_part(info, OpKind::Forward),
                                duration * (1 - router_part(info, OpKind::Forward)), previous, info, l);
        }
        return around_collectives(gather, whole, reduction, name, OpKind::Forward, previous, l);
      case Role::Head:
        return around_collectives(gather, whole, std::nullopt, name, OpKind::Forward, previous, l);
    }
    return previous;
  }

  /// The recomputation a layer's backward op holds (zoo::recompute_flops), as a share of it.
  [[nodiscard]] double recompute_duration(int l) const {
    const LayerInfo& info = layers_[static_cast<size_t>(l)];
    const double forward = w_.ops[static_cast<size_t>(info.forward)].duration;
    switch (w_.facts.checkpointing) {
      case workload::ActivationCheckpointing::None:
        return 0;
      case workload::ActivationCheckpointing::Selective:
        return info.role == Role::Attention ? forward * attention_split(OpKind::Forward).core : 0;
      case workload::ActivationCheckpointing::Full:
        return info.block >= 0 ? forward : 0;
    }
    return 0;
  }

  /// A weight-gradient pass (ZB-H1's W) waiting for its place in the program: its layer, its
  /// duration, the input-gradient op it follows.
  struct WeightGradient {
    int layer = 0;
    std::string name;
    double duration = 0;
    int after = kNone;
  };

  /// One layer's backward for micro-batch `mb` after `previous`; its W pass (zero_bubble) goes to
  /// `weights`. Returns its last op on the input-gradient path.
  int layer_backward(int l, int mb, int previous, bool zero_bubble, std::vector<WeightGradient>& weights) {
    const LayerInfo& info = layers_[static_cast<size_t>(l)];
    const Op& source = w_.ops[static_cast<size_t>(info.backward)];
    const std::string name = named("B mb{} {}", mb, source.name);
    // A block recomputed in full re-ran its forward before this (backward_pass), so only the
    // backward proper is left here; selective recomputation stays in the attention's backward.
    const bool full =
        w_.facts.checkpointing == workload::ActivationCheckpointing::Full && info.block >= 0 && split_;
    const double total = (source.duration - (full ? recompute_duration(l) : 0)) / rank_share() *
                         moe_scale(info, OpKind::Backward);
    const double recompute =
        full ? 0.0 : recompute_duration(l) / rank_share() * moe_scale(info, OpKind::Backward);
    const double proper = total - recompute;
    // The backward proper splits as the forward does: output projection, core, Q/K/V projection
    // for an attention layer. ZB-H1 splits each linear's backward into the input gradient (B) and
    // the weight gradient (W), half each; the core has no weights; the embedding only weights.
    const bool attention = info.role == Role::Attention;
    const AttentionSplit split = attention ? attention_split(OpKind::Backward) : AttentionSplit{0, 0, 1};
    const double linear_share = zero_bubble ? 0.5 : 1.0;
    double first = proper * split.out * linear_share;  // output projection (all of an MLP's)
    const double core = recompute + proper * split.core;
    double last = proper * split.qkv * linear_share;
    double weight = zero_bubble ? proper * (split.out + split.qkv) * 0.5 : 0.0;
    if (info.role == Role::Embedding && zero_bubble) {
      weight = total;
      first = last = 0;
    }
    // Whole, the backward keeps the source op's duration to the last bit (a layer not split).
    const double duration = zero_bubble || (attention && c_ > 1) ? first + core + last : total;
    const CommKind reduction = sequence_ ? CommKind::ReduceScatter : CommKind::AllReduce;
    const std::optional<CommKind> gather =
        sequence_ ? std::optional<CommKind>(CommKind::AllGather) : std::nullopt;
    auto whole = [&](int before) { return add_compute(name, OpKind::Backward, duration, after(before), l); };
    int op = previous;
    switch (info.role) {
      case Role::Embedding:
        // The backward of the forward's reduce-scatter gathers the gradient (sequence parallelism).
        op = around_collectives(gather, whole, std::nullopt, name, OpKind::Backward, previous, l);
        break;
      case Role::Attention:
      case Role::Mlp:
      case Role::Head: {
        // A layer's backward reduces its input gradient; with sequence parallelism it first gathers
        // the output gradient (the conjugates of the forward's reduce-scatter and all-gather); the
        // head's input was gathered, so its backward only reduce-scatters.
        const std::optional<CommKind> before = info.role == Role::Head ? std::nullopt : gather;
        if (attention && c_ > 1) {
          // The core's backward passes K, V and their gradients around the ring.
          op = around_collectives(
              before,
              [&](int b) { return ring_attention(name, OpKind::Backward, first, core, last, 2 * kv_message(), b, l); },
              reduction, name, OpKind::Backward, previous, l);
        } else if (experts_split(info)) {
          op = routed_experts(name, OpKind::Backward, duration * router_part(info, OpKind::Backward),
                              duration * (1 - router_part(info, OpKind::Backward)), previous, info, l);
        } else {
          op = around_collectives(before, whole, reduction, name, OpKind::Backward, previous, l);
        }
        break;
      }
    }
    if (weight > 0) weights.push_back({l, named("W mb{} {}", mb, source.name), weight, op});
    return op;
  }

  /// Sharded data parallelism (FSDP): the all-gather of unit `u`'s parameters (its tensor-parallel
  /// shard) over the gradient group, on the gather stream, after `deps`.
  /// Unit `u`'s gather after `deps`: its dense tensors over the data group, then (expert
  /// parallelism) its experts over the expert-data group, one after the other on the gather
  /// stream. Returns the last, or kNone when the rank gathers nothing of it.
  int gather(int u, std::vector<int> deps, const char* pass) {
    const double share = gathered_share(w_, scheme_.fsdp);
    const auto [dense, experts] = unit_bytes_[static_cast<size_t>(u)];
    int op = kNone;
    if (shard_ > 1 && dense > 0) {
      op = add_comm(named("dp all-gather {} unit {}", pass, u), OpKind::Other,
                    {.dimension = ParallelDimension::Data,
                     .kind = CommKind::AllGather,
                     .bytes = dense * share,
                     .stream = kGatherStream},
                    std::move(deps), kNone);
    }
    if (expert_shard_ > 1 && experts > 0) {
      op = add_comm(named("edp all-gather {} unit {}", pass, u), OpKind::Other,
                    {.dimension = ParallelDimension::ExpertData,
                     .kind = CommKind::AllGather,
                     .bytes = experts * share,
                     .stream = kGatherStream},
                    op != kNone ? after(op) : std::move(deps), kNone);
    }
    return op;
  }

  /// The units of a chunk's layers in `order`, each once.
  [[nodiscard]] std::vector<int> units_in(const std::vector<int>& layers) const {
    std::vector<int> units;
    for (int l : layers) {
      const int u = unit_of_layer_[static_cast<size_t>(l)];
      if (u != kNone && (units.empty() || units.back() != u)) units.push_back(u);
    }
    return units;
  }

  /// A pass's layers with FSDP's gathers: unit k's gather issued when unit k - prefetch's first op
  /// can start (at the pass's start for the first units), or with no prefetch when unit k - 1
  /// ended; every unit's first op waits for its gather (FsdpExchange's issue rules).
  template <class EmitLayer>
  int gathered_pass(const std::vector<int>& layers, int start, int gate, bool gathers, const char* pass,
                    EmitLayer emit) {
    const std::vector<int> units = gathers ? units_in(layers) : std::vector<int>{};
    const int prefetch = scheme_.fsdp.prefetch;
    constexpr int kNotYet = kNone - 1;  // gather() may return kNone: nothing to gather
    std::vector<int> gathered(units.size(), kNotYet);
    auto position_of = [&](int u) {
      return static_cast<int>(std::find(units.begin(), units.end(), u) - units.begin());
    };
    for (int k = 0; k < std::min<int>(std::max(prefetch, 1), static_cast<int>(units.size())); ++k) {
      gathered[static_cast<size_t>(k)] = gather(units[static_cast<size_t>(k)], after(gate), pass);
    }
    int op = start;
    int current = kNone;
    for (int l : layers) {
      const int u = gathers ? unit_of_layer_[static_cast<size_t>(l)] : kNone;
      if (u != kNone && u != current) {
        current = u;
        const int k = position_of(u);
        if (gathered[static_cast<size_t>(k)] == kNotYet) {  // no prefetch: after the unit before it
          gathered[static_cast<size_t>(k)] = gather(u, after(op), pass);
        }
        // Prefetch: the gather `prefetch` units ahead goes out as this unit starts.
        const int ahead = k + prefetch;
        if (prefetch >= 1 && ahead < static_cast<int>(units.size()) &&
            gathered[static_cast<size_t>(ahead)] == kNotYet) {
          std::vector<int> deps = after(op);
          if (gathered[static_cast<size_t>(k)] != kNone) deps.push_back(gathered[static_cast<size_t>(k)]);
          gathered[static_cast<size_t>(ahead)] = gather(units[static_cast<size_t>(ahead)], std::move(deps), pass);
        }
        // The unit's first op, emitted next, waits for its gather.
        if (gathered[static_cast<size_t>(k)] != kNone)
          extra_deps_.push_back(gathered[static_cast<size_t>(k)]);
      }
      op = emit(l, op);
    }
    return op;
  }

  void forward_pass(int j, int mb) {
    int op = kNone;
    if (j > 0) {
      op = add_comm(named("pp recv F mb{} chunk {}", mb, j), OpKind::Forward,
                    pipeline_message(CommKind::Recv, j - 1, mb, j - 1, true), {}, kNone);
      op = gather_scattered_message(op, OpKind::Forward);
    }
    // The first units' gathers go out when the pass can begin: its input arrived, or the stage's
    // previous pass ended.
    const int gate = op != kNone ? op : last_compute();
    op = gathered_pass(chunks_[static_cast<size_t>(j)], op, gate, gather_forward_, "forward",
                       [&](int l, int previous) { return layer_forward(l, mb, previous, ""); });
    if (j + 1 < static_cast<int>(chunks_.size())) {
      add_comm(named("pp send F mb{} chunk {}", mb, j), OpKind::Forward,
               pipeline_message(CommKind::Send, j + 1, mb, j, true), after(op), kNone);
    }
  }

  void backward_pass(int j, int mb, bool zero_bubble) {
    int op = kNone;
    if (j + 1 < static_cast<int>(chunks_.size())) {
      op = add_comm(named("pp recv B mb{} chunk {}", mb, j), OpKind::Backward,
                    pipeline_message(CommKind::Recv, j + 1, mb, j + 1, false), {}, kNone);
      op = gather_scattered_message(op, OpKind::Backward);
    }
    std::vector<WeightGradient> weights;
    const std::vector<int>& chunk = chunks_[static_cast<size_t>(j)];
    const std::vector<int> reversed(chunk.rbegin(), chunk.rend());
    int recomputed_block = -1;
    std::vector<int> last_of_unit(units_.size(), kNone);
    const int gate = op != kNone ? op : last_compute();
    op = gathered_pass(reversed, op, gate, gather_backward_, "backward", [&](int l, int previous) {
      const LayerInfo& info = layers_[static_cast<size_t>(l)];
      int at = previous;
      if (w_.facts.checkpointing == workload::ActivationCheckpointing::Full && split_ && info.block >= 0 &&
          info.block != recomputed_block) {
        // Full recomputation: the block's forward again, collectives and all, before its backward.
        recomputed_block = info.block;
        for (int k : chunk) {
          if (layers_[static_cast<size_t>(k)].block == info.block) at = layer_forward(k, mb, at, "recompute ");
        }
      }
      at = layer_backward(l, mb, at, zero_bubble, weights);
      if (mb == m_ - 1) last_of_layer_[static_cast<size_t>(l)] = at;
      if (!units_.empty() && unit_of_layer_[static_cast<size_t>(l)] != kNone) {
        last_of_unit[static_cast<size_t>(unit_of_layer_[static_cast<size_t>(l)])] = at;
      }
      return at;
    });
    // FSDP (full, grad_op, hybrid): each unit's gradients reduced once its backward produced
    // them, every micro-batch (FSDP2 syncs gradients each backward unless told not to); under
    // ZB-H1 a unit with W passes once they did (emit_weights).
    if (reduce_every_micro_batch_) {
      std::vector<bool> weighted(units_.size(), false);
      for (const WeightGradient& wg : weights) {
        const int u = unit_of_layer_[static_cast<size_t>(wg.layer)];
        if (u != kNone) weighted[static_cast<size_t>(u)] = true;
      }
      for (int u : units_in(reversed)) {
        if (!weighted[static_cast<size_t>(u)]) reduce_unit(u, mb, last_of_unit[static_cast<size_t>(u)]);
      }
    }
    if (j > 0) {
      add_comm(named("pp send B mb{} chunk {}", mb, j), OpKind::Backward,
               pipeline_message(CommKind::Send, j - 1, mb, j, false), after(op), kNone);
    }
    if (!zero_bubble) return;
    // ZB-H1 (Qi et al. 2023): stage s runs micro-batch k's W after the B of micro-batch k + s, so
    // that every stage holds p micro-batches' activations as 1F1B's first stage does, and the
    // later stages' Bs, which the earlier ones wait for, go first.
    deferred_.push_back(std::move(weights));
    if (mb >= stage_) emit_weights(static_cast<size_t>(mb - stage_));
  }

  /// FSDP's reduction of unit `u`'s gradients of micro-batch `mb` after op `ready`: a
  /// reduce-scatter over the data group, then with hybrid sharding an all-reduce of the shard over
  /// its replicas (on a stream of its own, as FSDP2's all_reduce_stream).
  void reduce_unit(int u, int mb, int ready) {
    const auto [unit, experts] = unit_bytes_[static_cast<size_t>(u)];
    int reduced = ready;
    if (shard_ > 1 && unit > 0) {
      reduced = add_comm(named("dp reduce-scatter unit {} mb{}", u, mb), OpKind::Other,
                         {.dimension = ParallelDimension::Data,
                          .kind = CommKind::ReduceScatter,
                          .bytes = unit * reduced_,
                          .stream = kReduceStream},
                         after(reduced), kNone);
      reductions_.push_back(reduced);
    }
    if (replicas_ > 1 && unit > 0) {
      reductions_.push_back(add_comm(named("dp_replicate all-reduce unit {} mb{}", u, mb), OpKind::Other,
                                     {.dimension = ParallelDimension::DataReplicate,
                                      .kind = CommKind::AllReduce,
                                      .bytes = unit / shard_ * reduced_,
                                      .stream = kReduceStream},
                                     after(reduced), kNone));
    }
    // The unit's experts over their expert-data group (with hybrid sharding the part of it in the
    // rank's shard group), after its dense tensors on the stream; with hybrid sharding their
    // shard then all-reduced over the replicas, as the dense one.
    if (experts > 0) {
      if (expert_shard_ > 1) {
        reduced = add_comm(named("edp reduce-scatter unit {} mb{}", u, mb), OpKind::Other,
                           {.dimension = ParallelDimension::ExpertData,
                            .kind = CommKind::ReduceScatter,
                            .bytes = experts * reduced_,
                            .stream = kReduceStream},
                           after(reduced), kNone);
        reductions_.push_back(reduced);
      }
      if (replicas_ > 1) {
        reductions_.push_back(add_comm(named("dp_replicate all-reduce experts of unit {} mb{}", u, mb),
                                       OpKind::Other,
                                       {.dimension = ParallelDimension::DataReplicate,
                                        .kind = CommKind::AllReduce,
                                        .bytes = experts / expert_shard_ * reduced_,
                                        .stream = kReduceStream},
                                       after(reduced), kNone));
      }
    }
  }

  /// Appends micro-batch `mb`'s deferred W passes to the compute lane; with FSDP full, grad_op
  /// or hybrid each unit's reduction follows its last W (its weight gradients are only then
  /// whole), in the order the W passes finish the units.
  void emit_weights(size_t mb) {
    const ProgramPass pass = pass_;
    const int micro_batch = micro_batch_;
    pass_ = ProgramPass::Weight;
    micro_batch_ = static_cast<int>(mb);
    std::vector<int> units;  // in the order their last W comes
    std::vector<int> last_weight(units_.size(), kNone);
    for (const WeightGradient& wg : deferred_[mb]) {
      const int op = add_compute(wg.name, OpKind::Backward, wg.duration, after(wg.after), wg.layer);
      if (static_cast<int>(mb) == m_ - 1) last_of_layer_[static_cast<size_t>(wg.layer)] = op;
      const int u = units_.empty() ? kNone : unit_of_layer_[static_cast<size_t>(wg.layer)];
      if (u == kNone) continue;
      if (last_weight[static_cast<size_t>(u)] == kNone) units.push_back(u);
      last_weight[static_cast<size_t>(u)] = op;
    }
    if (reduce_every_micro_batch_) {
      for (int u : units) reduce_unit(u, static_cast<int>(mb), last_weight[static_cast<size_t>(u)]);
    }
    pass_ = pass;
    micro_batch_ = micro_batch;
  }

  /// A pipeline message between model chunks `from` (the sender) and its neighbour `peer`: each
  /// tensor rank's 1/t under sequence parallelism or training.pipeline.scatter_gather.
  [[nodiscard]] CommOp pipeline_message(CommKind kind, int peer, int mb, int from, bool forward) const {
    const double bytes = sequence_ || scatter_gather_ ? activation_ / t_ : activation_;
    const int64_t tag = (static_cast<int64_t>(mb) * static_cast<int64_t>(chunks_.size()) + from) * 2 + (forward ? 0 : 1);
    return {.dimension = ParallelDimension::Pipeline, .kind = kind, .bytes = bytes, .peer_chunk = peer, .tag = tag};
  }

  /// The stage's parameters: its layers' tensors, split over the tensor group (a MoE layer's
  /// experts also over the expert group), each produced by the last micro-batch's last backward op
  /// of its layer.
  void add_tensors() {
    std::vector<bool> mine(layers_.size(), false);
    for (int k = 0; k < v_; ++k) {
      for (int l : chunks_[static_cast<size_t>(k * p_ + stage_)]) mine[static_cast<size_t>(l)] = true;
    }
    for (size_t l = 0; l < layers_.size(); ++l) {
      if (!mine[l]) continue;
      for (int t : layers_[l].tensors) {
        workload::Tensor tensor = w_.tensors[static_cast<size_t>(t)];
        const int expert = expert_of_tensor(tensor.name);
        // Expert parallelism: the rank holds experts / e of each MoE layer's experts.
        if (expert >= 0 && e_ > 1 && expert >= w_.facts.transformer->experts / e_) continue;
        expert_tensor_.push_back(expert >= 0 && e_ > 1);
        // An expert's weights split over its expert-tensor group, the rest over the tensor group
        // but for those every tensor rank holds whole (whole_on_tensor_ranks).
        const bool whole = !expert_tensor_.back() && whole_on_tensor_ranks(tensor.name);
        whole_tensor_.push_back(whole);
        tensor.bytes /= expert_tensor_.back() ? etp_ : (whole ? 1 : t_);
        tensor.producer = last_of_layer_[l];
        tensor.consumers = {first_of_layer_[l]};
        program_.parameters += tensor.bytes / element_bytes(w_);
        program_.ops.tensors.push_back(std::move(tensor));
      }
    }
  }

  /// The gradient reduction over the stage's gradient group and the optimizer step. DDP reduces
  /// its gradient buckets (training.allreduce.bucket_size) as they fill; the distributed
  /// optimizer (fsdp, sharding optimizer: ZeRO-1) reduce-scatters FSDP's units (training.fsdp.unit
  /// blocks each) in backward order and gathers them in forward order after the optimizer step.
  /// Under expert parallelism the experts' gradients go over their expert-data group (t c d / (e ETP)
  /// ranks) instead, in buckets of their own.
  void add_data_parallel() {
    const int group = shard_;  // the data group: d x c, or hybrid's shard group
    const int expert_group = layout_.size(ParallelDimension::ExpertData);
    const bool distributed = scheme_.scheme == Scheme::Fsdp;
    std::vector<int> reductions;
    // Updated parameters gathered after the optimizer step (ZeRO-1), forward order; in fp8 with
    // fp8_all_gather their fp8 copies (Megatron-LM's --fp8-param-gather).
    std::vector<std::pair<ParallelDimension, double>> gathers;
    const double gathered = gathered_share(w_, scheme_.fsdp);
    auto reduce = [&](ParallelDimension dimension, const std::vector<int>& tensors, double bytes) {
      std::vector<int> deps;
      for (int t : tensors) deps.push_back(program_.ops.tensors[static_cast<size_t>(t)].producer);
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      reductions.push_back(add_comm(named("{} {} {}", to_string(dimension),
                                          distributed ? "reduce-scatter" : "all-reduce", reductions.size()),
                                    OpKind::Other,
                                    {.dimension = dimension,
                                     .kind = distributed ? CommKind::ReduceScatter : CommKind::AllReduce,
                                     .bytes = bytes,
                                     .stream = kReduceStream},
                                    deps, kNone));
    };
    // Tensors held whole on every tensor rank and computed on its own tokens under sequence
    // parallelism: their gradients all-reduced over the tensor group once a step (Megatron-LM's
    // finalize_model_grads), beside the data-parallel reduction.
    if (t_ > 1 && sequence_) {
      std::vector<int> whole;
      double bytes = 0;
      for (int t = 0; t < static_cast<int>(program_.ops.tensors.size()); ++t) {
        if (!whole_tensor_[static_cast<size_t>(t)]) continue;
        whole.push_back(t);
        bytes += program_.ops.tensors[static_cast<size_t>(t)].bytes * reduced_;
      }
      if (!whole.empty()) {
        std::vector<int> deps;
        for (int t : whole) deps.push_back(program_.ops.tensors[static_cast<size_t>(t)].producer);
        std::sort(deps.begin(), deps.end());
        deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
        reductions.push_back(add_comm(named("tp all-reduce of whole tensors' gradients"), OpKind::Other,
                                      {.dimension = ParallelDimension::Tensor,
                                       .kind = CommKind::AllReduce,
                                       .bytes = bytes,
                                       .stream = kReduceStream},
                                      deps, kNone));
      }
    }
    std::vector<int> dense, experts;
    double dense_parameters = 0, expert_parameters = 0;
    for (int t = 0; t < static_cast<int>(program_.ops.tensors.size()); ++t) {
      const bool expert = expert_tensor_[static_cast<size_t>(t)];
      (expert ? experts : dense).push_back(t);
      (expert ? expert_parameters : dense_parameters) +=
          program_.ops.tensors[static_cast<size_t>(t)].bytes / element_bytes(w_);
    }
    // make_buckets over a subset of the stage's tensors (all of them: make_buckets itself).
    auto buckets_of = [&](const std::vector<int>& subset) {
      if (subset.size() == program_.ops.tensors.size()) {
        return workload::make_buckets(program_.ops, scheme_.allreduce.bucket_bytes, reduced_);
      }
      workload::Workload view;
      for (int t : subset) view.tensors.push_back(program_.ops.tensors[static_cast<size_t>(t)]);
      std::vector<workload::Bucket> buckets =
          workload::make_buckets(view, scheme_.allreduce.bucket_bytes, reduced_);
      for (workload::Bucket& b : buckets) {
        for (int& t : b.tensors) t = subset[static_cast<size_t>(t)];
      }
      return buckets;
    };
    if (reduce_every_micro_batch_) {
      reductions = reductions_;  // emitted with each backward pass
    } else if (group > 1 && distributed) {
      std::vector<FsdpUnit> units = fsdp_units(program_.ops, scheme_.fsdp.unit_blocks);
      for (FsdpUnit& unit : units) {  // the experts' tensors are reduced apart
        if (experts.empty()) break;
        std::erase_if(unit.tensors, [&](int t) { return expert_tensor_[static_cast<size_t>(t)]; });
        unit.bytes = 0;
        for (int t : unit.tensors) unit.bytes += program_.ops.tensors[static_cast<size_t>(t)].bytes;
      }
      for (int u : fsdp_backward_order(units)) {
        const FsdpUnit& unit = units[static_cast<size_t>(u)];
        if (!unit.tensors.empty()) reduce(ParallelDimension::Data, unit.tensors, unit.bytes * reduced_);
      }
      for (const FsdpUnit& unit : units) {
        if (!unit.tensors.empty()) gathers.emplace_back(ParallelDimension::Data, unit.bytes * gathered);
      }
    } else if (group > 1) {
      for (const workload::Bucket& bucket : buckets_of(dense))
        reduce(ParallelDimension::Data, bucket.tensors, bucket.bytes);
    }
    if (!experts.empty() && expert_group > 1 && !reduce_every_micro_batch_) {
      const std::vector<workload::Bucket> buckets = buckets_of(experts);
      for (const workload::Bucket& bucket : buckets)
        reduce(ParallelDimension::ExpertData, bucket.tensors, bucket.bytes);
      if (distributed) {
        for (auto b = buckets.rbegin(); b != buckets.rend(); ++b)
          gathers.emplace_back(ParallelDimension::ExpertData, b->bytes / reduced_ * gathered);
      }
    }
    // The optimizer updates the rank's share: all of the stage's parameters, or 1 / (d c) of them
    // (the experts' 1 / (t c d / (e ETP))) with the distributed optimizer (memory-bound, as costs.hpp's
    // optimizer_step_time).
    const double updated = distributed
                               ? 1.0 / group * dense_parameters + 1.0 / expert_group * expert_parameters
                               : dense_parameters + expert_parameters;
    const double seconds =
        spec_.gpu_memory_bw > 0 && !w_.optimizer_in_ops
            ? updated * optimizer_bytes_per_parameter(scheme_.optimizer) / spec_.gpu_memory_bw
            : 0.0;
    int optimizer = kNone;
    if (seconds > 0) {
      std::vector<int> deps = reductions;
      // After the stage's last compute op too, when there is no reduction.
      if (deps.empty()) deps.push_back(last_compute());
      optimizer = add_compute("optimizer step", OpKind::Other, seconds, deps, kNone);
    }
    for (size_t u = 0; u < gathers.size(); ++u) {
      add_comm(named("{} all-gather {}", to_string(gathers[u].first), u), OpKind::Other,
               {.dimension = gathers[u].first,
                .kind = CommKind::AllGather,
                .bytes = gathers[u].second,
                .stream = kGatherStream},
               optimizer != kNone ? after(optimizer) : reductions, kNone);
    }
  }

  [[nodiscard]] int last_compute() const {
    for (int op = static_cast<int>(program_.ops.ops.size()) - 1; op >= 0; --op) {
      if (program_.comm_of_op[static_cast<size_t>(op)] == kNone) return op;
    }
    return kNone;
  }

  const bool names_;
  const Workload& w_;
  const cluster::ClusterSpec& spec_;
  const SchemeConfig& scheme_;
  const RankLayout& layout_;
  const int stage_;
  const std::vector<std::vector<int>>& chunks_;
  const std::vector<LayerInfo>& layers_;  // the workload's, shared by every stage's builder
  const int t_, c_, p_, v_, m_;
  const int e_;          // expert-parallel degree
  const int etp_;        // expert-tensor degree (each expert's weights split over etp_ ranks)
  const bool sequence_;  // sequence parallelism in effect
  const bool scatter_gather_;  // training.pipeline.scatter_gather in effect (t > 1, no sequence parallelism)
  const bool split_;     // layers split over a tensor or context group
  const int shard_;      // ranks of a data group: d x c, or hybrid sharding's shard group
  const int replicas_;   // hybrid sharding's replicas of each shard (1 otherwise)
  const double reduced_;    // of a tensor's bytes its gradient's reductions move (reduced_share)
  const int expert_shard_;  // ranks of an expert-data group (t c d / (e ETP); hybrid: t s / (e ETP))
  double activation_ = 0;
  double expert_share_ = 0;          // of a MoE layer's FLOPs in its experts (0: dense)
  std::vector<double> busiest_;        // block -> the busiest expert GPU's tokens over the mean
  std::vector<double> load_variants_;  // their distinct values: the all-to-alls' plans
  std::vector<bool> expert_tensor_;  // program tensor -> an expert's, reduced over the expert-data group
  std::vector<bool> whole_tensor_;   // program tensor -> held whole on every tensor rank
  std::vector<std::vector<WeightGradient>> deferred_;  // zero_bubble: micro-batch -> its W passes
  // Sharded data parallelism (FSDP full and grad_op): its units and what it does with them.
  static constexpr int kGatherStream = 0, kReduceStream = 1;
  const std::vector<FsdpUnit>& units_;  // the workload's FSDP units, likewise
  std::vector<int> unit_of_layer_;
  std::vector<std::pair<double, double>> unit_bytes_;  // unit -> (dense, expert) bytes on this rank
  bool gather_forward_ = false, gather_backward_ = false, reduce_every_micro_batch_ = false;
  std::vector<int> reductions_;   // FSDP's reduce-scatters, all micro-batches
  std::vector<int> extra_deps_;   // the next op's dependencies besides those it is given
  ProgramPass pass_ = ProgramPass::Forward;  // of the ops being added
  int micro_batch_ = 0;
  int chunk_ = 0;
  std::vector<int> last_of_layer_;   // layer -> the last micro-batch's last backward op
  std::vector<int> first_of_layer_;  // layer -> the first micro-batch's first forward op
  StageProgram program_;
};

}  // namespace

std::vector<StageProgram> build_stage_programs(const Workload& w, const cluster::ClusterSpec& spec,
                                               const SchemeConfig& scheme, const RankLayout& layout,
                                               bool names) {
  const std::vector<std::vector<int>> chunks = chunk_layers(w, scheme);
  const std::vector<LayerInfo> layers = layers_of(w);
  // Only FSDP full, grad_op and hybrid gather and reduce by unit (the distributed optimizer by
  // bucket).
  bool by_unit = false;
  switch (scheme.scheme) {
    case Scheme::Fsdp:
      by_unit = scheme.fsdp.sharding != FsdpSharding::Optimizer;
      break;
    case Scheme::AllReduce:
    case Scheme::ParameterServer:
      break;
  }
  const std::vector<FsdpUnit> units = by_unit ? fsdp_units(w, scheme.fsdp.unit_blocks) : std::vector<FsdpUnit>{};
  std::vector<StageProgram> programs;
  programs.reserve(static_cast<size_t>(scheme.parallel.pipeline));
  for (int s = 0; s < scheme.parallel.pipeline; ++s) {
    const size_t expected =
        programs.empty() ? 0 : programs.back().ops.ops.size() + programs.back().ops.ops.size() / 8;
    programs.push_back(
        ProgramBuilder(w, spec, scheme, layout, s, chunks, layers, units, names).build(expected));
  }
  return programs;
}

std::vector<double> expert_load_variants(const Workload& w, const ParallelConfig& parallel) {
  std::vector<double> loads = busiest_expert_gpu_by_block(w, parallel);
  std::sort(loads.begin(), loads.end());
  loads.erase(std::unique(loads.begin(), loads.end()), loads.end());
  return loads;
}

int expert_of_tensor(const std::string& name) {
  constexpr std::string_view kMarker = ".experts.";
  const size_t at = name.find(kMarker);
  if (at == std::string::npos) return -1;
  size_t i = at + kMarker.size();
  if (i >= name.size() || name[i] < '0' || name[i] > '9') return -1;
  int k = 0;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && k < (1 << 24); ++i)
    k = 10 * k + (name[i] - '0');
  return k;
}

bool whole_on_tensor_ranks(const std::string& name) {
  for (std::string_view part :
       {".q_a_proj.", ".kv_a_proj_with_mqa.", ".q_a_layernorm.", ".kv_a_layernorm."}) {
    if (name.find(part) != std::string::npos) return true;
  }
  return false;
}

const char* to_string(CommKind kind) {
  return name_c_str(kind);
}

}  // namespace stepcast::scheme
