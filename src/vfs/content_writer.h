// ContentWriter: the part of a FileWriter that turns what is written into content - cutting
// chunks (StreamSplitter), hashing the ETag's MD5 (on a helper thread for large streams, not at
// all past WriteOptions::md5_etag_limit or kMaxHoleMd5Bytes of holes), storing large streams'
// chunks on a second thread (ChunkPipeline), holes as zero chunks, appending another reader's
// chunks without their bytes where the store has them, and checking appended chunks against
// their bytes. Every volume's writer is this plus its commit: a LocalVolume's writes its
// manifest, a spoke's sends the hub what it lacks.
//
// Where the chunks go is a ChunkHolder's business: every chunk the writer records is held
// (from garbage collection, from a cache's eviction) until Abort releases the whole list,
// after the commit or instead of it. One owner thread; the helper threads are internal.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chunk/splitter.h"
#include "vfs/volume.h"

namespace weft {

class BackgroundMd5;
class ChunkPipeline;

class ChunkHolder {
 public:
  virtual ~ChunkHolder() = default;
  // Stores a chunk and holds it. For a large stream this runs on the writer's helper thread,
  // in order.
  virtual Status Put(const ChunkId& id, ByteSpan data) = 0;
  // Holds a chunk named without its bytes (FileWriter::AppendChunk); FailedPrecondition when
  // the store neither has it nor can rely on having it.
  virtual Status HoldStored(const ChunkId& id) = 0;
  // The chunks of `source` when it reads them from this holder's store, so a writer may name
  // them without copying bytes; null otherwise. `source` keeps them alive until Hold.
  virtual const std::vector<ChunkRef>* SharedChunks(FileReader& source) = 0;
  virtual void Hold(const std::vector<ChunkRef>& chunks) = 0;
  // Releases chunks held by the calls above (each as often as it was held).
  virtual void Release(const std::vector<ChunkRef>& chunks) = 0;
};

// What a finished ContentWriter wrote.
struct WrittenContent {
  uint64_t size = 0;
  std::string etag;  // WriteOptions::etag, the MD5, or ChunksEtag
  std::vector<ChunkRef> chunks;
};

class ContentWriter {
 public:
  // `path` names the file in errors. `holder` must outlive the writer.
  ContentWriter(std::string path, ChunkerOptions chunker, WriteOptions opts, ChunkHolder* holder);
  ~ContentWriter();
  ContentWriter(const ContentWriter&) = delete;
  ContentWriter& operator=(const ContentWriter&) = delete;

  // As FileWriter's. A failure aborts the writer.
  Status Write(ByteSpan data);
  Status AppendFrom(FileReader& source);
  Status AppendChunk(const ChunkRef& chunk, std::optional<ByteSpan> data);
  Status WriteZeros(uint64_t length);

  // Ends the stream: the last chunk is cut and every chunk stored. The chunks stay held until
  // Abort. FailedPrecondition after Abort; a second Finish answers the same.
  Result<WrittenContent> Finish();
  // Releases every held chunk; later calls fail. Idempotent.
  void Abort();

  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  const WriteOptions& options() const { return opts_; }

 private:
  Status CheckOpen() const;
  std::unique_ptr<StreamSplitter> NewSplitter();
  // Ends the splitter's stream and waits until its chunks are recorded and stored.
  Status FinishChunks();
  // Records a chunk (before storing it, so Abort releases it even if the put fails) and
  // stores it.
  Status StoreChunk(const ChunkId& id, ByteSpan chunk);
  Status AppendChunks(const std::vector<ChunkRef>& shared, uint64_t size);
  Status AppendOneChunk(const ChunkRef& chunk, std::optional<ByteSpan> data);
  Status CopyFrom(FileReader& source);
  Status AbortOnError(Status s);

  const std::string path_;
  const ChunkerOptions chunker_;
  const WriteOptions opts_;
  ChunkHolder* const holder_;
  // Replaced after each append and hole: a splitter cannot continue after Finish().
  std::unique_ptr<StreamSplitter> splitter_;
  // Hashes what Write is given; absent when opts_.etag is set or the file outgrew
  // opts_.md5_etag_limit.
  std::unique_ptr<BackgroundMd5> md5_;
  uint64_t size_ = 0;        // bytes written and appended
  uint64_t hole_bytes_ = 0;  // of which WriteZeros
  std::vector<ChunkRef> chunks_;
  std::optional<WrittenContent> finished_;
  bool done_ = false;  // aborted (or released after a commit)
  // Stores chunks on a helper thread once the stream is large and md5_ is gone; until Drain
  // returns, that thread owns chunks_. Declared after what its thread touches, so it is
  // stopped first.
  static constexpr uint64_t kPipelineFrom = 1 << 20;
  std::unique_ptr<ChunkPipeline> pipeline_;
};

}  // namespace weft
