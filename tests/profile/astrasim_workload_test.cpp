// ASTRA-sim 1.0 layer-wise workloads: mapping to the IR and errors naming file, line and field.
#include "stepcast/detail/profile/astrasim_workload.hpp"

#include <gtest/gtest.h>

#include "stepcast/error.hpp"

namespace stepcast::profile {
namespace {
namespace astrasim_workload_test {  // this file's own names: test files are compiled several to a unit

// Two layers, ticks of 1 ns: conv1 fwd 5 us, ig 6 us, wg 10 us, update 0.3 us.
constexpr const char* kTwoLayers =
    "DATA\n"
    "2\n"
    "conv1\t-1\t5000\tNONE\t0\t6000\tNONE\t0\t10000\tALLREDUCE\t37632\t300\n"
    "fc -1 800 NONE 0 800 NONE 0 1600 ALLREDUCE 8192000 90\n";

TEST(AstraSimWorkload, LayersBecomeForwardWeightGradInputGradOps) {
  std::vector<std::string> warnings;
  const auto w = parse_astrasim_workload(kTwoLayers, "wl/two.txt", {}, &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(w.name, "two");
  // fwd:conv1 fwd:fc wg:fc ig:fc wg:conv1 ig:conv1 update
  ASSERT_EQ(w.ops.size(), 7u);
  EXPECT_EQ(w.ops[2].name, "wg:fc");
  EXPECT_EQ(w.ops[4].name, "wg:conv1");
  EXPECT_DOUBLE_EQ(w.ops[0].duration, 5e-6);
  EXPECT_DOUBLE_EQ(w.ops[4].duration, 10e-6);
  EXPECT_DOUBLE_EQ(w.ops[5].duration, 6e-6);
  EXPECT_EQ(w.ops[6].name, "update");
  EXPECT_DOUBLE_EQ(w.ops[6].duration, 390e-9);
  ASSERT_EQ(w.tensors.size(), 2u);
  EXPECT_EQ(w.tensors[0].name, "conv1");
  EXPECT_DOUBLE_EQ(w.tensors[0].bytes, 37632);
  EXPECT_EQ(w.tensors[0].producer, 4);
  EXPECT_EQ(w.tensors[0].consumers, std::vector<int>{0});
  EXPECT_DOUBLE_EQ(w.tensors[1].bytes, 8192000);
  EXPECT_EQ(w.tensors[1].producer, 2);
  EXPECT_TRUE(workload::validate(w).empty());
}

TEST(AstraSimWorkload, TickUnitIsAParameter) {
  const auto w = parse_astrasim_workload(kTwoLayers, "two.txt", {.seconds_per_tick = 1e-6});
  EXPECT_DOUBLE_EQ(w.ops[0].duration, 5e-3);
  EXPECT_THROW((void)parse_astrasim_workload(kTwoLayers, "two.txt", {.seconds_per_tick = 0}), Error);
}

TEST(AstraSimWorkload, RowsWithGemmShapesAreRead) {
  // The 21-field rows of some ASTRA-sim forks: M N K after each compute time.
  const auto w = parse_astrasim_workload(
      "DATA\n1\nconv1\t-"
      "1\t13003\t12544\t147\t64\tNONE\t0\t12864\t12544\t147\t64\tNONE\t0\t32291\t12544\t147\t64\t"
      "ALLREDUCE\t37632\t3229\n",
      "r.txt");
  ASSERT_EQ(w.tensors.size(), 1u);
  EXPECT_DOUBLE_EQ(w.tensors[0].bytes, 37632);
  EXPECT_DOUBLE_EQ(w.ops[0].duration, 13003e-9);
  EXPECT_DOUBLE_EQ(w.ops[1].duration, 32291e-9);  // wg
  EXPECT_DOUBLE_EQ(w.ops[3].duration, 3229e-9);   // update
}

TEST(AstraSimWorkload, ModelParallelCommunicationIsWarnedAbout) {
  std::vector<std::string> warnings;
  const auto w = parse_astrasim_workload(
      "HYBRID_TRANSFORMER model_parallel_NPU_group: 4\n1\n"
      "attn -1 100 ALLGATHER 4096 100 REDUCESCATTER 4096 100 ALLREDUCE 1024 5\n",
      "h.txt", {}, &warnings);
  EXPECT_EQ(w.tensors.size(), 1u);
  ASSERT_EQ(warnings.size(), 3u);
  EXPECT_NE(warnings[0].find("h.txt:1: parallelism HYBRID_TRANSFORMER"), std::string::npos);
  EXPECT_NE(warnings[1].find("h.txt:3: layer attn: fwd communication ALLGATHER"), std::string::npos);
}

std::string error_of(const std::string& text) {
  try {
    (void)parse_astrasim_workload(text, "b.txt");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(AstraSimWorkload, BrokenFilesNameLineAndField) {
  EXPECT_EQ(error_of("DATA\n2\nconv1 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 10 1\n").rfind("b.txt:3: layers:", 0),
            0u)
      << error_of("DATA\n2\nconv1 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 10 1\n");
  EXPECT_EQ(
      error_of("DATA\n1\nconv1 -1 5 NONE 0 5 NONE 0 5 ALLRED 10 1\n").rfind("b.txt:3: wg_comm_type:", 0), 0u);
  EXPECT_EQ(error_of("DATA\n1\nconv1 -1 -5 NONE 0 5 NONE 0 5 ALLREDUCE 10 1\n")
                .rfind("b.txt:3: fwd_compute_time:", 0),
            0u);
  EXPECT_EQ(error_of("DATA\n1\nconv1 -1 5 NONE 0 x NONE 0 5 ALLREDUCE 10 1\n")
                .rfind("b.txt:3: ig_compute_time:", 0),
            0u);
  EXPECT_EQ(error_of("DATA\n1\nconv1 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 10\n")
                .rfind("b.txt:3: expected 12 fields", 0),
            0u);
  EXPECT_EQ(error_of("DATA\nmany\n").rfind("b.txt:2: layers:", 0), 0u);
  EXPECT_EQ(error_of("DATA\n").rfind("b.txt:2: layers:", 0), 0u);
  EXPECT_EQ(error_of("").rfind("b.txt: parallelism:", 0), 0u) << error_of("");
  EXPECT_THROW((void)read_astrasim_workload("/nonexistent.txt"), Error);
}

}  // namespace astrasim_workload_test
}  // namespace
}  // namespace stepcast::profile
