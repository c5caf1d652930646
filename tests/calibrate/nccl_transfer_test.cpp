// `calibrate nccl-tests --fit nccl` across node counts (issue 30): fitted on the smallest
// multi-node sweep of a cluster (or on a few of its node counts), the fit predicts the same
// cluster's other node counts. Development data: the shared nccl-tests sweeps of ABCI 2.0's A100
// (HDR) and V100 (EDR) nodes at 2-32 nodes and an H100 cluster on 400G InfiniBand at 2, 4 and 8
// nodes (skipped, saying so, when ../shared/data is absent). The errors asserted are the levels
// measured here, labelled as regression pins where they are that; nothing is tuned to the held-out
// node counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "stepcast/detail/calibrate/collective_log.hpp"
#include "stepcast/detail/calibrate/ring_calibration.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"

namespace stepcast::calibrate {
namespace {
namespace nccl_transfer_test {  // this file's own names: test files are compiled several to a unit

const std::filesystem::path kTables = std::filesystem::path(STEPCAST_SHARED_DATA) / "tables";

/// One cluster of the shared tables and what its header says about its nodes.
struct SharedCluster {
  std::string file;
  int gpus_per_node = 8;
  cluster::GpuGeneration generation = cluster::GpuGeneration::Hopper;
  int nics_per_node = 1;
  cluster::CpuVendor cpu = cluster::CpuVendor::Intel;
  double nic_line_rate = 0;  ///< bytes/s each way per NIC, the ports' signalling rate
};

// ABCI 2.0 (A): 8 A100-SXM4 and 4 HDR200 ports per node, Xeon Platinum 8360Y hosts.
const SharedCluster kAbciA{"nccl_tests_abci2_nodeA_a100_hdr_allreduce_bcast_1to16nodes.csv",
                           8,
                           cluster::GpuGeneration::Ampere,
                           4,
                           cluster::CpuVendor::Intel,
                           25e9};
// ABCI 2.0 (V): 4 V100-SXM2 and 2 EDR ports per node, Xeon Gold 6148 hosts.
const SharedCluster kAbciV{"nccl_tests_abci2_nodeV_v100_edr_allreduce_bcast_1to32nodes.csv",
                           4,
                           cluster::GpuGeneration::Volta,
                           2,
                           cluster::CpuVendor::Intel,
                           12.5e9};
// nccl-tests issue 309: 8 H100 per node on 400G InfiniBand; 8 NICs per node is the maintainer's
// inference, the host CPU is not given (Intel assumed: NCCL's LL table only matters below 1 MiB,
// which this sweep does not measure).
const SharedCluster kH100{"nccl_tests_h100_ib400_2_4_8nodes_allreduce_issue309.csv",
                          8,
                          cluster::GpuGeneration::Hopper,
                          8,
                          cluster::CpuVendor::Intel,
                          50e9};

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string field; std::getline(in, field, ',');) out.push_back(field);
  return out;
}

/// The out-of-place all_reduce rows of a shared table by node count (nodes >= 2, the runs at
/// NCCL's defaults where the table has a config column), in seconds.
std::map<int, std::vector<Measurement>> read_sweeps(const SharedCluster& c) {
  std::ifstream in(kTables / c.file);
  std::map<int, std::vector<Measurement>> out;
  std::vector<std::string> header;
  auto column = [&](const std::string& name) {
    const auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<int>(it - header.begin());
  };
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    if (header.empty()) {
      header = split(line);
      continue;
    }
    const std::vector<std::string> f = split(line);
    auto at = [&](const std::string& name) { return f.at(static_cast<size_t>(column(name))); };
    if (at("collective") != "all_reduce" || at("placement") != "out_of_place") continue;
    if (column("config") >= 0 && at("config") != "default") continue;
    const int nodes = std::stoi(at("nodes"));
    if (nodes < 2) continue;
    out[nodes].push_back({std::stod(at("size_bytes")), std::stod(at("time_us")) * 1e-6, line_no});
  }
  return out;
}

