#include "vfs/content_writer.h"

#include <algorithm>

#include "chunk/zero_chunks.h"
#include "vfs/internal/background_md5.h"
#include "vfs/internal/chunk_pipeline.h"

namespace weft {

ContentWriter::ContentWriter(std::string path, ChunkerOptions chunker, WriteOptions opts,
                             ChunkHolder* holder)
    : path_(std::move(path)),
      chunker_(chunker),
      opts_(std::move(opts)),
      holder_(holder),
      splitter_(NewSplitter()) {
  const bool chunk_etag_expected =
      opts_.md5_etag_limit && opts_.expected_size && *opts_.expected_size > *opts_.md5_etag_limit;
  if (!opts_.etag && !chunk_etag_expected) md5_ = std::make_unique<BackgroundMd5>();
}

ContentWriter::~ContentWriter() {
  Abort();
}

Status ContentWriter::CheckOpen() const {
  if (done_ || finished_)
    return FailedPrecondition(path_ + ": writer already committed or aborted");
  return OkStatus();
}

Status ContentWriter::AbortOnError(Status s) {
  if (!s.ok()) Abort();
  return s;
}

std::unique_ptr<StreamSplitter> ContentWriter::NewSplitter() {
  return std::make_unique<StreamSplitter>(chunker_, [this](ByteSpan chunk) {
    return pipeline_ ? pipeline_->Add(chunk) : StoreChunk(ChunkId::Of(chunk), chunk);
  });
}

Status ContentWriter::Write(ByteSpan data) {
  WEFT_RETURN_IF_ERROR(CheckOpen());
  if (md5_) {
    if (opts_.md5_etag_limit && size_ + data.size() > *opts_.md5_etag_limit) {
      md5_.reset();  // the ETag will come from the chunks
    } else {
      md5_->Update(data);
    }
  }
  // A large stream without an MD5 to compute: its chunks are stored on a second thread (with
  // an MD5 helper as well, three busy threads lost on two cores).
  if (!md5_ && !pipeline_ && size_ >= kPipelineFrom) {
    pipeline_ = std::make_unique<ChunkPipeline>(
        [this](const ChunkId& id, ByteSpan c) { return StoreChunk(id, c); });
  }
  size_ += data.size();
  return AbortOnError(splitter_->Write(data));
}

Status ContentWriter::AppendFrom(FileReader& source) {
  WEFT_RETURN_IF_ERROR(CheckOpen());
  if (!opts_.etag) {
    return FailedPrecondition(
        "AppendFrom needs WriteOptions::etag: the content's MD5 is not computed for appended "
        "chunks");
  }
  // Chunks of another store are not in this one: copy the bytes. A half-appended source must
  // never be committed.
  const std::vector<ChunkRef>* shared = holder_->SharedChunks(source);
  return AbortOnError(shared != nullptr ? AppendChunks(*shared, source.info().size)
                                        : CopyFrom(source));
}

Status ContentWriter::AppendChunk(const ChunkRef& chunk, std::optional<ByteSpan> data) {
  WEFT_RETURN_IF_ERROR(CheckOpen());
  return AbortOnError(AppendOneChunk(chunk, data));
}

Status ContentWriter::WriteZeros(uint64_t length) {
  WEFT_RETURN_IF_ERROR(CheckOpen());
  if (length == 0) return OkStatus();
  hole_bytes_ += length;
  if (md5_) {
    if (hole_bytes_ > kMaxHoleMd5Bytes ||
        (opts_.md5_etag_limit && size_ + length > *opts_.md5_etag_limit)) {
      md5_.reset();  // the ETag will come from the chunks
    } else {
      const std::shared_ptr<const std::string> zeros = ZeroChunkBytes(1 << 20);
      for (uint64_t left = length; left > 0;) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(left, zeros->size()));
        md5_->Update(AsBytes(std::string_view(*zeros).substr(0, n)));
        left -= n;
      }
    }
  }
  // The bytes before the hole end in a chunk of their own; later writes start a new stream.
  // Stores answer zero chunks themselves (chunk/zero_chunks.h): storing one costs nothing.
  Status s = FinishChunks();
  if (s.ok()) {
    splitter_ = NewSplitter();
    ForEachZeroChunk(length, [&](const ChunkId& id, uint32_t n) {
      if (s.ok()) s = StoreChunk(id, AsBytes(*ZeroChunkBytes(n)));
    });
  }
  size_ += length;
  return AbortOnError(s);
}

