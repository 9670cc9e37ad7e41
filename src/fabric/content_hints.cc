#include "fabric/content_hints.h"

#include <xxhash.h>

namespace weft::fabric {
namespace {

uint64_t PathKey(std::string_view path) {
  return XXH3_64bits(path.data(), path.size());
}

}  // namespace

void ContentHints::Remember(std::string_view hub_path, const std::vector<ChunkRef>& chunks) {
  if (chunks.empty() || chunks.size() > kMaxChunksPerFile || capacity_ == 0) return;
  std::vector<ChunkId> ids;
  ids.reserve(chunks.size());
  for (const ChunkRef& c : chunks) ids.push_back(c.id);
  const uint64_t key = PathKey(hub_path);
  std::lock_guard lock(mu_);
  if (current_.size() >= capacity_ && !current_.contains(key)) {
    previous_ = std::move(current_);
    current_ = Map();
  }
  current_[key] = std::move(ids);
}

std::vector<ChunkId> ContentHints::Recall(std::string_view hub_path) {
  const uint64_t key = PathKey(hub_path);
  std::lock_guard lock(mu_);
  if (auto it = current_.find(key); it != current_.end()) return it->second;
  auto it = previous_.find(key);
  if (it == previous_.end()) return {};
  // Seen again: it moves to the current generation.
  std::vector<ChunkId> ids = std::move(it->second);
  previous_.erase(it);
  if (current_.size() >= capacity_) {
    previous_ = std::move(current_);
    current_ = Map();
  }
  current_[key] = ids;
  return ids;
}

}  // namespace weft::fabric
