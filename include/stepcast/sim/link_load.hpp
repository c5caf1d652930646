// What the network carried on one link direction over a run: the one shape every result (a
// training prediction, a stand-alone collective) reports its links in, and the one the JSON
// writers print ("links": [{"name", "busy", "bytes"}], busiest first).
#pragma once

#include <string>

namespace stepcast::sim {

struct LinkLoad {
  std::string name;  ///< the cluster's name for the link direction, "worker3.nic.up"
  double busy = 0;   ///< 0..1: bytes carried / (capacity x duration)
  double bytes = 0;  ///< carried over the run (a prediction: its measured steps)
  bool operator==(const LinkLoad&) const = default;
};

}  // namespace stepcast::sim
