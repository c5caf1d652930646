// The discrete-event engine: one clock, one queue of the caller's events, and a network model
// whose flow completions are events too. Owns the clock and the loop; knows nothing of workers,
// schemes or topology. Every simulation (a training step, a collective alone) runs on it.
//
// Tie rule, at one instant t: first the flows that complete at t (in the order the network
// model returns them), then the queued events due at or before t (in time order, equal times in
// the order they were scheduled). Handlers may start flows and schedule events at t; those
// scheduled at t run in the same instant, flows started at t complete at a later one. The stop
// condition is tested between instants only, so an instant is never left half handled.
//
//   Engine<std::variant<OpDone, StageDone>> engine(network);
//   engine.schedule(1e-3, OpDone{0, 3});
//   engine.start_flow({path, 1e6}, /*owner=*/2);   // its completion: engine.owner_of(id) == 2
//   engine.run_until([&] { return finished; }, on_flow_done, on_event);
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "stepcast/detail/net/network_model.hpp"
#include "stepcast/detail/sim/event_queue.hpp"

namespace stepcast::sim {

template <class Event>
class Engine {
 public:
  explicit Engine(net::NetworkModel& network) : network_(network) {}
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  [[nodiscard]] double now() const { return now_; }
  [[nodiscard]] net::NetworkModel& network() { return network_; }
  [[nodiscard]] const net::NetworkModel& network() const { return network_; }
  /// Events handled so far, flow completions included.
  [[nodiscard]] uint64_t events() const { return events_; }

  /// Queues `event` at absolute time `time` (>= now()).
  void schedule(double time, Event event) { queue_.push(time, std::move(event)); }

  /// Starts `flow` now for `owner`, the caller's index of what asked for it (an exchange of a
  /// step): owner_of(id) says whose a completion is, so several exchanges can run side by side.
  net::FlowId start_flow(const net::FlowSpec& flow, int owner) {
    const net::FlowId id = network_.start_flow(flow, now_);
    const size_t i = net::index(id);
    if (i >= owner_.size()) owner_.resize(i + 1, -1);
    owner_[i] = owner;
    return id;
  }
  /// The owner a flow was started for (start_flow); a restarted flow keeps its owner.
  [[nodiscard]] int owner_of(net::FlowId id) const { return owner_[net::index(id)]; }

  /// Handles instants until `done()` holds after one. `on_flow(net::FlowId)` and
  /// `on_event(const Event&)` are the handlers. Throws std::logic_error when nothing is left to
  /// happen but `done()` is still false (a dependency that never resolves: a bug, not bad input).
  template <class Done, class OnFlow, class OnEvent>
  void run_until(Done&& done, OnFlow&& on_flow, OnEvent&& on_event) {
    while (!done()) {
      const double t = std::min(queue_.next_time(), network_.next_completion());
      if (std::isinf(t)) {
        throw std::logic_error("stepcast: simulation stalled with work left (a dependency never resolves)");
      }
      now_ = t;
      network_.advance_to(t, finished_);
      for (net::FlowId id : finished_) {
        ++events_;
        on_flow(id);
      }
      while (queue_.next_time() <= now_) {
        ++events_;
        on_event(queue_.pop().event);
      }
    }
  }

 private:
  net::NetworkModel& network_;
  EventQueue<Event> queue_;
  std::vector<net::FlowId> finished_;  // reused: one allocation per run, not per instant
  std::vector<int> owner_;              // flow index -> owner (start_flow)
  double now_ = 0;
  uint64_t events_ = 0;
};

}  // namespace stepcast::sim
