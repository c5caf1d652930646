// Result's fields, listed once: each struct of predict::Result (result.hpp), the nested ones
// included, names every member here, in declaration order, with the name it has in C++. The
// MPI wire (src/sweep/result_wire.cpp) encodes a Result by walking these lists, so it carries
// every field by construction; tests/sweep/result_fields_test.cpp walks them to check that the
// JSON and CSV writers print every field but those it lists as left out on purpose.
//
//   predict::for_each_field(result, [](const char* name, const auto& value) { ... });
//   // f("workers", r.workers), f("predictor", r.predictor), ..., f("breakdown", r.breakdown), ...
//
// A struct's fields are visited one level deep: a member that has a list itself (breakdown,
// memory, ...) is passed whole; has_field_list<T> says whether to walk into it.
//
// A member added to one of these structs without a line here fails to compile: each list is
// checked against its struct's members by counting them (every_member_listed below).
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "stepcast/predict/result.hpp"

namespace stepcast::predict {

/// One member: its name and where it is.
template <class Class, class Member>
struct Field {
  const char* name;
  Member Class::*member;
};

template <class Class, class Member>
constexpr Field<Class, Member> field(const char* name, Member Class::*member) {
  return {name, member};
}

/// Specialised below for every struct in a Result; `fields` is a tuple of Field.
template <class T>
struct FieldList;

template <class T>
concept has_field_list = requires { FieldList<std::remove_cv_t<T>>::fields; };

/// Calls f(name, object.member) for every member of T, in declaration order; T may be const.
template <class T, class F>
requires has_field_list<T>
constexpr void for_each_field(T& object, F&& f) {
  std::apply([&](const auto&... fields) { (f(fields.name, object.*(fields.member)), ...); },
             FieldList<std::remove_cv_t<T>>::fields);
}

template <class T>
inline constexpr std::size_t field_count = std::tuple_size_v<decltype(FieldList<T>::fields)>;

namespace detail {

/// Converts to any type, so that T{AnyMember{}, ...} compiles exactly when T, an aggregate, has at
/// least as many members as there are braces. Declared, never defined: it is only named inside
/// requires-expressions, which are not evaluated.
struct AnyMember {
  template <class T>
  operator T() const;  // NOLINT(google-explicit-constructor): converting is its purpose
};

template <class T, std::size_t... I>
constexpr bool braces_accept(std::index_sequence<I...> /*unused*/) {
  return requires { T{(static_cast<void>(I), AnyMember{})...}; };
}

}  // namespace detail

/// True when T's list names as many fields as T has members. The structs are aggregates (no
/// constructors, no bases), so T{x1, ..., xN} compiles when T has at least N members and fails
/// with more: N initializers accepted and N + 1 refused means exactly N members. (Each
/// AnyMember converts straight to a nested struct's type, so no brace elision spreads one over
/// the nested struct's members.) Counting from the list's own length, never below it, means the
/// check never leaves a member without an initializer. Names are not compared: a member swapped
/// for another of the same count still compiles, and the round-trip test
/// (tests/sweep/result_fields_test.cpp) notices a list naming the wrong member of a type only
/// through what it prints; the list is next to the struct to be read with it.
template <class T>
inline constexpr bool every_member_listed =
    std::is_aggregate_v<T> && detail::braces_accept<T>(std::make_index_sequence<field_count<T>>{}) &&
    !detail::braces_accept<T>(std::make_index_sequence<field_count<T> + 1>{});

template <>
struct FieldList<Breakdown> {
  static constexpr auto fields = std::tuple{field("compute", &Breakdown::compute),
                                            field("communication_exposed", &Breakdown::communication_exposed),
                                            field("wait", &Breakdown::wait),
                                            field("tensor", &Breakdown::tensor),
                                            field("context", &Breakdown::context),
                                            field("pipeline", &Breakdown::pipeline),
                                            field("data", &Breakdown::data),
                                            field("expert", &Breakdown::expert)};
};

template <>
struct FieldList<Utilization> {
  static constexpr auto fields =
      std::tuple{field("resource", &Utilization::resource), field("busy", &Utilization::busy)};
};

template <>
struct FieldList<sim::LinkClassLoad> {
  static constexpr auto fields = std::tuple{
      field("name", &sim::LinkClassLoad::name), field("links", &sim::LinkClassLoad::links),
      field("busiest", &sim::LinkClassLoad::busiest), field("mean_busy", &sim::LinkClassLoad::mean_busy),
      field("bytes", &sim::LinkClassLoad::bytes)};
};

template <>
struct FieldList<sim::LinkLoad> {
  static constexpr auto fields = std::tuple{field("name", &sim::LinkLoad::name), field("busy", &sim::LinkLoad::busy),
                                            field("bytes", &sim::LinkLoad::bytes)};
};

template <>
struct FieldList<StepSpread> {
  static constexpr auto fields =
      std::tuple{field("samples", &StepSpread::samples), field("mean", &StepSpread::mean),
                 field("p50", &StepSpread::p50),         field("p95", &StepSpread::p95),
                 field("min", &StepSpread::min),         field("max", &StepSpread::max),
                 field("step_times", &StepSpread::step_times)};
};

template <>
struct FieldList<Staleness> {
  static constexpr auto fields = std::tuple{field("pushes", &Staleness::pushes), field("mean", &Staleness::mean),
                                            field("p95", &Staleness::p95), field("max", &Staleness::max)};
};

template <>
struct FieldList<AsyncPhases> {
  static constexpr auto fields =
      std::tuple{field("out_of_step", &AsyncPhases::out_of_step), field("convoy", &AsyncPhases::convoy)};
};

template <>
struct FieldList<Job> {
  static constexpr auto fields = std::tuple{
      field("samples", &Job::samples), field("steps", &Job::steps),           field("startup_time", &Job::startup_time),
      field("time", &Job::time),       field("throughput", &Job::throughput), field("epochs", &Job::epochs),
      field("epoch_time", &Job::epoch_time), field("tokens", &Job::tokens)};
};

template <>
struct FieldList<Cost> {
  static constexpr auto fields =
      std::tuple{field("gpu_hour", &Cost::gpu_hour), field("currency", &Cost::currency),
                 field("per_step", &Cost::per_step), field("per_million_tokens", &Cost::per_million_tokens),
                 field("job", &Cost::job)};
};

template <>
struct FieldList<Memory> {
  static constexpr auto fields =
      std::tuple{field("parameters", &Memory::parameters), field("gradients", &Memory::gradients),
                 field("optimizer", &Memory::optimizer), field("activations", &Memory::activations),
                 field("buffers", &Memory::buffers)};
};

template <>
struct FieldList<MemoryCheck> {
  static constexpr auto fields = std::tuple{field("known", &MemoryCheck::known),
                                            field("per_worker", &MemoryCheck::per_worker),
                                            field("activations_modelled", &MemoryCheck::activations_modelled),
                                            field("gpu_memory", &MemoryCheck::gpu_memory),
                                            field("outside_allocator", &MemoryCheck::outside_allocator),
                                            field("allocator_overhead", &MemoryCheck::allocator_overhead)};
};

template <>
struct FieldList<TokenRates> {
  static constexpr auto fields =
      std::tuple{field("tokens_per_s", &TokenRates::tokens_per_s),
                 field("tokens_per_s_per_worker", &TokenRates::tokens_per_s_per_worker),
                 field("model_flops_per_s_per_worker", &TokenRates::model_flops_per_s_per_worker),
                 field("mfu", &TokenRates::mfu), field("mfu_6nd", &TokenRates::mfu_6nd)};
};

template <>
struct FieldList<BucketCollective> {
  static constexpr auto fields =
      std::tuple{field("bytes", &BucketCollective::bytes), field("algorithm", &BucketCollective::algorithm),
                 field("protocol", &BucketCollective::protocol)};
};

template <>
struct FieldList<Result> {
  static constexpr auto fields = std::tuple{field("workers", &Result::workers),
                                            field("predictor", &Result::predictor),
                                            field("step_time", &Result::step_time),
                                            field("throughput", &Result::throughput),
                                            field("speedup", &Result::speedup),
                                            field("efficiency", &Result::efficiency),
                                            field("bottleneck", &Result::bottleneck),
                                            field("bottleneck_kind", &Result::bottleneck_kind),
                                            field("bottleneck_resource", &Result::bottleneck_resource),
                                            field("breakdown", &Result::breakdown),
                                            field("optimizer_step_time", &Result::optimizer_step_time),
                                            field("utilization", &Result::utilization),
                                            field("bytes_sent", &Result::bytes_sent),
                                            field("bytes_received", &Result::bytes_received),
                                            field("events", &Result::events),
                                            field("engine", &Result::engine),
                                            field("max_link_flows", &Result::max_link_flows),
                                            field("links", &Result::links),
                                            field("links_left_out", &Result::links_left_out),
                                            field("link_classes", &Result::link_classes),
                                            field("step_samples", &Result::step_samples),
                                            field("saturation_workers", &Result::saturation_workers),
                                            field("compute_cv", &Result::compute_cv),
                                            field("job", &Result::job),
                                            field("cost", &Result::cost),
                                            field("mode", &Result::mode),
                                            field("gpu_busy_fraction", &Result::gpu_busy_fraction),
                                            field("memory", &Result::memory),
                                            field("tokens", &Result::tokens),
                                            field("collectives", &Result::collectives),
                                            field("staleness", &Result::staleness),
                                            field("layout", &Result::layout),
                                            field("bubble_fraction", &Result::bubble_fraction),
                                            field("async_phases", &Result::async_phases),
                                            field("trace", &Result::trace)};
};

// Every list against its struct: a member added to a struct (or a line lost here) stops the build.
static_assert(every_member_listed<Breakdown>, "predict::Breakdown: a member is missing from FieldList<Breakdown>");
static_assert(every_member_listed<Utilization>, "predict::Utilization: a member is missing from its FieldList");
static_assert(every_member_listed<sim::LinkLoad>, "sim::LinkLoad: a member is missing from its FieldList");
static_assert(every_member_listed<sim::LinkClassLoad>,
              "sim::LinkClassLoad: a member is missing from its FieldList");
static_assert(every_member_listed<StepSpread>, "predict::StepSpread: a member is missing from its FieldList");
static_assert(every_member_listed<Staleness>, "predict::Staleness: a member is missing from its FieldList");
static_assert(every_member_listed<AsyncPhases>, "predict::AsyncPhases: a member is missing from its FieldList");
static_assert(every_member_listed<Job>, "predict::Job: a member is missing from its FieldList");
static_assert(every_member_listed<Cost>, "predict::Cost: a member is missing from its FieldList");
static_assert(every_member_listed<Memory>, "predict::Memory: a member is missing from its FieldList");
static_assert(every_member_listed<MemoryCheck>, "predict::MemoryCheck: a member is missing from its FieldList");
static_assert(every_member_listed<TokenRates>, "predict::TokenRates: a member is missing from its FieldList");
static_assert(every_member_listed<BucketCollective>,
              "predict::BucketCollective: a member is missing from its FieldList");
static_assert(every_member_listed<Result>, "predict::Result: a member is missing from FieldList<Result>");

}  // namespace stepcast::predict
