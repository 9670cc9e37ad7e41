// The files of a spoke: PortalFileReader fetches the chunks a read needs (plus read-ahead for
// a sequential reader) and tells NeuralCache what was read; PortalFileWriter cuts and stores
// what is written, held from eviction, and HubCommitter sends the hub what it lacks of them
// and commits the file there, write-through. Readers and writers belong to one thread each;
// HubCommitter is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "chunk/splitter.h"
#include "fabric/hub_client.h"
#include "fabric/internal/spoke_chunks.h"
#include "fabric/lease_table.h"
#include "fabric/neural_cache.h"
#include "vfs/content_writer.h"
#include "vfs/volume.h"

namespace weft::fabric {

// The indices of the chunks that overlap NeuralCache block `block` of a file.
std::vector<size_t> BlockChunkIndices(const std::vector<ChunkRef>& chunks, uint32_t block);

class PortalFileReader final : public FileReader {
 public:
  // `neural` may be null. `job` is the reader's NeuralCache job.
  PortalFileReader(SpokeChunks* chunks, NeuralCache* neural, uint64_t readahead_bytes,
                   FileInfo info, std::string hub_path, std::vector<ChunkRef> chunk_refs,
                   uint32_t job);

  const FileInfo& info() const override { return info_; }
  const std::vector<ChunkRef>& chunks() const override { return chunk_refs_; }
  Result<std::string> ReadAt(uint64_t offset, uint64_t length) override;
  Result<std::shared_ptr<const std::string>> ReadChunk(size_t index) override;
  // The spoke keeps every chunk it fetched in its store whatever `reuse` says: its cache
  // policy decides what stays.
  Result<std::vector<std::shared_ptr<const std::string>>> ReadChunks(size_t first, size_t last,
                                                                     Reuse reuse) override;

  // The spoke whose chunks these are (a writer of the same spoke references them).
  const SpokeChunks* source() const { return chunks_; }

 private:
  // Makes chunks [first, last] local, plus read-ahead when the reader is sequential; the
  // plaintext of those of [first, last] it fetched is handed back in `*fetched`.
  Status Ensure(size_t first, size_t last, FetchedChunks* fetched);
  // Chunk `index`, from `fetched` if Ensure handed it back, else as ReadChunk reads it.
  Result<std::shared_ptr<const std::string>> ReadEnsuredChunk(size_t index,
                                                              const FetchedChunks& fetched);
  // Tells NeuralCache of the blocks of [offset, offset + length) this reader has not read yet.
  void ReportRead(uint64_t offset, uint64_t length);
  // The ids of the chunks that overlap block `block` (cache::kBlockBytes each).
  std::vector<ChunkId> BlockChunkIds(uint32_t block) const;

  SpokeChunks* const chunks_;
  NeuralCache* const neural_;
  const uint64_t readahead_bytes_;
  FileInfo info_;
  std::string hub_path_;
  std::vector<ChunkRef> chunk_refs_;
  std::vector<uint64_t> offsets_;
  const uint32_t job_;
  std::mutex mu_;
  uint64_t next_offset_ = 0;    // GUARDED_BY(mu_): where a sequential reader goes next
  size_t fetched_through_ = 0;  // GUARDED_BY(mu_): read-ahead already covers below this
  std::vector<bool> reported_;  // GUARDED_BY(mu_): blocks NeuralCache was told of
};

struct HubCommitterOptions {
  // Commits whose missing chunks total at most this send them in the commit itself; larger
  // ones upload in requests of batch_bytes on the hub client's connections first.
  uint64_t inline_commit_bytes = 8 << 20;
  uint64_t batch_bytes = 4 << 20;
};

class HubCommitter {
 public:
  // `invalidate` is told, after each commit, the hub directories it changed.
  HubCommitter(HubClient* hub, SpokeChunks* chunks, HubCommitterOptions options,
               std::function<void(const Affected&)> invalidate)
      : hub_(hub), chunks_(chunks), options_(options), invalidate_(std::move(invalidate)) {}

  // Sends what the hub lacks of `chunks` and commits them as `hub_path`.
  Result<FileInfo> Commit(const std::string& hub_path, const WriteOptions& opts,
                          const std::string& etag, const std::vector<ChunkRef>& chunks);

  uint64_t bytes_uploaded() const { return bytes_uploaded_; }

 private:
  HubClient* const hub_;
  SpokeChunks* const chunks_;
  const HubCommitterOptions options_;
  const std::function<void(const Affected&)> invalidate_;
  std::atomic<uint64_t> bytes_uploaded_ = 0;
};

// A spoke's writer: ContentWriter (vfs/content_writer.h) storing into the spoke's chunks,
// held from eviction until the hub has them, then committed at the hub by HubCommitter.
class PortalFileWriter final : public FileWriter, private ChunkHolder {
 public:
  PortalFileWriter(HubCommitter* committer, SpokeChunks* chunks, ChunkerOptions chunker,
                   std::string local_path, std::string hub_path, WriteOptions opts);
  ~PortalFileWriter() override { Abort(); }

  Status Write(ByteSpan data) override { return content_.Write(data); }
  Status AppendFrom(FileReader& source) override { return content_.AppendFrom(source); }
  Status AppendChunk(const ChunkRef& chunk, std::optional<ByteSpan> data) override {
    return content_.AppendChunk(chunk, data);
  }
  Status WriteZeros(uint64_t length) override { return content_.WriteZeros(length); }
  Result<FileInfo> Commit() override;
  void Abort() override { content_.Abort(); }
  uint64_t bytes_written() const override { return content_.size(); }

 private:
  // --- ChunkHolder: the spoke's store, held from eviction ---
  Status Put(const ChunkId& id, ByteSpan data) override;
  // The hub may have it; if neither has it, the commit says so.
  Status HoldStored(const ChunkId& id) override;
  // Chunks a reader of this spoke read: the hub has them, so they are named, not sent.
  const std::vector<ChunkRef>* SharedChunks(FileReader& source) override;
  void Hold(const std::vector<ChunkRef>& chunks) override;
  void Release(const std::vector<ChunkRef>& chunks) override;

  HubCommitter* const committer_;
  SpokeChunks* const store_;
  std::string hub_path_;
  ContentWriter content_;  // last: its destructor releases through this holder
};

}  // namespace weft::fabric
