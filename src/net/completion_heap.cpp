#include "net/completion_heap.hpp"

#include "net/indexed_heap.hpp"

namespace stepcast::net {

void CompletionHeap::schedule_flow(uint32_t flow, double finish) {
  if (flow >= flow_slot_.size()) flow_slot_.resize(flow + 1, kNotQueued);
  schedule(flow_slot_[flow], {finish, flow});
}

void CompletionHeap::schedule_group(uint32_t group, uint32_t first, double finish) {
  if (group >= group_slot_.size()) group_slot_.resize(group + 1, kNotQueued);
  schedule(group_slot_[group], {finish, first, group});
}

void CompletionHeap::schedule(uint32_t slot, const Entry& entry) {
  auto place_entry = [this](uint32_t at, const Entry& e) { place(at, e); };
  if (slot == kNotQueued) {
    indexed_heap::push(heap_, entry, place_entry);
  } else {
    indexed_heap::replace(heap_, slot, entry, place_entry);
  }
}

void CompletionHeap::erase_at(uint32_t slot) {
  const Entry& entry = heap_[slot];
  (entry.group == kNoGroup ? flow_slot_[entry.flow] : group_slot_[entry.group]) = kNotQueued;
  indexed_heap::erase(heap_, slot, [this](uint32_t at, const Entry& e) { place(at, e); });
}

}  // namespace stepcast::net
