// Private to scheme/: the bucketed all-reduce exchange (PyTorch DDP, Horovod). Gradients fill
// buckets in production order; a bucket's collective starts when every worker has filled it and
// the previous collective ended (one NCCL stream, collectives in order); it runs as the stages of
// its collective plan, the transfers of a stage as flow groups on the network, each stage lasting
// at least its latency (and the size regime's). A worker's step ends once its step's collectives
// all ended.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "scheme/exchange.hpp"
#include "scheme/plan_runner.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"

namespace stepcast::scheme {

class AllReduceExchange final : public Exchange {
 public:
  AllReduceExchange(const StepContext& context, WorkerRuntime& runtime, int owner);

  [[nodiscard]] int inputs_needed(int /*op*/) const override { return 0; }
  [[nodiscard]] int items_per_step() const override {
    return ctx_.workers() > 1 ? static_cast<int>(buckets_.size()) : 0;
  }
  void begin(WorkerRuntime& runtime) override;
  void step_started(int w) override;
  void gradient_ready(int w, int tensor) override;
  void flow_done(net::FlowId flow) override;
  void handle(const Event& event) override;
  void add_loads(SimulationResult& /*result*/, double /*window_start*/) const override {}

 private:
  void join(int w, int bucket);
  void maybe_start_collective();
  void collective_done();
  /// "allreduce bucket 3 (tree/LL)": the trace span's name.
  [[nodiscard]] std::string choice_label(int bucket) const;
  [[nodiscard]] const workload::Bucket& running_bucket() const {
    return buckets_[next_collective_ % static_cast<int64_t>(buckets_.size())];
  }

  const StepContext& ctx_;
  WorkerRuntime& runtime_;
  std::vector<workload::Bucket> buckets_;
  std::vector<int> bucket_of_tensor_;
  std::vector<std::vector<int>> bucket_missing_;  // worker -> bucket -> gradients not yet produced
  std::vector<std::vector<int>> filled_by_;       // trace: worker -> bucket -> span of the op that filled it
  AllReducePlanner planner_;
  std::vector<AllReducePlanner::Choice> choice_of_bucket_;  ///< algorithm, protocol per bucket size
  std::map<int64_t, int> joined_;  // collective (step * buckets + bucket) -> workers joined
  int64_t next_collective_ = 0;
  bool running_ = false;
  double collective_start_ = 0;
  PlanRunner runner_;
  [[nodiscard]] const AllReducePlanner::Choice& running_choice() const {
    return choice_of_bucket_[next_collective_ % static_cast<int64_t>(buckets_.size())];
  }
};

}  // namespace stepcast::scheme
