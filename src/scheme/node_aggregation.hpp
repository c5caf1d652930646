// Private to scheme/: node-local aggregation in front of the parameter servers (TensorFlow's
// distributed_replicated, BytePS). The GPUs of a node sum their gradients at the node's first
// GPU (the leader), which alone pushes to and pulls from the servers and broadcasts parameters
// inside the node; the servers' clients are then nodes, not GPUs. Without it (or with one GPU a
// node) every worker is its own client and leader. Owns the client mapping and the per-node
// counters; the transfers themselves are the parameter-server exchange's.
#pragma once

#include <cstddef>
#include <vector>

#include "stepcast/cluster/cluster.hpp"

namespace stepcast::scheme {

class NodeAggregation {
 public:
  /// `workers` simulated workers of `cluster` (all of them, or one standing for all, then never
  /// aggregated); a node's GPUs are its workers (cluster.placement or workers_per_node).
  NodeAggregation(bool requested, const cluster::Cluster& cluster, int workers, std::size_t pieces);

  [[nodiscard]] bool enabled() const { return enabled_; }
  [[nodiscard]] int clients() const { return clients_; }
  [[nodiscard]] int client_of(int w) const {
    return enabled_ ? node_of_worker_[static_cast<std::size_t>(w)] : w;
  }
  [[nodiscard]] int leader_of_client(int client) const {
    return enabled_ ? first_worker_[static_cast<std::size_t>(client)] : client;
  }
  [[nodiscard]] int leader_of(int w) const { return leader_of_client(client_of(w)); }
  /// GPUs behind a client (1 without aggregation).
  [[nodiscard]] int members(int client) const;

  /// A GPU of `client` began its step. The node pulls once all its GPUs have started the step,
  /// so that no broadcast reaches a GPU still finishing the previous step (whose counters it
  /// would be taken for; async nodes would then wait forever for it). True: pull now.
  [[nodiscard]] bool member_started(int client);
  /// The leader of `client` holds one more local gradient of `piece`; true once it has them all
  /// (then it pushes their sum).
  [[nodiscard]] bool gradient_gathered(int client, int piece);

 private:
  bool enabled_;
  std::vector<int> first_worker_, node_of_worker_;  // as cluster::Cluster's
  int clients_;
  std::size_t pieces_;
  std::vector<int> gathered_;  // client * pieces + piece -> local gradients collected
  std::vector<int> started_;   // client -> GPUs that started their current step
};

}  // namespace stepcast::scheme
