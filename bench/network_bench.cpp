// The flow network alone: incremental against full re-sharing on a churning workload (issue 4
// asks that a change re-shares only the flows it can affect). Both modes run the same seeded
// flow sequence in one process, so their times compare side by side.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "stepcast/detail/net/network_model.hpp"

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

// An incast, a parameter server's traffic without the rest of the step: C clients each keep one
// flow busy to every one of S servers (client uplink and server downlink of 3.125 GB/s, random
// message sizes, so no two flows end together); when a flow ends, the same pair starts its next
// message (a new flow: the set changes). Every flow is in one connected component, so full
// re-sharing touches C x S flows per change; the affected set is the flows the changed links hold,
// about C (the server downlinks hold every flow while the client uplinks carry S/C of theirs).
void BM_IncastChurn(benchmark::State& state) {
  const auto resharing = static_cast<net::Resharing>(state.range(0));
  const auto clients = static_cast<uint32_t>(state.range(1));
  const auto servers = static_cast<uint32_t>(state.range(2));
  constexpr int kEvents = 2000;
  const std::vector<double> capacities(clients + servers, 3.125e9);
  uint64_t events = 0, reshared = 0;
  for (auto _ : state) {
    auto network = net::make_maxmin_network(capacities, resharing);
    std::mt19937_64 rng(42);
    std::uniform_real_distribution<double> message(1e5, 1e7);
    std::vector<uint32_t> pair_of;  // flow index -> client * servers + server
    auto start = [&](uint32_t pair, double now) {
      net::FlowSpec spec{{{pair / servers, 1}, {clients + pair % servers, 1}}, message(rng)};
      const uint32_t id = net::index(network->start_flow(spec, now));
      if (pair_of.size() <= id) pair_of.resize(id + 1);
      pair_of[id] = pair;
    };
    for (uint32_t p = 0; p < clients * servers; ++p) start(p, 0.0);
    const uint64_t before = network->flows_reshared();
    for (int e = 0; e < kEvents; ++e) {
      const double t = network->next_completion();
      for (net::FlowId done : network->advance_to(t)) start(pair_of[net::index(done)], t);
    }
    (void)network->next_completion();  // the last change's re-share
    events += kEvents;
    reshared += network->flows_reshared() - before;
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["flows_reshared_per_event"] = static_cast<double>(reshared) / static_cast<double>(events);
}
BENCHMARK(BM_IncastChurn)
    ->ArgNames({"full_reshare", "clients", "servers"})
    ->Args({0, 256, 16})
    ->Args({1, 256, 16})
    ->Args({0, 1024, 64})
    ->Unit(benchmark::kMillisecond);

// K connections to one server (a parameter server's shard): host k's uplink (12.5 GB/s) and the
// server's downlink (100 GB/s) shared by all, equal messages, so all K flows complete at the same
// instant; each is restarted at once for its next message (restart_flow: same path, no re-share),
// as the PS step does with its (worker, shard) connections. What this costs per completion is the
// bookkeeping of finished and restarted flows, not the solver (one re-share, at the start).
void BM_FlowRestartBurst(benchmark::State& state) {
  const auto flows = static_cast<uint32_t>(state.range(0));
  constexpr int kRounds = 20;
  std::vector<double> capacities(flows, 12.5e9);
  capacities.push_back(100e9);
  uint64_t completions = 0;
  for (auto _ : state) {
    auto network = net::make_maxmin_network(capacities);
    for (uint32_t k = 0; k < flows; ++k) network->start_flow({{{k, 1}, {flows, 1}}, 1e6}, 0.0);
    for (int round = 0; round < kRounds; ++round) {
      const double t = network->next_completion();
      const std::vector<net::FlowId> done = network->advance_to(t);
      for (net::FlowId id : done) network->restart_flow(id, 1e6);
      completions += done.size();
    }
    benchmark::DoNotOptimize(network->num_active());
  }
  state.counters["completions_per_s"] =
      benchmark::Counter(static_cast<double>(completions), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FlowRestartBurst)->ArgName("flows")->Arg(1024)->Arg(8192)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
