// RocksKvStore: KvStore over embedded RocksDB. Every Write is synced before it returns, so an
// acknowledged metadata change survives power loss. RocksDB is internally synchronised; this
// file adds no locks. Snapshots and iterators share ownership of the DB (and an iterator of
// its snapshot), so they stay valid even if the store or snapshot object is destroyed first.
#include <rocksdb/cache.h>
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <exception>
#include <new>

#include "io/file_system.h"
#include "meta/kv_store.h"

namespace weft {
namespace {

// Metadata is small and hot; these bound memory and descriptors on a shared GPU node. The
// caches (RocksKvStoreOptions::cache_bytes) go four fifths to blocks, a fifth to rows: point
// lookups of hot keys (a path's directory entries and inodes, read on every request) are
// answered from the row cache without searching blocks, a sixth of the hub's CPU on small GETs.
constexpr size_t kWriteBufferBytes = 32 << 20;
constexpr int kMaxOpenFiles = 1024;
constexpr int kBloomBitsPerKey = 10;

Status FromRocks(const rocksdb::Status& s, std::string_view context) {
  if (s.ok()) return OkStatus();
  std::string m(context);
  m += ": ";
  m += s.ToString();
  if (s.IsNotFound() || s.IsPathNotFound()) return NotFound(std::move(m));
  if (s.IsCorruption()) return Corruption(std::move(m));
  if (s.IsNoSpace()) return ResourceExhausted(std::move(m));  // An IOError subcode; test first.
  if (s.IsIOError()) return IoError(std::move(m));
  if (s.IsInvalidArgument()) return InvalidArgument(std::move(m));
  if (s.IsNotSupported()) return Unimplemented(std::move(m));
  if (s.IsBusy() || s.IsAborted()) return Aborted(std::move(m));
  if (s.IsTryAgain() || s.IsTimedOut() || s.IsShutdownInProgress()) {
    return Unavailable(std::move(m));
  }
  return Internal(std::move(m));
}

// RocksDB reports its status codes rather than throwing, but allocation and thread creation
// inside it can still throw; nothing may escape into Weft's exception-free core.
template <typename Fn>
Status CallRocks(std::string_view context, Fn&& fn) {
  try {
    return FromRocks(fn(), context);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted(std::string(context) + ": out of memory");
  } catch (const std::exception& e) {
    return Internal(std::string(context) + ": " + e.what());
  }
}

rocksdb::Slice ToSlice(std::string_view s) {
  return {s.data(), s.size()};
}
std::string_view ToView(const rocksdb::Slice& s) {
  return {s.data(), s.size()};
}

using DbPtr = std::shared_ptr<rocksdb::DB>;

// Releases the snapshot when the last reader or iterator using it goes away.
struct SnapshotHolder {
  SnapshotHolder(DbPtr db_in, const rocksdb::Snapshot* snapshot_in)
      : db(std::move(db_in)), snapshot(snapshot_in) {}
  ~SnapshotHolder() { db->ReleaseSnapshot(snapshot); }
  SnapshotHolder(const SnapshotHolder&) = delete;
  SnapshotHolder& operator=(const SnapshotHolder&) = delete;

  const DbPtr db;
  const rocksdb::Snapshot* const snapshot;
};

// Not thread-safe (one user at a time, as KvIterator requires). Declared members keep the DB
// and snapshot alive for as long as the RocksDB iterator, which is destroyed first.
class RocksKvIterator final : public KvIterator {
 public:
  RocksKvIterator(DbPtr db, std::shared_ptr<SnapshotHolder> snapshot)
      : db_(std::move(db)), snapshot_(std::move(snapshot)) {
    rocksdb::ReadOptions options;
    if (snapshot_ != nullptr) options.snapshot = snapshot_->snapshot;
    it_.reset(db_->NewIterator(options));
  }

  void Seek(std::string_view key) override { it_->Seek(ToSlice(key)); }
  bool Valid() const override { return it_->Valid(); }
  void Next() override { it_->Next(); }
  std::string_view key() const override { return ToView(it_->key()); }
  std::string_view value() const override { return ToView(it_->value()); }
  Status status() const override { return FromRocks(it_->status(), "iterating metadata"); }

