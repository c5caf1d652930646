// The bytes a Result crosses MPI ranks as (src/sweep/result_wire.hpp): what comes back equals
// what went, field by field, the trace aside.
#include "sweep/result_wire.hpp"

#include <gtest/gtest.h>

namespace stepcast::sweep::wire {
namespace {
namespace result_wire_test {  // this file's own names: test files are compiled several to a unit

TEST(ResultWire, AResultComesBackEqual) {
  predict::Result r;
  r.workers = 16;
  r.predictor = predict::Predictor::Fine;
  r.step_time = 0.25;
  r.throughput = 4096.5;
  r.bottleneck = "PS messages 97% busy";
  r.bottleneck_kind = predict::BottleneckKind::PsMessages;
  r.bottleneck_resource = "PS messages";
  r.breakdown = {.compute = 0.1, .communication_exposed = 0.05, .wait = 0.1};
  r.utilization = {{"PS messages", 0.97}, {"worker compute (mean)", 0.4}};
  r.engine = "full";
  r.links = {{"server0.nic.up", 0.5, 3.75e8}};
  r.links_left_out = 17;
  r.step_samples = {.samples = 2,
                    .mean = 0.25,
                    .p50 = 0.25,
                    .p95 = 0.26,
                    .min = 0.24,
                    .max = 0.26,
                    .step_times = {0.24, 0.26}};
  r.saturation_workers = 7.5;
  r.mode = "extrapolated";
  r.tokens.mfu = 0.4;
  r.staleness = {.pushes = 1234, .mean = 6.75, .p95 = 9.5, .max = 12};
  r.async_phases = {.out_of_step = 0.125, .convoy = 0.25};
  Outcome sent;
  sent.results = {r, predict::Result{}};
  const Outcome got = decode(encode(sent));
  EXPECT_FALSE(got.failed);
  ASSERT_EQ(got.results.size(), 2u);
  EXPECT_EQ(got.results[0], r);
  EXPECT_EQ(got.results[0].staleness, r.staleness);
  EXPECT_EQ(got.results[0].async_phases, r.async_phases);
  EXPECT_EQ(got.results[1], predict::Result{});
}

}  // namespace result_wire_test
}  // namespace
}  // namespace stepcast::sweep::wire
