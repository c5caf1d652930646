// Byte scanners of the Kineto reader: the scalar reference and the 64-byte block scanner (see
// event_scanner.hpp). The block scanner is simdjson's stage 1 cut down to what finding the end of
// an event needs: quotes, backslashes, and the braces and brackets outside strings.
#include "profile/event_scanner.hpp"

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#define STEPCAST_SCANNER_X86_64 1
#include <immintrin.h>
#else
#define STEPCAST_SCANNER_X86_64 0
#endif

namespace stepcast::profile::detail {

namespace {

// ---- scalar reference -------------------------------------------------------------------------

// Byte classes outside strings.
enum : uint8_t { kPlain = 0, kQuote = 1, kOpen = 2, kClose = 3 };
constexpr std::array<uint8_t, 256> make_classes() {
  std::array<uint8_t, 256> t{};
  t['"'] = kQuote;
  t['{'] = kOpen;
  t['['] = kOpen;
  t['}'] = kClose;
  t[']'] = kClose;
  return t;
}
constexpr std::array<uint8_t, 256> kClasses = make_classes();

}  // namespace

size_t string_end(const char* p, size_t i, size_t n) {
  while (i < n) {
    const auto* q = static_cast<const char*>(std::memchr(p + i, '"', n - i));
    if (q == nullptr) return kScanIncomplete;
    const auto qi = static_cast<size_t>(q - p);
    size_t b = qi;
    // The opening quote lies before qi and is no backslash, so this stops in time.
    while (p[b - 1] == '\\') --b;
    i = qi + 1;
    if (((qi - b) & 1u) == 0) return i;
  }
  return kScanIncomplete;
}

size_t scan_composite_scalar(const char* p, size_t i, size_t n, ScanState& state) {
  int depth = state.depth;
  bool in_string = state.in_string;
  while (i < n) {
    if (in_string) {
      const size_t end = string_end(p, i, n);
      if (end == kScanIncomplete) {
        i = n;
        break;
      }
      i = end;
      in_string = false;
      continue;
    }
    switch (kClasses[static_cast<unsigned char>(p[i++])]) {
      case kPlain:
        break;
      case kQuote:
        in_string = true;
        break;
      case kOpen:
        ++depth;
        break;
      default:
        if (--depth == 0) {
          state = {0, false};
          return i;
        }
    }
  }
  state = {depth, in_string};
  return kScanIncomplete;
}

namespace {

// ---- block scanner ----------------------------------------------------------------------------

/// Bit k of each mask is set when byte k of the 64-byte block is that character.
struct BlockMasks {
  uint64_t quote;
  uint64_t backslash;
  uint64_t open;   // '{' or '['
  uint64_t close;  // '}' or ']'
};

/// Escaped characters of a block: those right after an odd-length run of backslashes (the
/// escape bits of the run alternate from its start). `prev_escaped` carries whether the first
/// byte of the next block is escaped. simdjson's find_escaped_branchless.
inline uint64_t find_escaped(uint64_t backslash, uint64_t& prev_escaped) {
  backslash &= ~prev_escaped;  // an escaped backslash starts no escape
  const uint64_t follows_escape = backslash << 1 | prev_escaped;
  constexpr uint64_t kEvenBits = 0x5555555555555555ULL;
  // Adding the starts of the runs that begin on odd bits to the backslashes carries each such
  // run out of its top, which tells apart runs starting on even and on odd bits.
  const uint64_t odd_sequence_starts = backslash & ~kEvenBits & ~follows_escape;
  uint64_t sequences_starting_on_even_bits = 0;
  prev_escaped =
      __builtin_add_overflow(odd_sequence_starts, backslash, &sequences_starting_on_even_bits) ? 1 : 0;
  const uint64_t invert_mask = sequences_starting_on_even_bits << 1;
  return (kEvenBits ^ invert_mask) & follows_escape;
}

/// Bit k set when an odd number of bits 0..k of x are set: 6 shift-xors.
inline uint64_t prefix_xor_portable(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

/// Whether the byte at i is escaped, for a scan entering at i inside a string: the backslash run
/// before it (which stops at the opening quote at the latest) has odd length.
inline uint64_t escaped_at(const char* p, size_t i, bool in_string) {
  if (!in_string) return 0;
  size_t b = i;
  while (p[b - 1] == '\\') --b;
  return (i - b) & 1u;
}

/// The block loop, with the masks from `Ops::masks` and the prefix XOR from `Ops::prefix_xor`.
template <class Ops>
inline size_t scan_blocks(const char* p, size_t i, size_t n, ScanState& state) {
  int depth = state.depth;
  bool in_string = state.in_string;
  uint64_t prev_escaped = escaped_at(p, i, in_string);
  while (n - i >= 64) {
    const BlockMasks m = Ops::masks(p + i);
    uint64_t quote = m.quote;
    if ((m.backslash | prev_escaped) != 0) quote &= ~find_escaped(m.backslash, prev_escaped);
    // Bit k: byte k is inside a string (its opening quote counts as inside, its closing not).
    const uint64_t str = Ops::prefix_xor(quote) ^ (in_string ? ~uint64_t{0} : 0);
    if ((m.backslash & ~str) != 0) {
      // A backslash outside strings is invalid JSON; there the escape logic above may disagree
      // with the reference (which lets every '"' outside a string open one), so the reference
      // scans this block. The state at its start is the same for both.
      ScanState s{depth, in_string};
      if (const size_t r = scan_composite_scalar(p, i, i + 64, s); r != kScanIncomplete) {
        state = s;
        return r;
      }
      depth = s.depth;
      in_string = s.in_string;
      i += 64;
      prev_escaped = escaped_at(p, i, in_string);
      continue;
    }
    // Braces and brackets outside strings, in order; usually none or a few per block.
    for (uint64_t s = (m.open | m.close) & ~str; s != 0; s &= s - 1) {
      const int k = std::countr_zero(s);
      if ((m.open >> k) & 1u) {
        ++depth;
      } else if (--depth == 0) {
        state = {0, false};
        return i + static_cast<size_t>(k) + 1;
      }
    }
    in_string = (str >> 63) != 0;
    i += 64;
  }
  state = {depth, in_string};
  return scan_composite_scalar(p, i, n, state);
}

/// Masks from 8-byte words (SWAR): a byte of w ^ broadcast(c) is zero where w has c; the zero
/// test below is exact (no carries between bytes), and the multiply gathers the eight 0x80 bits.
struct PortableOps {
  static constexpr uint64_t kOnes = 0x0101010101010101ULL;
  static constexpr uint64_t kLow7 = 0x7F7F7F7F7F7F7F7FULL;
  static uint64_t gather(uint64_t high_bits) { return ((high_bits >> 7) * 0x0102040810204080ULL) >> 56; }
  static uint64_t eq(uint64_t w, unsigned char c) {
    const uint64_t y = w ^ (kOnes * c);
    return gather(~(((y & kLow7) + kLow7) | y) & ~kLow7);
  }
  static BlockMasks masks(const char* p) {
    BlockMasks m{0, 0, 0, 0};
    for (unsigned k = 0; k < 8; ++k) {
      uint64_t w = 0;
      std::memcpy(&w, p + 8 * k, 8);
      if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
      const uint64_t folded = w | (kOnes * 0x20);  // '[' | 0x20 == '{', ']' | 0x20 == '}'
      m.quote |= eq(w, '"') << (8 * k);
      m.backslash |= eq(w, '\\') << (8 * k);
      m.open |= eq(folded, '{') << (8 * k);
      m.close |= eq(folded, '}') << (8 * k);
    }
    return m;
  }
  static uint64_t prefix_xor(uint64_t x) { return prefix_xor_portable(x); }
};

#if STEPCAST_SCANNER_X86_64

struct Sse2Ops {
  static uint64_t bits(__m128i v, __m128i c) {
    return static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, c)));
  }
  static BlockMasks masks(const char* p) {
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i open = _mm_set1_epi8('{');
    const __m128i close = _mm_set1_epi8('}');
    const __m128i case_bit = _mm_set1_epi8(0x20);  // '[' | 0x20 == '{', ']' | 0x20 == '}'
    BlockMasks m{0, 0, 0, 0};
    for (int k = 0; k < 4; ++k) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
      const __m128i folded = _mm_or_si128(v, case_bit);
      m.quote |= bits(v, quote) << (16 * k);
      m.backslash |= bits(v, backslash) << (16 * k);
      m.open |= bits(folded, open) << (16 * k);
      m.close |= bits(folded, close) << (16 * k);
    }
    return m;
  }
  static uint64_t prefix_xor(uint64_t x) { return prefix_xor_portable(x); }
};

