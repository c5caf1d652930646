// TensorFlow 1 timelines: small generated timelines, plain and gzipped, and broken ones.
#include "stepcast/detail/profile/tf_timeline.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "stepcast/error.hpp"

namespace stepcast::profile {
namespace {
namespace tf_timeline_test {  // this file's own names: test files are compiled several to a unit

namespace fs = std::filesystem;

// A worker GPU with a forward MatMul, its gradient and the optimizer update; the kernel's
// variable arrives from the PS through a _Recv (with a size) and the bias through one without.
constexpr const char* kTimeline = R"json({"traceEvents": [
 {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "Allocators"}},
 {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "/job:worker/replica:0/task:0/device:GPU:0 Compute"}},
 {"name": "process_name", "ph": "M", "pid": 2, "args": {"name": "/job:worker/replica:0/task:0/device:CPU:0 Compute"}},
 {"name": "process_name", "ph": "M", "pid": 3, "args": {"name": "/job:ps/replica:0/task:0/device:CPU:0 Compute"}},
 {"ph": "X", "cat": "Op", "name": "_Recv", "pid": 2, "tid": 0, "ts": 100, "dur": 50,
  "args": {"name": "edge_5_dense/kernel/read", "op": "_Recv", "bytes": 4000000}},
 {"ph": "X", "cat": "Op", "name": "_Recv", "pid": 2, "tid": 0, "ts": 110, "dur": 20,
  "args": {"name": "dense/bias/read/_3", "op": "_Recv"}},
 {"ph": "X", "cat": "Op", "name": "Relu", "pid": 1, "tid": 0, "ts": 160, "dur": 10,
  "args": {"name": "input/Relu", "op": "Relu", "input0": "input/x"}},
 {"ph": "X", "cat": "Op", "name": "MatMul", "pid": 1, "tid": 0, "ts": 200, "dur": 300,
  "args": {"name": "dense/MatMul", "op": "MatMul", "input0": "input/Relu", "input1": "edge_5_dense/kernel/read"}},
 {"ph": "X", "cat": "Op", "name": "BiasAdd", "pid": 1, "tid": 0, "ts": 510, "dur": 20,
  "args": {"name": "dense/BiasAdd", "op": "BiasAdd", "input0": "dense/MatMul", "input1": "dense/bias/read/_3:0"}},
 {"ph": "X", "cat": "Op", "name": "MatMul", "pid": 1, "tid": 0, "ts": 600, "dur": 600,
  "args": {"name": "gradients/dense/MatMul_grad/MatMul_1", "op": "MatMul", "input0": "input/Relu"}},
 {"ph": "X", "cat": "Op", "name": "_Send", "pid": 2, "tid": 0, "ts": 1210, "dur": 40,
  "args": {"name": "edge_9_gradients/dense/MatMul_grad/MatMul_1", "op": "_Send",
           "input0": "gradients/dense/MatMul_grad/MatMul_1"}},
 {"ph": "X", "cat": "Op", "name": "BiasAddGrad", "pid": 1, "tid": 0, "ts": 1220, "dur": 30,
  "args": {"name": "gradients/dense/BiasAdd_grad/BiasAddGrad", "op": "BiasAddGrad"}},
 {"ph": "X", "cat": "Op", "name": "ApplyGradientDescent", "pid": 3, "tid": 0, "ts": 1300, "dur": 30,
  "args": {"name": "GradientDescent/update_dense/kernel/ApplyGradientDescent", "op": "ApplyGradientDescent"}},
 {"ph": "s", "cat": "DataFlow", "name": "dense/MatMul", "pid": 1, "tid": 0, "ts": 500, "id": 0}
]})json";

fs::path write_temp(const std::string& name, const std::string& text, bool gzip = false) {
  std::string dir_name = "stepcast_tf_";
  dir_name += std::to_string(::getpid());
  const fs::path dir = fs::temp_directory_path() / dir_name;
  fs::create_directories(dir);
  const fs::path p = dir / name;
  if (gzip) {
    gzFile gz = gzopen(p.c_str(), "wb");
    gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
    gzclose(gz);
  } else {
    std::ofstream(p, std::ios::binary) << text;
  }
  return p;
}

