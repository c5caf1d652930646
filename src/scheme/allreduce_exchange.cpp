#include "scheme/allreduce_exchange.hpp"

#include <fmt/format.h>

#include "scheme/worker_runtime.hpp"
#include "stepcast/detail/scheme/fsdp_units.hpp"

namespace stepcast::scheme {

AllReduceExchange::AllReduceExchange(const StepContext& context, WorkerRuntime& runtime, int owner)
    : ctx_(context),
      runtime_(runtime),
      buckets_(workload::make_buckets(context.workload, context.scheme.allreduce.bucket_bytes,
                                      reduced_share(context.workload, context.scheme))),
      planner_(context.cluster, context.scheme.allreduce.algorithm, context.scheme.allreduce.protocol),
      runner_(context.engine, owner) {
  for (const workload::Bucket& b : buckets_) choice_of_bucket_.push_back(planner_.choose(b.bytes));
  bucket_of_tensor_.assign(ctx_.workload.tensors.size(), kNone);
  for (int b = 0; b < static_cast<int>(buckets_.size()); ++b) {
    for (int t : buckets_[b].tensors) bucket_of_tensor_[t] = b;
  }
  bucket_missing_.assign(ctx_.workers(), std::vector<int>(buckets_.size()));
  if (ctx_.trace != nullptr) filled_by_.assign(ctx_.workers(), std::vector<int>(buckets_.size(), kNone));
}

void AllReduceExchange::begin(WorkerRuntime& runtime) {
  for (int w = 0; w < ctx_.workers(); ++w) runtime.start_step(w);
}

void AllReduceExchange::step_started(int w) {
  std::vector<int>& missing = bucket_missing_[w];
  for (size_t b = 0; b < buckets_.size(); ++b) missing[b] = static_cast<int>(buckets_[b].tensors.size());
}

void AllReduceExchange::gradient_ready(int w, int tensor) {
  if (ctx_.workers() <= 1) return;
  const int b = bucket_of_tensor_[tensor];
  if (--bucket_missing_[w][b] == 0) {
    if (ctx_.trace != nullptr) filled_by_[w][b] = runtime_.finishing_span(w);
    join(w, b);
  }
}

void AllReduceExchange::join(int w, int bucket) {
  const int64_t id = static_cast<int64_t>(runtime_.step(w)) * static_cast<int64_t>(buckets_.size()) + bucket;
  if (++joined_[id] == ctx_.workers()) {
    // The last worker to get here releases the others: until now they waited for it (wait);
    // after now they wait for earlier collectives and this one (communication).
    runtime_.release_all();
  }
  maybe_start_collective();
}

void AllReduceExchange::maybe_start_collective() {
  if (running_) return;
  auto it = joined_.find(next_collective_);
  if (it == joined_.end() || it->second < ctx_.workers()) return;
  joined_.erase(it);
  running_ = true;
  collective_start_ = ctx_.engine.now();
  const AllReducePlanner::Choice& choice = running_choice();
  if (runner_.start(planner_.plan(choice), running_bucket().bytes, choice.terms, 0) == kNone) collective_done();
}

void AllReduceExchange::flow_done(net::FlowId flow) { runner_.flow_done(flow); }

void AllReduceExchange::handle(const Event& event) {
  if (const auto* done = std::get_if<StageDone>(&event)) {
    if (runner_.stage_done(done->slot)) collective_done();
  }
}

std::string AllReduceExchange::choice_label(int bucket) const {
  const AllReducePlanner::Choice& choice = choice_of_bucket_[static_cast<size_t>(bucket)];
  if (choice.protocol == CollectiveProtocol::Links) {
    return fmt::format("allreduce bucket {} ({})", bucket, to_string(choice.algorithm));
  }
  return fmt::format("allreduce bucket {} ({}/{})", bucket, to_string(choice.algorithm),
                     to_string(choice.protocol));
}

void AllReduceExchange::collective_done() {
  const int n = ctx_.workers();
  const double now = ctx_.engine.now();
  if (ctx_.trace != nullptr) {
    const auto buckets = static_cast<int64_t>(buckets_.size());
    const int bucket = static_cast<int>(next_collective_ % buckets);
    const int step = static_cast<int>(next_collective_ / buckets);
    for (int w = 0; w < n; ++w) {
      if (!ctx_.layout.keeps(w, step)) continue;
      const int span = ctx_.span({.process = w,
                                  .thread = ctx_.layout.allreduce,
                                  .name = choice_label(bucket),
                                  .category = "allreduce",
                                  .start = collective_start_,
                                  .duration = now - collective_start_,
                                  .step = step,
                                  .bytes = running_bucket().bytes,
                                  .bucket = bucket});
      ctx_.flow(filled_by_[w][bucket], span, "bucket ready");
    }
  }
  running_ = false;
  next_collective_++;
  for (int w = 0; w < n; ++w) runtime_.item_done(w);
  maybe_start_collective();
}

}  // namespace stepcast::scheme
