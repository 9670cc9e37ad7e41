#include "chunk/pack_chunk_store.h"

#include <zstd.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/memory.h"
#include "chunk/codec.h"
#include "chunk/internal/pack_format.h"

namespace weft {
namespace {

using chunk_internal::CheckPackHeader;
using chunk_internal::DecodePackIndex;
using chunk_internal::DecodeRecordHeader;
using chunk_internal::EncodePackHeader;
using chunk_internal::EncodePackIndex;
using chunk_internal::IndexEntry;
using chunk_internal::kMaxChunkSize;
using chunk_internal::kMaxPackSize;
using chunk_internal::kPackHeaderSize;
using chunk_internal::kPackVersion;
using chunk_internal::PackIdHex;
using chunk_internal::PackIndex;
using chunk_internal::RecordHeader;
using chunk_internal::RecordHeaderSize;
using chunk_internal::StoredChecksum;

constexpr uint64_t kMinTargetPackSize = 16 << 20;
constexpr uint64_t kMaxTargetPackSize = 64 << 20;
constexpr uint64_t kMaxTestPackSize = 1 << 30;
// Unsynced bytes go to the WritableFile in pieces at least this large: few calls, and a full
// disk is noticed (and the Put refused) before much more piles up in memory.
constexpr size_t kHandOffSize = 1 << 20;
// WillNeed reads across holes up to this size (other files' records, dead ones) rather than
// issuing a second request: on a disk, reading 64 KiB more costs less than another seek.
constexpr uint64_t kWillNeedGap = 64 << 10;

// Where a chunk's record lives. 24 bytes: with the 32-byte key and the hash node, the map costs
// about 90 bytes per chunk (see docs/formats/chunk-index.md, "Known limits").
struct Location {
  uint64_t pack_id = 0;
  uint32_t offset = 0;  // of the record header; packs stay below 4 GiB
  uint32_t stored_size = 0;
  uint32_t raw_size = 0;
  Codec codec = Codec::kRaw;
  uint8_t pack_version = kPackVersion;  // of the pack: it decides the record header's size

  uint64_t record_size() const { return RecordHeaderSize(pack_version) + stored_size; }
  bool SameRecord(const Location& other) const {
    return pack_id == other.pack_id && offset == other.offset;
  }
};

struct Entry {
  ChunkId id;
  Location loc;
};

// One pack file. A pack is active (receiving appends; at most one), or sealed (immutable, read
// only). The active pack keeps every byte not yet durable in `tail`, so that a failed write or
// sync can be redone in a new file instead of losing chunks already acknowledged by Put.
struct Pack {
  uint64_t id = 0;
  uint64_t data_size = 0;    // end of the last record; reads never go past it
  uint64_t file_size = 0;    // bytes in the file, garbage included (Stats, Sweep)
  uint64_t live_chunks = 0;  // map entries that point into this pack
  uint64_t live_bytes = 0;   // and their record bytes
  bool sealed = false;
  bool indexed = false;             // sealed and pack-<id>.idx describes it
  uint32_t version = kPackVersion;  // older versions are only read

  // Active pack only. Invariant: synced_size <= handed_size <= data_size, and tail holds the
  // bytes [synced_size, data_size) (the file header too while synced_size is 0).
  std::unique_ptr<WritableFile> writer;  // null until the first hand-off creates the file
  bool file_created = false;
  uint64_t synced_size = 0;  // durable prefix: data synced and directory entry synced
  uint64_t handed_size = 0;  // prefix given to writer
  std::string tail;
  // Records appended here, for the index at seal time and to re-home the tail after a failure.
  // Sealed packs drop it; their map entries are the truth.
  std::vector<Entry> entries;