size_t scan_sse2(const char* p, size_t i, size_t n, ScanState& state) {
  return scan_blocks<Sse2Ops>(p, i, n, state);
}

#define STEPCAST_AVX2 __attribute__((target("avx2,pclmul")))

struct Avx2Ops {
  STEPCAST_AVX2 static uint64_t bits(__m256i v, __m256i c) {
    return static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, c)));
  }
  STEPCAST_AVX2 static BlockMasks masks(const char* p) {
    const __m256i quote = _mm256_set1_epi8('"');
    const __m256i backslash = _mm256_set1_epi8('\\');
    const __m256i open = _mm256_set1_epi8('{');
    const __m256i close = _mm256_set1_epi8('}');
    const __m256i case_bit = _mm256_set1_epi8(0x20);
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
    const __m256i flo = _mm256_or_si256(lo, case_bit);
    const __m256i fhi = _mm256_or_si256(hi, case_bit);
    return {bits(lo, quote) | bits(hi, quote) << 32, bits(lo, backslash) | bits(hi, backslash) << 32,
            bits(flo, open) | bits(fhi, open) << 32, bits(flo, close) | bits(fhi, close) << 32};
  }
  STEPCAST_AVX2 static uint64_t prefix_xor(uint64_t x) {
    // Carry-less multiply by all ones: bit k of the product is the XOR of bits 0..k of x.
    const __m128i all_ones = _mm_set1_epi8(static_cast<char>(0xFF));
    const __m128i product = _mm_clmulepi64_si128(_mm_set_epi64x(0, static_cast<int64_t>(x)), all_ones, 0);
    return static_cast<uint64_t>(_mm_cvtsi128_si64(product));
  }
};

