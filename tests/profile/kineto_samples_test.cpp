// Per-step samples of a Kineto conversion on small traces the tests write: every steady step
// converted by the same rules gives each op's duration in that step; a step whose GPU work
// differs gives none and says why; a step whose CPU side differs a little is aligned op by op and
// keeps each lane's time. No shared data needed.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "profile/kineto_fixtures.hpp"
#include "stepcast/detail/profile/kineto_workload.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast_profile_test {
namespace {
namespace kineto_samples_test {  // this file's own names: test files are compiled several to a unit

using stepcast::profile::convert_kineto;
using stepcast::profile::KinetoWorkload;
using stepcast::profile::KinetoWorkloadOptions;
using stepcast::profile::read_kineto_trace;

/// One training step as the profiler records it (times in microseconds from the window start).
/// Main thread: "forward" [100, 3000) launching "conv" at 200; a backward op [3500, 6000)
/// launching "conv_bwd" at 3600; the window runs `window` us. GPU (stream 7): "conv" from 300
/// for `conv` us, "conv_bwd" from 3700 for `conv_bwd` us.
struct StepSpec {
  double window = 10000;
  double conv = 2000;
  double conv_bwd = 1500;
  bool extra_kernel = false;  // one more kernel launched by forward: other GPU work
  bool extra_cpu_op = false;  // one more top-level CPU op between forward and backward
};

std::string trace_of(const std::vector<StepSpec>& steps) {
  std::string events;
  auto add = [&](const std::string& e) { events += (events.empty() ? "  " : ",\n  ") + e; };
  double t0 = 1000000;
  int correlation = 1;
  for (size_t i = 0; i < steps.size(); ++i) {
    const StepSpec& s = steps[i];
    add(fmt::format(
        R"({{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": 10, "tid": 10, "ts": {}, "dur": {}}})",
        i + 1, t0, s.window));
    auto launch = [&](double at, const std::string& kernel, double start, double dur) {
      add(fmt::format(
          R"({{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": {}, "dur": 5, "args": {{"correlation": {}}}}})",
          t0 + at, correlation));
      add(fmt::format(
          R"({{"ph": "X", "cat": "kernel", "name": "{}", "pid": 0, "tid": 7, "ts": {}, "dur": {}, "args": {{"device": 0, "stream": 7, "correlation": {}}}}})",
          kernel, t0 + start, dur, correlation));
      ++correlation;
    };
    add(fmt::format(
        R"({{"ph": "X", "cat": "cpu_op", "name": "forward", "pid": 10, "tid": 10, "ts": {}, "dur": 2900}})",
        t0 + 100));
    launch(200, "conv", 300, s.conv);
    if (s.extra_kernel) launch(250, "relu", 300 + s.conv, 10);
    if (s.extra_cpu_op) {
      add(fmt::format(
          R"({{"ph": "X", "cat": "cpu_op", "name": "aten::zero_", "pid": 10, "tid": 10, "ts": {}, "dur": 200}})",
          t0 + 3200));
    }
    add(fmt::format(
        R"({{"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: ConvBackward0", "pid": 10, "tid": 10, "ts": {}, "dur": 2500}})",
        t0 + 3500));
    launch(3600, "conv_bwd", 3700, s.conv_bwd);
    t0 += s.window;
  }
  return "{\n  \"schemaVersion\": 1,\n  \"traceEvents\": [\n" + events + "\n  ]\n}\n";
}

/// Sample k of every op on the lane named `lane`, summed.
double lane_sample(const KinetoWorkload& k, const std::string& lane, size_t sample) {
  double total = 0;
  for (const auto& op : k.workload.ops) {
    if (k.workload.lanes[static_cast<size_t>(op.lane)] == lane) total += op.samples[sample];
  }
  return total;
}

void expect_samples(const std::vector<double>& samples, const std::vector<double>& us) {
  ASSERT_EQ(samples.size(), us.size());
  for (size_t i = 0; i < us.size(); ++i) EXPECT_NEAR(samples[i], us[i] * 1e-6, 1e-12) << i;
}

const stepcast::workload::Op& op_named(const KinetoWorkload& k, const std::string& name) {
  auto it = std::find_if(k.workload.ops.begin(), k.workload.ops.end(),
                         [&](const auto& op) { return op.name == name; });
  EXPECT_NE(it, k.workload.ops.end()) << name;
  return *it;
}

class KinetoSamples : public TraceDirTest {
 protected:
  KinetoWorkload convert(const std::vector<StepSpec>& steps, const KinetoWorkloadOptions& options = {}) {
    return convert_kineto(read_kineto_trace(plain("t.json", trace_of(steps))), options);
  }
};