  std::shared_ptr<RandomAccessFile> reader;  // opened on first read, shared with readers
};

std::optional<uint64_t> ParsePackFileName(std::string_view name, std::string_view suffix) {
  constexpr std::string_view kPrefix = "pack-";
  if (name.size() != kPrefix.size() + 16 + suffix.size() || !name.starts_with(kPrefix) ||
      !name.ends_with(suffix)) {
    return std::nullopt;
  }
  uint64_t id = 0;
  for (char c : name.substr(kPrefix.size(), 16)) {
    int v;
    if (c >= '0' && c <= '9') {
      v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      v = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    id = (id << 4) | static_cast<uint64_t>(v);
  }
  return id;
}

std::string Where(uint64_t pack_id, uint64_t offset) {
  return "pack " + PackIdHex(pack_id) + " offset " + std::to_string(offset);
}

// How much of a record a read checks. kChecksum: the header, and the stored bytes against
// their XXH3-64 (version-2 records; version 1 has none, so its reads always hash). kFull adds
// the SHA-256 of the plaintext against the chunk id: for scans after a crash and for Verify.
enum class Check { kChecksum, kFull };

// Checks a record (header + stored bytes) against what the map says and returns its
// plaintext: a view of the record itself when stored raw, else decoded into *decoded.
Result<std::string_view> PlainOf(std::string_view record, const ChunkId& id, const Location& loc,
                                 Check check, std::string* decoded) {
  WEFT_ASSIGN_OR_RETURN(RecordHeader header, DecodeRecordHeader(record, loc.pack_version));
  if (header.id != id) {
    return Corruption("record holds chunk " + header.id.ShortHex() + ", expected " + id.ShortHex());
  }
  if (header.codec != loc.codec || header.raw_size != loc.raw_size ||
      header.stored_size != loc.stored_size) {
    return Corruption("record header disagrees with the index");
  }
  const size_t header_size = RecordHeaderSize(loc.pack_version);
  const std::string_view stored = record.substr(header_size);
  const bool has_checksum = loc.pack_version != chunk_internal::kPackVersion1;
  if (has_checksum && StoredChecksum(stored) != header.stored_checksum) {
    return Corruption("checksum mismatch: the stored bytes of chunk " + id.ShortHex() +
                      " changed on disk");
  }
  std::string_view plain = stored;
  if (header.codec != Codec::kRaw || stored.size() != header.raw_size) {
    WEFT_ASSIGN_OR_RETURN(*decoded, DecodeChunk(header.codec, AsBytes(stored), header.raw_size));
    plain = *decoded;
  }
  const bool hash = check == Check::kFull || !has_checksum;
  if (hash && ChunkId::Of(AsBytes(plain)) != id) {
    return Corruption("hash mismatch: stored bytes are not chunk " + id.ShortHex());
  }
  return plain;
}

// PlainOf, as a string of its own.
Result<std::string> DecodeRecord(std::string_view record, const ChunkId& id, const Location& loc,
                                 Check check) {
  std::string decoded;
  WEFT_ASSIGN_OR_RETURN(std::string_view plain, PlainOf(record, id, loc, check, &decoded));
  if (plain.data() == decoded.data()) return decoded;
  return std::string(plain);
}

class PackChunkStore final : public ChunkStore {
 public:
  PackChunkStore(FileSystem* fs, std::string dir, int zstd_level, uint64_t target,
                 std::optional<uint64_t> reserve)
      : fs_(fs),
        dir_(std::move(dir)),
        zstd_level_(zstd_level),
        target_(target),
        reserve_option_(reserve) {}
  ~PackChunkStore() override;

  Status Load();

  Result<bool> Put(const ChunkId& id, ByteSpan data) override;
  Status Flush() override;
  bool Contains(const ChunkId& id) override;
  Result<std::string> Get(const ChunkId& id) override;
  Result<std::vector<std::shared_ptr<const std::string>>> GetManyOnce(
      std::span<const ChunkId> ids) override;
  Status LendMany(std::span<const ChunkId> ids, const ChunkUser& use) override;
  void WillNeed(std::span<const ChunkId> ids) override;
  Result<SweepStats> Sweep(const std::function<bool(const ChunkId&)>& is_live) override;
  Status Verify(std::vector<ChunkProblem>* problems) override;
  ChunkStoreStats Stats() override;

 private:
  using Map = std::unordered_map<ChunkId, Location, ChunkIdHash>;

  std::string PackPath(uint64_t id) const { return dir_ + "/pack-" + PackIdHex(id) + ".dat"; }
  std::string IndexPath(uint64_t id) const { return dir_ + "/pack-" + PackIdHex(id) + ".idx"; }

  // Reads and verifies the record of `id` at `loc`; takes mu_ briefly. If `record` is not null
  // it receives the record bytes (header + stored form), which are position-independent.
  Result<std::string> ReadChunkAt(const ChunkId& id, const Location& loc, Check check,
                                  std::string* record);

  // Where ids lie: runs of records that follow each other in one pack's durable part (at
  // most kKeptReadBytes each, unless one record is larger), each read with one pread. Ids in
  // no run (unknown, or in the unsynced tail) are left to Get.
  struct ReadPlan {
    std::vector<Location> locs;                            // per id
    std::vector<std::pair<size_t, size_t>> runs;           // [first, last) into ids
    std::vector<std::shared_ptr<RandomAccessFile>> files;  // per run
  };
  ReadPlan PlanReads(std::span<const ChunkId> ids);
  // The plaintexts of ids, checked, and the memory they lie in.
  struct Plaintexts {
    std::vector<std::string_view> views;        // per id
    std::vector<std::string> owned;             // per id: decoded, or Get's copy
    std::string once;                           // the first run, if too large to keep
    std::vector<std::unique_ptr<char[]>> runs;  // the runs after the first
  };
  // Reads ids run by run (the first run into this thread's read buffer): raw records are
  // viewed where they were read, compressed ones decoded; whatever is in no run or does not
  // check goes through Get, which knows how to retry and what to say.
  Status ReadMany(std::span<const ChunkId> ids, Plaintexts* out);

  // Load helpers.
  Status LoadPackLocked(uint64_t id, bool has_index);
  struct ScanResult {
    Status header;  // not OK: the file is not a readable pack
    uint32_t version = kPackVersion;
    std::vector<IndexEntry> entries;
    uint64_t data_size = kPackHeaderSize;
  };
  Result<ScanResult> ScanPack(uint64_t id, uint64_t file_size);
  void AddSealedPackLocked(uint64_t id, uint32_t version, uint64_t data_size, uint64_t file_size,
                           const std::vector<IndexEntry>& entries, bool indexed);

  // Map bookkeeping: keeps per-pack live counts and the byte totals in step.
  bool ContainsLocked(const ChunkId& id);
  void SetLocationLocked(const ChunkId& id, const Location& loc);
  void EraseLocked(Map::iterator it);
  void AdjustPackLocked(const Location& loc, int sign);

  // Write path. The *Locked functions that return Status leave the store consistent on error:
  // a failed write or sync re-homes the active pack's unsynced records into a new pack.
  void EnsureActiveLocked();
  void AppendRecordLocked(const ChunkId& id, Codec codec, ByteSpan stored, uint32_t raw_size,
                          uint64_t stored_checksum);
  // Appends a copy of `record` (header + stored bytes, as found at `from`) in the current
  // version: unchanged when it is in it already (a record does not know its offset), with a
  // new header when it comes from a version-1 pack.
  void CopyRecordLocked(const ChunkId& id, const Location& from, std::string_view record);
  // Where a record like `like` goes at the end of the active pack (created if needed); once
  // its bytes are in the tail, AppendedLocked enters it in the pack and the map.
  Location AppendLocationLocked(Location like);
  void AppendedLocked(const ChunkId& id, const Location& loc);
  Status MaybeHandOffLocked();
  Status HandOffLocked();
  Status SyncActiveLocked();
  Status SealActiveLocked();
  void RecoverActiveLocked();
  // Writes pack-<id>.idx from the records the map still points to in `pack`. A failure is
  // returned but harmless: an unindexed pack is rescanned at the next open.
  Status WriteIndexLocked(Pack* pack, const std::vector<Entry>& entries);

  Result<std::shared_ptr<RandomAccessFile>> ReaderLocked(Pack* pack);

  // ResourceExhausted unless `bytes` more leave the disk its reserve (PackStoreOptions).
  Status CheckReserveLocked(uint64_t bytes);
  // Sweep: removes the packs in `doomed` that hold nothing live, counting them.
  void DeletePacks(const std::set<uint64_t>& doomed, uint64_t* freed_bytes, uint64_t* deleted);

  FileSystem* const fs_;
  const std::string dir_;
  const int zstd_level_;
  const uint64_t target_;
  const std::optional<uint64_t> reserve_option_;

  // Serializes Sweep and Verify; taken before mu_.
  std::mutex sweep_mu_;

  std::mutex mu_;
  // Everything below is guarded by mu_.
  Map index_;
  std::map<uint64_t, std::unique_ptr<Pack>> packs_;
  Pack* active_ = nullptr;  // in packs_, or null until the next Put
  uint64_t next_pack_id_ = 1;
  std::string spare_tail_;  // the last sealed pack's tail buffer, kept for the next pack
  uint64_t raw_bytes_ = 0;
  uint64_t stored_bytes_ = 0;
  // While a Sweep runs, ids that Put or Contains found present: the caller may now rely on
  // them, so the sweep keeps them whatever is_live said.
  bool sweeping_ = false;
  bool compacting_ = false;  // Sweep's copies are being written (under mu_): a smaller reserve
  std::unordered_set<ChunkId, ChunkIdHash> touched_;
  std::vector<ChunkProblem> open_problems_;  // found by Load, reported by Verify
};

PackChunkStore::~PackChunkStore() {
  std::lock_guard lock(mu_);
  // Best effort, no sync: chunks not flushed were never promised, but there is no reason to
  // throw away bytes the OS may still write.
  if (active_ != nullptr && active_->writer != nullptr) {
    Pack& p = *active_;
    if (p.handed_size < p.data_size) {
      (void)p.writer->Append(std::string_view(p.tail).substr(p.handed_size - p.synced_size));
    }
    (void)p.writer->Close();
  }
}

// ---- Load ----

Status PackChunkStore::Load() {
  std::lock_guard lock(mu_);
  WEFT_RETURN_IF_ERROR(fs_->CreateDirs(dir_));
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_->ListDir(dir_));
  std::set<uint64_t> packs;
  std::set<uint64_t> indexes;
  for (const std::string& name : names) {
    if (auto id = ParsePackFileName(name, ".dat")) {
      packs.insert(*id);
    } else if (auto idx = ParsePackFileName(name, ".idx")) {
      indexes.insert(*idx);
    } else if (name.starts_with("pack-") && name.find(".weft-tmp-") != std::string::npos) {
      // An index write that a crash interrupted (WriteFileAtomically's temp file).
      (void)fs_->RemoveFile(dir_ + "/" + name);
    }
  }
  for (uint64_t id : indexes) {
    // The pack was deleted (Sweep removes the .dat first) but its index survived a crash.
    if (!packs.contains(id)) (void)fs_->RemoveFile(IndexPath(id));
    // Even if that removal failed, a new pack must never pair with a stale index.
    next_pack_id_ = std::max(next_pack_id_, id + 1);
  }
  for (uint64_t id : packs) {
    next_pack_id_ = std::max(next_pack_id_, id + 1);
    WEFT_RETURN_IF_ERROR(LoadPackLocked(id, indexes.contains(id)));
  }
  return OkStatus();
}

Status PackChunkStore::LoadPackLocked(uint64_t id, bool has_index) {
  const std::string where = "pack " + PackIdHex(id);
  WEFT_ASSIGN_OR_RETURN(uint64_t file_size, fs_->FileSize(PackPath(id)));
  if (has_index) {
    WEFT_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(fs_, IndexPath(id)));
    Result<PackIndex> index = DecodePackIndex(bytes, id);
    if (index.ok()) {
      // A pack shorter than its index stays loaded: reads of the missing records then fail
      // with Corruption naming the pack, rather than the chunks silently disappearing.
      AddSealedPackLocked(id, index->pack_version, index->data_size, file_size, index->entries,
                          /*indexed=*/true);
      return OkStatus();
    }
    // Indexes are written without fsync (see WriteIndexLocked), so after a crash a torn or
    // empty one is expected, not a problem: the scan below verifies every record anyway.
  }
  WEFT_ASSIGN_OR_RETURN(ScanResult scan, ScanPack(id, file_size));
  if (!scan.header.ok()) {
    if (!has_index && file_size < kPackHeaderSize) {
      // Created just before a crash; it never held a record.
      (void)fs_->RemoveFile(PackPath(id));
      return OkStatus();
    }
    open_problems_.push_back({where, scan.header.WithContext(where)});
    return OkStatus();
  }
  if (has_index && scan.data_size < file_size) {
    open_problems_.push_back(
        {where, Corruption(where + ": scan stopped at offset " + std::to_string(scan.data_size) +
                           " of " + std::to_string(file_size) + "; later records are lost")});
  }
  // Sealing the scanned prefix (rather than appending after it) needs no truncate; the torn
  // tail stays as garbage that Sweep reclaims.
  AddSealedPackLocked(id, scan.version, scan.data_size, file_size, scan.entries,
                      /*indexed=*/false);
  Pack* pack = packs_[id].get();
  std::vector<Entry> entries;
  entries.reserve(scan.entries.size());
  for (const IndexEntry& e : scan.entries) {
    entries.push_back({e.id,
                       {id, static_cast<uint32_t>(e.offset), e.stored_size, e.raw_size, e.codec,
                        static_cast<uint8_t>(scan.version)}});
  }
  (void)WriteIndexLocked(pack, entries);
  return OkStatus();
}

Result<PackChunkStore::ScanResult> PackChunkStore::ScanPack(uint64_t id, uint64_t file_size) {
  ScanResult result;
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file,
                        fs_->NewRandomAccessFile(PackPath(id)));
  std::string buf(kPackHeaderSize, '\0');
  WEFT_ASSIGN_OR_RETURN(std::string_view header, file->ReadAt(0, kPackHeaderSize, buf.data()));
  Result<uint32_t> version = CheckPackHeader(header);
  result.header = version.status();
  if (!version.ok()) return result;
  result.version = *version;
  const size_t header_size = RecordHeaderSize(result.version);
  uint64_t offset = kPackHeaderSize;
  const uint64_t end = std::min(file_size, kMaxPackSize);
  // Stops at the first record that is torn or fails any check, including its SHA-256: a crash
  // can leave a record whose length made it to disk but whose bytes did not.
  while (end - offset >= header_size) {
    buf.resize(header_size);
    WEFT_ASSIGN_OR_RETURN(std::string_view got, file->ReadAt(offset, buf.size(), buf.data()));
    Result<RecordHeader> rh = DecodeRecordHeader(got, result.version);
    if (!rh.ok()) break;
    const Location loc{
        id,        static_cast<uint32_t>(offset),       rh->stored_size, rh->raw_size,
        rh->codec, static_cast<uint8_t>(result.version)};
    if (end - offset < loc.record_size()) break;
    buf.resize(loc.record_size());
    WEFT_ASSIGN_OR_RETURN(got, file->ReadAt(offset, buf.size(), buf.data()));
    if (got.size() < buf.size() || !DecodeRecord(got, rh->id, loc, Check::kFull).ok()) {
      break;
    }
    result.entries.push_back({rh->id, offset, rh->stored_size, rh->raw_size, rh->codec});
    offset += loc.record_size();
  }
  result.data_size = offset;
  return result;
}