// flatten: the block loop and the AVX2 mask code are inlined here, under this function's target.
STEPCAST_AVX2 __attribute__((flatten)) size_t scan_avx2(const char* p, size_t i, size_t n, ScanState& state) {
  return scan_blocks<Avx2Ops>(p, i, n, state);
}

#endif

std::atomic<ScanFn> g_reader_scanner{nullptr};  // nullptr: scanner(ScannerKind::Block)

}  // namespace

size_t scan_composite_block_portable(const char* p, size_t i, size_t n, ScanState& state) {
  return scan_blocks<PortableOps>(p, i, n, state);
}

#if STEPCAST_SCANNER_X86_64
ScanFn scan_composite_block_sse2() { return &scan_sse2; }

ScanFn scan_composite_block_avx2() {
  static const ScanFn fn = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("pclmul") ? &scan_avx2 : nullptr;
  }();
  return fn;
}
#else
ScanFn scan_composite_block_sse2() { return nullptr; }
ScanFn scan_composite_block_avx2() { return nullptr; }
#endif

ScanFn scanner(ScannerKind kind) {
  if (kind == ScannerKind::Scalar) return &scan_composite_scalar;
  if (ScanFn fn = scan_composite_block_avx2(); fn != nullptr) return fn;
  if (ScanFn fn = scan_composite_block_sse2(); fn != nullptr) return fn;
  return &scan_composite_block_portable;
}

const char* scanner_name(ScanFn fn) {
  if (fn == nullptr) return "other";
  if (fn == &scan_composite_scalar) return "scalar";
  if (fn == &scan_composite_block_portable) return "block-portable";
  if (fn == scan_composite_block_sse2()) return "block-sse2";
  if (fn == scan_composite_block_avx2()) return "block-avx2";
  return "other";
}

void set_reader_scanner(ScanFn fn) { g_reader_scanner.store(fn, std::memory_order_relaxed); }

ScanFn reader_scanner() {
  const ScanFn fn = g_reader_scanner.load(std::memory_order_relaxed);
  return fn != nullptr ? fn : scanner(ScannerKind::Block);
}

}  // namespace stepcast::profile::detail
