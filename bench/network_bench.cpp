// The flow network alone: incremental against full re-sharing on a churning workload (issue 4
// asks that a change re-shares only the flows it can affect). Both modes run the same seeded
// flow sequence in one process, so their times compare side by side.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "stepcast/net/network_model.hpp"

namespace {

using namespace stepcast;

// R racks of H hosts: host h has an uplink to its rack switch (12.5 GB/s) and every rack one
// uplink to the core (50 GB/s, 4:1 oversubscribed). Each host keeps one flow to the core busy;
// when a flow ends, the host starts its next message (a new flow: the set changes). A change
// can only affect the flows of one rack, so incremental re-sharing touches H flows, full R x H.
// With `bounded`, every other flow has its own rate bound of 2 GB/s (below its fair share of the
// rack uplink, 3.1 GB/s): progressive filling then fixes flows at their bounds as well as at links.
void BM_FlowChurn(benchmark::State& state) {
  const auto resharing = static_cast<net::Resharing>(state.range(0));
  const auto racks = static_cast<uint32_t>(state.range(1));
  const bool bounded = state.range(2) != 0;
  constexpr uint32_t kHosts = 16;
  constexpr int kEvents = 5000;
  std::vector<double> capacities(racks * kHosts, 12.5e9);
  capacities.resize(racks * kHosts + racks, 50e9);
  uint64_t events = 0, reshared = 0;
  for (auto _ : state) {
    auto network = net::make_maxmin_network(capacities, resharing);
    std::mt19937_64 rng(42);
    std::uniform_real_distribution<double> message(1e6, 1e8);
    std::vector<uint32_t> host_of;  // flow index -> host
    auto start = [&](uint32_t host, double now) {
      const uint32_t rack = host / kHosts;
      net::FlowSpec spec{{{host, 1}, {racks * kHosts + rack, 1}}, message(rng)};
      if (bounded && host % 2 == 0) spec.max_rate = 2e9;
      const uint32_t id = net::index(network->start_flow(spec, now));
      if (host_of.size() <= id) host_of.resize(id + 1);
      host_of[id] = host;
    };
    for (uint32_t h = 0; h < racks * kHosts; ++h) start(h, 0.0);
    for (int e = 0; e < kEvents; ++e) {
      const double t = network->next_completion();
      for (net::FlowId done : network->advance_to(t)) start(host_of[net::index(done)], t);
    }
    events += kEvents;
    reshared += network->flows_reshared();
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["flows_reshared_per_event"] = static_cast<double>(reshared) / static_cast<double>(events);
}
BENCHMARK(BM_FlowChurn)
    ->ArgNames({"full_reshare", "racks", "bounded"})
    ->Args({0, 16, 0})
    ->Args({1, 16, 0})
    ->Args({0, 128, 0})
    ->Args({1, 128, 0})
    ->Args({0, 128, 1})
    ->Args({1, 128, 1})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
