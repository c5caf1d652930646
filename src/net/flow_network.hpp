// Private: the max-min flow network behind make_maxmin_network (and, with sharing turned off,
// make_no_contention_network). It runs the NetworkModel calls (start, advance, restart, and the
// lazy settling before a query) over four parts, each in its own file, as SimGrid keeps its lmm
// System apart from its solvers:
//  - maxmin_system.hpp: the bookkeeping: flows, links, which flow crosses which link, what they
//    book on each link, bytes carried, counters;
//  - resharer.hpp: the re-sharing strategies behind one interface, Full (component_fill.hpp, the
//    reference) and Incremental (incremental_resharer.hpp, the default), both filling with the one
//    progressive-filling loop (progressive_filling.hpp);
//  - flow_groups.hpp: flows held by one link moving as a group on its virtual clock (incremental
//    re-sharing only);
//  - completion_heap.hpp: the next completion and the order of finishes.
//
//   FlowNetwork net({1e9, 1e9}, /*share=*/true);
//   net.start_flow({{{0, 1}, {1, 1}}, 5e8}, 0.0);
//   for (FlowId done : net.advance_to(net.next_completion())) { ... }
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "net/completion_heap.hpp"
#include "net/flow_groups.hpp"
#include "net/maxmin_system.hpp"
#include "net/resharer.hpp"
#include "stepcast/detail/net/network_model.hpp"

namespace stepcast::net {

class FlowNetwork final : public NetworkModel {
 public:
  FlowNetwork(std::vector<double> capacities, bool share, Resharing resharing = Resharing::Incremental);
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  FlowId start_flow(const FlowSpec& flow, double now) override;
  [[nodiscard]] double next_completion() const override;
  std::vector<FlowId> advance_to(double t) override;
  void advance_to(double t, std::vector<FlowId>& done) override;
  void restart_flow(FlowId flow, double bytes) override;
  [[nodiscard]] double rate(FlowId flow) const override;
  /// Flows still moving bytes: those finished by the last advance_to and not restarted are out.
  [[nodiscard]] size_t num_active() const override {
    return core_.system.active().size() - core_.unrestarted;
  }
  [[nodiscard]] const std::vector<double>& link_bytes() const override { return core_.system.link_bytes(); }
  [[nodiscard]] std::vector<double> link_bytes_moved(double t) const override;
  [[nodiscard]] uint32_t max_link_flows() const override { return core_.system.counters().max_link_flows; }
  [[nodiscard]] uint64_t recomputations() const override { return core_.system.counters().recomputations; }
  [[nodiscard]] uint64_t flows_reshared() const override { return core_.system.counters().flows_reshared; }

  /// How the re-shares went, for tests and benchmarks.
  using ReshareCounts = net::ReshareCounts;
  [[nodiscard]] const ReshareCounts& reshare_counts() const { return core_.system.counters().reshares; }

 private:
  // The flows, their sharing and their progress. The const queries (next_completion, rate,
  // link_bytes_moved) first settle what earlier calls left pending: they drop the flows that
  // finished and were not restarted, and re-share bandwidth after a change. No caller can observe
  // that (the answers are those of settling at once), but it changes every part, hence one mutable
  // member rather than one per field; nothing outside it changes in a const call.
  struct Core {
    Core(std::vector<double> capacities, bool share, Resharing resharing);
    /// Drops the flows finished and not restarted, then re-shares if the set of flows changed
    /// (inline: every query calls it, and most find nothing to re-share).
    void settle() {
      reap_finished();
      if (system.changed()) reshare();
    }
    void reshare();
    void reap_finished();
    /// Takes flow f out of its group or the completion heap and frees it (see remove_flow).
    void remove(uint32_t f);

    MaxMinSystem system;
    CompletionHeap completions;
    FlowGroups groups;
    std::unique_ptr<Resharer> resharer;  ///< none while sharing is off (nothing is ever re-shared)
    /// Returned by the last advance_to; those restarted since are Active again and stay in it
    /// (reap_finished skips them), so restarting one is O(1) and the order of the rest is kept.
    std::vector<uint32_t> finished;
    size_t unrestarted = 0;  ///< entries of `finished` still Finished
  };

  bool share_;
  Resharing resharing_;
  mutable Core core_;
};

}  // namespace stepcast::net
