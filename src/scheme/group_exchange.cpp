#include "scheme/group_exchange.hpp"

#include "scheme/worker_runtime.hpp"
#include "stepcast/error.hpp"

namespace stepcast::scheme {

GroupExchange::GroupExchange(const StepContext& context, WorkerRuntime& runtime, ParallelDimension dimension,
                             const ComposedPlans& plans, int owner)
    : ctx_(context),
      runtime_(runtime),
      dimension_(dimension),
      plans_(plans),
      runner_(context.engine, owner),
      issued_by_(static_cast<size_t>(context.workers())) {}

void GroupExchange::begin(WorkerRuntime& runtime) {
  for (int w = 0; w < ctx_.workers(); ++w) runtime.start_step(w);
}

void GroupExchange::start_comm(int w, int op, const CommOp& comm) {
  const auto d = static_cast<size_t>(dimension_);
  const int group = plans_.group_of_worker[d][static_cast<size_t>(w)];
  STEPCAST_ASSERT(group != kNone);
  auto [it, added] = stream_index_.try_emplace({group, comm.stream}, static_cast<int>(streams_.size()));
  if (added) streams_.push_back(Stream{.group = group, .next = 0, .running = false, .issued = {}});
  const int stream = it->second;
  Stream& s = streams_[static_cast<size_t>(stream)];
  const int64_t number = issued_by_[static_cast<size_t>(w)][comm.stream]++;
  Instance& instance = s.issued[number];
  instance.comm = comm;
  instance.members.emplace_back(w, op);
  const GroupPlans& plans = plans_.groups[d][static_cast<size_t>(group)];
  if (static_cast<int>(instance.members.size()) == plans.members) {
    // The last member to issue it: the others waited for it until now.
    const double now = ctx_.engine.now();
    for (const auto& [member, member_op] : instance.members) runtime_.comm_released(member, member_op, now);
  }
  maybe_start(stream);
}

void GroupExchange::maybe_start(int stream) {
  Stream& s = streams_[static_cast<size_t>(stream)];
  if (s.running) return;
  const auto it = s.issued.find(s.next);
  const GroupPlans& plans = plans_.groups[static_cast<size_t>(dimension_)][static_cast<size_t>(s.group)];
  if (it == s.issued.end() || static_cast<int>(it->second.members.size()) < plans.members) return;
  s.running = true;
  if (ctx_.trace != nullptr) {
    for (const auto& [member, member_op] : it->second.members) runtime_.comm_started(member, member_op);
  }
  const CommOp& comm = it->second.comm;
  CollectiveTerms terms{.regime = ctx_.cluster.spec.regime_for(comm.bytes)};
  const CollectivePlan* plan = nullptr;
  switch (comm.kind) {
    case CommKind::AllReduce:
      if (plans.planner) {
        const AllReducePlanner::Choice choice = plans.planner->choose(comm.bytes);
        terms = choice.terms;
        plan = &plans.planner_plans[static_cast<size_t>(choice.plan)];
      } else {
        plan = &plans.all_reduce;
      }
      break;
    case CommKind::AllGather:
      plan = &plans.all_gather;
      break;
    case CommKind::ReduceScatter:
      plan = &plans.reduce_scatter;
      break;
    case CommKind::RingShift:
      plan = &plans.ring_shift;
      break;
    case CommKind::ToExperts:
      plan = &plans.to_experts[static_cast<size_t>(comm.tag)];
      break;
    case CommKind::FromExperts:
      plan = &plans.from_experts[static_cast<size_t>(comm.tag)];
      break;
    case CommKind::Send:
    case CommKind::Recv:
      STEPCAST_ASSERT(false && "point-to-point messages are the pipeline exchange's");
      break;
  }
  if (runner_.start(*plan, comm.bytes, terms, stream) == kNone) finish(stream);
}

void GroupExchange::handle(const Event& event) {
  if (const auto* done = std::get_if<StageDone>(&event)) {
    if (const std::optional<int> stream = runner_.stage_done(done->slot)) finish(*stream);
  }
}

void GroupExchange::finish(int stream) {
  Stream& s = streams_[static_cast<size_t>(stream)];
  const auto it = s.issued.find(s.next);
  const Instance instance = std::move(it->second);
  s.issued.erase(it);
  s.running = false;
  s.next++;
  for (const auto& [w, op] : instance.members) runtime_.comm_done(w, op);
  maybe_start(stream);
}

}  // namespace stepcast::scheme