 private:
  const DbPtr db_;
  const std::shared_ptr<SnapshotHolder> snapshot_;  // Null for an iterator of the live store.
  std::unique_ptr<rocksdb::Iterator> it_;
};

Result<std::optional<std::string>> GetFrom(rocksdb::DB* db, const rocksdb::Snapshot* snapshot,
                                           std::string_view key) {
  rocksdb::ReadOptions options;
  options.snapshot = snapshot;
  std::string value;
  rocksdb::Status rs;
  Status s = CallRocks("reading metadata", [&] {
    rs = db->Get(options, ToSlice(key), &value);
    return rs.IsNotFound() ? rocksdb::Status::OK() : rs;
  });
  if (!s.ok()) return s;
  if (rs.IsNotFound()) return std::optional<std::string>();
  return std::optional<std::string>(std::move(value));
}

// A point-in-time view; see SnapshotHolder for lifetime.
class RocksSnapshotReader final : public KvReader {
 public:
  explicit RocksSnapshotReader(std::shared_ptr<SnapshotHolder> holder)
      : holder_(std::move(holder)) {}

  Result<std::optional<std::string>> Get(std::string_view key) override {
    return GetFrom(holder_->db.get(), holder_->snapshot, key);
  }
  std::unique_ptr<KvIterator> NewIterator() override {
    return std::make_unique<RocksKvIterator>(holder_->db, holder_);
  }

 private:
  const std::shared_ptr<SnapshotHolder> holder_;
};

// What the DB's deleter must know: whether RocksDB saw a failed write, after which its close
// may abort (WritableFileWriter asserts on a writer with an earlier error).
struct DbHealth {
  std::atomic<bool> write_failed{false};
};

class RocksKvStore final : public KvStore {
 public:
  RocksKvStore(DbPtr db, std::shared_ptr<DbHealth> health, std::string read_only_reason)
      : db_(std::move(db)),
        health_(std::move(health)),
        read_only_reason_(std::move(read_only_reason)) {}

  Result<std::optional<std::string>> Get(std::string_view key) override {
    return GetFrom(db_.get(), nullptr, key);
  }

  std::unique_ptr<KvIterator> NewIterator() override {
    return std::make_unique<RocksKvIterator>(db_, nullptr);
  }

  Status Write(const WriteBatch& batch) override {
    if (batch.empty()) return OkStatus();
    if (!read_only_reason_.empty()) return ResourceExhausted(read_only_reason_);
    Status written = CallRocks("writing metadata", [&] {
      rocksdb::WriteBatch rb;
      for (const WriteBatch::Op& op : batch.ops()) {
        rocksdb::Status s =
            op.is_delete ? rb.Delete(ToSlice(op.key)) : rb.Put(ToSlice(op.key), ToSlice(op.value));
        if (!s.ok()) return s;
      }
      rocksdb::WriteOptions options;
      options.sync = true;  // Acknowledged means durable: fsync the WAL before returning.
      return db_->Write(options, &rb);
    });
    if (written.code() == StatusCode::kIoError ||
        written.code() == StatusCode::kResourceExhausted) {
      health_->write_failed = true;
    }
    return written;
  }

  std::unique_ptr<KvReader> NewSnapshot() override {
    return std::make_unique<RocksSnapshotReader>(
        std::make_shared<SnapshotHolder>(db_, db_->GetSnapshot()));
  }

  uint64_t ApproximateDiskBytes() override {
    uint64_t sst_bytes = 0;
    db_->GetIntProperty(rocksdb::DB::Properties::kTotalSstFilesSize, &sst_bytes);
    // Recent writes live only in the WAL until a memtable flush.
    uint64_t wal_bytes = 0;
    rocksdb::VectorLogPtr wal_files;
    if (db_->GetSortedWalFiles(wal_files).ok()) {
      for (const auto& wal : wal_files) wal_bytes += wal->SizeFileBytes();
    }
    return sst_bytes + wal_bytes;
  }

 private:
  const DbPtr db_;
  const std::shared_ptr<DbHealth> health_;
  const std::string read_only_reason_;  // empty when writable
};

// RocksDB's own info LOG is a file in the store's directory, and Debian's RocksDB 7.8 (built
// with asserts) aborts the process on the line logged after a write to it failed: on a full
// disk, any open, write or close could then abort. Errors go to stderr instead, and the rest
// (RocksDB's chatter) nowhere.
class StderrLogger final : public rocksdb::Logger {
 public:
  StderrLogger() : Logger(rocksdb::InfoLogLevel::ERROR_LEVEL) {}
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    char line[1024];
    std::vsnprintf(line, sizeof line, format, ap);
    std::fprintf(stderr, "weft: metadata store: %s\n", line);
  }
  void LogHeader(const char* /*format*/, va_list /*ap*/) override {}  // version banners
};

rocksdb::Options StoreOptions(const RocksKvStoreOptions& store) {
  const uint64_t cache = std::max(store.cache_bytes, RocksKvStoreOptions::kMinCacheBytes);
  rocksdb::Options options;
  options.info_log = std::make_shared<StderrLogger>();
  options.create_if_missing = true;
  // No preallocation: a new store holds kilobytes, not a 36 MiB log (every write is synced,
  // so preallocated blocks would not spare the metadata update anyway).
  options.allow_fallocate = false;
  // Recovery replays the log into memory and writes no table, so a nearly full disk opens.
  options.avoid_flush_during_recovery = true;
  options.max_open_files = kMaxOpenFiles;
  options.write_buffer_size = kWriteBufferBytes;
  options.keep_log_file_num = 4;  // RocksDB's own info LOG files, not the WAL.
  std::vector<rocksdb::CompressionType> supported = rocksdb::GetSupportedCompressions();
  const bool has_lz4 =
      std::find(supported.begin(), supported.end(), rocksdb::kLZ4Compression) != supported.end();
  options.compression = has_lz4 ? rocksdb::kLZ4Compression : rocksdb::kNoCompression;

  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(cache - cache / 5);
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(kBloomBitsPerKey));
  // Charge index and filter blocks to the cache so memory stays bounded as the store grows.
  table.cache_index_and_filter_blocks = true;
  table.pin_l0_filter_and_index_blocks_in_cache = true;
  options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  options.row_cache = rocksdb::NewLRUCache(cache / 5);
  return options;
}

