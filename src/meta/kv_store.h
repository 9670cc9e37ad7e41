// KvStore: an ordered, transactional key-value store, the only way Weft's metadata reaches
// disk. Implementations: RocksKvStore (embedded RocksDB, every Write synced before it returns)
// and MemKvStore (the in-memory fake). All methods are thread-safe; iterators and snapshots
// are used by one thread at a time.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace weft {

// A group of puts and deletes applied atomically by KvStore::Write.
class WriteBatch {
 public:
  struct Op {
    bool is_delete;
    std::string key;
    std::string value;
  };
  void Put(std::string_view key, std::string_view value) {
    ops_.push_back({false, std::string(key), std::string(value)});
  }
  void Delete(std::string_view key) { ops_.push_back({true, std::string(key), {}}); }
  const std::vector<Op>& ops() const { return ops_; }
  bool empty() const { return ops_.empty(); }
  size_t size() const { return ops_.size(); }
  void Clear() { ops_.clear(); }

 private:
  std::vector<Op> ops_;
};

// Forward iterator over keys in bytewise order.
class KvIterator {
 public:
  virtual ~KvIterator() = default;
  // Positions at the first key >= `key`.
  virtual void Seek(std::string_view key) = 0;
  virtual bool Valid() const = 0;
  virtual void Next() = 0;
  virtual std::string_view key() const = 0;
  virtual std::string_view value() const = 0;
  // Not OK if iteration stopped because of an error rather than the end.
  virtual Status status() const = 0;
};

// Read access, either to the live store or to a consistent point-in-time snapshot.
class KvReader {
 public:
  virtual ~KvReader() = default;
  // nullopt if absent.
  virtual Result<std::optional<std::string>> Get(std::string_view key) = 0;
  virtual std::unique_ptr<KvIterator> NewIterator() = 0;
};

class KvStore : public KvReader {
 public:
  // Applies `batch` atomically; durable (synced) before returning OK.
  virtual Status Write(const WriteBatch& batch) = 0;
  // A consistent view of the store as of now; later writes are invisible through it.
  virtual std::unique_ptr<KvReader> NewSnapshot() = 0;
  // Approximate bytes the store occupies on disk (0 for in-memory).
  virtual uint64_t ApproximateDiskBytes() { return 0; }
};

// Opens (creating if missing) a RocksDB store in `dir`. When the disk has less than
// kMinFreeBytesToOpen free (a disk filled by something else, then a crash), the store opens
// read-only instead, with everything acknowledged readable (RocksDB replays its log in
// memory); each Write then fails with ResourceExhausted saying so. RocksDB aborts the process
// on some write errors during recovery and close, so Weft never lets it write into a full
// disk: the pack store keeps a reserve (PackStoreOptions::reserve_bytes), and a store that saw
// a failed write is left unclosed at exit (its log was synced at every acknowledged write).
inline constexpr uint64_t kMinFreeBytesToOpen = 1 << 20;
struct RocksKvStoreOptions {
  // Memory for blocks read (four fifths) and hot keys (a fifth); at least kMinCacheBytes.
  uint64_t cache_bytes = 80ull << 20;
  static constexpr uint64_t kMinCacheBytes = 8 << 20;
};
Result<std::unique_ptr<KvStore>> OpenRocksKvStore(const std::string& dir,
                                                  const RocksKvStoreOptions& options = {});
std::unique_ptr<KvStore> NewMemKvStore();

}  // namespace weft