void PackChunkStore::AddSealedPackLocked(uint64_t id, uint32_t version, uint64_t data_size,
                                         uint64_t file_size, const std::vector<IndexEntry>& entries,
                                         bool indexed) {
  auto pack = std::make_unique<Pack>();
  pack->id = id;
  pack->version = version;
  pack->data_size = data_size;
  pack->file_size = file_size;
  pack->sealed = true;
  pack->indexed = indexed;
  pack->synced_size = pack->handed_size = data_size;
  packs_[id] = std::move(pack);
  for (const IndexEntry& e : entries) {
    // Duplicates (a Sweep copy whose source pack a crash kept) resolve to the older pack; the
    // other copy is garbage.
    if (index_.contains(e.id)) continue;
    SetLocationLocked(e.id, {id, static_cast<uint32_t>(e.offset), e.stored_size, e.raw_size,
                             e.codec, static_cast<uint8_t>(version)});
  }
}

// ---- Map bookkeeping ----

bool PackChunkStore::ContainsLocked(const ChunkId& id) {
  if (!index_.contains(id)) return false;
  if (sweeping_) touched_.insert(id);
  return true;
}

void PackChunkStore::AdjustPackLocked(const Location& loc, int sign) {
  auto it = packs_.find(loc.pack_id);
  if (it == packs_.end()) return;
  Pack& pack = *it->second;
  if (sign > 0) {
    pack.live_chunks += 1;
    pack.live_bytes += loc.record_size();
  } else {
    pack.live_chunks -= 1;
    pack.live_bytes -= loc.record_size();
  }
}

