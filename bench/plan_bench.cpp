// Benchmarks of what `stepcast plan` does to each layout, on one core: the layout rules
// (scheme::layout_problem), the memory check (predict::account_model) and the coarse prediction,
// each in layouts per second; coarse both over the whole space (every k-th layout) and in plan's
// order (highest bound first, where its per-thread caches of plans are hit as in a search). Two
// spaces: Llama 3 70B on 256 GPUs (examples/llama3-70b-plan.yaml) and GPT-3 175B on 4096
// (examples/gpt3-175b-3d.yaml). Run from the repository root:
//   build/release/plan_bench --benchmark_filter=Coarse
#include <benchmark/benchmark.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "stepcast/predict/predict.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/scheme/validate.hpp"
#include "stepcast/sweep/plan.hpp"

namespace {

using namespace stepcast;

/// One layout ready to predict.
struct Prepared {
  const workload::Workload* workload = nullptr;
  const predict::WorkloadMemory* memory = nullptr;
  cluster::ClusterSpec cluster;
  scheme::SchemeConfig scheme;
};

/// A plan's space at one GPU count: every candidate, those the rules allow, and those that fit.
struct Space {
  /// The scenario and its workload at each micro-batch and checkpointing.
  std::map<std::pair<int, workload::ActivationCheckpointing>,
           std::pair<scenario::Scenario, workload::Workload>>
      at_batch;
  /// What the memory check reads of each workload, as plan() keeps it.
  std::map<std::pair<int, workload::ActivationCheckpointing>, predict::WorkloadMemory> memory_at_batch;
  std::vector<sweep::Layout> candidates, valid, fitting;
  predict::Options coarse;

