// Every enum with its names beside the type (stepcast/enum_names.hpp): each enumerator has exactly
// one name, the names are distinct, and name -> value -> name round-trips. A name missing from an
// enum's name_of switch is a -Wswitch warning; what the compiler cannot see (a gap, a duplicate
// name, a name that does not parse back) is checked here.
#include "stepcast/enum_names.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <set>
#include <string>
#include <string_view>

#include "scheme/exchange.hpp"
#include "stepcast/cluster/cluster.hpp"
#include "stepcast/cluster/gemm_table.hpp"
#include "stepcast/detail/calibrate/collective_log.hpp"
#include "stepcast/detail/calibrate/ring_calibration.hpp"
#include "stepcast/detail/profile/kineto.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/predict/result.hpp"
#include "stepcast/report/plan.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast {
namespace {
namespace enum_names_test {  // this file's own names: test files are compiled several to a unit

// Every enumerator has one name, distinct from the others; no value past the last has one (else
// enum_values, which stops at the first value without a name, would leave an enumerator out of the
// key table's choices); name -> value -> name round-trips, with the exact spelling only.
template <class E>
void check_names() {
  const auto values = enum_values<E>();
  ASSERT_GE(values.size(), 2u);
  std::set<std::string_view> names;
  for (size_t i = 0; i < values.size(); ++i) {
    const E value = values[i];
    EXPECT_EQ(static_cast<size_t>(value), i);  // declaration order: 0, 1, ...
    const std::string_view name = name_of(value);
    SCOPED_TRACE(std::string(name));
    ASSERT_FALSE(name.empty());
    EXPECT_TRUE(names.insert(name).second) << "two enumerators named so";
    EXPECT_TRUE(is_named(value));
    EXPECT_TRUE(parse_name<E>(name) == value);
    EXPECT_EQ(std::string_view(name_c_str(value)), name);
    EXPECT_FALSE(parse_name<E>(std::string(name) + " ").has_value());
    EXPECT_FALSE(parse_name<E>(name.substr(0, name.size() - 1)).has_value());
  }
  for (size_t i = values.size(); i < 256; ++i) {
    const auto value = static_cast<E>(i);
    EXPECT_FALSE(is_named(value)) << i;
    EXPECT_TRUE(name_of(value).empty()) << i;
    EXPECT_STREQ(name_c_str(value), "?");
  }
  EXPECT_FALSE(parse_name<E>("").has_value());
  EXPECT_FALSE(parse_name<E>("no such name").has_value());
}

template <class... E>
void check_all_names() {
  (check_names<E>(), ...);
}

TEST(EnumNames, Scheme) {
  using namespace scheme;
  check_all_names<Scheme, Mode, PsPartition, PsPlacementStrategy, PsPlacement, PsOrder, PsBarrier,
                  PsAsyncStart, AllReduceAlgorithm, CollectiveProtocol, FsdpSharding, Optimizer,
                  ParallelDimension, PipelineSchedule, TensorOverlap, CollectiveOp, SimulationEngine,
                  CommKind>();
}

TEST(EnumNames, Cluster) {
  using namespace cluster;
  check_all_names<Topology, Routing, Transport, IntraNodeLink, GpuGeneration, CpuVendor, NodePlacement,
                  GemmDtype, NcclProtocol>();
}

TEST(EnumNames, Workload) {
  using namespace workload;
  check_all_names<Precision, ActivationCheckpointing, LossMode, ExpertPlacement>();
}

TEST(EnumNames, PredictAndScenario) {
  check_all_names<predict::Predictor, predict::StartupIo, predict::BottleneckKind, scenario::StepSamples,
                  scenario::ReplayMode, scenario::MeasuredWith, scenario::ComputeMethod>();
}

TEST(EnumNames, ReportAndCalibrate) {
  check_all_names<report::PlanRank, calibrate::FitMethod, calibrate::LogFormat, calibrate::Placement,
                  profile::Category>();
}

// The names are usable at compile time (enum_values sizes an array with them).
static_assert(enum_values<scheme::Scheme>().size() == 3);
static_assert(name_of(scheme::Scheme::ParameterServer) == "ps");
static_assert(parse_name<scheme::Scheme>("fsdp") == scheme::Scheme::Fsdp);
static_assert(!is_named(static_cast<scheme::Scheme>(3)));
// The counts that size per-enumerator arrays agree with the enums.
static_assert(static_cast<int>(enum_values<cluster::NcclProtocol>().size()) == cluster::kNcclProtocols);
static_assert(static_cast<int>(enum_values<scheme::ParallelDimension>().size()) ==
              scheme::kParallelDimensions);

TEST(EnumNames, SchemeIsNamedAsScenarioFilesSpellIt) {
  EXPECT_EQ(name_of(scheme::Scheme::ParameterServer), "ps");
  EXPECT_EQ(name_of(scheme::Scheme::AllReduce), "allreduce");
  EXPECT_EQ(name_of(scheme::Scheme::Fsdp), "fsdp");
}

// The to_string functions of the converted enums print the same names.
TEST(EnumNames, ToStringIsTheName) {
  for (auto v : enum_values<predict::Predictor>()) EXPECT_EQ(predict::to_string(v), name_of(v));
  for (auto v : enum_values<cluster::Topology>()) EXPECT_EQ(cluster::to_string(v), name_of(v));
  for (auto v : enum_values<cluster::GpuGeneration>()) EXPECT_EQ(cluster::to_string(v), name_of(v));
  for (auto v : enum_values<cluster::CpuVendor>()) EXPECT_EQ(cluster::to_string(v), name_of(v));
  for (auto v : enum_values<scheme::ParallelDimension>()) EXPECT_EQ(scheme::to_string(v), name_of(v));
  for (auto v : enum_values<scheme::AllReduceAlgorithm>()) EXPECT_EQ(scheme::to_string(v), name_of(v));
  for (auto v : enum_values<scheme::CollectiveOp>()) EXPECT_EQ(scheme::to_string(v), name_of(v));
  for (auto v : enum_values<scheme::SimulationEngine>()) EXPECT_EQ(scheme::to_string(v), name_of(v));
  for (auto v : enum_values<cluster::GemmDtype>()) {
    EXPECT_EQ(cluster::to_string(v), name_of(v));
    EXPECT_TRUE(cluster::parse_gemm_dtype(name_of(v)) == v);
  }
  EXPECT_TRUE(cluster::parse_gemm_dtype(" BF16 ") == cluster::GemmDtype::BF16);  // case and spaces aside
  for (auto v : enum_values<report::PlanRank>()) EXPECT_EQ(report::to_string(v), name_of(v));
  for (auto v : enum_values<calibrate::FitMethod>()) EXPECT_EQ(calibrate::to_string(v), name_of(v));
  for (auto v : enum_values<calibrate::LogFormat>()) EXPECT_EQ(calibrate::to_string(v), name_of(v));
  EXPECT_EQ(calibrate::to_string(static_cast<calibrate::LogFormat>(9)), "?");
  for (auto v : enum_values<predict::BottleneckKind>()) EXPECT_EQ(predict::to_string(v), name_of(v));
  for (auto v : enum_values<profile::Category>()) EXPECT_EQ(profile::to_string(v), name_of(v));
  EXPECT_EQ(profile::to_string(static_cast<profile::Category>(99)), "other");
  for (auto v : enum_values<scheme::CommKind>()) EXPECT_EQ(scheme::to_string(v), name_of(v));
}

// NCCL's protocols: scenario keys in lower case, reports as NCCL spells them.
TEST(EnumNames, NcclProtocolKeysAndReports) {
  using cluster::NcclProtocol;
  EXPECT_EQ(cluster::nccl_key(true, NcclProtocol::LL128), "cluster.nccl.tree.ll128");
  EXPECT_EQ(cluster::nccl_key(false, NcclProtocol::Simple), "cluster.nccl.ring.simple");
  EXPECT_STREQ(cluster::to_string(NcclProtocol::LL), "LL");
  EXPECT_STREQ(cluster::to_string(NcclProtocol::Simple), "Simple");
}

// Reports spell NCCL's protocols as NCCL does; scenario files in lower case.
TEST(EnumNames, CollectiveProtocolReportsNcclSpelling) {
  using scheme::CollectiveProtocol;
  EXPECT_STREQ(scheme::to_string(CollectiveProtocol::Links), "links");
  EXPECT_STREQ(scheme::to_string(CollectiveProtocol::Auto), "auto");
  EXPECT_STREQ(scheme::to_string(CollectiveProtocol::LL), "LL");
  EXPECT_STREQ(scheme::to_string(CollectiveProtocol::LL128), "LL128");
  EXPECT_STREQ(scheme::to_string(CollectiveProtocol::Simple), "Simple");
  EXPECT_EQ(name_of(CollectiveProtocol::LL128), "ll128");
  EXPECT_STREQ(scheme::to_string(static_cast<CollectiveProtocol>(200)), "?");
}

}  // namespace enum_names_test
}  // namespace
}  // namespace stepcast
