// The byte scanner of the Kineto reader (private to src/profile; tests and the trace reading
// benchmark use it too): given the bytes after the opening '{' or '[' of a JSON object or array,
// it finds the byte one past the matching close, tracking strings, escapes and nesting. It does
// not validate JSON (simdjson does that for each event); what it does with invalid JSON is
// defined by scan_composite_scalar, and every other scanner gives exactly the same results.
#pragma once

#include <cstddef>
#include <limits>

namespace stepcast::profile::detail {

/// Where a scan stopped when the bytes ran out: nesting depth (1 just after the opening byte)
/// and whether it is inside a string. A scan resumes from it once more bytes are there.
struct ScanState {
  int depth = 1;
  bool in_string = false;
  friend bool operator==(const ScanState&, const ScanState&) = default;
};

/// Returned by a scan that consumed every byte of [i, n) without closing the composite.
inline constexpr size_t kScanIncomplete = std::numeric_limits<size_t>::max();

/// Signature shared by every scanner: scans p[i, n) from `state` and returns one past the byte
/// that closes the composite (depth 0), or kScanIncomplete with `state` updated. `{` and `[`
/// open, `}` and `]` close (the kinds are not matched), outside strings. Inside a string, a '"'
/// ends it when the run of backslashes right before it has even length; outside, every '"'
/// opens one. Precondition: the opening byte of the composite lies in p before i (the scanners
/// look back over backslashes before a '"', and stop at the opening quote of the string).
/// Only bytes of [i, n) are read, apart from that look-back.
using ScanFn = size_t (*)(const char* p, size_t i, size_t n, ScanState& state);

/// Inside a string at i (its opening quote lies in p before i): one past the '"' that closes it
/// (the run of backslashes before it has even length), or kScanIncomplete when [i, n) ends first.
size_t string_end(const char* p, size_t i, size_t n);

/// The reference: a byte loop with a class table outside strings and memchr inside.
size_t scan_composite_scalar(const char* p, size_t i, size_t n, ScanState& state);

/// Block scanner, 64 bytes a step as in simdjson's stage 1: masks of '"', '\\', '{' '[' and
/// '}' ']', escaped quotes from the backslash runs (carried across blocks), the in-string mask
/// by a prefix XOR of the quote bits, then a walk over the brace/bracket bits outside strings.
/// A block with a backslash outside strings (invalid JSON, where the escape logic and the
/// reference could disagree) and the last < 64 bytes go through scan_composite_scalar.
/// This one builds the masks from 8-byte words (SWAR, any architecture; 1.2x the scalar).
size_t scan_composite_block_portable(const char* p, size_t i, size_t n, ScanState& state);

/// The same with SSE2 compares (x86-64 baseline); nullptr elsewhere.
ScanFn scan_composite_block_sse2();

/// The same with AVX2 compares and a carry-less multiply for the prefix XOR; nullptr where not
/// compiled (not x86-64) or when the CPU lacks AVX2 or PCLMULQDQ (checked at run time).
ScanFn scan_composite_block_avx2();

enum class ScannerKind {
  Scalar,  ///< scan_composite_scalar
  Block,   ///< the fastest block scanner this CPU runs: AVX2, else SSE2, else portable
};

/// The scanner of that kind on this machine.
ScanFn scanner(ScannerKind kind);

/// "scalar", "block-portable", "block-sse2" or "block-avx2"; "other" for any other function.
const char* scanner_name(ScanFn fn);

/// The scanner of the Kineto readers created from now on; nullptr restores the default,
/// scanner(ScannerKind::Block). Lets the benchmark compare scanners in one run and the tests
/// read traces with each.
void set_reader_scanner(ScanFn fn);
ScanFn reader_scanner();

}  // namespace stepcast::profile::detail
