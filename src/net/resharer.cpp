#include "net/resharer.hpp"

#include "net/component_fill.hpp"
#include "net/incremental_resharer.hpp"

namespace stepcast::net {

std::unique_ptr<Resharer> make_resharer(Resharing resharing, MaxMinSystem& system, FlowGroups& groups) {
  if (resharing == Resharing::Full) return std::make_unique<FullResharer>(system, groups);
  return std::make_unique<IncrementalResharer>(system, groups);
}

}  // namespace stepcast::net
