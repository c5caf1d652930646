// Private: the max-min system of the flow network, its bookkeeping without a solver (SimGrid keeps
// lmm::System apart from its solvers in the same way): the flows (path, bytes, rate, progress), the
// links (capacity in bytes/s), which flow crosses which link, what the flows book on each link
// (load, and the flows a link holds and at what level), the change since the last re-share, the
// bytes each link carried, and the counters the benchmarks read. The re-sharing strategies
// (resharer.hpp) read it and set the rates; groups of flows (flow_groups.hpp) and the completion
// heap (completion_heap.hpp) keep the flows' progress.
//
//   MaxMinSystem system({1e9, 1e9}, /*share=*/true);
//   const auto [f, alone] = system.add_flow({{{0, 1}, {1, 1}}, 5e8});
//   system.list(f);                                  // it shares a link: into the link lists
//   for (auto [g, flow] : system.flows_on(0)) { ... }   // every flow listed on link 0
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "stepcast/detail/net/network_model.hpp"

namespace stepcast::net {

inline constexpr uint32_t kNoLink = ~uint32_t{0};
/// No slot in a heap (a flow that does not move in a group, ...).
inline constexpr uint32_t kNoSlot = ~uint32_t{0};

enum class FlowState : uint8_t { Free, Active, Finished };

/// One flow (a transfer, or a group of identical transfers) and where it stands.
struct Flow {
  std::vector<LinkUse> path;  ///< sorted by link, each link once
  // Its entries in the per-link lists of flows (doubly linked through the flows themselves, so
  // joining and leaving a link costs O(1) and no allocation): neighbours of entry i on path[i].
  std::vector<uint64_t> next_on_link, prev_on_link;
  double bytes = 0;             ///< of the current transfer, per member
  double remaining = 0;         ///< bytes per member left at `updated`
  double updated = 0;           ///< time `remaining` refers to
  double rate = 0;              ///< bytes/s per member
  double max_rate = kInfinity;  ///< bytes/s per member, the flow's own bound
  uint32_t active_slot = 0;
  uint32_t visit = 0;             ///< search stamp (MaxMinSystem::stamp)
  uint32_t unlisted_slot = 0;     ///< its index in the unlisted flows while not listed
  uint32_t bottleneck = kNoLink;  ///< the link that holds its rate; kNoLink: its bound (or unset)
  double next_rate = 0;           ///< of the re-share in progress
  uint32_t next_bottleneck = kNoLink;
  // In the group of its bottleneck link (grouped, flow_groups.hpp): its rate is the group's, its
  // progress the group's clock (its virtual finish is its entry in the group's moving heap), and
  // `rate`, `remaining` and `updated` are unused.
  uint32_t moving_slot = kNoSlot;       ///< its index in the group's moving heap while it moves
  std::vector<uint32_t> crossing_slot;  ///< per path entry: its index in the group's crossings
  bool grouped = false;
  bool listed = false;  ///< in the per-link lists (next_on_link/prev_on_link valid)
  FlowState state = FlowState::Free;

  /// When a flow of its own finishes at its rate (s); +inf at rate 0, `updated` at an infinite rate.
  [[nodiscard]] double finish_time() const {
    if (std::isinf(rate)) return updated;
    return rate > 0 ? updated + remaining / rate : kInfinity;
  }
  /// Brings a flow of its own to `now` at its current rate.
  void bring_to(double now) {
    remaining = std::max(0.0, remaining - rate * (now - updated));
    updated = now;
  }
};

struct LinkState {
  uint64_t head = ~uint64_t{0};  ///< first entry of the link's list of flows (active or finished)
  uint32_t weight = 0;           ///< members of those flows crossing it
  uint32_t visit = 0;            ///< stamp: reached in the current search
  [[nodiscard]] bool has_flows() const { return head != ~uint64_t{0}; }
};

/// How the re-shares went, for tests and benchmarks.
struct ReshareCounts {
  uint64_t level_moves = 0;      ///< changes that only moved the levels of groups (no filling)
  uint64_t affected_fills = 0;   ///< changes re-filled over an affected set
  uint64_t component_fills = 0;  ///< changes re-filled over a whole connected component
  uint64_t unit_groups = 0;      ///< groups re-filled as one inside affected fills
  uint64_t rebases = 0;          ///< group clock origins moved
};

/// What NetworkModel reports as cost measures, and how the re-shares went.
struct NetworkCounters {
  uint32_t max_link_flows = 0;  ///< the most members on one link at one time
  uint64_t recomputations = 0;  ///< re-shares
  uint64_t flows_reshared = 0;  ///< flows whose rate was recomputed, summed over re-shares
  ReshareCounts reshares;
};

class MaxMinSystem {
  // A list entry names a flow and the index of the link in its path.
  static constexpr uint64_t kNoNode = ~uint64_t{0};
  static uint64_t node_of(uint32_t flow, size_t entry) { return (uint64_t{flow} << 32) | entry; }
  static uint32_t flow_of(uint64_t node) { return static_cast<uint32_t>(node >> 32); }
  static uint32_t entry_of(uint64_t node) { return static_cast<uint32_t>(node); }

