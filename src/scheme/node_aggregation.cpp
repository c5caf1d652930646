#include "scheme/node_aggregation.hpp"

#include <algorithm>

namespace stepcast::scheme {

NodeAggregation::NodeAggregation(bool requested, const cluster::Cluster& cluster, int workers,
                                 std::size_t pieces)
    : enabled_(requested && workers == cluster.spec.workers && cluster.spec.workers_per_node > 1),
      clients_(enabled_ ? cluster.spec.num_worker_nodes() : workers),
      pieces_(pieces) {
  if (enabled_) {
    first_worker_ = cluster.first_worker;
    node_of_worker_ = cluster.node_of_worker;
    gathered_.assign(static_cast<std::size_t>(clients_) * pieces_, 0);
    started_.assign(clients_, 0);
  }
}

int NodeAggregation::members(int client) const {
  return enabled_ ? first_worker_[static_cast<std::size_t>(client) + 1] -
                        first_worker_[static_cast<std::size_t>(client)]
                  : 1;
}

bool NodeAggregation::member_started(int client) {
  if (!enabled_) return true;
  if (++started_[client] < members(client)) return false;
  started_[client] = 0;
  return true;
}

bool NodeAggregation::gradient_gathered(int client, int piece) {
  int& count = gathered_[static_cast<std::size_t>(client) * pieces_ + piece];
  if (++count < members(client)) return false;
  count = 0;
  return true;
}

}  // namespace stepcast::scheme