void PackChunkStore::SetLocationLocked(const ChunkId& id, const Location& loc) {
  auto [it, inserted] = index_.try_emplace(id, loc);
  if (inserted) {
    raw_bytes_ += loc.raw_size;
    stored_bytes_ += loc.stored_size;
  } else {
    AdjustPackLocked(it->second, -1);
    stored_bytes_ = stored_bytes_ - it->second.stored_size + loc.stored_size;
    it->second = loc;
  }
  AdjustPackLocked(loc, +1);
}

void PackChunkStore::EraseLocked(Map::iterator it) {
  AdjustPackLocked(it->second, -1);
  raw_bytes_ -= it->second.raw_size;
  stored_bytes_ -= it->second.stored_size;
  index_.erase(it);
}

// ---- Write path ----

void PackChunkStore::EnsureActiveLocked() {
  if (active_ != nullptr) return;
  auto pack = std::make_unique<Pack>();
  pack->id = next_pack_id_++;
  // Reuse the previous pack's buffer: its pages are already mapped, so filling a pack costs
  // one copy per byte instead of reallocations and page faults (they dominated ingest).
  pack->tail = std::move(spare_tail_);
  pack->tail.clear();
  // A new buffer's pages are mapped in one call rather than faulted in one by one while
  // appending (a first pack's 33 MiB cost ~0.09 s of page faults in every `weft put`).
  ReserveMapped(pack->tail, std::min<uint64_t>(target_, kMaxTargetPackSize) + (1 << 20));
  pack->tail += EncodePackHeader();
  pack->data_size = kPackHeaderSize;
  active_ = pack.get();
  packs_[pack->id] = std::move(pack);
}

void PackChunkStore::AppendRecordLocked(const ChunkId& id, Codec codec, ByteSpan stored,
                                        uint32_t raw_size, uint64_t stored_checksum) {
  const Location loc = AppendLocationLocked(
      {0, 0, static_cast<uint32_t>(stored.size()), raw_size, codec, kPackVersion});
  chunk_internal::AppendRecordHeader({id, codec, raw_size, loc.stored_size, stored_checksum},
                                     &active_->tail);
  active_->tail.append(AsChars(stored));
  AppendedLocked(id, loc);
}

Location PackChunkStore::AppendLocationLocked(Location like) {
  EnsureActiveLocked();
  like.pack_id = active_->id;
  like.offset = static_cast<uint32_t>(active_->data_size);
  return like;
}

void PackChunkStore::AppendedLocked(const ChunkId& id, const Location& loc) {
  active_->data_size += loc.record_size();
  active_->entries.push_back({id, loc});
  SetLocationLocked(id, loc);
}

void PackChunkStore::CopyRecordLocked(const ChunkId& id, const Location& from,
                                      std::string_view record) {
  if (from.pack_version != kPackVersion) {
    const std::string_view stored = record.substr(RecordHeaderSize(from.pack_version));
    AppendRecordLocked(id, from.codec, AsBytes(stored), from.raw_size, StoredChecksum(stored));
    return;
  }
  const Location loc = AppendLocationLocked(from);
  active_->tail.append(record);
  AppendedLocked(id, loc);
}

Status PackChunkStore::MaybeHandOffLocked() {
  if (active_ == nullptr || active_->data_size - active_->handed_size < kHandOffSize) {
    return OkStatus();
  }
  return HandOffLocked();
}

Status PackChunkStore::CheckReserveLocked(uint64_t bytes) {
  Result<DiskSpace> space = fs_->Space(dir_);
  if (!space.ok() || space->available == DiskSpace::kUnlimited) return OkStatus();
  uint64_t reserve = reserve_option_.value_or(DefaultReserveBytes(space->total));
  // Compaction's own writes may dip into the reserve: each pack it rewrites frees more than
  // its copies take, and on a full disk it is what frees space. Puts never do.
  if (compacting_) reserve /= 4;
  if (space->available >= reserve && space->available - reserve >= bytes) return OkStatus();
  return ResourceExhausted("the disk holding " + dir_ +
                           " is full: " + std::to_string(space->available >> 20) +
                           " MiB free, and " + std::to_string(reserve >> 20) +
                           " MiB are kept for metadata (delete data or add space)");
}

Status PackChunkStore::HandOffLocked() {
  Pack& p = *active_;
  if (p.handed_size == p.data_size) return OkStatus();
  const uint64_t pack_id = p.id;  // p may be gone after RecoverActiveLocked
  // Refused before anything is written: nothing to recover.
  WEFT_RETURN_IF_ERROR(CheckReserveLocked(p.data_size - p.handed_size)
                           .WithContext("writing pack " + PackIdHex(pack_id)));
  Status status = [&]() -> Status {
    if (p.writer == nullptr) {
      WEFT_ASSIGN_OR_RETURN(p.writer, fs_->NewWritableFile(PackPath(p.id)));
      p.file_created = true;
    }
    return p.writer->Append(std::string_view(p.tail).substr(p.handed_size - p.synced_size));
  }();
  if (!status.ok()) {
    RecoverActiveLocked();
    return status.WithContext("writing pack " + PackIdHex(pack_id));
  }
  p.handed_size = p.file_size = p.data_size;
  return OkStatus();
}

