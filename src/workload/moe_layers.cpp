#include "stepcast/workload/moe_layers.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <vector>

namespace stepcast::workload {

namespace {

std::string_view trim(std::string_view s, std::string_view strip) {
  const size_t first = s.find_first_not_of(strip);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(strip) - first + 1);
}

// A block index: a whole number below both the decoder's blocks and the pattern's bound.
int64_t parse_block(std::string_view text, std::string_view item, int64_t layers,
                    const SourceLocation& where) {
  int64_t block = -1;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), block);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() || block < 0) {
    throw Error(where, fmt::format("expected \"all\", a block range such as \"3-60\", a list such as [0, 2, "
                                   "\"4-9\"] or \"every N\"; '{}' is not a block index (an integer >= 0)",
                                   item));
  }
  if (block >= kMaxPatternBlocks) {
    throw Error(where, fmt::format("a pattern covers at most {} decoder blocks (0 to {}), got block {}",
                                   kMaxPatternBlocks, kMaxPatternBlocks - 1, block));
  }
  if (block >= layers) {
    throw Error(where, fmt::format("expected blocks 0 to {} (of the {} decoder blocks), got block {}",
                                   layers - 1, layers, block));
  }
  return block;
}

}  // namespace

std::optional<BlockSet> parse_moe_layers(std::string_view text, int64_t layers, const SourceLocation& where) {
  const std::string_view whole = trim(text, " \t");
  if (whole == "all") return std::nullopt;
  if (layers > kMaxPatternBlocks) {
    throw Error(where,
                fmt::format("a pattern covers at most {} decoder blocks, got {} blocks; use \"all\" or "
                            "workload.transformer.dense_layers_first",
                            kMaxPatternBlocks, layers));
  }
  BlockSet blocks;
  if (whole.starts_with("every")) {
    const std::string_view n_text = trim(whole.substr(5), " \t");
    int64_t n = 0;
    const auto [p, ec] = std::from_chars(n_text.data(), n_text.data() + n_text.size(), n);
    if (n_text.empty() || ec != std::errc() || p != n_text.data() + n_text.size() || n < 1) {
      throw Error(where,
                  fmt::format("expected \"every N\" with N an integer >= 1 (every Nth block, from block "
                              "0), got '{}'",
                              whole));
    }
    for (int64_t b = 0; b < layers; b += n) blocks.set(static_cast<size_t>(b));
    return blocks;
  }
  std::string_view rest = trim(whole, " \t");
  if (rest.starts_with('[') != rest.ends_with(']')) {
    throw Error(where, fmt::format("expected a list in brackets such as [0, 2, \"4-9\"], got '{}'", whole));
  }
  rest = trim(rest, " \t[]");
  bool any = false;
  while (!rest.empty()) {
    const size_t end = rest.find(',');
    const std::string_view raw = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
    const std::string_view item = trim(raw, " \t\"'");
    if (item.empty()) {
      throw Error(where, fmt::format("expected a block or a range between the commas of '{}'", whole));
    }
    const size_t dash = item.find('-', 1);
    if (dash == std::string_view::npos) {
      blocks.set(static_cast<size_t>(parse_block(item, item, layers, where)));
    } else {
      const int64_t first = parse_block(trim(item.substr(0, dash), " \t"), item, layers, where);
      const int64_t last = parse_block(trim(item.substr(dash + 1), " \t"), item, layers, where);
      if (last < first) {
        throw Error(where, fmt::format("expected a range first-last with first <= last, got '{}'", item));
      }
      for (int64_t b = first; b <= last; ++b) blocks.set(static_cast<size_t>(b));
    }
    any = true;
  }
  if (!any) {
    throw Error(where,
                "expected at least one block (a model without MoE blocks has workload.transformer.experts "
                "= 1)");
  }
  return blocks;
}

std::string format_moe_layers(const BlockSet& blocks) {
  std::vector<std::string> ranges;
  for (int64_t b = 0; b < kMaxPatternBlocks; ++b) {
    if (!blocks.test(static_cast<size_t>(b))) continue;
    int64_t last = b;
    while (last + 1 < kMaxPatternBlocks && blocks.test(static_cast<size_t>(last + 1))) ++last;
    ranges.push_back(last == b ? fmt::format("{}", b) : fmt::format("{}-{}", b, last));
    b = last;
  }
  return fmt::format("[{}]", fmt::join(ranges, ", "));
}

}  // namespace stepcast::workload
