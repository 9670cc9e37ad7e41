// ChunkStore: content-addressed storage of immutable chunks keyed by ChunkId.
// Implementations: PackChunkStore (pack files on a FileSystem) and MemChunkStore (the fake).
// All methods are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.h"
#include "base/status.h"
#include "chunk/chunk_id.h"

namespace weft {

struct ChunkStoreStats {
  uint64_t chunks = 0;        // distinct chunks stored
  uint64_t raw_bytes = 0;     // sum of their plaintext sizes
  uint64_t stored_bytes = 0;  // sum of their sizes as stored (after compression)
  uint64_t pack_files = 0;
  uint64_t pack_bytes = 0;  // bytes on disk in pack files, garbage included
};

struct SweepStats {
  uint64_t chunks_removed = 0;
  uint64_t bytes_reclaimed = 0;  // pack bytes freed on disk
  uint64_t packs_rewritten = 0;
  uint64_t packs_deleted = 0;
};

// One finding of Verify(): what is wrong and where ("pack 7 offset 1234: hash mismatch").
struct ChunkProblem {
  std::string where;
  Status status;
};

// What LendMany hands over: views of chunks' plaintexts, valid during the call only.
using ChunkUser = std::function<Status(std::span<const std::string_view> chunks)>;

// Views of chunks held as shared strings, to lend them.
inline std::vector<std::string_view> ViewsOf(
    const std::vector<std::shared_ptr<const std::string>>& chunks) {
  std::vector<std::string_view> views;
  views.reserve(chunks.size());
  for (const auto& c : chunks) views.emplace_back(*c);
  return views;
}

class ChunkStore {
 public:
  virtual ~ChunkStore() = default;

  // Stores `data` whose SHA-256 is `id` (the caller hashed it). A chunk already present is not
  // stored again. Returns true if the chunk was new. Not durable until Flush().
  virtual Result<bool> Put(const ChunkId& id, ByteSpan data) = 0;

  // Makes every chunk Put so far durable: after OK, a crash cannot lose them.
  virtual Status Flush() = 0;

  virtual bool Contains(const ChunkId& id) = 0;

  // The chunk's plaintext, checked (see docs/formats/pack.md, "Reading"); Corruption (naming
  // the pack) if the stored bytes changed; NotFound if absent.
  virtual Result<std::string> Get(const ChunkId& id) = 0;

  // The same bytes as shared immutable memory; a caching store hands out its copy without
  // copying again.
  virtual Result<std::shared_ptr<const std::string>> GetShared(const ChunkId& id) {
    WEFT_ASSIGN_OR_RETURN(std::string data, Get(id));
    return std::make_shared<const std::string>(std::move(data));
  }

  // GetShared for a read that will not come back soon (a large object streamed once): a
  // caching store serves a hit but does not keep a miss, so one scan does not flush its hot
  // set. The default is GetShared.
  virtual Result<std::shared_ptr<const std::string>> GetSharedOnce(const ChunkId& id) {
    return GetShared(id);
  }

  // GetSharedOnce of each of `ids`, in order, asked for together: a store on disk reads
  // records that lie next to each other (a file's chunks, appended in order) with one read,
  // where a WillNeed and a read per chunk cost the disk the same but the caller more system
  // calls. The default calls GetSharedOnce for each.
  virtual Result<std::vector<std::shared_ptr<const std::string>>> GetManyOnce(
      std::span<const ChunkId> ids) {
    std::vector<std::shared_ptr<const std::string>> out;
    out.reserve(ids.size());
    for (const ChunkId& id : ids) {
      WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const std::string> data, GetSharedOnce(id));
      out.push_back(std::move(data));
    }
    return out;
  }

  // Lends `use` the plaintexts of `ids`, in order, checked as Get checks them, without
  // keeping or copying them where the store can: a store on disk lends its read buffer. The
  // views are valid only during the call, and `use` must not call into this store on the
  // same thread. For bytes written out at once (a FUSE reply). The default lends
  // GetManyOnce's chunks.
  virtual Status LendMany(std::span<const ChunkId> ids, const ChunkUser& use) {
    WEFT_ASSIGN_OR_RETURN(std::vector<std::shared_ptr<const std::string>> chunks, GetManyOnce(ids));
    return use(ViewsOf(chunks));
  }

  // A hint that these chunks will be read soon: a store on disk starts reading them in the
  // background, one I/O per run of neighbouring records, so the Gets that follow
  // do not each wait for the disk in turn. Unknown ids are ignored. The default does nothing.
  virtual void WillNeed(std::span<const ChunkId> /*ids*/) {}

  // Removes every chunk for which `is_live` is false and reclaims the space (pack compaction).
  // Never removes a chunk for which `is_live` is true.
  virtual Result<SweepStats> Sweep(const std::function<bool(const ChunkId&)>& is_live) = 0;

  // Reads and verifies every stored chunk; appends what is wrong to `problems`.
  virtual Status Verify(std::vector<ChunkProblem>* problems) = 0;

  virtual ChunkStoreStats Stats() = 0;
};

}  // namespace weft
