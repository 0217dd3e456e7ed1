// Portable random draws on space::Rng. The <random> distributions are
// implementation-defined, so a seed would give different studies under
// different standard libraries; these helpers give the same sequence
// everywhere.
#ifndef METAOPT_CORE_SPACE_RANDOM_H_
#define METAOPT_CORE_SPACE_RANDOM_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

namespace metaopt::space {

// The random number generator used throughout core/ (seeded per study; never
// global).
using Rng = std::mt19937_64;

// A uniform double in [0, 1) with 53 random bits.
inline double Uniform01(Rng& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// A uniform integer in [0, n) without modulo bias. Requires n >= 1.
inline uint64_t UniformIndex(Rng& rng, uint64_t n) {
  if (n <= 1) return 0;
  // Reject the top partial bucket so that every residue is equally likely.
  const uint64_t limit = std::numeric_limits<uint64_t>::max() -
                         std::numeric_limits<uint64_t>::max() % n;
  uint64_t r;
  do {
    r = rng();
  } while (r >= limit);
  return r % n;
}

// A standard normal draw (Box-Muller; one of the pair is discarded to stay
// stateless).
inline double StandardNormal(Rng& rng) {
  const double u1 = 1.0 - Uniform01(rng);  // (0, 1]: log(u1) is finite.
  const double u2 = Uniform01(rng);
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

}  // namespace metaopt::space

#endif  // METAOPT_CORE_SPACE_RANDOM_H_
