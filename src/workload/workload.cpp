#include "stepcast/workload/workload.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "stepcast/units.hpp"

namespace stepcast::workload {

double bytes_per_element(Precision precision) {
  switch (precision) {
    case Precision::FP32:
      return 4;
    case Precision::FP16:
    case Precision::BF16:
    case Precision::FP8:  // only the GEMMs' inputs are fp8; what is stored and sent is bf16
      return 2;
  }
  return 4;
}

double Workload::compute_time() const {
  double total = 0;
  for (const Op& op : ops) total += op.duration;
  return total;
}

double Workload::compute_time(OpKind kind) const {
  double total = 0;
  for (const Op& op : ops) {
    if (op.kind == kind) total += op.duration;
  }
  return total;
}

double Workload::parameter_bytes() const {
  double total = 0;
  for (const Tensor& t : tensors) total += t.bytes;
  return total;
}

double Workload::step_time_alone() const {
  // Deps point backwards and each lane runs its ops in index order, so one pass in index order
  // is a valid schedule.
  std::vector<double> lane_free(lanes.size(), 0.0);
  std::vector<double> end(ops.size(), 0.0);
  double last = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    double start = op.lane >= 0 && op.lane < static_cast<int>(lane_free.size()) ? lane_free[op.lane] : 0.0;
    for (int d : op.deps) {
      if (d >= 0 && static_cast<size_t>(d) < i) start = std::max(start, end[d]);
    }
    end[i] = start + op.duration;
    if (op.lane >= 0 && op.lane < static_cast<int>(lane_free.size())) lane_free[op.lane] = end[i];
    last = std::max(last, end[i]);
  }
  return last;
}

double Workload::busy_alone(std::string_view lane_prefix) const {
  // The schedule of step_time_alone(), keeping the intervals of the matching lanes' ops.
  std::vector<double> lane_free(lanes.size(), 0.0);
  std::vector<double> end(ops.size(), 0.0);
  std::vector<std::pair<double, double>> busy;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    const bool on_lane = op.lane >= 0 && op.lane < static_cast<int>(lane_free.size());
    double start = on_lane ? lane_free[op.lane] : 0.0;
    for (int d : op.deps) {
      if (d >= 0 && static_cast<size_t>(d) < i) start = std::max(start, end[d]);
    }
    end[i] = start + op.duration;
    if (on_lane) {
      lane_free[op.lane] = end[i];
      if (lanes[op.lane].starts_with(lane_prefix) && op.duration > 0) busy.emplace_back(start, end[i]);
    }
  }
  std::sort(busy.begin(), busy.end());
  double total = 0, open = 0, close = -1;
  for (const auto& [a, b] : busy) {
    if (a > close) {
      total += std::max(0.0, close - open);
      open = a;
      close = b;
    } else {
      close = std::max(close, b);
    }
  }
  return total + std::max(0.0, close - open);
}

std::size_t Workload::num_samples() const { return ops.empty() ? 0 : ops.front().samples.size(); }

Workload with_sample(const Workload& workload, std::size_t k) {
  const std::size_t count = workload.num_samples();
  if (k >= count) {
    throw std::out_of_range("with_sample: sample " + std::to_string(k) + " of a workload with " +
                            std::to_string(count) + " per-step samples");
  }
  Workload step = workload;
  for (Op& op : step.ops) {
    if (k >= op.samples.size()) {
      throw std::out_of_range("with_sample: op '" + op.name + "' has " + std::to_string(op.samples.size()) +
                              " samples, not " + std::to_string(count));
    }
    op.duration = op.samples[k];
    op.samples.clear();
  }
  return step;
}

