// ASTRA-sim 1.0 layer-wise workload reader; see the header for the format and the mapping.
#include "stepcast/detail/profile/astrasim_workload.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "stepcast/detail/text_file.hpp"
#include "stepcast/error.hpp"
#include "stepcast/units.hpp"

namespace stepcast::profile {
namespace {

enum class Comm { None, AllReduce, Other };

std::vector<std::string_view> tokens_of(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    const size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

double number(std::string_view token, const SourceLocation& where) {
  double value = 0;
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (ec != std::errc() || end != token.data() + token.size() || !std::isfinite(value)) {
    throw Error(where, fmt::format("expected a number, got '{}'", token));
  }
  if (value < 0) throw Error(where, fmt::format("expected a number >= 0, got '{}'", token));
  return value;
}

/// A communication size within the physical range (units.hpp): 1e308 bytes passed the reader and
/// made the workload invalid, an error that named no file or line.
double comm_bytes(std::string_view token, const SourceLocation& where) {
  const double bytes = number(token, where);
  if (bytes > limits::kMaxBytes) {
    throw Error(where, fmt::format("'{}' bytes is more than stepcast takes ({:g} bytes)", token, limits::kMaxBytes));
  }
  return bytes;
}

/// A time in ticks, in seconds, within the physical range of one op (units.hpp).
double ticks(std::string_view token, const SourceLocation& where, double seconds_per_tick) {
  const double seconds = number(token, where) * seconds_per_tick;
  if (!(seconds <= limits::kMaxDuration)) {
    throw Error(where, fmt::format("'{}' ticks of {:g} s is more than stepcast takes ({:g} s)", token,
                                   seconds_per_tick, limits::kMaxDuration));
  }
  return seconds;
}

/// ASTRA-sim 1.0 reads comm types by prefix (ALLREDUCE, ALLGATHER, REDUCESCATTER, ALLTOALL, with
/// suffixes such as _EP or _DP_EP in later versions, and ALLREDUCEALLTOALL).
Comm comm_type(std::string_view token, const SourceLocation& where) {
  if (token == "NONE") return Comm::None;
  if (token.starts_with("ALLREDUCEALLTOALL")) return Comm::Other;
  if (token.starts_with("ALLREDUCE")) return Comm::AllReduce;
  if (token.starts_with("ALLGATHER") || token.starts_with("REDUCESCATTER") || token.starts_with("ALLTOALL")) {
    return Comm::Other;
  }
  throw Error(where, fmt::format("unknown communication type '{}' (expected NONE, ALLREDUCE, ALLGATHER, "
                                 "REDUCESCATTER or ALLTOALL)",
                                 token));
}

}  // namespace

workload::Workload parse_astrasim_workload(std::string_view text, const std::string& file_name,
                                           const AstraSimOptions& options,
                                           std::vector<std::string>* warnings) {
  auto warn = [&](int line, const std::string& message) {
    if (warnings != nullptr) warnings->push_back(fmt::format("{}:{}: {}", file_name, line, message));
  };
  if (!(options.seconds_per_tick > 0) || !std::isfinite(options.seconds_per_tick)) {
    throw Error({file_name, 0, "seconds_per_tick"},
                fmt::format("expected a time unit > 0, got {}", options.seconds_per_tick));
  }
  // Non-empty lines with their numbers.
  std::vector<std::pair<int, std::vector<std::string_view>>> lines;
  size_t pos = 0;
  int line_number = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    ++line_number;
    auto tokens = tokens_of(text.substr(pos, end - pos));
    pos = end + 1;
    if (!tokens.empty()) lines.emplace_back(line_number, std::move(tokens));
  }
  if (lines.empty())
    throw Error({file_name, 0, "parallelism"}, "empty workload: expected the parallelism (e.g. DATA)");
  const std::string parallelism(lines[0].second[0]);
  if (parallelism != "DATA") {
    warn(lines[0].first,
         fmt::format("parallelism {}: only the weight-gradient all-reduces are represented", parallelism));
  }
  if (lines.size() < 2)
    throw Error({file_name, lines[0].first + 1, "layers"}, "expected the number of layers");
  const auto& [count_line, count_tokens] = lines[1];
  const double count = number(count_tokens[0], {file_name, count_line, "layers"});
  // The bound also keeps the conversion below defined (2E31 does not fit a size_t).
  if (count_tokens.size() != 1 || count < 1 || count > 1e6 || count != std::floor(count)) {
    throw Error({file_name, count_line, "layers"},
                "expected the number of layers, an integer in [1, 1e6], alone on the line");
  }
  const size_t num_layers = static_cast<size_t>(count);
  if (lines.size() - 2 != num_layers) {
    throw Error(
        {file_name, lines.back().first, "layers"},
        fmt::format("line {} announces {} layers but {} follow", count_line, num_layers, lines.size() - 2));
  }