  /// What plan() does per layout before the rules: the scenario's cluster and scheme with the
  /// layout's settings.
  [[nodiscard]] Prepared prepare(const sweep::Layout& l) const {
    const auto& [at, w] = at_batch.at({l.micro_batch, l.checkpointing});
    Prepared p{&w, &memory_at_batch.at({l.micro_batch, l.checkpointing}), at.cluster, at.scheme};
    sweep::apply_layout(p.cluster, p.scheme, l);
    return p;
  }
};

const Space& space(const char* file, int gpus) {
  static std::map<std::string, Space> spaces;
  const std::string key = std::string(file) + "@" + std::to_string(gpus);
  if (auto it = spaces.find(key); it != spaces.end()) return it->second;
  Space& s = spaces[key];
  const scenario::Scenario base = scenario::load_scenario(file);
  s.coarse = base.options;
  s.coarse.predictor = predict::Predictor::Coarse;
  s.candidates = sweep::candidate_layouts(base, gpus);
  for (const sweep::Layout& l : s.candidates) {
    auto [it, fresh] = s.at_batch.try_emplace({l.micro_batch, l.checkpointing});
    if (fresh) {
      it->second.first = scenario::with_micro_batch(base, l.micro_batch, l.checkpointing);
      it->second.second = scenario::build_workload(it->second.first);
      s.memory_at_batch.emplace(it->first,
                                predict::WorkloadMemory(it->second.second, base.scheme.fsdp.unit_blocks));
    }
  }
  for (const sweep::Layout& l : s.candidates) {
    const Prepared p = s.prepare(l);
    if (!scheme::layout_problem(*p.workload, p.cluster, p.scheme)) s.valid.push_back(l);
  }
  for (const sweep::Layout& l : s.valid) {
    const Prepared p = s.prepare(l);
    predict::Result r;
    predict::account_model(r, *p.workload, p.cluster, p.scheme, p.memory);
    if (r.memory.fits()) s.fitting.push_back(l);
  }
  return s;
}

const char* kLlama = "examples/llama3-70b-plan.yaml";
const char* kGpt3 = "examples/gpt3-175b-3d.yaml";

void set_counters(benchmark::State& state, const Space& s) {
  state.counters["candidates"] = static_cast<double>(s.candidates.size());
  state.counters["valid"] = static_cast<double>(s.valid.size());
  state.counters["fitting"] = static_cast<double>(s.fitting.size());
}

void BM_PlanLayoutRules(benchmark::State& state, const char* file, int gpus) {
  const Space& s = space(file, gpus);
  std::size_t i = 0;
  for (auto _ : state) {
    const Prepared p = s.prepare(s.candidates[i++ % s.candidates.size()]);
    benchmark::DoNotOptimize(scheme::layout_problem(*p.workload, p.cluster, p.scheme));
  }
  state.SetItemsProcessed(state.iterations());
  set_counters(state, s);
}

void BM_PlanMemoryCheck(benchmark::State& state, const char* file, int gpus) {
  const Space& s = space(file, gpus);
  std::size_t i = 0;
  for (auto _ : state) {
    const Prepared p = s.prepare(s.valid[i++ % s.valid.size()]);
    predict::Result r;
    predict::account_model(r, *p.workload, p.cluster, p.scheme, p.memory);
    benchmark::DoNotOptimize(r.memory.per_worker.total());
  }
  state.SetItemsProcessed(state.iterations());
  set_counters(state, s);
}

// Round robin over the fitting layouts, spread over the whole space (every k-th), so that cheap
// and dear layouts (few and many stages) are both in the mean.
void BM_PlanCoarse(benchmark::State& state, const char* file, int gpus) {
  const Space& s = space(file, gpus);
  const std::size_t stride = std::max<std::size_t>(1, s.fitting.size() / 997);
  std::size_t i = 0;
  for (auto _ : state) {
    const Prepared p = s.prepare(s.fitting[(i++ * stride) % s.fitting.size()]);
    benchmark::DoNotOptimize(predict::predict(*p.workload, p.cluster, p.scheme, s.coarse).step_time);
  }
  state.SetItemsProcessed(state.iterations());
  set_counters(state, s);
}

// In the order plan() predicts them: the highest bound (sweep::tokens_bound) first, the layouts
// with the same groups (tensor, context, pipeline) mostly together, as the search meets them.
void BM_PlanCoarseInPlanOrder(benchmark::State& state, const char* file, int gpus) {
  const Space& s = space(file, gpus);
  static std::map<std::string, std::vector<sweep::Layout>> ordered_of;
  std::vector<sweep::Layout>& ordered = ordered_of[std::string(file) + "@" + std::to_string(gpus)];
  if (ordered.empty()) {
    std::vector<std::pair<double, std::size_t>> bound;
    const Prepared first = s.prepare(s.fitting.front());
    const sweep::BoundContext bounds = sweep::bound_context(first.cluster, first.scheme);
    for (std::size_t i = 0; i < s.fitting.size(); ++i) {
      const Prepared p = s.prepare(s.fitting[i]);
      bound.emplace_back(sweep::tokens_bound(*p.workload, s.fitting[i], p.scheme, bounds), i);
    }
    std::sort(bound.begin(), bound.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (const auto& [b, i] : bound) ordered.push_back(s.fitting[i]);
  }
  predict::Options ranking = s.coarse;  // as plan() ranks them: the step alone, no link loads
  ranking.link_loads = false;
  std::size_t i = 0;
  for (auto _ : state) {
    const Prepared p = s.prepare(ordered[i++ % ordered.size()]);
    benchmark::DoNotOptimize(predict::predict(*p.workload, p.cluster, p.scheme, ranking).step_time);
  }
  state.SetItemsProcessed(state.iterations());
  set_counters(state, s);
}

BENCHMARK_CAPTURE(BM_PlanLayoutRules, llama3_70b_256, kLlama, 256)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PlanMemoryCheck, llama3_70b_256, kLlama, 256)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PlanCoarse, llama3_70b_256, kLlama, 256)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PlanLayoutRules, gpt3_175b_4096, kGpt3, 4096)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PlanMemoryCheck, gpt3_175b_4096, kGpt3, 4096)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PlanCoarse, gpt3_175b_4096, kGpt3, 4096)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PlanCoarseInPlanOrder, llama3_70b_256, kLlama, 256)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PlanCoarseInPlanOrder, gpt3_175b_4096, kGpt3, 4096)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
