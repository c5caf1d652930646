#include "stepcast/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace stepcast {
namespace {

struct Suffix {
  std::string_view text;
  double factor;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits "25 Gbps" into 25 and "Gbps"; throws on a missing or malformed number.
std::pair<double, std::string_view> split_number(std::string_view text, const SourceLocation& where,
                                                 std::string_view what) {
  std::string_view s = trim(text);
  double value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || !std::isfinite(value)) {
    throw Error(where, fmt::format("expected {}, got '{}'", what, text));
  }
  return {value, trim(std::string_view(end, static_cast<size_t>(s.data() + s.size() - end)))};
}

// The value in SI units, which must lie in [0, max]: a finite number becomes infinite, or
// absurd, once its unit is applied ("1e308Gbps"), and every sum over a run would follow it.
template <size_t N>
double parse_with(std::string_view text, const SourceLocation& where, std::string_view what,
                  const std::array<Suffix, N>& suffixes, double max, std::string_view max_text) {
  auto [value, unit] = split_number(text, where, what);
  for (const Suffix& suffix : suffixes) {
    if (unit == suffix.text) {
      if (value < 0) throw Error(where, fmt::format("must not be negative, got '{}'", text));
      const double si = value * suffix.factor;
      if (!(si <= max)) {
        throw Error(where, fmt::format("'{}' is more than stepcast takes ({}), outside any real cluster", text,
                                       max_text));
      }
      return si;
    }
  }
  throw Error(where, fmt::format("expected {}, got '{}' (unknown unit '{}')", what, text, unit));
}

constexpr double kKi = 1024.0;

// A bare number in a scenario or an option could be bytes, MB or GB (bits or bytes per second):
// the unit is required there (0 is 0 in any unit). What `what` names is the example the message
// gives.
void require_unit(std::string_view text, const SourceLocation& where, std::string_view what) {
  const std::string_view s = trim(text);
  double value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (!s.empty() && ec == std::errc() && end == s.data() + s.size() && value != 0) {
    throw Error(where, fmt::format("expected {} with its unit, got '{}' (a bare number has no unit)", what, text));
  }
}
}  // namespace

double parse_bandwidth(std::string_view text, const SourceLocation& where) {
  // Up to P: the limit (1 PB/s = 8 Pbps) is said in units that parse.
  static constexpr std::array<Suffix, 24> kSuffixes{{
      {"", 1},
      {"B/s", 1},
      {"Bps", 1},
      {"bps", 0.125},
      {"b/s", 0.125},
      {"kbps", 125},
      {"Kbps", 125},
      {"Mbps", 125e3},
      {"Gbps", 125e6},
      {"Tbps", 125e9},
      {"Pbps", 125e12},
      {"Gb/s", 125e6},
      {"Mb/s", 125e3},
      {"kB/s", 1e3},
      {"KB/s", 1e3},
      {"MB/s", 1e6},
      {"GB/s", 1e9},
      {"TB/s", 1e12},
      {"PB/s", 1e15},
      {"KiB/s", kKi},
      {"MiB/s", kKi * kKi},
      {"GiB/s", kKi * kKi * kKi},
      {"GBps", 1e9},
      {"MBps", 1e6},
  }};
  double value = parse_with(text, where, "a bandwidth such as '25Gbps' or '3GB/s'", kSuffixes,
                            limits::kMaxBandwidth, "1 PB/s = 8 Pbps");
  if (value <= 0) throw Error(where, fmt::format("bandwidth must be > 0, got '{}'", text));
  if (value < limits::kMinBandwidth) {
    throw Error(where, fmt::format("'{}' is less than stepcast takes (1 kB/s = 8 kbps)", text));
  }
  return value;
}

double parse_duration(std::string_view text, const SourceLocation& where) {
  static constexpr std::array<Suffix, 9> kSuffixes{{
      {"", 1},
      {"s", 1},
      {"ms", 1e-3},
      {"us", 1e-6},
      {"µs", 1e-6},
      {"ns", 1e-9},
      {"min", 60},
      {"h", 3600},
      {"sec", 1},
  }};
  return parse_with(text, where, "a duration such as '5us' or '292ms'", kSuffixes, limits::kMaxDuration,
                    "1e6 s, 11.6 days");
}

