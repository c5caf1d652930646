// End to end: `stepcast calibrate nccl-tests` writes loadable cluster keys, prints every size,
// and exits 2 naming the file (and line) on bad input.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/cli_support.hpp"
#include "stepcast/scenario/scenario.hpp"

namespace {
namespace calibrate_cli_test {  // this file's own names: test files are compiled several to a unit

using stepcast_cli_test::CliTest;
using stepcast_cli_test::read_text;
using stepcast_cli_test::RunResult;

// A 4-rank sweep from the closed form with a = 5 us per step and B = 10 GB/s:
// t = 6 * 5 us + 1.5 * S / 1e10 s -> 30.0012 us at 8 B, 30 + 1.5 * 1048576 / 1e4 us at 1 MiB, ...
constexpr const char* kLog =
    "# Avg bus bandwidth line and comments are skipped\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
    "busbw #wrong\n"
    "           8             2     float     sum      -1   30.0012    0.00    0.00      0   30.0012    0.00 "
    "   0.00      0\n"
    "     1048576        262144     float     sum      -1   187.2864   5.60    8.40      0  187.2864   5.60  "
    "  8.40      0\n"
    "    16777216       4194304     float     sum      -1   2546.5824  6.59    9.88      0 2546.5824   6.59  "
    "  9.88      0\n"
    "  1073741824     268435456     float     sum      -1 161091.2736 6.67   10.00      0 161091.27   6.67   "
    "10.00      0\n"
    "# Avg bus bandwidth    : 7.07\n";

TEST_F(CliTest, CalibrateWritesClusterKeysAndPrintsEverySize) {
  const std::string log = file("ar.log", kLog);
  const std::string out = path("calib.yaml").string();
  const auto r =
      run({"calibrate", "nccl-tests", log, "--workers", "4", "--workers-per-node", "2", "-o", out});
  ASSERT_EQ(r.code, 0) << r.describe();
  for (const char* size : {"8 ", "1048576", "16777216", "1073741824"}) {
    EXPECT_NE(r.out.find(size), std::string::npos) << size << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("a = 5 us per ring step, B = 10 GB/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not used in the fit: median |error| 0.0%"), std::string::npos) << r.out;
  // A size measured a hair slower than the fit (187.30 us against 187.2864: -0.007%) prints as
  // +0.0%, never "-0.0%".
  std::string slower = kLog;
  slower.replace(slower.find("187.2864"), 8, "187.3000");
  const auto hair =
      run({"calibrate", "nccl-tests", file("hair.log", slower), "--workers", "4", "--workers-per-node", "2"});
  ASSERT_EQ(hair.code, 0) << hair.describe();
  EXPECT_EQ(hair.out.find("-0.0%"), std::string::npos) << hair.out;
  EXPECT_NE(hair.out.find("+0.0%"), std::string::npos) << hair.out;

  const std::string yaml = read_text(out);
  for (const char* key :
       {"workers: 4", "workers_per_node: 2", "nic_bandwidth: 10GB/s", "link_latency: 5us"}) {
    EXPECT_NE(yaml.find(key), std::string::npos) << key << "\n" << yaml;
  }
  EXPECT_NE(yaml.find("# source: " + log), std::string::npos) << yaml;
  const auto s =
      stepcast::scenario::parse_scenario(yaml + "workload:\n  model: resnet50\n  step_time: 100ms\n", out);
  EXPECT_DOUBLE_EQ(s.cluster.nic_bw, 10e9);
  EXPECT_DOUBLE_EQ(s.cluster.latency, 5e-6);
  EXPECT_EQ(s.cluster.workers, 4);
}

// --json: the same fit as one JSON object (report/), SI units in the names.
TEST_F(CliTest, CalibrateJsonGivesTheFitAndEverySize) {
  const std::string log = file("ar.log", kLog);
  const auto r = run({"calibrate", "nccl-tests", log, "--workers", "4", "--workers-per-node", "2", "--json"});
  ASSERT_EQ(r.code, 0) << r.describe();
  const stepcast_cli_test::Json doc = stepcast_cli_test::parse_json_or_fail(r.out);
  EXPECT_EQ(doc["method"].string, "endpoints");
  EXPECT_NEAR(doc["step_latency_s"].number, 5e-6, 1e-12);
  EXPECT_NEAR(doc["bandwidth_Bps"].number, 10e9, 1e3);
  EXPECT_EQ(doc.at_path("source.file")->string, log);
  EXPECT_EQ(doc.at_path("source.workers")->number, 4);
  ASSERT_EQ(doc["sizes"].array.size(), 4u) << r.out;
  EXPECT_EQ(doc["sizes"].array[3]["bytes"].number, 1073741824);
  EXPECT_TRUE(doc["sizes"].array[3]["measured_s"].is_number());
  EXPECT_EQ(doc["output"].type, stepcast_cli_test::Json::Type::Null);
}

TEST_F(CliTest, CalibrateOneNodeWritesIntraNodeKeys) {
  const std::string log = file("ar.log", kLog);
  const std::string out = path("calib.yaml").string();
  const auto r =
      run({"calibrate", "nccl-tests", log, "--workers", "4", "--workers-per-node", "4", "-o", out});
  ASSERT_EQ(r.code, 0) << r.describe();
  const std::string yaml = read_text(out);
  EXPECT_NE(yaml.find("intra_node:\n    bandwidth: 10GB/s"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("    latency: 5us"), std::string::npos) << yaml;
  EXPECT_EQ(yaml.find("nic_bandwidth"), std::string::npos) << yaml;
}

TEST_F(CliTest, CalibrateRegimesWritesCollectiveRegimes) {
  // Four sizes on one line: one regime (a leave-one-out fit of two regimes needs 7 sizes).
  const std::string log = file("ar.log", kLog);
  const std::string out = path("calib.yaml").string();
  const auto r = run({"calibrate", "nccl-tests", log, "--workers", "4", "--workers-per-node", "2", "--fit",
                      "regimes", "--max-regimes", "2", "-o", out});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(r.out.find("ring all-reduce calibration in size regimes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 of at most 2 regimes, chosen by leave-one-out"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("each predicted leave-one-out"), std::string::npos) << r.out;
  const std::string yaml = read_text(out);
  for (const char* key :
       {"nic_bandwidth: 10GB/s", "link_latency: 5us", "  collective_regimes:\n", "    - \"0B 5us 10GB/s\""}) {
    EXPECT_NE(yaml.find(key), std::string::npos) << key << "\n" << yaml;
  }

  for (const char* bad : {"0", "9"}) {
    const auto e =
        run({"calibrate", "nccl-tests", log, "--workers", "4", "--fit", "regimes", "--max-regimes", bad});
    EXPECT_EQ(e.code, 2) << e.describe();
    EXPECT_NE(e.err.find("--max-regimes"), std::string::npos) << e.err;
  }
}

TEST_F(CliTest, CalibrateBadInputExitsTwoNamingTheFile) {
  const std::string missing = path("missing.log").string();
  auto r = run({"calibrate", "nccl-tests", missing, "--workers", "4", "-o", path("c.yaml").string()});
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;

  const std::string broken = file("broken.log", "# header\n  8  2  float  sum  -1  30.0\n");
  r = run({"calibrate", "nccl-tests", broken, "--workers", "4"});
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_NE(r.err.find(broken + ":2:"), std::string::npos) << r.err;

  const std::string log = file("ar.log", kLog);
  r = run({"calibrate", "nccl-tests", log, "--workers", "4", "--workers-per-node", "8"});
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_NE(r.err.find("--workers-per-node"), std::string::npos) << r.err;
  r = run({"calibrate", "nccl-tests", log, "--workers", "1"});
  EXPECT_EQ(r.code, 2) << r.describe();
  r = run({"calibrate", "nccl-tests", log});  // --workers is required
  EXPECT_EQ(r.code, 2) << r.describe();
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// Options the chosen fit does not use: `calibrate nccl-tests` still fits (exit 0, the same keys as
// without them) but warns on stderr, naming each option and the fit that would use it; an option
// the fit does use draws no warning.
TEST_F(CliTest, CalibrateWarnsOfOptionsItsFitDoesNotUse) {
  const std::vector<std::string> base = {
      "calibrate", "nccl-tests", file("ar.log", kLog), "--workers", "4", "--workers-per-node", "2"};
  const RunResult plain = run(base);
  ASSERT_EQ(plain.code, 0) << plain.describe();
  EXPECT_EQ(plain.err.find("warning"), std::string::npos) << plain.describe();

  // --max-regimes without --fit regimes (the default fit is endpoints): even at its default value,
  // since it was given.
  for (const char* regimes : {"2", "4"}) {
    const RunResult r = run(with(base, {"--max-regimes", regimes}));
    ASSERT_EQ(r.code, 0) << r.describe();
    EXPECT_EQ(r.out, plain.out) << "the fit changed";
    EXPECT_NE(r.err.find("stepcast: warning: --max-regimes has no effect: only --fit regimes uses it, and "
                         "the fit is endpoints"),
              std::string::npos)
        << r.describe();
  }
  // NCCL's table choices with another fit: one warning each.
  const RunResult nccl_keys = run(with(base, {"--fit", "least-squares", "--gpu-generation", "ampere",
                                              "--cpu-vendor", "amd", "--nics-per-node", "2"}));
  ASSERT_EQ(nccl_keys.code, 0) << nccl_keys.describe();
  for (const char* option : {"--gpu-generation", "--cpu-vendor", "--nics-per-node"}) {
    EXPECT_NE(nccl_keys.err.find(std::string("stepcast: warning: ") + option +
                                 " has no effect: only --fit nccl uses it, and the fit is least-squares"),
              std::string::npos)
        << option << "\n"
        << nccl_keys.describe();
  }
  // Each option with its own fit: no warning.
  const RunResult regimes = run(with(base, {"--fit", "regimes", "--max-regimes", "2"}));
  ASSERT_EQ(regimes.code, 0) << regimes.describe();
  EXPECT_EQ(regimes.err.find("warning"), std::string::npos) << regimes.describe();
  const RunResult nccl =
      run(with(base, {"--fit", "nccl", "--gpu-generation", "ampere", "--max-regimes", "3"}));
  ASSERT_EQ(nccl.code, 0) << nccl.describe();
  EXPECT_EQ(nccl.err.find("--gpu-generation"), std::string::npos) << nccl.describe();
  EXPECT_NE(nccl.err.find("--max-regimes has no effect"), std::string::npos) << nccl.describe();
  // --nic-bandwidth is used by nccl alone, and picks it without --fit; with another fit it is an
  // error, not a warning.
  const RunResult nic = run(with(base, {"--nic-bandwidth", "100Gbps", "--fit", "endpoints"}));
  EXPECT_EQ(nic.code, 2) << nic.describe();
  EXPECT_NE(nic.err.find("--nic-bandwidth"), std::string::npos) << nic.describe();
}

}  // namespace calibrate_cli_test
}  // namespace
