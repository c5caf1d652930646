// NCCL's channel count and per-protocol bandwidth caps (include/stepcast/cluster/cluster.hpp).
// The numbers are NCCL's own tables, read in NVIDIA/nccl at commit b6475625: the speed
// tables of src/graph/search.cc (speedArrayIntra/Inter and their sm90 versions, the speeds its
// ring search tries, fastest first) and the bandwidth tables of src/graph/tuning.cc
// (ncclTopoTuneModel: llMaxBws, perChMaxRingLL128Bws, perChMaxTreeLL128Bws, perChMaxTreeBws), in
// GB/s (1e9 bytes/s, as tuning.cc divides bytes by 1000 x bw to get microseconds).
#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "stepcast/cluster/cluster.hpp"

namespace stepcast::cluster {
namespace {

constexpr double kGBps = 1e9;

constexpr double kSpeedIntra[] = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
constexpr double kSpeedInter[] = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                  7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr double kSpeedIntraSm90[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 6.0, 3.0};
constexpr double kSpeedInterSm90[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                      15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};

// init.cc gives the ring graph at most MAXCHANNELS / 2 channels (MAXCHANNELS = 32 there).
constexpr int kMaxGraphChannels = 16;
// search.cc, ncclTopoDupChannels: channels are doubled from this speed up (GB/s) ...
constexpr double kDuplicateFromSpeed = 25.0;
// ... except on compute capability > 8.0 below this speed with more than kKeepChannels channels.
constexpr double kHopperDuplicateFromSpeed = 50.0;
constexpr int kKeepChannels = 4;

// Rows by GPU generation (Volta, Ampere, Hopper), columns by node count (1, 2, more).
constexpr double kPerChannelRingLL128[3][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}};
constexpr double kPerChannelTreeLL128[3][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}};
constexpr double kPerChannelTree[3][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}};
// LL's cap on the whole collective: in one node by GPU generation (rows as above), between nodes
// by host CPU (row 0 Intel, row 1 AMD). tuning.cc's comment calls it "per channel", but it is
// never multiplied by the channels: busBw = min(llMaxBw, busBw / 4).
constexpr double kLLMax[3][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {87.7, 22.5, 19.0}};
// tuning.cc's tree factors that the tree's caps pass through: LL divides by 3.8 after the tree
// cap; LL128 takes 7/9 in one node and 120/128 between nodes of it.
constexpr double kTreeLLFactor = 1 / 3.8;
constexpr double kTreeLL128OneNode = 7.0 / 9.0;
constexpr double kTreeLL128Nodes = 120.0 / 128.0;

int generation_row(GpuGeneration generation) {
  switch (generation) {
    case GpuGeneration::Volta:
      return 0;
    case GpuGeneration::Ampere:
      return 1;
    case GpuGeneration::Hopper:
      return 2;
  }
  return 2;
}

int node_column(const ClusterSpec& spec) {
  const int nodes = spec.num_worker_nodes();
  return nodes <= 1 ? 0 : nodes == 2 ? 1 : 2;
}

/// The fastest speed of `table` (GB/s, descending) at most `bw` GB/s, or its slowest.
double search_speed(std::span<const double> table, double bw) {
  for (double speed : table) {
    if (speed <= bw) return speed;
  }
  return table.back();
}

double table_channel_bw(const ClusterSpec& spec, bool tree, NcclProtocol protocol) {
  const int row = generation_row(spec.gpu_generation), column = node_column(spec);
  const double per_tree = kPerChannelTree[row][column];
  if (!tree) {
    switch (protocol) {
      case NcclProtocol::LL:
      case NcclProtocol::Simple:
        return 0;
      case NcclProtocol::LL128:
        return kPerChannelRingLL128[row][column] * kGBps;
    }
    return 0;
  }
  switch (protocol) {
    case NcclProtocol::LL:
      return per_tree * kTreeLLFactor * kGBps;
    case NcclProtocol::LL128:
      return std::min(per_tree * (column == 0 ? kTreeLL128OneNode : kTreeLL128Nodes),
                      kPerChannelTreeLL128[row][column]) *
             kGBps;
    case NcclProtocol::Simple:
      return per_tree * kGBps;
  }
  return 0;
}

double table_max_bw(const ClusterSpec& spec, NcclProtocol protocol) {
  switch (protocol) {
    case NcclProtocol::LL: {
      const int column = node_column(spec);
      const int row = column == 0                         ? generation_row(spec.gpu_generation)
                      : spec.cpu_vendor == CpuVendor::Amd ? 1
                                                          : 0;
      return kLLMax[row][column] * kGBps;
    }
    case NcclProtocol::LL128:
    case NcclProtocol::Simple:
      return 0;
  }
  return 0;
}

}  // namespace

const char* to_string(GpuGeneration generation) {
  return name_c_str(generation);
}

const char* to_string(CpuVendor vendor) {
  return name_c_str(vendor);
}

int nccl_default_channels(const ClusterSpec& spec) {
  const bool hopper = spec.gpu_generation == GpuGeneration::Hopper;
  const bool one_node = spec.num_worker_nodes() <= 1;
  // The links a channel's ring leaves a node through, and what each sustains (GB/s).
  const int nics = std::max(1, std::min(spec.nics_per_node, spec.workers_per_node));
  const int links = one_node ? 1 : nics;
  const double link_bw = (one_node ? spec.intra_node_bw : spec.nic_bw) / kGBps;
  const std::span<const double> table =
      one_node ? (hopper ? std::span<const double>(kSpeedIntraSm90) : std::span<const double>(kSpeedIntra))
               : (hopper ? std::span<const double>(kSpeedInterSm90) : std::span<const double>(kSpeedInter));
  const double speed = search_speed(table, link_bw);
  const int per_link = std::max(1, static_cast<int>(std::floor(link_bw / speed)));
  int channels = std::min(kMaxGraphChannels, links * per_link);
  const bool keep = hopper && speed < kHopperDuplicateFromSpeed && channels > kKeepChannels;
  if (speed >= kDuplicateFromSpeed && !keep) channels = std::min(kMaxGraphChannels, 2 * channels);
  // Never fewer than the NICs between nodes: stepcast has always run a ring per NIC there, and
  // NCCL's search, which also needs room on the GPUs' links, is not modelled that far.
  return one_node ? channels : std::max(channels, nics);
}

int nccl_channels(const ClusterSpec& spec) {
  return spec.nccl.channels ? *spec.nccl.channels : nccl_default_channels(spec);
}

double nccl_channel_bw(const ClusterSpec& spec, bool tree, NcclProtocol protocol) {
  const NcclCost& cost = (tree ? spec.nccl.tree : spec.nccl.ring)[static_cast<int>(protocol)];
  return cost.channel_bw ? *cost.channel_bw : table_channel_bw(spec, tree, protocol);
}

double nccl_max_bw(const ClusterSpec& spec, bool tree, NcclProtocol protocol) {
  const NcclCost& cost = (tree ? spec.nccl.tree : spec.nccl.ring)[static_cast<int>(protocol)];
  return cost.max_bw ? *cost.max_bw : table_max_bw(spec, protocol);
}

double nccl_bus_bw_cap(const ClusterSpec& spec, bool tree, NcclProtocol protocol) {
  double cap = std::numeric_limits<double>::infinity();
  const double per_channel = nccl_channel_bw(spec, tree, protocol);
  if (per_channel > 0) cap = nccl_channels(spec) * per_channel;
  const double whole = nccl_max_bw(spec, tree, protocol);
  if (whole > 0) cap = std::min(cap, whole);
  return cap;
}

}  // namespace stepcast::cluster
