// Small Kineto traces written by the tests themselves (plain and gzipped, broken ones included),
// in a per-test temporary directory.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace stepcast_profile_test {

namespace fs = std::filesystem;

/// A fresh directory per test, removed at the end.
class TraceDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "_" + info->name();
    for (char& c : name) {
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    }
    dir_ = fs::path(::testing::TempDir()) / ("stepcast_profile_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  /// Writes `text` as a plain file; returns its path.
  std::string plain(const std::string& name, std::string_view text) const {
    const fs::path p = dir_ / name;
    std::ofstream out(p, std::ios::binary);
    out << text;
    EXPECT_TRUE(out.good()) << "cannot write " << p;
    return p.string();
  }

  /// Writes `text` gzipped; returns its path.
  std::string gzipped(const std::string& name, std::string_view text) const {
    const fs::path p = dir_ / name;
    gzFile gz = gzopen(p.string().c_str(), "wb");
    EXPECT_NE(gz, nullptr);
    if (gz == nullptr) return p.string();
    EXPECT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
    gzclose(gz);
    return p.string();
  }

  fs::path dir_;
};

/// A small but complete Kineto trace: two ProfilerSteps of 10 ms. Step 1 runs a 2 ms compute
/// kernel and a 3 ms NCCL all-reduce starting 1 ms later on another stream (overlap 1 ms), and a
/// 1 ms memcpy; step 2 one 4 ms kernel. Times in microseconds from 1e15 (epoch-like values).
inline std::string small_trace() {
  return R"JSON({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "Test GPU \"X\"", "totalGlobalMem": 1000, "numSms": 8}],
  "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2, "nccl_version": "2.17.1"},
  "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 10, "tid": 10, "ts": 1000000000000000, "dur": 10000},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1000000000000100, "dur": 5, "args": {"correlation": 1, "External id": 11}},
  {"ph": "X", "cat": "kernel", "name": "gemm {weird} [name] \\ \" end", "pid": 0, "tid": 7, "ts": 1000000000001000, "dur": 2000, "args": {"External id": 11, "device": 0, "stream": 7, "correlation": 1}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1000000000000200, "dur": 5, "args": {"correlation": 2}},
  {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)", "pid": 0, "tid": 20, "ts": 1000000000002000, "dur": 3000,
   "args": {"device": 0, "stream": 20, "correlation": 2, "Collective name": "allreduce", "In msg nelems": 1000, "Out msg nelems": 1000, "Group size": 2, "dtype": "Half", "Process Group Ranks": "[0, 1]"}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 1000000000006000, "dur": 1000, "args": {"device": 0, "stream": 7}},
  {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 1, "pid": 10, "tid": 10, "ts": 1000000000000100},
  {"ph": "i", "cat": "something_new", "name": "marker", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 1000000000000300, "s": "t"},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#8", "pid": 10, "tid": 10, "ts": 1000000000010000, "dur": 10000},
  {"ph": "X", "cat": "kernel", "name": "relu", "pid": 0, "tid": 7, "ts": 1000000000011000.5, "dur": 4000, "args": {"device": 0, "stream": 7, "correlation": 3}}
  ],
  "traceName": "x.json",
  "baseTimeNanoseconds": 1700000000000000000
}
)JSON";
}

}  // namespace stepcast_profile_test
