// Chakra execution traces: the writer (`stepcast export --chakra`). The IR <-> node mapping is in
// stepcast/detail/profile/chakra_trace.hpp, whose reader reads these files back; the names both sides
// agree on are in chakra/chakra_names.hpp.
#include "stepcast/report/chakra_export.hpp"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "chakra/chakra_names.hpp"
#include "chakra_et.pb.h"
#include "stepcast/error.hpp"

namespace stepcast::report {
namespace {

namespace pb = stepcast::chakra;
using chakra::kChakraVersion;
using chakra::kPullPrefix;
using chakra::kPushPrefix;
using google::protobuf::io::CodedOutputStream;
using google::protobuf::io::OstreamOutputStream;

void add_attr(pb::Node& node, const std::string& name, int64_t value) {
  auto* a = node.add_attr();
  a->set_name(name);
  a->set_int64_val(value);
}
void add_attr_i32(pb::Node& node, const std::string& name, int32_t value) {
  auto* a = node.add_attr();
  a->set_name(name);
  a->set_int32_val(value);
}
void add_attr_bool(pb::Node& node, const std::string& name, bool value) {
  auto* a = node.add_attr();
  a->set_name(name);
  a->set_bool_val(value);
}

uint64_t to_micros(double seconds) {
  return seconds > 0 ? static_cast<uint64_t>(std::llround(seconds * 1e6)) : 0;
}

/// Accumulates the nodes of one rank and writes them length-prefixed.
class RankWriter {
 public:
  RankWriter(const std::string& path, int rank) : path_(path), out_(path, std::ios::binary), rank_(rank) {
    if (!out_) throw Error({path, 0, "--chakra"}, "cannot open file for writing");
  }

  void write_metadata(const workload::Workload& w, const ChakraExport& how, const std::string& role) {
    pb::GlobalMetadata meta;
    meta.set_version(kChakraVersion);
    // Informative only (ASTRA-sim ignores metadata attributes); read back for a faithful round
    // trip of the workload's name and batch size.
    auto str = [&](const char* name, const std::string& value) {
      auto* a = meta.add_attr();
      a->set_name(name);
      a->set_string_val(value);
    };
    auto num = [&](const char* name, int64_t value) {
      auto* a = meta.add_attr();
      a->set_name(name);
      a->set_int64_val(value);
    };
    str("stepcast.workload", w.name);
    str("stepcast.role", role);
    str("stepcast.scheme", how.parameter_server ? "ps" : "allreduce");
    num("stepcast.rank", rank_);
    num("stepcast.workers", how.workers);
    num("stepcast.ps_count", how.parameter_server ? how.ps_count : 0);
    num("stepcast.batch_per_worker", w.batch_per_worker);
    write_message(meta);
  }

  pb::Node& new_node(pb::NodeType type, const std::string& name) {
    nodes_.emplace_back();
    pb::Node& n = nodes_.back();
    n.set_id(nodes_.size() - 1);
    n.set_name(name);
    n.set_type(type);
    return n;
  }

  /// A communication node with the attributes every ASTRA-sim feeder version asks for.
  pb::Node& new_comm(pb::NodeType type, const std::string& name, double bytes, int network_dims) {
    pb::Node& n = new_node(type, name);
    add_attr_bool(n, "is_cpu_op", false);
    add_attr(n, "comm_size", static_cast<int64_t>(std::llround(bytes)));
    add_attr_i32(n, "comm_priority", 0);
    if (type == pb::COMM_COLL_NODE) {
      auto* dims = n.add_attr();
      dims->set_name("involved_dim");
      for (int d = 0; d < std::max(1, network_dims); ++d) dims->mutable_bool_list()->add_values(true);
    }
    return n;
  }

  [[nodiscard]] int size() const { return static_cast<int>(nodes_.size()); }

  /// Sets start times from a schedule without communication (comm nodes take no time), so
  /// visualizers show a plausible timeline; nodes are already in topological order.
  void finish() {
    std::vector<uint64_t> end(nodes_.size(), 0);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      uint64_t start = 0;
      for (uint64_t d : nodes_[i].data_deps()) start = std::max(start, end[d]);
      nodes_[i].set_start_time_micros(start);
      end[i] = start + nodes_[i].duration_micros();
    }
    for (const pb::Node& n : nodes_) write_message(n);
    out_.flush();
    if (!out_) throw Error({path_, 0, "--chakra"}, "write failed");
  }

 private:
  template <typename Message>
  void write_message(const Message& m) {
    OstreamOutputStream raw(&out_);
    CodedOutputStream coded(&raw);
    coded.WriteVarint32(static_cast<uint32_t>(m.ByteSizeLong()));
    m.SerializeWithCachedSizes(&coded);
  }

