// Chakra execution traces: reader and writer. See the header for the IR <-> node mapping.
#include "stepcast/profile/chakra_trace.hpp"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <unordered_map>

#include "chakra_et.pb.h"
#include "stepcast/error.hpp"

namespace stepcast::profile {
namespace {

namespace pb = stepcast::chakra;
using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;
using google::protobuf::io::IstreamInputStream;
using google::protobuf::io::OstreamOutputStream;

// Chakra's schema version of the fields written here (comm_* attributes, involved_dim).
constexpr const char* kChakraVersion = "0.0.4";
constexpr const char* kPullPrefix = "pull:";
constexpr const char* kPushPrefix = "push:";

// ------------------------------------------------------------------------------------------
// Writing

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
      bytes += bucket.bytes;
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

// ------------------------------------------------------------------------------------------
// Reading

std::optional<int64_t> int_attr(const pb::AttributeProto& a) {
  switch (a.value_case()) {
    case pb::AttributeProto::kInt64Val:
      return a.int64_val();
    case pb::AttributeProto::kInt32Val:
      return a.int32_val();
    case pb::AttributeProto::kUint64Val:
      return static_cast<int64_t>(a.uint64_val());
    case pb::AttributeProto::kUint32Val:
      return a.uint32_val();
    case pb::AttributeProto::kSint64Val:
      return a.sint64_val();
    case pb::AttributeProto::kSint32Val:
      return a.sint32_val();
    case pb::AttributeProto::kDoubleVal:
      return static_cast<int64_t>(a.double_val());
    default:
      return std::nullopt;
  }
}

const pb::AttributeProto* find_attr(const pb::Node& n, const std::string& name) {
  for (const auto& a : n.attr()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

std::optional<int64_t> node_int(const pb::Node& n, const std::string& name) {
  const pb::AttributeProto* a = find_attr(n, name);
  return a == nullptr ? std::nullopt : int_attr(*a);
}

bool node_is_cpu(const pb::Node& n) {
  const pb::AttributeProto* a = find_attr(n, "is_cpu_op");
  if (a == nullptr) return false;  // default GPU: a trace without the flag is a device stream
  if (a->value_case() == pb::AttributeProto::kBoolVal) return a->bool_val();
  auto v = int_attr(*a);
  return v && *v != 0;
}

/// Streams length-prefixed messages from one file, with errors naming the file and message.
class MessageReader {
 public:
  explicit MessageReader(const std::string& path) : path_(path), in_(path, std::ios::binary) {
    if (!in_) throw Error({path, 0, ""}, "cannot open Chakra trace");
    std::error_code ec;
    size_ = std::filesystem::file_size(path, ec);
    raw_.emplace(&in_);
  }

  /// Reads the next message's bytes into `bytes`; false at a clean end of file.
  bool next(std::string& bytes) {
    CodedInputStream coded(&*raw_);
    const void* data = nullptr;
    int available = 0;
    if (!coded.GetDirectBufferPointer(&data, &available)) return false;  // clean EOF
    const uint64_t start = offset_;
    ++index_;
    uint32_t length = 0;
    if (!coded.ReadVarint32(&length)) {
      throw Error({path_, 0, where()}, fmt::format("bad or truncated length varint at byte {}", start));
    }
    const auto header = static_cast<uint64_t>(coded.CurrentPosition());
    if (size_ > 0 && start + header + length > size_) {
      throw Error({path_, 0, where()},
                  fmt::format("truncated message at byte {}: length {} but only {} bytes left", start, length,
                              size_ - start - header));
    }
    if (length > static_cast<uint32_t>(std::numeric_limits<int>::max()) ||
        !coded.ReadString(&bytes, static_cast<int>(length))) {
      throw Error({path_, 0, where()},
                  fmt::format("truncated message at byte {} (length {})", start, length));
    }
    offset_ = start + header + length;
    return true;
  }

  /// Parses `bytes` as `m`; throws naming the message when they are not one.
  template <typename Message>
  void parse(const std::string& bytes, Message& m) const {
    if (!m.ParseFromString(bytes)) {
      throw Error({path_, 0, where()},
                  fmt::format("message ({} bytes, ending at byte {}) is not a valid Chakra {}", bytes.size(),
                              offset_, m.GetDescriptor()->name()));
    }
  }

  [[nodiscard]] std::string where() const { return fmt::format("message {}", index_); }
  [[nodiscard]] int index() const { return index_; }

 private:
  std::string path_;
  std::ifstream in_;
  uint64_t size_ = 0;
  uint64_t offset_ = 0;
  int index_ = 0;
  std::optional<IstreamInputStream> raw_;
};

std::string strip_prefix(const std::string& name, const char* prefix) {
  const std::string p(prefix);
  return name.rfind(p, 0) == 0 ? name.substr(p.size()) : name;
}

std::string file_stem(const std::string& path) {
  std::string stem = std::filesystem::path(path).filename().string();
  // "<prefix>.<rank>.et" -> "<prefix>"
  if (stem.size() > 3 && stem.ends_with(".et")) stem.resize(stem.size() - 3);
  const auto dot = stem.rfind('.');
  if (dot != std::string::npos && dot + 1 < stem.size() &&
      std::all_of(stem.begin() + static_cast<long>(dot) + 1, stem.end(),
                  [](char c) { return c >= '0' && c <= '9'; })) {
    stem.resize(dot);
  }
  return stem;
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

workload::Workload read_chakra_trace(const std::string& path, std::vector<std::string>* warnings) {
  auto warn = [&](const std::string& text) {
    if (warnings != nullptr) warnings->push_back(fmt::format("{}: {}", path, text));
  };
  MessageReader reader(path);
  workload::Workload w;
  w.name = file_stem(path);
  w.lanes.clear();

  std::vector<pb::Node> nodes;
  std::string bytes;
  if (!reader.next(bytes)) throw Error({path, 0, ""}, "empty Chakra trace (no GlobalMetadata, no nodes)");
  {
    // Old traces start directly with a Node. Its fields 1 (id, a varint) and 3.. do not fit
    // GlobalMetadata {string version = 1; repeated AttributeProto attr = 2}: they fail to parse
    // or land in the unknown fields.
    pb::GlobalMetadata meta;
    if (!meta.ParseFromString(bytes) || meta.GetReflection()->GetUnknownFields(meta).field_count() > 0) {
      warn("no GlobalMetadata message; the first message is read as a node");
      nodes.emplace_back();
      reader.parse(bytes, nodes.back());
    } else {
      for (const auto& a : meta.attr()) {
        if (a.name() == "stepcast.workload" && !a.string_val().empty()) w.name = a.string_val();
        if (a.name() == "stepcast.batch_per_worker") {
          if (auto v = int_attr(a); v && *v >= 1) w.batch_per_worker = static_cast<int>(*v);
        }
      }
    }
  }
  while (reader.next(bytes)) {
    nodes.emplace_back();
    reader.parse(bytes, nodes.back());
  }

  const int num_nodes = static_cast<int>(nodes.size());
  std::unordered_map<uint64_t, int> index_of;
  std::vector<int> skipped_types(11, 0);
  for (int i = 0; i < num_nodes; ++i) {
    const pb::Node& n = nodes[static_cast<size_t>(i)];
    const std::string where = fmt::format("node {}", n.id());
    const int type = static_cast<int>(n.type());
    if (type < pb::METADATA_NODE || type > pb::CHECKPOINT_NODE) {
      throw Error({path, 0, where}, fmt::format("unknown node type {} (node '{}', index {} among the nodes)",
                                                type, n.name(), i));
    }
    if (!index_of.emplace(n.id(), i).second) {
      throw Error({path, 0, where},
                  fmt::format("duplicate node id (node indices {} and {})", index_of[n.id()], i));
    }
  }

  // Topological order of all nodes, ties by (start time, file order) so that a lane's ops keep
  // the order they ran in.
  std::vector<std::vector<int>> parents(static_cast<size_t>(num_nodes));
  std::vector<std::vector<int>> children(static_cast<size_t>(num_nodes));
  for (int i = 0; i < num_nodes; ++i) {
    const pb::Node& n = nodes[static_cast<size_t>(i)];
    std::set<int> ps;
    auto add = [&](uint64_t id) {
      auto it = index_of.find(id);
      if (it == index_of.end()) {
        throw Error({path, 0, fmt::format("node {}", n.id())},
                    fmt::format("depends on unknown node id {}", id));
      }
      if (it->second == i) throw Error({path, 0, fmt::format("node {}", n.id())}, "depends on itself");
      ps.insert(it->second);
    };
    for (uint64_t d : n.ctrl_deps()) add(d);
    for (uint64_t d : n.data_deps()) add(d);
    parents[static_cast<size_t>(i)].assign(ps.begin(), ps.end());
    for (int p : ps) children[static_cast<size_t>(p)].push_back(i);
  }
  using Key = std::pair<uint64_t, int>;
  std::priority_queue<Key, std::vector<Key>, std::greater<>> ready;
  std::vector<int> missing(static_cast<size_t>(num_nodes));
  for (int i = 0; i < num_nodes; ++i) {
    missing[static_cast<size_t>(i)] = static_cast<int>(parents[static_cast<size_t>(i)].size());
    if (missing[static_cast<size_t>(i)] == 0)
      ready.emplace(nodes[static_cast<size_t>(i)].start_time_micros(), i);
  }
  std::vector<int> order;
  order.reserve(static_cast<size_t>(num_nodes));
  while (!ready.empty()) {
    const int i = ready.top().second;
    ready.pop();
    order.push_back(i);
    for (int c : children[static_cast<size_t>(i)]) {
      if (--missing[static_cast<size_t>(c)] == 0)
        ready.emplace(nodes[static_cast<size_t>(c)].start_time_micros(), c);
    }
  }
  if (static_cast<int>(order.size()) != num_nodes) {
    for (int i = 0; i < num_nodes; ++i) {
      if (missing[static_cast<size_t>(i)] > 0) {
        throw Error({path, 0, fmt::format("node {}", nodes[static_cast<size_t>(i)].id())},
                    "is part of a dependency cycle");
      }
    }
  }

  // Ops from COMP nodes; tensors from all-reduce collectives and from send/recv pairs by tag.
  std::vector<int> op_of(static_cast<size_t>(num_nodes), -1);
  // Nearest COMP ancestors of each node, looking through non-COMP nodes; and the comm nodes
  // met on the way, whose tensors the COMP node consumes.
  std::vector<std::vector<int>> comp_ancestors(static_cast<size_t>(num_nodes));
  std::vector<std::vector<int>> comm_ancestors(static_cast<size_t>(num_nodes));
  std::map<std::string, int> layer_of;
  int lane_gpu = -1;
  int lane_cpu = -1;
  struct TensorDraft {
    std::string name;
    double pulled = 0;
    double pushed = 0;
    double reduced = 0;
    int producer = -1;
    std::set<int> consumers;
    int first_seen = 0;
  };
  std::map<std::string, TensorDraft> drafts;  // key: "coll:<id>" or "tag:<tag>"
  std::vector<std::string> tensor_key(static_cast<size_t>(num_nodes));
  int other_collectives = 0;

  for (int i : order) {
    const pb::Node& n = nodes[static_cast<size_t>(i)];
    std::set<int> comp;
    std::set<int> comm;
    for (int p : parents[static_cast<size_t>(i)]) {
      if (op_of[static_cast<size_t>(p)] >= 0) {
        comp.insert(op_of[static_cast<size_t>(p)]);
      } else {
        comp.insert(comp_ancestors[static_cast<size_t>(p)].begin(),
                    comp_ancestors[static_cast<size_t>(p)].end());
        comm.insert(comm_ancestors[static_cast<size_t>(p)].begin(),
                    comm_ancestors[static_cast<size_t>(p)].end());
      }
    }
    const int type = static_cast<int>(n.type());
    if (type == pb::COMP_NODE) {
      workload::Op op;
      op.name = n.name();
      op.duration = static_cast<double>(n.duration_micros()) * 1e-6;
      int& lane = node_is_cpu(n) ? lane_cpu : lane_gpu;
      if (lane < 0) {
        lane = static_cast<int>(w.lanes.size());
        w.lanes.push_back(node_is_cpu(n) ? "cpu" : "gpu");
      }
      op.lane = lane;
      // stepcast's own names carry kind and layer: "fwd:<layer>", "bwd:<layer>".
      std::string layer_name;
      if (op.name.rfind("fwd:", 0) == 0) {
        op.kind = workload::OpKind::Forward;
        layer_name = op.name.substr(4);
      } else if (op.name.rfind("bwd:", 0) == 0) {
        op.kind = workload::OpKind::Backward;
        layer_name = op.name.substr(4);
      }
      if (!layer_name.empty()) {
        op.layer = layer_of.emplace(layer_name, static_cast<int>(layer_of.size())).first->second;
      }
      op.deps.assign(comp.begin(), comp.end());
      const int index = static_cast<int>(w.ops.size());
      op_of[static_cast<size_t>(i)] = index;
      for (int c : comm) drafts[tensor_key[static_cast<size_t>(c)]].consumers.insert(index);
      w.ops.push_back(std::move(op));
      continue;
    }
    comp_ancestors[static_cast<size_t>(i)].assign(comp.begin(), comp.end());
    const int latest = comp.empty() ? -1 : *comp.rbegin();
    std::string key;
    if (type == pb::COMM_COLL_NODE) {
      const auto comm_type = node_int(n, "comm_type");
      if (!comm_type)
        throw Error({path, 0, fmt::format("node {}", n.id())}, "collective without a comm_type attribute");
      if (*comm_type == pb::ALL_REDUCE) {
        const auto size = node_int(n, "comm_size");
        if (!size || *size < 0) {
          throw Error({path, 0, fmt::format("node {}", n.id())},
                      "all-reduce without a comm_size >= 0 attribute");
        }
        key = fmt::format("coll:{}", n.id());
        TensorDraft& d = drafts[key];
        d.name = n.name();
        d.reduced = static_cast<double>(*size);
        d.producer = latest;
        d.first_seen = i;
      } else {
        ++other_collectives;
      }
    } else if (type == pb::COMM_SEND_NODE || type == pb::COMM_RECV_NODE) {
      const auto size = node_int(n, "comm_size");
      if (!size || *size < 0) {
        throw Error({path, 0, fmt::format("node {}", n.id())},
                    "send/recv without a comm_size >= 0 attribute");
      }
      const bool pull = type == pb::COMM_RECV_NODE;
      const std::string name = strip_prefix(n.name(), pull ? kPullPrefix : kPushPrefix);
      const auto tag = node_int(n, "comm_tag");
      key = tag ? fmt::format("tag:{:012}", *tag) : "name:" + name;
      auto [it, fresh] = drafts.try_emplace(key);
      TensorDraft& d = it->second;
      if (fresh) d.first_seen = i;
      if (d.name.empty() || pull) d.name = name;
      if (pull) {
        d.pulled += static_cast<double>(*size);
      } else {
        d.pushed += static_cast<double>(*size);
        d.producer = std::max(d.producer, latest);
      }
    } else {
      ++skipped_types[static_cast<size_t>(type)];
    }
    if (!key.empty()) comm.insert(i);
    tensor_key[static_cast<size_t>(i)] = key;
    comm_ancestors[static_cast<size_t>(i)].assign(comm.begin(), comm.end());
    // Comm nodes only pass on their own tensor: a compute op after an all-reduce waits for it,
    // not for the tensors of collectives before it.
    if (!key.empty()) comm_ancestors[static_cast<size_t>(i)] = {i};
  }
  if (w.ops.empty()) throw Error({path, 0, ""}, "trace has no COMP nodes: nothing to simulate");
  if (other_collectives > 0) {
    warn(fmt::format("{} collectives other than all-reduce are not represented", other_collectives));
  }
  const char* type_names[] = {"", "METADATA", "MEM_LOAD", "MEM_STORE", "",          "",
                              "", "",         "STORAGE",  "BATCH",     "CHECKPOINT"};
  for (size_t t = 0; t < skipped_types.size(); ++t) {
    if (skipped_types[t] > 0) warn(fmt::format("{} {} nodes skipped", skipped_types[t], type_names[t]));
  }

  // Tensors: collectives in trace order, send/recv pairs by tag (layer order for stepcast's own
  // traces, which use the tensor index as tag).
  std::vector<const TensorDraft*> ordered;
  for (const auto& [key, d] : drafts) ordered.push_back(&d);
  std::stable_sort(ordered.begin(), ordered.end(), [&](const TensorDraft* a, const TensorDraft* b) {
    const bool a_coll = a->reduced > 0 || (a->pulled == 0 && a->pushed == 0);
    const bool b_coll = b->reduced > 0 || (b->pulled == 0 && b->pushed == 0);
    if (a_coll != b_coll) return a_coll;
    return a_coll ? a->first_seen < b->first_seen : false;
  });
  const int last_op = static_cast<int>(w.ops.size()) - 1;
  for (const TensorDraft* d : ordered) {
    workload::Tensor t;
    t.name = d->name;
    t.bytes = d->reduced > 0 ? d->reduced : (d->pulled > 0 ? d->pulled : d->pushed);
    // A gradient no op produces (a collective before any compute) is ready at the step end.
    t.producer = d->producer >= 0 ? d->producer : last_op;
    t.consumers.assign(d->consumers.begin(), d->consumers.end());
    w.tensors.push_back(std::move(t));
  }
  const std::string problem = workload::validate(w);
  if (!problem.empty()) throw Error({path, 0, ""}, "trace gives an invalid workload: " + problem);
  return w;
}

}  // namespace stepcast::profile
