#include "scheme/pipeline_exchange.hpp"

#include "scheme/worker_runtime.hpp"
#include "stepcast/error.hpp"

namespace stepcast::scheme {

PipelineExchange::PipelineExchange(const StepContext& context, WorkerRuntime& runtime, const ComposedPlans& plans,
                                   int owner)
    : ctx_(context), runtime_(runtime), plans_(plans), runner_(context.engine, owner) {}

void PipelineExchange::begin(WorkerRuntime& runtime) {
  for (int w = 0; w < ctx_.workers(); ++w) runtime.start_step(w);
}

void PipelineExchange::start_comm(int w, int op, const CommOp& comm) {
  switch (comm.kind) {
    case CommKind::Send: {
      const bool forward = ctx_.composed->program_of(w).ops.ops[static_cast<size_t>(op)].kind == workload::OpKind::Forward;
      auto [it, added] = line_of_.try_emplace({w, forward}, static_cast<int>(lines_.size()));
      if (added) lines_.emplace_back();
      Line& line = lines_[static_cast<size_t>(it->second)];
      if (line.busy) {
        line.waiting.emplace_back(w, op, comm);
        return;
      }
      send(w, op, comm, it->second);
      return;
    }
    case CommKind::Recv: {
      const Key key{w, runtime_.step(w), comm.tag};
      Message& message = messages_[key];
      if (message.sent >= 0) runtime_.comm_released(w, op, message.sent);
      if (message.arrived) {
        const int span = message.span;
        messages_.erase(key);
        runtime_.comm_done(w, op, span);
        return;
      }
      message.receive_op = op;
      return;
    }
    case CommKind::AllReduce:
    case CommKind::AllGather:
    case CommKind::ReduceScatter:
    case CommKind::RingShift:
    case CommKind::ToExperts:
    case CommKind::FromExperts:
      STEPCAST_ASSERT(false && "collectives are the group exchanges'");
      return;
  }
}

void PipelineExchange::send(int w, int op, const CommOp& comm, int line) {
  const ComposedRun& run = *ctx_.composed;
  const RankLayout& layout = *run.layout;
  lines_[static_cast<size_t>(line)].busy = true;
  RankCoordinates at = layout.coordinates(run.rank_of_worker[static_cast<size_t>(w)]);
  at.at[static_cast<size_t>(ParallelDimension::Pipeline)] = comm.peer_chunk % layout.size(ParallelDimension::Pipeline);
  const int receiver = run.worker_of_rank[static_cast<size_t>(layout.rank(at))];
  STEPCAST_ASSERT(receiver != kNone);
  const Key key{receiver, runtime_.step(w), comm.tag};
  // The receiver waited for this stage until now; from now on, for the transfer.
  const double now = ctx_.engine.now();
  runtime_.comm_released(w, op, now);
  Message& message = messages_[key];
  message.sent = now;
  if (message.receive_op != kNone) runtime_.comm_released(receiver, message.receive_op, now);
  int flight = 0;
  if (free_flights_.empty()) {
    flight = static_cast<int>(flights_.size());
    flights_.emplace_back();
  } else {
    flight = free_flights_.back();
    free_flights_.pop_back();
  }
  flights_[static_cast<size_t>(flight)] = {w, op, key, line};
  const CollectivePlan& plan = plans_.transfers.at({w, receiver});
  if (runner_.start(plan, comm.bytes, {}, flight) == kNone) arrived(flight);
}

void PipelineExchange::handle(const Event& event) {
  if (const auto* done = std::get_if<StageDone>(&event)) {
    if (const std::optional<int> flight = runner_.stage_done(done->slot)) arrived(*flight);
  }
}

void PipelineExchange::arrived(int flight) {
  const InFlight f = flights_[static_cast<size_t>(flight)];
  free_flights_.push_back(flight);
  runtime_.comm_done(f.sender, f.send_op);
  const int span = runtime_.comm_span(f.sender, f.send_op);
  Message& message = messages_[f.key];
  const int receive_op = message.receive_op;
  if (receive_op == kNone) {
    message.arrived = true;
    message.span = span;
  } else {
    messages_.erase(f.key);
    runtime_.comm_done(std::get<0>(f.key), receive_op, span);
  }
  // The sender's next message that way.
  Line& line = lines_[static_cast<size_t>(f.line)];
  line.busy = false;
  if (!line.waiting.empty()) {
    const auto [w, op, comm] = line.waiting.front();
    line.waiting.pop_front();
    send(w, op, comm, f.line);
  }
}

}  // namespace stepcast::scheme