Status PackChunkStore::SyncActiveLocked() {
  if (active_ == nullptr) return OkStatus();
  Pack& p = *active_;
  if (p.synced_size == p.data_size || p.data_size == kPackHeaderSize) return OkStatus();
  const uint64_t pack_id = p.id;  // p may be gone after RecoverActiveLocked
  WEFT_RETURN_IF_ERROR(HandOffLocked());
  Status status = p.writer->Sync();
  // The pack's directory entry must be durable too, or a crash loses the synced file.
  if (status.ok() && p.synced_size == 0) status = fs_->SyncDir(dir_);
  if (!status.ok()) {
    // After a failed fsync the file's contents are unknown (the kernel may have dropped the
    // dirty pages), so the tail is rewritten elsewhere rather than synced again.
    RecoverActiveLocked();
    return status.WithContext("syncing pack " + PackIdHex(pack_id));
  }
  p.synced_size = p.data_size;
  p.tail.clear();  // keeps its capacity for the rest of this pack
  return OkStatus();
}

Status PackChunkStore::SealActiveLocked() {
  WEFT_RETURN_IF_ERROR(SyncActiveLocked());
  Pack* p = active_;
  if (p == nullptr || p->writer == nullptr) return OkStatus();
  // The data is durable already; a failing close cannot take it back.
  (void)p->writer->Close();
  p->writer.reset();
  p->sealed = true;
  spare_tail_ = std::move(p->tail);
  p->tail = {};
  active_ = nullptr;
  std::vector<Entry> entries = std::move(p->entries);
  p->entries = {};
  (void)WriteIndexLocked(p, entries);
  return OkStatus();
}

void PackChunkStore::RecoverActiveLocked() {
  Pack* old = active_;
  if (old == nullptr || !old->file_created) return;  // nothing reached a file: keep it all
  if (old->writer != nullptr) (void)old->writer->Close();
  old->writer.reset();
  const uint64_t durable = old->synced_size;
  const std::string tail = std::move(old->tail);
  std::vector<Entry> entries = std::move(old->entries);
  old->tail = {};
  old->entries = {};
  active_ = nullptr;
  EnsureActiveLocked();
  std::vector<Entry> kept;
  for (const Entry& e : entries) {
    if (e.loc.offset < durable) {
      kept.push_back(e);
      continue;
    }
    auto it = index_.find(e.id);
    if (it == index_.end() || !it->second.SameRecord(e.loc)) continue;
    CopyRecordLocked(e.id, e.loc,
                     std::string_view(tail).substr(e.loc.offset - durable, e.loc.record_size()));
  }
  if (durable <= kPackHeaderSize) {
    // No record of the old file is durable: it is garbage, and every record moved.
    const uint64_t old_id = old->id;
    packs_.erase(old_id);
    (void)fs_->RemoveFile(PackPath(old_id));
    return;
  }
  old->data_size = old->handed_size = durable;
  old->sealed = true;
  old->file_size = fs_->FileSize(PackPath(old->id)).value_or(durable);
  (void)WriteIndexLocked(old, kept);
}

Status PackChunkStore::WriteIndexLocked(Pack* pack, const std::vector<Entry>& entries) {
  PackIndex index;
  index.pack_id = pack->id;
  index.data_size = pack->data_size;
  index.pack_version = pack->version;
  for (const Entry& e : entries) {
    auto it = index_.find(e.id);
    if (it == index_.end() || !it->second.SameRecord(e.loc)) continue;
    index.entries.push_back({e.id, e.loc.offset, e.loc.stored_size, e.loc.raw_size, e.loc.codec});
  }
  std::sort(index.entries.begin(), index.entries.end(),
            [](const IndexEntry& a, const IndexEntry& b) { return a.offset < b.offset; });
  // The index only saves a scan at the next open, and a torn one fails its checksum and is
  // rescanned, so it is written without fsyncs: sealing a pack then costs one fsync, not four.
  const std::string path = IndexPath(pack->id);
  const std::string tmp = path + ".weft-tmp-idx";
  Status status = [&]() -> Status {
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs_->NewWritableFile(tmp));
    WEFT_RETURN_IF_ERROR(file->Append(EncodePackIndex(index)));
    WEFT_RETURN_IF_ERROR(file->Close());
    return fs_->Rename(tmp, path);
  }();
  if (!status.ok()) (void)fs_->RemoveFile(tmp);
  pack->indexed = status.ok();
  return status;
}

Result<std::shared_ptr<RandomAccessFile>> PackChunkStore::ReaderLocked(Pack* pack) {
  if (pack->reader == nullptr) {
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file,
                          fs_->NewRandomAccessFile(PackPath(pack->id)));
    pack->reader = std::move(file);
  }
  return pack->reader;
}

// ---- ChunkStore ----

Result<bool> PackChunkStore::Put(const ChunkId& id, ByteSpan data) {
  if (data.size() > kMaxChunkSize) {
    return InvalidArgument("chunk of " + std::to_string(data.size()) + " bytes exceeds the " +
                           std::to_string(kMaxChunkSize) + "-byte limit");
  }
  {
    std::lock_guard lock(mu_);
    if (ContainsLocked(id)) return false;
  }
  // Compress outside the lock so concurrent writers use every core.
  std::string compressed;
  const Codec codec = EncodeChunk(data, zstd_level_, &compressed);
  const ByteSpan stored = codec == Codec::kZstd ? AsBytes(compressed) : data;
  const uint64_t checksum = StoredChecksum(AsChars(stored));

  std::lock_guard lock(mu_);
  if (ContainsLocked(id)) return false;
  // Earlier bytes go to the file first: if the disk refuses them, this Put fails and adds
  // nothing, which also bounds what a full disk makes us hold in memory.
  WEFT_RETURN_IF_ERROR(MaybeHandOffLocked());
  AppendRecordLocked(id, codec, stored, static_cast<uint32_t>(data.size()), checksum);
  if (active_->data_size >= target_) WEFT_RETURN_IF_ERROR(SealActiveLocked());
  return true;
}

Status PackChunkStore::Flush() {
  std::lock_guard lock(mu_);
  return SyncActiveLocked();
}

bool PackChunkStore::Contains(const ChunkId& id) {
  std::lock_guard lock(mu_);
  return ContainsLocked(id);
}

// Where `size` bytes of records are read: a buffer each thread keeps, up to kKeptReadBytes
// (else `*once`). A fresh string per record would be zero-filled before the read and its
// plaintext then shifted over the header, two more passes over every byte a large GET sends.
constexpr size_t kKeptReadBytes = 2 << 20;
char* ReadBuffer(size_t size, std::string* once) {
  thread_local std::string kept;
  std::string& buffer = size <= kKeptReadBytes ? kept : *once;
  if (buffer.size() < size) buffer.resize(size);
  return buffer.data();
}

