#include "scheme/node_aggregation.hpp"

#include <algorithm>

namespace stepcast::scheme {

NodeAggregation::NodeAggregation(bool requested, int workers, int workers_per_node, std::size_t pieces)
    : enabled_(requested && workers_per_node > 1),
      workers_(workers),
      per_node_(workers_per_node),
      clients_(enabled_ ? (workers + workers_per_node - 1) / workers_per_node : workers),
      pieces_(pieces) {
  if (enabled_) {
    gathered_.assign(static_cast<std::size_t>(clients_) * pieces_, 0);
    started_.assign(clients_, 0);
  }
}

int NodeAggregation::members(int client) const {
  return enabled_ ? std::min(per_node_, workers_ - client * per_node_) : 1;
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
