// cluster.topology = custom: a YAML file of switches and links, checked with errors that name the
// topology file and line, and routed like the built-in topologies.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "stepcast/error.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"

namespace stepcast::scenario {
namespace {
namespace custom_topology_test {  // this file's own names: test files are compiled several to a unit

std::string write_topology(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "stepcast_custom_topology";
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

Scenario with_topology(const std::string& path, int workers) {
  return parse_scenario(
      "workload: {model: resnet50, step_time: 100ms}\n"
      "cluster: {topology: custom, custom: " +
          path + ", workers: " + std::to_string(workers) + ", nic_bandwidth: 100Gbps, link_latency: 2us}\n",
      "job.yaml");
}

std::string two_racks(const std::string& uplink) {
  std::string text = "switches: [tor0, tor1, spine]\nlinks:\n";
  for (int n = 0; n < 8; ++n)
    text += "  - [node" + std::to_string(n) + ", tor" + std::to_string(n / 4) + "]\n";
  text += "  - {a: tor0, b: spine, bandwidth: " + uplink + "}\n  - {a: tor1, b: spine, bandwidth: " + uplink +
          "}\n";
  return text;
}

TEST(CustomTopology, OneSwitchEqualsTheSwitchTopology) {
  std::string text = "switches: [s]\nlinks:\n";
  for (int n = 0; n < 8; ++n) text += "  - [node" + std::to_string(n) + ", s]\n";
  const Scenario custom = with_topology(write_topology("one.yaml", text), 8);
  Scenario plain = custom;
  plain.cluster.topology = cluster::Topology::Switch;
  const double a = scheme::simulate_allreduce(custom.cluster, 100e6, scheme::AllReduceAlgorithm::Ring).time;
  const double b = scheme::simulate_allreduce(plain.cluster, 100e6, scheme::AllReduceAlgorithm::Ring).time;
  EXPECT_NEAR(a, b, 1e-12);
}

TEST(CustomTopology, ThinRackUplinksSlowTheRingByTheirRatio) {
  // Each rack crosses its uplink once per ring step: with 25 Gbps uplinks under 100 Gbps NICs
  // the ring runs at a quarter of the speed.
  const Scenario full = with_topology(write_topology("full.yaml", two_racks("100Gbps")), 8);
  const Scenario thin = with_topology(write_topology("thin.yaml", two_racks("25Gbps")), 8);
  const double fast = scheme::simulate_allreduce(full.cluster, 100e6, scheme::AllReduceAlgorithm::Ring).time;
  const double slow = scheme::simulate_allreduce(thin.cluster, 100e6, scheme::AllReduceAlgorithm::Ring).time;
  EXPECT_NEAR(slow / fast, 4.0, 0.05 * 4.0);
}

void expect_topology_error(const std::string& name, const std::string& text, const std::string& needle,
                           int line) {
  const std::string path = write_topology(name, text);
  try {
    (void)with_topology(path, 2);
    FAIL() << "expected an error for " << name;
  } catch (const stepcast::Error& e) {
    EXPECT_EQ(e.where().file, path) << e.what();
    if (line > 0) {
      EXPECT_EQ(e.where().line, line) << e.what();
    }
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(CustomTopology, BadFilesNameFileAndLine) {
  expect_topology_error("unknown.yaml", "switches: [s]\nlinks:\n  - [node0, s]\n  - [node1, t]\n",
                        "unknown endpoint", 4);
  expect_topology_error("twice.yaml", "switches: [s]\nlinks:\n  - [node0, s]\n  - [node0, s]\n",
                        "already has", 4);
  expect_topology_error("gap.yaml", "switches: [s]\nlinks:\n  - [node0, s]\n  - [node2, s]\n",
                        "node1 has no link", 0);
  expect_topology_error("island.yaml", "switches: [s, t]\nlinks:\n  - [node0, s]\n  - [node1, t]\n",
                        "not connected", 0);
  expect_topology_error("bw.yaml", "switches: [s]\nlinks:\n  - {a: node0, b: s, bandwidth: fast}\n",
                        "bandwidth", 3);
  expect_topology_error("key.yaml", "switches: [s]\nlinks: []\nnodes: 3\n", "unknown key", 3);
  // More workers than nodes with links: the scenario check names the topology.
  const std::string path =
      write_topology("small.yaml", "switches: [s]\nlinks:\n  - [node0, s]\n  - [node1, s]\n");
  EXPECT_THROW((void)with_topology(path, 3), stepcast::Error);
}

TEST(CustomTopology, NeedsItsFileAndOnlyWithCustom) {
  EXPECT_THROW((void)parse_scenario(
                   "workload: {model: resnet50, step_time: 1s}\ncluster: {topology: custom}\n", "j.yaml"),
               stepcast::Error);
  EXPECT_THROW((void)parse_scenario("workload: {model: resnet50, step_time: 1s}\ncluster: {custom: x.yaml}\n",
                                    "j.yaml"),
               stepcast::Error);
}

}  // namespace custom_topology_test
}  // namespace
}  // namespace stepcast::scenario
