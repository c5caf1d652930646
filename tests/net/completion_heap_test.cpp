// The flow network's completion heap alone: one entry per flow or group, moved in place, and
// finishes in (time, flow) order whatever order they were queued in.
#include "net/completion_heap.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <utility>
#include <vector>

namespace stepcast::net {
namespace {
namespace completion_heap_test {  // this file's own names: test files are compiled several to a unit

// Empties the heap front first; returns (finish, flow) in the order they came out.
std::vector<std::pair<double, uint32_t>> drain(CompletionHeap& heap) {
  std::vector<std::pair<double, uint32_t>> out;
  while (!heap.empty()) {
    const CompletionHeap::Entry first = heap.front();
    out.emplace_back(first.finish, first.flow);
    if (first.group == CompletionHeap::kNoGroup) {
      heap.erase_flow(first.flow);
    } else {
      heap.erase_group(first.group);
    }
  }
  return out;
}

TEST(CompletionHeap, EmptyHeapHasNoNextFinish) {
  CompletionHeap heap;
  EXPECT_TRUE(heap.empty());
  EXPECT_EQ(heap.next_finish(), std::numeric_limits<double>::infinity());
  EXPECT_FALSE(heap.queued_flow(0));
  EXPECT_FALSE(heap.queued_group(0));
  heap.erase_group(3);  // a group without an entry: nothing to take out
  EXPECT_TRUE(heap.empty());
}

// Flows 5, 2 and 9 and group 3 (its first flow: 4) all finish at 1 s: they come out in flow order,
// the group's entry under its flow's number.
TEST(CompletionHeap, EqualTimesComeOutInFlowOrder) {
  CompletionHeap heap;
  heap.schedule_flow(5, 1.0);
  heap.schedule_flow(2, 1.0);
  heap.schedule_group(3, 4, 1.0);
  heap.schedule_flow(9, 1.0);
  heap.schedule_flow(7, 0.5);
  const std::vector<std::pair<double, uint32_t>> expected{{0.5, 7}, {1.0, 2}, {1.0, 4}, {1.0, 5}, {1.0, 9}};
  EXPECT_EQ(drain(heap), expected);
}

// A new finish moves the flow's one entry, earlier or later.
TEST(CompletionHeap, RescheduleMovesTheOneEntry) {
  CompletionHeap heap;
  heap.schedule_flow(1, 5.0);
  heap.schedule_flow(2, 3.0);
  heap.schedule_flow(1, 0.5);
  EXPECT_EQ(heap.size(), 2u);
  EXPECT_EQ(heap.front().flow, 1u);
  heap.schedule_flow(1, 7.0);
  EXPECT_EQ(heap.size(), 2u);
  EXPECT_EQ(heap.front().flow, 2u);
  EXPECT_DOUBLE_EQ(heap.next_finish(), 3.0);
}

// A group keeps one entry, which follows its first flow to finish.
TEST(CompletionHeap, GroupEntryFollowsItsFirstFlow) {
  CompletionHeap heap;
  heap.schedule_flow(4, 1.5);  // flow 4 on its own
  heap.schedule_group(7, 4, 2.0);
  heap.schedule_group(7, 9, 1.0);
  EXPECT_EQ(heap.size(), 2u);
  EXPECT_TRUE(heap.queued_group(7));
  EXPECT_EQ(heap.front().flow, 9u);
  EXPECT_EQ(heap.front().group, 7u);
  heap.erase_group(7);
  EXPECT_FALSE(heap.queued_group(7));
  EXPECT_TRUE(heap.queued_flow(4));  // a group's entry is not its flow's
  EXPECT_EQ(heap.front().flow, 4u);
}

// Seeded: 500 flows queued in random order, a third of them moved and a fifth taken out from
// anywhere; the rest come out sorted by (finish, flow), finishes drawn from 20 values so that
// ties are common.
TEST(CompletionHeap, RandomScheduleMoveEraseStaysOrdered) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    auto draw = [&rng] { return static_cast<double>(rng() % 20) * 0.25; };
    CompletionHeap heap;
    std::vector<double> finish(500);
    for (uint32_t f = 0; f < finish.size(); ++f) heap.schedule_flow(f, finish[f] = draw());
    for (uint32_t f = 0; f < finish.size(); f += 3) heap.schedule_flow(f, finish[f] = draw());
    std::vector<std::pair<double, uint32_t>> expected;
    for (uint32_t f = 0; f < finish.size(); ++f) {
      if (f % 5 == 2) {
        heap.erase_flow(f);
        EXPECT_FALSE(heap.queued_flow(f));
      } else {
        expected.emplace_back(finish[f], f);
      }
    }
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(drain(heap), expected);
  }
}

}  // namespace completion_heap_test
}  // namespace
}  // namespace stepcast::net
