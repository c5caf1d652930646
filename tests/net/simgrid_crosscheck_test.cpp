// Cross-check of the max-min flow network against an independent implementation: SimGrid's
// CM02 model (plain max-min, cross-traffic off), run as a separate process (tools/
// simgrid_flows.cpp). Seeded random small topologies and flow sets; every flow's completion time
// must agree within 0.1%. Built only with -DSTEPCAST_WITH_SIMGRID=ON, which defines
// STEPCAST_SIMGRID_FLOWS (the program's path); otherwise the test is skipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "stepcast/detail/net/network_model.hpp"

namespace stepcast::net {
namespace {
namespace simgrid_crosscheck_test {  // this file's own names: test files are compiled several to a unit

// Unused where the cross-check is not built (the test skips), which clang would warn about.
[[maybe_unused]] constexpr double kRelativeTolerance = 1e-3;  // the 0.1%

struct Instance {
  std::vector<double> capacities;  // bytes/s
  std::vector<double> starts;      // s
  std::vector<FlowSpec> flows;
};

// 3..10 links of 1..100 GB/s; 2..12 flows of 1 MB..1 GB (whole bytes, as SimGrid wants) starting
// within the first 50 ms, each on 1..3 distinct links, a link crossed by 2 members now and then
// (a flow group, LinkUse::count).
[[maybe_unused]] Instance random_instance(uint32_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto integer = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Instance inst;
  const int num_links = integer(3, 10);
  for (int l = 0; l < num_links; ++l) inst.capacities.push_back(std::round(std::pow(10.0, uniform(9, 11))));
  const int num_flows = integer(2, 12);
  for (int f = 0; f < num_flows; ++f) {
    std::vector<uint32_t> links(static_cast<size_t>(num_links));
    std::iota(links.begin(), links.end(), 0u);
    std::shuffle(links.begin(), links.end(), rng);
    FlowSpec spec;
    const int hops = integer(1, 3);
    for (int h = 0; h < hops; ++h)
      spec.path.push_back({links[static_cast<size_t>(h)], integer(0, 5) == 0 ? 2u : 1u});
    spec.bytes = std::round(std::pow(10.0, uniform(6, 9)));
    // Some flows start together, as a collective's do.
    inst.starts.push_back(integer(0, 2) == 0 ? 0.0 : uniform(0, 0.05));
    inst.flows.push_back(std::move(spec));
  }
  // From seed 11 on, about a third of the flows have their own rate bound (FlowSpec::max_rate,
  // SimGrid's Comm::set_rate), drawn after the rest; seeds 1-10 have none.
  if (seed > 10) {
    for (FlowSpec& spec : inst.flows) {
      if (integer(0, 2) == 0) spec.max_rate = std::round(std::pow(10.0, uniform(8.5, 10.5)));
    }
  }
  return inst;
}

// Completion time of each flow under make_maxmin_network.
[[maybe_unused]] std::vector<double> run_stepcast(const Instance& inst) {
  auto net = make_maxmin_network(inst.capacities);
  std::vector<size_t> order(inst.flows.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return inst.starts[a] < inst.starts[b]; });
  std::vector<double> done(inst.flows.size(), -1);
  std::map<uint32_t, size_t> flow_of;  // active FlowId -> instance flow (ids are reused)
  size_t next = 0;
  while (next < order.size() || net->num_active() > 0) {
    const double completion = net->next_completion();
    const double start = next < order.size() ? inst.starts[order[next]] : kInfinity;
    if (start <= completion) {
      flow_of[index(net->start_flow(inst.flows[order[next]], start))] = order[next];
      ++next;
    } else {
      for (FlowId id : net->advance_to(completion)) done[flow_of.at(index(id))] = completion;
    }
  }
  return done;
}

[[maybe_unused]] std::string to_text(const Instance& inst) {
  std::ostringstream out;
  out.precision(17);
  out << "links " << inst.capacities.size();
  for (double c : inst.capacities) out << ' ' << c;
  out << "\nflows " << inst.flows.size() << '\n';
  for (size_t f = 0; f < inst.flows.size(); ++f) {
    size_t members = 0;
    for (const LinkUse& use : inst.flows[f].path) members += use.count;
    const double bound = inst.flows[f].max_rate;
    out << inst.starts[f] << ' ' << inst.flows[f].bytes << ' ' << (bound < kInfinity ? bound : 0.0) << ' '
        << members;
    // A link crossed by k members is listed k times: SimGrid counts it k times in its constraint.
    for (const LinkUse& use : inst.flows[f].path) {
      for (uint32_t k = 0; k < use.count; ++k) out << ' ' << use.link;
    }
    out << '\n';
  }
  return out.str();
}

#ifdef STEPCAST_SIMGRID_FLOWS
// Completion time of each flow under SimGrid, from the simgrid_flows program.
std::vector<double> run_simgrid(const Instance& inst, const std::string& input_path) {
  {
    std::ofstream input(input_path);
    input << to_text(inst);
  }
  const std::string command = std::string("'") + STEPCAST_SIMGRID_FLOWS + "' < '" + input_path + "'";
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << command;
  if (pipe == nullptr) return {};
  std::string output;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
  EXPECT_EQ(pclose(pipe), 0) << command;
  std::istringstream in(output);
  std::vector<double> done;
  for (double t; in >> t;) done.push_back(t);
  return done;
}
#endif

TEST(SimGridCrossCheck, RandomFlowSetsAgreeWithinPointOnePercent) {
#ifndef STEPCAST_SIMGRID_FLOWS
  GTEST_SKIP() << "SimGrid cross-check not built (configure with -DSTEPCAST_WITH_SIMGRID=ON)";
#else
  const std::string input_path = ::testing::TempDir() + "simgrid_crosscheck_flows.txt";
  double max_difference = 0;
  size_t flows = 0;
  size_t slowed = 0;   // flows that shared a link: slower than alone on their path
  size_t bounded = 0;  // flows held at their own bound for their whole run
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Instance inst = random_instance(seed);
    const std::vector<double> ours = run_stepcast(inst);
    const std::vector<double> theirs = run_simgrid(inst, input_path);
    ASSERT_EQ(theirs.size(), ours.size()) << to_text(inst);
    for (size_t f = 0; f < ours.size(); ++f) {
      ASSERT_GT(ours[f], 0);
      double alone = inst.flows[f].max_rate;
      for (const LinkUse& use : inst.flows[f].path)
        alone = std::min(alone, inst.capacities[use.link] / use.count);
      ++flows;
      if (ours[f] - inst.starts[f] > 1.01 * inst.flows[f].bytes / alone) ++slowed;
      if (std::fabs(ours[f] - inst.starts[f] - inst.flows[f].bytes / inst.flows[f].max_rate) <=
          1e-9 * ours[f])
        ++bounded;
      const double difference = std::fabs(theirs[f] - ours[f]) / ours[f];
      max_difference = std::max(max_difference, difference);
      EXPECT_LE(difference, kRelativeTolerance)
          << "flow " << f << ": stepcast " << ours[f] << " s, SimGrid " << theirs[f] << " s\n"
          << to_text(inst);
    }
  }
  std::remove(input_path.c_str());
  // The instances must exercise sharing and bounds, or agreement says little.
  EXPECT_GE(slowed * 4, flows) << slowed << " of " << flows << " flows shared a link";
  EXPECT_GE(bounded * 10, flows) << bounded << " of " << flows << " flows ran at their bound";
  std::printf("%zu flows (%zu slowed by sharing, %zu at their own bound), max relative difference %.3g\n",
              flows, slowed, bounded, max_difference);
#endif
}

}  // namespace simgrid_crosscheck_test
}  // namespace
}  // namespace stepcast::net
