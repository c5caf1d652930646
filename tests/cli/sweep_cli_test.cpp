// `stepcast predict --sweep` and `stepcast advise` end to end: every row carries its
// configuration in the table, JSON and CSV; the output is the same for 1 and 4 threads and
// under `mpirun -np 2`; bad sweeps and targets exit 2 naming the option.
#include <cstdlib>
#include <string>

#include "cli/cli_support.hpp"

namespace stepcast_cli_test {
namespace {
namespace sweep_cli_test {  // this file's own names: test files are compiled several to a unit

class SweepCli : public CliTest {};

const std::vector<std::string> kGrid{"predict", kExample, "--workers", "4,16", "--set", "steps.measure=2",
                                     "--sweep", "training.ps.count=1..4", "--sweep",
                                     "cluster.nic_bandwidth=10Gbps,25Gbps"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST_F(SweepCli, EveryRowCarriesItsConfiguration) {
  const RunResult json = run(with(kGrid, {"--json"}));
  ASSERT_EQ(json.code, 0) << json.describe();
  const Json doc = parse_json_or_fail(json.out);
  const Json& predictions = doc["predictions"];
  ASSERT_EQ(predictions.array.size(), 3u * 2u * 2u);  // ps.count 1, 2, 4 x two bandwidths x two counts
  // First axis outermost, worker counts innermost.
  EXPECT_EQ(predictions.array[0]["config"]["training.ps.count"].number, 1);
  EXPECT_EQ(predictions.array[0]["config"]["cluster.nic_bandwidth"].string, "10Gbps");
  EXPECT_EQ(predictions.array[1]["workers"].number, 16);
  EXPECT_EQ(predictions.array[2]["config"]["cluster.nic_bandwidth"].string, "25Gbps");
  EXPECT_EQ(predictions.array[11]["config"]["training.ps.count"].number, 4);

  const RunResult table = run(kGrid);
  ASSERT_EQ(table.code, 0) << table.describe();
  EXPECT_NE(table.out.find("training.ps.count  cluster.nic_bandwidth  workers"), std::string::npos) << table.out;
  // The name follows --set.
  EXPECT_NE(table.out.find("scenario: resnet50-ps-sync (steps.measure=2)"), std::string::npos) << table.out;

  const std::string csv_path = path("s.csv").string();
  const RunResult csv = run(with(kGrid, {"--csv", csv_path}));
  ASSERT_EQ(csv.code, 0) << csv.describe();
  const std::string text = read_text(csv_path);
  EXPECT_NE(text.find(",\"training.ps.count\",\"cluster.nic_bandwidth\"\n"), std::string::npos) << text;
  EXPECT_NE(text.find(",\"4\",\"25Gbps\"\n"), std::string::npos) << text;
}

TEST_F(SweepCli, SameOutputForOneAndFourThreads) {
  const RunResult one = run(with(kGrid, {"--json", "--jobs", "1"}));
  const RunResult four = run(with(kGrid, {"--json", "--jobs", "4"}));
  ASSERT_EQ(one.code, 0) << one.describe();
  EXPECT_EQ(one.out, four.out);
}

TEST_F(SweepCli, MpirunWithTwoRanksWritesWhatASerialRunWrites) {
#ifndef STEPCAST_TEST_MPI
  GTEST_SKIP() << "built without MPI (libopenmpi-dev not found at configure time)";
#else
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun on PATH (openmpi-bin)";
  const RunResult serial = run(with(kGrid, {"--json"}));
  ASSERT_EQ(serial.code, 0) << serial.describe();
  // OpenMPI refuses to run as root unless told; CI runs as root.
  std::string line = "cd " + shell_quote(kSourceDir.string()) +
                     " && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout -k 5 120 mpirun "
                     "--oversubscribe -np 2 " +
                     shell_quote(kBinary);
  for (const std::string& a : with(kGrid, {"--json"})) line.append(" ").append(shell_quote(a));
  const std::string out = path("mpi.out").string();
  line += " >" + shell_quote(out) + " 2>" + shell_quote(path("mpi.err").string());
  ASSERT_EQ(std::system(line.c_str()), 0) << read_text(path("mpi.err"));
  EXPECT_EQ(read_text(out), serial.out);
#endif
}

TEST_F(SweepCli, AdviseUnderMpirunWithTwoRanksAnswersOnceAsASerialRun) {
#ifndef STEPCAST_TEST_MPI
  GTEST_SKIP() << "built without MPI (libopenmpi-dev not found at configure time)";
#else
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun on PATH (openmpi-bin)";
  const std::vector<std::string> args{"advise", kExample, "--workers", "16", "--set", "predictor=coarse",
                                      "--target-efficiency", "0.5", "--vary", "training.ps.count=1..16",
                                      "--vary", "cluster.nic_bandwidth=10Gbps,25Gbps", "--json"};
  const RunResult serial = run(args);
  ASSERT_EQ(serial.code, 0) << serial.describe();
  std::string line = "cd " + shell_quote(kSourceDir.string()) +
                     " && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout -k 5 120 mpirun "
                     "--oversubscribe -np 2 " +
                     shell_quote(kBinary);
  for (const std::string& a : args) line.append(" ").append(shell_quote(a));
  const std::string out = path("mpi-advise.out").string();
  line += " >" + shell_quote(out) + " 2>" + shell_quote(path("mpi-advise.err").string());
  ASSERT_EQ(std::system(line.c_str()), 0) << read_text(path("mpi-advise.err"));
  EXPECT_EQ(read_text(out), serial.out);  // one answer (rank 0's), the serial one
#endif
}

TEST_F(SweepCli, BadSweepsExitTwoNamingTheOption) {
  const RunResult syntax = run({"predict", kExample, "--sweep", "training.ps.count"});
  EXPECT_EQ(syntax.code, 2) << syntax.describe();
  EXPECT_NE(syntax.err.find("--sweep"), std::string::npos) << syntax.err;
  const RunResult value = run({"predict", kExample, "--sweep", "training.ps.count=2,0"});
  EXPECT_EQ(value.code, 2) << value.describe();
  EXPECT_NE(value.err.find("--sweep: training.ps.count"), std::string::npos) << value.err;
  EXPECT_NE(value.err.find("(at training.ps.count=0)"), std::string::npos) << value.err;
  const RunResult key = run({"predict", kExample, "--sweep", "training.ps.cuont=1,2"});
  EXPECT_EQ(key.code, 2) << key.describe();
}

TEST_F(SweepCli, AdviseAnswersInWordsAndJson) {
  const std::vector<std::string> args{"advise", kExample, "--workers", "16", "--set", "predictor=coarse",
                                      "--target-efficiency", "0.5", "--vary", "training.ps.count=1..16",
                                      "--vary", "cluster.nic_bandwidth=10Gbps,25Gbps"};
  const RunResult text = run(args);
  ASSERT_EQ(text.code, 0) << text.describe();
  EXPECT_NE(text.out.find("cheapest that meets efficiency >= 50.0%"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("best single change:"), std::string::npos) << text.out;
  const RunResult json = run(with(args, {"--json"}));
  ASSERT_EQ(json.code, 0) << json.describe();
  const Json doc = parse_json_or_fail(json.out);
  EXPECT_TRUE(doc["feasible"].boolean);
  EXPECT_GE(doc["cheapest"].array.at(0)["prediction"]["efficiency"].number, 0.5);
  EXPECT_EQ(doc["grid"].array.size(), 5u * 2u);

  const RunResult no_target = run({"advise", kExample, "--vary", "training.ps.count=1,2"});
  EXPECT_EQ(no_target.code, 2) << no_target.describe();
  EXPECT_NE(no_target.err.find("--target-efficiency"), std::string::npos) << no_target.err;
}

TEST_F(SweepCli, CollectiveListsAreOneRowPerSizeCountAndConfiguration) {
  const RunResult r = run({"collective", "--size", "1MB,64MB", "--workers", "4,16", "--latency", "5us", "--sweep",
                           "cluster.nic_bandwidth=100Gbps,400Gbps", "--json"});
  ASSERT_EQ(r.code, 0) << r.describe();
  const Json doc = parse_json_or_fail(r.out);
  const Json& rows = doc["collectives"];
  ASSERT_EQ(rows.array.size(), 2u * 2u * 2u);
  // A ring all-reduce alone on a switch: 2 (N-1) steps of S/N at the NIC rate, each plus the
  // latency (closed form, docs/guide.md "Time one collective").
  for (const Json& row : rows.array) {
    const double n = row["workers"].number, size = row["size_bytes"].number;
    const double bw = row["config"]["cluster.nic_bandwidth"].string == "100Gbps" ? 12.5e9 : 50e9;
    EXPECT_NEAR(row["time_s"].number, 2 * (n - 1) * (5e-6 + size / (n * bw)), 1e-9 * row["time_s"].number);
  }
  EXPECT_EQ(rows.array[0]["size_bytes"].number, 1e6);
  EXPECT_EQ(rows.array[1]["size_bytes"].number, 64e6);
  EXPECT_EQ(rows.array[2]["workers"].number, 16);
  const RunResult table = run({"collective", "--size", "1MB,64MB", "--workers", "4,16"});
  ASSERT_EQ(table.code, 0) << table.describe();
  EXPECT_NE(table.out.find("workers     size     time  algbw (GB/s)  busbw (GB/s)"), std::string::npos) << table.out;
  EXPECT_EQ(split_lines(table.out).size(), 2u + 4u) << table.out;
}

}  // namespace sweep_cli_test
}  // namespace
}  // namespace stepcast_cli_test
