// Private: 4-ary min-heaps over a std::vector whose entries know their slot, for the flow network's
// completion heap and its groups' moving heaps. `place(slot, entry)` stores an entry and tells its
// owner the slot, so that an owner can move or erase its one entry in place (no stale entries, no
// compaction). The order is the entries' operator<; where it is a total order (it is in both
// heaps: ties are broken by flow number), the entries come out in an order that does not depend on
// how they went in.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace stepcast::net::indexed_heap {

template <class Entry, class Place>
void sift_up(std::vector<Entry>& heap, uint32_t slot, Place place) {
  const Entry entry = heap[slot];
  while (slot > 0) {
    const uint32_t parent = (slot - 1) / 4;
    if (!(entry < heap[parent])) break;
    place(slot, heap[parent]);
    slot = parent;
  }
  place(slot, entry);
}

template <class Entry, class Place>
void sift_down(std::vector<Entry>& heap, uint32_t slot, Place place) {
  const Entry entry = heap[slot];
  const auto n = static_cast<uint32_t>(heap.size());
  for (;;) {
    const uint32_t first = 4 * slot + 1;
    if (first >= n) break;
    uint32_t best = first;
    for (uint32_t c = first + 1; c < std::min(first + 4, n); ++c) {
      if (heap[c] < heap[best]) best = c;
    }
    if (!(heap[best] < entry)) break;
    place(slot, heap[best]);
    slot = best;
  }
  place(slot, entry);
}

/// Appends `entry` and restores the order.
template <class Entry, class Place>
void push(std::vector<Entry>& heap, const Entry& entry, Place place) {
  heap.push_back(entry);
  sift_up(heap, static_cast<uint32_t>(heap.size() - 1), place);
}

/// Puts `entry` at `slot` (whose old entry's owner was told it left) and restores the order.
template <class Entry, class Place>
void replace(std::vector<Entry>& heap, uint32_t slot, const Entry& entry, Place place) {
  const bool up = slot > 0 && entry < heap[(slot - 1) / 4];
  place(slot, entry);
  if (up) {
    sift_up(heap, slot, place);
  } else {
    sift_down(heap, slot, place);
  }
}

/// Removes the entry at `slot` (its owner is told elsewhere).
template <class Entry, class Place>
void erase(std::vector<Entry>& heap, uint32_t slot, Place place) {
  const Entry last = heap.back();
  heap.pop_back();
  if (slot < heap.size()) replace(heap, slot, last, place);
}

/// Restores the order of the whole heap after its keys moved (bottom-up, in place).
template <class Entry, class Place>
void rebuild(std::vector<Entry>& heap, Place place) {
  for (auto slot = static_cast<uint32_t>(heap.size()); slot-- > 0;) sift_down(heap, slot, place);
}

}  // namespace stepcast::net::indexed_heap