double step_variation(const Workload& workload) {
  const std::size_t k = workload.num_samples();
  if (k < 2) return 0;
  std::vector<double> steps(k);
  for (std::size_t i = 0; i < k; ++i) steps[i] = with_sample(workload, i).step_time_alone();
  // Two passes: a variation of 0.1% would lose most of its digits in sum(t^2) - k mean^2.
  double mean = 0;
  for (double t : steps) mean += t / static_cast<double>(k);
  double variance = 0;
  for (double t : steps) variance += (t - mean) * (t - mean) / static_cast<double>(k);
  return mean > 0 ? std::sqrt(variance) / mean : 0;
}

std::vector<Bucket> make_buckets(const Workload& workload, double bucket_bytes, double gradient_share) {
  // Gradients become available in the order their producers run; program order is the op index.
  std::vector<int> order(workload.tensors.size());
  std::iota(order.begin(), order.end(), 0);
  // A gradient no op produces is ready when compute ends: after every produced one.
  auto ready_rank = [&](int t) {
    const int producer = workload.tensors[t].producer;
    return producer < 0 ? std::numeric_limits<int>::max() : producer;
  };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return ready_rank(a) < ready_rank(b); });
  std::vector<Bucket> buckets;
  Bucket current;
  for (int t : order) {
    current.tensors.push_back(t);
    current.bytes += workload.tensors[t].bytes * gradient_share;
    if (current.bytes >= bucket_bytes) {
      buckets.push_back(std::move(current));
      current = Bucket{};
    }
  }
  if (!current.tensors.empty()) buckets.push_back(std::move(current));
  return buckets;
}

std::string validate(const Workload& workload) {
  const int num_ops = static_cast<int>(workload.ops.size());
  if (workload.ops.empty()) return "workload has no ops";
  if (workload.batch_per_worker < 1) return "batch_per_worker must be >= 1";
  if (!(std::isfinite(workload.comm_cpu_per_byte) && workload.comm_cpu_per_byte >= 0 &&
        workload.comm_cpu_per_byte <= limits::kMaxCommCpuPerByte)) {
    return "comm_cpu_per_byte must be a finite number of seconds in [0, 1e-3] per byte: " +
           std::to_string(workload.comm_cpu_per_byte);
  }
  for (int i = 0; i < num_ops; ++i) {
    const Op& op = workload.ops[i];
    if (!(std::isfinite(op.duration) && op.duration >= 0 && op.duration <= limits::kMaxDuration)) {
      return "op '" + op.name + "' has a negative or non-finite duration, or one above 1e6 s: " +
             std::to_string(op.duration);
    }
    if (op.samples.size() != workload.ops.front().samples.size()) {
      return "op '" + op.name + "' has " + std::to_string(op.samples.size()) + " per-step samples, op '" +
             workload.ops.front().name + "' has " + std::to_string(workload.ops.front().samples.size());
    }
    for (double sample : op.samples) {
      if (!(std::isfinite(sample) && sample >= 0 && sample <= limits::kMaxDuration)) {
        return "op '" + op.name + "' has a negative or non-finite per-step sample, or one above 1e6 s: " +
               std::to_string(sample);
      }
    }
    if (op.lane < 0 || op.lane >= static_cast<int>(workload.lanes.size())) {
      return "op '" + op.name + "' is on an unknown lane";
    }
    for (int dep : op.deps) {
      // Deps pointing backwards make program order a topological order: no cycles possible.
      if (dep < 0 || dep >= i) return "op '" + op.name + "' depends on a later or unknown op";
    }
  }
  for (const Tensor& t : workload.tensors) {
    if (!(std::isfinite(t.bytes) && t.bytes >= 0 && t.bytes <= limits::kMaxBytes)) {
      return "tensor '" + t.name + "' has bad size (negative, non-finite or above 1e15 bytes): " +
             std::to_string(t.bytes);
    }
    if (t.producer < -1 || t.producer >= num_ops) return "tensor '" + t.name + "' bad producer";
    for (int c : t.consumers) {
      if (c < 0 || c >= num_ops) return "tensor '" + t.name + "' has an unknown consumer";
    }
  }
  return "";
}

}  // namespace stepcast::workload
