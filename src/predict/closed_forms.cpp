#include "stepcast/predict/predict.hpp"

namespace stepcast::predict {

const char* to_string(Predictor predictor) {
  switch (predictor) {
    case Predictor::Fine:
      return "fine";
    case Predictor::Coarse:
      return "coarse";
    case Predictor::Analytic:
      return "analytic";
  }
  return "?";
}

double ring_allreduce_time(double bytes, int n, double bw, double latency) {
  if (n <= 1) return 0;
  return 2.0 * (n - 1) * (latency + bytes / (n * bw));
}

}  // namespace stepcast::predict
