// What the network carried on one link direction over a run: the one shape every result (a
// training prediction, a stand-alone collective) reports its links in, and the one the JSON
// writers print ("links": [{"name", "busy", "bytes"}], busiest first); and the same by class of
// link ("link_classes"), over every link, where `links` keeps only the busiest.
#pragma once

#include <cstddef>
#include <string>

namespace stepcast::sim {

struct LinkLoad {
  std::string name;  ///< the cluster's name for the link direction, "worker3.nic.up"
  double busy = 0;   ///< 0..1: bytes carried / (capacity x duration)
  double bytes = 0;  ///< carried over the run (a prediction: its measured steps)
  bool operator==(const LinkLoad&) const = default;
};

/// The links of one class (a role: the workers' NICs, the intra-node links, one class of
/// switch-to-switch link) that carried bytes over a run, every one of them counted, whichever a
/// result names in its busiest `links`.
struct LinkClassLoad {
  std::string name;       ///< "worker NIC", "PS NIC", "PCIe", "intra-node link", "leaf->spine link"
  std::size_t links = 0;  ///< link directions of the class that carried bytes
  double busiest = 0;     ///< 0..1: the busiest of them
  double mean_busy = 0;   ///< 0..1: their mean
  double bytes = 0;       ///< carried by all of them over the run
  bool operator==(const LinkClassLoad&) const = default;
};

}  // namespace stepcast::sim
