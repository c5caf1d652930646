// End-to-end tests of `stepcast predict`: table, JSON, CSV and trace output of the built binary.
#include <algorithm>
#include <cmath>
#include <regex>
#include <set>
#include <utility>

#include "cli/cli_support.hpp"

namespace stepcast_cli_test {
namespace {
namespace predict_cli_test {  // this file's own names: test files are compiled several to a unit

using PredictCli = CliTest;

// resnet50-ps.yaml: batch_per_worker 64, 367 samples/s on one worker, synchronous PS.
constexpr double kBatch = 64;
constexpr double kSingleWorkerThroughput = 367;

TEST_F(PredictCli, TableHasOneRowPerWorkerCountWithThroughputAndBottleneck) {
  RunResult r = run({"predict", kExample, "--workers", "1,2,4"});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(r.out.find("samples/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bottleneck"), std::string::npos) << r.out;
  // Rows start with the worker count, then the predictor; the last column (bottleneck) is text.
  const std::regex row(R"(^\s*(\d+)\s+(fine|coarse)\s+.*\S\s+([0-9.]+)\s+([0-9.]+)x\s+([0-9.]+)%\s+(\S.*)$)");
  std::vector<int> seen;
  for (const std::string& line : split_lines(r.out)) {
    std::smatch m;
    if (std::regex_match(line, m, row)) {
      seen.push_back(std::stoi(m[1].str()));
      EXPECT_GT(std::stod(m[3].str()), 0) << line;
      EXPECT_FALSE(m[6].str().empty()) << line;
    }
  }
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 4})) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

// The heading names the fabric; a key that cannot change the result is said on stderr, and the
// prediction still runs (exit 0). 6 workers and the example's 2 server nodes at radix 16 (8 hosts
// per leaf) all sit under one leaf.
TEST_F(PredictCli, HeadingNamesTheFabricAndIneffectiveKeysAreWarned) {
  RunResult r = run({"predict", kExample, "--workers", "6", "--set", "cluster.topology=fat_tree", "--set",
                     "cluster.fat_tree.oversubscription=2"});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(r.out.find("topology: leaf-spine (radix 16): 1 leaf of up to 8 hosts"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("warning: cluster.fat_tree.oversubscription (2) has no effect"), std::string::npos) << r.err;
  RunResult spread = run({"predict", kExample, "--workers", "6", "--set", "cluster.topology=fat_tree", "--set",
                          "cluster.fat_tree.oversubscription=2", "--set", "cluster.fat_tree.radix=4"});
  ASSERT_EQ(spread.code, 0) << spread.describe();
  EXPECT_EQ(spread.err.find("has no effect"), std::string::npos) << spread.err;
  EXPECT_NE(spread.out.find("leaves of up to 2 hosts"), std::string::npos) << spread.out;
  // Host CPU per byte is paid by a parameter server's transfers only.
  RunResult ring = run({"predict", kExample, "--workers", "4", "--set", "training.scheme=allreduce", "--set",
                        "workload.comm_cpu_per_byte=1ns"});
  ASSERT_EQ(ring.code, 0) << ring.describe();
  EXPECT_NE(ring.err.find("warning: workload.comm_cpu_per_byte has no effect"), std::string::npos) << ring.err;
  RunResult served = run({"predict", kExample, "--workers", "4", "--set", "workload.comm_cpu_per_byte=1ns"});
  ASSERT_EQ(served.code, 0) << served.describe();
  EXPECT_EQ(served.err.find("has no effect"), std::string::npos) << served.err;
}

// TCP incast (docs/models.md, "Incast") acts only with tcp, a buffer, a parameter server and the
// fine predictor; each other combination says why on stderr and still predicts.
TEST_F(PredictCli, IncastKeysThatCannotActAreWarned) {
  struct Case {
    std::vector<std::string> sets;
    const char* warning;  // nullptr: none
  };
  for (const Case& c : std::vector<Case>{
           {{"cluster.transport=tcp"}, "cluster.transport: tcp has no effect without cluster.switch.buffer"},
           {{"cluster.switch.buffer=128KB"},
            "cluster.switch.buffer has no effect with cluster.transport: rdma"},
           {{"cluster.transport=tcp", "cluster.switch.buffer=128KB", "predictor=coarse"},
            "acts only on the fine"},
           {{"cluster.transport=tcp", "cluster.switch.buffer=128KB", "training.scheme=allreduce"},
            "acts only on the fine"},
           {{"cluster.transport=tcp", "cluster.switch.buffer=128KB"}, nullptr}}) {
    std::vector<std::string> args{"predict", kExample, "--workers", "4"};
    for (const std::string& set : c.sets) {
      args.push_back("--set");
      args.push_back(set);
    }
    RunResult r = run(args);
    ASSERT_EQ(r.code, 0) << r.describe();
    if (c.warning == nullptr) {
      EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
    } else {
      EXPECT_NE(r.err.find(c.warning), std::string::npos) << r.err;
    }
  }
}

// A setting that cannot act on the job is accepted, predicts as without it, and says so (it used
// to change nothing without a word); every shipped example predicts without such a warning.
TEST_F(PredictCli, SettingsThatCannotActAreWarned) {
  const std::string examples = std::string(STEPCAST_SOURCE_DIR) + "/examples/";
  struct Case {
    const char* example;
    const char* set;
    const char* warning;
  };
  for (const Case& c : std::vector<Case>{
           {"vgg16-allreduce.yaml", "training.ps.count=4",
            "training.ps.* has no effect: training.scheme is allreduce"},
           {"vgg16-allreduce.yaml", "training.fsdp.sharding=grad_op", "training.fsdp.* has no effect"},
           {"vgg16-allreduce.yaml", "cluster.rpc_latency=1ms", "cluster.rpc_latency has no effect"},
           {"vgg16-allreduce.yaml", "training.pipeline.schedule=gpipe", "training.pipeline.* has no effect"},
           {"vgg16-allreduce.yaml", "training.tensor.overlap=collective",
            "training.tensor.overlap has no effect"},
           {"vgg16-allreduce.yaml", "workload.flash_attention=false", "is not a transformer decoder"},
           {"vgg16-allreduce.yaml", "workload.loss=chunked", "is not a transformer decoder"},
           {"llama3-70b-plan.yaml", "workload.moe.imbalance=2", "workload.moe.* has no effect"},
           {"llama3-8b-fsdp.yaml", "cluster.gpu.kernel_overhead=1ms", "workload.compute is flops"},
           {"llama3-8b-fsdp.yaml", "training.fsdp.shard_group=8",
            "training.fsdp.shard_group has no effect"}}) {
    SCOPED_TRACE(std::string(c.example) + " " + c.set);
    const RunResult with =
        run({"predict", examples + c.example, "--predictor", "analytic", "--json", "--set", c.set});
    ASSERT_EQ(with.code, 0) << with.describe();
    EXPECT_NE(with.err.find(c.warning), std::string::npos) << with.err;
    const RunResult without = run({"predict", examples + c.example, "--predictor", "analytic", "--json"});
    ASSERT_EQ(without.code, 0) << without.describe();
    EXPECT_EQ(without.err.find("has no effect"), std::string::npos) << without.err;
  }
  // A sweep of what decides (here the scheme) can make the setting act at some of its points.
  const RunResult swept =
      run({"predict", examples + "vgg16-allreduce.yaml", "--predictor", "analytic", "--set",
           "training.fsdp.sharding=grad_op", "--sweep", "training.scheme=allreduce,fsdp"});
  ASSERT_EQ(swept.code, 0) << swept.describe();
  EXPECT_EQ(swept.err.find("has no effect"), std::string::npos) << swept.err;
  for (const auto& entry : std::filesystem::directory_iterator(examples)) {
    if (entry.path().extension() != ".yaml" || entry.path().filename().string().ends_with("-plan.yaml"))
      continue;
    SCOPED_TRACE(entry.path().string());
    const RunResult r = run({"predict", entry.path().string(), "--predictor", "analytic", "--json"});
    ASSERT_EQ(r.code, 0) << r.describe();
    EXPECT_EQ(r.err.find("has no effect"), std::string::npos) << r.err;
  }
}

// The scenario before the sweep need not be valid alone: interleaving set with --set and its
// chunks swept is valid at every point (it was refused: "got v = 1").
TEST_F(PredictCli, ASetValidOnlyWithTheSweptValuesIsTakenAtEachPoint) {
  const std::string example = std::string(STEPCAST_SOURCE_DIR) + "/examples/llama3-70b-plan.yaml";
  const RunResult r =
      run({"predict", example, "--predictor", "analytic", "--set", "training.pipeline.schedule=interleaved",
           "--sweep", "training.parallel.virtual_stages=2,4"});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(r.out.find("vp2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vp4"), std::string::npos) << r.out;
  // A point the rule refuses is still an error naming the key (v = 1 is not interleaved).
  const RunResult bad =
      run({"predict", example, "--predictor", "analytic", "--set", "training.pipeline.schedule=interleaved",
           "--sweep", "training.parallel.virtual_stages=1,2"});
  EXPECT_EQ(bad.code, 2) << bad.describe();
  EXPECT_NE(bad.err.find("training.pipeline.schedule"), std::string::npos) << bad.err;
}

// The time a layout loses to its pipeline schedule is named as the bubble, not as waiting for
// "other workers or servers" or lumped into communication (an exploratory review: the 405B
// example said "30% of step lost to waiting (worker NIC out 9% busy)", half of it the bubble).
TEST_F(PredictCli, APipelineBubbleIsNamedAsSuch) {
  const std::string dir = std::string(STEPCAST_SOURCE_DIR) + "/examples/";
  // Compute-bound, losing time to the bubble and to communication: each part with its share.
  const RunResult l405 = run({"predict", dir + "llama3-405b-3d.yaml", "--predictor", "coarse", "--json"});
  ASSERT_EQ(l405.code, 0) << l405.describe();
  const Json a = parse_json_or_fail(l405.out);
  const Json& ra = a["predictions"].array.at(0);
  EXPECT_EQ(ra["bottleneck_kind"].string, "compute");
  const double bubble = ra["bubble_fraction"].number;
  EXPECT_GT(bubble, 0.05);
  EXPECT_NE(ra["bottleneck"].string.find(fmt::format("pipeline bubble {:.0f}%, communication", 100 * bubble)),
            std::string::npos)
      << ra["bottleneck"].string;
  // GPipe with one micro-batch a step: the stages idle most of it (7/8 with free communication).
  const RunResult gpipe =
      run({"predict", dir + "gpt3-175b-3d.yaml", "--predictor", "coarse", "--workers", "1344", "--set",
           "workload.global_batch=42", "--set", "training.parallel.virtual_stages=null", "--set",
           "training.pipeline.schedule=gpipe", "--json"});
  ASSERT_EQ(gpipe.code, 0) << gpipe.describe();
  const Json g = parse_json_or_fail(gpipe.out);
  const Json& rg = g["predictions"].array.at(0);
  EXPECT_EQ(rg["bottleneck_kind"].string, "pipeline_bubble");
  EXPECT_EQ(rg["bottleneck_resource"].type, Json::Type::Null);
  EXPECT_GT(rg["bubble_fraction"].number, 0.5);
  EXPECT_LT(rg["bubble_fraction"].number, 7.0 / 8 + 1e-9);
  EXPECT_TRUE(rg["bottleneck"].string.starts_with("pipeline bubble (")) << rg["bottleneck"].string;
  // Without a pipeline nothing is a bubble: a tp8 dp8 layout bound by FSDP's collectives puts
  // their time in the data-parallel part, in coarse as in fine (coarse had 25% of it as "wait").
  for (const char* predictor : {"fine", "coarse"}) {
    SCOPED_TRACE(predictor);
    const RunResult fsdp =
        run({"predict", dir + "llama3-70b-fsdp-tp.yaml", "--predictor", predictor, "--workers", "64", "--set",
             "workload.global_batch=8", "--set", "workload.seq_len=4096", "--json"});
    ASSERT_EQ(fsdp.code, 0) << fsdp.describe();
    const Json f = parse_json_or_fail(fsdp.out);
    const Json& rf = f["predictions"].array.at(0);
    EXPECT_EQ(rf["bubble_fraction"].number, 0);
    const double step = rf["step_time_s"].number;
    EXPECT_LT(rf.at_path("breakdown_s.wait")->number, 0.01 * step);
    EXPECT_GT(rf.at_path("breakdown_s.data")->number, 0.3 * step);
  }
}

// Layouts that run unevenly for a reason the table does not show are warned about: tensor groups
// that straddle nodes (4 on nodes of 6), blocks that do not divide into the p x v chunks (GPT-3's
// 96 blocks over 8 x 5; its bubble then grows with v, which looks wrong unless said).
TEST_F(PredictCli, UnevenLayoutsAreWarnedAbout) {
  const std::string dir = std::string(STEPCAST_SOURCE_DIR) + "/examples/";
  const RunResult straddle =
      run({"predict", dir + "llama3-70b-fsdp-tp.yaml", "--predictor", "analytic", "--workers", "96", "--set",
           "training.parallel.tensor=4", "--set", "cluster.workers_per_node=6", "--set",
           "cluster.nics_per_node=6", "--set", "workload.global_batch=96"});
  ASSERT_EQ(straddle.code, 0) << straddle.describe();
  EXPECT_NE(straddle.err.find("tensor groups of 4 GPUs do not divide nodes of 6"), std::string::npos)
      << straddle.err;
  const RunResult uneven = run({"predict", dir + "gpt3-175b-3d.yaml", "--predictor", "analytic", "--set",
                                "training.parallel.virtual_stages=5"});
  ASSERT_EQ(uneven.code, 0) << uneven.describe();
  EXPECT_NE(
      uneven.err.find("96 blocks do not divide into 40 chunks (p = 8 x v = 5): chunks of 2 and 3 blocks"),
      std::string::npos)
      << uneven.err;
  // The example as shipped (v = 12: 96 blocks in 96 chunks, tensor 4 on nodes of 8) says neither.
  const RunResult even = run({"predict", dir + "gpt3-175b-3d.yaml", "--predictor", "analytic"});
  ASSERT_EQ(even.code, 0) << even.describe();
  EXPECT_EQ(even.err.find("do not divide"), std::string::npos) << even.err;
}

// A --set is checked at the --workers counts, as the rows are, also with a --sweep: a global
// batch of 1,344 is 32 micro-batches over GPT-3's 42 replicas at 1,344 GPUs, though it would be 4
// over the 336 of the file's 10,752 (it was refused there: "give at least 2688 sequences").
TEST_F(PredictCli, ASetIsCheckedAtTheWorkersGivenWithASweep) {
  const std::string example = std::string(STEPCAST_SOURCE_DIR) + "/examples/gpt3-175b-3d.yaml";
  const RunResult r = run({"predict", example, "--predictor", "analytic", "--workers", "1344", "--set",
                           "workload.global_batch=1344", "--sweep", "training.parallel.virtual_stages=4,12"});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(r.out.find("vp4 dp42"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vp12 dp42"), std::string::npos) << r.out;
}

// A layout that loses time to one dimension's collectives names them and their links, not the
// busiest link of the step: at tp8 Llama 3 70B's NICs are 77% busy with FSDP's traffic, which
// hides, while the tensor-parallel all-reduces on NVLink are 15% of the step (the sentence used to
// say "lost to communication (worker NIC out 77% busy)").
TEST_F(PredictCli, TheExposedDimensionAndItsLinksAreNamed) {
  const std::string example = std::string(STEPCAST_SOURCE_DIR) + "/examples/llama3-70b-fsdp-tp.yaml";
  const RunResult tp8 = run({"predict", example, "--json"});
  ASSERT_EQ(tp8.code, 0) << tp8.describe();
  EXPECT_NE(tp8.out.find("lost to communication (mostly tensor-parallel collectives: 15% of step, on the "
                         "intra-node link"),
            std::string::npos)
      << tp8.out;
  // GPT-3 175B at 10,752 GPUs (dp336, a batch of 4 micro-batches a replica) waits for its
  // gradient reduction across nodes.
  const RunResult slow = run({"predict", std::string(STEPCAST_SOURCE_DIR) + "/examples/gpt3-175b-3d.yaml",
                              "--json", "--workers", "10752"});
  ASSERT_EQ(slow.code, 0) << slow.describe();
  EXPECT_NE(slow.out.find("mostly data-parallel collectives"), std::string::npos) << slow.out;
  EXPECT_NE(slow.out.find("on the worker NIC"), std::string::npos) << slow.out;
}

// Scatter-gather of pipeline messages needs a pipeline, a tensor group and no sequence parallelism.
TEST_F(PredictCli, ScatterGatherWhereItCannotActIsWarned) {
  const std::string example = std::string(STEPCAST_SOURCE_DIR) + "/examples/llama3-405b-3d.yaml";
  struct Case {
    std::vector<std::string> sets;
    const char* warning;  // nullptr: none
  };
  for (const Case& c : std::vector<Case>{
           {{}, "with sequence parallelism"},
           {{"training.parallel.sequence=false"}, nullptr},
           {{"training.parallel.sequence=false", "training.parallel.tensor=1", "cluster.workers=2048"},
            "no tensor group"}}) {
    std::vector<std::string> args{"predict",  example, "--predictor",
                                  "analytic", "--set", "training.pipeline.scatter_gather=true"};
    for (const std::string& set : c.sets) {
      args.push_back("--set");
      args.push_back(set);
    }
    RunResult r = run(args);
    ASSERT_EQ(r.code, 0) << r.describe();
    const bool warned = r.err.find("training.pipeline.scatter_gather has no effect") != std::string::npos;
    if (c.warning == nullptr) {
      EXPECT_FALSE(warned) << r.err;
    } else {
      EXPECT_TRUE(warned) << r.err;
      EXPECT_NE(r.err.find(c.warning), std::string::npos) << r.err;
    }
  }
}

// A sweep can be what makes the cluster hold the workers (a 4-router torus, 32 workers, swept to
// 8x4 and 4x8): the prediction runs; the heading leaves the fabric out rather than build the file's.
TEST_F(PredictCli, SweepThatMakesTheFabricFitRunsWithoutATopologyLine) {
  RunResult r = run({"predict", kExample, "--set", "cluster.workers=4", "--set", "cluster.topology=torus", "--set",
                     "cluster.torus.dims=4", "--set", "training.ps.placement=colocated", "--set", "training.ps.count=1",
                     "--workers", "32", "--sweep", "cluster.torus.dims=8x4,4x8", "--set", "predictor=analytic"});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_EQ(r.out.find("topology:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("8x4"), std::string::npos) << r.out;
}

TEST_F(PredictCli, JsonOutputIsStrictJsonWithEveryField) {
  RunResult r = run({"predict", kExample, "--workers", "1,2,4", "--json"});
  ASSERT_EQ(r.code, 0) << r.describe();
  const Json doc = parse_json_or_fail(r.out);
  ASSERT_TRUE(doc.is_object()) << r.out;
  ASSERT_TRUE(doc["scenario"].is_object());
  EXPECT_EQ(doc.at_path("scenario.name")->string, "resnet50-ps-sync");
  ASSERT_TRUE(doc["predictions"].is_array());
  const auto& predictions = doc["predictions"].array;
  ASSERT_EQ(predictions.size(), 3u);
  const int counts[] = {1, 2, 4};
  for (size_t i = 0; i < predictions.size(); ++i) {
    const Json& p = predictions[i];
    SCOPED_TRACE("prediction " + std::to_string(i));
    for (const char* key : {"step_time_s", "throughput_samples_per_s", "speedup", "efficiency"}) {
      ASSERT_TRUE(p[key].is_number()) << key;
      EXPECT_TRUE(std::isfinite(p[key].number) && p[key].number > 0) << key << " = " << p[key].number_text;
    }
    EXPECT_EQ(p["workers"].number, counts[i]);
    EXPECT_EQ(p["predictor"].string, "fine");
    ASSERT_TRUE(p["bottleneck"].is_string());
    EXPECT_FALSE(p["bottleneck"].string.empty());
    ASSERT_TRUE(p["breakdown_s"].is_object());
    for (const char* key : {"compute", "communication_exposed", "wait"}) {
      ASSERT_TRUE(p["breakdown_s"][key].is_number()) << key;
      EXPECT_GE(p["breakdown_s"][key].number, 0) << key;
    }
    ASSERT_TRUE(p["utilization"].is_object());
    EXPECT_FALSE(p["utilization"].object.empty());
    for (const auto& [name, value] : p["utilization"].object) {
      ASSERT_TRUE(value.is_number()) << name;
      EXPECT_GE(value.number, 0) << name;
      EXPECT_LE(value.number, 1 + 1e-9) << name;
    }
    // Consistency of the numbers (result.hpp): step_time_s is the mean cycle of the workers and
    // throughput sums batch / cycle over them, so throughput >= N * batch / step_time_s, and
    // close to it in synchronous training where all workers run at the same pace.
    const double n = counts[i];
    const double step = p["step_time_s"].number;
    const double tput = p["throughput_samples_per_s"].number;
    EXPECT_GE(tput, n * kBatch / step * (1 - 1e-12));
    EXPECT_NEAR(tput, n * kBatch / step, 0.01 * tput);
    EXPECT_NEAR(p["speedup"].number, tput / kSingleWorkerThroughput, 1e-9 * tput);
    EXPECT_NEAR(p["efficiency"].number, p["speedup"].number / n, 1e-9);
  }
}

/// The links of one JSON object as every command writes them: [{name, busy, bytes}] busiest
/// first, then links_left_out. Returns (listed, left out).
std::pair<std::size_t, std::size_t> check_links(const Json& holder) {
  EXPECT_TRUE(holder["links"].is_array());
  EXPECT_TRUE(holder["links_left_out"].is_number());
  double previous = 2;
  for (const Json& link : holder["links"].array) {
    EXPECT_TRUE(link["name"].is_string());
    EXPECT_GE(link["busy"].number, 0);
    EXPECT_LE(link["busy"].number, previous) << "busiest first: " << link["name"].string;
    EXPECT_GT(link["bytes"].number, 0) << link["name"].string;
    previous = link["busy"].number;
  }
  return {holder["links"].array.size(), static_cast<std::size_t>(holder["links_left_out"].number)};
}

// One shape of `links` in every command's JSON, the ten busiest by default with the count of the
// others, every one with --all-links. 16 workers and 2 server nodes on one switch: every NIC
// carries bytes both ways, 36 link directions; 8 workers of a ring on one switch: 16.
TEST_F(PredictCli, LinksHaveOneShapeInEveryCommandAndAllLinksKeepsThemAll) {
  RunResult top = run({"predict", kExample, "--workers", "16", "--json"});
  RunResult all = run({"predict", kExample, "--workers", "16", "--json", "--all-links"});
  ASSERT_EQ(top.code, 0) << top.describe();
  ASSERT_EQ(all.code, 0) << all.describe();
  const auto [listed, left_out] = check_links(parse_json_or_fail(top.out)["predictions"].array.at(0));
  EXPECT_EQ(listed, 10u);
  EXPECT_EQ(left_out, 26u);
  const Json every = parse_json_or_fail(all.out)["predictions"].array.at(0);
  EXPECT_EQ(check_links(every), (std::pair<std::size_t, std::size_t>{36, 0}));
  // The table names how many it did not list.
  RunResult table = run({"predict", kExample, "--workers", "16"});
  EXPECT_NE(table.out.find("and 33 more links"), std::string::npos) << table.out;

  RunResult ring = run({"collective", "--workers", "8", "--json"});
  RunResult ring_all = run({"collective", "--workers", "8", "--json", "--all-links"});
  ASSERT_EQ(ring.code, 0) << ring.describe();
  ASSERT_EQ(ring_all.code, 0) << ring_all.describe();
  EXPECT_EQ(check_links(parse_json_or_fail(ring.out)), (std::pair<std::size_t, std::size_t>{10, 6}));
  EXPECT_EQ(check_links(parse_json_or_fail(ring_all.out)), (std::pair<std::size_t, std::size_t>{16, 0}));
}

TEST_F(PredictCli, JsonScenarioResolvesEveryKeyListedByOptions) {
  RunResult opts = run({"options"});
  ASSERT_EQ(opts.code, 0) << opts.describe();
  RunResult r = run({"predict", kExample, "--workers", "1", "--json"});
  ASSERT_EQ(r.code, 0) << r.describe();
  const Json doc = parse_json_or_fail(r.out);
  const std::vector<std::string> lines = split_lines(opts.out);
  ASSERT_GT(lines.size(), 1u);
  int keys = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::istringstream in(lines[i]);
    std::string key;
    if (!(in >> key)) continue;
    ++keys;
    EXPECT_NE(doc["scenario"].at_path(key), nullptr) << "key " << key << " missing from JSON scenario";
  }
  EXPECT_GE(keys, 20);
}

double throughput_at(const Json& doc, size_t i) {
  const auto& p = doc["predictions"].array;
  if (i >= p.size()) return -1;
  return p[i]["throughput_samples_per_s"].number;
}

TEST_F(PredictCli, FasterNicGivesHigherThroughput) {
  RunResult slow =
      run({"predict", kExample, "--workers", "4", "--json", "--set", "cluster.nic_bandwidth=10Gbps"});
  RunResult fast =
      run({"predict", kExample, "--workers", "4", "--json", "--set", "cluster.nic_bandwidth=100Gbps"});
  ASSERT_EQ(slow.code, 0) << slow.describe();
  ASSERT_EQ(fast.code, 0) << fast.describe();
  const Json s = parse_json_or_fail(slow.out);
  const Json f = parse_json_or_fail(fast.out);
  // Echoed in bytes/s whatever the unit given: 10 Gbps = 1.25 GB/s.
  EXPECT_EQ(s.at_path("scenario.cluster.nic_bandwidth")->string, "1.25 GB/s");
  EXPECT_EQ(f.at_path("scenario.cluster.nic_bandwidth")->string, "12.5 GB/s");
  EXPECT_GT(throughput_at(f, 0), throughput_at(s, 0) * 1.05)
      << "10Gbps: " << throughput_at(s, 0) << ", 100Gbps: " << throughput_at(f, 0);
}

TEST_F(PredictCli, PredictorFlagIsNamedInJson) {
  for (const std::string predictor : {"coarse", "analytic"}) {
    SCOPED_TRACE(predictor);
    RunResult r = run({"predict", kExample, "--workers", "1,2", "--predictor", predictor, "--json"});
    ASSERT_EQ(r.code, 0) << r.describe();
    const Json doc = parse_json_or_fail(r.out);
    EXPECT_EQ(doc.at_path("scenario.predictor")->string, predictor);
    ASSERT_EQ(doc["predictions"].array.size(), 2u);
    for (const Json& p : doc["predictions"].array) {
      EXPECT_EQ(p["predictor"].string, predictor);
      EXPECT_GT(p["throughput_samples_per_s"].number, 0);
    }
  }
}

TEST_F(PredictCli, SeedIsAcceptedAndRecorded) {
  RunResult r = run({"predict", kExample, "--workers", "2", "--seed", "7", "--json"});
  ASSERT_EQ(r.code, 0) << r.describe();
  const Json doc = parse_json_or_fail(r.out);
  ASSERT_NE(doc.at_path("scenario.seed"), nullptr);
  EXPECT_EQ(doc.at_path("scenario.seed")->number_text, "7");
  // Same seed, same prediction.
  RunResult again = run({"predict", kExample, "--workers", "2", "--seed", "7", "--json"});
  ASSERT_EQ(again.code, 0) << again.describe();
  EXPECT_EQ(r.out, again.out);
}

TEST_F(PredictCli, SeedAboveInt64IsHonouredOrRejectedNotClamped) {
  // `seed` is an unsigned 64-bit key; --seed must not silently turn 2^64-1 into 2^63-1.
  RunResult r = run({"predict", kExample, "--workers", "1", "--seed", "18446744073709551615", "--json"});
  if (r.code == 0) {
    const Json doc = parse_json_or_fail(r.out);
    ASSERT_NE(doc.at_path("scenario.seed"), nullptr);
    EXPECT_EQ(doc.at_path("scenario.seed")->number_text, "18446744073709551615") << "seed was changed";
  } else {
    EXPECT_EQ(r.code, 2) << r.describe();
    EXPECT_NE(r.err.find("--seed"), std::string::npos) << r.err;
  }
}

TEST_F(PredictCli, CsvHasHeaderAndOneRowPerWorkerCount) {
  const std::string csv = path("out.csv").string();
  RunResult r = run({"predict", kExample, "--workers", "1,2,4", "--csv", csv});
  ASSERT_EQ(r.code, 0) << r.describe();
  ASSERT_TRUE(fs::exists(csv));
  const std::vector<std::string> lines = split_lines(read_text(csv));
  ASSERT_EQ(lines.size(), 4u) << read_text(csv);
  EXPECT_EQ(lines[0].rfind("workers,", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("throughput_samples_per_s"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("bottleneck"), std::string::npos) << lines[0];
  const size_t columns = std::count(lines[0].begin(), lines[0].end(), ',');
  const char* counts[] = {"1,", "2,", "4,"};
  for (size_t i = 1; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].rfind(counts[i - 1], 0), 0u) << lines[i];
    // The bottleneck is quoted and contains no comma here; every row has the header's columns.
    EXPECT_EQ(static_cast<size_t>(std::count(lines[i].begin(), lines[i].end(), ',')), columns) << lines[i];
  }
  // The table is still printed.
  EXPECT_NE(r.out.find("samples/s"), std::string::npos);
}

TEST_F(PredictCli, TraceIsChromeJsonWithAProcessPerWorkerAndCompleteEvents) {
  const std::string trace = path("trace.json").string();
  RunResult r = run({"predict", kExample, "--workers", "1,2", "--trace-out", trace});
  ASSERT_EQ(r.code, 0) << r.describe();
  ASSERT_TRUE(fs::exists(trace));
  const Json doc = parse_json_or_fail(read_text(trace));
  ASSERT_TRUE(doc.is_object());
  ASSERT_TRUE(doc["traceEvents"].is_array());
  std::set<std::string> process_names;
  std::set<double> named_pids;
  int complete = 0;
  for (const Json& e : doc["traceEvents"].array) {
    ASSERT_TRUE(e.is_object());
    ASSERT_TRUE(e["ph"].is_string());
    if (e["ph"].string == "M" && e["name"].string == "process_name") {
      process_names.insert(e["args"]["name"].string);
      named_pids.insert(e["pid"].number);
    } else if (e["ph"].string == "X") {
      ++complete;
      ASSERT_TRUE(e["ts"].is_number());
      ASSERT_TRUE(e["dur"].is_number());
      EXPECT_GE(e["ts"].number, 0);
      EXPECT_GE(e["dur"].number, 0);
      ASSERT_TRUE(e["pid"].is_number());
    }
  }
  // The trace is of the last worker count (2): one process per worker.
  EXPECT_TRUE(process_names.count("worker 0")) << "process names seen: " << process_names.size();
  EXPECT_TRUE(process_names.count("worker 1"));
  EXPECT_FALSE(process_names.count("worker 2"));
  EXPECT_GT(complete, 0);
  // Every X event belongs to a named process.
  int unnamed = 0;
  for (const Json& e : doc["traceEvents"].array) {
    if (e["ph"].string == "X" && !named_pids.count(e["pid"].number)) ++unnamed;
  }
  EXPECT_EQ(unnamed, 0);
  EXPECT_NE(r.out.find(trace), std::string::npos) << "table output should name the trace file";
}

TEST_F(PredictCli, CsvTraceAndJsonTogether) {
  const std::string csv = path("a.csv").string();
  const std::string trace = path("t.json").string();
  RunResult r = run({"predict", kExample, "--workers", "2", "--csv", csv, "--trace-out", trace, "--json"});
  ASSERT_EQ(r.code, 0) << r.describe();
  parse_json_or_fail(r.out);
  parse_json_or_fail(read_text(trace));
  EXPECT_EQ(split_lines(read_text(csv)).size(), 2u);
}

TEST_F(PredictCli, EveryExampleRuns) {
  int examples = 0;
  for (const auto& entry : fs::directory_iterator(kSourceDir / "examples")) {
    if (entry.path().extension() != ".yaml") continue;
    ++examples;
    SCOPED_TRACE(entry.path().string());
    // A parallel layout needs its own worker count (t c p must divide it): at its own count; a
    // data-parallel job at one and two workers too.
    std::ifstream file(entry.path());
    const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    const bool layout = text.find("parallel:") != std::string::npos;
    std::vector<std::string> args{"predict", entry.path().string()};
    if (!layout) args.insert(args.end(), {"--workers", "1,2"});
    RunResult table = run(args);
    EXPECT_EQ(table.code, 0) << table.describe();
    EXPECT_NE(table.out.find("samples/s"), std::string::npos);
    args.emplace_back("--json");
    RunResult json = run(args);
    ASSERT_EQ(json.code, 0) << json.describe();
    const Json doc = parse_json_or_fail(json.out);
    EXPECT_EQ(doc["predictions"].array.size(), layout ? 1u : 2u);
  }
  EXPECT_GE(examples, 1);
}

// The analytic example: a single server saturating at N* and a sequential start-up. The table
// names N* and prints one job line per count; JSON carries both. Beyond N* the throughput stays
// flat, and the whole job gets slower again with more workers (start-up grows with N).
TEST_F(PredictCli, AnalyticExampleShowsSaturationAndJobTime) {
  const std::string example = (kSourceDir / "examples" / "single-server-analytic.yaml").string();
  RunResult table = run({"predict", example, "--workers", "4,64"});
  ASSERT_EQ(table.code, 0) << table.describe();
  EXPECT_NE(table.out.find("parameter servers saturate at N* = "), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("job (64 workers, analytic): 1281167 samples in "), std::string::npos)
      << table.out;
  RunResult json = run({"predict", example, "--workers", "4,8,16,64", "--json"});
  ASSERT_EQ(json.code, 0) << json.describe();
  const Json doc = parse_json_or_fail(json.out);
  const auto& p = doc["predictions"].array;
  ASSERT_EQ(p.size(), 4u);
  const double n_star = p[0]["saturation_workers"].number;
  ASSERT_GT(n_star, 4);
  ASSERT_LT(n_star, 16);
  EXPECT_NEAR(p[3]["throughput_samples_per_s"].number, p[2]["throughput_samples_per_s"].number,
              1e-9 * p[2]["throughput_samples_per_s"].number);
  EXPECT_NEAR(p[3]["job"]["startup_s"].number, 8 * p[1]["job"]["startup_s"].number, 1e-9);  // 64 vs 8
  EXPECT_GT(p[3]["job"]["time_s"].number, p[1]["job"]["time_s"].number);
}

TEST_F(PredictCli, ScenarioWrittenByTheTestRunsWithDefaults) {
  const std::string yaml = file("minimal.yaml",
                                "workload:\n"
                                "  model: resnet50\n"
                                "  step_time: 100ms\n");
  RunResult r = run({"predict", yaml, "--json"});
  ASSERT_EQ(r.code, 0) << r.describe();
  const Json doc = parse_json_or_fail(r.out);
  EXPECT_EQ(doc.at_path("scenario.name")->string, "minimal");
  ASSERT_EQ(doc["predictions"].array.size(), 1u);
  EXPECT_EQ(doc["predictions"].array[0]["workers"].number, 1);
}

TEST_F(PredictCli, JsonEscapesNamesAndDescriptions) {
  const std::string yaml = file("esc.yaml",
                                "name: \"a\\\"b\\\\c\\td\\x01\"\n"
                                "description: \"line1\\nline2\"\n"
                                "workload:\n"
                                "  model: resnet50\n"
                                "  step_time: 100ms\n");
  RunResult r = run({"predict", yaml, "--json"});
  ASSERT_EQ(r.code, 0) << r.describe();
  const Json doc = parse_json_or_fail(r.out);
  EXPECT_EQ(doc.at_path("scenario.name")->string, "a\"b\\c\td\x01");
  EXPECT_EQ(doc.at_path("scenario.description")->string, "line1\nline2");
}

// A profile is replayed at its own worker count and extrapolated at the others of a sweep, each
// prediction over the trace's per-step samples. Needs the shared traces.
TEST_F(PredictCli, ProfileSweepReplaysAtTheTracedCountAndExtrapolatesElsewhere) {
  const fs::path trace =
      fs::path(STEPCAST_SHARED_DATA) / "traces" / "resnet50_ddp_1xV100_worldsize1_rank0.json.gz";
  if (!fs::exists(trace)) {
    GTEST_SKIP() << "skipped: shared trace data not found at " << trace.string()
                 << " (it lives next to the project as ../shared/data; CI has it)";
  }
  const std::string scenario = file("job.yaml", "workload:\n  profile: " + trace.string() +
                                                    "\n  model: resnet50\n  batch_per_worker: 32\n"
                                                    "cluster: {workers: 1, nic_bandwidth: 25Gbps}\n");
  RunResult r = run({"predict", scenario, "--workers", "1,8", "--json"});
  ASSERT_EQ(r.code, 0) << r.describe();
  const Json doc = parse_json_or_fail(r.out);
  const auto& p = doc["predictions"].array;
  ASSERT_EQ(p.size(), 2u) << r.out;
  // The trace's own count: a replay, nothing sent. Eight workers: simulated all-reduces.
  EXPECT_EQ(p[0]["bytes_sent"].number, 0) << r.out;
  EXPECT_GT(p[1]["bytes_sent"].number, 0) << r.out;
  EXPECT_GT(p[1]["step_time_s"].number, p[0]["step_time_s"].number) << r.out;
  EXPECT_GT(p[1]["breakdown_s"]["communication_exposed"].number, 0) << r.out;
  for (const Json& prediction : p) {
    const Json& spread = prediction["step_time_samples"];
    ASSERT_TRUE(spread.is_object()) << r.out;
    EXPECT_EQ(spread["count"].number, 3) << r.out;  // the trace's three steady steps
    EXPECT_EQ(spread["step_times_s"].array.size(), 3u) << r.out;
    EXPECT_EQ(spread["mean_s"].number, prediction["step_time_s"].number) << r.out;
    EXPECT_LE(spread["min_s"].number, spread["p50_s"].number);
    EXPECT_LE(spread["p50_s"].number, spread["p95_s"].number);
    EXPECT_LE(spread["p95_s"].number, spread["max_s"].number);
  }
  // The table says the same in one line per worker count.
  RunResult table = run({"predict", scenario, "--workers", "1,8"});
  ASSERT_EQ(table.code, 0) << table.describe();
  EXPECT_NE(table.out.find("per-step samples (1 worker, fine): 3 steps, predicted step time mean "),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("per-step samples (8 workers, fine): 3 steps"), std::string::npos) << table.out;
  // Without samples: one prediction of the representative step, no spread.
  RunResult one = run({"predict", scenario, "--json", "--set", "workload.step_samples=representative"});
  ASSERT_EQ(one.code, 0) << one.describe();
  const Json single = parse_json_or_fail(one.out);
  ASSERT_EQ(single["predictions"].array.size(), 1u);
  EXPECT_EQ(single["predictions"].array[0]["step_time_samples"].type, Json::Type::Null) << one.out;
}

// simulation.fast_paths: the JSON names the engine that ran, and on every example the fast path
// and the full engine give the same numbers (1e-9 relative).
TEST_F(PredictCli, FastPathsAndTheFullEngineGiveTheSameNumbersOnEveryExample) {
  const std::string examples = std::string(STEPCAST_SOURCE_DIR) + "/examples/";
  int fast_runs = 0;
  for (const char* name : {"resnet50-ps.yaml", "resnet50-ps-async.yaml", "vgg16-allreduce.yaml",
                           "bert-large-allreduce.yaml", "h100-2node-regimes.yaml", "custom-topology.yaml",
                           "single-server-analytic.yaml"}) {
    SCOPED_TRACE(name);
    const std::vector<std::string> base{"predict", examples + name, "--workers", "1,2,8", "--predictor", "fine",
                                        "--json"};
    std::vector<std::string> full_args = base;
    full_args.insert(full_args.end(), {"--set", "simulation.fast_paths=false"});
    RunResult fast = run(base);
    RunResult full = run(full_args);
    ASSERT_EQ(fast.code, 0) << fast.describe();
    ASSERT_EQ(full.code, 0) << full.describe();
    const Json f = parse_json_or_fail(fast.out);
    const Json g = parse_json_or_fail(full.out);
    EXPECT_EQ(g.at_path("scenario.simulation.fast_paths")->string, "false");
    ASSERT_EQ(f["predictions"].array.size(), g["predictions"].array.size());
    for (size_t i = 0; i < g["predictions"].array.size(); ++i) {
      const Json& a = f["predictions"].array[i];
      const Json& b = g["predictions"].array[i];
      EXPECT_EQ(b["engine"].string, "full");
      if (a["engine"].string == "fast") ++fast_runs;
      for (const char* key : {"step_time_s", "throughput_samples_per_s", "bytes_sent", "bytes_received"}) {
        EXPECT_NEAR(a[key].number, b[key].number, 1e-9 * std::fabs(b[key].number)) << key << " at " << i;
      }
      for (const char* part : {"compute", "communication_exposed", "wait"}) {
        EXPECT_NEAR(a["breakdown_s"][part].number, b["breakdown_s"][part].number,
                    1e-9 * b["step_time_s"].number)
            << part << " at " << i;
      }
    }
  }
  EXPECT_GE(fast_runs, 9) << "the all-reduce examples take the fast path";
}

}  // namespace predict_cli_test
}  // namespace
}  // namespace stepcast_cli_test
