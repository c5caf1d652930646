#include "stepcast/detail/profile/layer_times.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "stepcast/detail/profile/kineto.hpp"
#include "stepcast/detail/profile/layer_table.hpp"
#include "stepcast/error.hpp"

namespace stepcast::profile {
namespace {

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

std::string layer_of_op(const std::string& op_name) {
  const size_t colon = op_name.find(':');
  return colon == std::string::npos ? op_name : op_name.substr(colon + 1);
}

LayerTimes from_layer_table(const std::string& path) {
  const workload::Workload w = read_layer_table(path);
  LayerTimes t{path, {}};
  std::map<std::string, size_t> index;
  for (const workload::Op& op : w.ops) {
    const std::string layer = layer_of_op(op.name);
    auto [it, added] = index.try_emplace(layer, t.layers.size());
    if (added) t.layers.push_back({layer, 0, 0});
    LayerTime& lt = t.layers[it->second];
    (op.kind == workload::OpKind::Backward ? lt.backward : lt.forward) += op.duration;
  }
  return t;
}

LayerTimes from_kineto(const std::string& path) {
  const KinetoTrace trace = read_kineto_trace(path);
  constexpr std::string_view kForward = "stepcast:fwd:", kBackward = "stepcast:bwd:";
  struct Range {
    int64_t tid;
    double start, end;
    size_t layer;
    bool backward;
  };
  std::vector<Range> ranges;
  LayerTimes t{path, {}};
  std::map<std::string, size_t, std::less<>> index;
  for (const KinetoEvent& e : trace.events) {
    if (e.cat != Category::UserAnnotation) continue;
    const std::string& name = trace.name(e);
    const bool fwd = name.starts_with(kForward), bwd = name.starts_with(kBackward);
    if (!fwd && !bwd) continue;
    const std::string layer = name.substr((fwd ? kForward : kBackward).size());
    auto [it, added] = index.try_emplace(layer, t.layers.size());
    if (added) t.layers.push_back({layer, 0, 0});
    ranges.push_back({e.tid, e.ts, e.ts + e.dur, it->second, bwd});
  }
  if (ranges.empty()) {
    throw Error({path, 0, "workload.layer_times"},
                "no layer is marked: wrap each layer's forward and backward in record_function ranges named "
                "'stepcast:fwd:<layer>' and 'stepcast:bwd:<layer>'");
  }
  // Kernel time by correlation id (NCCL left out: it is communication, simulated separately).
  std::unordered_map<int64_t, double> kernel_time;
  for (const KinetoEvent& e : trace.events) {
    const bool gpu = e.cat == Category::Kernel || e.cat == Category::GpuMemcpy || e.cat == Category::GpuMemset;
    if (!gpu || e.correlation < 0 || e.nccl >= 0 || is_nccl_kernel_name(trace.name(e))) continue;
    kernel_time[e.correlation] += e.dur;
  }
  // Launches by thread, in time order, so each range sums the launches inside it.
  std::map<int64_t, std::vector<std::pair<double, double>>> launches;  // tid -> (ts, kernel s)
  for (const KinetoEvent& e : trace.events) {
    if (e.cat != Category::CudaRuntime || e.correlation < 0) continue;
    if (auto it = kernel_time.find(e.correlation); it != kernel_time.end()) launches[e.tid].push_back({e.ts, it->second});
  }
  for (auto& [tid, list] : launches) std::sort(list.begin(), list.end());
  std::vector<int> forward_count(t.layers.size(), 0), backward_count(t.layers.size(), 0);
  for (const Range& r : ranges) {
    double sum = 0;
    if (auto it = launches.find(r.tid); it != launches.end()) {
      const auto& list = it->second;
      for (auto p = std::lower_bound(list.begin(), list.end(), std::pair{r.start, -1.0});
           p != list.end() && p->first <= r.end; ++p) {
        sum += p->second;
      }
    }
    LayerTime& lt = t.layers[r.layer];
    (r.backward ? lt.backward : lt.forward) += sum;
    (r.backward ? backward_count : forward_count)[r.layer]++;
  }
  for (size_t l = 0; l < t.layers.size(); ++l) {
    if (forward_count[l] == 0 || backward_count[l] == 0) {
      throw Error({path, 0, "workload.layer_times"},
                  fmt::format("layer '{}' has a {} range but no {} range", t.layers[l].layer,
                              forward_count[l] == 0 ? "backward" : "forward",
                              forward_count[l] == 0 ? "forward" : "backward"));
    }
    t.layers[l].forward /= forward_count[l];
    t.layers[l].backward /= backward_count[l];
  }
  return t;
}

}  // namespace

LayerTimes read_layer_times(const std::string& path) {
  if (ends_with(path, ".csv")) return from_layer_table(path);
  return from_kineto(path);
}

void apply_layer_times(workload::Workload& w, const LayerTimes& measured) {
  std::map<std::string, const LayerTime*, std::less<>> by_name;
  for (const LayerTime& lt : measured.layers) by_name[lt.layer] = &lt;
  // The workload's layers, their names and blocks (from the forward ops).
  std::map<int, std::string> layer_name;
  for (const workload::Op& op : w.ops) {
    if (op.layer >= 0 && op.kind == workload::OpKind::Forward) layer_name[op.layer] = layer_of_op(op.name);
  }
  auto block_of = [&](int layer) {
    return layer >= 0 && static_cast<size_t>(layer) < w.block_of_layer.size() ? w.block_of_layer[static_cast<size_t>(layer)]
                                                                            : -1;
  };
  // Blocks measured in full (every layer of the block measured), and each block's layers in order.
  std::map<int, std::vector<int>> block_layers;
  for (const auto& [layer, name] : layer_name) {
    if (const int b = block_of(layer); b >= 0) block_layers[b].push_back(layer);
  }
  std::vector<int> measured_blocks;
  for (const auto& [b, layers] : block_layers) {
    const bool all = std::all_of(layers.begin(), layers.end(), [&](int l) { return by_name.count(layer_name[l]) != 0; });
    if (all) measured_blocks.push_back(b);
  }
  auto times_of = [&](int layer) -> const LayerTime* {
    if (auto it = by_name.find(layer_name[layer]); it != by_name.end()) return it->second;
    const int b = block_of(layer);
    if (b < 0 || measured_blocks.empty()) return nullptr;
    const std::vector<int>& mine = block_layers[b];
    const std::vector<int>& model = block_layers[measured_blocks[static_cast<size_t>(b) % measured_blocks.size()]];
    if (mine.size() != model.size()) return nullptr;
    const size_t position = static_cast<size_t>(std::find(mine.begin(), mine.end(), layer) - mine.begin());
    return by_name.at(layer_name[model[position]]);
  };
  for (workload::Op& op : w.ops) {
    if (op.layer < 0 || op.kind == workload::OpKind::Other) continue;
    const LayerTime* lt = times_of(op.layer);
    if (lt == nullptr) {
      throw Error({measured.source, 0, "workload.layer_times"},
                  fmt::format("layer '{}' of model '{}' is not measured{}", layer_name[op.layer], w.name,
                              measured_blocks.empty() ? " (and no whole block is, to repeat)" : ""));
    }
    op.duration = op.kind == workload::OpKind::Forward ? lt->forward : lt->backward;
    op.samples.clear();
  }
}

}  // namespace stepcast::profile
