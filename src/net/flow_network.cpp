#include "net/flow_network.hpp"

#include <algorithm>
#include <cmath>

#include "stepcast/error.hpp"

namespace stepcast::net {
namespace {
// A flow whose completion time is within this of the time advanced to has completed: it absorbs
// the rounding of remaining/rate, so that a flow never lingers with a few bytes left.
constexpr double kRelativeTimeTolerance = 1e-12;
constexpr double kAbsoluteTimeTolerance = 1e-15;

bool completes_by(double finish, double t) {
  return finish <= t + kAbsoluteTimeTolerance + kRelativeTimeTolerance * std::fabs(t);
}

struct LinkShare {
  double share;
  uint32_t link;
  bool operator>(const LinkShare& o) const { return share != o.share ? share > o.share : link > o.link; }
};
}  // namespace

FlowNetwork::FlowNetwork(std::vector<double> capacities, bool share)
    : capacity_(std::move(capacities)), share_(share), link_bytes_(capacity_.size(), 0.0) {
  for (double c : capacity_) STEPCAST_ASSERT(c > 0 && std::isfinite(c));
}

FlowId FlowNetwork::start_flow(const FlowSpec& spec, double now) {
  reap_finished();
  STEPCAST_ASSERT(spec.bytes >= 0 && std::isfinite(spec.bytes));
  STEPCAST_ASSERT(completes_by(now_, now));
  now_ = std::max(now_, now);
  uint32_t f;
  if (!free_.empty()) {
    f = free_.back();
    free_.pop_back();
  } else {
    f = static_cast<uint32_t>(flows_.size());
    flows_.emplace_back();
  }
  Flow& flow = flows_[f];
  // Merge repeated links so each link appears once with the total member count. Callers that
  // reuse one path (a ring's group) pass it sorted and merged, which skips the sort.
  flow.path = spec.path;
  const bool merged =
      std::adjacent_find(flow.path.begin(), flow.path.end(), [](const LinkUse& a, const LinkUse& b) {
        return a.link >= b.link;
      }) == flow.path.end();
  if (!merged)
    std::sort(flow.path.begin(), flow.path.end(),
              [](const LinkUse& a, const LinkUse& b) { return a.link < b.link; });
  size_t out = 0;
  for (size_t i = 0; i < flow.path.size(); ++i) {
    STEPCAST_ASSERT(flow.path[i].link < capacity_.size() && flow.path[i].count > 0);
    if (out > 0 && flow.path[out - 1].link == flow.path[i].link) {
      flow.path[out - 1].count += flow.path[i].count;
    } else {
      flow.path[out++] = flow.path[i];
    }
  }
  flow.path.resize(out);
  flow.bytes = flow.remaining = spec.bytes;
  flow.updated = now_;
  flow.state = State::Active;
  flow.active_slot = static_cast<uint32_t>(active_.size());
  active_.push_back(f);
  if (flow.path.empty()) {
    flow.rate = kInfinity;
    schedule(f);
  } else {
    flow.rate = 0;
    dirty_ = true;
  }
  return FlowId{f};
}

double FlowNetwork::next_completion() const {
  // Dropping flows that finished and were not restarted is not observable from outside; it has
  // to happen before bandwidth is re-shared.
  const_cast<FlowNetwork*>(this)->reap_finished();
  if (dirty_) reshare();
  while (!completions_.empty()) {
    const Completion& c = completions_.top();
    const Flow& flow = flows_[c.flow];
    if (flow.state == State::Active && flow.generation == c.generation) return c.time;
    completions_.pop();
  }
  return kInfinity;
}

std::vector<FlowId> FlowNetwork::advance_to(double t) {
  reap_finished();
  if (dirty_) reshare();
  STEPCAST_ASSERT(completes_by(now_, t));
  now_ = std::max(now_, t);
  std::vector<FlowId> done;
  while (!completions_.empty() && completes_by(completions_.top().time, t)) {
    Completion c = completions_.top();
    completions_.pop();
    Flow& flow = flows_[c.flow];
    if (flow.state != State::Active || flow.generation != c.generation) continue;
    flow.state = State::Finished;
    flow.remaining = 0;
    flow.updated = now_;
    account_bytes(flow, flow.bytes);
    finished_.push_back(c.flow);
    done.push_back(FlowId{c.flow});
  }
  return done;
}

void FlowNetwork::restart_flow(FlowId id, double bytes) {
  const uint32_t f = index(id);
  STEPCAST_ASSERT(f < flows_.size() && flows_[f].state == State::Finished);
  STEPCAST_ASSERT(bytes >= 0 && std::isfinite(bytes));
  Flow& flow = flows_[f];
  flow.state = State::Active;
  flow.bytes = flow.remaining = bytes;
  flow.updated = now_;
  finished_.erase(std::find(finished_.begin(), finished_.end(), f));
  // The set of active flows is unchanged, so rates stay as they are.
  if (!dirty_) schedule(f);
}

double FlowNetwork::rate(FlowId id) const {
  const uint32_t f = index(id);
  STEPCAST_ASSERT(f < flows_.size() && flows_[f].state != State::Free);
  if (dirty_) reshare();
  return flows_[f].rate;
}

void FlowNetwork::reap_finished() {
  for (uint32_t f : finished_) remove(f);
  finished_.clear();
}

void FlowNetwork::remove(uint32_t f) {
  Flow& flow = flows_[f];
  const uint32_t slot = flow.active_slot;
  active_[slot] = active_.back();
  flows_[active_[slot]].active_slot = slot;
  active_.pop_back();
  if (!flow.path.empty()) dirty_ = true;
  flow.state = State::Free;
  flow.generation++;
  flow.path.clear();
  free_.push_back(f);
}

void FlowNetwork::account_bytes(const Flow& flow, double bytes) {
  for (const LinkUse& use : flow.path) link_bytes_[use.link] += bytes * use.count;
}

void FlowNetwork::schedule(uint32_t f) const {
  Flow& flow = flows_[f];
  flow.generation++;
  flow.finish = flow.rate > 0 ? flow.updated + flow.remaining / flow.rate : kInfinity;
  if (std::isinf(flow.rate)) flow.finish = flow.updated;
  completions_.push({flow.finish, f, flow.generation});
}

void FlowNetwork::reshare() const {
  dirty_ = false;
  ++recomputations_;
  // Bring every flow to now_ at its old rate before the rates change.
  for (uint32_t f : active_) {
    Flow& flow = flows_[f];
    if (!std::isinf(flow.rate))
      flow.remaining = std::max(0.0, flow.remaining - flow.rate * (now_ - flow.updated));
    flow.updated = now_;
  }
  if (active_.size() == 1) {
    // A flow alone (a ring step, a single transfer) runs at its narrowest link: no need to touch
    // every link of the network.
    Flow& flow = flows_[active_.front()];
    if (!flow.path.empty()) {
      flow.rate = kInfinity;
      for (const LinkUse& use : flow.path) {
        flow.rate = std::min(flow.rate, capacity_[use.link] / use.count);
        max_link_flows_ = std::max(max_link_flows_, use.count);
      }
    }
    completions_ = {};
    schedule(active_.front());
    return;
  }
  const size_t num_links = capacity_.size();
  remaining_capacity_.assign(capacity_.begin(), capacity_.end());
  unfixed_weight_.assign(num_links, 0);
  link_offsets_.assign(num_links + 1, 0);
  for (uint32_t f : active_) {
    for (const LinkUse& use : flows_[f].path) {
      unfixed_weight_[use.link] += use.count;
      link_offsets_[use.link + 1]++;
    }
  }
  for (size_t l = 0; l < num_links; ++l) {
    link_offsets_[l + 1] += link_offsets_[l];
    max_link_flows_ = std::max(max_link_flows_, unfixed_weight_[l]);
  }
  link_flow_list_.resize(link_offsets_[num_links]);
  {
    std::vector<uint32_t> fill(link_offsets_.begin(), link_offsets_.end() - 1);
    for (uint32_t f : active_) {
      for (const LinkUse& use : flows_[f].path) link_flow_list_[fill[use.link]++] = f;
    }
  }
  if (!share_) {
    // Each flow as if alone: its narrowest link, shared only among its own members.
    for (uint32_t f : active_) {
      Flow& flow = flows_[f];
      if (flow.path.empty()) continue;
      double r = kInfinity;
      for (const LinkUse& use : flow.path) r = std::min(r, capacity_[use.link] / use.count);
      flow.rate = r;
    }
  } else {
    // Progressive filling: repeatedly take the link whose fair share per member is smallest,
    // fix the rate of every flow crossing it to that share, and take their use off the other
    // links. The heap holds one entry per link and update; stale entries are skipped.
    fixed_.assign(flows_.size(), 0);
    std::priority_queue<LinkShare, std::vector<LinkShare>, std::greater<>> heap;
    for (size_t l = 0; l < num_links; ++l) {
      if (unfixed_weight_[l] > 0)
        heap.push({remaining_capacity_[l] / unfixed_weight_[l], static_cast<uint32_t>(l)});
    }
    while (!heap.empty()) {
      const LinkShare top = heap.top();
      heap.pop();
      const uint32_t l = top.link;
      if (unfixed_weight_[l] == 0 || top.share != remaining_capacity_[l] / unfixed_weight_[l]) continue;
      for (uint32_t i = link_offsets_[l]; i < link_offsets_[l + 1]; ++i) {
        const uint32_t f = link_flow_list_[i];
        if (fixed_[f]) continue;
        fixed_[f] = 1;
        Flow& flow = flows_[f];
        flow.rate = top.share;
        for (const LinkUse& use : flow.path) {
          remaining_capacity_[use.link] =
              std::max(0.0, remaining_capacity_[use.link] - top.share * use.count);
          unfixed_weight_[use.link] -= use.count;
          if (unfixed_weight_[use.link] > 0 && use.link != l) {
            heap.push({remaining_capacity_[use.link] / unfixed_weight_[use.link], use.link});
          }
        }
      }
    }
  }
  completions_ = {};
  for (uint32_t f : active_) schedule(f);
}

std::unique_ptr<NetworkModel> make_maxmin_network(std::vector<double> capacities) {
  return std::make_unique<FlowNetwork>(std::move(capacities), true);
}

std::unique_ptr<NetworkModel> make_no_contention_network(std::vector<double> capacities) {
  return std::make_unique<FlowNetwork>(std::move(capacities), false);
}

}  // namespace stepcast::net