Result<std::string> PackChunkStore::ReadChunkAt(const ChunkId& id, const Location& loc, Check check,
                                                std::string* record) {
  const std::string where = Where(loc.pack_id, loc.offset);
  std::string tail;  // a copy of the record while it lies in the unsynced tail
  std::shared_ptr<RandomAccessFile> reader;
  {
    std::lock_guard lock(mu_);
    auto it = packs_.find(loc.pack_id);
    if (it == packs_.end()) return NotFound(where + ": pack is gone");
    Pack& pack = *it->second;
    if (!pack.sealed && loc.offset >= pack.synced_size) {
      const uint64_t start = loc.offset - pack.synced_size;
      if (start + loc.record_size() > pack.tail.size()) {
        return Internal(where + ": record lies outside the unsynced tail");
      }
      tail.assign(pack.tail, start, loc.record_size());
    } else {
      Result<std::shared_ptr<RandomAccessFile>> opened = ReaderLocked(&pack);
      if (!opened.ok()) return opened.status().WithContext(where);
      reader = std::move(opened).value();
    }
  }
  std::string_view bytes = tail;
  std::string once;  // the buffer for a record too large to keep one per thread
  if (reader != nullptr) {
    Result<std::string_view> got =
        reader->ReadAt(loc.offset, loc.record_size(), ReadBuffer(loc.record_size(), &once));
    if (!got.ok()) return got.status().WithContext(where);
    if (got->size() < loc.record_size()) {
      return Corruption(where + ": truncated pack: the record needs " +
                        std::to_string(loc.record_size()) + " bytes, the file ends after " +
                        std::to_string(got->size()));
    }
    bytes = *got;
  }
  if (record != nullptr) record->assign(bytes);
  Result<std::string> plain = DecodeRecord(bytes, id, loc, check);
  if (!plain.ok()) return plain.status().WithContext(where);
  return plain;
}

Result<std::string> PackChunkStore::Get(const ChunkId& id) {
  for (int attempt = 0;; ++attempt) {
    Location loc;
    {
      std::lock_guard lock(mu_);
      auto it = index_.find(id);
      if (it == index_.end()) return NotFound("chunk " + id.ShortHex() + " not found");
      loc = it->second;
    }
    Result<std::string> result = ReadChunkAt(id, loc, Check::kChecksum, nullptr);
    if (result.ok() || attempt > 0) return result;
    // A Sweep may have moved the chunk (and deleted its pack) after we looked it up; then one
    // more try at the new place. Otherwise the error stands.
    std::lock_guard lock(mu_);
    auto it = index_.find(id);
    if (it == index_.end()) return NotFound("chunk " + id.ShortHex() + " not found");
    if (it->second.SameRecord(loc)) return result;
  }
}

void PackChunkStore::WillNeed(std::span<const ChunkId> ids) {
  // Records of one file usually lie next to each other in one pack (its chunks were appended
  // in order), so neighbours merge into one range and the disk sees one request.
  struct Range {
    std::shared_ptr<RandomAccessFile> file;
    uint64_t pack_id, begin, end;
  };
  std::vector<Range> records;
  {
    std::lock_guard lock(mu_);
    for (const ChunkId& id : ids) {
      auto it = index_.find(id);
      if (it == index_.end()) continue;
      const Location& loc = it->second;
      auto pack = packs_.find(loc.pack_id);
      if (pack == packs_.end()) continue;
      if (!pack->second->sealed && loc.offset >= pack->second->synced_size) continue;  // memory
      Result<std::shared_ptr<RandomAccessFile>> file = ReaderLocked(pack->second.get());
      if (!file.ok()) continue;  // the Get that follows reports it
      records.push_back(
          {std::move(file).value(), loc.pack_id, loc.offset, loc.offset + loc.record_size()});
    }
  }
  std::sort(records.begin(), records.end(), [](const Range& a, const Range& b) {
    return std::tie(a.pack_id, a.begin) < std::tie(b.pack_id, b.begin);
  });
  std::vector<Range> ranges;
  for (Range& r : records) {
    if (!ranges.empty() && ranges.back().pack_id == r.pack_id &&
        r.begin <= ranges.back().end + kWillNeedGap) {
      ranges.back().end = std::max(ranges.back().end, r.end);
    } else {
      ranges.push_back(std::move(r));
    }
  }
  for (const Range& r : ranges) r.file->WillNeed(r.begin, r.end - r.begin);
}

PackChunkStore::ReadPlan PackChunkStore::PlanReads(std::span<const ChunkId> ids) {
  ReadPlan plan;
  plan.locs.resize(ids.size());
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < ids.size(); ++i) {
    auto it = index_.find(ids[i]);
    if (it == index_.end()) continue;
    const Location& loc = it->second;
    auto pack = packs_.find(loc.pack_id);
    if (pack == packs_.end() ||
        (!pack->second->sealed && loc.offset + loc.record_size() > pack->second->synced_size)) {
      continue;
    }
    plan.locs[i] = loc;
    // Record i-1 ends a run (it was read ahead of this one) where this one starts.
    const bool extends =
        !plan.runs.empty() && plan.runs.back().second == i &&
        plan.locs[i - 1].pack_id == loc.pack_id &&
        plan.locs[i - 1].offset + plan.locs[i - 1].record_size() == loc.offset &&
        loc.offset + loc.record_size() - plan.locs[plan.runs.back().first].offset <= kKeptReadBytes;
    if (extends) {
      plan.runs.back().second = i + 1;
      continue;
    }
    Result<std::shared_ptr<RandomAccessFile>> file = ReaderLocked(pack->second.get());
    if (!file.ok()) continue;  // Get reports it
    plan.runs.emplace_back(i, i + 1);
    plan.files.push_back(std::move(file).value());
  }
  return plan;
}

Status PackChunkStore::ReadMany(std::span<const ChunkId> ids, Plaintexts* out) {
  const ReadPlan plan = PlanReads(ids);
  out->views.assign(ids.size(), {});
  out->owned.assign(ids.size(), {});
  for (size_t r = 0; r < plan.runs.size(); ++r) {
    const auto [first, last] = plan.runs[r];
    const uint64_t begin = plan.locs[first].offset;
    const uint64_t size = plan.locs[last - 1].offset + plan.locs[last - 1].record_size() - begin;
    char* buffer;
    if (r == 0) {
      buffer = ReadBuffer(size, &out->once);
    } else {
      out->runs.push_back(std::make_unique_for_overwrite<char[]>(size));
      buffer = out->runs.back().get();
    }
    Result<std::string_view> got = plan.files[r]->ReadAt(begin, size, buffer);
    if (!got.ok() || got->size() < size) continue;
    for (size_t i = first; i < last; ++i) {
      const Location& loc = plan.locs[i];
      Result<std::string_view> plain = PlainOf(got->substr(loc.offset - begin, loc.record_size()),
                                               ids[i], loc, Check::kChecksum, &out->owned[i]);
      if (plain.ok()) out->views[i] = *plain;
    }
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    if (out->views[i].data() != nullptr) continue;  // read in a run (a view never is null)
    WEFT_ASSIGN_OR_RETURN(out->owned[i], Get(ids[i]));
    out->views[i] = out->owned[i];
  }
  return OkStatus();
}