FitOptions options_of(const SharedCluster& c) {
  FitOptions o;
  o.method = FitMethod::Nccl;
  o.workers_per_node = c.gpus_per_node;
  o.gpu_generation = c.generation;
  o.cpu_vendor = c.cpu;
  o.nics_per_node = c.nics_per_node;
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// Median |error| of `fit` over the sizes >= 1 MiB of each node count's sweep, printed.
std::map<int, double> score(const NcclFit& fit, const std::map<int, std::vector<Measurement>>& sweeps,
                            int gpus_per_node) {
  std::map<int, double> out;
  for (const auto& [nodes, points] : sweeps) {
    std::vector<double> errors;
    std::string row;
    for (const Measurement& m : points) {
      if (m.bytes < 1048576) continue;
      const double e = (fit.time(m.bytes, nodes * gpus_per_node) - m.time) / m.time;
      errors.push_back(std::abs(e));
      row += " " + std::to_string(static_cast<int>(std::lround(100 * e))) + "%";
      // What NCCL's model runs there, as the fit's cluster picks it.
      const scheme::CollectiveResult r =
          scheme::simulate_collective(fit.spec(nodes * gpus_per_node), m.bytes,
                                      scheme::CollectiveOp::AllReduce, scheme::AllReduceAlgorithm::Auto,
                                      scheme::NetworkKind::MaxMin, true, scheme::CollectiveProtocol::Auto);
      row += std::string("(") + scheme::to_string(r.algorithm) + "/" + scheme::to_string(r.protocol) + ")";
    }
    out[nodes] = median(errors);
    std::cout << "  " << nodes << " nodes: median |error| " << 100 * out[nodes] << "% over " << errors.size()
              << " sizes >= 1 MiB;" << row << "\n";
  }
  return out;
}

TEST(NcclTransferAcceptance, SmallestMultiNodeCountPredictsTheOthers) {
  for (const SharedCluster& c : {kAbciA, kAbciV, kH100}) {
    if (!std::filesystem::exists(kTables / c.file)) {
      GTEST_SKIP() << "SKIPPED: " << (kTables / c.file) << " is absent (../shared/data not checked out)";
    }
    const std::map<int, std::vector<Measurement>> sweeps = read_sweeps(c);
    ASSERT_GE(sweeps.size(), 3u) << c.file;
    const auto& [fit_nodes, fit_points] = *sweeps.begin();
    const Calibration cal = calibrate_ring(fit_points, fit_nodes * c.gpus_per_node, options_of(c));
    std::cout << c.file << ": fitted at " << fit_nodes << " nodes: B = " << cal.nccl.nic_bw / 1e9
              << " GB/s per NIC, lambda = " << cal.nccl.latency_scale << ", Simple's cap "
              << cal.nccl.channels_bw / 1e9 << " GB/s (sweep: " << cal.nccl_channels_fitted_bw / 1e9
              << ", gain " << cal.nccl_channels_gain << ")\n";
    const std::map<int, double> median_error = score(cal.nccl, sweeps, c.gpus_per_node);
    // In sample the fit describes its own node count (the issue-309 2-node run within 1%).
    EXPECT_LT(median_error.at(fit_nodes), 0.15) << c.file;
    // Held out: REGRESSION PINS at the levels measured (2026-12-06), +-3 points. The goal,
    // 15% median from 1 MiB up at the other node counts, is NOT met (docs/calibration.md, "Across
    // node counts"): the 2-node fit puts into B what is the 2-node tree's advantage and a
    // per-channel limit that does not change with the node count. With B fitted, one node count
    // cannot tell that limit (the channels' speed) from B, so it stays in B (the channels' speed
    // gains nothing here); NicsLineRateAndChannelsSpeedFromTheSmallestNodeCounts gives B.
    const std::map<std::string, std::map<int, double>> pins = {
        {kAbciA.file, {{4, 0.596}, {8, 0.057}, {16, 0.472}}},
        {kAbciV.file, {{4, 0.612}, {8, 0.341}, {16, 0.234}, {32, 0.243}}},
        {kH100.file, {{4, 0.267}, {8, 0.185}}}};
    for (const auto& [nodes, pin] : pins.at(c.file)) {
      EXPECT_NEAR(median_error.at(nodes), pin, 0.03)
          << c.file << " at " << nodes << " nodes (regression pin)";
    }
  }
}

TEST(NcclTransferAcceptance, TwoSmallestNodeCountsPredictTheOthers) {
  for (const SharedCluster& c : {kAbciA, kAbciV, kH100}) {
    if (!std::filesystem::exists(kTables / c.file)) {
      GTEST_SKIP() << "SKIPPED: " << (kTables / c.file) << " is absent (../shared/data not checked out)";
    }
    const std::map<int, std::vector<Measurement>> sweeps = read_sweeps(c);
    std::vector<NodeCountSweep> fitted;
    for (auto it = sweeps.begin(); fitted.size() < 2; ++it)
      fitted.push_back({it->second, it->first * c.gpus_per_node});
    const Calibration cal = calibrate_nccl_sweeps(fitted, options_of(c));
    std::cout << c.file << ": fitted at " << fitted[0].workers / c.gpus_per_node << " and "
              << fitted[1].workers / c.gpus_per_node << " nodes: B = " << cal.nccl.nic_bw / 1e9
              << " GB/s per NIC, lambda = " << cal.nccl.latency_scale
              << ", lambda_net = " << cal.nccl.net_latency_scale.value_or(0) << ", Simple's cap "
              << cal.nccl.channels_bw / 1e9 << " GB/s (sweeps: " << cal.nccl_channels_fitted_bw / 1e9
              << ", gain " << cal.nccl_channels_gain << ")\n";
    ASSERT_EQ(cal.node_counts.size(), 2u);
    ASSERT_TRUE(cal.nccl.net_latency_scale.has_value());  // two node counts identify it
    const std::map<int, double> median_error = score(cal.nccl, sweeps, c.gpus_per_node);
    // REGRESSION PINS at the levels measured (2026-12-06, with the channels' speed fitted: taken on
    // both ABCI clusters, 67% and 40% less squared error), +-3 points, for the node counts the fit
    // did not see; the 15% goal is met only by ABCI (A) at 16 nodes.
    const std::map<std::string, std::map<int, double>> pins = {
        {kAbciA.file, {{8, 0.357}, {16, 0.020}}},
        {kAbciV.file, {{8, 0.202}, {16, 0.235}, {32, 0.325}}},
        {kH100.file, {{8, 0.257}}}};
    for (const auto& [nodes, pin] : pins.at(c.file)) {
      EXPECT_NEAR(median_error.at(nodes), pin, 0.03)
          << c.file << " at " << nodes << " nodes (regression pin)";
    }
  }
}

TEST(NcclTransferAcceptance, NicsLineRateAndChannelsSpeedFromTheSmallestNodeCounts) {
  // B given as the ports' line rate (the node's known hardware: 25 GB/s per HDR200 port, 12.5 per
  // EDR port, 50 per 400G NIC), so the sweep's limit goes into the channels' speed, which holds at
  // every node count, rather than into B.
  for (const SharedCluster& c : {kAbciA, kAbciV, kH100}) {
    if (!std::filesystem::exists(kTables / c.file)) {
      GTEST_SKIP() << "SKIPPED: " << (kTables / c.file) << " is absent (../shared/data not checked out)";
    }
    const std::map<int, std::vector<Measurement>> sweeps = read_sweeps(c);
    FitOptions o = options_of(c);
    o.nic_bw = c.nic_line_rate;
    const auto& [fit_nodes, fit_points] = *sweeps.begin();
    const Calibration one = calibrate_ring(fit_points, fit_nodes * c.gpus_per_node, o);
    EXPECT_EQ(one.nccl.nic_bw, c.nic_line_rate);
    std::cout << c.file << ": line rate " << c.nic_line_rate / 1e9 << " GB/s per NIC, fitted at " << fit_nodes
              << " nodes: lambda = " << one.nccl.latency_scale << ", channels' speed "
              << one.nccl.channels_bw / 1e9 << " GB/s (sweep: " << one.nccl_channels_fitted_bw / 1e9
              << ", gain " << one.nccl_channels_gain << ")\n";
    const std::map<int, double> one_error = score(one.nccl, sweeps, c.gpus_per_node);
    EXPECT_LT(one_error.at(fit_nodes), 0.15) << c.file;
    std::vector<NodeCountSweep> fitted;
    for (auto it = sweeps.begin(); fitted.size() < 2; ++it)
      fitted.push_back({it->second, it->first * c.gpus_per_node});
    const Calibration two = calibrate_nccl_sweeps(fitted, o);
    std::cout << "  and at 2 node counts: lambda = " << two.nccl.latency_scale
              << ", lambda_net = " << two.nccl.net_latency_scale.value_or(0) << ", channels' speed "
              << two.nccl.channels_bw / 1e9 << " GB/s (gain " << two.nccl_channels_gain << ")\n";
    const std::map<int, double> two_error = score(two.nccl, sweeps, c.gpus_per_node);
    // REGRESSION PINS at the levels measured (2026-12-06), +-3 points, held-out node counts only.
    // 15% is met by ABCI (A) at 4 and 16 nodes (not at 8: the noisy run, 1.4-2.1x slower than its
    // neighbours), by ABCI (V) at none (4 nodes 15.7%), and not on the H100 cluster (its 2-node run
    // is aberrant).
    const std::map<std::string, std::map<int, double>> one_pins = {
        {kAbciA.file, {{4, 0.039}, {8, 0.329}, {16, 0.043}}},
        {kAbciV.file, {{4, 0.157}, {8, 0.200}, {16, 0.250}, {32, 0.338}}},
        {kH100.file, {{4, 0.166}, {8, 0.157}}}};
    for (const auto& [nodes, pin] : one_pins.at(c.file)) {
      EXPECT_NEAR(one_error.at(nodes), pin, 0.03) << c.file << " at " << nodes << " nodes (regression pin)";
    }
    const std::map<std::string, std::map<int, double>> two_pins = {
        {kAbciA.file, {{8, 0.343}, {16, 0.026}}},
        {kAbciV.file, {{8, 0.204}, {16, 0.234}, {32, 0.324}}},
        {kH100.file, {{8, 0.228}}}};
    for (const auto& [nodes, pin] : two_pins.at(c.file)) {
      EXPECT_NEAR(two_error.at(nodes), pin, 0.03) << c.file << " at " << nodes << " nodes (regression pin)";
    }
    // Where the sweep has a limit below the NICs (both ABCI clusters), the channels' speed carries it.
    if (c.file != kH100.file) {
      EXPECT_GT(one.nccl.channels_bw, 0) << c.file;
    }
  }
}

TEST(NcclTransfer, ChannelsSpeedCapsEveryProtocolAndLeavesLLsTableToTheNodeCount) {
  // The channels' speed C caps every candidate's bus bandwidth at C x its efficiency, at every node
  // count. LL's cap is NCCL's table, by node count (39 GB/s at 2 Intel nodes, 20.4 beyond): C is
  // written over it only where C x efficiency is below the table at every node count, so the cluster
  // at 2 nodes (what the file keeps) and at 8 say the same.
  for (const double c_bw : {10e9, 200e9}) {
    NcclFit fit{16, 8, 50e9, 1};
    fit.nics_per_node = 8;
    fit.channels_bw = c_bw;
    for (const int ranks : {16, 64}) {
      const cluster::ClusterSpec spec = fit.spec(ranks);
      for (const bool tree : {false, true}) {
        for (int p = 0; p < cluster::kNcclProtocols; ++p) {
          const auto protocol = static_cast<cluster::NcclProtocol>(p);
          const cluster::NcclCost& cost = (tree ? spec.nccl.tree : spec.nccl.ring)[p];
          const double own = c_bw * cost.efficiency;
          if (protocol == cluster::NcclProtocol::LL && own > 20.4e9) {
            EXPECT_FALSE(cost.max_bw.has_value());
            EXPECT_EQ(cluster::nccl_max_bw(spec, tree, protocol), ranks == 16 ? 39e9 : 20.4e9);
          } else {
            ASSERT_TRUE(cost.max_bw.has_value());
            EXPECT_EQ(*cost.max_bw, own);
          }
        }
      }
    }
  }
}

TEST(NcclTransfer, OneNodeCountLeavesTheNetworkHopsScaleUnidentified) {
  // Data from the model itself at 2 and 8 nodes, with the network hops 3x NCCL's and the rest 1.5x:
  // one node count gives a single lambda (lambda_net unset, reported as not identified); both
  // together recover the two scales and B.
  NcclFit truth{16, 8, 40e9, 1.5};
  truth.nics_per_node = 8;
  truth.net_latency_scale = 3.0;
  auto sweep_at = [&](int ranks) {
    std::vector<Measurement> out;
    int line = 1;
    for (double bytes = 8; bytes <= 8.6e9; bytes *= 4)
      out.push_back({bytes, truth.time(bytes, ranks), line++});
    return out;
  };
  FitOptions o;
  o.method = FitMethod::Nccl;
  o.workers_per_node = 8;
  o.nics_per_node = 8;
  const Calibration one = calibrate_nccl_sweeps({{sweep_at(16), 16}}, o);
  EXPECT_FALSE(one.nccl.net_latency_scale.has_value());
  EXPECT_TRUE(one.node_counts.empty());
  const Calibration two = calibrate_nccl_sweeps({{sweep_at(16), 16}, {sweep_at(64), 64}}, o);
  ASSERT_TRUE(two.nccl.net_latency_scale.has_value());
  EXPECT_NEAR(*two.nccl.net_latency_scale, 3.0, 0.01 * 3.0);
  EXPECT_NEAR(two.nccl.latency_scale, 1.5, 0.01 * 1.5);
  EXPECT_NEAR(two.nccl.nic_bw, 40e9, 0.01 * 40e9);
  ASSERT_EQ(two.node_counts.size(), 2u);
  EXPECT_EQ(two.node_counts[1].nodes, 8);
  EXPECT_LT(two.node_counts[1].max_error, 1e-3);
}

/// The rows of one node count and GPUs per node for one collective (out of place), in seconds.
std::vector<Measurement> one_node_rows(const SharedCluster& c, const std::string& collective, int gpus) {
  std::ifstream in(kTables / c.file);
  std::vector<Measurement> out;
  std::vector<std::string> header;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    if (header.empty()) {
      header = split(line);
      continue;
    }
    const std::vector<std::string> f = split(line);
    auto at = [&](const std::string& name) {
      return f.at(static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin()));
    };
    if (at("collective") == collective && at("placement") == "out_of_place" && at("nodes") == "1" &&
        at("gpus_per_node") == std::to_string(gpus))
      out.push_back({std::stod(at("size_bytes")), std::stod(at("time_us")) * 1e-6, 0});
  }
  return out;
}

