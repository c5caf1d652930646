// An enum's names live once, beside the type (as fmt keeps `format_as` next to a type): its header
// defines, right after the enum,
//
//   constexpr std::string_view name_of(Scheme v) {
//     switch (v) {
//       case Scheme::ParameterServer:
//         return "ps";
//       ...
//     }
//     return {};
//   }
//
// an exhaustive switch without a `default:`, so -Wall names a new enumerator left without a name.
// The name is the value's spelling in a scenario file; the key table's choices, to_string, the
// validation messages and the reports all read it. The helpers below, found by argument-dependent
// lookup, turn the switch into a list and back:
//
//   for (Scheme s : enum_values<Scheme>()) ...           // in declaration order
//   std::optional<Scheme> s = parse_name<Scheme>("fsdp");
//   if (!is_named(s)) ...                                 // an integer cast to no enumerator
//
// The enumerators must be 0, 1, 2, ... (no `= value`): enum_values stops at the first value
// without a name. tests/core/enum_names_test.cpp checks every converted enum.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <optional>
#include <string_view>
#include <type_traits>

namespace stepcast {

/// An enum with a `constexpr std::string_view name_of(E)` beside it.
template <class E>
concept NamedEnum = std::is_enum_v<E> && requires(E e) {
  { name_of(e) } -> std::same_as<std::string_view>;
};

/// false for a value no enumerator has (an integer cast to the enum).
template <NamedEnum E>
[[nodiscard]] constexpr bool is_named(E value) {
  return !name_of(value).empty();
}

namespace enum_names_detail {
// The enumerators 0, 1, ... up to the first value without a name; 256 at most (the enums are
// uint8_t).
template <NamedEnum E>
constexpr size_t count() {
  size_t n = 0;
  while (n < 256 && is_named(static_cast<E>(n))) ++n;
  return n;
}
}  // namespace enum_names_detail

/// Every enumerator of E, in declaration order.
template <NamedEnum E>
[[nodiscard]] constexpr std::array<E, enum_names_detail::count<E>()> enum_values() {
  std::array<E, enum_names_detail::count<E>()> values{};
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<E>(i);
  return values;
}

/// name_of(value) as a C string ("?" for a value without a name), for the to_string functions
/// that return one: every name is a string literal.
template <NamedEnum E>
[[nodiscard]] constexpr const char* name_c_str(E value) {
  return is_named(value) ? name_of(value).data() : "?";
}

/// The enumerator named `name` exactly (case matters), or nullopt.
template <NamedEnum E>
[[nodiscard]] constexpr std::optional<E> parse_name(std::string_view name) {
  for (E value : enum_values<E>()) {
    if (name_of(value) == name) return value;
  }
  return std::nullopt;
}

}  // namespace stepcast
