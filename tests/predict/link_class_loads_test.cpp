// Result::link_classes: every link that carried bytes, by class, whichever links a result keeps
// by name; fine against its own full list of links, the closed forms against fine.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "stepcast/predict/predict.hpp"
#include "stepcast/scenario/scenario.hpp"

namespace stepcast::predict {
namespace {
namespace link_class_loads_test {  // this file's own names: test files are compiled several to a unit

const std::string kRing = std::string(STEPCAST_SOURCE_DIR) + "/examples/vgg16-allreduce.yaml";

// VGG-16's ring over 64 workers, 8 a node, two NICs a node, on a 2:1 radix-4 leaf-spine: the
// uplinks twice as busy as the NICs (tests/predict/bottleneck_test.cpp).
Result run(const std::string& predictor, size_t links_kept, int measured_steps = 1) {
  const scenario::Scenario s = scenario::load_scenario(
      kRing, {"cluster.workers=64", "cluster.workers_per_node=8", "cluster.nics_per_node=2",
              "cluster.topology=fat_tree", "cluster.fat_tree.radix=4", "cluster.fat_tree.oversubscription=2",
              "cluster.nic_bandwidth=12.5Gbps", "predictor=" + predictor,
              "steps.measure=" + std::to_string(measured_steps)});
  Options options = s.options;
  options.links_kept = links_kept;
  return predict(scenario::build_workload(s), s.cluster, s.scheme, options);
}

// The class of a link by its name, written here from the cluster's naming ("node3.nic1.up",
// "node0.pcie1.down", "node0.gpu2.bus.up", "leaf0->spine1"), not from the code under test.
std::string class_of(const std::string& name) {
  if (name.find("->") != std::string::npos) {
    std::string fabric = name;
    std::erase_if(fabric, [](char ch) { return ch >= '0' && ch <= '9'; });
    return fabric + " link";
  }
  if (name.find(".nic") != std::string::npos) return "worker NIC";
  if (name.find(".pcie") != std::string::npos) return "PCIe link";
  if (name.find(".bus.") != std::string::npos) return "intra-node link";
  return "unknown: " + name;
}

double busy_of(const Result& r, const std::string& resource) {
  for (const Utilization& u : r.utilization) {
    if (u.resource == resource) return u.busy;
  }
  return -1;
}

const sim::LinkClassLoad* find_class(const Result& r, const std::string& name) {
  auto it = std::find_if(r.link_classes.begin(), r.link_classes.end(),
                         [&](const sim::LinkClassLoad& c) { return c.name == name; });
  return it == r.link_classes.end() ? nullptr : &*it;
}

TEST(LinkClassLoads, FineCountsEveryLinkOfItsFullListByClass) {
  const Result all = run("fine", 0);
  ASSERT_EQ(all.links_left_out, 0u);
  ASSERT_GT(all.links.size(), 100u);
  std::map<std::string, sim::LinkClassLoad> by_hand;
  for (const sim::LinkLoad& l : all.links) {
    sim::LinkClassLoad& c = by_hand[class_of(l.name)];
    c.name = class_of(l.name);
    ++c.links;
    c.busiest = std::max(c.busiest, l.busy);
    c.mean_busy += l.busy;  // a sum, divided below
    c.bytes += l.bytes;
  }
  ASSERT_EQ(all.link_classes.size(), by_hand.size());
  for (auto& [name, expected] : by_hand) {
    SCOPED_TRACE(name);
    const sim::LinkClassLoad* c = find_class(all, name);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->links, expected.links);
    EXPECT_DOUBLE_EQ(c->busiest, expected.busiest);
    EXPECT_NEAR(c->mean_busy, expected.mean_busy / static_cast<double>(expected.links), 1e-12);
    EXPECT_NEAR(c->bytes, expected.bytes, 1e-9 * expected.bytes);
    EXPECT_LE(c->mean_busy, c->busiest);
  }
  for (const char* name : {"worker NIC", "intra-node link", "leaf->spine link", "spine->leaf link"})
    EXPECT_NE(find_class(all, name), nullptr) << name;
  // Busiest class first; each class's busiest is the resource the bottleneck reads.
  EXPECT_TRUE(std::is_sorted(all.link_classes.begin(), all.link_classes.end(),
                             [](const auto& a, const auto& b) { return a.busiest > b.busiest; }));
  EXPECT_DOUBLE_EQ(find_class(all, "leaf->spine link")->busiest, busy_of(all, "leaf->spine link"));
  EXPECT_DOUBLE_EQ(find_class(all, "worker NIC")->busiest,
                   std::max(busy_of(all, "worker NIC out"), busy_of(all, "worker NIC in")));
  // Keeping ten links by name changes no class: they count every link.
  const Result kept = run("fine", 10);
  EXPECT_EQ(kept.links.size(), 10u);
  EXPECT_EQ(kept.links_left_out, all.links.size() - 10);
  EXPECT_EQ(kept.link_classes, all.link_classes);
}

TEST(LinkClassLoads, TheClosedFormsCountTheLinksFineCountsAndScaleBytesWithTheMeasuredSteps) {
  const Result fine = run("fine", 10);
  for (const char* predictor : {"coarse", "analytic"}) {
    SCOPED_TRACE(predictor);
    const Result r = run(predictor, 10);
    // The same ring plans put bytes on the same links.
    ASSERT_EQ(r.link_classes.size(), fine.link_classes.size());
    for (const sim::LinkClassLoad& f : fine.link_classes) {
      SCOPED_TRACE(f.name);
      const sim::LinkClassLoad* c = find_class(r, f.name);
      ASSERT_NE(c, nullptr);
      EXPECT_EQ(c->links, f.links);
    }
    // The uplink carries both channels' rings of its leaf, a NIC one: twice as busy.
    EXPECT_NEAR(find_class(r, "leaf->spine link")->busiest / find_class(r, "worker NIC")->busiest, 2.0, 1e-9);
    EXPECT_DOUBLE_EQ(find_class(r, "leaf->spine link")->busiest, busy_of(r, "leaf->spine link"));
    // Bytes over the measured steps, as bytes_sent; busy fractions per step.
    const Result twice = run(predictor, 10, 2);
    ASSERT_EQ(twice.link_classes.size(), r.link_classes.size());
    for (size_t i = 0; i < r.link_classes.size(); ++i) {
      EXPECT_NEAR(twice.link_classes[i].bytes, 2 * r.link_classes[i].bytes, 1e-9 * r.link_classes[i].bytes);
      EXPECT_DOUBLE_EQ(twice.link_classes[i].busiest, r.link_classes[i].busiest);
    }
  }
}

}  // namespace link_class_loads_test
}  // namespace
}  // namespace stepcast::predict
