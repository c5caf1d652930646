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

double samples_per_worker_step(const ParallelConfig& parallel, int workers, int batch_per_worker) {
  if (!parallel.composed()) return batch_per_worker;
  const double model = static_cast<double>(parallel.tensor) * parallel.context * parallel.pipeline;
  return micro_batches(parallel, workers, batch_per_worker) * static_cast<double>(batch_per_worker) / model;
}

RankLayout::RankLayout(const ParallelConfig& parallel, int workers) : workers_(workers) {
  const int d = data_parallel_degree(parallel, workers);
  STEPCAST_ASSERT(d >= 1);
  size_[static_cast<size_t>(ParallelDimension::Tensor)] = parallel.tensor;
  size_[static_cast<size_t>(ParallelDimension::Context)] = parallel.context;
  size_[static_cast<size_t>(ParallelDimension::Data)] = d;
  size_[static_cast<size_t>(ParallelDimension::Pipeline)] = parallel.pipeline;
  STEPCAST_ASSERT(parallel.expert >= 1 && d * parallel.context % parallel.expert == 0);
  size_[static_cast<size_t>(ParallelDimension::Expert)] = parallel.expert;
  size_[static_cast<size_t>(ParallelDimension::ExpertData)] = d * parallel.context / parallel.expert;
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

std::vector<int> RankLayout::group(ParallelDimension d, int rank) const {
  const auto i = static_cast<size_t>(d);
  switch (d) {
    case ParallelDimension::Tensor:
    case ParallelDimension::Context:
    case ParallelDimension::Data:
    case ParallelDimension::Pipeline:
      break;
    case ParallelDimension::Expert:
    case ParallelDimension::ExpertData: {
      const std::vector<int> gradient = gradient_group(rank);
      const int e = size_[static_cast<size_t>(ParallelDimension::Expert)];
      const auto at = static_cast<int>(std::find(gradient.begin(), gradient.end(), rank) - gradient.begin());
      std::vector<int> g;
      if (d == ParallelDimension::Expert) {
        for (int k = at / e * e; k < at / e * e + e; ++k) g.push_back(gradient[static_cast<size_t>(k)]);
      } else {
        for (int k = at % e; k < static_cast<int>(gradient.size()); k += e)
          g.push_back(gradient[static_cast<size_t>(k)]);
      }
      return g;
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
    case ParallelDimension::Expert:
    case ParallelDimension::ExpertData:
      // Each stage's gradient groups, cut into expert groups or dealt into expert-data groups.
      const int e = size_[static_cast<size_t>(ParallelDimension::Expert)];
      const int from = stage < 0 ? 0 : stage;
      const int to = stage < 0 ? size(ParallelDimension::Pipeline) : stage + 1;
      for (int s = from; s < to; ++s) {
        for (const std::vector<int>& gradient : gradient_groups(s)) {
          const auto n = static_cast<int>(gradient.size());
          if (d == ParallelDimension::Expert) {
            for (int k = 0; k < n; k += e) out.emplace_back(gradient.begin() + k, gradient.begin() + k + e);
          } else {
            for (int k = 0; k < e; ++k) {
              std::vector<int>& g = out.emplace_back();
              for (int j = k; j < n; j += e) g.push_back(gradient[static_cast<size_t>(j)]);
            }
          }
        }
      }
      return out;
  }
  const auto i = static_cast<size_t>(d);
  for (int r = 0; r < workers_; ++r) {
    const RankCoordinates c = coordinates(r);
    if (c.at[i] != 0) continue;  // one member per group: the one at coordinate 0
    if (stage >= 0 && d != ParallelDimension::Pipeline && c[ParallelDimension::Pipeline] != stage) continue;
    out.push_back(group(d, r));
  }
  return out;
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
  std::vector<std::vector<int>> out;
  for (int r = 0; r < workers_; ++r) {
    const RankCoordinates c = coordinates(r);
    if (c[ParallelDimension::Pipeline] != stage || c[ParallelDimension::Data] != 0 ||
        c[ParallelDimension::Context] != 0)
      continue;
    out.push_back(gradient_group(r));
  }
  return out;
}

std::string RankLayout::describe(const ParallelConfig& parallel, int workers) {
  std::string s = fmt::format("tp{} cp{} pp{}", parallel.tensor, parallel.context, parallel.pipeline);
  if (parallel.virtual_stages > 1) s += fmt::format(" vp{}", parallel.virtual_stages);
  if (parallel.expert > 1) s += fmt::format(" ep{}", parallel.expert);
  const int d = data_parallel_degree(parallel, workers);
  s += d > 0 ? fmt::format(" dp{}", d) : std::string(" dp?");
  return s;
}

}  // namespace stepcast::scheme
