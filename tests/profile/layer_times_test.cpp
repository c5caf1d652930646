// Per-layer times of a few layers carried to a whole model (profile/layer_times.hpp): the same
// measurements given as a layer table and as a marked PyTorch profiler trace give the same
// workload and the same prediction, and a model's unmeasured blocks repeat the measured ones.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "stepcast/detail/profile/layer_times.hpp"
#include "stepcast/error.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scenario/scenario.hpp"

namespace stepcast::profile {
namespace {
namespace layer_times_test {  // this file's own names: test files are compiled several to a unit

namespace fs = std::filesystem;

struct Measured {
  const char* layer;
  double forward_ms, backward_ms;
};
// Two Llama blocks of four measured layers plus embeddings and head, in ms.
const std::vector<Measured> kLayers{{"embeddings", 1, 2},
                                    {"model.layers.0.attention", 10, 20},
                                    {"model.layers.0.mlp", 12, 24},
                                    {"model.layers.1.attention", 11, 22},
                                    {"model.layers.1.mlp", 13, 26},
                                    {"head", 5, 10}};

class LayerTimesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("stepcast_layer_times_{}_{}", ::getpid(),
                                                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }

  std::string layer_table() {
    std::string csv = "layer,forward_time,backward_time,parameter_bytes\n";
    for (const Measured& m : kLayers) csv += fmt::format("{},{}ms,{}ms,0\n", m.layer, m.forward_ms, m.backward_ms);
    return write("two-blocks.csv", csv);
  }

  /// A trace of `steps` steps: each layer's forward and backward range on its thread (forward on
  /// tid 1, backward on the autograd thread, tid 2), each launching two kernels that split the
  /// layer's time 30/70 and last `scale` times the table's time in step 0 and (2 - scale) in step
  /// 1, so that only the mean over the two equals the table. The embedding's forward also launches
  /// an NCCL kernel, which is communication and must not count.
  std::string trace(int steps, double scale) {
    std::string events;
    int correlation = 1;
    double cpu = 0;
    auto add = [&](const std::string& e) { events += (events.empty() ? "" : ",\n") + e; };
    auto range = [&](const std::string& name, int tid, double ms) {
      const double start = cpu;
      add(fmt::format(R"({{"ph":"X","cat":"user_annotation","name":"{}","pid":1,"tid":{},"ts":{},"dur":{}}})", name,
                      tid, start, ms * 1000 + 20));
      for (double share : {0.3, 0.7}) {
        add(fmt::format(R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":{},"ts":{},"dur":2,"args":{{"correlation":{}}}}})",
                        tid, cpu + 1, correlation));
        add(fmt::format(R"({{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":{},"dur":{},"args":{{"correlation":{},"stream":7,"device":0}}}})",
                        cpu + 5, share * ms * 1000, correlation));
        ++correlation;
        cpu += 3;
      }
      cpu = start + ms * 1000 + 40;
    };
    for (int step = 0; step < steps; ++step) {
      const double f = step % 2 == 0 ? scale : 2 - scale;
      for (const Measured& m : kLayers) {
        if (std::string(m.layer) == "embeddings") {
          add(fmt::format(R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":2,"args":{{"correlation":{}}}}})",
                          cpu + 1, correlation));
          add(fmt::format(R"({{"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce_RING_LL_Sum_float","pid":0,"tid":9,"ts":{},"dur":500,"args":{{"correlation":{},"stream":9,"device":0}}}})",
                          cpu + 5, correlation));
          ++correlation;
        }
        range(fmt::format("stepcast:fwd:{}", m.layer), 1, m.forward_ms * f);
      }
      for (auto it = kLayers.rbegin(); it != kLayers.rend(); ++it) {
        range(fmt::format("stepcast:bwd:{}", it->layer), 2, it->backward_ms * f);
      }
    }
    return write("two-blocks.json", fmt::format(R"({{"schemaVersion":1,"traceEvents":[{}]}})", events));
  }

  std::string scenario(const std::string& layer_times) {
    return write("s.yaml", fmt::format(R"(workload:
  model: llama3-8b
  batch_per_worker: 1
  precision: bf16
  layer_times: {}
cluster:
  workers: 16
  workers_per_node: 8
  nic_bandwidth: 100Gbps
  intra_node:
    bandwidth: 450GB/s
training:
  scheme: fsdp
)",
                                       layer_times));
  }

  fs::path dir_;
};

