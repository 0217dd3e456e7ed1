#ifndef METAOPT_TESTS_TESTUTIL_SAMPLE_FAMILIES_H_
#define METAOPT_TESTS_TESTUTIL_SAMPLE_FAMILIES_H_

#include <cmath>
#include <cstdint>

#include "core/space/random.h"
#include "core/surrogate/dataset2vec.h"

namespace metaopt::testing {

// Four generators of classification datasets (n rows, m features, 3 one-hot
// classes) that differ in their marginals, their feature dependence and how
// the labels depend on the features: 0 Gaussian, 1 flat, 2 correlated
// features, 3 skewed. For the meta-feature extractors' identification tests.
inline surrogate::RawSample SampleFamily(int family, int n, int m,
                                         uint64_t seed) {
  space::Rng rng(seed);
  surrogate::RawSample s;
  s.x.resize(n, m);
  s.y = Eigen::MatrixXd::Zero(n, 3);
  for (int i = 0; i < n; ++i) {
    const double z = space::StandardNormal(rng);
    for (int k = 0; k < m; ++k) {
      const double e = space::StandardNormal(rng);
      switch (family) {
        case 0:
          s.x(i, k) = e;
          break;  // Gaussian
        case 1:
          s.x(i, k) = 3.4 * space::Uniform01(rng) - 1.7;
          break;  // flat
        case 2:
          s.x(i, k) = z + 0.2 * e;
          break;  // correlated
        default:
          s.x(i, k) = -std::log(1.0 - space::Uniform01(rng)) - 1;
          break;
      }
    }
    int label = 0;
    switch (family) {
      case 0:
        label = s.x(i, 0) > 0;
        break;
      case 1:
        label = static_cast<int>(space::UniformIndex(rng, 3));
        break;
      case 2:
        label = z > 0;
        break;
      default:
        label = std::abs(s.x(i, 0)) > 1 ? 2 : 0;
        break;
    }
    s.y(i, label) = 1.0;
  }
  return s;
}

}  // namespace metaopt::testing

#endif  // METAOPT_TESTS_TESTUTIL_SAMPLE_FAMILIES_H_