Result<std::vector<std::shared_ptr<const std::string>>> PackChunkStore::GetManyOnce(
    std::span<const ChunkId> ids) {
  Plaintexts plain;
  WEFT_RETURN_IF_ERROR(ReadMany(ids, &plain));
  std::vector<std::shared_ptr<const std::string>> out;
  out.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const bool owned = !plain.owned[i].empty() && plain.views[i].data() == plain.owned[i].data();
    out.push_back(std::make_shared<const std::string>(owned ? std::move(plain.owned[i])
                                                            : std::string(plain.views[i])));
  }
  return out;
}

Status PackChunkStore::LendMany(std::span<const ChunkId> ids, const ChunkUser& use) {
  Plaintexts plain;
  WEFT_RETURN_IF_ERROR(ReadMany(ids, &plain));
  return use(plain.views);
}

Result<SweepStats> PackChunkStore::Sweep(const std::function<bool(const ChunkId&)>& is_live) {
  std::lock_guard sweep_lock(sweep_mu_);
  std::vector<Entry> snapshot;
  {
    std::lock_guard lock(mu_);
    sweeping_ = true;
    touched_.clear();
    snapshot.reserve(index_.size());
    for (const auto& [id, loc] : index_) snapshot.push_back({id, loc});
  }
  struct EndSweep {
    PackChunkStore* store;
    ~EndSweep() {
      std::lock_guard lock(store->mu_);
      store->sweeping_ = false;
      store->touched_.clear();
    }
  } end_sweep{this};

  // is_live runs without mu_: it may be slow (a metadata lookup) and must not block I/O.
  std::vector<Entry> dead;
  for (const Entry& e : snapshot) {
    if (!is_live(e.id)) dead.push_back(e);
  }

  SweepStats stats;
  std::set<uint64_t> drop, rewrite, reindex;
  {
    std::lock_guard lock(mu_);
    for (const Entry& e : dead) {
      if (touched_.contains(e.id)) continue;
      auto it = index_.find(e.id);
      if (it == index_.end() || !it->second.SameRecord(e.loc)) continue;
      // Only sealed packs: the active one writes its index from the map when it seals, and
      // by_pack (taken from the snapshot) would miss records appended since.
      auto pack = packs_.find(e.loc.pack_id);
      if (pack != packs_.end() && pack->second->sealed) reindex.insert(e.loc.pack_id);
      EraseLocked(it);
      ++stats.chunks_removed;
    }
    for (const auto& [pack_id, pack] : packs_) {
      if (!pack->sealed) continue;
      // Torn tails and duplicates count as garbage too, hence file_size.
      const uint64_t total = std::max(pack->file_size, pack->data_size) - kPackHeaderSize;
      if (pack->live_chunks == 0) {
        drop.insert(pack_id);
      } else if (2 * pack->live_bytes < total || pack->version != kPackVersion) {
        // Old-version packs are rewritten whole: their reads hash every byte.
        rewrite.insert(pack_id);
      } else if (!pack->indexed) {
        reindex.insert(pack_id);
      }
    }
  }

  std::map<uint64_t, std::vector<Entry>> by_pack;
  for (const Entry& e : snapshot) {
    if (rewrite.contains(e.loc.pack_id) || reindex.contains(e.loc.pack_id)) {
      by_pack[e.loc.pack_id].push_back(e);
    }
  }
  snapshot = {};

  // Packs with nothing live go first: on a full disk that is the space compaction needs.
  uint64_t freed_bytes = 0;
  DeletePacks(drop, &freed_bytes, &stats.packs_deleted);

  // Copy the live records of sparse packs into the active pack, in the stored form. A disk
  // too full for the copies (the reserve, PackStoreOptions) ends compaction, not the sweep.
  Status first_error;
  uint64_t copied_bytes = 0;
  bool out_of_space = false;
  // Packs some of whose records were copied but not all: kept, and keeping their old index,
  // since the copies may never become durable (a new index without the copied records would
  // lose them in a crash). Their dead records come back at a reopen, for the next sweep.
  std::set<uint64_t> partial;
  for (auto pack_it = rewrite.begin(); pack_it != rewrite.end();) {
    const uint64_t pack_id = *pack_it;
    std::vector<Entry>& entries = by_pack[pack_id];
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.loc.offset < b.loc.offset; });
    bool copied_all = true;
    for (const Entry& e : entries) {
      {
        std::lock_guard lock(mu_);
        auto it = index_.find(e.id);
        if (it == index_.end() || !it->second.SameRecord(e.loc)) continue;
      }
      std::string record;
      Result<std::string> plain = ReadChunkAt(e.id, e.loc, Check::kChecksum, &record);
      if (!plain.ok()) {
        // A live chunk we cannot read must not vanish with its pack: keep the pack.
        if (first_error.ok()) first_error = plain.status();
        copied_all = false;
        break;
      }
      std::lock_guard lock(mu_);
      auto it = index_.find(e.id);
      if (it == index_.end() || !it->second.SameRecord(e.loc)) continue;
      compacting_ = true;
      Status written = MaybeHandOffLocked();
      if (written.ok()) {
        CopyRecordLocked(e.id, e.loc, record);
        copied_bytes += record.size();
        if (active_->data_size >= target_) written = SealActiveLocked();
      }
      compacting_ = false;
      if (written.code() == StatusCode::kResourceExhausted) {
        out_of_space = true;
        copied_all = false;
        break;
      }
      WEFT_RETURN_IF_ERROR(written);
    }
    if (out_of_space) {
      // The packs not reached stay as they are, with indexes without their dead records.
      partial.insert(pack_id);
      for (auto rest = std::next(pack_it); rest != rewrite.end(); ++rest) reindex.insert(*rest);
      rewrite.erase(pack_it, rewrite.end());
      break;
    }
    if (copied_all) {
      ++pack_it;
    } else {
      partial.insert(pack_id);
      pack_it = rewrite.erase(pack_it);
    }
  }
  if (!rewrite.empty()) {
    // Old packs are deleted only once their copies are durable.
    std::lock_guard lock(mu_);
    compacting_ = true;
    Status synced = SyncActiveLocked();
    compacting_ = false;
    if (synced.code() == StatusCode::kResourceExhausted) {
      partial.insert(rewrite.begin(), rewrite.end());
      rewrite.clear();
    } else {
      WEFT_RETURN_IF_ERROR(synced);
    }
  }
  DeletePacks(rewrite, &freed_bytes, &stats.packs_rewritten);
  stats.bytes_reclaimed = freed_bytes > copied_bytes ? freed_bytes - copied_bytes : 0;

  // Kept packs that lost chunks get an index without them, so a reopen does not revive them.
  for (uint64_t pack_id : reindex) {
    if (rewrite.contains(pack_id) || drop.contains(pack_id) || partial.contains(pack_id)) {
      continue;
    }
    std::lock_guard lock(mu_);
    auto it = packs_.find(pack_id);
    if (it == packs_.end() || !it->second->sealed) continue;
    (void)WriteIndexLocked(it->second.get(), by_pack[pack_id]);
  }
  (void)fs_->SyncDir(dir_);
  if (!first_error.ok()) return first_error;
  return stats;
}