TEST_F(LayerTimesTest, TraceRangesSumTheirKernelsAveragedOverSteps) {
  const LayerTimes t = read_layer_times(trace(2, 0.5));
  ASSERT_EQ(t.layers.size(), kLayers.size());
  for (size_t i = 0; i < kLayers.size(); ++i) {
    EXPECT_EQ(t.layers[i].layer, kLayers[i].layer);
    EXPECT_NEAR(t.layers[i].forward, kLayers[i].forward_ms * 1e-3, 1e-12) << kLayers[i].layer;
    EXPECT_NEAR(t.layers[i].backward, kLayers[i].backward_ms * 1e-3, 1e-12) << kLayers[i].layer;
  }
}

TEST_F(LayerTimesTest, TraceAndLayerTableGiveTheSameWorkloadAndPrediction) {
  const scenario::Scenario from_table = scenario::load_scenario(scenario(layer_table()));
  const workload::Workload a = scenario::build_workload(from_table);
  const scenario::Scenario from_trace = scenario::load_scenario(scenario(trace(2, 0.8)));
  const workload::Workload b = scenario::build_workload(from_trace);
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) EXPECT_NEAR(a.ops[i].duration, b.ops[i].duration, 1e-12) << a.ops[i].name;
  const predict::Result ra = predict::predict(a, from_table.cluster, from_table.scheme, from_table.options);
  const predict::Result rb = predict::predict(b, from_trace.cluster, from_trace.scheme, from_trace.options);
  EXPECT_NEAR(ra.step_time, rb.step_time, 1e-9 * ra.step_time);
  EXPECT_EQ(from_trace.workload.compute_source, scenario::ComputeSource::LayerTimes);
}

TEST_F(LayerTimesTest, UnmeasuredBlocksRepeatTheMeasuredOnes) {
  const scenario::Scenario s = scenario::load_scenario(scenario(layer_table()));
  const workload::Workload w = scenario::build_workload(s);
  // Llama 3 8B has 32 blocks: blocks 0, 2, 4, ... take block 0's times, the odd ones block 1's.
  double block0 = 0, block1 = 0, outside = 0;
  for (const Measured& m : kLayers) {
    const std::string name = m.layer;
    const double both = (m.forward_ms + m.backward_ms) * 1e-3;
    (name.find("layers.0.") != std::string::npos ? block0 : name.find("layers.1.") != std::string::npos ? block1 : outside) += both;
  }
  EXPECT_NEAR(w.step_time_alone(), outside + 16 * block0 + 16 * block1, 1e-12);
  for (const workload::Op& op : w.ops) {
    if (op.name == "fwd:model.layers.31.mlp") {
      EXPECT_NEAR(op.duration, 13e-3, 1e-15);
    }
    if (op.name == "bwd:model.layers.30.attention") {
      EXPECT_NEAR(op.duration, 20e-3, 1e-15);
    }
  }
}

TEST_F(LayerTimesTest, MissingLayerAndUnmarkedTraceAreErrorsNamingTheKey) {
  const std::string csv = write("no-head.csv",
                                "layer,forward_time,backward_time,parameter_bytes\n"
                                "embeddings,1ms,2ms,0\nmodel.layers.0.attention,1ms,2ms,0\nmodel.layers.0.mlp,1ms,2ms,0\n");
  try {
    (void)scenario::build_workload(scenario::load_scenario(scenario(csv)));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.where().key, "workload.layer_times");
    EXPECT_NE(e.message().find("'head'"), std::string::npos) << e.message();
  }
  const std::string unmarked = write("plain.json", R"({"schemaVersion":1,"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":0,"dur":5}]})");
  EXPECT_THROW((void)read_layer_times(unmarked), Error);
}

TEST_F(LayerTimesTest, LayerTimesAndAStepTimeTogetherAreAnError) {
  const std::string path = scenario(layer_table());
  EXPECT_THROW((void)scenario::load_scenario(path, {"workload.step_time=1s"}), Error);
}

}  // namespace layer_times_test
}  // namespace
}  // namespace stepcast::profile
