// The exact fast path of a synchronous parameter server whose clients are interchangeable
// (step_paths.hpp), on the max-min network. Why it is exact:
// - With sync steps started together, fifo order, no straggler noise and no node-local
//   aggregation, every client runs the same op graph, sends the same pieces in the same order
//   and waits on the same versions, so if the network gives every client's flow of one group
//   (pull from shard s, or push to shard s) the same rate, all clients stay in lock step. (Ties
//   cannot split them: a step starts after every event of its instant, worker_runtime.cpp.)
// - The network does, when the fabric looks the same from every client: each client's path of a
//   group has worker 0's length and latency, and position by position its links map onto worker
//   0's (one image per link) with the same capacity and the same number of members of every
//   group. Then every link constraint is a copy of one on worker 0's links, and the max-min
//   allocation in which each group has the rate it gets in the reduced network (worker 0's links,
//   each crossed by that many members) gives every flow a bottleneck: it is the max-min allocation.
// - A shard applies one gradient per client of a piece, one after another; the representative's
//   one gradient is applied for as long as all of them.
// - Every link of the cluster carries the bytes of its image in the reduced network.
// - cluster.rpc_latency replaces every client's pull and push latency alike. A message overhead
//   (training.ps.message_overhead) would not: a shard's lane serves the clients one by one, so
//   the path declines it. A worker's host CPU per byte (workload.comm_cpu_per_byte) is each
//   client's own, alike for all, so the representative's is every client's.
// - TCP incast (ClusterSpec::incast) counts the clients sending into each node at once, which one
//   client cannot stand for: the path declines it.
// The check costs one path per (client, shard, direction); the simulation, one client's events.
#include <cstdint>
#include <optional>
#include <vector>

#include "scheme/collective_timing.hpp"
#include "scheme/parameter_server_exchange.hpp"
#include "scheme/step_paths.hpp"
#include "stepcast/detail/scheme/costs.hpp"

namespace stepcast::scheme {
namespace {

constexpr uint32_t kUnmapped = ~uint32_t{0};

/// Worker 0 standing for every client, and where each cluster link's bytes come from.
struct Reduction {
  RepresentativeClient client;
  std::vector<double> capacities;  ///< reduced link -> bytes/s
  std::vector<uint32_t> source;    ///< cluster link -> the reduced link it copies, or kUnmapped
};

std::optional<Reduction> reduce_to_one_client(const cluster::Cluster& cluster, const PsConfig& ps) {
  const int n = cluster.spec.workers;
  const int p = ps.count;
  const size_t links = cluster.links.size();
  std::vector<uint32_t> image(links, kUnmapped);  // cluster link -> the link of worker 0's it copies
  std::vector<uint32_t> members(links, 0);        // of the current group
  std::vector<uint64_t> total(links, 0);          // over all groups
  std::vector<uint32_t> touched;
  Reduction r;
  r.client.clients = n;
  r.client.pull_paths.resize(p);
  r.client.push_paths.resize(p);
  r.client.pull_latency.resize(p);
  r.client.push_latency.resize(p);
  std::vector<uint32_t> reduced(links, kUnmapped);
  for (int group = 0; group < 2 * p; ++group) {
    const int s = group / 2;
    const bool pull = group % 2 == 0;
    const cluster::Endpoint shard = ps_shard_endpoint(cluster, ps, s);
    cluster::Path first;
    for (int c = 0; c < n; ++c) {
      const cluster::Endpoint at = cluster.worker_endpoint(c);
      cluster::Path path = pull ? cluster.path(shard, at) : cluster.path(at, shard);
      if (c == 0) {
        first = path;
      } else if (path.links.size() != first.links.size() || path.latency != first.latency) {
        return std::nullopt;
      }
      for (size_t i = 0; i < path.links.size(); ++i) {
        const uint32_t l = path.links[i];
        const uint32_t copy_of = first.links[i];
        if (image[l] == kUnmapped) {
          image[l] = copy_of;
        } else if (image[l] != copy_of) {
          return std::nullopt;
        }
        if (cluster.links[l].bw != cluster.links[copy_of].bw) return std::nullopt;
        if (members[l]++ == 0) touched.push_back(l);
      }
    }
    for (uint32_t l : touched) {
      if (members[l] != members[image[l]]) return std::nullopt;
      total[l] += members[l];
    }
    std::vector<net::LinkUse>& path = pull ? r.client.pull_paths[s] : r.client.push_paths[s];
    for (uint32_t l : first.links) {
      if (reduced[l] == kUnmapped) {
        reduced[l] = static_cast<uint32_t>(r.capacities.size());
        r.capacities.push_back(cluster.links[l].bw);
      }
      path.push_back({reduced[l], members[l]});
    }
    (pull ? r.client.pull_latency[s] : r.client.push_latency[s]) = first.latency;
    for (uint32_t l : touched) members[l] = 0;
    touched.clear();
  }
  // A copy that some group's members miss (and so carries fewer in all) is no copy.
  r.source.assign(links, kUnmapped);
  for (size_t l = 0; l < links; ++l) {
    if (image[l] == kUnmapped) continue;
    if (total[l] != total[image[l]]) return std::nullopt;
    r.source[l] = reduced[image[l]];
  }
  return r;
}

}  // namespace

std::optional<SimulationResult> simulate_ps_fast(const workload::Workload& w,
                                                 const cluster::ClusterSpec& spec, const SchemeConfig& scheme,
                                                 const SimulationOptions& options) {
  const PsConfig& ps = scheme.ps;
  if (scheme.mode != Mode::Sync || ps.order != PsOrder::Fifo || options.compute_cv > 0) return std::nullopt;
  // A shard's message lane handles the clients' messages one after another, so clients that were
  // alike leave it at different times: no one client stands for the others.
  if (ps.message_overhead > 0) return std::nullopt;
  if (ps.local_aggregation && spec.workers_per_node > 1) return std::nullopt;
  // Incast counts the senders into each node's port: one client standing for many would count
  // one (docs/models.md, "Incast").
  if (spec.incast.enabled()) return std::nullopt;
  // Without sharing, clients on one link do not slow each other, but a group's members would
  // (each member's rate is the link over the members): only max-min reads member counts right.
  if (options.network != NetworkKind::MaxMin) return std::nullopt;
  const cluster::Cluster cluster = ps_cluster(spec, ps);
  const std::optional<Reduction> reduction = reduce_to_one_client(cluster, ps);
  if (!reduction) return std::nullopt;
  const std::unique_ptr<net::NetworkModel> network = make_network(reduction->capacities, NetworkKind::MaxMin);
  const std::vector<uint32_t>& source = reduction->source;
  return run_steps(w, cluster, scheme, options, *network, &reduction->client,
                   [&](const std::vector<double>& reduced_bytes) {
                     std::vector<double> bytes(source.size(), 0.0);
                     for (size_t l = 0; l < source.size(); ++l) {
                       if (source[l] != kUnmapped) bytes[l] = reduced_bytes[source[l]];
                     }
                     return bytes;
                   });
}

}  // namespace stepcast::scheme
