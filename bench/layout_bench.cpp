// Benchmarks of one fine step of the parallel-layout examples at the sizes issues 27 and 31 name,
// on one core: GPT-3 175B at 10,752 GPUs (examples/gpt3-175b-3d.yaml), Llama 3.1 405B at 131,072
// (examples/llama3-405b-3d.yaml, a global batch of 65,536 sequences so that every replica has
// micro-batches), DeepSeek-V3 with expert parallelism 64 at 2,048 (examples/deepseek-v3-ep.yaml,
// balanced and skewed routing). Each run is the whole prediction as `stepcast predict` makes it:
// plans, the step on the fast path, memory and the summary. Run from the repository root:
//   build/release/layout_bench --benchmark_filter=DeepSeek
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "peak_rss.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scenario/scenario.hpp"

namespace {

using namespace stepcast;

void run_example(benchmark::State& state, const char* file, std::vector<std::string> overrides) {
  const scenario::Scenario s = scenario::load_scenario(file, overrides);
  const workload::Workload w = scenario::build_workload(s);
  std::string engine;
  for (auto _ : state) {
    const predict::Result r = predict::predict(w, s.cluster, s.scheme, s.options);
    engine = r.engine;
    benchmark::DoNotOptimize(r.step_time);
  }
  state.SetLabel(engine);
  state.counters["peak_rss_MB"] = peak_rss_mb();
}

void BM_Gpt3Layout10752(benchmark::State& state) {
  run_example(state, "examples/gpt3-175b-3d.yaml", {"cluster.workers=10752"});
}
BENCHMARK(BM_Gpt3Layout10752)->Unit(benchmark::kMillisecond);

void BM_Llama405bLayout131072(benchmark::State& state) {
  run_example(state, "examples/llama3-405b-3d.yaml",
              {"cluster.workers=131072", "workload.global_batch=65536"});
}
BENCHMARK(BM_Llama405bLayout131072)->Unit(benchmark::kMillisecond)->Iterations(3);

// Argument: the routing imbalance in percent (100 = balanced).
void BM_DeepSeekV3Expert64(benchmark::State& state) {
  run_example(state, "examples/deepseek-v3-ep.yaml",
              {"workload.moe.imbalance=" + std::to_string(static_cast<double>(state.range(0)) / 100)});
}
BENCHMARK(BM_DeepSeekV3Expert64)->Arg(100)->Arg(150)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
