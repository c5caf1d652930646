// Private to scheme/: the network model a traced simulation runs on. It forwards every call to
// the real model unchanged (the simulation is the same with or without it) and records, per
// link, its load over time for the trace's counters.
//
// Sampling: at every instant of the engine the rate of each flow in progress is read back from
// the model (max-min rates change only when flows start or end, so this is exact); a link's load
// is the sum of its flows' rates times their members, and its flow count the members crossing
// it. Both are integrated into at most kBins bins of equal width over the run (the width doubles,
// merging bin pairs, whenever the run outgrows them), so memory and the counters written stay
// bounded whatever the run's length: a bin's value is the mean over the bin, and the bytes under
// a counter are the bytes the link carried.
//
//   TracedNetwork traced(network, cluster.links.size());
//   StepEngine engine(traced);  ... run ...
//   traced.finish(engine.now());
//   traced.add_counters(trace, cluster, process, t0, t1);
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/net/network_model.hpp"
#include "stepcast/sim/trace.hpp"

namespace stepcast::scheme {

class TracedNetwork final : public net::NetworkModel {
 public:
  static constexpr std::size_t kBins = 1024;  ///< per link and counter
  static constexpr std::size_t kLinks = 16;   ///< busiest links given counters

  TracedNetwork(net::NetworkModel& inner, std::size_t links);

  net::FlowId start_flow(const net::FlowSpec& flow, double now) override;
  [[nodiscard]] double next_completion() const override { return inner_.next_completion(); }
  std::vector<net::FlowId> advance_to(double t) override;
  void advance_to(double t, std::vector<net::FlowId>& done) override;
  void restart_flow(net::FlowId flow, double bytes) override;
  [[nodiscard]] double rate(net::FlowId flow) const override { return inner_.rate(flow); }
  [[nodiscard]] size_t num_active() const override { return inner_.num_active(); }
  [[nodiscard]] const std::vector<double>& link_bytes() const override { return inner_.link_bytes(); }
  [[nodiscard]] std::vector<double> link_bytes_moved(double t) const override {
    return inner_.link_bytes_moved(t);
  }
  [[nodiscard]] uint32_t max_link_flows() const override { return inner_.max_link_flows(); }
  [[nodiscard]] uint64_t recomputations() const override { return inner_.recomputations(); }
  [[nodiscard]] uint64_t flows_reshared() const override { return inner_.flows_reshared(); }

  /// Closes every link's record at `end` (the run's last instant).
  void finish(double end);
  /// Counters over [t0, t1] on `process`: utilisation and flows of the kLinks links that carried
  /// the most bytes in it, and the mean utilisation of the worker (and server) NICs each way.
  void add_counters(sim::Trace& trace, const cluster::Cluster& cluster, int process, double t0, double t1) const;

 private:
  struct Flow {
    std::vector<net::LinkUse> path;
    double rate = 0;  ///< per member, as last read
    bool open = false;
  };
  struct Link {
    double rate = 0;      ///< bytes/s now
    uint32_t members = 0;  ///< flow members crossing it now
    double since = 0;     ///< time of the last change
    std::vector<double> bytes, members_time;  ///< per bin: integral of rate and of members (empty: unused)
  };

  void open(uint32_t f);
  /// The link's load changes at `time` by these amounts.
  void change(uint32_t link, double time, double rate, int64_t members);
  /// Grows the bins until they cover [0, t].
  void cover(double t);
  void integrate(Link& link, double from, double to);
  [[nodiscard]] double bytes_in(const Link& link, double t0, double t1) const;

  net::NetworkModel& inner_;
  std::vector<Flow> flows_;       ///< by flow index
  std::vector<uint32_t> open_;    ///< flows in progress
  std::vector<Link> links_;
  double now_ = 0;                ///< the last instant
  double width_ = 1e-6;           ///< s per bin
};

}  // namespace stepcast::scheme