double parse_bytes(std::string_view text, const SourceLocation& where) {
  // Up to PB: the limit (1 PB) is said in a unit that parses.
  static constexpr std::array<Suffix, 12> kSuffixes{{
      {"", 1},
      {"B", 1},
      {"kB", 1e3},
      {"KB", 1e3},
      {"MB", 1e6},
      {"GB", 1e9},
      {"TB", 1e12},
      {"PB", 1e15},
      {"KiB", kKi},
      {"MiB", kKi * kKi},
      {"GiB", kKi * kKi * kKi},
      {"TiB", kKi * kKi * kKi * kKi},
  }};
  return parse_with(text, where, "a size such as '25MB' or '1GiB'", kSuffixes, limits::kMaxBytes, "1 PB");
}

namespace {
/// `parse(text, where)` once `text` is known to carry a unit (`what` says which, for the error).
double parse_requiring_unit(std::string_view text, const SourceLocation& where, std::string_view what,
                            double (*parse)(std::string_view, const SourceLocation&)) {
  require_unit(text, where, what);
  return parse(text, where);
}
}  // namespace

double parse_bytes_with_unit(std::string_view text, const SourceLocation& where) {
  return parse_requiring_unit(text, where, "a size such as '80GB' or '1GiB'", parse_bytes);
}

double parse_bandwidth_with_unit(std::string_view text, const SourceLocation& where) {
  return parse_requiring_unit(text, where, "a bandwidth such as '25Gbps' or '3GB/s'", parse_bandwidth);
}

double parse_duration_with_unit(std::string_view text, const SourceLocation& where) {
  return parse_requiring_unit(text, where, "a duration such as '5us' or '292ms'", parse_duration);
}

double parse_flops_with_unit(std::string_view text, const SourceLocation& where) {
  return parse_requiring_unit(text, where, "a FLOP rate such as '312TFLOPS'", parse_flops);
}

double parse_flops(std::string_view text, const SourceLocation& where) {
  static constexpr std::array<Suffix, 15> kSuffixes{{
      {"", 1},
      {"FLOPS", 1},
      {"FLOP/s", 1},
      {"GFLOPS", 1e9},
      {"GFLOP/s", 1e9},
      {"TFLOPS", 1e12},
      {"TFLOP/s", 1e12},
      {"PFLOPS", 1e15},
      {"PFLOP/s", 1e15},
      {"EFLOPS", 1e18},
      {"EFLOP/s", 1e18},
      {"MFLOPS", 1e6},
      {"MFLOP/s", 1e6},
      {"kFLOPS", 1e3},
      {"kFLOP/s", 1e3},
  }};
  const double value = parse_with(text, where, "a compute rate such as '180TFLOPS' or '989TFLOP/s'", kSuffixes,
                                  limits::kMaxFlops, "1 EFLOP/s per GPU");
  if (value < limits::kMinFlops) {
    throw Error(where, fmt::format("'{}' is less than stepcast takes (1 MFLOP/s per GPU)", text));
  }
  return value;
}

namespace {

/// |value| rounded to 3 significant digits, and its decimal exponent (value = m x 10^exponent,
/// 1 <= m < 10), read off the rounded text so that 999.6 counts as 1.00e3.
struct Rounded {
  double magnitude;
  int exponent;
};
Rounded round_to_3(double value) {
  const std::string text = fmt::format("{:.2e}", std::fabs(value));
  const std::size_t e = text.find('e');
  return {std::strtod(text.c_str(), nullptr), std::atoi(text.c_str() + e + 1)};
}

std::string non_finite(double value) {
  if (std::isnan(value)) return "nan";
  return value > 0 ? "inf" : "-inf";
}

struct Unit {
  double scale;
  std::string_view name;
};

/// How a quantity is written: for a table (3 significant digits) or to echo an input (15, the
/// digits a double holds, trailing zeros dropped: what the user wrote reads back), Rounded (4
/// significant digits, trailing zeros dropped: a derived value, whose 15 digits are noise).
enum class Digits : uint8_t { Table, Echo, Rounded };

/// value / scale of the largest unit (in increasing scale) that leaves at least 1 after
/// rounding, or the smallest unit; then its name.
template <std::size_t N>
std::string with_unit(double value, const std::array<Unit, N>& units, Digits digits = Digits::Table) {
  if (!std::isfinite(value)) return non_finite(value) + " " + std::string(units.back().name);
  const Unit* chosen = &units.front();
  for (const Unit& u : units) {
    if (round_to_3(value / u.scale).magnitude >= 1) chosen = &u;
  }
  const double scaled = value / chosen->scale;
  switch (digits) {
    case Digits::Table:
      return format_number(scaled) + " " + std::string(chosen->name);
    case Digits::Echo:
      return fmt::format("{:.15g} {}", scaled, chosen->name);
    case Digits::Rounded:
      return fmt::format("{:.4g} {}", scaled, chosen->name);
  }
  return {};
}

constexpr std::array<Unit, 6> kFlopUnits{
    {{1, "FLOP/s"}, {1e3, "kFLOP/s"}, {1e6, "MFLOP/s"}, {1e9, "GFLOP/s"}, {1e12, "TFLOP/s"}, {1e15, "PFLOP/s"}}};
constexpr std::array<Unit, 4> kTimeUnits{{{1e-9, "ns"}, {1e-6, "us"}, {1e-3, "ms"}, {1, "s"}}};
constexpr std::array<Unit, 6> kByteUnits{
    {{1, "B"}, {1e3, "kB"}, {1e6, "MB"}, {1e9, "GB"}, {1e12, "TB"}, {1e15, "PB"}}};
constexpr std::array<Unit, 6> kByteRateUnits{
    {{1, "B/s"}, {1e3, "kB/s"}, {1e6, "MB/s"}, {1e9, "GB/s"}, {1e12, "TB/s"}, {1e15, "PB/s"}}};
constexpr std::array<Unit, 5> kBitRateUnits{
    {{1, "bps"}, {1e3, "kbps"}, {1e6, "Mbps"}, {1e9, "Gbps"}, {1e12, "Tbps"}}};

}  // namespace

