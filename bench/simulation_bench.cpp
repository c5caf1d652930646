// Benchmarks of the predictors at the sizes the foundation issue names. Run one benchmark per
// process (scripts/run-benchmarks.sh) so that peak_rss_MB belongs to that benchmark alone.
#include <benchmark/benchmark.h>

#include "peak_rss.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace {

using namespace stepcast;

workload::Workload resnet50() {
  return zoo::to_workload(*zoo::find_model("resnet50"), {.batch_per_worker = 64, .step_time = 0.174});
}

cluster::ClusterSpec cluster_of(int workers, double nic_bw) {
  cluster::ClusterSpec spec;
  spec.workers = workers;
  spec.nic_bw = nic_bw;
  spec.latency = 5e-6;
  return spec;
}

// Times one simulated step (no warm-up) and reports simulated events per second.
void run_one_fine_step(benchmark::State& state, const workload::Workload& w, const cluster::ClusterSpec& spec,
                       const scheme::SchemeConfig& scheme, bool fast_paths = true, double compute_cv = 0) {
  predict::Options options{.warmup_steps = 0, .measure_steps = 1, .compute_cv = compute_cv, .fast_paths = fast_paths};
  uint64_t events = 0;
  for (auto _ : state) {
    auto r = predict::predict_fine(w, spec, scheme, options);
    events += r.events;
    benchmark::DoNotOptimize(r.step_time);
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["peak_rss_MB"] = peak_rss_mb();
}

// One synchronous step of ResNet-50 with DDP ring all-reduce (25 MB buckets). Second argument:
// 1 = the exact fast path (simulation.fast_paths), 0 = every op of every worker and every ring
// step simulated (the full engine).
void BM_FineRingAllReduceStep(benchmark::State& state) {
  const auto w = resnet50();
  const auto spec = cluster_of(static_cast<int>(state.range(0)), 12.5e9);
  scheme::SchemeConfig scheme;
  scheme.scheme = scheme::Scheme::AllReduce;
  run_one_fine_step(state, w, spec, scheme, state.range(1) != 0, state.range(2) / 100.0);
}
BENCHMARK(BM_FineRingAllReduceStep)
    ->Args({64, 0, 0})
    ->Args({1024, 0, 0})
    ->Args({1024, 1, 0})
    ->Args({4096, 1, 0})
    ->Args({10000, 1, 0})
    ->Args({10000, 1, 5})
    ->Unit(benchmark::kMillisecond);

// One synchronous parameter-server step of ResNet-50: N workers, P shards, random order.
void BM_FinePsStep(benchmark::State& state) {
  const auto w = resnet50();
  const auto spec = cluster_of(static_cast<int>(state.range(0)), 3.125e9);
  scheme::SchemeConfig scheme;
  scheme.scheme = scheme::Scheme::ParameterServer;
  scheme.ps.count = static_cast<int>(state.range(1));
  run_one_fine_step(state, w, spec, scheme);
}
BENCHMARK(BM_FinePsStep)->Args({16, 2})->Args({256, 16})->Unit(benchmark::kMillisecond);

// One FSDP (full sharding, prefetch 1) step of Llama-3-8B (bf16, one 8192-token sequence per
// GPU at 400 TFLOP/s) on H100-like nodes: 8 GPUs per node on 450 GB/s NVLink, one 400 Gbps NIC
// per GPU. Arguments: workers, 1 = the exact fast path / 0 = the full engine, and 1 = stragglers
// (compute_cv 0.05: every worker's ops, the collectives still on the reduced network).
void BM_FineFsdpLlama3Step(benchmark::State& state) {
  const zoo::ModelSpec& model = zoo::get_model("llama3-8b");
  const double step_time = zoo::step_flops_per_sample(model, 2.0, workload::ActivationCheckpointing::None) / 400e12;
  const auto w = zoo::to_workload(model, {.batch_per_worker = 1, .step_time = step_time,
                                          .precision = workload::Precision::BF16});
  auto spec = cluster_of(static_cast<int>(state.range(0)), 50e9);
  spec.workers_per_node = 8;
  spec.nics_per_node = 8;
  spec.intra_node_bw = 450e9;
  scheme::SchemeConfig scheme;
  scheme.scheme = scheme::Scheme::Fsdp;
  run_one_fine_step(state, w, spec, scheme, state.range(1) != 0, state.range(2) != 0 ? 0.05 : 0);
}
BENCHMARK(BM_FineFsdpLlama3Step)
    ->Args({64, 0, 0})
    ->Args({64, 1, 0})
    ->Args({1024, 1, 0})
    ->Args({256, 0, 1})
    ->Args({256, 1, 1})
    ->Args({1024, 1, 1})
    ->Unit(benchmark::kMillisecond);

// The issue-9 parameter-server sizes: fifo order (interchangeable clients; third argument 1 =
// the exact fast path, one representative client, 0 = the full engine), then random order with
// stragglers (compute_cv 0.05, no symmetry at all, always the full engine).
void BM_FinePsStepFifo(benchmark::State& state) {
  const auto w = resnet50();
  const auto spec = cluster_of(static_cast<int>(state.range(0)), 3.125e9);
  scheme::SchemeConfig scheme;
  scheme.scheme = scheme::Scheme::ParameterServer;
  scheme.ps.count = static_cast<int>(state.range(1));
  scheme.ps.order = scheme::PsOrder::Fifo;
  run_one_fine_step(state, w, spec, scheme, state.range(2) != 0);
}
BENCHMARK(BM_FinePsStepFifo)->Args({1024, 64, 0})->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FinePsStepFifo)->Args({1024, 64, 1})->Args({4096, 64, 1})->Args({10000, 64, 1})->Args({10000, 100, 1})->Unit(benchmark::kMillisecond);

