#include "fabric/internal/spoke_chunks.h"

#include <algorithm>
#include <future>
#include <unordered_set>

#include "chunk/zero_chunks.h"
#include "fabric/wire.h"

namespace weft::fabric {
namespace {

// Files and chunk refs whose content a spoke remembers for its lookups' hints and deltas, per
// generation (two are kept: at most about 60 MB).
constexpr size_t kHintedFiles = 256 << 10;
constexpr size_t kHintedChunks = 512 << 10;

}  // namespace

SpokeChunks::SpokeChunks(HubClient* hub, std::shared_ptr<ChunkStore> store, uint64_t cache_bytes,
                         uint64_t batch_bytes)
    : hub_(hub), batch_bytes_(batch_bytes), hints_(kHintedFiles, kHintedChunks) {
  if (cache_bytes > 0) {
    bounded_ = std::make_shared<BoundedChunkStore>(std::move(store), cache_bytes);
    store = bounded_;
  }
  // Holes are never fetched, uploaded or cached (chunk/zero_chunks.h).
  chunks_ = std::make_shared<ZeroChunkStore>(std::move(store));
}

void SpokeChunks::Hold(const ChunkId& id) {
  if (bounded_) bounded_->Hold(id);
}

void SpokeChunks::Release(const std::vector<ChunkId>& ids) {
  if (!bounded_ || ids.empty()) return;
  for (const ChunkId& id : ids) bounded_->Release(id);
  bounded_->Trim();
}

SpokeChunkStats SpokeChunks::Stats() const {
  SpokeChunkStats s;
  s.chunk_hits = chunk_hits_;
  s.chunks_fetched = chunks_fetched_;
  s.bytes_fetched = bytes_fetched_;
  s.uncached = uncached_;
  if (bounded_) {
    BoundedChunkStoreStats b = bounded_->bounded_stats();
    s.evictions = b.evictions;
    s.evicted_bytes = b.evicted_bytes;
  }
  return s;
}

bool SpokeChunks::DescribeHeld(const std::string& hub_path, uint64_t inline_bytes, json* args) {
  std::optional<KnownContent> known = hints_.Recall(hub_path);
  if (!known) return false;
  uint64_t size = 0;
  for (const ChunkRef& c : known->latest.chunks) size += c.length;
  if (size > inline_bytes) return false;
  json have = json::array();
  for (const ChunkRef& c : known->latest.chunks) {
    if (have.size() < kMaxHaveIds && chunks_->Contains(c.id)) have.push_back(c.id.ToHex());
  }
  if (have.empty()) return false;
  (*args)["have"] = std::move(have);
  (*args)["base_version"] = known->latest.version_id;
  return true;
}

Status SpokeChunks::FetchMany(const std::vector<FetchItem>& items, bool force,
                              FetchedChunks* kept) {
  using Batch = std::vector<std::pair<size_t, std::vector<size_t>>>;  // (item, indices)
  std::vector<Batch> batches(1);
  uint64_t batch_bytes = 0;
  std::unordered_set<ChunkId, ChunkIdHash> seen;
  for (size_t k = 0; k < items.size(); ++k) {
    for (size_t i : items[k].indices) {
      const ChunkRef& c = (*items[k].chunks)[i];
      if (!seen.insert(c.id).second) continue;
      if (!force && chunks_->Contains(c.id)) {
        ++chunk_hits_;
        continue;
      }
      if (batch_bytes + c.length > batch_bytes_ && !batches.back().empty()) {
        batches.emplace_back();
        batch_bytes = 0;
      }
      Batch& b = batches.back();
      if (b.empty() || b.back().first != k) b.emplace_back(k, std::vector<size_t>());
      b.back().second.push_back(i);
      batch_bytes += c.length;
    }
  }
  if (batches.back().empty()) batches.pop_back();
  std::mutex kept_mu;
  // The earlier version of each file this spoke holds chunks of: the hub sends the wanted
  // chunks as deltas against its chunks at the same offsets.
  std::vector<std::optional<KnownVersion>> bases(items.size());
  for (size_t k = 0; k < items.size(); ++k) bases[k] = BaseFor(items[k]);
  auto fetch = [&](const Batch& batch, bool with_bases,
                   std::unordered_set<ChunkId, ChunkIdHash>* unresolved) -> Status {
    json wanted = json::array();
    size_t expected = 0;
    for (const auto& [k, indices] : batch) {
      json item = {
          {"path", items[k].hub_path}, {"version", items[k].version}, {"indices", indices}};
      if (with_bases && bases[k]) AddDeltaBases(*items[k].chunks, indices, *bases[k], &item);
      wanted.push_back(std::move(item));
      expected += indices.size();
    }
    json args = {{"items", std::move(wanted)}};
    uint64_t wire = 0;
    WEFT_ASSIGN_OR_RETURN(std::string frames, hub_->CallBinary("fetch", args, &wire));
    std::vector<ChunkId> undecoded;
    WEFT_ASSIGN_OR_RETURN(size_t got, StoreFrames(frames, kept, &kept_mu, &undecoded, wire));
    if (got + undecoded.size() != expected || (!undecoded.empty() && !with_bases)) {
      return Internal("hub sent " + std::to_string(got) + " of " + std::to_string(expected) +
                      " chunks");
    }
    if (unresolved != nullptr) unresolved->insert(undecoded.begin(), undecoded.end());
    return OkStatus();
  };
  // A delta whose base was evicted meanwhile cannot be decoded: those chunks again, whole.
  auto fetch_batch = [&](const Batch& batch) -> Status {
    std::unordered_set<ChunkId, ChunkIdHash> unresolved;
    WEFT_RETURN_IF_ERROR(fetch(batch, true, &unresolved));
    if (unresolved.empty()) return OkStatus();
    Batch again;
    for (const auto& [k, indices] : batch) {
      std::vector<size_t> redo;
      for (size_t i : indices) {
        if (unresolved.contains((*items[k].chunks)[i].id)) redo.push_back(i);
      }
      if (!redo.empty()) again.emplace_back(k, std::move(redo));
    }
    return fetch(again, false, nullptr);
  };
  // At most one batch per connection at a time; waves of them for a long read. The last
  // batch of a wave runs on this thread: most reads need one batch, and a thread started
  // for it cost more than the batch on a small file.
  const size_t parallel = std::max<size_t>(1, hub_->connections());
  Status first;
  for (size_t start = 0; start < batches.size() && first.ok(); start += parallel) {
    const size_t end = std::min(batches.size(), start + parallel);
    std::vector<std::future<Status>> running;
    for (size_t b = start; b + 1 < end; ++b) {
      running.push_back(std::async(std::launch::async, fetch_batch, std::cref(batches[b])));
    }
    first = fetch_batch(batches[end - 1]);
    for (auto& f : running) {
      Status s = f.get();
      if (first.ok() && !s.ok()) first = s;
    }
  }
  return first;
}

std::optional<KnownVersion> SpokeChunks::BaseFor(const FetchItem& item) {
  std::optional<KnownContent> known = hints_.Recall(item.hub_path);
  if (!known) return std::nullopt;
  if (known->latest.version_id != item.version) return known->latest;
  return known->previous;
}

void SpokeChunks::AddDeltaBases(const std::vector<ChunkRef>& chunks,
                                const std::vector<size_t>& indices, const KnownVersion& base,
                                json* item) {
  const std::vector<uint64_t> base_ends = ChunkEnds(base.chunks);
  const std::vector<uint64_t> ends = ChunkEnds(chunks);
  const uint64_t size = ends.empty() ? 0 : ends.back();
  json pairs = json::array();
  for (size_t i : indices) {
    json pair = {i};
    for (size_t j : DeltaBaseIndices(base_ends, ends[i] - chunks[i].length, ends[i], size)) {
      if (chunks_->Contains(base.chunks[j].id)) pair.push_back(j);
    }
    if (pair.size() > 1) pairs.push_back(std::move(pair));
  }
  if (pairs.empty()) return;
  (*item)["base_version"] = base.version_id;
  (*item)["bases"] = std::move(pairs);
}

Result<size_t> SpokeChunks::StoreFrames(std::string_view in, FetchedChunks* kept,
                                        std::mutex* kept_mu, std::vector<ChunkId>* unresolved,
                                        std::optional<uint64_t> wire_bytes) {
  bytes_fetched_ += wire_bytes.value_or(in.size());
  size_t got = 0;
  const BaseLookup bases = [this](const ChunkId& id) -> std::shared_ptr<const std::string> {
    Result<std::shared_ptr<const std::string>> base = chunks_->GetShared(id);
    return base.ok() ? *base : nullptr;
  };
  while (true) {
    WEFT_ASSIGN_OR_RETURN(std::optional<ChunkFrame> frame, NextChunkFrame(&in, &bases));
    if (!frame) return got;
    if (frame->unresolved) {
      if (unresolved != nullptr) unresolved->push_back(frame->id);
      continue;
    }
    // A cache whose disk is full still serves: the chunk goes to the reader that asked for it,
    // uncached (read again later, it is fetched again). Any other store failure is an error.
    if (Status put = chunks_->Put(frame->id, AsBytes(frame->plaintext)).status(); !put.ok()) {
      if (put.code() != StatusCode::kResourceExhausted) return put;
      ++uncached_;
    }
    if (kept != nullptr) {
      std::lock_guard lock(*kept_mu);
      if (auto it = kept->find(frame->id); it != kept->end()) {
        it->second = std::make_shared<const std::string>(std::move(frame->plaintext));
      }
    }
    ++chunks_fetched_;
    ++got;
  }
}

}  // namespace weft::fabric
