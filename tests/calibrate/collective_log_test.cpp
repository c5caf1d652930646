// Readers of measured all-reduce sweeps: tiny fixtures written here, broken ones included, and
// every error must name the file and the line.
#include "stepcast/detail/calibrate/collective_log.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "expect_error.hpp"
#include "stepcast/error.hpp"

namespace stepcast::calibrate {
namespace {
namespace collective_log_test {  // this file's own names: test files are compiled several to a unit

// Shaped like a real all_reduce_perf log: banner and device lines, an NCCL INFO line without '#',
// the two header lines, 13-field rows (with `root`), the footer.
constexpr const char* kNcclLog =
    "# nThread 1 nGpus 1 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20\n"
    "#  Rank  0 Group  0 Pid   4242 on     host-a device  0 [0x04] NVIDIA H100 80GB HBM3\n"
    "host-a:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
    "#\n"
    "#                                                              out-of-place                       "
    "in-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
    "busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
    "(GB/s)\n"
    "           8             2     float     sum      -1    135.8    0.00    0.00      0    123.5    0.00   "
    " 0.00      0\n"
    "     1048576        262144     float     sum      -1    203.2    5.16    9.68      0    207.2    5.06   "
    " 9.49      0\n"
    "        4096          1024     float     sum      -1    126.9    0.03    0.06    N/A    125.6    0.03   "
    " 0.06    N/A\n"
    "# Out of bounds values : 0 OK\n"
    "# Avg bus bandwidth    : 70.742\n"
    "#\n";

TEST(NcclTestsLog, ReadsOutOfPlaceTimesSkippingCommentsAndNoise) {
  const CollectiveLog log = parse_nccl_tests_log(kNcclLog, "ar.log");
  EXPECT_EQ(log.format, LogFormat::NcclTests);
  EXPECT_EQ(log.group_size, 0);
  ASSERT_EQ(log.points.size(), 3u);
  // Sorted by size; times converted from microseconds; lines kept for messages.
  const Measurement expected[] = {{8, 135.8e-6, 8}, {4096, 126.9e-6, 10}, {1048576, 203.2e-6, 9}};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(log.points[i].bytes, expected[i].bytes);
    EXPECT_DOUBLE_EQ(log.points[i].time, expected[i].time);
    EXPECT_EQ(log.points[i].line, expected[i].line);
  }
}

TEST(NcclTestsLog, InPlaceTimesOnRequest) {
  const CollectiveLog log = parse_nccl_tests_log(kNcclLog, "ar.log", Placement::InPlace);
  ASSERT_EQ(log.points.size(), 3u);
  EXPECT_DOUBLE_EQ(log.points[0].time, 123.5e-6);
  EXPECT_DOUBLE_EQ(log.points[2].time, 207.2e-6);
}

TEST(NcclTestsLog, OlderRowsWithoutRootColumn) {
  // nccl-tests before 2.10 printed no `root` column for all_reduce_perf: 12 fields.
  const CollectiveLog log = parse_nccl_tests_log(
      "        1024           256     float     sum    147.1    0.01    0.01  0e+00    123.1    0.01    0.02 "
      " 0e+00\n",
      "old.log", Placement::InPlace);
  ASSERT_EQ(log.points.size(), 1u);
  EXPECT_DOUBLE_EQ(log.points[0].bytes, 1024);
  EXPECT_DOUBLE_EQ(log.points[0].time, 123.1e-6);
}

using stepcast::testing::expect_error;

TEST(NcclTestsLog, MalformedRowNamesFileAndLine) {
  const Error e = expect_error([] {
    static_cast<void>(parse_nccl_tests_log("# header\n  8  2  float  sum  -1  135.8  0.00\n", "bad.log"));
  });
  EXPECT_EQ(e.where().file, "bad.log");
  EXPECT_EQ(e.where().line, 2);
  EXPECT_NE(std::string(e.what()).find("bad.log:2:"), std::string::npos) << e.what();
}

TEST(NcclTestsLog, NonNumericTimeNamesTheColumn) {
  const Error e = expect_error([] {
    static_cast<void>(parse_nccl_tests_log(
        "\n\n  8  2  float  sum  -1  fast  0.00  0.00  0  123.5  0.00  0.00  0\n", "bad.log"));
  });
  EXPECT_EQ(e.where(), (SourceLocation{"bad.log", 3, "time"}));
}

TEST(NcclTestsLog, ARowWhoseSizeIsNotACountOfBytesIsAnErrorNotSkipped) {
  // It would drop a size from the fit without a word (it did); lines that are not rows of the
  // table (NCCL INFO lines, banners) are still skipped.
  for (const char* size : {"1e3", "abc", "8.5"}) {
    SCOPED_TRACE(size);
    const std::string text = std::string("host:1:1 [0] NCCL INFO Using network IB\n") + "  " + size +
                             "  2  float  sum  -1  135.8  0.00  0.00  0  123.5  0.00  0.00  0\n";
    const Error e = expect_error([&] { static_cast<void>(parse_nccl_tests_log(text, "bad.log")); });
    EXPECT_EQ(e.where(), (SourceLocation{"bad.log", 2, "size"}));
    EXPECT_NE(e.message().find(size), std::string::npos) << e.what();
  }
}

TEST(NcclTestsLog, ZeroTimeIsRejected) {
  const Error e = expect_error([] {
    static_cast<void>(parse_nccl_tests_log("  8  2  float  sum  -1  0  0  0  0  1  0  0  0\n", "z.log"));
  });
  EXPECT_EQ(e.where(), (SourceLocation{"z.log", 1, "time"}));
}

TEST(NcclTestsLog, NoDataRowsIsAnError) {
  const Error e = expect_error(
      [] { static_cast<void>(parse_nccl_tests_log("# only comments\nNCCL INFO something\n", "empty.log")); });
  EXPECT_EQ(e.where().file, "empty.log");
  EXPECT_NE(std::string(e.what()).find("no all_reduce_perf data rows"), std::string::npos) << e.what();
}

TEST(NcclTestsLog, DuplicateSizeNamesBothLines) {
  const Error e = expect_error([] {
    static_cast<void>(
        parse_nccl_tests_log("  8  2  float  sum  -1  135.8  0  0  0  123.5  0  0  0\n"
                             "  8  2  float  sum  -1  130.0  0  0  0  123.5  0  0  0\n",
                             "twice.log"));
  });
  EXPECT_EQ(e.where().line, 2);
  EXPECT_NE(std::string(e.what()).find("line 1"), std::string::npos) << e.what();
}

constexpr const char* kXlaTable =
    "# comment line\n"
    "collective,group_size,f32_elements,bytes,network_throughput_bytes_per_sec,time_us,allreduce_busbw_GBps\n"
    "all-reduce,8,256,1024,28571428,35.84,0.05\n"
    "all-reduce,8,262144,1048576,22443835616,46.72,39.28\n"
    "all-gather,8,256,1024,33023735,31.01,\n";

TEST(XlaTable, ReadsAllReduceRowsOnlyWithTimeFromThroughput) {
  const CollectiveLog log = parse_xla_table(kXlaTable, "t.csv");
  EXPECT_EQ(log.format, LogFormat::XlaTable);
  EXPECT_EQ(log.group_size, 8);
  ASSERT_EQ(log.points.size(), 2u);
  EXPECT_DOUBLE_EQ(log.points[0].bytes, 1024);
  EXPECT_DOUBLE_EQ(log.points[0].time, 1024.0 / 28571428);  // 35.84 us
  EXPECT_EQ(log.points[0].line, 3);
  EXPECT_DOUBLE_EQ(log.points[1].time, 1048576.0 / 22443835616);
}

TEST(XlaTable, TimeColumnWhenThroughputIsAbsent) {
  const CollectiveLog log = parse_xla_table("collective,bytes,time_us\nall-reduce,2048,43.55\n", "t.csv");
  ASSERT_EQ(log.points.size(), 1u);
  EXPECT_DOUBLE_EQ(log.points[0].time, 43.55e-6);
}

TEST(XlaTable, ErrorsNameFileLineAndColumn) {
  Error e = expect_error([] { static_cast<void>(parse_xla_table("bytes,time_us\n1,2\n", "h.csv")); });
  EXPECT_EQ(e.where(), (SourceLocation{"h.csv", 1, "collective"}));
  e = expect_error(
      [] { static_cast<void>(parse_xla_table("collective,bytes,time_us\nall-reduce,2048\n", "f.csv")); });
  EXPECT_EQ(e.where().file, "f.csv");
  EXPECT_EQ(e.where().line, 2);
  e = expect_error([] {
    static_cast<void>(parse_xla_table("#\ncollective,bytes,time_us\nall-reduce,2048,-1\n", "n.csv"));
  });
  EXPECT_EQ(e.where(), (SourceLocation{"n.csv", 3, "time_us"}));
  e = expect_error(
      [] { static_cast<void>(parse_xla_table("collective,bytes,time_us\nall-gather,1,2\n", "g.csv")); });
  EXPECT_NE(std::string(e.what()).find("no all-reduce data rows"), std::string::npos) << e.what();
}

TEST(CollectiveLogFile, AutoDetectsTheFormatAndNamesUnreadableFiles) {
  const auto dir = std::filesystem::path(::testing::TempDir());
  const std::string nccl = (dir / "calibrate_auto.log").string();
  const std::string xla = (dir / "calibrate_auto.csv").string();
  std::ofstream(nccl) << kNcclLog;
  std::ofstream(xla) << kXlaTable;
  EXPECT_EQ(read_collective_log(nccl).format, LogFormat::NcclTests);
  EXPECT_EQ(read_collective_log(xla).format, LogFormat::XlaTable);
  EXPECT_EQ(read_collective_log(xla).file, xla);
  const std::string missing = (dir / "calibrate_no_such_file.log").string();
  const Error e = expect_error([&] { static_cast<void>(read_collective_log(missing)); });
  EXPECT_EQ(e.where().file, missing);
  std::filesystem::remove(nccl);
  std::filesystem::remove(xla);
}

}  // namespace collective_log_test
}  // namespace
}  // namespace stepcast::calibrate
