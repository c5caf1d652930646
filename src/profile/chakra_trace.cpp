// Chakra execution traces: the reader. See the header for the IR <-> node mapping; the writer is
// report/chakra_export.cpp, and the names both sides agree on are in chakra/chakra_names.hpp.
#include "stepcast/detail/profile/chakra_trace.hpp"

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

#include "chakra/chakra_names.hpp"
#include "chakra_et.pb.h"
#include "stepcast/error.hpp"

namespace stepcast::profile {
namespace {

namespace pb = stepcast::chakra;
using chakra::kPullPrefix;
using chakra::kPushPrefix;
using google::protobuf::io::CodedInputStream;
using google::protobuf::io::IstreamInputStream;

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
      // Only a double that holds an integer int64 can take is one (the cast is undefined beyond).
      if (!(std::fabs(a.double_val()) < 0x1.0p62 && a.double_val() == std::floor(a.double_val())))
        return std::nullopt;
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
          if (auto v = int_attr(a); v && *v >= 1 && *v <= 1'000'000) w.batch_per_worker = static_cast<int>(*v);
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
