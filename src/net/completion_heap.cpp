#include "net/completion_heap.hpp"

#include "net/indexed_heap.hpp"

namespace stepcast::net {

void CompletionHeap::grow(std::vector<uint32_t>& slots, uint32_t index) {
  slots.resize(index + 1, kNotQueued);
}

void CompletionHeap::schedule(uint32_t slot, Entry entry) {
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
