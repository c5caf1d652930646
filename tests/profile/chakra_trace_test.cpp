// Chakra execution traces: export then import gives the same workload; broken files give errors
// naming the file and the message or node. Files are generated here (no shared data needed).
#include "stepcast/detail/profile/chakra_trace.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "stepcast/error.hpp"
#include "stepcast/report/chakra_export.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/detail/scheme/placement.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::profile {
namespace {
namespace chakra_trace_test {  // this file's own names: test files are compiled several to a unit

namespace fs = std::filesystem;
using report::ChakraExport;
using report::write_chakra_traces;

fs::path temp_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("stepcast_chakra_" + name + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

workload::Workload resnet(double step_time = 0.174) {
  return zoo::to_workload(zoo::get_model("resnet50"), {.batch_per_worker = 64, .step_time = step_time});
}

// Ops equal up to the microsecond rounding of duration_micros.
void expect_same_ops(const workload::Workload& a, const workload::Workload& b) {
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) {
    SCOPED_TRACE(a.ops[i].name);
    EXPECT_EQ(a.ops[i].name, b.ops[i].name);
    EXPECT_EQ(a.ops[i].kind, b.ops[i].kind);
    EXPECT_EQ(a.ops[i].layer, b.ops[i].layer);
    EXPECT_EQ(a.ops[i].lane, b.ops[i].lane);
    EXPECT_EQ(a.ops[i].deps, b.ops[i].deps);
    EXPECT_NEAR(a.ops[i].duration, b.ops[i].duration, 0.5e-6 + 1e-12);
  }
}

TEST(ChakraTrace, AllReduceRoundTripKeepsOpsDepsAndBucketSizes) {
  const workload::Workload w = resnet();
  const auto buckets = workload::make_buckets(w, 25e6);
  const fs::path dir = temp_dir("allreduce");
  const std::string prefix = (dir / "resnet").string();
  ChakraExport how;
  how.workers = 4;
  how.buckets = buckets;
  const auto files = write_chakra_traces(prefix, w, how);
  ASSERT_EQ(files.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(files[r].path, prefix + "." + std::to_string(r) + ".et");
    EXPECT_TRUE(fs::exists(files[r].path));
    EXPECT_EQ(files[r].role, "worker");
    // One COMP node per op and one collective per bucket.
    EXPECT_EQ(files[r].nodes, static_cast<int>(w.ops.size() + buckets.size()));
  }
  std::vector<std::string> warnings;
  const workload::Workload back = read_chakra_trace(files[2].path, &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(back.name, "resnet50");
  EXPECT_EQ(back.batch_per_worker, 64);
  EXPECT_EQ(back.lanes, w.lanes);
  expect_same_ops(w, back);
  // One tensor per collective: its size is the bucket's, produced by the op completing it.
  ASSERT_EQ(back.tensors.size(), buckets.size());
  for (size_t b = 0; b < buckets.size(); ++b) {
    int producer = -1;
    for (int t : buckets[b].tensors) producer = std::max(producer, w.tensors[t].producer);
    EXPECT_NEAR(back.tensors[b].bytes, buckets[b].bytes, 0.5);
    EXPECT_EQ(back.tensors[b].producer, producer);
  }
  // Re-bucketing the imported gradients at the same size gives the same collectives.
  const auto again = workload::make_buckets(back, 25e6);
  ASSERT_EQ(again.size(), buckets.size());
  for (size_t b = 0; b < buckets.size(); ++b) EXPECT_NEAR(again[b].bytes, buckets[b].bytes, 0.5);
  fs::remove_all(dir);
}

TEST(ChakraTrace, ParameterServerRoundTripKeepsTensorsProducersAndConsumers) {
  const workload::Workload w = resnet();
  scheme::PsConfig ps;
  ps.count = 2;
  ps.partition = scheme::PsPartition::Split;  // every tensor in two pieces: pairs merge by tag
  ChakraExport how;
  how.workers = 3;
  how.parameter_server = true;
  how.ps_count = 2;
  how.ps_apply_time = 20e-6;
  for (const auto& p : scheme::place_parameters(w, ps)) how.pieces.push_back({p.tensor, p.shard, p.bytes});
  const fs::path dir = temp_dir("ps");
  const auto files = write_chakra_traces((dir / "job").string(), w, how);
  ASSERT_EQ(files.size(), 5u);  // 3 workers + 2 servers
  EXPECT_EQ(files[3].role, "ps");
  EXPECT_EQ(files[3].rank, 3);
  const workload::Workload back = read_chakra_trace(files[1].path);
  expect_same_ops(w, back);
  ASSERT_EQ(back.tensors.size(), w.tensors.size());
  for (size_t t = 0; t < w.tensors.size(); ++t) {
    SCOPED_TRACE(w.tensors[t].name);
    EXPECT_EQ(back.tensors[t].name, w.tensors[t].name);
    EXPECT_NEAR(back.tensors[t].bytes, w.tensors[t].bytes, 1.0);  // two pieces, each rounded
    EXPECT_EQ(back.tensors[t].producer, w.tensors[t].producer);
    EXPECT_EQ(back.tensors[t].consumers, w.tensors[t].consumers);
  }
  // A server's file reads as its apply ops: 3 workers x 161 tensors x 1 piece each on shard 0.
  const workload::Workload server = read_chakra_trace(files[3].path);
  EXPECT_EQ(server.ops.size(), 3 * w.tensors.size());
  EXPECT_EQ(server.lanes, std::vector<std::string>{"cpu"});
  EXPECT_NEAR(server.ops[0].duration, 20e-6, 1e-12);
  fs::remove_all(dir);
}

TEST(ChakraTrace, ExportCommandWritesOneFilePerRank) {
  const fs::path dir = temp_dir("cli");
  const std::string prefix = (dir / "sub" / "vgg").string();
  const std::string cmd = std::string(STEPCAST_BINARY) + " export --chakra " + prefix + " " +
                          STEPCAST_SOURCE_DIR + "/examples/vgg16-allreduce.yaml --workers 2 > " +
                          (dir / "out.txt").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_bytes(dir / "out.txt");
  EXPECT_NE(read_bytes(dir / "out.txt").find(prefix + ".1.et"), std::string::npos);
  const workload::Workload back = read_chakra_trace(prefix + ".1.et");
  EXPECT_EQ(back.name, "vgg16");
  EXPECT_FALSE(back.tensors.empty());
  fs::remove_all(dir);
}

// Hand-encoded messages: the tests cannot include the generated protobuf code.
std::string varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
std::string delimited(const std::string& message) {
  std::string out = varint(message.size());
  out += message;
  return out;
}
// GlobalMetadata{version: "0.0.4"}
std::string metadata() { return delimited(std::string("\x0a\x05") + "0.0.4"); }
// Node{id, name, type, duration_micros}
std::string node(uint64_t id, const std::string& name, uint64_t type, uint64_t micros) {
  std::string m;
  m += '\x08';
  m += varint(id);
  m += '\x12';
  m += varint(name.size());
  m += name;
  m += '\x18';
  m += varint(type);
  m += '\x38';
  m += varint(micros);
  return delimited(m);
}

std::string error_of(const fs::path& p) {
  try {
    (void)read_chakra_trace(p.string());
  } catch (const Error& e) {
    EXPECT_EQ(e.where().file, p.string());
    return e.what();
  }
  ADD_FAILURE() << "no error for " << p;
  return "";
}

TEST(ChakraTrace, HandEncodedNodesRead) {
  const fs::path dir = temp_dir("hand");
  write_bytes(dir / "t.0.et", metadata() + node(7, "a", 4, 1500) + node(9, "b", 4, 250));
  const workload::Workload w = read_chakra_trace((dir / "t.0.et").string());
  ASSERT_EQ(w.ops.size(), 2u);
  EXPECT_EQ(w.name, "t");
  EXPECT_DOUBLE_EQ(w.ops[0].duration, 1.5e-3);
  EXPECT_EQ(w.ops[1].name, "b");
  EXPECT_TRUE(w.ops[1].deps.empty());  // no deps given: only the lane orders them
  fs::remove_all(dir);
}

TEST(ChakraTrace, BrokenFilesGiveErrorsNamingFileAndPlace) {
  const fs::path dir = temp_dir("broken");
  const std::string good = metadata() + node(1, "a", 4, 10) + node(2, "b", 4, 10);

  write_bytes(dir / "truncated.et", good.substr(0, good.size() - 3));
  EXPECT_NE(error_of(dir / "truncated.et").find("message 3: truncated message"), std::string::npos)
      << error_of(dir / "truncated.et");

  write_bytes(dir / "varint.et", metadata() + std::string(11, '\xff'));
  EXPECT_NE(error_of(dir / "varint.et").find("bad or truncated length varint"), std::string::npos);

  write_bytes(dir / "type.et", metadata() + node(1, "a", 4, 10) + node(42, "weird", 99, 10));
  EXPECT_NE(error_of(dir / "type.et").find("node 42: unknown node type 99"), std::string::npos)
      << error_of(dir / "type.et");

  write_bytes(dir / "dup.et", metadata() + node(1, "a", 4, 10) + node(1, "b", 4, 10));
  EXPECT_NE(error_of(dir / "dup.et").find("node 1: duplicate node id"), std::string::npos);

  // Node{id 5, type COMP, data_deps [77]}
  write_bytes(dir / "dep.et", metadata() + delimited("\x08\x05\x18\x04\x28\x4d"));
  EXPECT_NE(error_of(dir / "dep.et").find("node 5: depends on unknown node id 77"), std::string::npos);

  // Two nodes depending on each other.
  write_bytes(dir / "cycle.et",
              metadata() + delimited("\x08\x01\x18\x04\x28\x02") + delimited("\x08\x02\x18\x04\x28\x01"));
  EXPECT_NE(error_of(dir / "cycle.et").find("dependency cycle"), std::string::npos);

  write_bytes(dir / "garbage.et", metadata() + delimited("\xff\xff\xff"));
  EXPECT_NE(error_of(dir / "garbage.et").find("not a valid Chakra Node"), std::string::npos);

  write_bytes(dir / "empty.et", "");
  EXPECT_NE(error_of(dir / "empty.et").find("empty Chakra trace"), std::string::npos);

  write_bytes(dir / "nocomp.et", metadata() + node(1, "m", 1, 0));
  EXPECT_NE(error_of(dir / "nocomp.et").find("no COMP nodes"), std::string::npos);

  EXPECT_NE(error_of(dir / "missing.et").find("cannot open"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace chakra_trace_test
}  // namespace
}  // namespace stepcast::profile