TEST_F(KinetoSamples, EverySteadyStepGivesOneSampleInStepOrder) {
  // Windows 10, 11, 12, 13 ms: the median is 11.5 ms, the representative the first step closest
  // to it, ProfilerStep#2.
  const std::vector<StepSpec> steps{
      {10000, 2000, 1500}, {11000, 2100, 1600}, {12000, 2200, 1400}, {13000, 1900, 1700}};
  const KinetoWorkload k = convert(steps);
  ASSERT_EQ(stepcast::workload::validate(k.workload), "");
  EXPECT_EQ(k.step, "ProfilerStep#2");
  EXPECT_EQ(k.sampled_steps, (std::vector<std::string>{"ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3",
                                                       "ProfilerStep#4"}));
  EXPECT_TRUE(k.unmatched_steps.empty());
  EXPECT_TRUE(k.sample_notes.empty());
  ASSERT_EQ(k.workload.num_samples(), 4u);
  // The kernels' measured durations, step by step.
  expect_samples(op_named(k, "conv").samples, {2000, 2100, 2200, 1900});
  expect_samples(op_named(k, "conv_bwd").samples, {1500, 1600, 1400, 1700});
  for (const auto& op : k.workload.ops) EXPECT_EQ(op.duration, op.samples[1]) << op.name;
  for (size_t s = 0; s < steps.size(); ++s) {
    SCOPED_TRACE(s);
    // The main thread covers its window (ops and gaps) ...
    EXPECT_NEAR(lane_sample(k, "cpu 10:10", s), steps[s].window * 1e-6, 1e-9);
    // ... and replaying the sample step alone takes that window: the GPU finishes inside it.
    EXPECT_NEAR(stepcast::workload::with_sample(k.workload, s).step_time_alone(), steps[s].window * 1e-6,
                1e-9);
  }
}

TEST_F(KinetoSamples, StepWithOtherGpuWorkGivesNoSampleAndSaysWhy) {
  std::vector<StepSpec> steps(4);
  steps[2].extra_kernel = true;
  const KinetoWorkload k = convert(steps);
  ASSERT_EQ(stepcast::workload::validate(k.workload), "");
  EXPECT_EQ(k.sampled_steps,
            (std::vector<std::string>{"ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#4"}));
  ASSERT_EQ(k.unmatched_steps.size(), 1u);
  EXPECT_EQ(k.unmatched_steps[0],
            "ProfilerStep#3: lane 'gpu 0 stream 7' has 3 ops, in the representative step 2");
  EXPECT_EQ(k.workload.num_samples(), 3u);
}

TEST_F(KinetoSamples, StepWithOneMoreCpuOpIsAlignedAndKeepsTheLaneTime) {
  std::vector<StepSpec> steps{{10000, 2000, 1500}, {10000, 2100, 1600}, {10000, 2200, 1400}};
  steps[2].extra_cpu_op = true;
  // The extra op and the gap after it are 2 of the representative's 9 ops: beyond the default
  // 2%, so ProfilerStep#3 gives no sample ...
  const KinetoWorkload strict = convert(steps);
  EXPECT_EQ(strict.step, "ProfilerStep#1");
  EXPECT_EQ(strict.workload.num_samples(), 2u);
  ASSERT_EQ(strict.unmatched_steps.size(), 1u);
  EXPECT_EQ(
      strict.unmatched_steps[0].rfind("ProfilerStep#3: 2 CPU ops differ from the representative step (0 "
                                      "only there, 2 only in this step), more than 2% of its 9 ops",
                                      0),
      0u)
      << strict.unmatched_steps[0];
  // ... and within a looser bound it is aligned op by op.
  KinetoWorkloadOptions loose;
  loose.max_unaligned_fraction = 0.5;
  const KinetoWorkload k = convert(steps, loose);
  ASSERT_EQ(stepcast::workload::validate(k.workload), "");
  ASSERT_EQ(k.workload.num_samples(), 3u);
  EXPECT_TRUE(k.unmatched_steps.empty());
  ASSERT_EQ(k.sample_notes.size(), 1u);
  EXPECT_EQ(
      k.sample_notes[0].rfind("ProfilerStep#3: 0 CPU ops only in the representative step (sample 0 s), 2 "
                              "only in this step",
                              0),
      0u)
      << k.sample_notes[0];
  // ProfilerStep#3 converted alone: "aten::zero_" and the gap after it are its own ops; in the
  // sample their time went to the op before them, so the main thread still spans the window and
  // the step replays as that step does alone.
  KinetoWorkloadOptions alone;
  alone.step = "ProfilerStep#3";
  alone.step_samples = false;
  const KinetoWorkload three = convert(steps, alone);
  EXPECT_EQ(three.workload.num_samples(), 0u);
  EXPECT_EQ(three.workload.ops.size(), k.workload.ops.size() + 2);
  EXPECT_NEAR(lane_sample(k, "cpu 10:10", 2), 10e-3, 1e-9);
  EXPECT_NEAR(op_named(k, "conv").samples[2], 2200e-6, 1e-12);
  EXPECT_NEAR(stepcast::workload::with_sample(k.workload, 2).step_time_alone(),
              three.workload.step_time_alone(), 1e-9);
}

TEST_F(KinetoSamples, SamplesCanBeTurnedOff) {
  KinetoWorkloadOptions options;
  options.step_samples = false;
  const KinetoWorkload k = convert(std::vector<StepSpec>(3), options);
  EXPECT_EQ(k.workload.num_samples(), 0u);
  EXPECT_TRUE(k.sampled_steps.empty());
  EXPECT_EQ(stepcast::workload::validate(k.workload), "");
}

}  // namespace kineto_samples_test
}  // namespace
}  // namespace stepcast_profile_test
