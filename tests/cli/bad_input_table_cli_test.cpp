// A table of bad inputs, each run through the command: values at and past the limits of double
// (1e308, NaN, inf, with and without units), counts past their ranges and past int, sizes past
// uint64, torus dimensions whose product overflows, unknown keys, wrong types, empty, truncated
// and endless files, bad cells of layer tables and custom topologies, the decoder-shape, FLOP/s,
// memory and FSDP keys, --sweep syntax and advise's targets. Every one must end with exit code 2
// and a message naming the file and line (where there is one) and the key or flag; never a
// crash, a hang, a NaN or a success. Kinds of defects found before: ../shared/fuzz-repros.
#include "cli/cli_support.hpp"
#include "stepcast/limits.hpp"

namespace stepcast_cli_test {
namespace {
namespace bad_input_table_cli_test {  // this file's own names: test files are compiled several to a unit

using BadInputTable = CliTest;

// Lines 1-5; a case's own lines start at 6.
constexpr const char* kHead =
    "name: t\n"             // 1
    "workload:\n"           // 2
    "  model: resnet50\n"   // 3
    "  step_time: 100ms\n"  // 4
    "cluster:\n";           // 5

std::string head(const std::string& rest) { return std::string(kHead) + rest; }

constexpr const char* kLayerScenario =
    "workload: {profile: layers.csv, batch_per_worker: 32}\n"
    "cluster: {workers: 2}\n";
constexpr const char* kLayerHeader = "layer,forward_time,backward_time,parameter_bytes\n";

constexpr const char* kCustomScenario =
    "workload: {model: resnet50, step_time: 100ms}\n"
    "cluster: {workers: 2, topology: custom, custom: topo.yaml}\n";

// A decoder by shape, lines 2-9; `extra` goes at line 10.
std::string decoder(const std::string& fields, const std::string& extra = "") {
  return "workload:\n"         // 1
         "  transformer:\n" +  // 2
         fields +              // 3..
         "  seq_len: 128\n"
         "  step_time: 1s\n" +
         extra;
}
constexpr const char* kShape =
    "    layers: 2\n"        // 3
    "    hidden: 64\n"       // 4
    "    ffn_hidden: 256\n"  // 5
    "    heads: 4\n"         // 6
    "    vocab: 100\n";      // 7

constexpr const char* kFsdpHead =
    "workload:\n"           // 1
    "  model: llama3-8b\n"  // 2
    "  step_time: 1s\n"     // 3
    "training:\n"           // 4
    "  scheme: fsdp\n"      // 5
    "  fsdp:\n";            // 6

// A decoder with a parallel layout, lines 1-12; `extra` at line 13 (under training.parallel: at
// four spaces, or a new section at none).
std::string layout(const std::string& parallel, const std::string& extra = "",
                   const std::string& workers = "16") {
  return "workload:\n"                    // 1
         "  model: llama2-7b\n"           // 2
         "  achieved_flops: 100TFLOPS\n"  // 3
         "  micro_batch: 1\n"             // 4
         "  global_batch: 16\n"           // 5
         "cluster:\n"                     // 6
         "  workers: " +
         workers +
         "\n"                       // 7
         "  workers_per_node: 8\n"  // 8
         "training:\n"              // 9
         "  parallel:\n" +          // 10
         parallel +                 // 11, 12
         extra;
}

// A decoder with workload.compute: shapes, lines 1-10 (`gpu` at lines 8-10); `extra` at line 11.
std::string shapes(const std::string& gpu =
                       "    peak_flops: 989TFLOPS\n    memory_bandwidth: 3.35TB/s\n    gemm: gemm.csv\n",
                   const std::string& extra = "") {
  return "workload:\n"           // 1
         "  model: llama2-7b\n"  // 2
         "  compute: shapes\n"   // 3
         "  precision: bf16\n"   // 4
         "cluster:\n"            // 5
         "  workers: 2\n"        // 6
         "  gpu:\n" +            // 7
         gpu +                   // 8..10
         extra;
}
constexpr const char* kGemmHeader = "m,n,k,dtype,time_us\n";

/// One past the most workers a job may have.
const std::string kPastMaxWorkers = std::to_string(stepcast::limits::kMaxWorkers + 1);
/// One past the most workers the full engine simulates.
const std::string kPastSimulatedWorkers = std::to_string(stepcast::limits::kMaxSimulatedWorkers + 1);

struct Case {
  const char* name;
  std::string scenario;  ///< written as <name>.yaml; "" writes none
  /// The command; "@" is the scenario's path, "@dir" the test's directory. Empty: predict @ --workers 2.
  std::vector<std::string> args;
  std::vector<std::string> needles;  ///< each must be in stderr; "@" is the scenario's path
  std::vector<std::pair<std::string, std::string>> files = {};  ///< other files, by name
};

std::string expand(const std::string& s, const std::string& scenario, const std::string& dir) {
  if (s == "@dir") return dir;
  return s == "@" ? scenario : (s.rfind("@:", 0) == 0 ? scenario + s.substr(1) : s);
}

const std::vector<Case>& cases() {
  static const std::vector<Case> table = {
      // --- workload.compute: shapes and its GEMM table
      {"gemm_table_unknown_dtype",
       shapes(),
       {"predict", "@"},
       {"gemm.csv:2:", "cluster.gpu.gemm", "int4"},
       {{"gemm.csv", std::string(kGemmHeader) + "1024,1024,1024,int4,10\n"}}},
      {"gemm_table_zero_time",
       shapes(),
       {"predict", "@"},
       {"gemm.csv:3:", "cluster.gpu.gemm", "time"},
       {{"gemm.csv", std::string(kGemmHeader) + "1024,1024,1024,bf16,10\n1024,1024,2048,bf16,0\n"}}},
      {"gemm_table_empty",
       shapes(),
       {"predict", "@"},
       {"gemm.csv", "cluster.gpu.gemm", "empty"},
       {{"gemm.csv", ""}}},
      {"gemm_table_malformed_number",
       shapes(),
       {"predict", "@"},
       {"gemm.csv:2:", "cluster.gpu.gemm", "abc"},
       {{"gemm.csv", std::string(kGemmHeader) + "1024,abc,1024,bf16,10\n"}}},
      {"gemm_table_time_without_unit",
       shapes(),
       {"predict", "@"},
       {"gemm.csv:1:", "cluster.gpu.gemm", "time_us"},
       {{"gemm.csv", "m,n,k,dtype,time\n1024,1024,1024,bf16,10\n"}}},
      {"gemm_table_not_a_grid",
       shapes(),
       {"predict", "@"},
       {"gemm.csv", "cluster.gpu.gemm", "m=2048 n=2048 k=1024 is missing"},
       {{"gemm.csv", std::string(kGemmHeader) +
                         "1024,1024,1024,bf16,10\n2048,1024,1024,bf16,20\n1024,2048,1024,bf16,20\n"}}},
      {"gemm_table_missing_file",
       shapes("    peak_flops: 989TFLOPS\n    memory_bandwidth: 3.35TB/s\n    gemm: no-such-table.csv\n"),
       {"predict", "@"},
       {"@:10:", "cluster.gpu.gemm", "no GEMM table"}},
      {"gemm_table_without_the_precision",
       shapes(),
       {"predict", "@"},
       {"@:10:", "cluster.gpu.gemm", "no bf16 rows"},
       {{"gemm.csv", std::string(kGemmHeader) + "1024,1024,1024,fp16,10\n"}}},
      {"shapes_without_memory_bandwidth",
       shapes("    peak_flops: 989TFLOPS\n"),
       {"predict", "@"},
       {"@:3:", "workload.compute", "cluster.gpu.memory_bandwidth"}},
      {"shapes_without_gemm_rates",
       shapes("    memory_bandwidth: 3.35TB/s\n"),
       {"predict", "@"},
       {"@:3:", "workload.compute", "cluster.gpu.peak_flops"}},
      {"shapes_with_a_step_time",
       shapes("    peak_flops: 989TFLOPS\n    memory_bandwidth: 3.35TB/s\n"),
       {"predict", "@", "--set", "workload.step_time=1s"},
       {"workload.step_time", "remove"}},
      {"shapes_on_a_cnn",
       shapes("    peak_flops: 989TFLOPS\n    memory_bandwidth: 3.35TB/s\n"),
       {"predict", "@", "--set", "workload.model=resnet50"},
       {"@:3:", "workload.compute", "decoder"}},
      {"shapes_attention_rate_without_unit",
       shapes("    peak_flops: 989TFLOPS\n    memory_bandwidth: 3.35TB/s\n    attention_flops: 450\n"),
       {"predict", "@"},
       {"@:10:", "cluster.gpu.attention_flops", "unit"}},
      {"shapes_unknown_method",
       shapes("    peak_flops: 989TFLOPS\n    memory_bandwidth: 3.35TB/s\n"),
       {"predict", "@", "--set", "workload.compute=kernels"},
       {"workload.compute", "kernels"}},
      // --- parallel layouts (tensor, context, pipeline, micro-batches)
      {"layout_degrees_do_not_divide_workers",
       layout("    tensor: 4\n    pipeline: 3\n"),
       {"predict", "@"},
       {"@:", "training.parallel.pipeline", "does not divide the 16 workers"}},
      {"layout_fewer_blocks_than_stages",
       layout("    pipeline: 64\n    tensor: 1\n", "", "64"),
       {"predict", "@", "--set", "workload.global_batch=64"},
       {"@:11:", "training.parallel.pipeline", "32 blocks cannot fill 64 pipeline stages x 1 chunks"}},
      {"layout_heads_not_divisible_by_t",
       layout("    tensor: 3\n    pipeline: 1\n", "", "12"),
       {"predict", "@"},
       {"@:11:", "training.parallel.tensor", "32 attention heads"}},
      {"layout_sequence_not_divisible_by_2c",
       layout("    context: 2\n    pipeline: 1\n", "workload:\n  seq_len: 4098\n"),
       {"predict", "@"},
       {"@:11:", "training.parallel.context", "4098"}},
      {"layout_global_batch_does_not_divide",
       layout("    tensor: 2\n    pipeline: 1\n", "", "6"),
       {"predict", "@"},
       {"@:5:", "workload.global_batch", "do not divide"}},
      {"layout_fewer_micro_batches_than_stages_1f1b",
       layout("    tensor: 1\n    pipeline: 4\n", "", "16"),
       {"predict", "@", "--set", "workload.global_batch=8"},
       {"workload.global_batch", "1f1b keeps p = 4"}},
      {"layout_virtual_stages_without_interleaved",
       layout("    pipeline: 2\n    virtual_stages: 2\n"),
       {"predict", "@"},
       {"@:12:", "training.parallel.virtual_stages", "interleaved"}},
      {"layout_interleaved_partial_group",
       layout("    pipeline: 4\n    virtual_stages: 2\n", "  pipeline:\n    schedule: interleaved\n", "8"),
       {"predict", "@", "--set", "workload.global_batch=6"},
       {"workload.global_batch", "groups of p = 4"}},
      {"layout_order_repeats_a_dimension",
       layout("    tensor: 2\n    order: tp-tp-dp-pp\n"),
       {"predict", "@"},
       {"@:12:", "training.parallel.order", "tp, cp, dp and pp"}},
      {"layout_micro_batch_and_batch_per_worker",
       layout("    tensor: 2\n    pipeline: 1\n", "workload:\n  batch_per_worker: 2\n"),
       {"predict", "@"},
       {"@:4:", "workload.micro_batch", "not both"}},
      {"layout_layers_per_stage_wrong_sum",
       layout("    pipeline: 2\n    tensor: 1\n", "  pipeline:\n    layers_per_stage: [10, 10]\n"),
       {"predict", "@"},
       {"@:", "training.pipeline.layers_per_stage", "summing to the 32 blocks"}},
      {"layout_on_a_cnn",
       "workload:\n  model: resnet50\n  step_time: 100ms\ncluster:\n  workers: 4\n"
       "training:\n  parallel:\n    tensor: 2\n",
       {"predict", "@"},
       {"@:2:", "workload.model", "transformer decoder"}},
      {"layout_with_parameter_servers",
       layout("    tensor: 2\n    pipeline: 1\n", "  scheme: ps\n"),
       {"predict", "@"},
       {"@:", "training.scheme", "not a parameter server"}},
      {"layout_with_hybrid_sharding",
       layout("    tensor: 2\n    pipeline: 1\n", "  scheme: fsdp\n  fsdp:\n    sharding: hybrid\n"),
       {"predict", "@"},
       {"@:", "training.fsdp.sharding", "hybrid"}},
      // --- expert parallelism (a mixture of experts: Mixtral's 8 experts, top-2)
      {"expert_degree_does_not_split_the_experts",
       layout("    expert: 3\n    pipeline: 1\n", "", "12"),
       {"predict", "@", "--set", "workload.model=mixtral-8x7b", "--set", "workload.global_batch=12"},
       {"@:11:", "training.parallel.expert", "8 experts"}},
      {"expert_degree_does_not_divide_the_data_ranks",
       layout("    expert: 4\n    tensor: 8\n"),
       {"predict", "@", "--set", "workload.model=mixtral-8x7b", "--set", "workload.global_batch=2"},
       {"@:11:", "training.parallel.expert", "ranks of each stage"}},
      {"expert_tensor_without_expert_parallelism",
       layout("    tensor: 2\n    expert_tensor: 1\n"),
       {"predict", "@", "--set", "workload.model=mixtral-8x7b"},
       {"@:12:", "training.parallel.expert_tensor", "without expert parallelism"}},
      {"expert_tensor_does_not_divide_the_stage",
       layout("    expert: 4\n    expert_tensor: 8\n"),
       {"predict", "@", "--set", "workload.model=mixtral-8x7b"},
       {"@:12:", "training.parallel.expert_tensor", "16 ranks of each stage"}},
      {"expert_tensor_not_a_degree",
       layout("    expert: 2\n    expert_tensor: many\n"),
       {"predict", "@", "--set", "workload.model=mixtral-8x7b"},
       {"@:12:", "training.parallel.expert_tensor", "or tensor"}},
      {"expert_and_tensor_parallelism_without_sequence_parallelism",
       layout("    expert: 2\n    tensor: 2\n    sequence: false\n"),
       {"predict", "@", "--set", "workload.model=mixtral-8x7b"},
       {"@:13:", "training.parallel.sequence", "needs sequence parallelism"}},
      {"expert_parallelism_on_a_dense_model",
       layout("    expert: 2\n    pipeline: 1\n"),
       {"predict", "@"},
       {"@:11:", "training.parallel.expert", "dense"}},
      {"expert_imbalance_below_one",
       layout("    expert: 2\n    pipeline: 1\n"),
       {"predict", "@", "--set", "workload.model=mixtral-8x7b", "--set", "workload.moe.imbalance=0.5"},
       {"workload.moe.imbalance", "0.5"}},
      {"expert_imbalance_beyond_every_token",
       layout("    expert: 2\n    pipeline: 1\n", "workload:\n  moe:\n    imbalance: 5\n"),
       {"predict", "@", "--set", "workload.model=mixtral-8x7b"},
       {"@:", "workload.moe.imbalance", "at most every token"}},
      {"expert_routing_row_sums_differ",
       layout("    expert: 2\n    pipeline: 1\n", "workload:\n  moe:\n    routing: routing.csv\n"),
       {"predict", "@", "--set", "workload.model=mixtral-8x7b"},
       {"routing.csv:3:", "workload.moe.routing", "every row counts the same"},
       {{"routing.csv",
         "block,e0,e1,e2,e3,e4,e5,e6,e7\n0,10,10,10,10,10,10,10,10\n1,20,10,10,10,10,10,10,10\n"}}},
      {"expert_routing_and_imbalance",
       layout("    expert: 2\n    pipeline: 1\n",
              "workload:\n  moe:\n    routing: routing.csv\n    imbalance: 2\n"),
       {"predict", "@", "--set", "workload.model=mixtral-8x7b"},
       {"workload.moe.imbalance", "not both"},
       {{"routing.csv", "block\n"}}},
      {"expert_capacity_below_one",
       layout("    expert: 2\n    pipeline: 1\n"),
       {"predict", "@", "--set", "workload.model=mixtral-8x7b", "--set", "workload.moe.capacity_factor=0.5"},
       {"workload.moe.capacity_factor", "[1, 1e6] or none"}},
      {"expert_with_fsdp_full",
       layout("    expert: 2\n    pipeline: 1\n", "  scheme: fsdp\n  fsdp:\n    sharding: full\n"),
       {"predict", "@", "--set", "workload.model=mixtral-8x7b"},
       {"@:", "training.fsdp.sharding", "expert parallelism"}},
      {"layout_tensor_degree_zero",
       layout("    tensor: 0\n    pipeline: 1\n"),
       {"predict", "@"},
       {"@:11:", "training.parallel.tensor"}},
      {"layout_schedule_unknown",
       layout("    tensor: 2\n    pipeline: 1\n", "  pipeline:\n    schedule: dualpipe\n"),
       {"predict", "@"},
       {"@:14:", "training.pipeline.schedule", "dualpipe"}},
      // --- numbers near the limits of double, NaN and inf, with and without units
      {"nic_bandwidth_1e308",
       head("  nic_bandwidth: 1e308Gbps\n"),
       {},
       {"@:6:", "cluster.nic_bandwidth", "1e308Gbps"}},
      // 1-byte slices would cut ResNet-50 into 100 million messages per client and step.
      {"ps_slice_size_one_byte",
       head("  workers: 2\ntraining:\n  scheme: ps\n  ps:\n    slice_size: 1B\n"),
       {},
       {"@:10:", "training.ps.slice_size", "at least 1kB"}},
      {"ps_slice_size_negative",
       head("  workers: 2\ntraining:\n  scheme: ps\n  ps:\n    slice_size: -1MB\n"),
       {},
       {"@:10:", "training.ps.slice_size"}},
      {"nic_bandwidth_nan", head("  nic_bandwidth: .nan\n"), {}, {"@:6:", "cluster.nic_bandwidth", ".nan"}},
      {"nic_bandwidth_inf_with_unit",
       head("  nic_bandwidth: infGbps\n"),
       {},
       {"@:6:", "cluster.nic_bandwidth"}},
      {"nic_bandwidth_denormal",
       head("  nic_bandwidth: 1e-300Gbps\n"),
       {},
       {"@:6:", "cluster.nic_bandwidth", "less than"}},
      {"bandwidth_past_uint64",
       head("  intra_node:\n    bandwidth: 18446744073709551616B/s\n"),
       {},
       {"@:7:", "cluster.intra_node.bandwidth"}},
      {"ps_nic_bandwidth_past_max",
       head("  ps_nic_bandwidth: 1e16GB/s\n"),
       {},
       {"@:6:", "cluster.ps_nic_bandwidth"}},
      {"link_latency_1e308",
       head("  link_latency: 1e308s\n"),
       {},
       {"@:6:", "cluster.link_latency", "1e308s"}},
      {"link_latency_nan", head("  link_latency: .nan\n"), {}, {"@:6:", "cluster.link_latency"}},
      {"intra_node_latency_inf",
       head("  intra_node:\n    latency: .inf\n"),
       {},
       {"@:7:", "cluster.intra_node.latency"}},
      {"regime_bandwidth_1e308",
       head("  collective_regimes: [\"1MiB 5us 1e308GB/s\"]\n"),
       {},
       {"@:6:", "cluster.collective_regimes", "1e308GB/s"}},
      {"step_time_1e308",
       "workload:\n  model: resnet50\n  step_time: 1e308s\n",
       {},
       {"@:3:", "workload.step_time"}},
      {"comm_cpu_per_byte_slower_than_1kBps",
       "workload:\n  model: resnet50\n  step_time: 100ms\n  comm_cpu_per_byte: 1s\n",
       {},
       {"@:4:", "workload.comm_cpu_per_byte"}},
      {"comm_cpu_per_byte_negative",
       "workload:\n  model: resnet50\n  step_time: 100ms\n  comm_cpu_per_byte: -1ns\n",
       {},
       {"@:4:", "workload.comm_cpu_per_byte"}},
      {"step_time_nan_with_unit",
       "workload:\n  model: resnet50\n  step_time: nanms\n",
       {},
       {"@:3:", "workload.step_time"}},
      {"throughput_inf",
       "workload:\n  model: resnet50\n  single_worker_throughput: .inf\n",
       {},
       {"@:3:", "workload.single_worker_throughput"}},
      {"compute_cv_nan",
       head("  workers: 2\n"),
       {"predict", "@", "--set", "workload.compute_cv=.nan"},
       {"--set", "workload.compute_cv", ".nan"}},
      {"compute_cv_past_max",
       "workload:\n  model: resnet50\n  step_time: 100ms\n  compute_cv: 11\n",
       {},
       {"@:4:", "workload.compute_cv", "11"}},
      {"job_samples_1e308",
       "workload:\n  model: resnet50\n  step_time: 100ms\njob:\n  samples: 1e308\n",
       {},
       {"@:5:", "job.samples", "1e308"}},
      {"job_samples_nan",
       "workload:\n  model: resnet50\n  step_time: 100ms\njob:\n  samples: .nan\n",
       {},
       {"@:5:", "job.samples"}},
      {"startup_bytes_inf",
       "workload:\n  model: resnet50\n  step_time: 100ms\njob:\n  startup:\n    bytes: .inf\n",
       {},
       {"@:6:", "job.startup.bytes"}},
      {"startup_bytes_past_uint64",
       "workload:\n  model: resnet50\n  step_time: 100ms\njob:\n  startup:\n    bytes: "
       "18446744073709551617\n",
       {},
       {"@:6:", "job.startup.bytes"}},
      {"bucket_size_1e300MB",
       "workload:\n  model: resnet50\n  step_time: 100ms\ntraining:\n  allreduce:\n    bucket_size: "
       "1e300MB\n",
       {},
       {"@:6:", "training.allreduce.bucket_size"}},
      {"apply_time_1e308",
       "workload:\n  model: resnet50\n  step_time: 100ms\ntraining:\n  scheme: ps\n  ps:\n    apply_time: "
       "1e308s\n",
       {},
       {"@:7:", "training.ps.apply_time"}},
      {"backward_ratio_1e308",
       "workload:\n  model: resnet50\n  step_time: 100ms\n  backward_ratio: 1e308\n",
       {},
       {"@:4:", "workload.backward_ratio", "1e308"}},
      {"oversubscription_1e308",
       head("  workers: 64\n  topology: fat_tree\n  fat_tree:\n    oversubscription: 1e308\n"),
       {},
       {"@:9:", "cluster.fat_tree.oversubscription"}},
      {"gpu_memory_1e300GB", head("  gpu_memory: 1e300GB\n"), {}, {"@:6:", "cluster.gpu_memory"}},
      {"gpu_memory_negative", head("  gpu_memory: -1GB\n"), {}, {"@:6:", "cluster.gpu_memory"}},
      {"memory_reserved_without_unit",
       head("  gpu:\n    memory_reserved: 1000000\n"),
       {},
       {"@:7:", "cluster.gpu.memory_reserved", "unit"}},
      {"memory_reserved_negative",
       head("  gpu:\n    memory_reserved: -1GB\n"),
       {},
       {"@:7:", "cluster.gpu.memory_reserved"}},
      {"memory_reserved_nan",
       head("  gpu:\n    memory_reserved: .nan\n"),
       {},
       {"@:7:", "cluster.gpu.memory_reserved"}},
      {"allocator_overhead_one",
       head("  gpu:\n    allocator_overhead: 1\n"),
       {},
       {"@:7:", "cluster.gpu.allocator_overhead", "[0, 1)"}},
      {"allocator_overhead_negative",
       head("  gpu:\n    allocator_overhead: -0.1\n"),
       {},
       {"@:7:", "cluster.gpu.allocator_overhead"}},
      {"allocator_overhead_percent",
       head("  gpu:\n    allocator_overhead: 10%\n"),
       {},
       {"@:7:", "cluster.gpu.allocator_overhead"}},
      {"loss_unknown",
       "workload:\n  model: llama3-8b\n  step_time: 1s\n  loss: fp16\n",
       {},
       {"@:4:", "workload.loss", "fp32_logits"}},
      {"peak_flops_nan", head("  gpu:\n    peak_flops: .nan\n"), {}, {"@:7:", "cluster.gpu.peak_flops"}},
      {"memory_bandwidth_nan",
       head("  gpu:\n    memory_bandwidth: .nan\n"),
       {},
       {"@:7:", "cluster.gpu.memory_bandwidth"}},
      {"placement_zero_gpus_on_a_node", head("  placement: [2, 0, 1]\n"), {}, {"@:6:", "cluster.placement"}},
      {"placement_past_int", head("  placement: [1, 99999999999]\n"), {}, {"@:6:", "cluster.placement"}},
      {"placement_not_a_list_of_integers",
       head("  placement: [1, two]\n"),
       {},
       {"@:6:", "cluster.placement"}},
      {"memory_bandwidth_too_low_for_the_measured_step",
       head("  gpu:\n    memory_bandwidth: 1MB/s\n"),
       {},
       {"@:7:", "cluster.gpu.memory_bandwidth", "measured step"}},
      // --- worker and node counts past their limits and past int
      {"workers_past_max",
       head("  workers: " + kPastMaxWorkers + "\n"),
       {"predict", "@"},
       {"@:6:", "cluster.workers", kPastMaxWorkers}},
      {"workers_past_int", head("  workers: 2147483648\n"), {"predict", "@"}, {"@:6:", "cluster.workers"}},
      {"workers_in_float_notation",
       head("  workers: 1e4\n"),
       {"predict", "@"},
       {"@:6:", "cluster.workers", "1e4"}},
      {"workers_per_node_past_max",
       head("  workers_per_node: " + kPastMaxWorkers + "\n"),
       {},
       {"@:6:", "cluster.workers_per_node"}},
      {"nics_above_workers_per_node",
       head("  workers_per_node: 2\n  nics_per_node: 3\n"),
       {},
       {"@:7:", "cluster.nics_per_node"}},
      {"ps_count_past_max",
       "workload:\n  model: resnet50\n  step_time: 100ms\ntraining:\n  scheme: ps\n  ps:\n    count: 4097\n",
       {},
       {"@:7:", "training.ps.count", "4097"}},
      {"workers_flag_past_max",
       head("  workers: 2\n"),
       {"predict", "@", "--workers", kPastMaxWorkers},
       {"--workers", kPastMaxWorkers}},
      {"workers_flag_past_uint64",
       head("  workers: 2\n"),
       {"predict", "@", "--workers", "99999999999999999999"},
       {"--workers"}},
      {"set_workers_past_max",
       head("  workers: 2\n"),
       {"predict", "@", "--set", "cluster.workers=" + kPastMaxWorkers},
       {"--set", "cluster.workers", kPastMaxWorkers}},
      // --- topologies: dimensions whose product overflows, or too large to build
      {"torus_dims_product_overflows_int",
       head("  topology: torus\n  torus:\n    dims: 2048x2048x2048\n"),
       {},
       {"@:8:", "cluster.torus.dims", "routers"}},
      {"torus_dims_too_many_routers",
       head("  topology: torus\n  torus:\n    dims: 4096x4096\n"),
       {},
       {"@:8:", "cluster.torus.dims", "routers"}},
      {"torus_dim_past_int",
       head("  topology: torus\n  torus:\n    dims: 2147483648x2\n"),
       {},
       {"@:8:", "cluster.torus.dims"}},
      {"fat_tree_radix_past_max",
       head("  topology: fat_tree\n  fat_tree:\n    radix: 2147483647\n"),
       {},
       {"@:8:", "cluster.fat_tree.radix"}},
      {"uplink_bandwidth_without_unit",
       head("  workers: 64\n  topology: fat_tree\n  fat_tree:\n    uplink_bandwidth: 100\n"),
       {},
       {"@:9:", "cluster.fat_tree.uplink_bandwidth"}},
      {"uplinks_past_half_the_radix",
       head("  workers: 64\n  topology: fat_tree\n  fat_tree:\n    radix: 16\n    uplinks: 9\n"),
       {},
       {"@:10:", "cluster.fat_tree.uplinks", "1 .. 8"}},
      {"oversubscription_disagrees_with_uplinks",
       head("  workers: 64\n  topology: fat_tree\n  fat_tree:\n    oversubscription: 2\n    uplinks: 2\n"),
       {},
       {"@:9:", "cluster.fat_tree.oversubscription", "cluster.fat_tree.uplinks", "4:1"}},
      {"uplink_bandwidth_making_a_fractional_count",
       head("  workers: 64\n  nic_bandwidth: 100Gbps\n  topology: fat_tree\n  fat_tree:\n    "
            "uplink_bandwidth: "
            "300Gbps\n"),
       {},
       {"@:10:", "cluster.fat_tree.uplink_bandwidth", "whole number"}},
      {"routing_ideal_on_bigraph",
       head("  workers: 8\n  topology: bigraph\n  routing: ideal\n"),
       {},
       {"@:8:", "cluster.routing", "ecmp"}},
      {"custom_link_bandwidth_1e308",
       kCustomScenario,
       {},
       {"topo.yaml:4:", "links.bandwidth", "1e308Gbps"},
       {{"topo.yaml",
         "switches: [s]\nlinks:\n  - [node0, s]\n  - {a: node1, b: s, bandwidth: 1e308Gbps}\n"}}},
      {"custom_link_latency_nan",
       kCustomScenario,
       {},
       {"topo.yaml:4:", "links.latency"},
       {{"topo.yaml", "switches: [s]\nlinks:\n  - [node0, s]\n  - {a: node1, b: s, latency: .nan}\n"}}},
      {"custom_node_past_int",
       kCustomScenario,
       {},
       {"topo.yaml:3:", "node2147483648"},
       {{"topo.yaml", "switches: [s]\nlinks:\n  - [node2147483648, s]\n  - [node1, s]\n"}}},
      // --- unknown keys and wrong types
      {"unknown_nested_key",
       head("  gpu:\n    bogus: 1\n"),
       {},
       {"@:7:", "cluster.gpu.bogus", "unknown key"}},
      {"unknown_section",
       "bogus_section: 1\nworkload: {model: resnet50, step_time: 100ms}\n",
       {},
       {"@:1:", "bogus_section", "unknown key"}},
      {"list_for_choice", head("  topology: [a, b]\n"), {}, {"@:6:", "cluster.topology", "list"}},
      {"list_for_duration",
       "workload:\n  model: resnet50\n  step_time: [1, 2]\n",
       {},
       {"@:3:", "workload.step_time"}},
      {"scalar_for_section", "workload: resnet50\n", {}, {"@:1:", "workload", "section"}},
      {"set_unknown_key",
       head("  workers: 2\n"),
       {"predict", "@", "--set", "cluster.bogus=1"},
       {"--set", "cluster.bogus"}},
      // --- empty, truncated, binary and endless files, a directory
      {"empty_file", "", {"predict", "@"}, {"@", "empty"}, {{"empty_file.yaml", ""}}},
      {"truncated_flow_list", "workload:\n  model: [resnet50\n", {}, {"@:", "invalid YAML"}},
      {"truncated_flow_map",
       "workload:\n  model: resnet50\n  step_time: 100ms\ncluster: {workers: 2\n",
       {},
       {"@:", "invalid YAML"}},
      {"truncated_in_quote",
       "workload:\n  model: resnet50\n  step_time: \"100ms",
       {},
       {"@:3:", "invalid YAML"}},
      {"binary_garbage", std::string("\x00\x01\x02\xff", 4), {}, {"@:1:"}},
      {"directory_as_scenario", "", {"predict", "@dir"}, {"@dir", "directory"}},
      {"dev_zero_as_scenario", "", {"predict", "/dev/zero"}, {"/dev/zero", "64 MiB"}},
      // --- layer tables with bad cells
      {"layer_cell_not_a_duration",
       kLayerScenario,
       {},
       {"layers.csv:2:", "backward_time", "abc"},
       {{"layers.csv", std::string(kLayerHeader) + "conv1,1.2ms,abc,100\n"}}},
      {"layer_cell_nan",
       kLayerScenario,
       {},
       {"layers.csv:2:", "forward_time", "nan"},
       {{"layers.csv", std::string(kLayerHeader) + "conv1,nan,1ms,100\n"}}},
      {"layer_cell_1e308s",
       kLayerScenario,
       {},
       {"layers.csv:2:", "forward_time", "1e308s"},
       {{"layers.csv", std::string(kLayerHeader) + "conv1,1e308s,1ms,100\n"}}},
      {"layer_bytes_past_uint64",
       kLayerScenario,
       {},
       {"layers.csv:2:", "parameter_bytes"},
       {{"layers.csv", std::string(kLayerHeader) + "conv1,1ms,1ms,18446744073709551617\n"}}},
      {"layer_negative_time",
       kLayerScenario,
       {},
       {"layers.csv:2:", "backward_time", "-1ms"},
       {{"layers.csv", std::string(kLayerHeader) + "conv1,1ms,-1ms,5\n"}}},
      {"layer_row_too_short",
       kLayerScenario,
       {},
       {"layers.csv:2:", "cells"},
       {{"layers.csv", std::string(kLayerHeader) + "conv1,1ms,1ms\n"}}},
      {"layer_unknown_column",
       kLayerScenario,
       {},
       {"layers.csv:1:", "color"},
       {{"layers.csv", "layer,forward_time,backward_time,parameter_bytes,color\nconv1,1ms,1ms,1,red\n"}}},
      {"layer_duplicate",
       kLayerScenario,
       {},
       {"layers.csv:3:", "duplicate"},
       {{"layers.csv", std::string(kLayerHeader) + "conv1,1ms,1ms,5\nconv1,1ms,1ms,5\n"}}},
      {"layer_unterminated_quote",
       kLayerScenario,
       {},
       {"layers.csv:2:", "quote"},
       {{"layers.csv", std::string(kLayerHeader) + "\"conv1,1ms,1ms,5\n"}}},
      {"layer_header_only", kLayerScenario, {}, {"layers.csv:", "no layers"}, {{"layers.csv", kLayerHeader}}},
      // --- workload.transformer.*, workload.seq_len
      {"transformer_missing_fields",
       "workload:\n  transformer:\n    layers: 2\n  step_time: 1s\n",
       {},
       {"@", "workload.transformer.hidden", "required"}},
      {"transformer_zero_heads",
       decoder("    layers: 2\n    hidden: 64\n    ffn_hidden: 256\n    heads: 0\n    vocab: 100\n"),
       {},
       {"@:6:", "workload.transformer.heads"}},
      {"transformer_heads_not_dividing_hidden",
       decoder("    layers: 2\n    hidden: 65\n    ffn_hidden: 256\n    heads: 4\n    vocab: 100\n"),
       {},
       {"@:6:", "workload.transformer.heads", "divisor"}},
      {"transformer_kv_heads_not_dividing_heads",
       decoder(std::string(kShape) + "    kv_heads: 3\n"),
       {},
       {"@:8:", "workload.transformer.kv_heads", "divisor"}},
      {"transformer_too_many_experts",
       decoder(std::string(kShape) + "    experts: 1000000\n"),
       {},
       {"@:8:", "workload.transformer.experts"}},
      {"transformer_layers_past_int",
       decoder("    layers: 2147483648\n    hidden: 64\n    ffn_hidden: 256\n    heads: 4\n    vocab: 100\n"),
       {},
       {"@:3:", "workload.transformer.layers"}},
      {"transformer_moe_layers_bad_range",
       decoder(std::string(kShape) + "    experts: 4\n    moe_layers: 1-x\n"),
       {},
       {"@:9:", "workload.transformer.moe_layers", "block index"}},
      {"transformer_moe_layers_past_the_blocks",
       decoder(std::string(kShape) + "    experts: 4\n    moe_layers: [0, \"1-2\"]\n"),
       {},
       {"@:9:", "workload.transformer.moe_layers", "got block 2"}},
      {"transformer_moe_layers_against_dense_layers_first",
       decoder(std::string(kShape) + "    experts: 4\n    dense_layers_first: 1\n    moe_layers: every 2\n"),
       {},
       {"@:10:", "workload.transformer.moe_layers", "dense_layers_first"}},
      {"transformer_mla_without_value_width",
       decoder(std::string(kShape) + "    kv_lora_rank: 16\n    qk_rope_head_dim: 4\n"),
       {},
       {"@", "workload.transformer.v_head_dim"}},
      {"transformer_unknown_field",
       decoder(std::string(kShape) + "    bogus: 1\n"),
       {},
       {"@:8:", "workload.transformer.bogus", "unknown key"}},
      {"transformer_and_model",
       "workload:\n  model: resnet50\n  transformer:\n    layers: 2\n  step_time: 1s\n",
       {},
       {"@:2:", "workload.model", "not both"}},
      {"seq_len_on_a_cnn",
       "workload:\n  model: resnet50\n  seq_len: 128\n  step_time: 1s\n",
       {},
       {"@:3:", "workload.seq_len", "transformer"}},
      {"seq_len_past_range",
       "workload:\n  model: llama3-8b\n  seq_len: 2147483648\n  step_time: 1s\n",
       {},
       {"@:3:", "workload.seq_len"}},
      {"seq_len_past_learned_positions",
       "workload:\n  model: gpt2\n  seq_len: 2048\n  step_time: 1s\n",
       {},
       {"@:3:", "workload.seq_len", "1024"}},
      // --- workload.achieved_flops, workload.compute_efficiency, cluster.gpu_memory
      {"achieved_flops_past_max",
       "workload:\n  model: llama3-8b\n  achieved_flops: 1e30\n",
       {},
       {"@:3:", "workload.achieved_flops"}},
      {"achieved_flops_nan",
       "workload:\n  model: llama3-8b\n  achieved_flops: .nan\n",
       {},
       {"@:3:", "workload.achieved_flops"}},
      {"compute_efficiency_without_peak_flops",
       "workload:\n  model: llama3-8b\n  compute_efficiency: 0.5\n",
       {},
       {"@:3:", "workload.compute_efficiency", "cluster.gpu.peak_flops"}},
      {"compute_efficiency_above_one",
       "workload:\n  model: llama3-8b\n  compute_efficiency: 1.5\ncluster:\n  gpu:\n    peak_flops: "
       "989TFLOPS\n",
       {},
       {"@:3:", "workload.compute_efficiency"}},
      {"gpu_memory_nan",
       "workload:\n  model: llama3-8b\n  step_time: 1s\ncluster:\n  gpu_memory: nanGB\n",
       {},
       {"@:5:", "cluster.gpu_memory"}},
      // --- training.fsdp.*
      {"fsdp_sharding_unknown",
       std::string(kFsdpHead) + "    sharding: bogus\n",
       {},
       {"@:7:", "training.fsdp.sharding", "bogus"}},
      {"fsdp_shard_group_zero",
       std::string(kFsdpHead) + "    shard_group: 0\n",
       {},
       {"@:7:", "training.fsdp.shard_group"}},
      {"fsdp_shard_group_past_int",
       std::string(kFsdpHead) + "    shard_group: 2147483648\n",
       {},
       {"@:7:", "training.fsdp.shard_group"}},
      {"fsdp_unit_not_a_number",
       std::string(kFsdpHead) + "    unit: bogus\n",
       {},
       {"@:7:", "training.fsdp.unit"}},
      {"fsdp_prefetch_not_a_number",
       std::string(kFsdpHead) + "    prefetch: maybe\n",
       {},
       {"@:7:", "training.fsdp.prefetch"}},
      {"fsdp_reshard_not_a_boolean",
       std::string(kFsdpHead) + "    reshard_after_forward: 2\n",
       {},
       {"@:7:", "training.fsdp.reshard_after_forward"}},
      {"fsdp_unknown_key", std::string(kFsdpHead) + "    bogus: 1\n", {}, {"@:7:", "training.fsdp.bogus"}},
      {"fsdp_scalar_for_section",
       "workload:\n  model: llama3-8b\n  step_time: 1s\ntraining:\n  scheme: fsdp\n  fsdp: 5\n",
       {},
       {"@:6:", "training.fsdp"}},
      // --- --sweep syntax
      {"sweep_without_values",
       head("  workers: 2\n"),
       {"predict", "@", "--sweep", "cluster.workers"},
       {"--sweep", "KEY=V1"}},
      {"sweep_empty_value",
       head("  workers: 2\n"),
       {"predict", "@", "--sweep", "cluster.workers="},
       {"--sweep", "empty"}},
      {"sweep_reversed_range",
       head("  workers: 2\n"),
       {"predict", "@", "--sweep", "cluster.workers=8..2"},
       {"--sweep", "8..2"}},
      {"sweep_range_of_bandwidths",
       head("  workers: 2\n"),
       {"predict", "@", "--sweep", "cluster.nic_bandwidth=1Gbps..10Gbps"},
       {"--sweep", "A..B"}},
      {"sweep_unknown_key",
       head("  workers: 2\n"),
       {"predict", "@", "--sweep", "nosuch=1,2"},
       {"--sweep", "nosuch"}},
      // --- past the full engine's limit: paths that simulate every worker say why they need it
      {"full_engine_past_limit",
       head("  workers: 2\n"),
       {"predict", "@", "--workers", kPastSimulatedWorkers, "--set", "simulation.fast_paths=false"},
       {"cluster.workers", kPastSimulatedWorkers, std::to_string(stepcast::limits::kMaxSimulatedWorkers),
        "simulation.fast_paths is false"}},
      {"trace_past_limit",
       head("  workers: 2\n"),
       {"predict", "@", "--workers", kPastSimulatedWorkers, "--trace-out", "/dev/null"},
       {"cluster.workers", kPastSimulatedWorkers, "--trace-out"}},
      {"ps_past_limit",
       head("  workers: 2\ntraining: {scheme: ps, ps: {count: 1, placement: dedicated}}\n"),
       {"predict", "@", "--workers", kPastSimulatedWorkers},
       {"cluster.workers", kPastSimulatedWorkers, "parameter servers"}},
      {"export_past_limit",
       head("  workers: 2\n"),
       {"export", "@", "--workers", kPastSimulatedWorkers, "--chakra", "@dir"},
       {"cluster.workers", kPastSimulatedWorkers, "one file per rank"}},
      {"sweep_past_max",
       head("  workers: 2\n"),
       {"predict", "@", "--sweep", "cluster.workers=1.." + kPastMaxWorkers},
       {"--sweep", "cluster.workers"}},
      // --- advise without a target, or with one it cannot take
      {"advise_without_target",
       head("  workers: 2\n"),
       {"advise", "@", "--vary", "cluster.workers=2,4"},
       {"--target-efficiency", "give one target"}},
      {"advise_without_vary",
       head("  workers: 2\n"),
       {"advise", "@", "--target-efficiency", "0.5"},
       {"--vary"}},
      {"advise_negative_throughput",
       head("  workers: 2\n"),
       {"advise", "@", "--vary", "cluster.workers=2,4", "--target-throughput", "-5"},
       {"--target-throughput", "-5"}},
      {"advise_nan_efficiency",
       head("  workers: 2\n"),
       {"advise", "@", "--vary", "cluster.workers=2,4", "--target-efficiency", "nan"},
       {"--target-efficiency", "nan"}},
      {"advise_efficiency_above_one",
       head("  workers: 2\n"),
       {"advise", "@", "--vary", "cluster.workers=2,4", "--target-efficiency", "1.5"},
       {"--target-efficiency", "1.5"}},
  };
  return table;
}

TEST_F(BadInputTable, EveryCaseExitsTwoNamingFileLineAndKey) {
  ASSERT_GE(cases().size(), 40u);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    for (const auto& [name, text] : c.files) file(name, text);
    const std::string scenario = c.scenario.empty() ? path(std::string(c.name) + ".yaml").string()
                                                    : file(std::string(c.name) + ".yaml", c.scenario);
    std::vector<std::string> args =
        c.args.empty() ? std::vector<std::string>{"predict", "@", "--workers", "2"} : c.args;
    for (std::string& a : args) a = expand(a, scenario, dir_.string());
    const RunResult r = run(args, 20);
    EXPECT_EQ(r.code, 2) << r.describe();
    EXPECT_NE(r.err.find("stepcast: error:"), std::string::npos) << r.describe();
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.describe();
    EXPECT_EQ(r.err.find("nan s"), std::string::npos) << r.describe();
    for (const std::string& needle : c.needles) {
      const std::string n = expand(needle, scenario, dir_.string());
      EXPECT_NE(r.err.find(n), std::string::npos) << "stderr should contain '" << n << "'\n" << r.describe();
    }
  }
}

}  // namespace bad_input_table_cli_test
}  // namespace
}  // namespace stepcast_cli_test