  std::string path_;
  std::ofstream out_;
  int rank_;
  std::vector<pb::Node> nodes_;
};

bool is_cpu_lane(const std::string& lane) { return lane.rfind("cpu", 0) == 0; }

/// COMP nodes for every op in program order; returns op index -> node id. Program order per
/// lane goes to ctrl_deps; data_deps holds it too plus the op's explicit deps.
void write_ops(RankWriter& writer, const workload::Workload& w,
               const std::vector<std::vector<uint64_t>>& extra_deps,
               const std::vector<std::vector<int>>& after_op, const std::function<void(int)>& emit_after) {
  std::vector<uint64_t> node_of(w.ops.size());
  std::vector<int> last_on_lane(w.lanes.size(), -1);
  for (size_t i = 0; i < w.ops.size(); ++i) {
    const workload::Op& op = w.ops[i];
    pb::Node& n = writer.new_node(pb::COMP_NODE, op.name);
    n.set_duration_micros(to_micros(op.duration));
    std::set<uint64_t> data;
    const int prev = last_on_lane[static_cast<size_t>(op.lane)];
    if (prev >= 0) {
      n.add_ctrl_deps(node_of[static_cast<size_t>(prev)]);
      data.insert(node_of[static_cast<size_t>(prev)]);
    }
    for (int d : op.deps) data.insert(node_of[static_cast<size_t>(d)]);
    for (uint64_t d : extra_deps[i]) data.insert(d);
    for (uint64_t d : data) n.add_data_deps(d);
    add_attr_bool(n, "is_cpu_op", is_cpu_lane(w.lanes[static_cast<size_t>(op.lane)]));
    add_attr(n, "num_ops", 0);  // FLOPs unknown here: ASTRA-sim replays duration_micros
    auto* ts = n.add_attr();
    ts->set_name("tensor_size");
    ts->set_uint64_val(0);
    node_of[i] = n.id();
    last_on_lane[static_cast<size_t>(op.lane)] = static_cast<int>(i);
    if (!after_op[i].empty()) emit_after(static_cast<int>(i));
  }
}

std::string rank_path(const std::string& prefix, int rank) { return fmt::format("{}.{}.et", prefix, rank); }

void check_export(const workload::Workload& w, const ChakraExport& how, const std::string& prefix) {
  const std::string problem = workload::validate(w);
  if (!problem.empty()) throw Error({prefix, 0, "--chakra"}, "invalid workload: " + problem);
  if (how.workers < 1) throw Error({prefix, 0, "--chakra"}, "expected at least one worker");
  const int num_tensors = static_cast<int>(w.tensors.size());
  for (const auto& b : how.buckets) {
    for (int t : b.tensors) {
      if (t < 0 || t >= num_tensors)
        throw Error({prefix, 0, "--chakra"}, fmt::format("bucket names unknown tensor {}", t));
    }
  }
  if (how.parameter_server) {
    if (how.ps_count < 1) throw Error({prefix, 0, "--chakra"}, "a parameter server needs at least one shard");
    for (const auto& p : how.pieces) {
      if (p.tensor < 0 || p.tensor >= num_tensors || p.shard < 0 || p.shard >= how.ps_count) {
        throw Error({prefix, 0, "--chakra"},
                    fmt::format("piece of tensor {} on shard {} is out of range", p.tensor, p.shard));
      }
    }
  }
}

ChakraFile write_allreduce_worker(const std::string& prefix, int rank, const workload::Workload& w,
                                  const ChakraExport& how) {
  RankWriter writer(rank_path(prefix, rank), rank);
  writer.write_metadata(w, how, "worker");
  // The op whose end completes each bucket: the last producer of its gradients.
  std::vector<std::vector<int>> after_op(w.ops.size());
  for (size_t b = 0; b < how.buckets.size(); ++b) {
    int last = -1;
    for (int t : how.buckets[b].tensors) last = std::max(last, w.tensors[static_cast<size_t>(t)].producer);
    // A bucket of gradients nobody produces is reduced after the last op.
    if (last < 0) last = static_cast<int>(w.ops.size()) - 1;
    after_op[static_cast<size_t>(last)].push_back(static_cast<int>(b));
  }
  std::optional<uint64_t> previous_collective;
  double bytes = 0;
  const std::vector<std::vector<uint64_t>> no_extra(w.ops.size());
  // Called right after the op is written, so its node id is the last one.
  auto emit_collectives = [&](int op) {
    const uint64_t op_node = static_cast<uint64_t>(writer.size() - 1);
    for (int b : after_op[static_cast<size_t>(op)]) {
      const workload::Bucket& bucket = how.buckets[static_cast<size_t>(b)];
      pb::Node& n = writer.new_comm(pb::COMM_COLL_NODE, fmt::format("allreduce:bucket{}", b), bucket.bytes,
                                    how.network_dims);
      add_attr(n, "comm_type", pb::ALL_REDUCE);
      n.add_data_deps(op_node);
      if (previous_collective) n.add_data_deps(*previous_collective);
      previous_collective = n.id();
      bytes += bucket.bytes * how.allreduce_sent_per_byte;
    }
  };
  write_ops(writer, w, no_extra, after_op, emit_collectives);
  writer.finish();
  return {rank_path(prefix, rank), rank, "worker", writer.size(), bytes};
}

ChakraFile write_ps_worker(const std::string& prefix, int rank, const workload::Workload& w,
                           const ChakraExport& how) {
  RankWriter writer(rank_path(prefix, rank), rank);
  writer.write_metadata(w, how, "worker");
  // Pulls first: they start with the step, and the consumers wait for them.
  std::vector<std::vector<uint64_t>> extra(w.ops.size());
  double bytes = 0;
  for (const ChakraPiece& p : how.pieces) {
    const workload::Tensor& t = w.tensors[static_cast<size_t>(p.tensor)];
    pb::Node& n = writer.new_comm(pb::COMM_RECV_NODE, kPullPrefix + t.name, p.bytes, how.network_dims);
    add_attr_i32(n, "comm_src", how.workers + p.shard);
    add_attr_i32(n, "comm_dst", rank);
    add_attr_i32(n, "comm_tag", p.tensor);
    for (int c : t.consumers) extra[static_cast<size_t>(c)].push_back(n.id());
  }
  std::vector<std::vector<int>> after_op(w.ops.size());
  for (size_t i = 0; i < how.pieces.size(); ++i) {
    int producer = w.tensors[static_cast<size_t>(how.pieces[i].tensor)].producer;
    if (producer < 0) producer = static_cast<int>(w.ops.size()) - 1;
    after_op[static_cast<size_t>(producer)].push_back(static_cast<int>(i));
  }
  auto emit_pushes = [&](int op) {
    const uint64_t op_node = static_cast<uint64_t>(writer.size() - 1);
    for (int i : after_op[static_cast<size_t>(op)]) {
      const ChakraPiece& p = how.pieces[static_cast<size_t>(i)];
      pb::Node& n =
          writer.new_comm(pb::COMM_SEND_NODE, kPushPrefix + w.tensors[static_cast<size_t>(p.tensor)].name,
                          p.bytes, how.network_dims);
      add_attr_i32(n, "comm_src", rank);
      add_attr_i32(n, "comm_dst", how.workers + p.shard);
      add_attr_i32(n, "comm_tag", p.tensor);
      n.add_data_deps(op_node);
      bytes += p.bytes;
    }
  };
  write_ops(writer, w, extra, after_op, emit_pushes);
  writer.finish();
  return {rank_path(prefix, rank), rank, "worker", writer.size(), bytes};
}

ChakraFile write_ps_server(const std::string& prefix, int shard, const workload::Workload& w,
                           const ChakraExport& how) {
  const int rank = how.workers + shard;
  RankWriter writer(rank_path(prefix, rank), rank);
  writer.write_metadata(w, how, "ps");
  double bytes = 0;
  for (int wk = 0; wk < how.workers; ++wk) {
    for (const ChakraPiece& p : how.pieces) {
      if (p.shard != shard) continue;
      pb::Node& n =
          writer.new_comm(pb::COMM_SEND_NODE, kPullPrefix + w.tensors[static_cast<size_t>(p.tensor)].name,
                          p.bytes, how.network_dims);
      add_attr_i32(n, "comm_src", rank);
      add_attr_i32(n, "comm_dst", wk);
      add_attr_i32(n, "comm_tag", p.tensor);
      bytes += p.bytes;
    }
  }
  for (const ChakraPiece& p : how.pieces) {
    if (p.shard != shard) continue;
    const std::string& name = w.tensors[static_cast<size_t>(p.tensor)].name;
    for (int wk = 0; wk < how.workers; ++wk) {
      pb::Node& recv = writer.new_comm(pb::COMM_RECV_NODE, kPushPrefix + name, p.bytes, how.network_dims);
      add_attr_i32(recv, "comm_src", wk);
      add_attr_i32(recv, "comm_dst", rank);
      add_attr_i32(recv, "comm_tag", p.tensor);
      const uint64_t recv_id = recv.id();
      // One apply per received gradient, as the scheme's apply_time is defined; the shard's CPU
      // runs one at a time (ASTRA-sim allows one CPU op in flight), so no order is imposed.
      pb::Node& apply = writer.new_node(pb::COMP_NODE, "apply:" + name);
      const double seconds = how.ps_apply_time + (how.ps_apply_bw > 0 ? p.bytes / how.ps_apply_bw : 0);
      apply.set_duration_micros(to_micros(seconds));
      apply.add_data_deps(recv_id);
      add_attr_bool(apply, "is_cpu_op", true);
      add_attr(apply, "num_ops", 0);
      auto* ts = apply.add_attr();
      ts->set_name("tensor_size");
      ts->set_uint64_val(0);
    }
  }
  writer.finish();
  return {rank_path(prefix, rank), rank, "ps", writer.size(), bytes};
}

}  // namespace

std::vector<ChakraFile> write_chakra_traces(const std::string& prefix, const workload::Workload& w,
                                            const ChakraExport& how) {
  check_export(w, how, prefix);
  std::vector<ChakraFile> files;
  for (int r = 0; r < how.workers; ++r) {
    files.push_back(how.parameter_server ? write_ps_worker(prefix, r, w, how)
                                         : write_allreduce_worker(prefix, r, w, how));
  }
  if (how.parameter_server) {
    for (int s = 0; s < how.ps_count; ++s) files.push_back(write_ps_server(prefix, s, w, how));
  }
  return files;
}

}  // namespace stepcast::report
