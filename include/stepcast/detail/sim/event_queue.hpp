// The discrete-event core: a time-ordered queue of events. Events at equal times come out in the
// order they were pushed, so a simulation is deterministic. Knows nothing of flows or workers:
// the event type is the caller's (a std::variant of small structs).
//
//   EventQueue<std::variant<OpDone, Arrival>> q;
//   q.push(1.5e-3, OpDone{worker, op});
//   while (!q.empty()) { auto [t, e] = q.pop(); std::visit(handler, e); }
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <queue>
#include <utility>
#include <vector>

namespace stepcast::sim {

template <class Event>
class EventQueue {
 public:
  struct Entry {
    double time;
    uint64_t sequence;
    Event event;
  };

  void push(double time, Event event) { heap_.push({time, next_sequence_++, std::move(event)}); }
  [[nodiscard]] bool empty() const { return heap_.empty(); }
  [[nodiscard]] std::size_t size() const { return heap_.size(); }
  /// Time of the earliest event, +inf when empty.
  [[nodiscard]] double next_time() const {
    return heap_.empty() ? std::numeric_limits<double>::infinity() : heap_.top().time;
  }
  /// Removes and returns the earliest event (the first pushed among equal times).
  Entry pop() {
    Entry e = std::move(const_cast<Entry&>(heap_.top()));
    heap_.pop();
    return e;
  }
  [[nodiscard]] uint64_t pushed() const { return next_sequence_; }

 private:
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.time != b.time ? a.time > b.time : a.sequence > b.sequence;
    }
  };
  std::priority_queue<Entry, std::vector<Entry>, Later> heap_;
  uint64_t next_sequence_ = 0;
};

}  // namespace stepcast::sim
