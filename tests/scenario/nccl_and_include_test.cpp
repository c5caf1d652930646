// Scenario keys of NCCL's collective model (training.allreduce.protocol, cluster.nccl.*,
// algorithm auto) and `include:` of shared files such as a calibration (issue 11).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "expect_error.hpp"
#include "stepcast/error.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/scheme/validate.hpp"

namespace stepcast::scenario {
namespace {
namespace nccl_and_include_test {  // this file's own names: test files are compiled several to a unit

using stepcast::testing::contains;
using stepcast::testing::expect_error;

constexpr const char* kMinimal =
    "workload:\n"
    "  model: resnet50\n"
    "  step_time: 292ms\n";

TEST(NcclKeys, AutoAlgorithmDefaultsToNcclsProtocolChoiceAndLinksOtherwise) {
  EXPECT_EQ(parse_scenario(kMinimal, "s.yaml").scheme.allreduce.protocol, scheme::CollectiveProtocol::Links);
  const Scenario a = parse_scenario(kMinimal, "s.yaml", {"training.allreduce.algorithm=auto"});
  EXPECT_EQ(a.scheme.allreduce.algorithm, scheme::AllReduceAlgorithm::Auto);
  EXPECT_EQ(a.scheme.allreduce.protocol, scheme::CollectiveProtocol::Auto);
  // Given, it stays what was given.
  const Scenario l = parse_scenario(
      kMinimal, "s.yaml", {"training.allreduce.algorithm=auto", "training.allreduce.protocol=links"});
  EXPECT_EQ(l.scheme.allreduce.protocol, scheme::CollectiveProtocol::Links);
  const Scenario ll = parse_scenario(kMinimal, "s.yaml", {"training.allreduce.protocol=ll128"});
  EXPECT_EQ(ll.scheme.allreduce.protocol, scheme::CollectiveProtocol::LL128);
  // Issue 30: naming one of NCCL's algorithms (ring, tree) also gets NCCL's protocol model; the
  // links only on request, for the algorithms NCCL does not run, or with size regimes.
  for (const char* nccl : {"ring", "tree"}) {
    const Scenario n = parse_scenario(kMinimal, "s.yaml", {std::string("training.allreduce.algorithm=") + nccl});
    EXPECT_EQ(n.scheme.allreduce.protocol, scheme::CollectiveProtocol::Auto) << nccl;
    const Scenario asked = parse_scenario(
        kMinimal, "s.yaml", {std::string("training.allreduce.algorithm=") + nccl, "training.allreduce.protocol=links"});
    EXPECT_EQ(asked.scheme.allreduce.protocol, scheme::CollectiveProtocol::Links) << nccl;
  }
  const Scenario h = parse_scenario(kMinimal, "s.yaml", {"training.allreduce.algorithm=hierarchical"});
  EXPECT_EQ(h.scheme.allreduce.protocol, scheme::CollectiveProtocol::Links);
}

TEST(NcclKeys, ConstantsParseWithUnitsAndDefaultToNcclsTables) {
  const Scenario d = parse_scenario(kMinimal, "s.yaml");
  EXPECT_DOUBLE_EQ(d.cluster.nccl.ring[2].base_latency, 8.4e-6);  // tuning.cc baseLat, ring Simple
  const Scenario s =
      parse_scenario(kMinimal, "s.yaml",
                     {"cluster.nccl.tree.ll.hop_latency.net=7us", "cluster.nccl.ring.simple.efficiency=0.8"});
  EXPECT_DOUBLE_EQ(s.cluster.nccl.tree[0].hop_latency[static_cast<int>(cluster::NcclHop::Net)], 7e-6);
  EXPECT_DOUBLE_EQ(s.cluster.nccl.ring[2].efficiency, 0.8);
}

TEST(NcclKeys, BadValuesNameTheKey) {
  const Error zero =
      expect_error([] { (void)parse_scenario(kMinimal, "s.yaml", {"cluster.nccl.ring.ll.efficiency=0"}); });
  EXPECT_EQ(zero.where().key, "cluster.nccl.ring.ll.efficiency");
  const Error unknown =
      expect_error([] { (void)parse_scenario(kMinimal, "s.yaml", {"training.allreduce.protocol=ll64"}); });
  EXPECT_EQ(unknown.where().key, "training.allreduce.protocol");
  EXPECT_TRUE(contains(unknown.message(), "ll128")) << unknown.message();
  // A protocol on an algorithm NCCL does not run, or together with size regimes: an error.
  const Error hier = expect_error([] {
    (void)parse_scenario(kMinimal, "s.yaml",
                         {"training.allreduce.algorithm=hierarchical", "training.allreduce.protocol=simple"});
  });
  EXPECT_EQ(hier.where().key, "training.allreduce.protocol");
  const Error regimes = expect_error([] {
    (void)parse_scenario(kMinimal, "s.yaml",
                         {"training.allreduce.protocol=auto", "cluster.collective_regimes=0B 5us 10GB/s"});
  });
  EXPECT_EQ(regimes.where().key, "training.allreduce.protocol");
  EXPECT_TRUE(contains(regimes.message(), "collective_regimes")) << regimes.message();
}

TEST(NcclKeys, ChannelsAndBandwidthCapsParseWithUnitsAndNoneMeansNoCap) {
  const Scenario d = parse_scenario(kMinimal, "s.yaml");
  EXPECT_FALSE(d.cluster.nccl.channels.has_value());  // NCCL's rule for the topology
  EXPECT_FALSE(d.cluster.nccl.ring[1].channel_bw.has_value());
  EXPECT_EQ(d.cluster.gpu_generation, cluster::GpuGeneration::Hopper);
  EXPECT_EQ(d.cluster.cpu_vendor, cluster::CpuVendor::Intel);
  const Scenario s = parse_scenario(kMinimal, "s.yaml",
                                    {"cluster.nccl.channels=24", "cluster.nccl.ring.ll128.channel_bw=300Gbps",
                                     "cluster.nccl.tree.ll.max_bw=none", "cluster.nccl.ring.ll.max_bw=0",
                                     "cluster.nccl.tree.simple.channel_bw=20GB/s",
                                     "cluster.gpu.generation=ampere", "cluster.cpu.vendor=amd"});
  EXPECT_EQ(s.cluster.nccl.channels, 24);
  EXPECT_DOUBLE_EQ(*s.cluster.nccl.ring[1].channel_bw, 37.5e9);
  EXPECT_EQ(s.cluster.nccl.tree[0].max_bw, 0.0);
  EXPECT_EQ(s.cluster.nccl.ring[0].max_bw, 0.0);
  EXPECT_DOUBLE_EQ(*s.cluster.nccl.tree[2].channel_bw, 20e9);
  EXPECT_EQ(s.cluster.gpu_generation, cluster::GpuGeneration::Ampere);
  EXPECT_EQ(s.cluster.cpu_vendor, cluster::CpuVendor::Amd);
}

TEST(NcclKeys, BadChannelsAndCapsNameTheKey) {
  for (const auto& [set, key] : std::vector<std::pair<std::string, std::string>>{
           {"cluster.nccl.channels=0", "cluster.nccl.channels"},
           {"cluster.nccl.channels=-2", "cluster.nccl.channels"},
           {"cluster.nccl.channels=65", "cluster.nccl.channels"},
           {"cluster.nccl.channels=eight", "cluster.nccl.channels"},
           {"cluster.nccl.channels=2.5", "cluster.nccl.channels"},
           {"cluster.nccl.ring.ll128.channel_bw=-36GB/s", "cluster.nccl.ring.ll128.channel_bw"},
           {"cluster.nccl.ring.ll128.channel_bw=fast", "cluster.nccl.ring.ll128.channel_bw"},
           {"cluster.nccl.tree.simple.channel_bw=-0.5", "cluster.nccl.tree.simple.channel_bw"},
           {"cluster.nccl.tree.ll.max_bw=39GB", "cluster.nccl.tree.ll.max_bw"},
           {"cluster.gpu.generation=pascal", "cluster.gpu.generation"},
           {"cluster.cpu.vendor=arm", "cluster.cpu.vendor"}}) {
    SCOPED_TRACE(set);
    // `line`, not the binding itself: clang 14 cannot capture a structured binding (C++20 allows it).
    const Error e = expect_error([&line = set] { (void)parse_scenario(kMinimal, "s.yaml", {line}); });
    EXPECT_EQ(e.where().key, key) << e.what();
  }
}

TEST(NcclKeys, ACallerBuildingTheSpecGetsAnErrorNamingTheKey) {
  cluster::ClusterSpec spec;
  spec.workers = 8;
  spec.nccl.channels = 0;
  EXPECT_EQ(expect_error([&] { scheme::validate(spec, scheme::SchemeConfig{}); }).where().key,
            "cluster.nccl.channels");
  spec.nccl.channels.reset();
  spec.nccl.tree[2].channel_bw = -1.0;
  EXPECT_EQ(expect_error([&] { scheme::validate(spec, scheme::SchemeConfig{}); }).where().key,
            "cluster.nccl.tree.simple.channel_bw");
}

class Include : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("stepcast-include-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_ / "calib");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) const {
    const std::filesystem::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }
  std::filesystem::path dir_;
};

TEST_F(Include, KeysOfTheIncludedFileApplyAndTheScenarioWins) {
  write("calib/h100.yaml", "cluster:\n  nic_bandwidth: 400Gbps\n  link_latency: 9us\n");
  const std::string path = write("job.yaml", std::string(kMinimal) +
                                                 "include: calib/h100.yaml\n"
                                                 "cluster:\n  link_latency: 3us\n");
  const Scenario s = load_scenario(path);
  EXPECT_DOUBLE_EQ(s.cluster.nic_bw, 50e9);   // from the included file
  EXPECT_DOUBLE_EQ(s.cluster.latency, 3e-6);  // the scenario's own key wins
}

TEST_F(Include, ListsNestAndLaterFilesWin) {
  write("calib/a.yaml", "cluster:\n  nic_bandwidth: 100Gbps\n  link_latency: 9us\n");
  write("calib/b.yaml", "include: a.yaml\ncluster:\n  nic_bandwidth: 200Gbps\n");
  write("calib/c.yaml", "cluster:\n  link_latency: 4us\n");
  const std::string path =
      write("job.yaml", std::string(kMinimal) + "include: [calib/b.yaml, calib/c.yaml]\n");
  const Scenario s = load_scenario(path);
  EXPECT_DOUBLE_EQ(s.cluster.nic_bw, 25e9);   // b over a (b includes a)
  EXPECT_DOUBLE_EQ(s.cluster.latency, 4e-6);  // c, later in the list
}

TEST_F(Include, ErrorsNameTheFileAndLine) {
  write("calib/bad.yaml", "cluster:\n  nic_bandwith: 100Gbps\n");
  const std::string bad = write("bad-job.yaml", std::string(kMinimal) + "include: calib/bad.yaml\n");
  const Error unknown = expect_error([&] { (void)load_scenario(bad); });
  EXPECT_TRUE(contains(unknown.where().file, "bad.yaml")) << unknown.where().file;
  EXPECT_EQ(unknown.where().line, 2);
  const std::string missing = write("missing.yaml", std::string(kMinimal) + "include: nowhere.yaml\n");
  const Error absent = expect_error([&] { (void)load_scenario(missing); });
  EXPECT_EQ(absent.where().key, "include");
  EXPECT_EQ(absent.where().line, 4);
  EXPECT_TRUE(contains(absent.message(), "nowhere.yaml")) << absent.message();
  write("loop.yaml", std::string(kMinimal) + "include: loop.yaml\n");
  const Error loop = expect_error([&] { (void)load_scenario((dir_ / "loop.yaml").string()); });
  EXPECT_EQ(loop.where().key, "include");
}

}  // namespace nccl_and_include_test
}  // namespace
}  // namespace stepcast::scenario
