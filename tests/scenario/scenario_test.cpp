// Scenario parsing: defaults, units, overrides, and every class of bad input naming file, line
// and key. Scenarios are parsed from strings; one test writes a file for load_scenario.
#include "stepcast/scenario/scenario.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "expect_error.hpp"
#include "stepcast/error.hpp"
#include "stepcast/limits.hpp"
#include "stepcast/units.hpp"

namespace stepcast::scenario {
namespace {
namespace scenario_test {  // this file's own names: test files are compiled several to a unit

constexpr const char* kMinimal =
    "workload:\n"
    "  model: resnet50\n"
    "  step_time: 292ms\n";

using stepcast::testing::contains;
using stepcast::testing::expect_error;

TEST(Scenario, DefaultsApplied) {
  Scenario s = parse_scenario(kMinimal, "dir/resnet.yaml");
  EXPECT_EQ(s.name, "resnet");  // file stem
  EXPECT_EQ(s.file, "");        // parsed from text
  EXPECT_EQ(s.description, "");
  EXPECT_EQ(s.workload.model, "resnet50");
  EXPECT_EQ(s.workload.batch_per_worker, 32);
  EXPECT_DOUBLE_EQ(s.workload.step_time, 0.292);
  EXPECT_EQ(s.workload.precision, workload::Precision::FP32);
  EXPECT_DOUBLE_EQ(s.workload.backward_to_forward, 2.0);
  EXPECT_EQ(s.workload.step_samples, StepSamples::All);
  EXPECT_EQ(s.cluster.workers, 1);
  EXPECT_EQ(s.cluster.workers_per_node, 1);
  EXPECT_EQ(s.cluster.topology, cluster::Topology::Switch);
  EXPECT_DOUBLE_EQ(s.cluster.nic_bw, 1.25e9);  // 10 Gbps = 1.25e9 bytes/s
  EXPECT_DOUBLE_EQ(s.cluster.latency, 5e-6);
  EXPECT_DOUBLE_EQ(s.cluster.intra_node_bw, 12e9);
  EXPECT_DOUBLE_EQ(s.cluster.intra_node_latency, 1e-6);
  EXPECT_EQ(s.cluster.ps_nic_bw, 0);  // unset: same as the workers' NIC
  EXPECT_EQ(s.scheme.scheme, scheme::Scheme::AllReduce);
  EXPECT_EQ(s.scheme.mode, scheme::Mode::Sync);
  EXPECT_EQ(s.scheme.ps, scheme::PsConfig{});
  EXPECT_EQ(s.scheme.allreduce.algorithm, scheme::AllReduceAlgorithm::Ring);
  EXPECT_DOUBLE_EQ(s.scheme.allreduce.bucket_bytes, 25e6);
  EXPECT_EQ(s.options.predictor, predict::Predictor::Fine);
  EXPECT_EQ(s.options.warmup_steps, 2);
  EXPECT_EQ(s.options.measure_steps, 5);
  EXPECT_EQ(s.options.seed, 1u);
}

TEST(Scenario, EveryKeyParsedWithUnits) {
  Scenario s = parse_scenario(
      "name: big job\n"
      "description: ps on 8 nodes\n"
      "predictor: coarse\n"
      "seed: 42\n"
      "workload:\n"
      "  model: vgg16\n"
      "  batch_per_worker: 64\n"
      "  single_worker_throughput: 200\n"
      "  precision: fp16\n"
      "  backward_ratio: 1.5\n"
      "cluster:\n"
      "  workers: 16\n"
      "  workers_per_node: 2\n"
      "  topology: switch\n"
      "  nic_bandwidth: 25Gbps\n"
      "  link_latency: 10us\n"
      "  ps_nic_bandwidth: 1.25GB/s\n"
      "  intra_node:\n"
      "    bandwidth: 1GiB/s\n"
      "    latency: 2us\n"
      "training:\n"
      "  scheme: ps\n"
      "  mode: async\n"
      "  ps:\n"
      "    count: 4\n"
      "    partition: split\n"
      "    placement: colocated\n"
      "    order: fifo\n"
      "    apply_time: 20us\n"
      "    apply_bandwidth: 100Gbps\n"
      "  allreduce:\n"
      "    bucket_size: 1MiB\n"
      "steps:\n"
      "  warmup: 0\n"
      "  measure: 3\n",
      "x.yaml");
  EXPECT_EQ(s.name, "big job");
  EXPECT_EQ(s.description, "ps on 8 nodes");
  EXPECT_EQ(s.options.predictor, predict::Predictor::Coarse);
  EXPECT_EQ(s.options.seed, 42u);
  EXPECT_EQ(s.workload.model, "vgg16");
  EXPECT_EQ(s.workload.batch_per_worker, 64);
  EXPECT_DOUBLE_EQ(s.workload.step_time, 64.0 / 200.0);  // batch / throughput
  EXPECT_EQ(s.workload.precision, workload::Precision::FP16);
  EXPECT_DOUBLE_EQ(s.workload.backward_to_forward, 1.5);
  EXPECT_EQ(s.cluster.workers, 16);
  EXPECT_EQ(s.cluster.workers_per_node, 2);
  EXPECT_DOUBLE_EQ(s.cluster.nic_bw, 25e9 / 8);
  EXPECT_DOUBLE_EQ(s.cluster.latency, 10e-6);
  EXPECT_DOUBLE_EQ(s.cluster.ps_nic_bw, 1.25e9);
  EXPECT_DOUBLE_EQ(s.cluster.intra_node_bw, 1024.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(s.cluster.intra_node_latency, 2e-6);
  EXPECT_EQ(s.scheme.scheme, scheme::Scheme::ParameterServer);
  EXPECT_EQ(s.scheme.mode, scheme::Mode::Async);
  EXPECT_EQ(s.scheme.ps.count, 4);
  EXPECT_EQ(s.scheme.ps.partition, scheme::PsPartition::Split);
  EXPECT_EQ(s.scheme.ps.placement, scheme::PsPlacement::Colocated);
  EXPECT_EQ(s.scheme.ps.order, scheme::PsOrder::Fifo);
  EXPECT_DOUBLE_EQ(s.scheme.ps.apply_time, 20e-6);
  EXPECT_DOUBLE_EQ(s.scheme.ps.apply_bw, 12.5e9);
  EXPECT_DOUBLE_EQ(s.scheme.allreduce.bucket_bytes, 1024.0 * 1024);
  EXPECT_EQ(s.options.warmup_steps, 0);
  EXPECT_EQ(s.options.measure_steps, 3);
}

TEST(Scenario, StepSamplesAllOrRepresentative) {
  EXPECT_EQ(
      parse_scenario(kMinimal, "t.yaml", {"workload.step_samples=representative"}).workload.step_samples,
      StepSamples::Representative);
  EXPECT_EQ(parse_scenario(kMinimal, "t.yaml", {"workload.step_samples=all"}).workload.step_samples,
            StepSamples::All);
  Error e = expect_error([] { (void)parse_scenario(kMinimal, "t.yaml", {"workload.step_samples=3"}); });
  EXPECT_EQ(e.where().key, "workload.step_samples");
  EXPECT_NE(e.message().find("one of all|representative"), std::string::npos) << e.what();
  // A zoo model has no per-step samples whatever the key says.
  EXPECT_EQ(build_workload(parse_scenario(kMinimal, "t.yaml")).num_samples(), 0u);
}

TEST(Scenario, JobKeys) {
  const Scenario s = parse_scenario(std::string(kMinimal) +
                                        "predictor: analytic\n"
                                        "job:\n  samples: 1281167\n  startup:\n    bytes: 8GB\n"
                                        "    storage_bandwidth: 1GB/s\n    io: sequential\n    fixed: 30s\n",
                                    "t.yaml");
  EXPECT_EQ(s.options.predictor, stepcast::predict::Predictor::Analytic);
  EXPECT_EQ(s.options.job.samples, 1281167);
  EXPECT_EQ(s.options.job.startup_bytes, 8e9);
  EXPECT_EQ(s.options.job.storage_bw, 1e9);
  EXPECT_EQ(s.options.job.io, stepcast::predict::StartupIo::Sequential);
  EXPECT_EQ(s.options.job.startup_fixed, 30);
  // Defaults: no job; start-up reads the model; parallel.
  const Scenario d = parse_scenario(kMinimal, "t.yaml");
  EXPECT_EQ(d.options.job.samples, 0);
  EXPECT_LT(d.options.job.startup_bytes, 0);
  EXPECT_EQ(d.options.job.io, stepcast::predict::StartupIo::Parallel);
  Error e = expect_error([] { (void)parse_scenario(kMinimal, "t.yaml", {"job.startup.io=random"}); });
  EXPECT_EQ(e.where().key, "job.startup.io");
  e = expect_error([] { (void)parse_scenario(kMinimal, "t.yaml", {"job.samples=-5"}); });
  EXPECT_EQ(e.where().key, "job.samples");
}

TEST(Scenario, PsPlacementStrategy) {
  EXPECT_EQ(parse_scenario(kMinimal, "t.yaml").scheme.ps.placement_strategy,
            scheme::PsPlacementStrategy::LeastLoaded);  // today's placement stays the default
  EXPECT_EQ(parse_scenario(kMinimal, "t.yaml", {"training.ps.placement_strategy=round_robin"})
                .scheme.ps.placement_strategy,
            scheme::PsPlacementStrategy::RoundRobin);
  EXPECT_EQ(parse_scenario(kMinimal, "t.yaml", {"training.ps.placement_strategy=greedy_sorted"})
                .scheme.ps.placement_strategy,
            scheme::PsPlacementStrategy::GreedySorted);
  const Error e = expect_error(
      [] { (void)parse_scenario(kMinimal, "t.yaml", {"training.ps.placement_strategy=sorted"}); });
  EXPECT_EQ(e.where().key, "training.ps.placement_strategy");
  EXPECT_TRUE(contains(e.message(), "one of least_loaded|greedy_sorted|round_robin")) << e.what();
}

TEST(Scenario, MessageOverheadAndRpcLatency) {
  const Scenario d = parse_scenario(kMinimal, "t.yaml");
  EXPECT_EQ(d.scheme.ps.message_overhead, 0);
  EXPECT_FALSE(d.cluster.rpc_latency.has_value());  // unset: the link latency
  const Scenario s =
      parse_scenario(kMinimal, "t.yaml", {"training.ps.message_overhead=50us", "cluster.rpc_latency=0.2ms"});
  EXPECT_DOUBLE_EQ(s.scheme.ps.message_overhead, 50e-6);
  ASSERT_TRUE(s.cluster.rpc_latency.has_value());
  EXPECT_DOUBLE_EQ(*s.cluster.rpc_latency, 0.2e-3);
  EXPECT_EQ(*parse_scenario(kMinimal, "t.yaml", {"cluster.rpc_latency=0"}).cluster.rpc_latency, 0);
  for (const char* bad :
       {"training.ps.message_overhead=-5us", "training.ps.message_overhead=fast",
        "training.ps.message_overhead=20s", "cluster.rpc_latency=-1us", "cluster.rpc_latency=11s"}) {
    SCOPED_TRACE(bad);
    const std::string key = std::string(bad).substr(0, std::string(bad).find('='));
    const Error e = expect_error([&] { (void)parse_scenario(kMinimal, "t.yaml", {bad}); });
    EXPECT_EQ(e.where().key, key) << e.what();
  }
}

TEST(Scenario, ComputeCvNumberOrAutoWithAProfile) {
  EXPECT_EQ(parse_scenario(kMinimal, "t.yaml", {"workload.compute_cv=0.05"}).options.compute_cv, 0.05);
  EXPECT_FALSE(parse_scenario(kMinimal, "t.yaml").options.compute_cv_auto);
  // A zoo model has no steps to take the variation from.
  Error e = expect_error([] { (void)parse_scenario(kMinimal, "t.yaml", {"workload.compute_cv=auto"}); });
  EXPECT_EQ(e.where().key, "workload.compute_cv");
  EXPECT_TRUE(contains(e.message(), "workload.profile")) << e.what();
  e = expect_error([] { (void)parse_scenario(kMinimal, "t.yaml", {"workload.compute_cv=often"}); });
  EXPECT_EQ(e.where().key, "workload.compute_cv");
  EXPECT_TRUE(contains(e.message(), "'auto'")) << e.what();
}

TEST(Scenario, CollectiveRegimes) {
  const Scenario s = parse_scenario(std::string(kMinimal) +
                                        "cluster:\n  collective_regimes:\n    - \"0B 4.36us 17.3GB/s\"\n"
                                        "    - \"724KiB 5us 38GB/s\"\n    - 32MiB 29.7us 2744Gbps\n",
                                    "t.yaml");
  ASSERT_EQ(s.cluster.collective_regimes.size(), 3u);
  EXPECT_EQ(s.cluster.collective_regimes[0], (cluster::CollectiveRegime{0, 4.36e-6, 17.3e9}));
  EXPECT_EQ(s.cluster.collective_regimes[1].from_bytes, 724.0 * 1024);
  EXPECT_DOUBLE_EQ(s.cluster.collective_regimes[2].bw, 343e9);
  EXPECT_EQ(s.cluster.regime_for(100.0), &s.cluster.collective_regimes[0]);
  EXPECT_EQ(s.cluster.regime_for(32.0 * 1024 * 1024), &s.cluster.collective_regimes[2]);
  // --set takes the same items separated by commas or semicolons.
  const Scenario o =
      parse_scenario(kMinimal, "t.yaml", {"cluster.collective_regimes=1MiB 1us 1GB/s; 2MiB 2us 2GB/s"});
  ASSERT_EQ(o.cluster.collective_regimes.size(), 2u);
  EXPECT_EQ(o.cluster.regime_for(1000.0), nullptr);  // below the first regime: links alone
  // Default: none; "none" switches off the regimes of a file.
  EXPECT_TRUE(parse_scenario(kMinimal, "t.yaml").cluster.collective_regimes.empty());
  EXPECT_TRUE(parse_scenario(std::string(kMinimal) + "cluster:\n  collective_regimes: [\"0B 1us 1GB/s\"]\n",
                             "t.yaml", {"cluster.collective_regimes=none"})
                  .cluster.collective_regimes.empty());
  for (const char* bad :
       {"cluster.collective_regimes=1MiB 1us", "cluster.collective_regimes=2MiB 1us 1GB/s, 1MiB 1us 1GB/s",
        "cluster.collective_regimes=1MiB 1us 0GB/s", "cluster.collective_regimes=1MiB -1us 1GB/s",
        "cluster.collective_regimes=1MiB 1us fast", "cluster.collective_regimes= , "}) {
    SCOPED_TRACE(bad);
    Error e = expect_error([bad] { (void)parse_scenario(kMinimal, "t.yaml", {bad}); });
    EXPECT_TRUE(contains(e.where().key, "cluster.collective_regimes")) << e.what();
  }
}

TEST(Scenario, UnitsAndBareNumbers) {
  Scenario s = parse_scenario(std::string(kMinimal) +
                                  "cluster:\n"
                                  "  nic_bandwidth: 1.25GB/s\n"
                                  "  link_latency: 5us\n"
                                  "  intra_node:\n"
                                  "    bandwidth: 3e9B/s\n"
                                  "    latency: 1ms\n"
                                  "training:\n"
                                  "  allreduce:\n"
                                  "    bucket_size: 25MB\n",
                              "t.yaml");
  EXPECT_DOUBLE_EQ(s.cluster.nic_bw, 1.25e9);
  EXPECT_DOUBLE_EQ(s.cluster.latency, 5e-6);
  EXPECT_DOUBLE_EQ(s.cluster.intra_node_bw, 3e9);
  EXPECT_DOUBLE_EQ(s.cluster.intra_node_latency, 1e-3);
  EXPECT_DOUBLE_EQ(s.scheme.allreduce.bucket_bytes, 25e6);
  // "10Gbps" is bits: 10e9 / 8 bytes/s.
  Scenario g = parse_scenario(kMinimal, "t.yaml", {"cluster.nic_bandwidth=10Gbps"});
  EXPECT_DOUBLE_EQ(g.cluster.nic_bw, 1.25e9);
  // A bare size, bandwidth, duration or FLOP rate could be in any unit ("5" as a latency: seconds
  // or microseconds?): an error naming the key and its line. A bare 0 is 0 in any unit.
  for (const std::string key :
       {"cluster.nic_bandwidth", "cluster.intra_node.bandwidth", "cluster.gpu_memory",
        "training.allreduce.bucket_size", "cluster.link_latency", "cluster.intra_node.latency",
        "cluster.gpu.peak_flops", "workload.step_time"}) {
    Error e = expect_error([&] { (void)parse_scenario(kMinimal, "t.yaml", {key + "=3e9"}); });
    EXPECT_EQ(e.where().key, key);
    EXPECT_NE(e.message().find("with its unit, got '3e9'"), std::string::npos) << e.what();
  }
  EXPECT_DOUBLE_EQ(parse_scenario(kMinimal, "t.yaml", {"training.ps.slice_size=0"}).scheme.ps.slice_bytes, 0);
}

TEST(Scenario, ThroughputBecomesStepTime) {
  // 32 samples per step at 128 samples/s: 0.25 s per step.
  Scenario s = parse_scenario("workload: {model: resnet50, single_worker_throughput: 128}\n", "t.yaml");
  EXPECT_DOUBLE_EQ(s.workload.step_time, 0.25);
}

TEST(Scenario, OverrideOfNullTakesTheKeyOut) {
  // key=null (or ~) is as if the file did not give the key: a default comes back, and a rate can
  // give way to another compute source (it could not be unset: "got nothing").
  const std::string text = std::string(kMinimal) + "cluster:\n  workers: 4\n";
  EXPECT_EQ(parse_scenario(text, "t.yaml", {"cluster.workers=null"}).cluster.workers, 1);
  EXPECT_EQ(parse_scenario(text, "t.yaml", {"cluster.workers=~"}).cluster.workers, 1);
  const std::string rated =
      "workload:\n  model: llama3-8b\n  achieved_flops: 400TFLOPS\ncluster:\n"
      "  gpu: {peak_flops: 989TFLOPS, memory_bandwidth: 3.35TB/s}\n";
  const Scenario shapes =
      parse_scenario(rated, "t.yaml", {"workload.achieved_flops=null", "workload.compute=shapes"});
  EXPECT_EQ(shapes.workload.compute, ComputeMethod::Shapes);
  EXPECT_EQ(shapes.workload.achieved_flops, 0);
  // Unknown keys stay errors, null or not.
  const Error e = expect_error([&] { (void)parse_scenario(text, "t.yaml", {"cluster.wrokers=null"}); });
  EXPECT_EQ(e.where().key, "cluster.wrokers");
}

TEST(Scenario, OverrideReplacesValue) {
  Scenario s = parse_scenario(std::string(kMinimal) + "cluster:\n  workers: 4\n", "t.yaml",
                              {"cluster.workers=16", "training.scheme=ps", "name='a: b'"});
  EXPECT_EQ(s.cluster.workers, 16);
  EXPECT_EQ(s.scheme.scheme, scheme::Scheme::ParameterServer);
  EXPECT_EQ(s.name, "a: b");  // the value is a YAML scalar, so quoting works
}

TEST(Scenario, OverrideOfStepTimeReplacesFileThroughput) {
  Scenario s = parse_scenario("workload: {model: resnet50, single_worker_throughput: 100}\n", "t.yaml",
                              {"workload.step_time=0.5s"});
  EXPECT_DOUBLE_EQ(s.workload.step_time, 0.5);
  // Both given on the command line: the later one wins.
  Scenario t =
      parse_scenario(kMinimal, "t.yaml", {"workload.step_time=1s", "workload.single_worker_throughput=64"});
  EXPECT_DOUBLE_EQ(t.workload.step_time, 0.5);  // 32 / 64
}

TEST(Scenario, UnknownKeyNamesLineAndSuggests) {
  Error e = expect_error([] {
    (void)parse_scenario(
        "workload:\n"
        "  model: resnet50\n"
        "  step_time: 292ms\n"
        "cluster:\n"
        "  workers: 4\n"
        "  nic_bandwith: 10Gbps\n",
        "job.yaml");
  });
  EXPECT_EQ(e.where(), (SourceLocation{"job.yaml", 6, "cluster.nic_bandwith"}));
  EXPECT_TRUE(contains(e.what(), "job.yaml:6:")) << e.what();
  EXPECT_TRUE(contains(e.what(), "cluster.nic_bandwith")) << e.what();
  EXPECT_TRUE(contains(e.what(), "did you mean 'cluster.nic_bandwidth'?")) << e.what();
}

TEST(Scenario, UnknownKeyInWrongSectionSuggestsTheRightOne) {
  Error e = expect_error([] { (void)parse_scenario(std::string(kMinimal) + "workers: 4\n", "j.yaml"); });
  EXPECT_EQ(e.where().line, 4);
  EXPECT_EQ(e.where().key, "workers");
  EXPECT_TRUE(contains(e.message(), "'cluster.workers'")) << e.what();
  // An abbreviation in the right section.
  Error a = expect_error(
      [] { (void)parse_scenario(std::string(kMinimal) + "cluster:\n  nic_bw: 1Gbps\n", "j.yaml"); });
  EXPECT_TRUE(contains(a.message(), "did you mean 'cluster.nic_bandwidth'?")) << a.what();
  // A misspelled section.
  Error b =
      expect_error([] { (void)parse_scenario(std::string(kMinimal) + "clster:\n  workers: 2\n", "j.yaml"); });
  EXPECT_EQ(b.where(), (SourceLocation{"j.yaml", 4, "clster"}));
  EXPECT_TRUE(contains(b.message(), "did you mean 'cluster'?")) << b.what();
  // Nothing close: no suggestion, still an error.
  Error f = expect_error([] { (void)parse_scenario(std::string(kMinimal) + "zzzzzzzzzzzz: 4\n", "j.yaml"); });
  EXPECT_TRUE(contains(f.message(), "unknown key")) << f.what();
  EXPECT_FALSE(contains(f.message(), "did you mean")) << f.what();
}

TEST(Scenario, UnknownOverrideKey) {
  Error e = expect_error([] { (void)parse_scenario(kMinimal, "t.yaml", {"cluster.worker=4"}); });
  EXPECT_EQ(e.where(), (SourceLocation{"--set", 0, "cluster.worker"}));
  EXPECT_TRUE(contains(e.message(), "'cluster.workers'")) << e.what();
}

TEST(Scenario, OverrideWithoutEquals) {
  Error e = expect_error([] { (void)parse_scenario(kMinimal, "t.yaml", {"cluster.workers"}); });
  EXPECT_EQ(e.where().file, "--set");
  EXPECT_TRUE(contains(e.message(), "key=value")) << e.what();
}

TEST(Scenario, OverrideNotAScalar) {
  Error e = expect_error([] { (void)parse_scenario(kMinimal, "t.yaml", {"cluster.workers=[1, 2]"}); });
  EXPECT_EQ(e.where().key, "cluster.workers");
  EXPECT_TRUE(contains(e.message(), "got a list")) << e.what();
}

/// How a worker count out of range is reported.
const std::string kWorkersRange =
    "expected an integer in [1, " + std::to_string(stepcast::limits::kMaxWorkers) + "], ";

TEST(Scenario, WrongType) {
  Error e = expect_error(
      [] { (void)parse_scenario(std::string(kMinimal) + "cluster:\n  workers: abc\n", "t.yaml"); });
  EXPECT_EQ(e.where(), (SourceLocation{"t.yaml", 5, "cluster.workers"}));
  EXPECT_EQ(e.message(), kWorkersRange + "got 'abc'");
  Error f = expect_error(
      [] { (void)parse_scenario(std::string(kMinimal) + "cluster:\n  workers: 2.5\n", "t.yaml"); });
  EXPECT_EQ(f.message(), kWorkersRange + "got '2.5'");
  Error g = expect_error(
      [] { (void)parse_scenario(std::string(kMinimal) + "training:\n  scheme: mpi\n", "t.yaml"); });
  EXPECT_EQ(g.where().key, "training.scheme");
  EXPECT_EQ(g.message(), "expected one of ps|allreduce|fsdp, got 'mpi'");
}

TEST(Scenario, ZeroWorkers) {
  Error e = expect_error(
      [] { (void)parse_scenario(std::string(kMinimal) + "cluster:\n  workers: 0\n", "t.yaml"); });
  EXPECT_EQ(e.where(), (SourceLocation{"t.yaml", 5, "cluster.workers"}));
  EXPECT_EQ(e.message(), kWorkersRange + "got '0'");
}

TEST(Scenario, NegativeOrZeroBandwidth) {
  Error e = expect_error(
      [] { (void)parse_scenario(std::string(kMinimal) + "cluster:\n  nic_bandwidth: -10Gbps\n", "t.yaml"); });
  EXPECT_EQ(e.where(), (SourceLocation{"t.yaml", 5, "cluster.nic_bandwidth"}));
  Error z = expect_error([] { (void)parse_scenario(kMinimal, "t.yaml", {"cluster.nic_bandwidth=0"}); });
  EXPECT_EQ(z.where(), (SourceLocation{"--set", 0, "cluster.nic_bandwidth"}));
}

TEST(Scenario, MapOrListWhereScalarExpected) {
  Error e = expect_error([] {
    (void)parse_scenario(std::string(kMinimal) + "cluster:\n  workers:\n    - 1\n    - 2\n", "t.yaml");
  });
  EXPECT_EQ(e.where(), (SourceLocation{"t.yaml", 5, "cluster.workers"}));
  EXPECT_EQ(e.message(), kWorkersRange + "got a list");
  Error m = expect_error(
      [] { (void)parse_scenario(std::string(kMinimal) + "cluster:\n  nic_bandwidth: {a: 1}\n", "t.yaml"); });
  EXPECT_EQ(m.message(), "expected a bandwidth, got a map");
}

TEST(Scenario, SectionNotAMap) {
  Error e = expect_error([] { (void)parse_scenario(std::string(kMinimal) + "cluster: 8\n", "t.yaml"); });
  EXPECT_EQ(e.where(), (SourceLocation{"t.yaml", 4, "cluster"}));
  EXPECT_TRUE(contains(e.message(), "expected a section")) << e.what();
}

TEST(Scenario, DuplicateKey) {
  Error e = expect_error([] {
    (void)parse_scenario(std::string(kMinimal) + "cluster:\n  workers: 2\n  workers: 4\n", "t.yaml");
  });
  EXPECT_EQ(e.where(), (SourceLocation{"t.yaml", 6, "cluster.workers"}));
  EXPECT_TRUE(contains(e.message(), "line 5")) << e.what();
}

TEST(Scenario, ColocatedNeedsANodePerServer) {
  // 4 workers, 2 per node: 2 nodes, so at most 2 colocated shards.
  const std::string text = std::string(kMinimal) +
                           "cluster: {workers: 4, workers_per_node: 2}\n"
                           "training:\n"
                           "  scheme: ps\n"
                           "  ps:\n"
                           "    placement: colocated\n"
                           "    count: 3\n";
  Error e = expect_error([&] { (void)parse_scenario(text, "t.yaml"); });
  EXPECT_EQ(e.where(), (SourceLocation{"t.yaml", 9, "training.ps.count"}));
  EXPECT_TRUE(contains(e.message(), "P > N")) << e.what();
  EXPECT_TRUE(contains(e.message(), "cluster.workers")) << e.what();
  EXPECT_NO_THROW((void)parse_scenario(text, "t.yaml", {"training.ps.count=2"}));
  // Dedicated servers need no worker node.
  EXPECT_NO_THROW((void)parse_scenario(text, "t.yaml", {"training.ps.placement=dedicated"}));
  // A partly filled node counts: 5 workers at 2 per node are 3 nodes. And more per node than
  // workers is one partly filled node, not an error.
  EXPECT_NO_THROW((void)parse_scenario(text, "t.yaml", {"cluster.workers=5"}));
  EXPECT_NO_THROW((void)parse_scenario(kMinimal, "t.yaml", {"cluster.workers_per_node=8"}));
}

TEST(Scenario, CheckConsistencyAfterASweepNamesTheSweptKey) {
  Scenario s = parse_scenario(std::string(kMinimal) +
                                  "cluster: {workers: 4}\n"
                                  "training: {scheme: ps, ps: {placement: colocated, count: 4}}\n",
                              "t.yaml");
  EXPECT_NO_THROW(check_consistency(s));
  s.cluster.workers = 2;
  Error e = expect_error([&] { check_consistency(s); });
  EXPECT_EQ(e.where().key, "cluster.workers");
  EXPECT_TRUE(contains(e.message(), "training.ps.count")) << e.what();
  s.cluster.workers = 0;
  Error z = expect_error([&] { check_consistency(s, "sweep"); });
  EXPECT_EQ(z.where().key, "sweep");
}

TEST(Scenario, StepTimeAndThroughputAreExclusive) {
  Error e = expect_error([] {
    (void)parse_scenario(
        "workload:\n"
        "  model: resnet50\n"
        "  step_time: 292ms\n"
        "  single_worker_throughput: 100\n",
        "t.yaml");
  });
  EXPECT_EQ(e.where(), (SourceLocation{"t.yaml", 4, "workload.single_worker_throughput"}));
  EXPECT_TRUE(contains(e.message(), "line 3")) << e.what();
}

TEST(Scenario, StepTimeOrThroughputRequired) {
  Error e = expect_error([] { (void)parse_scenario("workload:\n  model: resnet50\n", "t.yaml"); });
  EXPECT_TRUE(contains(e.what(), "workload.step_time")) << e.what();
  EXPECT_TRUE(contains(e.what(), "workload.single_worker_throughput")) << e.what();
  Error z = expect_error([] { (void)parse_scenario(kMinimal, "t.yaml", {"workload.step_time=0"}); });
  EXPECT_EQ(z.where().key, "workload.step_time");
}

TEST(Scenario, ModelRequired) {
  Error e = expect_error([] { (void)parse_scenario("workload:\n  step_time: 1s\n", "t.yaml"); });
  EXPECT_EQ(e.where().key, "workload.model");
}

TEST(Scenario, BadYamlSyntaxNamesTheLine) {
  Error e = expect_error([] {
    (void)parse_scenario(
        "workload:\n"
        "  model: resnet50\n"
        "  step_time: [292ms\n"
        "cluster:\n",
        "bad.yaml");
  });
  EXPECT_EQ(e.where().file, "bad.yaml");
  EXPECT_GE(e.where().line, 3);  // yaml-cpp reports where it noticed the unclosed list
  EXPECT_TRUE(contains(e.message(), "invalid YAML")) << e.what();
}

TEST(Scenario, EmptyScenario) {
  for (const char* text : {"", "# only a comment\n"}) {
    Error e = expect_error([&] { (void)parse_scenario(text, "e.yaml"); });
    EXPECT_EQ(e.where().file, "e.yaml");
    EXPECT_EQ(e.message(), "empty scenario");
  }
  Error l = expect_error([] { (void)parse_scenario("- 1\n- 2\n", "e.yaml"); });
  EXPECT_TRUE(contains(l.message(), "got a list")) << l.what();
}

TEST(Scenario, UnknownModelListsKnownModels) {
  Error e =
      expect_error([] { (void)parse_scenario("workload:\n  model: resnet51\n  step_time: 1s\n", "t.yaml"); });
  EXPECT_EQ(e.where(), (SourceLocation{"t.yaml", 2, "workload.model"}));
  EXPECT_TRUE(contains(e.message(), "resnet51")) << e.what();
  EXPECT_TRUE(contains(e.message(), "resnet50")) << e.what();
  EXPECT_TRUE(contains(e.message(), "vgg16")) << e.what();
}

TEST(Scenario, AsyncAllReduceIsAnError) {
  Error e = expect_error(
      [] { (void)parse_scenario(std::string(kMinimal) + "training:\n  mode: async\n", "t.yaml"); });
  EXPECT_EQ(e.where(), (SourceLocation{"t.yaml", 5, "training.mode"}));
  EXPECT_NO_THROW(
      (void)parse_scenario(std::string(kMinimal) + "training:\n  mode: async\n  scheme: ps\n", "t.yaml"));
}

TEST(Scenario, UnknownTopologyListsTheKnownOnes) {
  Error e = expect_error([] { (void)parse_scenario(kMinimal, "t.yaml", {"cluster.topology=fat-tree"}); });
  EXPECT_EQ(e.where().key, "cluster.topology");
  EXPECT_TRUE(contains(e.message(), "switch|fat_tree|bigraph|torus")) << e.what();
}

TEST(Scenario, TopologyKeysAndTheirChecks) {
  Scenario s = parse_scenario(kMinimal, "t.yaml",
                              {"cluster.topology=torus", "cluster.torus.dims=[4, 8]", "cluster.workers=32"});
  EXPECT_EQ(s.cluster.topology, cluster::Topology::Torus);
  EXPECT_EQ(s.cluster.torus.dims, (std::vector<int>{4, 8}));
  s = parse_scenario(kMinimal, "t.yaml", {"cluster.torus.dims=2x3x4"});
  EXPECT_EQ(s.cluster.torus.dims, (std::vector<int>{2, 3, 4}));
  // More nodes than the torus holds.
  Error e = expect_error([] {
    (void)parse_scenario(kMinimal, "t.yaml",
                         {"cluster.topology=torus", "cluster.torus.dims=4x4", "cluster.workers=17"});
  });
  EXPECT_EQ(e.where().key, "cluster.topology");
  EXPECT_TRUE(contains(e.message(), "holds 16 nodes")) << e.what();
  e = expect_error([] { (void)parse_scenario(kMinimal, "t.yaml", {"cluster.torus.dims=4xx"}); });
  EXPECT_EQ(e.where().key, "cluster.torus.dims");
  // hdrm needs a full BiGraph with one worker per node and a power-of-two count.
  e = expect_error([] {
    (void)parse_scenario(kMinimal, "t.yaml", {"training.allreduce.algorithm=hdrm", "cluster.workers=8"});
  });
  EXPECT_EQ(e.where().key, "training.allreduce.algorithm");
  EXPECT_NO_THROW((void)parse_scenario(
      kMinimal, "t.yaml",
      {"training.allreduce.algorithm=hdrm", "cluster.workers=8", "cluster.topology=bigraph",
       "cluster.bigraph.switches_per_half=4", "cluster.bigraph.hosts_per_switch=1"}));
  e = expect_error([] {
    (void)parse_scenario(kMinimal, "t.yaml",
                         {"training.allreduce.algorithm=halving_doubling", "cluster.workers=6"});
  });
  EXPECT_TRUE(contains(e.message(), "power-of-two")) << e.what();
  e = expect_error([] { (void)parse_scenario(kMinimal, "t.yaml", {"cluster.nics_per_node=2"}); });
  EXPECT_EQ(e.where().key, "cluster.nics_per_node");
  e = expect_error([] {
    (void)parse_scenario(kMinimal, "t.yaml", {"cluster.topology=fat_tree", "cluster.fat_tree.radix=7"});
  });
  EXPECT_EQ(e.where().key, "cluster.fat_tree.radix");
}

TEST(Scenario, ResolvedKeysCoverEveryKnownKeySorted) {
  Scenario s = parse_scenario(kMinimal, "t.yaml", {"cluster.workers=8"});
  std::vector<ResolvedKey> keys = resolved_keys(s);
  EXPECT_TRUE(
      std::is_sorted(keys.begin(), keys.end(), [](const auto& a, const auto& b) { return a.key < b.key; }));
  ASSERT_EQ(keys.size(), known_keys().size());
  auto find = [&](const std::string& key) {
    auto it = std::find_if(keys.begin(), keys.end(), [&](const auto& k) { return k.key == key; });
    EXPECT_NE(it, keys.end()) << key;
    return it == keys.end() ? ResolvedKey{} : *it;
  };
  // Values with units echo the digits the input had and no more ("292 ms", "25 MB"), so that they
  // read back as the same number; bandwidths in bytes/s whatever they were given in (10Gbps).
  EXPECT_EQ(find("cluster.nic_bandwidth"), (ResolvedKey{"cluster.nic_bandwidth", "1.25 GB/s", false}));
  // Same as the NIC when unset.
  EXPECT_EQ(find("cluster.ps_nic_bandwidth").value, "1.25 GB/s");
  EXPECT_EQ(find("cluster.workers"), (ResolvedKey{"cluster.workers", "8", true}));
  EXPECT_EQ(find("workload.step_time").value, "292 ms");
  // 32 samples / 0.292 s.
  EXPECT_EQ(find("workload.single_worker_throughput"),
            (ResolvedKey{"workload.single_worker_throughput", "109.589", true}));
  EXPECT_EQ(find("training.allreduce.bucket_size").value, "25 MB");
  EXPECT_EQ(find("training.ps.apply_bandwidth").value, "free");
  EXPECT_EQ(find("training.scheme").value, "allreduce");
  EXPECT_EQ(find("seed"), (ResolvedKey{"seed", "1", true}));
}

// A bandwidth given in bytes echoes as given, not in bits (450GB/s was "3.6 Tbps"), and one from
// NCCL's tables at no more than 4 significant digits (one was "75.7894736842105 Gbps").
TEST(Scenario, BandwidthsEchoInBytesPerSecond) {
  Scenario s = parse_scenario(kMinimal, "t.yaml",
                              {"cluster.intra_node.bandwidth=450GB/s", "cluster.nic_bandwidth=400Gbps"});
  const std::vector<ResolvedKey> keys = resolved_keys(s);
  auto value = [&](const std::string& key) {
    auto it = std::find_if(keys.begin(), keys.end(), [&](const auto& k) { return k.key == key; });
    return it == keys.end() ? std::string("(missing)") : it->value;
  };
  EXPECT_EQ(value("cluster.intra_node.bandwidth"), "450 GB/s");
  EXPECT_EQ(value("cluster.nic_bandwidth"), "50 GB/s");
  int from_tables = 0;
  for (const ResolvedKey& k : keys) {
    EXPECT_FALSE(contains(k.value, "bps")) << k.key << ": " << k.value;
    if (contains(k.value, "(NCCL's table)")) {
      ++from_tables;
      // At most 4 significant digits before the unit.
      const std::string number = k.value.substr(0, k.value.find(' '));
      EXPECT_LE(std::count_if(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; }), 4)
          << k.key << ": " << k.value;
    }
  }
  EXPECT_GT(from_tables, 0);
}

TEST(Scenario, KnownKeysAreDocumentedAndParseable) {
  for (const KeyInfo& info : known_keys()) {
    EXPECT_FALSE(info.type.empty()) << info.key;
    EXPECT_FALSE(info.description.empty()) << info.key;
    // Every documented key is accepted as an override with a value of its type, or rejected
    // for its value, never as an unknown key.
    try {
      (void)parse_scenario(kMinimal, "t.yaml", {info.key + "=" + info.default_value});
    } catch (const Error& e) {
      EXPECT_FALSE(contains(e.message(), "unknown key")) << e.what();
    }
  }
}

TEST(Scenario, BuildWorkloadUsesTheZoo) {
  Scenario s = parse_scenario(kMinimal, "t.yaml", {"workload.batch_per_worker=64"});
  workload::Workload w = build_workload(s);
  EXPECT_EQ(w.batch_per_worker, 64);
  EXPECT_NEAR(w.compute_time(), 0.292, 1e-9);
  s.workload.model = "nope";
  Error e = expect_error([&] { (void)build_workload(s); });
  EXPECT_EQ(e.where().key, "workload.model");
}

TEST(Scenario, LoadScenarioFromFile) {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("stepcast_scenario_test_" + std::to_string(::getpid()) + ".yaml");
  {
    std::ofstream out(path);
    out << kMinimal << "cluster:\n  workers: 4\n";
  }
  Scenario s = load_scenario(path.string(), {"cluster.workers=6"});
  EXPECT_EQ(s.file, path.string());
  EXPECT_EQ(s.name, path.stem().string());
  EXPECT_EQ(s.cluster.workers, 6);
  std::filesystem::remove(path);
  Error e = expect_error([&] { (void)load_scenario(path.string()); });
  EXPECT_EQ(e.where().file, path.string());
  EXPECT_TRUE(contains(e.message(), "cannot read")) << e.what();
}

}  // namespace scenario_test
}  // namespace
}  // namespace stepcast::scenario