void BM_FinePsStepRandomStragglers(benchmark::State& state) {
  const auto w = resnet50();
  const auto spec = cluster_of(static_cast<int>(state.range(0)), 3.125e9);
  scheme::SchemeConfig scheme;
  scheme.scheme = scheme::Scheme::ParameterServer;
  scheme.ps.count = static_cast<int>(state.range(1));
  scheme.ps.order = scheme::PsOrder::Random;
  run_one_fine_step(state, w, spec, scheme, true, 0.05);
}
BENCHMARK(BM_FinePsStepRandomStragglers)->Args({1024, 64})->Iterations(1)->Unit(benchmark::kMillisecond);

// A 10-point sweep (1..512 workers) of the coarse predictor.
void BM_CoarseSweep10(benchmark::State& state) {
  const auto w = resnet50();
  scheme::SchemeConfig scheme;
  scheme.scheme = state.range(0) == 0 ? scheme::Scheme::AllReduce : scheme::Scheme::ParameterServer;
  scheme.ps.count = 4;
  predict::Options options{.predictor = predict::Predictor::Coarse};
  for (auto _ : state) {
    for (int n = 1; n <= 512; n *= 2) {
      auto r = predict::predict_coarse(w, cluster_of(n, 12.5e9), scheme, options);
      benchmark::DoNotOptimize(r.throughput);
    }
  }
  state.counters["peak_rss_MB"] = peak_rss_mb();
}
BENCHMARK(BM_CoarseSweep10)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

// One 100 MiB ring all-reduce alone (the ASTRA-sim / SimGrid comparison point).
void BM_RingAllReduceCollective(benchmark::State& state) {
  const auto spec = cluster_of(static_cast<int>(state.range(0)), 12.5e9);
  for (auto _ : state) {
    auto r = scheme::simulate_allreduce(spec, 100.0 * 1024 * 1024, scheme::AllReduceAlgorithm::Ring);
    benchmark::DoNotOptimize(r.time);
  }
  state.counters["peak_rss_MB"] = peak_rss_mb();
}
BENCHMARK(BM_RingAllReduceCollective)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);

// One 100 MB ring all-reduce on 4096 workers of a leaf-spine fat-tree (radix 64: 64 leaves,
// 32 spines), routes included (issue 4: under 2 s and 200 MB).
void BM_RingAllReduceFatTree(benchmark::State& state) {
  auto spec = cluster_of(static_cast<int>(state.range(0)), 12.5e9);
  spec.topology = cluster::Topology::FatTree;
  spec.fat_tree.radix = 64;
  uint64_t events = 0;
  for (auto _ : state) {
    auto r = scheme::simulate_allreduce(spec, 100e6, scheme::AllReduceAlgorithm::Ring);
    events += r.events;
    benchmark::DoNotOptimize(r.time);
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["peak_rss_MB"] = peak_rss_mb();
}
BENCHMARK(BM_RingAllReduceFatTree)->Arg(4096)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
