// Private to scheme/: the exchange of the pipeline dimension. A stage's send of a micro-batch's
// activations (or gradients) to the neighbouring model chunk goes once the pass that made them
// ended, as a transfer on the flow network from the rank to the rank of the other stage at the
// same tensor, context and data coordinates; a rank's sends each way go one at a time, in order
// (one NCCL stream per peer), and the sender does not wait for the receiver (Megatron posts its
// sends asynchronously, as torch.distributed's isend). The matching receive, issued when the
// receiving stage's program reaches it (at once: a receive needs nothing first), ends when the
// message is in. Until the send starts, the receiver waits for the other stage (the bubble);
// after, for the transfer.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <tuple>
#include <vector>

#include "scheme/composed_plans.hpp"
#include "scheme/exchange.hpp"
#include "scheme/plan_runner.hpp"

namespace stepcast::scheme {

class PipelineExchange final : public Exchange {
 public:
  PipelineExchange(const StepContext& context, WorkerRuntime& runtime, const ComposedPlans& plans, int owner);

  [[nodiscard]] int inputs_needed(int /*op*/) const override { return 0; }
  [[nodiscard]] int items_per_step() const override { return 0; }
  void begin(WorkerRuntime& runtime) override;
  void step_started(int /*w*/) override {}
  void gradient_ready(int /*w*/, int /*tensor*/) override {}
  void start_comm(int w, int op, const CommOp& comm) override;
  void flow_done(net::FlowId flow) override { runner_.flow_done(flow); }
  void handle(const Event& event) override;
  void add_loads(SimulationResult& /*result*/, double /*window_start*/) const override {}

 private:
  /// A message as both ends name it: the receiver, the step, the tag.
  using Key = std::tuple<int, int, int64_t>;
  struct Message {
    bool arrived = false;
    int receive_op = kNone;  ///< the receiver's op, once issued
    double sent = -1;        ///< s: when the sender started it, once it did
    int span = kNone;        ///< trace: the send's span, once it arrived
  };
  struct InFlight {
    int sender = 0, send_op = 0;
    Key key;
    int line = 0;  ///< the sender's line it went on
  };
  /// A rank's sends one way: one at a time, in the order issued.
  struct Line {
    bool busy = false;
    std::deque<std::tuple<int, int, CommOp>> waiting;  ///< (worker, op, message)
  };
  void send(int w, int op, const CommOp& comm, int line);
  void arrived(int flight);

  const StepContext& ctx_;
  WorkerRuntime& runtime_;
  const ComposedPlans& plans_;
  PlanRunner runner_;  // tag = index into flights_
  std::map<Key, Message> messages_;
  std::vector<InFlight> flights_;
  std::vector<int> free_flights_;
  std::map<std::pair<int, bool>, int> line_of_;  // (sender, toward the next stage) -> lines_
  std::vector<Line> lines_;
};

}  // namespace stepcast::scheme