 public:
  /// `capacities`: bytes/s per link, each > 0 and finite. With `share` off no flow is ever listed
  /// and no change is recorded (every flow runs alone).
  MaxMinSystem(std::vector<double> capacities, bool share);
  MaxMinSystem(const MaxMinSystem&) = delete;
  MaxMinSystem& operator=(const MaxMinSystem&) = delete;

  // Links.
  [[nodiscard]] size_t num_links() const { return capacity_.size(); }
  [[nodiscard]] double capacity(uint32_t link) const { return capacity_[link]; }
  [[nodiscard]] LinkState& link(uint32_t link) { return links_[link]; }
  [[nodiscard]] const LinkState& link(uint32_t link) const { return links_[link]; }

  /// A flow in a link's list: its number and the flow. Converts to the number, so that a walk that
  /// needs only numbers reads `for (uint32_t f : system.flows_on(link))`.
  template <class F>
  struct Listed {
    uint32_t id;
    F& flow;
    operator uint32_t() const { return id; }
  };
  /// The flows listed on one link (active or finished), last listed first:
  /// `for (auto [f, flow] : system.flows_on(link))`. The lists and the flows' storage must not
  /// change while one is walked.
  template <class F>
  class LinkFlows {
   public:
    class Iterator {
     public:
      Listed<F> operator*() const { return {id_, *flow_}; }
      Iterator& operator++() {
        node_ = next_;
        load();
        return *this;
      }
      bool operator!=(const Iterator& o) const { return node_ != o.node_; }

     private:
      friend class LinkFlows;
      Iterator(F* flows, uint64_t node) : flows_(flows), node_(node) { load(); }
      // Reads the next entry before the loop's body runs, as a walk by hand would: the body then
      // finds the flow where the walk left it.
      void load() {
        if (node_ == kNoNode) return;
        id_ = flow_of(node_);
        flow_ = flows_ + id_;
        next_ = flow_->next_on_link[entry_of(node_)];
      }
      F* flows_;
      uint64_t node_;
      uint32_t id_ = 0;
      F* flow_ = nullptr;
      uint64_t next_ = kNoNode;
    };
    [[nodiscard]] Iterator begin() const { return {flows_, head_}; }
    [[nodiscard]] Iterator end() const { return {flows_, kNoNode}; }

   private:
    friend class MaxMinSystem;
    LinkFlows(F* flows, uint64_t head) : flows_(flows), head_(head) {}
    F* flows_;
    uint64_t head_;
  };
  [[nodiscard]] LinkFlows<Flow> flows_on(uint32_t link) { return {flows_.data(), links_[link].head}; }
  [[nodiscard]] LinkFlows<const Flow> flows_on(uint32_t link) const {
    return {flows_.data(), links_[link].head};
  }

  // What the listed flows book on each link: the bandwidth they use, how many it holds (their
  // bottleneck is this link) and at what rate (its level). Exact after a component fill; kept by
  // differences otherwise.
  [[nodiscard]] double& load(uint32_t link) { return load_[link]; }
  [[nodiscard]] double& level(uint32_t link) { return level_[link]; }
  [[nodiscard]] uint32_t& held(uint32_t link) { return held_[link]; }
  /// Adds (sign +1) or takes off (-1) a listed flow's load at `rate` and its hold on its links.
  void book(const Flow& flow, double rate, double sign);

