// NCCL's channel count and bandwidth caps as the cluster computes them (cluster::nccl_*): the
// default channel rule on machines whose NCCL graphs are known, and the caps against NCCL's
// tables (src/graph/tuning.cc and search.cc at NVIDIA/nccl commit b6475625), which the expected
// values quote.
#include <gtest/gtest.h>

#include <cmath>

#include "stepcast/cluster/cluster.hpp"

namespace stepcast::cluster {
namespace {
namespace nccl_tuning_test {  // this file's own names: test files are compiled several to a unit

ClusterSpec machine(int nodes, int gpus, int nics, double nic_bw, double intra_bw, GpuGeneration generation) {
  ClusterSpec spec;
  spec.workers = nodes * gpus;
  spec.workers_per_node = gpus;
  spec.nics_per_node = nics;
  spec.nic_bw = nic_bw;
  spec.intra_node_bw = intra_bw;
  spec.gpu_generation = generation;
  return spec;
}

TEST(NcclChannels, DefaultFollowsNcclsRingSearch) {
  // GCP A3 Mega: 8 H100 and 8 NICs of 200 Gbps (25 GB/s) a node. The fastest sm90 inter speed a
  // NIC holds is 24 GB/s, once: 8 channels, not doubled (24 < 25).
  EXPECT_EQ(nccl_channels(machine(2, 8, 8, 25e9, 450e9, GpuGeneration::Hopper)), 8);
  // DGX H100: 8 NICs of 400 Gbps (50 GB/s): 48 GB/s once each, 8 channels; Hopper keeps them below
  // 50 GB/s with more than 4.
  EXPECT_EQ(nccl_channels(machine(2, 8, 8, 50e9, 450e9, GpuGeneration::Hopper)), 8);
  // The same NIC on A100 nodes with 2 NICs: 48 GB/s once each, then doubled (>= 25 GB/s): 4.
  EXPECT_EQ(nccl_channels(machine(4, 8, 2, 50e9, 300e9, GpuGeneration::Ampere)), 4);
  // One 800 Gbps NIC (100 GB/s) on Hopper: 48 GB/s twice, doubled (2 <= 4 channels): 4.
  EXPECT_EQ(nccl_channels(machine(2, 8, 1, 100e9, 450e9, GpuGeneration::Hopper)), 4);
  // 10 Gbps Ethernet: 1.2 GB/s once, 1 channel.
  EXPECT_EQ(nccl_channels(machine(4, 1, 1, 1.25e9, 12e9, GpuGeneration::Hopper)), 1);
  // One node of H100 on NVLink at 18 links x 20.6 GB/s: the sm90 intra speed 60 six times, doubled
  // (>= 50 GB/s): 12.
  EXPECT_EQ(nccl_channels(machine(1, 8, 1, 25e9, 18 * 20.6e9, GpuGeneration::Hopper)), 12);
  // Capped at 16 (MAXCHANNELS / 2), and never below the NICs between nodes.
  EXPECT_EQ(nccl_channels(machine(1, 8, 1, 25e9, 1e12, GpuGeneration::Hopper)), 16);
  EXPECT_EQ(nccl_channels(machine(2, 32, 32, 50e9, 450e9, GpuGeneration::Hopper)), 32);
  // A key wins.
  ClusterSpec set = machine(2, 8, 8, 25e9, 450e9, GpuGeneration::Hopper);
  set.nccl.channels = 24;
  EXPECT_EQ(nccl_channels(set), 24);
}

TEST(NcclCaps, DefaultsAreNcclsTablesByGenerationAndNodeCount) {
  ClusterSpec spec = machine(2, 8, 8, 25e9, 450e9, GpuGeneration::Hopper);  // 8 channels
  // Ring: LL capped as a whole (llMaxBws, 2 nodes, Intel 39.0), LL128 per channel (36.7), Simple not.
  EXPECT_DOUBLE_EQ(nccl_bus_bw_cap(spec, false, NcclProtocol::LL), 39.0e9);
  EXPECT_DOUBLE_EQ(nccl_bus_bw_cap(spec, false, NcclProtocol::LL128), 8 * 36.7e9);
  EXPECT_TRUE(std::isinf(nccl_bus_bw_cap(spec, false, NcclProtocol::Simple)));
  // Tree (perChMaxTreeBws, 2 nodes, Hopper 41.4): Simple 8 x 41.4; LL the lesser of 8 x 41.4 / 3.8
  // and 39.0; LL128 8 x min(41.4 x 120/128, 36.7).
  EXPECT_DOUBLE_EQ(nccl_bus_bw_cap(spec, true, NcclProtocol::Simple), 8 * 41.4e9);
  EXPECT_DOUBLE_EQ(nccl_bus_bw_cap(spec, true, NcclProtocol::LL), 39.0e9);
  EXPECT_NEAR(nccl_bus_bw_cap(spec, true, NcclProtocol::LL128), 8 * 36.7e9, 1e-6);
  // More than 2 nodes: LL 20.4 (Intel) or 19.0 (AMD); tree 36.0 and tree LL128 29.0 per channel.
  spec.workers = 64;
  EXPECT_DOUBLE_EQ(nccl_bus_bw_cap(spec, false, NcclProtocol::LL), 20.4e9);
  EXPECT_NEAR(nccl_bus_bw_cap(spec, true, NcclProtocol::LL128), 8 * 29.0e9, 1e-6);
  EXPECT_NEAR(nccl_bus_bw_cap(spec, true, NcclProtocol::Simple), 8 * 36.0e9, 1e-6);
  spec.cpu_vendor = CpuVendor::Amd;
  EXPECT_DOUBLE_EQ(nccl_bus_bw_cap(spec, false, NcclProtocol::LL), 19.0e9);
  // One node: LL by GPU generation (Volta 39.0, Hopper 87.7); tree LL128 takes 7/9 of the tree cap.
  ClusterSpec one = machine(1, 8, 1, 25e9, 150e9, GpuGeneration::Volta);
  one.nccl.channels = 4;
  EXPECT_DOUBLE_EQ(nccl_bus_bw_cap(one, false, NcclProtocol::LL), 39.0e9);
  EXPECT_NEAR(nccl_bus_bw_cap(one, true, NcclProtocol::LL128), 4 * std::min(26.5 * 7 / 9, 20.0) * 1e9, 1e-6);
  one.gpu_generation = GpuGeneration::Hopper;
  EXPECT_DOUBLE_EQ(nccl_bus_bw_cap(one, false, NcclProtocol::LL), 87.7e9);
  EXPECT_NEAR(nccl_bus_bw_cap(one, true, NcclProtocol::LL128), 4 * 38.7e9 * 7 / 9, 1e-6);
}

TEST(NcclCaps, KeysOverrideTheTablesAndZeroMeansNoCap) {
  ClusterSpec spec = machine(2, 8, 8, 25e9, 450e9, GpuGeneration::Hopper);
  spec.nccl.ring[static_cast<int>(NcclProtocol::Simple)].channel_bw = 10e9;
  EXPECT_DOUBLE_EQ(nccl_bus_bw_cap(spec, false, NcclProtocol::Simple), 80e9);
  spec.nccl.ring[static_cast<int>(NcclProtocol::LL)].max_bw = 0.0;
  EXPECT_TRUE(std::isinf(nccl_bus_bw_cap(spec, false, NcclProtocol::LL)));
  spec.nccl.ring[static_cast<int>(NcclProtocol::LL)].channel_bw = 3e9;
  EXPECT_DOUBLE_EQ(nccl_bus_bw_cap(spec, false, NcclProtocol::LL), 24e9);
  spec.nccl.ring[static_cast<int>(NcclProtocol::LL)].max_bw = 20e9;
  EXPECT_DOUBLE_EQ(nccl_bus_bw_cap(spec, false, NcclProtocol::LL), 20e9);
}

}  // namespace nccl_tuning_test
}  // namespace
}  // namespace stepcast::cluster