void check_small(const workload::Workload& w) {
  EXPECT_EQ(w.lanes, std::vector<std::string>{"gpu"});
  ASSERT_EQ(w.ops.size(), 5u);  // the PS's apply and the transfers are not worker compute
  EXPECT_EQ(w.ops[0].name, "input/Relu");
  EXPECT_EQ(w.ops[1].name, "dense/MatMul");
  EXPECT_EQ(w.ops[1].kind, workload::OpKind::Forward);
  EXPECT_DOUBLE_EQ(w.ops[1].duration, 300e-6);
  EXPECT_EQ(w.ops[1].deps, std::vector<int>{0});
  EXPECT_EQ(w.ops[3].kind, workload::OpKind::Backward);
  ASSERT_EQ(w.tensors.size(), 2u);
  EXPECT_EQ(w.tensors[0].name, "dense/kernel");
  EXPECT_DOUBLE_EQ(w.tensors[0].bytes, 4e6);
  EXPECT_EQ(w.tensors[0].consumers, std::vector<int>{1});  // by input name, not the next op (Relu)
  // TF names gradients after ops, not variables: this _Send does not name dense/kernel, so the
  // gradient counts as ready after the last backward op.
  EXPECT_EQ(w.tensors[0].producer, 4);
  EXPECT_EQ(w.tensors[1].name, "dense/bias");
  EXPECT_DOUBLE_EQ(w.tensors[1].bytes, 0);
  EXPECT_EQ(w.tensors[1].consumers, std::vector<int>{2});
  EXPECT_EQ(w.tensors[1].producer, 4);
  EXPECT_TRUE(workload::validate(w).empty());
}

TEST(TfTimeline, ComputeOpsAndParameterReadsOfTheWorkerGpu) {
  std::vector<std::string> warnings;
  const fs::path p = write_temp("step.json", kTimeline);
  check_small(read_tf_timeline(p.string(), {}, &warnings));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("1 received tensors have no size"), std::string::npos);
  EXPECT_TRUE(looks_like_tf_timeline(p.string()));
}

TEST(TfTimeline, GzippedTimeline) {
  const fs::path p = write_temp("step.json.gz", kTimeline, true);
  const auto w = read_tf_timeline(p.string());
  check_small(w);
  EXPECT_EQ(w.name, "step");
  EXPECT_TRUE(looks_like_tf_timeline(p.string()));
}

TEST(TfTimeline, DeviceChoice) {
  const fs::path p = write_temp("step.json", kTimeline);
  const auto cpu = read_tf_timeline(p.string(), {.device = "ps/replica:0/task:0/device:CPU:0"});
  ASSERT_EQ(cpu.ops.size(), 1u);
  EXPECT_EQ(cpu.ops[0].kind, workload::OpKind::Other);
  EXPECT_EQ(cpu.lanes, std::vector<std::string>{"cpu"});
  try {
    (void)read_tf_timeline(p.string(), {.device = "TPU"});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no process with ops matches 'TPU'"), std::string::npos) << e.what();
  }
}

std::string error_of(const std::string& text, bool gzip = false) {
  const fs::path p = write_temp(gzip ? "bad.json.gz" : "bad.json", text, gzip);
  try {
    (void)read_tf_timeline(p.string());
  } catch (const Error& e) {
    EXPECT_EQ(e.where().file, p.string());
    return e.what();
  }
  return "no error";
}

TEST(TfTimeline, BrokenTimelines) {
  EXPECT_NE(error_of("{\"traceEvents\": [").find("invalid JSON"), std::string::npos);
  EXPECT_NE(error_of("{\"events\": []}").find("traceEvents"), std::string::npos);
  EXPECT_NE(error_of("[{\"ph\": \"X\", \"name\": \"a\", \"pid\": 1, \"ts\": 5, \"dur\": -3}]")
                .find("traceEvents[0]: negative duration"),
            std::string::npos);
  EXPECT_NE(
      error_of(
          "[{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1, \"args\": {\"name\": \"GPU:0 Compute\"}},"
          " {\"ph\": \"X\", \"name\": \"a\", \"pid\": 1, \"ts\": 5}]")
          .find("traceEvents[1]: complete event without 'dur'"),
      std::string::npos);
  EXPECT_NE(error_of("[{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1, \"args\": {\"name\": \"x\"}}]")
                .find("no compute ops"),
            std::string::npos);
  const fs::path whole = write_temp("whole.json.gz", kTimeline, true);
  std::ifstream in(whole, std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(in), {}};
  const fs::path cut = whole.parent_path() / "cut.json.gz";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  EXPECT_THROW((void)read_tf_timeline(cut.string()), Error);
  EXPECT_THROW((void)read_tf_timeline("/nonexistent/t.json"), Error);
  EXPECT_FALSE(looks_like_tf_timeline("/nonexistent/t.json"));
}

