// KeyWalker: the keys of a bucket in S3 order. Weft stores keys as paths, so S3's order
// (bytewise over whole keys) is not directory order: a directory "a" sorts as "a/", after a
// file "a-1". The walker merges each directory's entries by that key, seeks into large
// directories instead of scanning them, and only descends where a key could still follow the
// start position. Used by ListObjects (V1, V2) and ListObjectVersions. One thread at a time.
#pragma once

#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "base/status.h"
#include "vfs/volume.h"

namespace weft::s3 {

struct ListedKey {
  std::string key;  // relative to the bucket; a directory's key ends with '/'
  bool is_directory = false;
  FileInfo info;
};

class KeyWalker {
 public:
  struct Options {
    std::string bucket;
    std::optional<std::string> snapshot;  // list as of this snapshot
    std::string prefix;                   // only keys starting with this
    std::string start_after;              // only keys greater than this
    // Keys starting with this are skipped (a continuation after a common prefix).
    std::string skip_prefix;
    // Also keys that were deleted but whose versions are retained (ListObjectVersions);
    // where the volume cannot list them (a spoke), current keys only.
    bool include_removed = false;
  };
  KeyWalker(Volume& volume, RequestContext ctx, Options options);

  // The next file or directory in key order, or nullopt at the end. A directory is returned
  // before its contents; call SkipDirectory() right after to not descend into it.
  Result<std::optional<ListedKey>> Next();
  void SkipDirectory() { skip_last_directory_ = true; }
  // Whether any page read so far was stale (a --stale-ok spoke without its hub).
  bool stale() const { return stale_; }
  // Whether removed keys are listed as asked (false once the volume said it cannot).
  bool lists_removed() const { return options_.include_removed; }

 private:
  struct Pending {
    std::string sort_key;  // name, plus '/' for a directory
    DirEntry entry;
    bool operator>(const Pending& other) const { return sort_key > other.sort_key; }
  };
  struct Frame {
    std::string dir_path;     // volume path of the directory
    std::string key_base;     // key of the directory ("" for the bucket, else "a/b/")
    std::string name_prefix;  // entries must start with this
    std::string read_after;   // next ReadDir page starts after this name
    bool exhausted = false;
    std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> heap;
  };

  Status OpenFrame(std::string dir_path, std::string key_base, std::string name_prefix);
  Status Refill(Frame& frame);
  bool CouldHoldKeysAfterStart(const std::string& dir_key) const;

  Volume& volume_;
  RequestContext ctx_;
  Options options_;
  std::vector<std::unique_ptr<Frame>> stack_;
  bool started_ = false;
  std::optional<ListedKey> last_directory_;
  bool skip_last_directory_ = false;
  bool stale_ = false;
};

}  // namespace weft::s3
