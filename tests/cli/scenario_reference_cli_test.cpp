// docs/scenario.md is generated from the key table by `stepcast options --markdown`: the two must
// not drift apart, and every key the table knows must appear in the reference exactly once.
#include <regex>
#include <string>

#include "cli/cli_support.hpp"

namespace stepcast_cli_test {
namespace {
namespace scenario_reference_cli_test {  // this file's own names: test files are compiled several to a unit

using ScenarioReference = CliTest;

TEST_F(ScenarioReference, DocsScenarioMdIsTheGeneratedReference) {
  RunResult r = run({"options", "--markdown"});
  ASSERT_EQ(r.code, 0) << r.describe();
  const std::string committed = read_text(kSourceDir / "docs" / "scenario.md");
  EXPECT_TRUE(committed == r.out)
      << "docs/scenario.md differs from the key table; regenerate it with\n"
         "  build/release/stepcast options --markdown > docs/scenario.md";
}

TEST_F(ScenarioReference, EveryKeyOfTheTableHasOneRow) {
  RunResult plain = run({"options"});
  RunResult markdown = run({"options", "--markdown"});
  ASSERT_EQ(plain.code, 0) << plain.describe();
  ASSERT_EQ(markdown.code, 0) << markdown.describe();
  const std::regex first_word("(^|\n)([a-z_0-9.]+) ");
  int keys = 0;
  bool header = true;
  for (auto it = std::sregex_iterator(plain.out.begin(), plain.out.end(), first_word); it != std::sregex_iterator();
       ++it) {
    if (header) {  // the column title "key"
      header = false;
      continue;
    }
    const std::string row = "\n| `" + (*it)[2].str() + "` |";
    const size_t at = markdown.out.find(row);
    EXPECT_NE(at, std::string::npos) << (*it)[2];
    EXPECT_EQ(markdown.out.find(row, at + 1), std::string::npos) << "twice: " << (*it)[2];
    ++keys;
  }
  EXPECT_GT(keys, 100);
}

TEST_F(ScenarioReference, ParallelLayoutKeysAreDocumented) {
  RunResult r = run({"options", "--markdown"});
  ASSERT_EQ(r.code, 0) << r.describe();
  for (const char* key : {"training.parallel.tensor", "training.parallel.sequence", "training.parallel.pipeline",
                          "training.parallel.virtual_stages", "training.parallel.context", "training.parallel.order",
                          "training.pipeline.schedule", "training.pipeline.layers_per_stage",
                          "training.pipeline.account_for_embedding", "workload.micro_batch", "workload.global_batch",
                          "training.tensor.overlap"}) {
    EXPECT_NE(r.out.find(std::string("| `") + key + "` |"), std::string::npos) << key;
  }
}

}  // namespace scenario_reference_cli_test
}  // namespace
}  // namespace stepcast_cli_test
