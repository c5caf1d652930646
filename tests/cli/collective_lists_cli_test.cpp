// `stepcast collective`'s lists (--size and --workers, a row per entry) and --sweep: one bad entry
// is an error naming the option and that entry, exit 2, with nothing on stdout; a count the
// cluster or the algorithm cannot take is one too, whichever place it has in the list; a swept
// cluster.workers is the row's count.
#include "cli/cli_support.hpp"

namespace stepcast_cli_test {
namespace {
namespace collective_lists_cli_test {  // this file's own names: test files are compiled several to a unit

using CollectiveLists = CliTest;

struct BadList {
  std::vector<std::string> args;
  std::vector<std::string> needles;  ///< all in stderr
};

TEST_F(CollectiveLists, OneBadEntryIsAnErrorNamingTheOptionAndTheEntry) {
  const std::vector<BadList> cases = {
      {{"--size", "1MiB,2MiB,bogus"}, {"--size", "'bogus'"}},
      {{"--size", "1MiB,0"}, {"--size", "expected sizes > 0, got '0' in '1MiB,0'"}},
      {{"--size", "1MiB,-2MiB"}, {"--size", "'-2MiB'"}},
      {{"--size", "1MiB,,2MiB"}, {"--size", "got ''"}},
      {{"--workers", "8,16,bogus"}, {"--workers", "got 'bogus' in '8,16,bogus'"}},
      {{"--workers", "8,,16"}, {"--workers", "got an empty entry in '8,,16'"}},
      {{"--workers", "8,0"}, {"--workers", "got '0' in '8,0'"}},
      {{"--workers", "8,16,16"}, {"--workers", "16 is given twice"}},
      // Counts the algorithm or the topology cannot take, last or first in the list: each names
      // --workers and the count.
      {{"--algorithm", "halving_doubling", "--workers", "8,12"},
       {"--workers: at 12 workers (of '8,12')", "power-of-two"}},
      {{"--algorithm", "halving_doubling", "--workers", "12,8"},
       {"--workers: at 12 workers (of '12,8')", "power-of-two"}},
      {{"--set", "cluster.topology=torus", "--set", "cluster.torus.dims=2x4", "--workers", "16,8"},
       {"--workers: at 16 workers (of '16,8')", "holds 8 nodes"}},
      // A list checked at its own counts, not at the default 8.
      {{"--set", "cluster.topology=bigraph", "--algorithm", "hdrm", "--workers", "32,16"},
       {"--workers: at 16 workers (of '32,16')", "got 16 workers"}},
      {{"--sweep", "cluster.workers=8,bogus"},
       {"--sweep: cluster.workers", "'bogus'", "(at cluster.workers=bogus)"}},
      {{"--sweep", "cluster.nic_bandwidth=100Gbps,bogus", "--workers", "8,16"},
       {"--sweep: cluster.nic_bandwidth", "'bogus'"}},
  };
  for (const BadList& c : cases) {
    std::vector<std::string> args = {"collective"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const RunResult r = run(args);
    SCOPED_TRACE(r.describe());
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("stepcast: error: "), std::string::npos);
    for (const std::string& needle : c.needles) EXPECT_NE(r.err.find(needle), std::string::npos) << needle;
  }
}

TEST_F(CollectiveLists, ASweptWorkerCountIsTheRowsCount) {
  const RunResult r = run({"collective", "--sweep", "cluster.workers=8,16", "--size", "1MiB", "--json"});
  ASSERT_EQ(r.code, 0) << r.describe();
  const Json doc = parse_json_or_fail(r.out);
  const auto& rows = doc["collectives"].array;
  ASSERT_EQ(rows.size(), 2u) << r.out;
  for (const Json& row : rows)
    EXPECT_EQ(row["workers"].number, row["config"]["cluster.workers"].number) << r.out;
  // A ring of 16 takes 2 (16 - 1) steps, of 8 2 (8 - 1).
  EXPECT_EQ(rows[0]["steps"].number, 14) << r.out;
  EXPECT_EQ(rows[1]["steps"].number, 30) << r.out;
}

}  // namespace collective_lists_cli_test
}  // namespace
}  // namespace stepcast_cli_test
