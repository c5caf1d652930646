// Layer table CSV: the Workload it gives, and errors naming file, line and column.
#include "stepcast/detail/profile/layer_table.hpp"

#include <gtest/gtest.h>

#include "stepcast/error.hpp"

namespace stepcast::profile {
namespace {
namespace layer_table_test {  // this file's own names: test files are compiled several to a unit

TEST(LayerTable, RowsBecomeForwardThenReverseBackwardOpsAndTensors) {
  const auto w = parse_layer_table(
      "# measured on one V100\n"
      "layer,forward_time,backward_time,parameter_bytes\n"
      "conv1, 1.5ms, 3ms, 37632\n"
      "\n"
      "pool,100us,200us,0\n"
      "\"fc, final\",0.001,0.002,8.192MB\n",
      "dir/small-net.csv");
  EXPECT_EQ(w.name, "small-net");
  ASSERT_EQ(w.ops.size(), 6u);
  EXPECT_EQ(w.ops[0].name, "fwd:conv1");
  EXPECT_DOUBLE_EQ(w.ops[0].duration, 1.5e-3);
  EXPECT_EQ(w.ops[2].name, "fwd:fc, final");
  EXPECT_EQ(w.ops[3].name, "bwd:fc, final");
  EXPECT_EQ(w.ops[3].kind, workload::OpKind::Backward);
  EXPECT_EQ(w.ops[3].layer, 2);
  EXPECT_EQ(w.ops[5].name, "bwd:conv1");
  EXPECT_DOUBLE_EQ(w.ops[5].duration, 3e-3);
  EXPECT_EQ(w.ops[5].deps, std::vector<int>{4});
  // pool has no parameters: two tensors, in layer order.
  ASSERT_EQ(w.tensors.size(), 2u);
  EXPECT_EQ(w.tensors[0].name, "conv1");
  EXPECT_DOUBLE_EQ(w.tensors[0].bytes, 37632);
  EXPECT_EQ(w.tensors[0].producer, 5);
  EXPECT_EQ(w.tensors[0].consumers, std::vector<int>{0});
  EXPECT_DOUBLE_EQ(w.tensors[1].bytes, 8.192e6);
  EXPECT_EQ(w.tensors[1].producer, 3);
  EXPECT_TRUE(workload::validate(w).empty());
  EXPECT_DOUBLE_EQ(w.compute_time(), 1.5e-3 + 3e-3 + 100e-6 + 200e-6 + 1e-3 + 2e-3);
}

TEST(LayerTable, ColumnsInAnyOrder) {
  const auto w =
      parse_layer_table("parameter_bytes,layer,backward_time,forward_time\n1MiB,a,2ms,1ms\n", "t.csv");
  ASSERT_EQ(w.ops.size(), 2u);
  EXPECT_DOUBLE_EQ(w.ops[0].duration, 1e-3);
  EXPECT_DOUBLE_EQ(w.tensors[0].bytes, 1048576);
}

std::string error_of(const std::string& text) {
  try {
    (void)parse_layer_table(text, "t.csv");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(LayerTable, ErrorsNameFileLineAndColumn) {
  const std::string header = "layer,forward_time,backward_time,parameter_bytes\n";
  EXPECT_EQ(error_of(header + "a,1ms,2ms,10\nb,1ms,-2ms,10\n").rfind("t.csv:3: backward_time:", 0), 0u)
      << error_of(header + "a,1ms,2ms,10\nb,1ms,-2ms,10\n");
  EXPECT_EQ(error_of(header + "a,fast,2ms,10\n").rfind("t.csv:2: forward_time:", 0), 0u);
  EXPECT_EQ(error_of(header + "a,1ms,2ms,lots\n").rfind("t.csv:2: parameter_bytes:", 0), 0u);
  EXPECT_EQ(error_of(header + "a,1ms,2ms\n").rfind("t.csv:2: expected 4 cells", 0), 0u);
  EXPECT_EQ(error_of(header + "a,1ms,2ms,1\na,1ms,2ms,1\n").rfind("t.csv:3: layer: duplicate layer 'a'", 0),
            0u);
  EXPECT_EQ(
      error_of("layer,forward_time,backward_time\n").rfind("t.csv:1: parameter_bytes: missing column", 0),
      0u);
  EXPECT_EQ(error_of("layer,fwd,backward_time,parameter_bytes\n").rfind("t.csv:1: fwd: unknown column", 0),
            0u);
  EXPECT_NE(error_of(header).find("no layers"), std::string::npos);
  EXPECT_NE(error_of("# nothing\n").find("empty layer table"), std::string::npos);
  EXPECT_NE(error_of(header + "\"a,1ms,2ms,1\n").find("unterminated"), std::string::npos);
}

TEST(LayerTable, ReadsTheExampleFile) {
  const auto w = read_layer_table(std::string(STEPCAST_SOURCE_DIR) + "/examples/layer-table/small-cnn.csv");
  EXPECT_EQ(w.name, "small-cnn");
  EXPECT_TRUE(workload::validate(w).empty());
  EXPECT_GT(w.parameter_bytes(), 0);
  try {
    (void)read_layer_table("/nonexistent/x.csv");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.where().file, "/nonexistent/x.csv");
  }
}

}  // namespace layer_table_test
}  // namespace
}  // namespace stepcast::profile
