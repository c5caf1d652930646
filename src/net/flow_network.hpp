// Private: the max-min flow network behind make_maxmin_network (and, with sharing turned off,
// make_no_contention_network).
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "stepcast/net/network_model.hpp"

namespace stepcast::net {

class FlowNetwork final : public NetworkModel {
 public:
  FlowNetwork(std::vector<double> capacities, bool share);
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  FlowId start_flow(const FlowSpec& flow, double now) override;
  [[nodiscard]] double next_completion() const override;
  std::vector<FlowId> advance_to(double t) override;
  void restart_flow(FlowId flow, double bytes) override;
  [[nodiscard]] double rate(FlowId flow) const override;
  /// Flows still moving bytes: those finished by the last advance_to and not restarted are out.
  [[nodiscard]] size_t num_active() const override { return active_.size() - finished_.size(); }
  [[nodiscard]] const std::vector<double>& link_bytes() const override { return link_bytes_; }
  [[nodiscard]] uint32_t max_link_flows() const override { return max_link_flows_; }
  [[nodiscard]] uint64_t recomputations() const override { return recomputations_; }

 private:
  enum class State : uint8_t { Free, Active, Finished };
  struct Flow {
    std::vector<LinkUse> path;
    double bytes = 0;      ///< of the current transfer, per member
    double remaining = 0;  ///< bytes per member left at `updated`
    double updated = 0;    ///< time `remaining` refers to
    double rate = 0;       ///< bytes/s per member
    double finish = kInfinity;
    uint32_t active_slot = 0;
    uint32_t generation = 0;  ///< invalidates stale completion-heap entries
    State state = State::Free;
  };
  struct Completion {
    double time;
    uint32_t flow;
    uint32_t generation;
    bool operator>(const Completion& o) const { return time != o.time ? time > o.time : flow > o.flow; }
  };

  void reap_finished();
  void remove(uint32_t f);
  void reshare() const;
  void schedule(uint32_t f) const;
  void account_bytes(const Flow& flow, double bytes);

  std::vector<double> capacity_;
  bool share_;
  mutable std::vector<Flow> flows_;
  std::vector<uint32_t> free_;
  std::vector<uint32_t> active_;
  std::vector<uint32_t> finished_;  ///< returned by the last advance_to, not yet restarted
  double now_ = 0;
  mutable bool dirty_ = false;
  mutable std::priority_queue<Completion, std::vector<Completion>, std::greater<>> completions_;
  std::vector<double> link_bytes_;
  mutable uint32_t max_link_flows_ = 0;
  mutable uint64_t recomputations_ = 0;
  // Solver buffers, reused across recomputations.
  mutable std::vector<double> remaining_capacity_;
  mutable std::vector<uint32_t> unfixed_weight_;
  mutable std::vector<uint32_t> link_offsets_, link_flow_list_;
  mutable std::vector<uint8_t> fixed_;
};

}  // namespace stepcast::net
