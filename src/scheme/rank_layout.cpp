#include "stepcast/scheme/rank_layout.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "stepcast/error.hpp"

namespace stepcast::scheme {

const char* to_string(ParallelDimension dimension) {
  return name_c_str(dimension);
}

int data_parallel_degree(const ParallelConfig& parallel, int workers) {
  const long long model = static_cast<long long>(parallel.tensor) * parallel.context * parallel.pipeline;
  if (model < 1 || workers < 1 || workers % model != 0) return 0;
  return static_cast<int>(workers / model);
}

int micro_batches(const ParallelConfig& parallel, int workers, int micro_batch) {
  if (parallel.global_batch <= 0) return 1;
  const int d = data_parallel_degree(parallel, workers);
  STEPCAST_ASSERT(d >= 1 && micro_batch >= 1);
  return static_cast<int>(parallel.global_batch / (static_cast<int64_t>(d) * micro_batch));
}

int interleaved_group(int configured, int p, int64_t m) {
  auto valid = [&](int64_t g) { return g >= p && g <= m && (m % g == 0 || m % g >= p); };
  if (configured > 0) return valid(configured) ? configured : 0;
  for (int64_t g = p; g <= m; ++g) {
    if (valid(g)) return static_cast<int>(g);
  }
  return 0;
}

double samples_per_worker_step(const ParallelConfig& parallel, int workers, int batch_per_worker) {
  if (!parallel.composed()) return batch_per_worker;
  const double model = static_cast<double>(parallel.tensor) * parallel.context * parallel.pipeline;
  return micro_batches(parallel, workers, batch_per_worker) * static_cast<double>(batch_per_worker) / model;
}

RankLayout::RankLayout(const ParallelConfig& parallel, int workers, int data_shard) : workers_(workers) {
  const int d = data_parallel_degree(parallel, workers);
  STEPCAST_ASSERT(d >= 1);
  const int gradient = d * parallel.context;
  shard_ = data_shard > 0 ? data_shard : gradient;
  STEPCAST_ASSERT(gradient % shard_ == 0);
  size_[static_cast<size_t>(ParallelDimension::DataReplicate)] = gradient / shard_;
  size_[static_cast<size_t>(ParallelDimension::Tensor)] = parallel.tensor;
  size_[static_cast<size_t>(ParallelDimension::Context)] = parallel.context;
  size_[static_cast<size_t>(ParallelDimension::Data)] = d;
  size_[static_cast<size_t>(ParallelDimension::Pipeline)] = parallel.pipeline;
  const int etp = parallel.expert_tensor_degree();
  const long long stage_ranks = static_cast<long long>(parallel.tensor) * parallel.context * d;
  STEPCAST_ASSERT(parallel.expert >= 1 && etp >= 1 &&
                  stage_ranks % (static_cast<long long>(parallel.expert) * etp) == 0);
  size_[static_cast<size_t>(ParallelDimension::Expert)] = parallel.expert;
  size_[static_cast<size_t>(ParallelDimension::ExpertTensor)] = etp;
  // Hybrid sharding holds the experts as TorchTitan's HSDP does: sharded over the ranks of one
  // shard group that hold the same experts, replicated over the shard groups; so an expert group
  // must sit inside one shard group's t x shard ranks of the fold.
  const long long expert_block = static_cast<long long>(parallel.expert) * etp;
  const long long shard_fold = static_cast<long long>(parallel.tensor) * shard_;
  STEPCAST_ASSERT(shard_ == gradient || shard_fold % expert_block == 0);
  size_[static_cast<size_t>(ParallelDimension::ExpertData)] = static_cast<int>(shard_fold / expert_block);
  std::array<bool, kRankDimensions> seen{};
  int stride = 1;
  for (ParallelDimension dim : parallel.order) {
    const auto i = static_cast<size_t>(dim);
    STEPCAST_ASSERT(!seen[i]);
    seen[i] = true;
    stride_[i] = stride;
    stride *= size_[i];
  }
}

RankCoordinates RankLayout::coordinates(int rank) const {
  RankCoordinates c;
  for (size_t i = 0; i < kRankDimensions; ++i) c.at[i] = rank / stride_[i] % size_[i];
  return c;
}

int RankLayout::rank(const RankCoordinates& at) const {
  int r = 0;
  for (size_t i = 0; i < kRankDimensions; ++i) r += at.at[i] * stride_[i];
  return r;
}

std::vector<int> RankLayout::expert_fold(int stage) const {
  const int t = size(ParallelDimension::Tensor);
  std::vector<std::vector<int>> by_tensor(static_cast<size_t>(t));
  RankCoordinates base;
  base.at[static_cast<size_t>(ParallelDimension::Pipeline)] = stage;
  for (int i = 0; i < t; ++i) {
    base.at[static_cast<size_t>(ParallelDimension::Tensor)] = i;
    by_tensor[static_cast<size_t>(i)] = gradient_group(rank(base));
  }
  const size_t n = by_tensor.front().size();
  std::vector<int> fold;
  fold.reserve(n * static_cast<size_t>(t));
  for (size_t j = 0; j < n; ++j) {
    for (const std::vector<int>& gradient : by_tensor) fold.push_back(gradient[j]);
  }
  return fold;
}

std::vector<int> RankLayout::expert_members(ParallelDimension d, const std::vector<int>& fold, int at) const {
  const int etp = size(ParallelDimension::ExpertTensor), e = size(ParallelDimension::Expert);
  std::vector<int> g;
  auto take = [&](int from, int count, int step) {
    for (int q = 0; q < count; ++q) g.push_back(fold[static_cast<size_t>(from + q * step)]);
  };
  switch (d) {
    case ParallelDimension::ExpertTensor:
      take(at / etp * etp, etp, 1);
      break;
    case ParallelDimension::Expert:
      take(at / (etp * e) * (etp * e) + at % etp, e, etp);
      break;
    case ParallelDimension::ExpertData: {
      // The places of the same experts in the rank's shard group's part of the fold (all of it
      // without hybrid sharding).
      const int part = size(ParallelDimension::ExpertData) * etp * e;
      take(at / part * part + at % (etp * e), part / (etp * e), etp * e);
      break;
    }
    case ParallelDimension::Tensor:
    case ParallelDimension::Context:
    case ParallelDimension::Data:
    case ParallelDimension::Pipeline:
    case ParallelDimension::DataReplicate:
      STEPCAST_ASSERT(false);
      break;
  }
  return g;
}

std::vector<int> RankLayout::group(ParallelDimension d, int rank) const {
  const auto i = static_cast<size_t>(d);
  switch (d) {
    case ParallelDimension::Tensor:
    case ParallelDimension::Context:
    case ParallelDimension::Data:
    case ParallelDimension::Pipeline:
      break;
    case ParallelDimension::DataReplicate:
      return replica_group(rank);
    case ParallelDimension::Expert:
    case ParallelDimension::ExpertData:
    case ParallelDimension::ExpertTensor: {
      const std::vector<int> fold = expert_fold(coordinates(rank)[ParallelDimension::Pipeline]);
      const auto at = static_cast<int>(std::find(fold.begin(), fold.end(), rank) - fold.begin());
      return expert_members(d, fold, at);
    }
  }
  const int base = rank - coordinates(rank).at[i] * stride_[i];
  std::vector<int> g(static_cast<size_t>(size_[i]));
  for (int k = 0; k < size_[i]; ++k) g[static_cast<size_t>(k)] = base + k * stride_[i];
  return g;
}

std::vector<std::vector<int>> RankLayout::groups(ParallelDimension d, int stage) const {
  std::vector<std::vector<int>> out;
  switch (d) {
    case ParallelDimension::Tensor:
    case ParallelDimension::Context:
    case ParallelDimension::Data:
    case ParallelDimension::Pipeline:
      break;
    case ParallelDimension::DataReplicate: {
      // Each gradient group's replica groups, one per place in its shard groups.
      for (int s = stage < 0 ? 0 : stage; s < (stage < 0 ? size(ParallelDimension::Pipeline) : stage + 1);
           ++s) {
        for (const std::vector<int>& gradient : gradient_groups(s)) {
          for (int at = 0; at < shard_; ++at) out.push_back(replica_group(gradient[static_cast<size_t>(at)]));
        }
      }
      std::sort(out.begin(), out.end());
      return out;
    }
    case ParallelDimension::Expert:
    case ParallelDimension::ExpertData:
    case ParallelDimension::ExpertTensor: {
      // Each stage's fold, cut into groups: one per member at its first place in the fold.
      const int from = stage < 0 ? 0 : stage;
      const int to = stage < 0 ? size(ParallelDimension::Pipeline) : stage + 1;
      for (int s = from; s < to; ++s) {
        const std::vector<int> fold = expert_fold(s);
        const auto n = static_cast<int>(fold.size());
        const int etp = size(ParallelDimension::ExpertTensor), block = etp * size(ParallelDimension::Expert);
        // The place in the fold of each group's first member.
        std::vector<int> firsts;
        switch (d) {
          case ParallelDimension::ExpertTensor:
            for (int at = 0; at < n; at += etp) firsts.push_back(at);
            break;
          case ParallelDimension::Expert:
            for (int at = 0; at < n; at += block) {
              for (int inner = 0; inner < etp; ++inner) firsts.push_back(at + inner);
            }
            break;
          case ParallelDimension::ExpertData:
            for (int part = 0; part < n; part += size(d) * block) {
              for (int at = 0; at < block; ++at) firsts.push_back(part + at);
            }
            break;
          case ParallelDimension::Tensor:
          case ParallelDimension::Context:
          case ParallelDimension::Data:
          case ParallelDimension::Pipeline:
          case ParallelDimension::DataReplicate:
            break;
        }
        std::vector<std::vector<int>> stage_groups;
        for (int at : firsts) stage_groups.push_back(expert_members(d, fold, at));
        std::sort(stage_groups.begin(), stage_groups.end(),
                  [](const std::vector<int>& a, const std::vector<int>& b) {
                    return *std::min_element(a.begin(), a.end()) < *std::min_element(b.begin(), b.end());
                  });
        for (std::vector<int>& g : stage_groups) out.push_back(std::move(g));
      }
      return out;
    }
  }
  // One member per group: the one at coordinate 0, its lowest rank.
  std::array<int, kRankDimensions> fixed;
  fixed.fill(-1);
  fixed[static_cast<size_t>(d)] = 0;
  if (stage >= 0 && d != ParallelDimension::Pipeline)
    fixed[static_cast<size_t>(ParallelDimension::Pipeline)] = stage;
  for (int r : ranks_where(fixed)) out.push_back(group(d, r));
  return out;
}

std::vector<int> RankLayout::ranks_where(const std::array<int, kRankDimensions>& fixed) const {
  // Every combination of the free coordinates, without visiting the other ranks.
  std::vector<int> ranks{0};
  for (size_t i = 0; i < kRankDimensions; ++i) {
    std::vector<int> next;
    const int from = fixed[i] >= 0 ? fixed[i] : 0, to = fixed[i] >= 0 ? fixed[i] + 1 : size_[i];
    next.reserve(ranks.size() * static_cast<size_t>(to - from));
    for (int r : ranks) {
      for (int x = from; x < to; ++x) next.push_back(r + x * stride_[i]);
    }
    ranks = std::move(next);
  }
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

std::vector<int> RankLayout::gradient_group(int rank) const {
  std::vector<int> g;
  for (int x : group(ParallelDimension::Context, rank)) {
    for (int y : group(ParallelDimension::Data, x)) g.push_back(y);
  }
  std::sort(g.begin(), g.end());
  return g;
}

std::vector<std::vector<int>> RankLayout::gradient_groups(int stage) const {
  std::array<int, kRankDimensions> fixed;
  fixed.fill(-1);
  fixed[static_cast<size_t>(ParallelDimension::Pipeline)] = stage;
  fixed[static_cast<size_t>(ParallelDimension::Data)] = 0;
  fixed[static_cast<size_t>(ParallelDimension::Context)] = 0;
  std::vector<std::vector<int>> out;
  for (int r : ranks_where(fixed)) out.push_back(gradient_group(r));
  return out;
}

std::vector<int> RankLayout::data_group(int rank) const {
  const std::vector<int> gradient = gradient_group(rank);
  const auto at = static_cast<size_t>(std::find(gradient.begin(), gradient.end(), rank) - gradient.begin());
  const size_t first = at / static_cast<size_t>(shard_) * static_cast<size_t>(shard_);
  return {gradient.begin() + static_cast<std::ptrdiff_t>(first),
          gradient.begin() + static_cast<std::ptrdiff_t>(first + static_cast<size_t>(shard_))};
}

std::vector<std::vector<int>> RankLayout::data_groups(int stage) const {
  std::vector<std::vector<int>> out;
  for (const std::vector<int>& gradient : gradient_groups(stage)) {
    for (size_t first = 0; first < gradient.size(); first += static_cast<size_t>(shard_)) {
      out.emplace_back(gradient.begin() + static_cast<std::ptrdiff_t>(first),
                       gradient.begin() + static_cast<std::ptrdiff_t>(first + static_cast<size_t>(shard_)));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int> RankLayout::replica_group(int rank) const {
  const std::vector<int> gradient = gradient_group(rank);
  const auto at = static_cast<size_t>(std::find(gradient.begin(), gradient.end(), rank) - gradient.begin());
  std::vector<int> g;
  for (size_t k = at % static_cast<size_t>(shard_); k < gradient.size(); k += static_cast<size_t>(shard_))
    g.push_back(gradient[k]);
  return g;
}

int hybrid_shard_ranks(const SchemeConfig& scheme, int workers, int workers_per_node) {
  if (scheme.scheme != Scheme::Fsdp || scheme.fsdp.sharding != FsdpSharding::Hybrid ||
      !scheme.parallel.composed())
    return 0;
  if (scheme.fsdp.shard_group > 0) return scheme.fsdp.shard_group;
  if (data_parallel_degree(scheme.parallel, workers) < 1) return 0;
  // Rank 0's gradient group: the ranks at tensor and pipeline coordinate 0. Those of node 0.
  // (Only the coordinates matter: the experts' fold, which may not fit yet, is left out.)
  ParallelConfig coordinates = scheme.parallel;
  coordinates.expert = 1;
  coordinates.expert_tensor = 0;
  const RankLayout layout(coordinates, workers);
  int in_node = 0;
  for (int r = 0; r < std::min(workers, workers_per_node); ++r) {
    const RankCoordinates at = layout.coordinates(r);
    if (at[ParallelDimension::Tensor] == 0 && at[ParallelDimension::Pipeline] == 0) ++in_node;
  }
  return std::max(1, in_node);
}

std::string RankLayout::describe(const ParallelConfig& parallel, int workers, int data_shard) {
  std::string s = fmt::format("tp{} cp{} pp{}", parallel.tensor, parallel.context, parallel.pipeline);
  if (parallel.virtual_stages > 1) s += fmt::format(" vp{}", parallel.virtual_stages);
  if (parallel.expert > 1) s += fmt::format(" ep{}", parallel.expert);
  if (parallel.expert_tensor_degree() != parallel.tensor)
    s += fmt::format(" etp{}", parallel.expert_tensor_degree());
  const int d = data_parallel_degree(parallel, workers);
  s += d > 0 ? fmt::format(" dp{}", d) : std::string(" dp?");
  if (d > 0 && data_shard > 0 && d * parallel.context % data_shard == 0)
    s += fmt::format(" (hsdp {}x{})", d * parallel.context / data_shard, data_shard);
  return s;
}

}  // namespace stepcast::scheme
