#include "fabric/internal/portal_files.h"

#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <future>
#include <unordered_map>

#include "base/bytes.h"
#include "cache/item.h"
#include "chunk/zero_chunks.h"
#include "fabric/coherent_volume.h"
#include "fabric/wire.h"

namespace weft::fabric {
namespace {

std::string NewSessionId() {
  std::array<unsigned char, 16> raw{};
  RAND_bytes(raw.data(), raw.size());
  return ToHex(ByteSpan(raw.data(), raw.size()));
}

}  // namespace

std::vector<size_t> BlockChunkIndices(const std::vector<ChunkRef>& chunks, uint32_t block) {
  const uint64_t begin = uint64_t{block} * cache::kBlockBytes;
  const uint64_t end = begin + cache::kBlockBytes;
  std::vector<size_t> indices;
  uint64_t off = 0;
  for (size_t i = 0; i < chunks.size() && off < end; off += chunks[i].length, ++i) {
    if (off + chunks[i].length > begin) indices.push_back(i);
  }
  return indices;
}

// --- reader ---

PortalFileReader::PortalFileReader(SpokeChunks* chunks, NeuralCache* neural,
                                   uint64_t readahead_bytes, FileInfo info, std::string hub_path,
                                   std::vector<ChunkRef> chunk_refs, uint32_t job)
    : chunks_(chunks),
      neural_(neural),
      readahead_bytes_(readahead_bytes),
      info_(std::move(info)),
      hub_path_(std::move(hub_path)),
      chunk_refs_(std::move(chunk_refs)),
      job_(job) {
  offsets_.reserve(chunk_refs_.size() + 1);
  uint64_t off = 0;
  for (const ChunkRef& c : chunk_refs_) {
    offsets_.push_back(off);
    off += c.length;
  }
  offsets_.push_back(off);
}

Status PortalFileReader::Ensure(size_t first, size_t last, FetchedChunks* fetched) {
  for (size_t i = first; i <= last; ++i) fetched->emplace(chunk_refs_[i].id, nullptr);
  std::vector<size_t> wanted;
  {
    std::lock_guard lock(mu_);
    size_t until = last + 1;
    if (offsets_[first] == next_offset_ && next_offset_ != 0) {
      // Sequential: fetch ahead, once per window.
      uint64_t ahead_end = offsets_[last + 1] + readahead_bytes_;
      while (until < chunk_refs_.size() && offsets_[until] < ahead_end) ++until;
    }
    for (size_t i = std::max(first, std::min(fetched_through_, last + 1)); i < until; ++i) {
      wanted.push_back(i);
    }
    for (size_t i = first; i <= last && i < fetched_through_; ++i) wanted.push_back(i);
    if (until > last + 1) fetched_through_ = std::max(fetched_through_, until);
    next_offset_ = offsets_[last + 1];
  }
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  return chunks_->Fetch(hub_path_, info_.version_id, chunk_refs_, wanted, false, fetched);
}

void PortalFileReader::ReportRead(uint64_t offset, uint64_t length) {
  if (neural_ == nullptr) return;
  const auto first = static_cast<uint32_t>(offset / cache::kBlockBytes);
  const auto last = static_cast<uint32_t>((offset + length - 1) / cache::kBlockBytes);
  std::vector<uint32_t> fresh;
  {
    std::lock_guard lock(mu_);
    if (reported_.empty()) reported_.resize(info_.size / cache::kBlockBytes + 1);
    for (uint32_t b = first; b <= last && b < reported_.size(); ++b) {
      if (!reported_[b]) fresh.push_back(b);
      reported_[b] = true;
    }
  }
  for (uint32_t b : fresh) {
    neural_->OnRead(job_, info_, b, b, [this](uint32_t block) { return BlockChunkIds(block); });
  }
}

std::vector<ChunkId> PortalFileReader::BlockChunkIds(uint32_t block) const {
  std::vector<ChunkId> ids;
  for (size_t i : BlockChunkIndices(chunk_refs_, block)) ids.push_back(chunk_refs_[i].id);
  return ids;
}

Result<std::string> PortalFileReader::ReadAt(uint64_t offset, uint64_t length) {
  std::string out;
  if (offset >= info_.size || length == 0) return out;
  length = std::min<uint64_t>(length, info_.size - offset);
  size_t first = std::upper_bound(offsets_.begin(), offsets_.end(), offset) - offsets_.begin() - 1;
  size_t last = std::upper_bound(offsets_.begin(), offsets_.end(), offset + length - 1) -
                offsets_.begin() - 1;
  ReportRead(offset, length);
  FetchedChunks fetched;
  WEFT_RETURN_IF_ERROR(Ensure(first, last, &fetched).WithContext(info_.path));
  out.reserve(length);
  for (size_t i = first; i <= last; ++i) {
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const std::string> data, ReadEnsuredChunk(i, fetched));
    uint64_t begin = i == first ? offset - offsets_[i] : 0;
    uint64_t n = std::min<uint64_t>(data->size() - begin, length - out.size());
    out.append(*data, begin, n);
  }
  return out;
}

