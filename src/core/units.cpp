#include "stepcast/units.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
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
}  // namespace

double parse_bandwidth(std::string_view text, const SourceLocation& where) {
  static constexpr std::array<Suffix, 22> kSuffixes{{
      {"", 1},         {"B/s", 1},      {"Bps", 1},      {"bps", 0.125},       {"b/s", 0.125},
      {"kbps", 125},   {"Kbps", 125},   {"Mbps", 125e3}, {"Gbps", 125e6},      {"Tbps", 125e9},
      {"Gb/s", 125e6}, {"Mb/s", 125e3}, {"kB/s", 1e3},   {"KB/s", 1e3},        {"MB/s", 1e6},
      {"GB/s", 1e9},   {"TB/s", 1e12},  {"KiB/s", kKi},  {"MiB/s", kKi * kKi}, {"GiB/s", kKi * kKi * kKi},
      {"GBps", 1e9},   {"MBps", 1e6},
  }};
  double value = parse_with(text, where, "a bandwidth such as '25Gbps' or '3GB/s'", kSuffixes,
                            limits::kMaxBandwidth, "8 Pbps");
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
  static constexpr std::array<Suffix, 11> kSuffixes{{
      {"", 1},
      {"B", 1},
      {"kB", 1e3},
      {"KB", 1e3},
      {"MB", 1e6},
      {"GB", 1e9},
      {"TB", 1e12},
      {"KiB", kKi},
      {"MiB", kKi * kKi},
      {"GiB", kKi * kKi * kKi},
      {"TiB", kKi * kKi * kKi * kKi},
  }};
  return parse_with(text, where, "a size such as '25MB' or '1GiB'", kSuffixes, limits::kMaxBytes, "1 PB");
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

std::string format_flops(double flops) {
  const double a = std::fabs(flops);
  if (a >= 1e15) return fmt::format("{:.3g} PFLOP/s", flops / 1e15);
  if (a >= 1e12) return fmt::format("{:.3g} TFLOP/s", flops / 1e12);
  if (a >= 1e9) return fmt::format("{:.3g} GFLOP/s", flops / 1e9);
  return fmt::format("{:.3g} FLOP/s", flops);
}

std::string format_duration(double seconds) {
  double a = std::fabs(seconds);
  if (a == 0) return "0 s";
  if (a < 1e-6) return fmt::format("{:.3g} ns", seconds * 1e9);
  if (a < 1e-3) return fmt::format("{:.3g} us", seconds * 1e6);
  if (a < 1) return fmt::format("{:.3g} ms", seconds * 1e3);
  return fmt::format("{:.3g} s", seconds);
}

std::string format_bytes(double bytes) {
  double a = std::fabs(bytes);
  if (a < 1e3) return fmt::format("{:.0f} B", bytes);
  if (a < 1e6) return fmt::format("{:.3g} kB", bytes / 1e3);
  if (a < 1e9) return fmt::format("{:.3g} MB", bytes / 1e6);
  if (a < 1e12) return fmt::format("{:.3g} GB", bytes / 1e9);
  return fmt::format("{:.3g} TB", bytes / 1e12);
}

std::string format_bandwidth(double bytes_per_second) {
  double bits = bytes_per_second * 8;
  if (bits < 1e6) return fmt::format("{:.3g} kbps", bits / 1e3);
  if (bits < 1e9) return fmt::format("{:.3g} Mbps", bits / 1e6);
  if (bits < 1e12) return fmt::format("{:.3g} Gbps", bits / 1e9);
  return fmt::format("{:.3g} Tbps", bits / 1e12);
}

}  // namespace stepcast