Result<WrittenContent> ContentWriter::Finish() {
  if (finished_ && !done_) return *finished_;
  WEFT_RETURN_IF_ERROR(CheckOpen());
  WEFT_RETURN_IF_ERROR(AbortOnError(FinishChunks()));
  WrittenContent out;
  out.size = size_;
  if (opts_.etag) {
    out.etag = *opts_.etag;
  } else if (md5_) {
    auto digest = md5_->Finish();
    out.etag = ToHex(ByteSpan(digest.data(), digest.size()));
  } else {
    out.etag = ChunksEtag(chunks_);
  }
  out.chunks = chunks_;
  finished_ = out;
  return out;
}

void ContentWriter::Abort() {
  if (done_) return;
  done_ = true;
  if (pipeline_) (void)pipeline_->Drain();  // its thread may still be adding to chunks_
  holder_->Release(chunks_);
}

Status ContentWriter::FinishChunks() {
  Status s = splitter_->Finish();
  if (pipeline_) {
    Status stored = pipeline_->Drain();
    if (s.ok()) s = stored;
  }
  return s;
}

Status ContentWriter::StoreChunk(const ChunkId& id, ByteSpan chunk) {
  chunks_.push_back({id, static_cast<uint32_t>(chunk.size())});
  return holder_->Put(id, chunk);
}

Status ContentWriter::AppendChunks(const std::vector<ChunkRef>& shared, uint64_t size) {
  // The bytes written so far end in a chunk of their own; later writes start a new stream.
  WEFT_RETURN_IF_ERROR(FinishChunks());
  splitter_ = NewSplitter();
  holder_->Hold(shared);
  chunks_.insert(chunks_.end(), shared.begin(), shared.end());
  size_ += size;
  return OkStatus();
}

Status ContentWriter::AppendOneChunk(const ChunkRef& chunk, std::optional<ByteSpan> data) {
  if (!opts_.etag) {
    return FailedPrecondition("AppendChunk needs WriteOptions::etag: no MD5 is computed for it");
  }
  if (chunk.length == 0) return InvalidArgument(path_ + ": an empty chunk");
  // Bytes written before end in a chunk of their own; later writes start a new stream.
  WEFT_RETURN_IF_ERROR(FinishChunks());
  splitter_ = NewSplitter();
  if (data) {
    if (data->size() != chunk.length || ChunkId::Of(*data) != chunk.id) {
      return InvalidArgument(path_ + ": chunk " + chunk.id.ShortHex() +
                             " does not match its bytes");
    }
    WEFT_RETURN_IF_ERROR(StoreChunk(chunk.id, *data));
  } else {
    // Recorded only once held: Abort releases exactly what was held.
    WEFT_RETURN_IF_ERROR(holder_->HoldStored(chunk.id));
    chunks_.push_back(chunk);
  }
  size_ += chunk.length;
  return OkStatus();
}

Status ContentWriter::CopyFrom(FileReader& source) {
  constexpr uint64_t kPiece = 1 << 20;
  const uint64_t size = source.info().size;
  for (uint64_t off = 0; off < size;) {
    WEFT_ASSIGN_OR_RETURN(std::string piece, source.ReadAt(off, std::min(kPiece, size - off)));
    if (piece.empty()) {
      return OutOfRange(source.info().path + ": ended at byte " + std::to_string(off) + " of " +
                        std::to_string(size));
    }
    WEFT_RETURN_IF_ERROR(Write(AsBytes(piece)));
    off += piece.size();
  }
  return OkStatus();
}

}  // namespace weft