void PackChunkStore::DeletePacks(const std::set<uint64_t>& doomed, uint64_t* freed_bytes,
                                 uint64_t* deleted) {
  for (uint64_t pack_id : doomed) {
    std::unique_ptr<Pack> gone;
    {
      std::lock_guard lock(mu_);
      auto it = packs_.find(pack_id);
      if (it == packs_.end() || it->second->live_chunks != 0) continue;
      gone = std::move(it->second);
      packs_.erase(it);
    }
    // Data first: an index left behind by a crash is removed at open, while a pack left
    // without its index would be rescanned and bring its dead chunks back.
    if (!fs_->RemoveFile(PackPath(pack_id)).ok()) continue;
    if (gone->indexed || fs_->Exists(IndexPath(pack_id))) {
      (void)fs_->RemoveFile(IndexPath(pack_id));
    }
    *freed_bytes += gone->file_size;
    ++*deleted;
  }
}

Status PackChunkStore::Verify(std::vector<ChunkProblem>* problems) {
  std::lock_guard sweep_lock(sweep_mu_);
  struct PackInfo {
    uint64_t on_disk = 0;  // bytes the file must have
    std::vector<Entry> entries;
  };
  std::map<uint64_t, PackInfo> packs;
  {
    std::lock_guard lock(mu_);
    problems->insert(problems->end(), open_problems_.begin(), open_problems_.end());
    for (const auto& [pack_id, pack] : packs_) {
      packs[pack_id].on_disk = pack->sealed ? pack->data_size : pack->synced_size;
    }
    for (const auto& [id, loc] : index_) packs[loc.pack_id].entries.push_back({id, loc});
  }
  for (auto& [pack_id, info] : packs) {
    const std::string name = "pack " + PackIdHex(pack_id);
    uint64_t file_size = 0;
    if (info.on_disk > 0) {
      Result<uint64_t> size = fs_->FileSize(PackPath(pack_id));
      if (!size.ok()) {
        problems->push_back({name, size.status().WithContext(name)});
      } else {
        file_size = *size;
        if (file_size < info.on_disk) {
          problems->push_back(
              {name,
               Corruption(name + ": truncated pack: the file has " + std::to_string(file_size) +
                          " bytes, the index covers " + std::to_string(info.on_disk))});
        }
        // A copy: clang before 16 cannot capture a structured binding.
        const auto id = pack_id;
        Result<std::string> header = [&]() -> Result<std::string> {
          WEFT_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> f,
                                fs_->NewRandomAccessFile(PackPath(id)));
          std::string buf(kPackHeaderSize, '\0');
          WEFT_ASSIGN_OR_RETURN(std::string_view got, f->ReadAt(0, buf.size(), buf.data()));
          return std::string(got);
        }();
        Status header_status = header.ok() ? CheckPackHeader(*header).status() : header.status();
        if (!header_status.ok()) {
          problems->push_back({name, header_status.WithContext(name + " offset 0")});
        }
      }
    }
    std::sort(info.entries.begin(), info.entries.end(),
              [](const Entry& a, const Entry& b) { return a.loc.offset < b.loc.offset; });
    for (const Entry& e : info.entries) {
      const std::string where = Where(pack_id, e.loc.offset);
      const uint64_t end = e.loc.offset + e.loc.record_size();
      if (end <= info.on_disk && end > file_size) {
        problems->push_back({where, Corruption(where + ": index points past the end of the " +
                                               "pack (" + std::to_string(file_size) + " bytes)")});
        continue;
      }
      Result<std::string> plain = ReadChunkAt(e.id, e.loc, Check::kFull, nullptr);
      if (!plain.ok()) problems->push_back({where, plain.status()});
    }
  }
  return OkStatus();
}

ChunkStoreStats PackChunkStore::Stats() {
  std::lock_guard lock(mu_);
  ChunkStoreStats stats;
  stats.chunks = index_.size();
  stats.raw_bytes = raw_bytes_;
  stats.stored_bytes = stored_bytes_;
  for (const auto& [pack_id, pack] : packs_) {
    if (!pack->sealed && !pack->file_created) continue;
    ++stats.pack_files;
    stats.pack_bytes += pack->file_size;
  }
  return stats;
}

}  // namespace

uint64_t DefaultReserveBytes(uint64_t total) {
  // 4 MiB holds the metadata of a small disk; a tiny test disk keeps a tenth.
  return std::min<uint64_t>(
      64 << 20, std::max<uint64_t>(total / 20, std::min<uint64_t>(4 << 20, total / 10)));
}

Result<std::unique_ptr<ChunkStore>> OpenPackChunkStore(FileSystem* fs, const std::string& dir,
                                                       const PackStoreOptions& opts) {
  uint64_t target = opts.target_pack_size;
  if (opts.target_pack_size_for_test != 0) {
    target = opts.target_pack_size_for_test;
    if (target > kMaxTestPackSize) {
      return InvalidArgument("target_pack_size_for_test must be at most 1 GiB");
    }
  } else if (target < kMinTargetPackSize || target > kMaxTargetPackSize) {
    return InvalidArgument("target_pack_size must be within 16-64 MiB, got " +
                           std::to_string(target));
  }
  if (opts.zstd_level < ZSTD_minCLevel() || opts.zstd_level > ZSTD_maxCLevel()) {
    return InvalidArgument("zstd_level " + std::to_string(opts.zstd_level) + " is out of range");
  }
  auto store =
      std::make_unique<PackChunkStore>(fs, dir, opts.zstd_level, target, opts.reserve_bytes);
  WEFT_RETURN_IF_ERROR(store->Load().WithContext("opening pack store " + dir));
  return std::unique_ptr<ChunkStore>(std::move(store));
}

}  // namespace weft