  // Flows.
  [[nodiscard]] Flow& flow(uint32_t f) { return flows_[f]; }
  [[nodiscard]] const Flow& flow(uint32_t f) const { return flows_[f]; }
  /// Flow slots in use or free (an upper bound on flow numbers).
  [[nodiscard]] size_t num_flow_slots() const { return flows_.size(); }
  /// Active or finished, not yet removed; in no particular order.
  [[nodiscard]] const std::vector<uint32_t>& active() const { return active_; }
  /// Active flows with a finite max_rate (none: progressive filling skips looking).
  [[nodiscard]] uint32_t bounded_flows() const { return bounded_flows_; }

  struct Added {
    uint32_t flow;
    bool alone;  ///< no other flow on any of its links
  };
  /// Takes a free flow slot for `spec` (its path sorted and merged, one entry per link), active at
  /// now(), at rate 0, counted on its links but in none of their lists yet.
  Added add_flow(const FlowSpec& spec);
  /// Enters flow f into the lists of its links and books it (at its rate, which is its own).
  void list(uint32_t f);
  /// Keeps a flow that runs alone out of the link lists (see unlisted_).
  void add_unlisted(uint32_t f);
  /// Lists every active flow that ran alone so far.
  void list_unlisted();
  /// Frees flow f (its own rate, not queued anywhere): off its links' lists and books; the links
  /// still crossed by others are marked as changed.
  void remove_flow(uint32_t f);
  /// Counts `bytes` per member of the flow as carried by its links.
  void account_bytes(const Flow& flow, double bytes) {
    for (const LinkUse& use : flow.path) link_bytes_[use.link] += bytes * use.count;
  }

  /// Its narrowest link shared only among its own members, or its own bound if lower (bottleneck
  /// kNoLink).
  struct Alone {
    double rate;
    uint32_t bottleneck;
  };
  [[nodiscard]] Alone rate_alone(const Flow& flow) const;

  /// Time (s) of the last change or advance; flows of their own are brought to it when re-shared.
  [[nodiscard]] double now() const { return now_; }
  void set_now(double now) { now_ = now; }

  // The change since the last re-share: the links whose set of flows changed (once per flow that
  // started or ended on them) and the flows that started sharing a link. A re-share empties both.
  [[nodiscard]] bool changed() const { return !marked_links_.empty(); }
  [[nodiscard]] std::vector<uint32_t>& marked_links() { return marked_links_; }
  [[nodiscard]] std::vector<uint32_t>& new_flows() { return new_flows_; }
  /// A new flow that shares a link: it and its links join the change.
  void mark_new(uint32_t f) {
    for (const LinkUse& use : flows_[f].path) marked_links_.push_back(use.link);
    new_flows_.push_back(f);
  }

  /// A fresh search stamp for LinkState::visit and Flow::visit (the old marks all differ from it).
  void next_stamp();
  [[nodiscard]] uint32_t stamp() const { return stamp_; }

  /// Bytes carried so far by each link, counting completed transfers.
  [[nodiscard]] const std::vector<double>& link_bytes() const { return link_bytes_; }
  [[nodiscard]] NetworkCounters& counters() { return counters_; }
  [[nodiscard]] const NetworkCounters& counters() const { return counters_; }

 private:
  std::vector<double> capacity_;
  bool share_;
  std::vector<Flow> flows_;
  std::vector<uint32_t> free_;
  std::vector<uint32_t> active_;
  /// Flows that started alone on all their links and have met no other flow since: they are in no
  /// link list (no flow shares a link with them, so no re-share can reach them).
  std::vector<uint32_t> unlisted_;
  uint32_t bounded_flows_ = 0;
  double now_ = 0;
  std::vector<LinkState> links_;  // one cache line per link touched, not three
  std::vector<double> load_, level_;
  std::vector<uint32_t> held_;
  std::vector<uint32_t> marked_links_;
  std::vector<uint32_t> new_flows_;
  uint32_t stamp_ = 0;
  std::vector<double> link_bytes_;
  NetworkCounters counters_;
};

}  // namespace stepcast::net