Result<std::vector<std::shared_ptr<const std::string>>> PortalFileReader::ReadChunks(
    size_t first, size_t last, Reuse /*reuse*/) {
  if (last > chunk_refs_.size()) {
    return OutOfRange(info_.path + ": chunks up to " + std::to_string(last) + " of " +
                      std::to_string(chunk_refs_.size()));
  }
  if (first >= last) return std::vector<std::shared_ptr<const std::string>>();
  ReportRead(offsets_[first], offsets_[last] - offsets_[first]);
  FetchedChunks fetched;
  WEFT_RETURN_IF_ERROR(Ensure(first, last - 1, &fetched).WithContext(info_.path));
  return Collect(first, last, [&](size_t i) { return ReadEnsuredChunk(i, fetched); });
}

Result<std::shared_ptr<const std::string>> PortalFileReader::ReadEnsuredChunk(
    size_t index, const FetchedChunks& fetched) {
  auto it = fetched.find(chunk_refs_[index].id);
  if (it == fetched.end() || it->second == nullptr) return ReadChunk(index);
  if (it->second->size() != chunk_refs_[index].length) {
    return Corruption(info_.path + ": chunk " + chunk_refs_[index].id.ShortHex() +
                      " has the wrong length");
  }
  return it->second;
}

Result<std::shared_ptr<const std::string>> PortalFileReader::ReadChunk(size_t index) {
  if (index >= chunk_refs_.size()) {
    return OutOfRange(info_.path + ": chunk " + std::to_string(index) + " of " +
                      std::to_string(chunk_refs_.size()));
  }
  const ChunkRef& c = chunk_refs_[index];
  Result<std::shared_ptr<const std::string>> data = chunks_->store().GetShared(c.id);
  if (!data.ok() && data.status().code() == StatusCode::kNotFound) {
    // Evicted since (or while) it was fetched: fetch it again, even if the store still lists
    // it (an eviction round may be removing it right now), and take the fetched plaintext
    // rather than the store's copy, which the next round could evict before it is read.
    FetchedChunks fetched = {{c.id, nullptr}};
    WEFT_RETURN_IF_ERROR(chunks_
                             ->Fetch(hub_path_, info_.version_id, chunk_refs_, {index},
                                     /*force=*/true, &fetched)
                             .WithContext(info_.path));
    if (fetched[c.id] == nullptr) {
      return Internal(info_.path + ": the hub did not send chunk " + c.id.ShortHex());
    }
    data = fetched[c.id];
  }
  if (!data.ok()) return data.status().WithContext(info_.path);
  if ((*data)->size() != c.length) {
    return Corruption(info_.path + ": chunk " + c.id.ShortHex() + " has the wrong length");
  }
  return data;
}

PortalFileWriter::PortalFileWriter(HubCommitter* committer, SpokeChunks* chunks,
                                   ChunkerOptions chunker, std::string local_path,
                                   std::string hub_path, WriteOptions opts)
    : committer_(committer),
      store_(chunks),
      hub_path_(std::move(hub_path)),
      content_(std::move(local_path), chunker, std::move(opts), this) {}

Status PortalFileWriter::Put(const ChunkId& id, ByteSpan data) {
  store_->Hold(id);
  return store_->store().Put(id, data).status();
}

Status PortalFileWriter::HoldStored(const ChunkId& id) {
  store_->Hold(id);
  return OkStatus();
}

const std::vector<ChunkRef>* PortalFileWriter::SharedChunks(FileReader& source) {
  auto* portal = dynamic_cast<PortalFileReader*>(&source);
  return portal != nullptr && portal->source() == store_ ? &portal->chunks() : nullptr;
}

void PortalFileWriter::Hold(const std::vector<ChunkRef>& chunks) {
  for (const ChunkRef& c : chunks) store_->Hold(c.id);
}

