// Staleness of asynchronous parameter-server gradients (predict::Result::staleness): updates a
// shard applied to a piece between a worker's pull of it and the arrival of that worker's push.
// Closed forms with idle servers, what saturation does, and the statistics' own properties.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "layered_workload.hpp"
#include "stepcast/cluster/cluster.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast::scheme {
namespace {
namespace staleness_test {  // this file's own names: test files are compiled several to a unit

using test_workloads::layered;

using cluster::ClusterSpec;
using workload::Workload;

ClusterSpec cluster_of(int workers, double nic_bw) {
  ClusterSpec spec;
  spec.workers = workers;
  spec.nic_bw = nic_bw;
  spec.latency = 5e-6;
  return spec;
}

SchemeConfig async_ps(int shards, PsOrder order = PsOrder::Random) {
  SchemeConfig s;
  s.scheme = Scheme::ParameterServer;
  s.mode = Mode::Async;
  s.ps.count = shards;
  s.ps.partition = PsPartition::Split;
  s.ps.order = order;
  return s;
}

predict::Options fine(uint64_t seed = 1) { return {.warmup_steps = 2, .measure_steps = 8, .seed = seed}; }

TEST(Staleness, IsNMinusOneForAPiecePulledAtTheStartAndPushedAtTheEndOfAStep) {
  // One layer of 1 MB, 30 ms forward and 60 ms backward, 100 Gbps: the servers idle. A worker
  // requests its piece as its step starts and its push arrives as the step ends; the next step
  // starts then. Every other worker pushes once per step of the same length, at its own
  // phase, so exactly N - 1 updates land in between.
  const Workload w = layered(1, 1e6, 30e-3, 60e-3);
  for (int n : {1, 2, 4, 8}) {
    SCOPED_TRACE("N = " + std::to_string(n));
    const predict::Result r = predict::predict(w, cluster_of(n, 12.5e9), async_ps(1), fine());
    ASSERT_GT(r.staleness.pushes, 0u);
    EXPECT_NEAR(r.staleness.mean, n - 1, 0.1 * (n - 1) + 1e-12);
    EXPECT_LE(r.staleness.max, n);
    if (n == 1) {
      EXPECT_EQ(r.staleness.max, 0);
    }
  }
}

TEST(Staleness, MeanFollowsEachPiecesPullToPushTime) {
  // 8 layers of 1 ms forward and 2 ms backward each, servers idle. Piece l is pulled as the step
  // starts and pushed when backward op l ends, L f + (L - l) b later; the others' pushes of it
  // come once per step C = L (f + b) at phases spread by the start offsets, so it sees
  // (N - 1) (L f + (L - l) b) / C updates on average. Over l = 0..L-1:
  //   mean = (N - 1) (L f + (L + 1) b / 2) / (L (f + b)) = (N - 1) x 17 / 24.
  // The workers start evenly spread over a step (identical workers keep their phases); the seed
  // draws the random pull order, so average over seeds.
  const int n = 8;
  const Workload w = layered(8, 1e5, 1e-3, 2e-3);
  double sum = 0;
  const int seeds = 6;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    const predict::Result r = predict::predict(w, cluster_of(n, 12.5e9), async_ps(2), fine(seed));
    ASSERT_GT(r.staleness.pushes, 0u);
    sum += r.staleness.mean;
  }
  const double expected = (n - 1) * 17.0 / 24.0;
  EXPECT_NEAR(sum / seeds, expected, 0.1 * expected);
}

TEST(Staleness, GrowsWhenTheServerSaturatesYetItsMeanStaysBelowNMinusOne) {
  // The 8-layer model of 8 MB (30 ms forward, 60 ms backward), random pull order, one shard.
  // With a 100 Gbps server NIC the workers compute 98-100% of the time: identical steps, so no
  // push ever sees more than N - 1 updates, and the mean is (N - 1) x 17/24 as above. With a
  // 2.4 Gbps server NIC the server is the bottleneck: steps are mostly pulls and pushes, so the
  // compute that separates an early-pushed piece from the step's end is a smaller share of the
  // step and every piece's pull-to-push time nears the whole step (the mean grows), and workers'
  // steps can differ from one another under fair sharing (a push in a long step then sees more
  // than N - 1 updates; with 4 workers started evenly spread the pattern can also repeat exactly,
  // and none does). Every worker still pushes each piece once per step, so the mean stays below
  // N - 1.
  const Workload w = layered(8, 1e6, 30e-3 / 8, 60e-3 / 8);
  for (int n : {4, 8, 16}) {
    for (uint64_t seed : {1, 2, 3}) {
      SCOPED_TRACE("N = " + std::to_string(n) + ", seed " + std::to_string(seed));
      ClusterSpec spec = cluster_of(n, 12.5e9);
      const predict::Result idle = predict::predict(w, spec, async_ps(1), fine(seed));
      spec.ps_nic_bw = 0.3e9;
      const predict::Result saturated = predict::predict(w, spec, async_ps(1), fine(seed));
      EXPECT_EQ(idle.bottleneck_kind, predict::BottleneckKind::Compute);
      EXPECT_EQ(saturated.bottleneck_kind, predict::BottleneckKind::PsNic) << saturated.bottleneck;
      EXPECT_EQ(idle.staleness.max, n - 1);
      EXPECT_GE(saturated.staleness.max, n - 1);
      EXPECT_GT(saturated.staleness.mean, idle.staleness.mean);
      EXPECT_LT(saturated.staleness.mean, n - 1);
    }
  }
}

TEST(Staleness, StatisticsAreOrderedDeterministicAndOnlyForAsyncFine) {
  const Workload w = layered(8, 1e6, 1e-3, 2e-3);
  const ClusterSpec spec = cluster_of(8, 1.25e9);
  const predict::Result a = predict::predict(w, spec, async_ps(2), fine(3));
  ASSERT_GT(a.staleness.pushes, 0u);
  EXPECT_GE(a.staleness.max, a.staleness.p95);
  EXPECT_GE(a.staleness.p95, a.staleness.mean - 1e-12);  // p95 of integers at least the mean here
  EXPECT_GE(a.staleness.mean, 0);
  // Same seed, same numbers.
  EXPECT_EQ(predict::predict(w, spec, async_ps(2), fine(3)).staleness, a.staleness);
  // Synchronous training has none (the barrier makes it 0), and neither do coarse or analytic.
  SchemeConfig sync = async_ps(2);
  sync.mode = Mode::Sync;
  EXPECT_EQ(predict::predict(w, spec, sync, fine(3)).staleness.pushes, 0u);
  for (predict::Predictor p : {predict::Predictor::Coarse, predict::Predictor::Analytic}) {
    predict::Options o = fine(3);
    o.predictor = p;
    EXPECT_EQ(predict::predict(w, spec, async_ps(2), o).staleness.pushes, 0u);
  }
}

}  // namespace staleness_test
}  // namespace
}  // namespace stepcast::scheme
