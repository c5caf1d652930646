#include "sweep/result_wire.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace stepcast::sweep::wire {
namespace {

class Writer {
 public:
  template <class T>
  requires std::is_arithmetic_v<T>
  void put(T value) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    out_.append(bytes, sizeof(T));
  }
  void put(const std::string& text) {
    put<uint64_t>(text.size());
    out_.append(text);
  }
  void put(const predict::Utilization& u) {
    put(u.resource);
    put(u.busy);
  }
  void put(const sim::LinkLoad& l) {
    put(l.name);
    put(l.busy);
    put(l.bytes);
  }
  void put(const predict::BucketCollective& b) {
    put(b.bytes);
    put(b.algorithm);
    put(b.protocol);
  }
  template <class T>
  void put(const std::vector<T>& items) {
    put<uint64_t>(items.size());
    for (const T& item : items) put(item);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <class T>
  requires std::is_arithmetic_v<T>
  void get(T& value) {
    need(sizeof(T));
    std::memcpy(&value, in_.data(), sizeof(T));
    in_.remove_prefix(sizeof(T));
  }
  void get(std::string& text) {
    uint64_t n = 0;
    get(n);
    need(n);
    text.assign(in_.data(), n);
    in_.remove_prefix(n);
  }
  void get(predict::Utilization& u) {
    get(u.resource);
    get(u.busy);
  }
  void get(sim::LinkLoad& l) {
    get(l.name);
    get(l.busy);
    get(l.bytes);
  }
  void get(predict::BucketCollective& b) {
    get(b.bytes);
    get(b.algorithm);
    get(b.protocol);
  }
  template <class T>
  void get(std::vector<T>& items) {
    uint64_t n = 0;
    get(n);
    if (n > in_.size()) throw std::runtime_error("result wire: bad count");
    items.resize(n);
    for (T& item : items) get(item);
  }
  [[nodiscard]] bool done() const { return in_.empty(); }

 private:
  void need(uint64_t n) const {
    if (n > in_.size()) throw std::runtime_error("result wire: truncated");
  }
  std::string_view in_;
};

// One list of fields for both directions, so that encode and decode cannot disagree.
// R is const Result for the Writer, Result for the Reader.
template <class IO, class R>
void fields(IO& io, R& r) {
  auto f = [&io](auto& field) {
    if constexpr (std::is_same_v<IO, Writer>) {
      io.put(field);
    } else {
      io.get(field);
    }
  };
  f(r.workers);
  auto predictor = static_cast<uint8_t>(r.predictor);
  f(predictor);
  if constexpr (!std::is_same_v<IO, Writer>) r.predictor = static_cast<predict::Predictor>(predictor);
  f(r.step_time);
  f(r.throughput);
  f(r.speedup);
  f(r.efficiency);
  f(r.bottleneck);
  auto kind = static_cast<uint8_t>(r.bottleneck_kind);
  f(kind);
  if constexpr (!std::is_same_v<IO, Writer>) r.bottleneck_kind = static_cast<predict::BottleneckKind>(kind);
  f(r.bottleneck_resource);
  f(r.breakdown.compute);
  f(r.breakdown.communication_exposed);
  f(r.breakdown.wait);
  f(r.breakdown.tensor);
  f(r.breakdown.context);
  f(r.breakdown.pipeline);
  f(r.breakdown.data);
  f(r.optimizer_step_time);
  f(r.utilization);
  f(r.bytes_sent);
  f(r.bytes_received);
  f(r.events);
  f(r.engine);
  f(r.max_link_flows);
  f(r.links);
  f(r.links_left_out);
  f(r.step_samples.samples);
  f(r.step_samples.mean);
  f(r.step_samples.p50);
  f(r.step_samples.p95);
  f(r.step_samples.min);
  f(r.step_samples.max);
  f(r.step_samples.step_times);
  f(r.saturation_workers);
  f(r.compute_cv);
  f(r.job.samples);
  f(r.job.steps);
  f(r.job.startup_time);
  f(r.job.time);
  f(r.job.throughput);
  f(r.job.epochs);
  f(r.job.epoch_time);
  f(r.job.tokens);
  f(r.cost.gpu_hour);
  f(r.cost.currency);
  f(r.cost.per_step);
  f(r.cost.per_million_tokens);
  f(r.cost.job);
  f(r.mode);
  f(r.gpu_busy_fraction);
  f(r.memory.known);
  f(r.memory.per_worker.parameters);
  f(r.memory.per_worker.gradients);
  f(r.memory.per_worker.optimizer);
  f(r.memory.per_worker.activations);
  f(r.memory.per_worker.buffers);
  f(r.memory.activations_modelled);
  f(r.memory.gpu_memory);
  f(r.memory.outside_allocator);
  f(r.memory.allocator_overhead);
  f(r.tokens.tokens_per_s);
  f(r.tokens.tokens_per_s_per_worker);
  f(r.tokens.model_flops_per_s_per_worker);
  f(r.tokens.mfu);
  f(r.tokens.mfu_6nd);
  f(r.collectives);
  f(r.staleness.pushes);
  f(r.staleness.mean);
  f(r.staleness.p95);
  f(r.staleness.max);
  f(r.async_phases.out_of_step);
  f(r.async_phases.convoy);
  f(r.layout);
  f(r.bubble_fraction);
}

}  // namespace

std::string encode(const Outcome& o) {
  Writer w;
  w.put(o.failed);
  if (o.failed) {
    w.put(o.where.file);
    w.put(o.where.line);
    w.put(o.where.key);
    w.put(o.message);
    return w.take();
  }
  w.put<uint64_t>(o.results.size());
  for (const predict::Result& r : o.results) fields(w, r);
  return w.take();
}

Outcome decode(std::string_view bytes) {
  Reader in(bytes);
  Outcome o;
  in.get(o.failed);
  if (o.failed) {
    in.get(o.where.file);
    in.get(o.where.line);
    in.get(o.where.key);
    in.get(o.message);
  } else {
    uint64_t n = 0;
    in.get(n);
    o.results.resize(n);
    for (predict::Result& r : o.results) fields(in, r);
  }
  if (!in.done()) throw std::runtime_error("result wire: trailing bytes");
  return o;
}

}  // namespace stepcast::sweep::wire
