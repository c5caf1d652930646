// Which decoder blocks are mixtures of experts, as the key workload.transformer.moe_layers gives
// them: "all", a range "3-60", a list [0, 2, "4-9"] (a YAML list arrives joined by commas), or
// "every N" (blocks 0, N, 2N, ...: Megatron's moe_layer_freq, Mixtral-style interleaving). Reads
// and writes the BlockSet of transformer_shape.hpp. No dependencies beyond error.hpp.
//
//   std::optional<BlockSet> moe = parse_moe_layers("3-60", 61, where);  // blocks 3 to 60
//   std::string text = format_moe_layers(*moe);                       // "[3-60]"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "stepcast/error.hpp"
#include "stepcast/workload/transformer_shape.hpp"

namespace stepcast::workload {

/// The blocks `text` names for a decoder of `layers` blocks; std::nullopt for "all" (every block
/// from dense_layers_first on). Throws Error at `where` for text of another form, an empty list,
/// a range whose end is below its start, a block at or above `layers`, or a pattern over more
/// than kMaxPatternBlocks (1024) blocks.
[[nodiscard]] std::optional<BlockSet> parse_moe_layers(std::string_view text, int64_t layers,
                                                       const SourceLocation& where);

/// `blocks` as a list of ranges that parse_moe_layers reads back: "[0, 2, 4-9]".
[[nodiscard]] std::string format_moe_layers(const BlockSet& blocks);

}  // namespace stepcast::workload
