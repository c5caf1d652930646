#include <cmath>
#include <numbers>

#include "stepcast/predict/predict.hpp"
#include "stepcast/detail/scheme/costs.hpp"

namespace stepcast::predict {

const char* to_string(Predictor predictor) {
  return name_c_str(predictor);
}

double ring_allreduce_time(double bytes, int n, double bw, double latency) {
  if (n <= 1) return 0;
  // 2 (N-1) steps of latency, and the bytes each worker sends (the ring's 2 (N-1)/N S, counted
  // where the predictors count them) through its link.
  return 2.0 * (n - 1) * latency +
         scheme::allreduce_bytes_per_worker(scheme::AllReduceAlgorithm::Ring, n, 1, bytes) / bw;
}

double expected_slowest_factor(int n, double cv) {
  if (n <= 1 || !(cv > 0)) return 1;
  // E[max] = integral of exp(mu + sigma z) n phi(z) Phi(z)^(n-1) dz, Simpson's rule on [-10, 10].
  const double sigma2 = std::log1p(cv * cv);
  const double sigma = std::sqrt(sigma2), mu = -sigma2 / 2;
  constexpr int kIntervals = 4000;
  constexpr double kLo = -10, kHi = 10, kH = (kHi - kLo) / kIntervals;
  double sum = 0;
  for (int i = 0; i <= kIntervals; ++i) {
    const double z = kLo + i * kH;
    const double phi = std::exp(-z * z / 2) / std::sqrt(2 * std::numbers::pi);
    const double cdf = 0.5 * std::erfc(-z / std::numbers::sqrt2);
    const double f = std::exp(mu + sigma * z) * n * phi * std::pow(cdf, n - 1);
    sum += f * (i == 0 || i == kIntervals ? 1 : (i % 2 == 1 ? 4 : 2));
  }
  return sum * kH / 3;
}

}  // namespace stepcast::predict
