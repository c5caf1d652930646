// A mixture of experts' measured routing (workload.moe.routing): the tokens each expert of each
// MoE block received, as a router log gives them, and what they mean for the busiest GPU of an
// expert group. Rows are blocks, columns experts:
//
//   block,e0,e1,e2,e3,e4,e5,e6,e7      # a header; the column names are free
//   0,1024,980,1100,960,1010,990,1002,1126
//   1,...
//
// Every row counts the same tokens: each sums to tokens x top_k, the same for every row.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stepcast/workload/transformer_shape.hpp"

namespace stepcast::workload {

/// Per MoE block (its index among the decoder's blocks), the tokens each expert received.
struct MoeRouting {
  std::string file;
  std::vector<int> blocks;                   ///< the blocks the rows are for, in file order
  std::vector<std::vector<double>> tokens;   ///< row -> tokens per expert
  bool operator==(const MoeRouting&) const = default;
};

/// Reads a routing table for a decoder of `blocks` blocks whose blocks from `first_moe_block` on
/// are MoE, with `experts` experts routed top_k each. Throws Error naming the file, the line and
/// the key workload.moe.routing: a row of another width, a count that is not a number >= 0, a
/// block out of range or given twice or missing, a row whose sum is not a multiple of top_k or
/// differs from the first row's.
[[nodiscard]] MoeRouting parse_moe_routing(std::string_view text, const std::string& file, int64_t blocks,
                                           int64_t first_moe_block, int64_t experts, int64_t top_k);

/// The same for the decoder `shape`: its MoE blocks (is_moe_block, dense_layers_first or the
/// moe_layers pattern) each need one row, no other block may have one.
[[nodiscard]] MoeRouting parse_moe_routing(std::string_view text, const std::string& file,
                                           const TransformerShape& shape);

/// The busiest of `expert_parallel` GPUs' tokens over their mean for one block's counts, experts
/// placed E / e consecutive a GPU (`balanced`: re-placed, max(1, busiest expert x e / total)), each
/// expert's tokens capped at capacity_factor x the mean expert's (0: dropless); at least 1 (tokens
/// dropped are not taken to speed the group up).
[[nodiscard]] double busiest_gpu_of_counts(const std::vector<double>& tokens, int expert_parallel, bool balanced,
                                           double capacity_factor);

}  // namespace stepcast::workload
