#include "models/model_reading.h"

#include <charconv>

namespace rankd::engine::models {

std::vector<std::string_view> SplitSpaces(std::string_view text) {
  std::vector<std::string_view> words;
  while (!text.empty()) {
    const std::size_t space = text.find(' ');
    if (space != 0) words.push_back(text.substr(0, space));
    if (space == std::string_view::npos) break;
    text.remove_prefix(space + 1);
  }
  return words;
}

bool ParseDouble(std::string_view word, double& value) {
  if (word.empty()) return false;
  const auto result = std::from_chars(word.data(), word.data() + word.size(), value);
  return result.ec == std::errc() && result.ptr == word.data() + word.size();
}

bool ParseFloat(std::string_view word, float& value) {
  if (word.empty()) return false;
  const auto result = std::from_chars(word.data(), word.data() + word.size(), value);
  return result.ec == std::errc() && result.ptr == word.data() + word.size();
}

bool ParseInteger(std::string_view word, std::int64_t& value) {
  if (word.empty()) return false;
  const auto result = std::from_chars(word.data(), word.data() + word.size(), value);
  return result.ec == std::errc() && result.ptr == word.data() + word.size();
}

std::string Excerpt(std::string_view text) {
  return text.size() <= 40 ? std::string(text) : std::string(text.substr(0, 40)) + "...";
}

std::optional<std::string> CheckTreeShape(const TreeModel::Tree& tree) {
  const std::size_t nodes = tree.nodes.size();
  const std::size_t leaves = tree.leaves.size();
  if (nodes == 0) {
    if (leaves != 1)
      return "a tree without splits has " + std::to_string(leaves) + " leaves, not 1";
    return std::nullopt;
  }
  if (leaves != nodes + 1) {
    return std::to_string(nodes) + " splits and " + std::to_string(leaves) +
           " leaves: a binary tree has one leaf more than splits";
  }
  std::vector<std::uint8_t> node_parents(nodes, 0), leaf_parents(leaves, 0);
  for (const TreeModel::Node& node : tree.nodes) {
    for (const std::int32_t child : {node.left, node.right}) {
      if (child >= 0) {
        if (static_cast<std::size_t>(child) >= nodes) return "a child index is out of range";
        if (child == 0) return "the root (node 0) is a child of another node";
        if (++node_parents[static_cast<std::size_t>(child)] > 1) {
          return "node " + std::to_string(child) + " is the child of two nodes";
        }
      } else {
        const std::size_t leaf = static_cast<std::size_t>(~child);
        if (leaf >= leaves) return "a leaf index is out of range";
        if (++leaf_parents[leaf] > 1) {
          return "leaf " + std::to_string(leaf) + " is the child of two nodes";
        }
      }
    }
  }
  // Reached from the root: with one parent each, an unreached node would sit on a cycle.
  std::vector<std::int32_t> stack = {0};
  std::size_t reached = 0;
  while (!stack.empty()) {
    const std::int32_t at = stack.back();
    stack.pop_back();
    ++reached;
    for (const std::int32_t child : {tree.nodes[static_cast<std::size_t>(at)].left,
                                     tree.nodes[static_cast<std::size_t>(at)].right}) {
      if (child >= 0) stack.push_back(child);
    }
    if (reached > nodes) break;
  }
  if (reached != nodes) return "some nodes are not reached from the root";
  return std::nullopt;
}

}  // namespace rankd::engine::models
