// MemKvStore: the in-memory KvStore fake. Each Write publishes a new immutable map version
// (copy-on-write), so a snapshot or iterator is just a reference to one version: O(1) to take
// and stable however the store changes. Writes copy the whole map; it is a test fake.
#include <functional>
#include <map>
#include <mutex>

#include "meta/kv_store.h"

namespace weft {
namespace {

// std::less<> lets lookups take a string_view without building a std::string.
using Version = std::map<std::string, std::string, std::less<>>;
using VersionPtr = std::shared_ptr<const Version>;

// Not thread-safe; owns a reference to the version it walks.
class MemKvIterator final : public KvIterator {
 public:
  explicit MemKvIterator(VersionPtr version) : version_(std::move(version)), it_(version_->end()) {}

  void Seek(std::string_view key) override { it_ = version_->lower_bound(key); }
  bool Valid() const override { return it_ != version_->end(); }
  void Next() override { ++it_; }
  std::string_view key() const override { return it_->first; }
  std::string_view value() const override { return it_->second; }
  Status status() const override { return OkStatus(); }

 private:
  const VersionPtr version_;
  Version::const_iterator it_;  // end() until the first Seek.
};

Result<std::optional<std::string>> GetFrom(const Version& version, std::string_view key) {
  auto it = version.find(key);
  if (it == version.end()) return std::optional<std::string>();
  return std::optional<std::string>(it->second);
}

class MemSnapshotReader final : public KvReader {
 public:
  explicit MemSnapshotReader(VersionPtr version) : version_(std::move(version)) {}
  Result<std::optional<std::string>> Get(std::string_view key) override {
    return GetFrom(*version_, key);
  }
  std::unique_ptr<KvIterator> NewIterator() override {
    return std::make_unique<MemKvIterator>(version_);
  }

 private:
  const VersionPtr version_;
};

class MemKvStore final : public KvStore {
 public:
  Result<std::optional<std::string>> Get(std::string_view key) override {
    return GetFrom(*Current(), key);
  }
  std::unique_ptr<KvIterator> NewIterator() override {
    return std::make_unique<MemKvIterator>(Current());
  }
  std::unique_ptr<KvReader> NewSnapshot() override {
    return std::make_unique<MemSnapshotReader>(Current());
  }

  Status Write(const WriteBatch& batch) override {
    if (batch.empty()) return OkStatus();
    // Writers queue on write_mu_ while they copy, so readers only ever wait for a pointer swap.
    std::lock_guard write_lock(write_mu_);
    auto next = std::make_shared<Version>(*Current());
    for (const WriteBatch::Op& op : batch.ops()) {
      if (op.is_delete) {
        next->erase(op.key);
      } else {
        (*next)[op.key] = op.value;
      }
    }
    std::lock_guard lock(mu_);
    current_ = std::move(next);
    return OkStatus();
  }

 private:
  VersionPtr Current() const {
    std::lock_guard lock(mu_);
    return current_;
  }

  std::mutex write_mu_;  // Serialises writers; held across the copy.
  mutable std::mutex mu_;
  VersionPtr current_ = std::make_shared<const Version>();  // Guarded by mu_.
};

}  // namespace

std::unique_ptr<KvStore> NewMemKvStore() {
  return std::make_unique<MemKvStore>();
}

}  // namespace weft
