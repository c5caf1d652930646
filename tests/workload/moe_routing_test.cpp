// Measured routing tables (workload.moe.routing): what a row means for the busiest GPU of an
// expert group against hand-computed loads, and every malformed table an error naming the file,
// the line and the key.
#include "stepcast/workload/moe_routing.hpp"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "stepcast/error.hpp"

namespace stepcast::workload {
namespace {
namespace moe_routing_test {  // this file's own names: test files are compiled several to a unit

// 2 blocks, 4 experts, top-2: 100 tokens a row x 2 = 200.
constexpr const char* kTable =
    "block,e0,e1,e2,e3\n"
    "# a comment\n"
    "0,50,50,50,50\n"
    "1,80,40,40,40\n";

TEST(MoeRouting, ReadsOneRowPerBlock) {
  const MoeRouting r = parse_moe_routing(kTable, "r.csv", 2, 0, 4, 2);
  EXPECT_EQ(r.blocks, (std::vector<int>{0, 1}));
  EXPECT_EQ(r.tokens[1], (std::vector<double>{80, 40, 40, 40}));
}

TEST(MoeRouting, BusiestGpuOfCountsAgainstHandComputedLoads) {
  // Equal counts: every GPU the mean.
  EXPECT_EQ(busiest_gpu_of_counts({50, 50, 50, 50}, 2, false, 0), 1.0);
  EXPECT_EQ(busiest_gpu_of_counts({50, 50, 50, 50}, 4, false, 0), 1.0);
  // 80 40 40 40 over 2 GPUs: 120 and 80 against a mean of 100.
  EXPECT_DOUBLE_EQ(busiest_gpu_of_counts({80, 40, 40, 40}, 2, false, 0), 1.2);
  // One expert a GPU: 80 against 50.
  EXPECT_DOUBLE_EQ(busiest_gpu_of_counts({80, 40, 40, 40}, 4, false, 0), 1.6);
  // Capacity 1.2 x the mean expert (50): the busiest keeps 60 of its 80.
  EXPECT_DOUBLE_EQ(busiest_gpu_of_counts({80, 40, 40, 40}, 4, false, 1.2), 1.2);
  // Balanced placement: 2 GPUs of 2 experts can pair 80 + 40 and 40 + 40? No: balanced is the
  // ideal re-placement, max(1, busiest expert / GPU mean) = max(1, 80 / 100).
  EXPECT_DOUBLE_EQ(busiest_gpu_of_counts({80, 40, 40, 40}, 2, true, 0), 1.0);
  EXPECT_DOUBLE_EQ(busiest_gpu_of_counts({80, 40, 40, 40}, 4, true, 0), 1.6);
  // No expert parallelism.
  EXPECT_EQ(busiest_gpu_of_counts({80, 40, 40, 40}, 1, false, 0), 1.0);
}

void expect_error(const std::string& text, int line, const std::string& words, int64_t blocks = 2) {
  try {
    (void)parse_moe_routing(text, "r.csv", blocks, 0, 4, 2);
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.where().file, "r.csv");
    EXPECT_EQ(e.where().line, line) << e.what();
    EXPECT_EQ(e.where().key, "workload.moe.routing");
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(MoeRouting, BadTablesNameTheFileLineAndKey) {
  expect_error("", 0, "empty");
  expect_error("block,e0,e1,e2\n", 1, "expected 5 comma-separated fields");
  expect_error("block,e0,e1,e2,e3\n0,50,50,50\n", 2, "expected 5");
  expect_error("block,e0,e1,e2,e3\n0,50,50,50,51\n1,50,50,50,50\n", 2, "not tokens x top_k");
  expect_error("block,e0,e1,e2,e3\n0,50,50,50,50\n1,60,60,60,60\n", 3, "every row counts the same");
  expect_error("block,e0,e1,e2,e3\n0,50,50,50,50\n0,50,50,50,50\n", 3, "given on line 2 already");
  expect_error("block,e0,e1,e2,e3\n0,50,50,50,50\n", 0, "no row for MoE block 1");
  expect_error("block,e0,e1,e2,e3\n2,50,50,50,50\n", 2, "MoE block's index in [0, 1]");
  expect_error("block,e0,e1,e2,e3\n0,50,-50,50,150\n", 2, "expert 1");
  expect_error("block,e0,e1,e2,e3\n0,50,5e1,50,nan\n", 2, "expert 3");
  expect_error("block,e0,e1,e2,e3\n0,50.5,49.5,50,50\n", 2, "whole number");
  expect_error("block,e0,e1,e2,e3\n0,0,0,0,0\n", 2, "not tokens x top_k");
}

TEST(MoeRouting, APatternOfMoeBlocksNeedsOneRowForEachOfThem) {
  // 4 blocks, MoE every other one (moe_layers: every 2): blocks 0 and 2 have rows, 1 and 3 none.
  TransformerShape shape{.layers = 4,
                         .hidden = 64,
                         .ffn_hidden = 256,
                         .heads = 4,
                         .kv_heads = 4,
                         .vocab = 100,
                         .experts = 4,
                         .top_k = 2,
                         .seq_len = 16};
  shape.moe_layers = BlockSet{}.set(0).set(2);
  const MoeRouting r = parse_moe_routing("block,e0,e1,e2,e3\n0,50,50,50,50\n2,80,40,40,40\n", "r.csv", shape);
  EXPECT_EQ(r.blocks, (std::vector<int>{0, 2}));
  for (const auto& [text, line, words] :
       {std::tuple{"block,e0,e1,e2,e3\n0,50,50,50,50\n1,50,50,50,50\n", 3, "MoE block's index (0, 2)"},
        std::tuple{"block,e0,e1,e2,e3\n0,50,50,50,50\n", 0, "no row for MoE block 2"}}) {
    try {
      (void)parse_moe_routing(text, "r.csv", shape);
      ADD_FAILURE() << "no error for:\n" << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.where().line, line) << e.what();
      EXPECT_EQ(e.where().key, "workload.moe.routing");
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  }
}

}  // namespace moe_routing_test
}  // namespace
}  // namespace stepcast::workload
