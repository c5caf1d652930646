// The rules across keys, read from files: scheme::validate() decides, scenario/ points the error at
// the file, the line of the key and the key (or at the --set that gave it), and with a worker
// sweep checks each swept count instead of the file's cluster.workers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "expect_error.hpp"
#include "stepcast/error.hpp"
#include "stepcast/scenario/scenario.hpp"

namespace stepcast::scenario {
namespace {
namespace cross_key_errors_test {  // this file's own names: test files are compiled several to a unit

namespace fs = std::filesystem;

constexpr const char* kHead =
    "workload:\n"           // 1
    "  model: resnet50\n"   // 2
    "  step_time: 100ms\n"  // 3
    "cluster:\n";           // 4

class CrossKeyErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("stepcast_cross_key_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string file(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  fs::path dir_;
};

using stepcast::testing::contains;
using stepcast::testing::expect_error;

struct FileCase {
  const char* name;
  std::string yaml;  ///< after kHead (line 5 on)
  int line;
  std::string key;
  std::string says;
};

TEST_F(CrossKeyErrors, EachRuleNamesFileLineAndKey) {
  const std::vector<FileCase> cases = {
      {"colocated",
       "  workers: 4\n"              // 5
       "  workers_per_node: 2\n"     // 6
       "training:\n"                 // 7
       "  scheme: ps\n"              // 8
       "  ps:\n"                     // 9
       "    placement: colocated\n"  // 10
       "    count: 3\n",             // 11
       11, "training.ps.count", "P > N"},
      {"connections",
       "  workers: 16384\n"  // 5
       "training:\n"         // 6
       "  scheme: ps\n"      // 7
       "  ps:\n"             // 8
       "    count: 65\n",    // 9
       9, "training.ps.count", "connections"},
      {"topology_capacity",
       "  workers: 17\n"      // 5
       "  topology: torus\n"  // 6
       "  torus:\n"           // 7
       "    dims: 4x4\n",     // 8
       6, "cluster.topology", "holds 16 nodes"},
      {"nics_per_node", "  nics_per_node: 2\n", 5, "cluster.nics_per_node", "NICs"},
      {"odd_radix",
       "  topology: fat_tree\n"  // 5
       "  fat_tree:\n"           // 6
       "    radix: 7\n",         // 7
       7, "cluster.fat_tree.radix", "even radix"},
      {"halving_doubling",
       "  workers: 6\n"                      // 5
       "training:\n"                         // 6
       "  allreduce:\n"                      // 7
       "    algorithm: halving_doubling\n",  // 8
       8, "training.allreduce.algorithm", "power-of-two"},
      {"hdrm_off_bigraph",
       "  workers: 8\n"          // 5
       "training:\n"             // 6
       "  allreduce:\n"          // 7
       "    algorithm: hdrm\n",  // 8
       8, "training.allreduce.algorithm", "full BiGraph"},
      {"async_allreduce",
       "  workers: 2\n"         // 5
       "training:\n"            // 6
       "  scheme: allreduce\n"  // 7
       "  mode: async\n",       // 8
       8, "training.mode", "training.scheme = ps"},
      {"async_step_barrier",
       "  workers: 2\n"        // 5
       "training:\n"           // 6
       "  scheme: ps\n"        // 7
       "  mode: async\n"       // 8
       "  ps:\n"               // 9
       "    barrier: step\n",  // 10
       10, "training.ps.barrier", "async training has none"},
      {"sync_async_start",
       "  workers: 2\n"              // 5
       "training:\n"                 // 6
       "  scheme: ps\n"              // 7
       "  ps:\n"                     // 8
       "    async_start: random\n",  // 9
       9, "training.ps.async_start", "synchronous workers all start together"},
  };
  for (const FileCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = file(std::string(c.name) + ".yaml", std::string(kHead) + c.yaml);
    Error e = expect_error([&] { (void)load_scenario(path); });
    EXPECT_EQ(e.where(), (SourceLocation{path, c.line, c.key})) << e.what();
    EXPECT_TRUE(contains(e.message(), c.says)) << e.what();
    // what() is what the command line prints: it starts with file:line.
    EXPECT_TRUE(std::string(e.what()).starts_with(path + ":" + std::to_string(c.line) + ": " + c.key))
        << e.what();
  }
}

// A rule new with validate(): a custom topology whose file links no node.
TEST_F(CrossKeyErrors, CustomTopologyWithoutNodesNamesTheCustomKey) {
  file("no-nodes.yaml", "switches: [a, b]\nlinks:\n  - [a, b]\n");
  const std::string path = file("custom.yaml", std::string(kHead) +
                                                   "  topology: custom\n"       // 5
                                                   "  custom: no-nodes.yaml\n"  // 6
  );
  Error e = expect_error([&] { (void)load_scenario(path); });
  EXPECT_EQ(e.where(), (SourceLocation{path, 6, "cluster.custom"})) << e.what();
  EXPECT_TRUE(contains(e.message(), "a link for every node")) << e.what();
}

// A key given by --set: the error points at the override, as every other --set error does.
TEST_F(CrossKeyErrors, OverrideNamesTheSet) {
  const std::string path = file("plain.yaml", std::string(kHead) + "  workers: 2\n");
  Error e = expect_error([&] { (void)load_scenario(path, {"cluster.nics_per_node=2"}); });
  EXPECT_EQ(e.where(), (SourceLocation{"--set", 0, "cluster.nics_per_node"})) << e.what();
  // With the override in the file instead, the file and its line.
  const std::string in_file = file("nics.yaml", std::string(kHead) + "  workers: 2\n  nics_per_node: 2\n");
  e = expect_error([&] { (void)load_scenario(in_file); });
  EXPECT_EQ(e.where(), (SourceLocation{in_file, 6, "cluster.nics_per_node"})) << e.what();
  EXPECT_NO_THROW((void)load_scenario(in_file, {"cluster.workers_per_node=2"}));
}

TEST_F(CrossKeyErrors, AShapeSwitchOnAZooModelIsRefusedNotIgnored) {
  // The shape's switches have defaults, so a given one must still count as describing the decoder:
  // on a zoo model it would otherwise be dropped without a word.
  const std::string path = file("zoo.yaml",
                                "workload:\n  model: llama3-8b\n  achieved_flops: 400TFLOPS\n"
                                "cluster:\n  workers: 8\n  gpu: {peak_flops: 989TFLOPS}\n");
  EXPECT_NO_THROW((void)load_scenario(path));
  for (const char* set : {"workload.transformer.dropout=true", "workload.transformer.swiglu=false",
                          "workload.transformer.qk_norm=true", "workload.transformer.tied_embeddings=true"}) {
    SCOPED_TRACE(set);
    const Error e = expect_error([&] { (void)load_scenario(path, {set}); });
    EXPECT_EQ(e.where().key, "workload.model") << e.what();
    EXPECT_EQ(e.where().line, 2) << e.what();
    const std::string field = std::string(set).substr(0, std::string(set).find('='));
    EXPECT_TRUE(contains(e.message(), field)) << e.what();
  }
  // A switch without the shape's sizes asks for them.
  const std::string bare = file("bare.yaml",
                                "workload:\n  transformer: {dropout: true}\n  achieved_flops: 400TFLOPS\n"
                                "cluster:\n  workers: 8\n");
  const Error e = expect_error([&] { (void)load_scenario(bare); });
  EXPECT_EQ(e.where().key, "workload.transformer.layers") << e.what();
}

// hdrm on a 4 x 4 BiGraph needs exactly 32 workers. The file's 16 are never predicted when a sweep
// gives the counts, so only the swept counts are checked.
TEST_F(CrossKeyErrors, SweepChecksEachSweptCountNotTheFiles) {
  const std::string path = file("hdrm.yaml", std::string(kHead) +
                                                 "  workers: 16\n"             // 5
                                                 "  topology: bigraph\n"       // 6
                                                 "  bigraph:\n"                // 7
                                                 "    switches_per_half: 4\n"  // 8
                                                 "    hosts_per_switch: 4\n"   // 9
                                                 "training:\n"                 // 10
                                                 "  allreduce:\n"              // 11
                                                 "    algorithm: hdrm\n");     // 12
  Error e = expect_error([&] { (void)load_scenario(path); });
  EXPECT_EQ(e.where(), (SourceLocation{path, 12, "training.allreduce.algorithm"})) << e.what();
  EXPECT_TRUE(contains(e.message(), "got 16 workers")) << e.what();

  Scenario s;
  EXPECT_NO_THROW(s = load_scenario(path, {}, Needs::Workload, {32}));
  EXPECT_EQ(s.cluster.workers, 16);  // the file's value stays what it was
  EXPECT_NO_THROW((void)load_scenario(path, {"cluster.workers=32"}));

  e = expect_error([&] { (void)load_scenario(path, {}, Needs::Workload, {32, 8}); });
  EXPECT_EQ(e.where(), (SourceLocation{path, 12, "training.allreduce.algorithm"})) << e.what();
  EXPECT_TRUE(contains(e.message(), "got 8 workers")) << e.what();
  EXPECT_TRUE(contains(e.message(), "at --workers 8")) << e.what();

  // Rules that do not depend on the worker count still fail at every count.
  e = expect_error([&] { (void)load_scenario(path, {"training.mode=async"}, Needs::Workload, {32}); });
  EXPECT_EQ(e.where(), (SourceLocation{"--set", 0, "training.mode"})) << e.what();
}

}  // namespace cross_key_errors_test
}  // namespace
}  // namespace stepcast::scenario
