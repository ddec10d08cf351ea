// What must hold for every SlotMap, however it was built (a reply, MOVED redirects), checked the
// same way by the unit tests and the fuzz target: each function returns "" when everything holds,
// else a description of the first thing broken.
//
// Header-only; no thread affinity (plain functions on their arguments).
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/redis/hash_slot.h"
#include "rankd/redis/slot_map.h"

namespace rankd::redis::testing {

// Node indexes are in range and name distinct addresses; a slot's replicas are distinct and
// exclude its primary; covered_slots() counts the slots with a primary; Ranges() partitions
// 0-16383 into maximal runs that agree with PrimaryFor() and ReplicasFor().
inline std::string CheckSlotMap(const SlotMap& map) {
  const int node_count = static_cast<int>(map.nodes().size());
  for (int i = 0; i < node_count; ++i) {
    const ClusterNode& node = map.nodes()[static_cast<std::size_t>(i)];
    if (map.FindNode(node.host, node.port) != i) {
      return "node " + std::to_string(i) + " is not found at its own address";
    }
  }
  std::size_t covered = 0;
  for (std::size_t s = 0; s < kClusterSlots; ++s) {
    const auto slot = static_cast<std::uint16_t>(s);
    const int primary = map.PrimaryFor(slot);
    if (primary < -1 || primary >= node_count) return "slot " + std::to_string(s) + ": bad primary";
    if (primary >= 0) ++covered;
    const std::span<const int> replicas = map.ReplicasFor(slot);
    for (std::size_t i = 0; i < replicas.size(); ++i) {
      if (replicas[i] < 0 || replicas[i] >= node_count || replicas[i] == primary) {
        return "slot " + std::to_string(s) + ": bad replica " + std::to_string(replicas[i]);
      }
      for (std::size_t j = 0; j < i; ++j) {
        if (replicas[j] == replicas[i]) return "slot " + std::to_string(s) + ": replica twice";
      }
    }
  }
  if (covered != map.covered_slots()) return "covered_slots() is not the slots with a primary";
  if (map.covers_all_slots() != (covered == kClusterSlots)) return "covers_all_slots() is wrong";
  if (map.PrimaryFor(kClusterSlots) != -1 || !map.ReplicasFor(kClusterSlots).empty()) {
    return "a slot past the last has an owner";
  }
  std::size_t next = 0;
  const std::vector<SlotMap::SlotRange> ranges = map.Ranges();
  for (std::size_t r = 0; r < ranges.size(); ++r) {
    const SlotMap::SlotRange& range = ranges[r];
    if (range.first != next || range.last < range.first) return "Ranges() leave a gap";
    if (r > 0 && ranges[r - 1].primary == range.primary &&
        ranges[r - 1].replicas == range.replicas) {
      return "Ranges() are not maximal";
    }
    for (std::size_t s = range.first; s <= range.last; ++s) {
      const auto slot = static_cast<std::uint16_t>(s);
      const std::span<const int> replicas = map.ReplicasFor(slot);
      if (map.PrimaryFor(slot) != range.primary ||
          !std::equal(replicas.begin(), replicas.end(), range.replicas.begin(),
                      range.replicas.end())) {
        return "Ranges() disagree with slot " + std::to_string(s);
      }
    }
    next = std::size_t{range.last} + 1;
  }
  if (next != kClusterSlots) return "Ranges() end at " + std::to_string(next);
  return "";
}

// Every key lands in exactly one batch, the batch of its slot's primary; batches have distinct
// nodes, appear in the order their first keys do, and list their keys ascending.
inline std::string CheckSplit(const SlotMap& map, std::span<const std::string_view> keys,
                              const std::vector<NodeBatch>& batches) {
  std::vector<int> seen(keys.size(), 0);
  std::size_t previous_first = 0;
  for (std::size_t b = 0; b < batches.size(); ++b) {
    const NodeBatch& batch = batches[b];
    if (batch.key_indexes.empty()) return "batch " + std::to_string(b) + " is empty";
    if (b > 0 && batch.key_indexes.front() <= previous_first) return "batches out of order";
    previous_first = batch.key_indexes.front();
    for (std::size_t c = 0; c < b; ++c) {
      if (batches[c].node == batch.node) return "two batches for one node";
    }
    for (std::size_t i = 0; i < batch.key_indexes.size(); ++i) {
      const std::size_t k = batch.key_indexes[i];
      if (k >= keys.size()) return "key index out of range";
      if (i > 0 && batch.key_indexes[i - 1] >= k) return "key indexes not ascending";
      ++seen[k];
      if (map.PrimaryFor(HashSlot(keys[k])) != batch.node) {
        return "key " + std::to_string(k) + " in the batch of another node";
      }
    }
  }
  for (std::size_t k = 0; k < keys.size(); ++k) {
    if (seen[k] != 1)
      return "key " + std::to_string(k) + " is in " + std::to_string(seen[k]) + " batches";
  }
  return "";
}

}  // namespace rankd::redis::testing
