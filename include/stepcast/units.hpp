// Units at the edges: parse "10Gbps", "1.25GB/s", "5us", "25MB" into SI doubles and print
// SI doubles back with units. Inside stepcast every quantity is seconds, bytes or bytes/s.
//
//   double bw = parse_bandwidth("25Gbps", where);   // 3.125e9 bytes/s
//   std::string s = format_duration(0.000005);      // "5 us"
//
// Bandwidth: "bps"/"b/s" suffixes are bits per second, "B/s"/"Bps" bytes per second, with
// decimal prefixes k, M, G, T (and binary Ki, Mi, Gi, Ti for bytes). Sizes: B, kB/KB, MB, GB, TB
// (decimal) and KiB, MiB, GiB, TiB. Durations: ns, us, ms, s, min, h. A bare number is the SI
// base unit (bytes/s, bytes, seconds).
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

/// "180TFLOPS", "989TFLOP/s", "1.8e14" -> FLOP/s, in [1e6, 1e18]. Throws Error naming `where`.
[[nodiscard]] double parse_flops(std::string_view text, const SourceLocation& where);

/// The physical range every input quantity is held to (validate() in scheme/ and predict/, the
/// readers): wider than any real cluster or model, narrow enough that sums over a run stay finite
/// and print as plain numbers (a 1e308 s latency would overflow the clock to inf).
namespace limits {
inline constexpr double kMinBandwidth = 1e3;   ///< bytes/s (8 kbps)
inline constexpr double kMaxBandwidth = 1e15;  ///< bytes/s (8 Pbps)
inline constexpr double kMaxLatency = 10;      ///< s, one hop or one collective step
inline constexpr double kMaxDuration = 1e6;    ///< s, one op, one step, one apply (11.6 days)
inline constexpr double kMaxBytes = 1e15;      ///< one tensor, bucket, collective, start-up read (1 PB)
inline constexpr double kMaxCv = 10;           ///< coefficient of variation of a step's compute
inline constexpr double kMaxSamples = 1e15;    ///< samples in a job
inline constexpr double kMinFlops = 1e6;       ///< FLOP/s of one GPU
inline constexpr double kMaxFlops = 1e18;      ///< FLOP/s of one GPU
}  // namespace limits

/// Seconds with an adapted unit, 3 significant digits: "1.23 ms", "4.56 s", "789 ns".
[[nodiscard]] std::string format_duration(double seconds);
/// Bytes with a decimal unit, 3 significant digits: "25 MB", "1.5 GB".
[[nodiscard]] std::string format_bytes(double bytes);
/// FLOP/s with a decimal unit, 3 significant digits: "180 TFLOP/s".
[[nodiscard]] std::string format_flops(double flops);
/// Bytes/s as network engineers write it, in bits: "100 Gbps", "9.6 Gbps".
[[nodiscard]] std::string format_bandwidth(double bytes_per_second);

}  // namespace stepcast
