#include "fabric/content_hints.h"

#include <xxhash.h>

namespace weft::fabric {
namespace {

uint64_t PathKey(std::string_view path) {
  return XXH3_64bits(path.data(), path.size());
}

size_t RefsOf(const KnownContent& c) {
  return c.latest.chunks.size() + (c.previous ? c.previous->chunks.size() : 0);
}

}  // namespace

void ContentHints::MakeRoomLocked(size_t chunks) {
  if (current_.files.size() < capacity_ && current_.chunks + chunks <= chunk_capacity_) return;
  previous_ = std::move(current_);
  current_ = Generation();
}

void ContentHints::Remember(std::string_view hub_path, const std::string& version_id,
                            const std::vector<ChunkRef>& chunks) {
  if (chunks.empty() || chunks.size() > kMaxChunksPerFile || capacity_ == 0) return;
  const uint64_t key = PathKey(hub_path);
  std::lock_guard lock(mu_);
  KnownContent content;
  if (auto it = current_.files.find(key); it != current_.files.end()) {
    content = std::move(it->second);
    current_.chunks -= RefsOf(content);
    current_.files.erase(it);
  } else if (auto old = previous_.files.find(key); old != previous_.files.end()) {
    content = std::move(old->second);
    previous_.chunks -= RefsOf(content);
    previous_.files.erase(old);
  }
  if (content.latest.version_id != version_id) {
    if (!content.latest.chunks.empty()) content.previous = std::move(content.latest);
    content.latest = KnownVersion{version_id, chunks};
  }
  MakeRoomLocked(RefsOf(content));
  current_.chunks += RefsOf(content);
  current_.files[key] = std::move(content);
}

std::optional<KnownContent> ContentHints::Recall(std::string_view hub_path) {
  const uint64_t key = PathKey(hub_path);
  std::lock_guard lock(mu_);
  if (auto it = current_.files.find(key); it != current_.files.end()) return it->second;
  auto it = previous_.files.find(key);
  if (it == previous_.files.end()) return std::nullopt;
  // Seen again: it moves to the current generation.
  KnownContent content = std::move(it->second);
  previous_.chunks -= RefsOf(content);
  previous_.files.erase(it);
  MakeRoomLocked(RefsOf(content));
  current_.chunks += RefsOf(content);
  current_.files[key] = content;
  return content;
}

}  // namespace weft::fabric
