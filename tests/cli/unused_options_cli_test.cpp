// Options the chosen calibration fit does not use: `calibrate nccl-tests` still fits (exit 0, the
// same keys as without them) but warns on stderr, naming each option and the fit that would use
// it; an option the fit does use draws no warning.
#include "cli/cli_support.hpp"

namespace stepcast_cli_test {
namespace {
namespace unused_options_cli_test {  // this file's own names: test files are compiled several to a unit

using UnusedOptions = CliTest;

// A 4-rank nccl-tests sweep on the ring's closed form (a = 5 us per step, B = 10 GB/s).
constexpr const char* kLog =
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw "
    "  busbw #wrong\n"
    "           8             2     float     sum      -1   30.0012    0.00    0.00      0   30.0012    0.00 "
    "   0.00      0\n"
    "     1048576        262144     float     sum      -1   187.2864   5.60    8.40      0  187.2864   5.60  "
    "  8.40      0\n"
    "    16777216       4194304     float     sum      -1   2546.5824  6.59    9.88      0 2546.5824   6.59  "
    "  9.88      0\n"
    "  1073741824     268435456     float     sum      -1 161091.2736 6.67   10.00      0 161091.27   6.67   "
    "10.00      0\n";

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST_F(UnusedOptions, CalibrateWarnsOfOptionsItsFitDoesNotUse) {
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

}  // namespace unused_options_cli_test
}  // namespace
}  // namespace stepcast_cli_test