void PortalFileWriter::Release(const std::vector<ChunkRef>& chunks) {
  std::vector<ChunkId> ids;
  ids.reserve(chunks.size());
  for (const ChunkRef& c : chunks) ids.push_back(c.id);
  store_->Release(ids);
}

Result<FileInfo> PortalFileWriter::Commit() {
  WEFT_ASSIGN_OR_RETURN(WrittenContent content, content_.Finish());
  // The chunks may be evicted once the hub has them (or the commit failed for good).
  Result<FileInfo> info =
      committer_->Commit(hub_path_, content_.options(), content.etag, content.chunks);
  Abort();
  if (!info.ok()) return info.status();
  info->path = content_.path();
  return info;
}

// --- commit ---

Result<FileInfo> HubCommitter::Commit(const std::string& hub_path, const WriteOptions& opts,
                                      const std::string& etag,
                                      const std::vector<ChunkRef>& chunks) {
  std::vector<ChunkId> ids;
  std::unordered_map<ChunkId, uint32_t, ChunkIdHash> lengths;
  for (const ChunkRef& c : chunks) {
    if (lengths.emplace(c.id, c.length).second) ids.push_back(c.id);
  }
  // One round trip tells which chunks the hub lacks.
  WEFT_ASSIGN_OR_RETURN(std::string raw,
                        hub_->CallFramed("missing", json::object(), EncodeIds(ids)));
  WEFT_ASSIGN_OR_RETURN(std::vector<ChunkId> missing, DecodeIds(raw));
  uint64_t missing_bytes = 0;
  for (const ChunkId& id : missing) missing_bytes += lengths[id];

  json header = {{"path", hub_path},
                 {"chunks", ChunksToJson(chunks)},
                 {"etag", etag},
                 {"mode", opts.mode},
                 {"create_parents", opts.create_parents}};
  if (opts.mtime_ns) header["mtime_ns"] = *opts.mtime_ns;
  if (opts.if_version) header["if_version"] = *opts.if_version;
  if (!opts.attributes.empty()) header["attributes"] = opts.attributes;

  auto frames_of = [&](const std::vector<ChunkId>& part) -> Result<std::string> {
    std::string out;
    for (const ChunkId& id : part) {
      Result<std::shared_ptr<const std::string>> data = chunks_->store().GetShared(id);
      if (!data.ok()) {
        return FailedPrecondition(hub_path + ": chunk " + id.ShortHex() +
                                  " is neither at the hub nor in this spoke's store");
      }
      AppendChunkFrame(id, **data, &out);
    }
    return out;
  };
  std::string inline_frames;
  if (missing_bytes <= options_.inline_commit_bytes) {
    WEFT_ASSIGN_OR_RETURN(inline_frames, frames_of(missing));
  } else {
    // Large: upload in batches over several connections, held at the hub by a session.
    const std::string session = NewSessionId();
    header["session"] = session;
    std::vector<std::vector<ChunkId>> batches(1);
    uint64_t bytes = 0;
    for (const ChunkId& id : missing) {
      if (bytes + lengths[id] > options_.batch_bytes && !batches.back().empty()) {
        batches.emplace_back();
        bytes = 0;
      }
      batches.back().push_back(id);
      bytes += lengths[id];
    }
    const size_t parallel = std::max<size_t>(1, hub_->connections());
    for (size_t start = 0; start < batches.size(); start += parallel) {
      std::vector<std::future<Status>> running;
      for (size_t b = start; b < std::min(batches.size(), start + parallel); ++b) {
        running.push_back(std::async(std::launch::async, [&, b]() -> Status {
          WEFT_ASSIGN_OR_RETURN(std::string frames, frames_of(batches[b]));
          bytes_uploaded_ += frames.size();
          json up = {{"session", session}, {"path", hub_path}};
          return hub_->CallFramed("upload", up, frames).status();
        }));
      }
      Status first;
      for (auto& f : running) {
        Status s = f.get();
        if (first.ok() && !s.ok()) first = s;
      }
      WEFT_RETURN_IF_ERROR(first);
    }
  }
  bytes_uploaded_ += inline_frames.size();
  WEFT_ASSIGN_OR_RETURN(std::string answer, hub_->CallFramed("commit", header, inline_frames));
  invalidate_(AffectedByWrite(hub_path, opts.create_parents));
  WEFT_ASSIGN_OR_RETURN(json reply, ParseJson(answer));
  return InfoFromJson(reply.at("info"));
}

}  // namespace weft::fabric