std::string format_number(double value) {
  if (!std::isfinite(value)) return non_finite(value);
  const Rounded r = round_to_3(value);
  if (r.magnitude == 0) return "0";
  // Far below what a table shows: the exponent is the honest way to say how small.
  if (r.exponent < -6) return fmt::format("{:.2e}", value);
  // Far above: 6.91e+22, not 69099999999999996854272 (a double's digits past the 17th are noise).
  if (r.exponent > 15) return fmt::format("{:.2e}", value);
  const int decimals = std::max(0, 2 - r.exponent);
  return fmt::format("{:.{}f}", std::copysign(r.magnitude, value), decimals);
}

std::string format_percent(double fraction) { return format_number(100 * fraction) + "%"; }

std::string format_signed_percent(double fraction) {
  // Two equal step times computed along different paths differ by a double's rounding, about
  // 1e-16 of each; a million times that is still no difference worth a sign.
  constexpr double kRoundingNoise = 1e-10;
  if (std::fabs(fraction) < kRoundingNoise) return "0%";
  return fmt::format("{}{}", fraction > 0 ? "+" : "", format_percent(fraction));
}

std::string format_count(double count, std::string_view one, std::string_view many) {
  const std::string number = std::floor(count) == count && std::fabs(count) < 1e15
                                 ? fmt::format("{:.0f}", count)
                                 : format_number(count);
  return fmt::format("{} {}", number, count == 1 ? one : many);
}

std::string format_flops(double flops) { return with_unit(flops, kFlopUnits); }

std::string format_duration(double seconds) {
  if (seconds == 0) return "0 s";
  return with_unit(seconds, kTimeUnits);
}

std::string format_bytes(double bytes) {
  // Whole bytes below a kilobyte: a size is a count of bytes, "512 B", not "512.0 B".
  if (std::isfinite(bytes) && std::fabs(bytes) < 999.5) return fmt::format("{:.0f} B", bytes);
  return with_unit(bytes, kByteUnits);
}

std::string format_byte_rate(double bytes_per_second) { return with_unit(bytes_per_second, kByteRateUnits); }

std::string format_bandwidth(double bytes_per_second) {
  return with_unit(bytes_per_second * 8, kBitRateUnits, Digits::Echo);
}

std::string echo_byte_rate(double bytes_per_second) {
  return with_unit(bytes_per_second, kByteRateUnits, Digits::Echo);
}

std::string rounded_byte_rate(double bytes_per_second) {
  return with_unit(bytes_per_second, kByteRateUnits, Digits::Rounded);
}

std::string echo_duration(double seconds) {
  if (seconds == 0) return "0 s";
  return with_unit(seconds, kTimeUnits, Digits::Echo);
}

std::string echo_bytes(double bytes) {
  if (std::isfinite(bytes) && std::fabs(bytes) < 999.5) return fmt::format("{:.15g} B", bytes);
  return with_unit(bytes, kByteUnits, Digits::Echo);
}

std::string echo_flops(double flops) { return with_unit(flops, kFlopUnits, Digits::Echo); }

}  // namespace stepcast
