// The synthetic Kineto trace behind examples/small-cnn-profile.yaml: the committed file is what
// scripts/make-example-trace.py writes (so it can be regenerated and reviewed), and the reader
// sees in it what the script put there: five steps, each with two NCCL all-reduce buckets that
// hold every parameter of the script's layer table once.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "stepcast/detail/profile/trace_summary.hpp"

namespace {
namespace example_trace_test {  // this file's own names: test files are compiled several to a unit

namespace fs = std::filesystem;

const fs::path kTrace = fs::path(STEPCAST_SOURCE_DIR) / "examples" / "traces" / "small-cnn-ddp-rank0.pt.trace.json";

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(ExampleTrace, CommittedFileIsWhatTheScriptWrites) {
  if (std::system("python3 --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "python3 not found";
  const fs::path out = fs::temp_directory_path() / ("stepcast-example-trace-" + std::to_string(::getpid()) + ".json");
  const std::string command =
      "python3 '" + (fs::path(STEPCAST_SOURCE_DIR) / "scripts" / "make-example-trace.py").string() + "' '" + out.string() + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const std::string written = read_all(out);
  fs::remove(out);
  EXPECT_FALSE(written.empty());
  EXPECT_TRUE(written == read_all(kTrace)) << "examples/traces is stale: rerun scripts/make-example-trace.py";
}

TEST(ExampleTrace, ReaderSeesTheScriptsStepsAndBuckets) {
  const stepcast::profile::TraceSummary s = stepcast::profile::summarize_kineto_file(kTrace.string());
  EXPECT_EQ(s.metadata.framework, "pytorch");
  EXPECT_EQ(s.num_warnings, 0u);
  ASSERT_EQ(s.steps.size(), 5u);
  // The script's eight layers: 9,408 + 147,456 + 294,912 + 589,824 + 1,179,648 + 2,359,296 +
  // 4,718,592 + 1,812,000 parameters.
  constexpr int64_t kParameters = 11'111'136;
  int64_t per_step = 0;
  for (const auto& c : s.collectives) {
    EXPECT_EQ(c.collective, "allreduce");
    EXPECT_EQ(c.group_size, 2);
    EXPECT_DOUBLE_EQ(c.bytes, 4.0 * static_cast<double>(c.nelems));  // Float
    if (c.step == s.steps.front().name) per_step += c.nelems;
  }
  EXPECT_EQ(s.collectives.size(), 2u * 5u);
  EXPECT_EQ(per_step, kParameters);
}

}  // namespace example_trace_test
}  // namespace
