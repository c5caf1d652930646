// Every real trace in ../shared/data/traces, checked against step_summary.csv and
// collectives_summary.csv (computed there independently of stepcast). Skipped, saying so, when
// the folder is absent (a fresh clone); CI has it.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "stepcast/detail/profile/kineto.hpp"
#include "stepcast/detail/profile/trace_summary.hpp"

namespace {
namespace kineto_shared_data_test {  // this file's own names: test files are compiled several to a unit

namespace fs = std::filesystem;
using stepcast::profile::TraceSummary;

const fs::path kTraces = fs::path(STEPCAST_SHARED_DATA) / "traces";

#define SKIP_WITHOUT_SHARED_DATA()                                                  \
  if (!fs::is_directory(kTraces)) {                                                 \
    GTEST_SKIP() << "skipped: shared trace data not found at " << kTraces.string()  \
                 << " (it lives next to the project as ../shared/data; CI has it)"; \
  }

/// Rows of a CSV with a header, '#' comment lines skipped; fields may be double-quoted.
std::vector<std::map<std::string, std::string>> read_csv(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> header;
  std::vector<std::map<std::string, std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    std::string cur;
    bool quoted = false;
    for (char c : line) {
      if (c == '"') {
        quoted = !quoted;
      } else if (c == ',' && !quoted) {
        fields.push_back(cur);
        cur.clear();
      } else if (c != '\r') {
        cur += c;
      }
    }
    fields.push_back(cur);
    if (header.empty()) {
      header = fields;
      continue;
    }
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size() && i < fields.size(); ++i) row[header[i]] = fields[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

/// Summaries of every trace, read once for all tests (about 2 s in Release).
const std::map<std::string, TraceSummary>& summaries() {
  static const std::map<std::string, TraceSummary> all = [] {
    std::map<std::string, TraceSummary> out;
    for (const auto& entry : fs::directory_iterator(kTraces)) {
      const std::string name = entry.path().filename().string();
      if (name.ends_with(".json.gz") || name.ends_with(".json")) {
        out.emplace(name, stepcast::profile::summarize_kineto_file(entry.path().string()));
      }
    }
    return out;
  }();
  return all;
}

bool within(double actual, double expected, double relative, double absolute = 0) {
  return std::abs(actual - expected) <= std::max(relative * std::abs(expected), absolute);
}

TEST(KinetoSharedData, EveryTraceParsesWithStepsAndMetadata) {
  SKIP_WITHOUT_SHARED_DATA();
  const auto& all = summaries();
  ASSERT_GE(all.size(), 7u);
  for (const auto& [name, s] : all) {
    SCOPED_TRACE(name);
    EXPECT_EQ(s.metadata.framework, "pytorch");
    EXPECT_FALSE(s.metadata.devices.empty());
    EXPECT_FALSE(s.devices_used.empty());
    EXPECT_GE(s.steps.size(), 3u);
    EXPECT_GE(s.step_time.count, 2);
    EXPECT_EQ(s.num_warnings, 0u);
    for (const auto& st : s.steps) {
      EXPECT_GT(st.duration, 0);
      EXPECT_LE(st.gpu_busy, st.duration * (1 + 1e-9) + 1e-9);
      EXPECT_NEAR(st.gpu_busy, st.compute + st.communication - st.overlap, 1e-9);
      EXPECT_LE(st.overlap, std::min(st.compute, st.communication) + 1e-12);
    }
  }
}

TEST(KinetoSharedData, StepsMatchStepSummaryCsv) {
  SKIP_WITHOUT_SHARED_DATA();
  const auto rows = read_csv(kTraces / "step_summary.csv");
  ASSERT_FALSE(rows.empty());
  const auto& all = summaries();
  std::map<std::string, size_t> rows_per_trace;
  for (const auto& row : rows) {
    const std::string& file = row.at("trace_file");
    SCOPED_TRACE(file + " " + row.at("step"));
    ++rows_per_trace[file];
    auto it = all.find(file);
    ASSERT_NE(it, all.end()) << "trace not read";
    const TraceSummary& s = it->second;
    EXPECT_EQ(std::to_string(s.metadata.world_size.value_or(-1)), row.at("world_size"));
    EXPECT_EQ(std::to_string(s.metadata.rank.value_or(-1)), row.at("rank"));
    ASSERT_FALSE(s.metadata.devices.empty());
    EXPECT_EQ(s.metadata.devices[0].name, row.at("gpu"));
    const stepcast::profile::StepSummary* step = nullptr;
    for (const auto& st : s.steps) {
      if (st.name == row.at("step")) step = &st;
    }
    ASSERT_NE(step, nullptr) << "step not found";
    const double step_ms = std::stod(row.at("step_ms"));
    const double comp_ms = std::stod(row.at("gpu_comp_ms"));
    const double nccl_ms = std::stod(row.at("nccl_ms"));
    EXPECT_TRUE(within(step->duration * 1e3, step_ms, 1e-3)) << step->duration * 1e3 << " vs " << step_ms;
    EXPECT_EQ(step->num_kernels, std::stoi(row.at("n_kernels")));
    EXPECT_TRUE(within(step->kernel_compute_sum * 1e3, comp_ms, 5e-3)) << step->kernel_compute_sum * 1e3;
    // The CSV rounds to 1 us; allow that on steps without NCCL.
    EXPECT_TRUE(within(step->nccl_kernel_sum * 1e3, nccl_ms, 5e-3, 1e-3)) << step->nccl_kernel_sum * 1e3;
  }
  for (const auto& [file, count] : rows_per_trace) {
    EXPECT_EQ(all.at(file).steps.size(), count) << file << ": steps found vs rows in the CSV";
  }
}

TEST(KinetoSharedData, CollectivesMatchCollectivesSummaryCsv) {
  SKIP_WITHOUT_SHARED_DATA();
  const auto rows = read_csv(kTraces / "collectives_summary.csv");
  ASSERT_FALSE(rows.empty());
  std::map<std::string, std::vector<const std::map<std::string, std::string>*>> by_file;
  for (const auto& row : rows) by_file[row.at("trace_file")].push_back(&row);
  for (const auto& [file, expected] : by_file) {
    SCOPED_TRACE(file);
    const TraceSummary& s = summaries().at(file);
    ASSERT_EQ(s.collectives.size(), expected.size());
    EXPECT_EQ(s.metadata.nccl_version, expected[0]->at("nccl_version"));
    // Both lists are in kernel start order.
    for (size_t i = 0; i < expected.size(); ++i) {
      const auto& row = *expected[i];
      const auto& c = s.collectives[i];
      SCOPED_TRACE("collective " + std::to_string(i));
      EXPECT_EQ(c.step, row.at("step"));
      EXPECT_EQ(c.collective, row.at("collective"));
      EXPECT_EQ(c.dtype, row.at("dtype"));
      EXPECT_EQ(c.nelems, std::stoll(row.at("nelems")));
      EXPECT_EQ(c.bytes, std::stod(row.at("bytes")));
      EXPECT_EQ(std::to_string(c.group_size), row.at("group_size"));
      EXPECT_EQ(c.kernel_name, row.at("kernel_name"));
      EXPECT_NEAR(c.duration * 1e6, std::stod(row.at("kernel_dur_us")), 1e-3);
    }
  }
}

TEST(KinetoSharedData, ProfilerWindowWarmUpStepsAreNotSteady) {
  SKIP_WITHOUT_SHARED_DATA();
  // resnet50_ddp_1xV100: the GPU drains earlier work during steps 101 and 102 (285 and 624
  // kernels in their windows against 870): both reported, the steady mean is steps 103..105.
  const TraceSummary& s = summaries().at("resnet50_ddp_1xV100_worldsize1_rank0.json.gz");
  ASSERT_EQ(s.steps.size(), 5u);
  EXPECT_FALSE(s.steps[0].steady);
  EXPECT_FALSE(s.steps[1].steady);
  for (size_t i = 2; i < 5; ++i) EXPECT_TRUE(s.steps[i].steady) << s.steps[i].name;
  EXPECT_NEAR(s.step_time.mean * 1e3, (95.697 + 95.551 + 95.699) / 3, 0.01);
  // All 5 launched the same 870 kernels: the window, not the program, differs.
  for (const auto& st : s.steps) EXPECT_EQ(st.num_kernels_launched, 870) << st.name;
  // resnet50_ddp_2xA100: all three steps are steady.
  const TraceSummary& d = summaries().at("resnet50_ddp_2xA100_rank0_nccl_data.json.gz");
  EXPECT_EQ(d.step_time.count, 3);
  EXPECT_NEAR(d.step_time.mean * 1e3, (222.442 + 219.727 + 224.936) / 3, 0.01);
}

}  // namespace kineto_shared_data_test
}  // namespace
