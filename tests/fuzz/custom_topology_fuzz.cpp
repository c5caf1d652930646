// Custom topologies (the YAML file cluster.custom points at, with cluster.topology: custom), read
// through a scenario as the command reads them; what parses is built into links and routed
// between every pair of nodes.
#include <fmt/format.h>

#include "fuzz_support.hpp"
#include "stepcast/cluster/cluster.hpp"
#include "stepcast/scenario/scenario.hpp"

namespace {

void build_and_route(const stepcast::cluster::ClusterSpec& spec) {
  const stepcast::cluster::Cluster c = stepcast::cluster::build_cluster(spec);
  for (int a = 0; a < c.num_nodes; ++a) {
    for (int b = 0; b < c.num_nodes; ++b) {
      const stepcast::cluster::Path p = c.path({a, 0}, {b, 0});
      if (a != b && p.links.empty()) stepcast_fuzz::bug(fmt::format("no path from node {} to node {}", a, b));
      if (!std::isfinite(p.latency) || p.latency < 0) stepcast_fuzz::bug(fmt::format("path latency {}", p.latency));
      for (const uint32_t link : p.links) {
        if (link >= c.links.size()) stepcast_fuzz::bug(fmt::format("path uses link {} of {}", link, c.links.size()));
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const stepcast_fuzz::InputFile file("topology.yaml");
  const std::string& path = file.write(stepcast_fuzz::as_text(data, size));
  for (const int workers : {2, 8}) {
    const std::string yaml = fmt::format(
        "workload: {{model: resnet50, step_time: 100ms}}\n"
        "cluster: {{workers: {}, topology: custom, custom: '{}'}}\n",
        workers, path);
    stepcast_fuzz::only_input_errors([&] {
      const stepcast::scenario::Scenario s =
          stepcast::scenario::parse_scenario(yaml, (file.dir() / "scenario.yaml").string());
      build_and_route(s.cluster);
    });
  }
  return 0;
}
