// Units at the edges: parse "10Gbps", "1.25GB/s", "5us", "25MB" into SI doubles and print
// SI doubles back with units. Inside stepcast every quantity is seconds, bytes or bytes/s.
//
//   double bw = parse_bandwidth("25Gbps", where);   // 3.125e9 bytes/s
//   std::string s = format_duration(0.000005);      // "5.00 us"
//
// Bandwidth: "bps"/"b/s" suffixes are bits per second, "B/s"/"Bps" bytes per second, with
// decimal prefixes k, M, G, T (and binary Ki, Mi, Gi, Ti for bytes). Sizes: B, kB/KB, MB, GB, TB
// (decimal) and KiB, MiB, GiB, TiB. Durations: ns, us, ms, s, min, h. A bare number is the SI
// base unit (bytes/s, bytes, seconds), except in the _with_unit forms, where it is an error.
#pragma once

#include <string>
#include <string_view>

#include "stepcast/error.hpp"

namespace stepcast {

/// "25Gbps" (bits) or "3.1GB/s" (bytes) -> bytes/s, > 0. Throws Error naming `where`.
[[nodiscard]] double parse_bandwidth(std::string_view text, const SourceLocation& where);
/// "5us", "292ms", "1.5s" -> seconds, >= 0. Throws Error naming `where`.
[[nodiscard]] double parse_duration(std::string_view text, const SourceLocation& where);
/// "25MB", "1GiB", "4096" -> bytes, >= 0. Throws Error naming `where`.
[[nodiscard]] double parse_bytes(std::string_view text, const SourceLocation& where);
/// As parse_bytes, parse_bandwidth, parse_duration and parse_flops, for what a user writes
/// (scenario keys, options): a bare number other than 0 is an error ("80" could be bytes, MB or
/// GB; "5" seconds or microseconds), naming `where` and the units taken. Data files (traces,
/// tables) whose columns say their unit use the plain forms.
[[nodiscard]] double parse_bytes_with_unit(std::string_view text, const SourceLocation& where);
[[nodiscard]] double parse_bandwidth_with_unit(std::string_view text, const SourceLocation& where);
[[nodiscard]] double parse_duration_with_unit(std::string_view text, const SourceLocation& where);
[[nodiscard]] double parse_flops_with_unit(std::string_view text, const SourceLocation& where);

/// "180TFLOPS", "989TFLOP/s", "1.8e14" -> FLOP/s, in [1e6, 1e18]. Throws Error naming `where`.
[[nodiscard]] double parse_flops(std::string_view text, const SourceLocation& where);

/// The physical range every input quantity is held to (validate() in scheme/ and predict/, the
/// readers): wider than any real cluster or model, narrow enough that sums over a run stay finite
/// and print as plain numbers (a 1e308 s latency would overflow the clock to inf).
namespace limits {
inline constexpr double kMinBandwidth = 1e3;        ///< bytes/s (8 kbps)
inline constexpr double kMaxBandwidth = 1e15;       ///< bytes/s (8 Pbps)
inline constexpr double kMaxLatency = 10;           ///< s, one hop or one collective step
inline constexpr double kMaxDuration = 1e6;         ///< s, one op, one step, one apply (11.6 days)
inline constexpr double kMaxCommCpuPerByte = 1e-3;  ///< s of host CPU per byte sent (a CPU at 1 kB/s)
inline constexpr double kMaxBytes = 1e15;           ///< one tensor, bucket, collective, start-up read (1 PB)
inline constexpr double kMaxCv = 10;                ///< coefficient of variation of a step's compute
inline constexpr double kMaxSamples = 1e15;         ///< samples in a job
inline constexpr double kMaxTokens = 1e18;          ///< tokens in a job (Llama 3 trained on 1.5e13)
inline constexpr double kMaxGpuHour = 1e6;          ///< money per GPU-hour, in any currency
inline constexpr double kMinFlops = 1e6;            ///< FLOP/s of one GPU
inline constexpr double kMaxFlops = 1e18;           ///< FLOP/s of one GPU
}  // namespace limits

// The one number format of every table and text report: 3 significant digits, trailing zeros
// kept so that a column reads at one precision ("16.0 ms", "1.60 s"), never an exponent for
// what a table shows (a large number is rounded but written out: 1206.3 is "1210", 2.12e7 s is
// "21200000 s"), and a unit chosen so that the number is below 1000 ("999.6 ms" is "1.00 s").
// Non-finite values print as "nan", "inf", "-inf".

/// 3 significant digits, no exponent: "1210" (1206.3), "45.7", "0.512", "1.00", "0".
[[nodiscard]] std::string format_number(double value);
/// A fraction as a percentage: 0.5 -> "50.0%", 0.987 -> "98.7%", 1 -> "100%".
[[nodiscard]] std::string format_percent(double fraction);
/// A relative change with its sign, 3 significant digits however small: 0.251 -> "+25.1%",
/// -0.04 -> "-4.00%", -0.000452 -> "-0.0452%"; "0%" for zero and below 1e-10 either side (a
/// double's rounding of two equal times, which would print as "-1.00e-14%").
[[nodiscard]] std::string format_signed_percent(double fraction);
/// A count and its noun, singular for exactly one: "1 flow", "16 flows", "0 flows".
[[nodiscard]] std::string format_count(double count, std::string_view one, std::string_view many);
/// Seconds: "789 ns", "1.23 ms", "4.56 s", "10760 s".
[[nodiscard]] std::string format_duration(double seconds);
/// Bytes with a decimal unit: "512 B", "25.0 MB", "1.50 GB".
[[nodiscard]] std::string format_bytes(double bytes);
/// FLOP/s with a decimal unit: "180 TFLOP/s".
[[nodiscard]] std::string format_flops(double flops);
/// Bytes/s with a decimal unit, as every table writes bandwidth: "3.13 GB/s".
[[nodiscard]] std::string format_byte_rate(double bytes_per_second);

// Echoing an input (the resolved scenario of --json and `stepcast options`, a title that repeats
// a flag): the same units with up to 15 significant digits and no trailing zeros, so that what
// the user wrote reads back exactly ("10 Gbps", "291.7 ms", "25 MB").

/// Bytes/s in bits, for a title that repeats a flag usually given in bits (`collective
/// --nic-bandwidth 100Gbps`): "100 Gbps", "9.6 Gbps".
[[nodiscard]] std::string format_bandwidth(double bytes_per_second);
/// Bytes/s, as the resolved scenario echoes a bandwidth whatever unit it was given in: "450 GB/s",
/// "1.25 GB/s" (10Gbps), "3.125 GB/s" (25Gbps); reads back as the same double.
[[nodiscard]] std::string echo_byte_rate(double bytes_per_second);
/// Bytes/s of a derived value (NCCL's tables), 4 significant digits: "9.474 GB/s", "20.4 GB/s".
[[nodiscard]] std::string rounded_byte_rate(double bytes_per_second);
/// Seconds: "2 us", "291.7 ms".
[[nodiscard]] std::string echo_duration(double seconds);
/// Bytes: "512 B", "25 MB", "1.048576 MB".
[[nodiscard]] std::string echo_bytes(double bytes);
/// FLOP/s: "180 TFLOP/s".
[[nodiscard]] std::string echo_flops(double flops);

}  // namespace stepcast