TEST(BroadcastFromTheAllReduceFit, OneNodeOfEightA100) {
  // Fitted: the ring all-reduce on ABCI A100's one-node, 8-GPU sweep (--fit regimes, its large-size
  // regime on the intra-node links); predicted: the broadcast of the same node, measured in the
  // same run, at the sizes of that regime (4-32 MiB). NCCL pipelines a broadcast along the ring in
  // small chunks, so it runs at about the all-reduce's bus bandwidth: 155 GB/s measured at 32 MiB
  // against the all-reduce's 158. stepcast's broadcast as 64 fixed chunks took 1.1-2 S/B.
  if (!std::filesystem::exists(kTables / kAbciA.file)) GTEST_SKIP() << "shared data not found";
  const std::vector<Measurement> reduce = one_node_rows(kAbciA, "all_reduce", 8);
  const std::vector<Measurement> broadcast = one_node_rows(kAbciA, "broadcast", 8);
  ASSERT_EQ(reduce.size(), 24u);
  ASSERT_EQ(broadcast.size(), 24u);
  const Calibration fit = calibrate_ring(reduce, 8, {.method = FitMethod::Regimes});
  const Regime& large = fit.regimes.regimes.back();
  cluster::ClusterSpec node;
  node.workers = 8;
  node.workers_per_node = 8;
  node.intra_node_bw = large.bw;
  node.intra_node_latency = large.step_latency;
  double worst = 0;
  for (const Measurement& m : broadcast) {
    if (m.bytes < large.from_bytes) continue;
    const double predicted = scheme::simulate_collective(node, m.bytes, scheme::CollectiveOp::Broadcast,
                                                         scheme::AllReduceAlgorithm::Ring)
                                 .time;
    const double error = predicted / m.time - 1;
    std::cout << "broadcast " << m.bytes << " B: measured " << m.time * 1e6 << " us, predicted "
              << predicted * 1e6 << " us (" << 100 * error << "%)\n";
    worst = std::max(worst, std::fabs(error));
  }
  // Regression pin: -5.5% to +18.2% at 4-32 MiB (measured 2026-12-07; the small sizes slow by
  // the chain's 7 steps at the all-reduce's fitted step latency, 8.3 us, which holds protocol
  // effects a broadcast does not pay in full); the 64-chunk model took its 70 steps of it,
  // 3.4-9x the measured times. The bound sits just above; not a target.
  EXPECT_LT(worst, 0.20);
}

}  // namespace nccl_transfer_test
}  // namespace
}  // namespace stepcast::calibrate
