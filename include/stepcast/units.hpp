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

/// Seconds with an adapted unit, 3 significant digits: "1.23 ms", "4.56 s", "789 ns".
[[nodiscard]] std::string format_duration(double seconds);
/// Bytes with a decimal unit, 3 significant digits: "25 MB", "1.5 GB".
[[nodiscard]] std::string format_bytes(double bytes);
/// Bytes/s as network engineers write it, in bits: "100 Gbps", "9.6 Gbps".
[[nodiscard]] std::string format_bandwidth(double bytes_per_second);

}  // namespace stepcast