  struct Layer {
    std::string name;
    double fwd = 0, ig = 0, wg = 0, update = 0;  // seconds
    double wg_bytes = 0;
    bool wg_allreduce = false;
  };
  std::vector<Layer> layers;
  for (size_t l = 0; l < num_layers; ++l) {
    // Not a structured binding: lambdas capture those only from clang 16 on (the fuzz build uses 14).
    const int line = lines[l + 2].first;
    const std::vector<std::string_view>& t = lines[l + 2].second;
    // Classic rows have 12 fields; 21 when a GEMM shape (3 numbers) follows each compute time.
    if (t.size() != 12 && t.size() != 21) {
      throw Error(
          {file_name, line, ""},
          fmt::format("expected 12 fields (name, reserved, then compute time, comm type and comm size "
                      "for forward, input gradient and weight gradient, then update time), got {}",
                      t.size()));
    }
    const size_t shape = t.size() == 21 ? 3 : 0;
    auto field = [&](size_t pass, size_t k) { return t[2 + pass * (3 + shape) + (k == 0 ? 0 : shape + k)]; };
    const char* pass_names[] = {"fwd", "ig", "wg"};
    Layer layer;
    layer.name = std::string(t[0]);
    double times[3];
    for (size_t p = 0; p < 3; ++p) {
      const std::string base = pass_names[p];
      times[p] = ticks(field(p, 0), {file_name, line, base + "_compute_time"}, options.seconds_per_tick);
      const Comm type = comm_type(field(p, 1), {file_name, line, base + "_comm_type"});
      const double bytes = comm_bytes(field(p, 2), {file_name, line, base + "_comm_size"});
      if (p == 2 && type == Comm::AllReduce) {
        layer.wg_allreduce = bytes > 0;
        layer.wg_bytes = bytes;
      } else if (type != Comm::None && bytes > 0) {
        warn(line, fmt::format("layer {}: {} communication {} of {} bytes is not represented", layer.name,
                               base, field(p, 1), bytes));
      }
    }
    layer.fwd = times[0];
    layer.ig = times[1];
    layer.wg = times[2];
    layer.update = ticks(t.back(), {file_name, line, "wg_update_time"}, options.seconds_per_tick);
    layers.push_back(std::move(layer));
  }

  workload::Workload w;
  w.name = std::filesystem::path(file_name).stem().string();
  w.lanes = {"gpu"};
  auto add = [&](std::string name, workload::OpKind kind, double duration, int layer) {
    workload::Op op{
        .name = std::move(name), .kind = kind, .duration = duration, .lane = 0, .layer = layer, .deps = {}};
    if (!w.ops.empty()) op.deps.push_back(static_cast<int>(w.ops.size()) - 1);
    w.ops.push_back(std::move(op));
    return static_cast<int>(w.ops.size()) - 1;
  };
  const int n = static_cast<int>(layers.size());
  for (int l = 0; l < n; ++l) add("fwd:" + layers[l].name, workload::OpKind::Forward, layers[l].fwd, l);
  std::vector<int> wg_op(layers.size());
  double update = 0;
  for (int l = n - 1; l >= 0; --l) {
    wg_op[l] = add("wg:" + layers[l].name, workload::OpKind::Backward, layers[l].wg, l);
    add("ig:" + layers[l].name, workload::OpKind::Backward, layers[l].ig, l);
    update += layers[l].update;
  }
  // One op holds every layer's update: the sum has the limit of one op too.
  if (!(update <= limits::kMaxDuration)) {
    throw Error({file_name, lines.back().first, "wg_update_time"},
                fmt::format("the update times add up to {:g} s, more than one op takes ({:g} s)", update,
                            limits::kMaxDuration));
  }
  if (update > 0) add("update", workload::OpKind::Other, update, -1);
  for (int l = 0; l < n; ++l) {
    if (!layers[l].wg_allreduce) continue;
    w.tensors.push_back(
        {.name = layers[l].name, .bytes = layers[l].wg_bytes, .producer = wg_op[l], .consumers = {l}});
  }
  return w;
}

workload::Workload read_astrasim_workload(const std::string& path, const AstraSimOptions& options,
                                          std::vector<std::string>* warnings) {
  return parse_astrasim_workload(read_text_file(path, "ASTRA-sim workload"), path, options, warnings);
}

}  // namespace stepcast::profile