// A parameter server's messages as a TF timeline records them: receives of 16 sizes, 1 kB to 33 MB,
// each costing `overhead` + bytes / `bandwidth`, some of them (every third) also waiting for their
// sender for up to a few ms, as receives in TF timelines do.
std::string timeline_with_messages(double overhead, double bandwidth) {
  std::string events =
      R"({"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "/job:worker/replica:0/task:0/device:GPU:0 Compute"}},
 {"name": "process_name", "ph": "M", "pid": 2, "args": {"name": "/job:worker/replica:0/task:0/device:CPU:0 Compute"}},
 {"ph": "X", "cat": "Op", "name": "MatMul", "pid": 1, "tid": 0, "ts": 100000, "dur": 2000, "args": {"name": "dense/MatMul", "op": "MatMul"}},
 {"ph": "X", "cat": "Op", "name": "MatMul", "pid": 1, "tid": 0, "ts": 103000, "dur": 4000, "args": {"name": "gradients/dense/MatMul_grad/MatMul", "op": "MatMul"}})";
  int k = 0;
  for (double bytes = 1e3; bytes <= 6.4e7; bytes *= 2) {
    for (int copy = 0; copy < 3; ++copy, ++k) {
      const double wait = copy == 1 ? 1e-3 * (1 + k % 4) : 0;
      const double dur_us = (overhead + bytes / bandwidth + wait) * 1e6;
      events += fmt::format(
          R"(,
 {{"ph": "X", "cat": "Op", "name": "_Recv", "pid": 2, "tid": 0, "ts": {}, "dur": {:.6f}, "args": {{"name": "edge_{}_v{}/read", "op": "_Recv", "bytes": {:.0f}}}}})",
          10 * k, dur_us, k, k, bytes);
    }
  }
  events += R"(,
 {"ph": "X", "cat": "Op", "name": "_Recv", "pid": 2, "tid": 0, "ts": 5, "dur": 30, "args": {"name": "edge_0_unsized/read", "op": "_Recv"}})";
  return "{\"traceEvents\": [" + events + "]}";
}

TEST(TfTimeline, MessageCostIsTheLineThroughTheFastestMessageOfEachSize) {
  const fs::path p = write_temp("messages.json", timeline_with_messages(45e-6, 1.1e9));
  ASSERT_TRUE(looks_like_tf_timeline(p.string()));
  const TfTimelineSummary s = summarize_tf_timeline(p.string());
  EXPECT_EQ(s.ops, 2);
  EXPECT_NEAR(s.compute_time, 6e-3, 1e-12);
  EXPECT_NEAR(s.span, 7e-3, 1e-12);
  EXPECT_EQ(s.receives, 16 * 3 + 1);
  EXPECT_EQ(s.unsized_receives, 1);
  EXPECT_EQ(s.receive_cost.messages, 16 * 3);
  EXPECT_EQ(s.receive_cost.size_classes, 16);
  // The waiting copies are never a class's fastest: the fit is the line itself (to the
  // microsecond rounding the timeline's 6 decimals allow).
  EXPECT_NEAR(s.receive_cost.overhead, 45e-6, 1e-10);
  EXPECT_NEAR(s.receive_cost.bandwidth, 1.1e9, 1e-6 * 1.1e9);
}

TEST(TfTimeline, MessageCostFitLimits) {
  EXPECT_LT(fit_message_costs({}).overhead, 0);  // nothing to fit
  // One size class: its fastest message bounds the overhead; no bandwidth.
  const MessageCostFit one = fit_message_costs({{1100, 3e-4}, {1200, 2e-4}, {1500, 9e-4}});
  EXPECT_EQ(one.size_classes, 1);
  EXPECT_DOUBLE_EQ(one.overhead, 2e-4);
  EXPECT_EQ(one.bandwidth, 0);
  // Larger messages no slower (no size dependence): the fastest message, no bandwidth.
  const MessageCostFit flat = fit_message_costs({{1e3, 5e-4}, {1e6, 4e-4}, {1e7, 4e-4}});
  EXPECT_DOUBLE_EQ(flat.overhead, 4e-4);
  EXPECT_EQ(flat.bandwidth, 0);
  // Bad pairs are skipped, not fitted.
  const MessageCostFit skipped = fit_message_costs({{-1, 1e-4}, {1e3, std::nan("")}, {2e3, 1e-4}});
  EXPECT_EQ(skipped.messages, 1);
}

TEST(TfTimeline, KinetoTraceIsNotATfTimeline) {
  const fs::path p =
      write_temp("kineto.json",
                 R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1,)"
                 R"( "ts": 1, "dur": 2, "args": {"op": "x"}}]})");
  EXPECT_FALSE(looks_like_tf_timeline(p.string()));
}

}  // namespace tf_timeline_test
}  // namespace
}  // namespace stepcast::profile
