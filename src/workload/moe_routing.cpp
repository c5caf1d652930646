#include "stepcast/workload/moe_routing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>

#include "stepcast/detail/text_file.hpp"
#include "stepcast/error.hpp"

namespace stepcast::workload {

namespace {
constexpr const char* kKey = "workload.moe.routing";
}  // namespace

namespace {

// Blocks [first, blocks) as "[first, last]", or a pattern's MoE blocks as a list of ranges.
std::string moe_block_text(const std::vector<bool>& moe, int64_t first_moe_block, bool contiguous) {
  const auto blocks = static_cast<int64_t>(moe.size());
  if (contiguous) return fmt::format("[{}, {}]", first_moe_block, blocks - 1);
  std::string text;
  for (int64_t b = 0; b < blocks; ++b) {
    if (!moe[static_cast<size_t>(b)]) continue;
    int64_t last = b;
    while (last + 1 < blocks && moe[static_cast<size_t>(last + 1)]) ++last;
    text += (text.empty() ? "" : ", ") + (last == b ? fmt::format("{}", b) : fmt::format("{}-{}", b, last));
    b = last;
  }
  return "(" + text + ")";
}

MoeRouting parse_rows(std::string_view text, const std::string& file, const std::vector<bool>& moe,
                      int64_t first_moe_block, bool contiguous, int64_t experts, int64_t top_k) {
  const auto blocks = static_cast<int64_t>(moe.size());
  MoeRouting routing;
  routing.file = file;
  std::vector<int> line_of_block(static_cast<size_t>(std::max<int64_t>(blocks, 0)), 0);
  bool header = false;
  int line_number = 0;
  double first_sum = -1;
  int first_line = 0;
  while (const std::optional<std::string_view> line = next_table_line(text, line_number)) {
    const std::vector<std::string_view> fields = split_commas(*line);
    const SourceLocation where{file, line_number, kKey};
    if (static_cast<int64_t>(fields.size()) != experts + 1) {
      throw Error(where, fmt::format("expected {} comma-separated fields (the block, then the tokens of each of the "
                                     "{} experts), got {}",
                                     experts + 1, experts, fields.size()));
    }
    if (!header) {
      header = true;
      continue;
    }
    int block = -1;
    const std::string_view b = fields.front();
    const auto [bp, bec] = std::from_chars(b.data(), b.data() + b.size(), block);
    if (bec != std::errc() || bp != b.data() + b.size() || block < 0 || block >= blocks ||
        !moe[static_cast<size_t>(block)]) {
      throw Error(where, fmt::format("expected a MoE block's index {}{}, got '{}'", contiguous ? "in " : "",
                                     moe_block_text(moe, first_moe_block, contiguous), b));
    }
    if (line_of_block[static_cast<size_t>(block)] != 0) {
      throw Error(where, fmt::format("block {} was given on line {} already", block,
                                     line_of_block[static_cast<size_t>(block)]));
    }
    line_of_block[static_cast<size_t>(block)] = line_number;
    std::vector<double> tokens;
    for (size_t k = 1; k < fields.size(); ++k) {
      const std::string_view f = fields[k];
      double x = 0;
      const auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), x);
      if (ec != std::errc() || p != f.data() + f.size() || !std::isfinite(x) || x < 0 || x > 1e15 ||
          x != std::floor(x)) {
        throw Error(where, fmt::format("expert {}: expected a whole number of tokens in [0, 1e15], got '{}'", k - 1, f));
      }
      tokens.push_back(x);
    }
    const double sum = std::accumulate(tokens.begin(), tokens.end(), 0.0);
    if (sum <= 0 || std::fmod(sum, static_cast<double>(top_k)) != 0) {
      throw Error(where, fmt::format("the experts' tokens sum to {:g}, which is not tokens x top_k for top-{} "
                                     "routing (a positive multiple of {})",
                                     sum, top_k, top_k));
    }
    if (first_sum < 0) {
      first_sum = sum;
      first_line = line_number;
    } else if (sum != first_sum) {
      throw Error(where, fmt::format("the experts' tokens sum to {:g}, but to {:g} on line {}: every row counts the "
                                     "same tokens x top_k",
                                     sum, first_sum, first_line));
    }
    routing.blocks.push_back(block);
    routing.tokens.push_back(std::move(tokens));
  }
  if (!header) throw Error({file, 0, kKey}, "empty: expected a header and one row per MoE block");
  for (int64_t block = 0; block < blocks; ++block) {
    if (moe[static_cast<size_t>(block)] && line_of_block[static_cast<size_t>(block)] == 0) {
      if (contiguous) {
        throw Error({file, 0, kKey},
                    fmt::format("no row for MoE block {}: expected one row for each of blocks {} to {}",
                                block, first_moe_block, blocks - 1));
      }
      throw Error({file, 0, kKey},
                  fmt::format("no row for MoE block {}: expected one row for each MoE block {}", block,
                              moe_block_text(moe, first_moe_block, false)));
    }
  }
  return routing;
}

}  // namespace

MoeRouting parse_moe_routing(std::string_view text, const std::string& file, int64_t blocks,
                             int64_t first_moe_block, int64_t experts, int64_t top_k) {
  std::vector<bool> moe(static_cast<size_t>(std::max<int64_t>(blocks, 0)), false);
  for (int64_t b = std::max<int64_t>(first_moe_block, 0); b < blocks; ++b) moe[static_cast<size_t>(b)] = true;
  return parse_rows(text, file, moe, first_moe_block, true, experts, top_k);
}

MoeRouting parse_moe_routing(std::string_view text, const std::string& file, const TransformerShape& shape) {
  if (!shape.moe_layers) {
    return parse_moe_routing(text, file, shape.layers, shape.dense_layers_first, shape.experts, shape.top_k);
  }
  std::vector<bool> moe(static_cast<size_t>(std::max<int64_t>(shape.layers, 0)), false);
  for (int64_t b = 0; b < shape.layers; ++b) moe[static_cast<size_t>(b)] = shape.is_moe_block(b);
  return parse_rows(text, file, moe, 0, false, shape.experts, shape.top_k);
}

double busiest_gpu_of_counts(const std::vector<double>& tokens, int expert_parallel, bool balanced,
                             double capacity_factor) {
  const auto experts = static_cast<int>(tokens.size());
  if (expert_parallel <= 1 || experts <= 1) return 1;
  std::vector<double> kept = tokens;
  const double total = std::accumulate(tokens.begin(), tokens.end(), 0.0);
  if (capacity_factor > 0) {
    for (double& t : kept) t = std::min(t, capacity_factor * total / experts);
  }
  // Over the mean of balanced routing, which the stage programs' expert time is of.
  const double mean = total / expert_parallel;
  if (!(mean > 0)) return 1;
  // Never below the mean: dropped tokens are not taken to speed the group up.
  if (balanced) return std::max(1.0, *std::max_element(kept.begin(), kept.end()) / mean);
  const int per_gpu = experts / expert_parallel;
  double busiest = 0;
  for (int g = 0; g < expert_parallel; ++g) {
    busiest = std::max(busiest, std::accumulate(kept.begin() + g * per_gpu, kept.begin() + (g + 1) * per_gpu, 0.0));
  }
  return std::max(1.0, busiest / mean);
}

}  // namespace stepcast::workload
