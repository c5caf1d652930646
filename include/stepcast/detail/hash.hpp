// Seeded, order-independent pseudo-random keys: the splitmix64 finalizer. Used wherever a random
// choice must depend only on (seed, identity), not on the order of events: ECMP path choice,
// the per-step parameter send order, async start offsets.
//
//   uint64_t key = stepcast::mix64(seed ^ stepcast::mix64(worker));
#pragma once

#include <cstdint>

namespace stepcast {

[[nodiscard]] constexpr uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// The top 53 bits of a key as a double, uniform in [0, 1): every value a multiple of 2^-53.
[[nodiscard]] constexpr double unit_interval(uint64_t key) {
  return static_cast<double>(key >> 11) * 0x1.0p-53;
}

}  // namespace stepcast
