// The key table's choices are the names beside each enum (stepcast/enum_names.hpp): the type
// `stepcast options` prints lists exactly those names, in declaration order, each name parses to
// its value and renders back, and anything else is refused.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>

#include "scenario/key_table.hpp"
#include "stepcast/enum_names.hpp"
#include "stepcast/error.hpp"
#include "stepcast/scenario/scenario.hpp"

namespace stepcast::scenario {
namespace {
namespace enum_choices_test {  // this file's own names: test files are compiled several to a unit

template <class E>
std::string names_joined() {
  std::string out;
  for (E value : enum_values<E>()) {
    if (!out.empty()) out += '|';
    out += name_of(value);
  }
  return out;
}

// `key` takes exactly E's names: its documented type lists them, each one sets the value that
// renders as itself, and a name of no enumerator is an error naming the key's choices.
template <class E>
void expect_choices_of(std::string_view key, std::set<std::string>& checked) {
  SCOPED_TRACE(std::string(key));
  checked.insert(std::string(key));
  const detail::KeyDef* def = detail::find_key(key);
  ASSERT_NE(def, nullptr);
  EXPECT_EQ(def->info.type, "one of " + names_joined<E>());
  for (E value : enum_values<E>()) {
    detail::Draft draft;
    def->apply({std::string(name_of(value)), {"test.yaml", 1, std::string(key)}}, draft);
    EXPECT_EQ(def->render(draft.scenario).value, name_of(value));
  }
  detail::Draft draft;
  EXPECT_THROW(def->apply({"no_such_name", {"test.yaml", 1, std::string(key)}}, draft), Error);
}

TEST(EnumChoices, EveryChoiceKeyTakesTheNamesBesideItsType) {
  std::set<std::string> checked;
  expect_choices_of<workload::ActivationCheckpointing>("workload.activation_checkpointing", checked);
  expect_choices_of<workload::LossMode>("workload.loss", checked);
  expect_choices_of<workload::ExpertPlacement>("workload.moe.placement", checked);
  expect_choices_of<ComputeMethod>("workload.compute", checked);
  expect_choices_of<StepSamples>("workload.step_samples", checked);
  expect_choices_of<MeasuredWith>("workload.measured_with", checked);
  expect_choices_of<ReplayMode>("workload.replay", checked);
  expect_choices_of<workload::Precision>("workload.precision", checked);
  expect_choices_of<cluster::Topology>("cluster.topology", checked);
  expect_choices_of<cluster::GpuGeneration>("cluster.gpu.generation", checked);
  expect_choices_of<cluster::CpuVendor>("cluster.cpu.vendor", checked);
  expect_choices_of<cluster::IntraNodeLink>("cluster.intra_node.link", checked);
  expect_choices_of<cluster::NodePlacement>("cluster.node_placement", checked);
  expect_choices_of<cluster::Routing>("cluster.routing", checked);
  expect_choices_of<cluster::Transport>("cluster.transport", checked);
  expect_choices_of<scheme::Scheme>("training.scheme", checked);
  expect_choices_of<scheme::Mode>("training.mode", checked);
  expect_choices_of<scheme::PsPartition>("training.ps.partition", checked);
  expect_choices_of<scheme::PsPlacementStrategy>("training.ps.placement_strategy", checked);
  expect_choices_of<scheme::PsPlacement>("training.ps.placement", checked);
  expect_choices_of<scheme::PsOrder>("training.ps.order", checked);
  expect_choices_of<scheme::PsBarrier>("training.ps.barrier", checked);
  expect_choices_of<scheme::PsAsyncStart>("training.ps.async_start", checked);
  expect_choices_of<scheme::AllReduceAlgorithm>("training.allreduce.algorithm", checked);
  expect_choices_of<scheme::CollectiveProtocol>("training.allreduce.protocol", checked);
  expect_choices_of<scheme::FsdpSharding>("training.fsdp.sharding", checked);
  expect_choices_of<scheme::Optimizer>("training.optimizer", checked);
  expect_choices_of<scheme::PipelineSchedule>("training.pipeline.schedule", checked);
  expect_choices_of<scheme::TensorOverlap>("training.tensor.overlap", checked);
  expect_choices_of<predict::Predictor>("predictor", checked);
  expect_choices_of<predict::StartupIo>("job.startup.io", checked);

  // No other key lists choices but the booleans: a new enum key is added above.
  for (const detail::KeyDef& def : detail::key_table()) {
    if (def.info.type.rfind("one of ", 0) != 0 || def.info.type == "one of false|true") continue;
    EXPECT_TRUE(checked.count(def.info.key)) << def.info.key << ": " << def.info.type;
  }
}

// The rank order's dimensions are ParallelDimension's names.
TEST(EnumChoices, RankOrderUsesTheDimensionNames) {
  const detail::KeyDef* def = detail::find_key("training.parallel.order");
  ASSERT_NE(def, nullptr);
  detail::Draft draft;
  def->apply({"pp-dp-cp-tp", {"test.yaml", 1, "training.parallel.order"}}, draft);
  EXPECT_EQ(def->render(draft.scenario).value, "pp-dp-cp-tp");
  std::string names;
  for (scheme::ParallelDimension d : draft.scenario.scheme.parallel.order) names += name_of(d);
  EXPECT_EQ(names, "ppdpcptp");
}

}  // namespace enum_choices_test
}  // namespace
}  // namespace stepcast::scenario
