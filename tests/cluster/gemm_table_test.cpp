// The GEMM table of workload.compute: shapes: a table that is an exact roofline gives the
// roofline back, reading is monotone along each dimension, a shape beyond the grid is clamped
// (and says so), and bad tables are errors naming the file and line.
#include "stepcast/cluster/gemm_table.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "stepcast/error.hpp"

namespace stepcast::cluster {
namespace {
namespace gemm_table_test {  // this file's own names: test files are compiled several to a unit

constexpr double kPeak = 989e12;     // FLOP/s, H100 SXM bf16 dense
constexpr double kMemory = 3.35e12;  // bytes/s

double flops(int64_t m, int64_t n, int64_t k) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

/// Every combination of `axis` x `axis` x `axis`, bf16, each time given by `time`.
template <class Time>
GemmTable grid_table(const std::vector<int64_t>& axis, Time time) {
  GemmTable table{.file = "test.csv", .rows = {}};
  for (int64_t m : axis) {
    for (int64_t n : axis) {
      for (int64_t k : axis) table.rows.push_back({m, n, k, GemmDtype::BF16, time(m, n, k), 0});
    }
  }
  check_gemm_table(table);
  return table;
}

double roofline(int64_t m, int64_t n, int64_t k) { return gemm_roofline_time(m, n, k, 2, kPeak, kMemory); }

TEST(GemmTable, ExactRooflineTableReproducesTheRoofline) {
  // Grid points of a roofline with both regimes come back exactly (sizes 64 .. 16384: a 64^3
  // GEMM has an intensity of 64^3 / (3 x 64^2) = 21 FLOP/byte, far below 989 / 3.35 = 295).
  const std::vector<int64_t> axis{64, 256, 1024, 4096, 16384};
  const GemmTable table = grid_table(axis, roofline);
  for (int64_t m : axis) {
    for (int64_t n : axis) {
      for (int64_t k : axis) {
        const GemmLookup at = gemm_time(table, m, n, k, GemmDtype::BF16);
        EXPECT_NEAR(at.seconds, roofline(m, n, k), 1e-12 * roofline(m, n, k)) << m << " " << n << " " << k;
        EXPECT_FALSE(at.clamped);
      }
    }
  }
  // Where every grid point is compute-bound (sizes >= 1024: intensity >= 1024^3 / (3 x 1024^2) =
  // 341 > 295 FLOP/byte) the rate is the peak everywhere, so every shape between them, on the
  // grid or not, takes 2 m n k / peak.
  const GemmTable compute_bound = grid_table({1024, 4096, 16384}, roofline);
  for (const auto& [m, n, k] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {3000, 5000, 12000}, {1024, 14336, 4096}, {8192, 1100, 16000}, {16384, 16384, 1025}}) {
    const double expected = flops(m, n, k) / kPeak;
    EXPECT_NEAR(gemm_time(compute_bound, m, n, k, GemmDtype::BF16).seconds, expected, 1e-12 * expected);
  }
}

TEST(GemmTable, InterpolationIsMonotoneInEachDimension) {
  // A table whose times grow along each axis (a roofline plus a fixed launch cost, so neither
  // regime is linear in the logs) read at 400 points along each axis: never decreasing.
  const std::vector<int64_t> axis{128, 512, 2048, 8192, 32768};
  const GemmTable table =
      grid_table(axis, [](int64_t m, int64_t n, int64_t k) { return 5e-6 + roofline(m, n, k); });
  const std::vector<int64_t> others{128, 700, 3000, 20000, 32768};
  for (int dimension = 0; dimension < 3; ++dimension) {
    for (int64_t a : others) {
      for (int64_t b : others) {
        double previous = 0;
        for (int i = 0; i <= 400; ++i) {
          const auto x = static_cast<int64_t>(std::round(128 * std::pow(256.0, i / 400.0)));
          const int64_t m = dimension == 0 ? x : a, n = dimension == 1 ? x : (dimension == 0 ? a : b),
                        k = dimension == 2 ? x : b;
          const double t = gemm_time(table, m, n, k, GemmDtype::BF16).seconds;
          EXPECT_GE(t, previous * (1 - 1e-12)) << "dimension " << dimension << " at " << x;
          previous = t;
        }
      }
    }
  }
}

TEST(GemmTable, ShapeOutsideTheTableIsClampedAtTheEdgeRate) {
  const GemmTable table = grid_table({1024, 2048, 4096}, [](int64_t m, int64_t n, int64_t k) {
    return flops(m, n, k) / (0.5 * kPeak);  // half the peak everywhere
  });
  const GemmLookup inside = gemm_time(table, 3000, 2048, 1500, GemmDtype::BF16);
  EXPECT_FALSE(inside.clamped);
  // Twice the largest m: clamped, and it runs at the edge's rate (not at the edge's time).
  const GemmLookup beyond = gemm_time(table, 8192, 4096, 4096, GemmDtype::BF16);
  EXPECT_TRUE(beyond.clamped);
  EXPECT_NEAR(beyond.seconds, flops(8192, 4096, 4096) / (0.5 * kPeak), 1e-12 * beyond.seconds);
  // Below the smallest n: clamped, and no faster than the edge (1024^3 here): a smaller GEMM is
  // launch-bound, so holding the rate would predict 1/10 of the smallest measured time.
  const GemmLookup below = gemm_time(table, 1024, 100, 1024, GemmDtype::BF16);
  EXPECT_TRUE(below.clamped);
  const double edge = gemm_time(table, 1024, 1024, 1024, GemmDtype::BF16).seconds;
  EXPECT_NEAR(below.seconds, edge, 1e-12 * edge);
  // Below in one dimension and beyond in another: the edge's time along the first, its rate along
  // the second.
  const GemmLookup both = gemm_time(table, 100, 8192, 1024, GemmDtype::BF16);
  EXPECT_NEAR(both.seconds, flops(1024, 8192, 1024) / (0.5 * kPeak), 1e-12 * both.seconds);
}

void expect_table_error(const std::string& text, int line, const std::string& fragment) {
  try {
    (void)parse_gemm_table(text, "dir/h100-gemm.csv");
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.where().file, "dir/h100-gemm.csv") << e.what();
    EXPECT_EQ(e.where().line, line) << e.what();
    EXPECT_EQ(e.where().key, "cluster.gpu.gemm") << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(GemmTable, ReadsCommentsHeaderAndUnits) {
  const GemmTable table = parse_gemm_table(
      "# gpu: NVIDIA H100 80GB HBM3, driver 550.54, torch 2.4.0, cuda 12.4\n"
      "dtype,m,n,k,time_ms\n"
      "bf16,1024,1024,1024,0.004\n",
      "a.csv");
  ASSERT_EQ(table.rows.size(), 1u);
  EXPECT_EQ(table.rows[0].m, 1024);
  EXPECT_DOUBLE_EQ(table.rows[0].seconds, 4e-6);
  EXPECT_EQ(table.rows[0].line, 3);
  // One row is a grid of one point: every shape is clamped to it, at its rate.
  const GemmLookup at = gemm_time(table, 2048, 1024, 1024, GemmDtype::BF16);
  EXPECT_TRUE(at.clamped);
  EXPECT_NEAR(at.seconds, 8e-6, 1e-12 * 8e-6);
}

TEST(GemmTable, BadTablesNameFileAndLine) {
  const std::string header = "m,n,k,dtype,time_us\n";
  expect_table_error("", 0, "empty");
  expect_table_error("# only a comment\n", 1, "empty");
  expect_table_error(header, 1, "no GEMM rows");
  expect_table_error("m,n,k,dtype,time\n1024,1024,1024,bf16,10\n", 1, "time_us");
  expect_table_error("m,n,dtype,time_us\n", 1, "header");
  expect_table_error(header + "1024,1024,1024,int4,10\n", 2, "int4");
  expect_table_error(header + "1024,1024,1024,bf16,0\n", 2, "time");
  expect_table_error(header + "1024,1024,1024,bf16,-3\n", 2, "time");
  expect_table_error(header + "1024,1024,1024,bf16,nan\n", 2, "time");
  expect_table_error(header + "1024,abc,1024,bf16,10\n", 2, "n:");
  expect_table_error(header + "1024,0,1024,bf16,10\n", 2, "n:");
  expect_table_error(header + "1024,1024\n", 2, "fields");
  expect_table_error(header + "1024,1024,1024,bf16,10\n1024,1024,1024,bf16,11\n", 3, "line 2");
  // Two m values and one n and k but a missing combination of dtype fp16.
  expect_table_error(header + "1024,1024,1024,fp16,10\n2048,1024,1024,fp16,20\n1024,2048,1024,fp16,20\n", 0,
                     "m=2048 n=2048 k=1024 is missing");
}

}  // namespace gemm_table_test
}  // namespace
}  // namespace stepcast::cluster
