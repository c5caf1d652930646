// simgrid_flows: runs a set of flows through SimGrid's CM02 max-min network model and prints
// when each completes. An independent check of stepcast's FlowNetwork (net/flow_network.cpp),
// built only with -DSTEPCAST_WITH_SIMGRID=ON and run as a separate process by
// tests/net/simgrid_crosscheck_test.cpp. SimGrid's s4u engine owns its clock, so it runs here,
// outside stepcast's simulator.
//
// Input (stdin, whitespace separated; capacities in bytes/s, times in s, sizes in bytes):
//   links <L>  <capacity_0> ... <capacity_{L-1}>
//   flows <F>
//   <start> <bytes> <max_rate> <n> <link_1> ... <link_n>      one line per flow, n >= 1
// A link listed k times in one flow's path counts k times against its capacity (stepcast's
// LinkUse::count). max_rate > 0 bounds the flow's rate (SimGrid's Comm::set_rate, stepcast's
// FlowSpec::max_rate); 0 leaves it unbounded. Output (stdout): one line per flow, in input order,
// its completion time in s.
//
//   printf 'links 1 1e9\nflows 2\n0 1000000000 0 1 0\n0 500000000 0 1 0\n' | simgrid_flows
//   -> 1.5 and 1 (the two flows share the link until the smaller one is done)
//
// The model is SimGrid's plain max-min without corrections: network/model:CM02 (bandwidth and
// latency factors 1, weight-S 0, so every flow has the same sharing weight), cross-traffic off
// (no 5% reverse flow), TCP-gamma 0 (no window bound), latency 0 on every link, every link
// SHARED. Each flow gets its own pair of hosts with a route over exactly its links.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

namespace {

struct Flow {
  double start = 0;
  double bytes = 0;
  double max_rate = 0;  // bytes/s; 0: unbounded
  std::vector<unsigned> links;
};

[[noreturn]] void fail(const std::string& message) {
  std::cerr << "simgrid_flows: " << message << "\n";
  std::exit(2);
}

void expect(std::istream& in, const std::string& word) {
  std::string got;
  if (!(in >> got) || got != word) fail("expected '" + word + "', got '" + got + "'");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<double> capacities;
  std::vector<Flow> flows;
  size_t count = 0;
  expect(std::cin, "links");
  if (!(std::cin >> count)) fail("expected the number of links");
  capacities.resize(count);
  for (double& c : capacities) {
    if (!(std::cin >> c) || !(c > 0)) fail("expected a positive link capacity");
  }
  expect(std::cin, "flows");
  if (!(std::cin >> count)) fail("expected the number of flows");
  flows.resize(count);
  for (Flow& flow : flows) {
    size_t n = 0;
    if (!(std::cin >> flow.start >> flow.bytes >> flow.max_rate >> n) || flow.start < 0 || flow.bytes < 0 ||
        flow.max_rate < 0 || n == 0) {
      fail("expected '<start> <bytes> <max_rate> <n>' with start >= 0, bytes >= 0, max_rate >= 0, n >= 1");
    }
    // SimGrid simulates whole bytes.
    if (flow.bytes != std::floor(flow.bytes) || flow.bytes > 9e15)
      fail("bytes must be a whole number below 9e15");
    flow.links.resize(n);
    for (unsigned& l : flow.links) {
      if (!(std::cin >> l) || l >= capacities.size()) fail("link index out of range");
    }
  }

  // SimGrid reads its options from the command line; ours go first, so the caller can still
  // override them (e.g. --cfg=maxmin/precision:1e-9). Config changes are logged at INFO level.
  std::vector<std::string> args = {argc > 0 ? argv[0] : "simgrid_flows", "--log=root.thresh:warning",
                                   "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                                   "--cfg=network/TCP-gamma:0"};
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  int cargc = static_cast<int>(args.size());
  sg4::Engine engine(&cargc, cargs.data());

  auto* zone = sg4::create_full_zone("world");
  std::vector<const sg4::Link*> links;
  for (size_t l = 0; l < capacities.size(); ++l) {
    links.push_back(zone->create_link("link" + std::to_string(l), capacities[l])
                        ->set_sharing_policy(sg4::Link::SharingPolicy::SHARED)
                        ->set_latency(0)
                        ->seal());
  }
  std::vector<sg4::Host*> sources;
  std::vector<sg4::Host*> destinations;
  for (size_t f = 0; f < flows.size(); ++f) {
    sources.push_back(zone->create_host("src" + std::to_string(f), 1e9));
    destinations.push_back(zone->create_host("dst" + std::to_string(f), 1e9));
    std::vector<sg4::LinkInRoute> route;
    for (unsigned l : flows[f].links) route.emplace_back(links[l]);
    zone->add_route(sources[f]->get_netpoint(), destinations[f]->get_netpoint(), nullptr, nullptr, route,
                    false);
  }
  zone->seal();

  // One mailbox per flow and a receiver waiting on it from the start, so the comm begins when
  // the sender puts. Comm::set_rate is honoured on mailbox comms (sendto comms ignore it).
  std::vector<double> completion(flows.size(), -1);
  for (size_t f = 0; f < flows.size(); ++f) {
    sg4::Mailbox* mailbox = sg4::Mailbox::by_name("flow" + std::to_string(f));
    sg4::Actor::create("receiver" + std::to_string(f), destinations[f],
                       [mailbox] { (void)mailbox->get<int>(); });
    sg4::Actor::create("sender" + std::to_string(f), sources[f], [&, f, mailbox] {
      static int payload = 0;
      sg4::this_actor::sleep_until(flows[f].start);
      sg4::CommPtr comm = mailbox->put_init(&payload, static_cast<uint64_t>(flows[f].bytes));
      if (flows[f].max_rate > 0) comm->set_rate(flows[f].max_rate);
      comm->wait();
      completion[f] = sg4::Engine::get_clock();
    });
  }
  engine.run();

  for (double t : completion) std::printf("%.17g\n", t);
  return 0;
}