// RocksDB holds its LOCK file with fcntl, failing "While lock file: ..." when another process
// has it, and keeps a process-wide set, failing "lock hold by current process" on a second
// open here. Other LOCK errors (permissions, say) keep their own IoError.
enum class LockHolder { kNone, kOtherProcess, kThisProcess };
LockHolder LockHolderOf(const rocksdb::Status& s) {
  if (!s.IsIOError()) return LockHolder::kNone;
  const std::string m = s.ToString();
  if (m.find("lock hold by current process") != std::string::npos) return LockHolder::kThisProcess;
  if (m.find("While lock file") != std::string::npos) return LockHolder::kOtherProcess;
  return LockHolder::kNone;
}

}  // namespace

Result<std::unique_ptr<KvStore>> OpenRocksKvStore(const std::string& dir,
                                                  const RocksKvStoreOptions& store_options) {
  FileSystem* fs = PosixFileSystem();
  WEFT_RETURN_IF_ERROR(fs->CreateDirs(dir).WithContext("opening metadata store"));
  std::string read_only_reason;
  if (Result<DiskSpace> space = fs->Space(dir);
      space.ok() && space->available < kMinFreeBytesToOpen && fs->Exists(dir + "/CURRENT")) {
    read_only_reason = "the disk holding " + dir + " is full (" +
                       std::to_string(space->available >> 10) +
                       " KiB free): metadata opened read-only; free space and restart";
  }
  rocksdb::DB* raw = nullptr;
  rocksdb::Status rs;
  Status s = CallRocks("opening metadata store in " + dir, [&] {
    rs = read_only_reason.empty()
             ? rocksdb::DB::Open(StoreOptions(store_options), dir, &raw)
             : rocksdb::DB::OpenForReadOnly(StoreOptions(store_options), dir, &raw);
    return rs;
  });
  if (!s.ok() && rs.IsNoSpace() && read_only_reason.empty()) {
    // Recovery writes a new log and manifest; with no room for them, read what is there.
    read_only_reason =
        "the disk holding " + dir + " is full: metadata opened read-only; free space and restart";
    s = CallRocks("opening metadata store in " + dir + " read-only", [&] {
      rs = rocksdb::DB::OpenForReadOnly(StoreOptions(store_options), dir, &raw);
      return rs;
    });
  }
  if (!s.ok()) {
    switch (LockHolderOf(rs)) {
      case LockHolder::kOtherProcess:
        return Unavailable("data directory " + dir + " is in use by another weft process (" +
                           rs.ToString() + ")");
      case LockHolder::kThisProcess:
        return Unavailable("data directory " + dir +
                           " is in use by another store in this process (" + rs.ToString() + ")");
      case LockHolder::kNone:
        break;
    }
    return s;
  }
  if (!read_only_reason.empty()) std::fprintf(stderr, "weft: %s\n", read_only_reason.c_str());
  auto health = std::make_shared<DbHealth>();
  DbPtr db(raw, [health](rocksdb::DB* d) {
    uint64_t background_errors = 0;
    d->GetIntProperty("rocksdb.background-errors", &background_errors);
    // After a failed write RocksDB's close may abort the process: leave it open instead (the
    // process is ending, and every acknowledged write is in the synced log).
    if (health->write_failed || background_errors > 0) return;
    (void)d->Close();  // Nothing left to report a failure to; the WAL is synced already.
    delete d;
  });
  return std::unique_ptr<KvStore>(
      std::make_unique<RocksKvStore>(std::move(db), std::move(health), read_only_reason));
}

}  // namespace weft
