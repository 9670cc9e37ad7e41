// Randomized model-based test of LocalVolume. Each seed drives a volume (in-memory stores, small
// chunks, a fake clock, one reopen) and a plain reference model with the same random ops (write,
// CommitAll, mkdir, rename, unlink, rmdir, setattr, symlink, mknod, link, snapshots, GC, read
// probes), comparing
// every status code and change-feed entry; every 25 ops and at the end it compares the live tree,
// all snapshots (both read forms), versions, usage and fsck. Disagreements are grouped by kind,
// with the first seed's op trace. How to run more seeds or replay one: see kDefaultSeeds below.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"
#include "chunk/chunk_id.h"
#include "chunk/mem_chunk_store.h"
#include "meta/kv_store.h"
#include "vfs/local_volume.h"

namespace weft {
namespace {

// The defaults take about 20 s of CPU in a Debug build (split over kShards ctest entries).
// Environment overrides:
//   WEFT_MODEL_SEEDS=3000 WEFT_MODEL_OPS=500     more and longer runs (seeds 1..3000);
//   WEFT_MODEL_FIRST_SEED=<n>                    the first seed (to explore other ranges);
//   WEFT_MODEL_FIRST_SEED=<n> WEFT_MODEL_SEEDS=1 WEFT_MODEL_VERBOSE=1
//                                                replays seed <n>, printing every op and check.
// e.g. WEFT_MODEL_SEEDS=3000 build/dev/src/vfs/vfs_test --gtest_filter='Shards/VolumeModel*'
constexpr int kDefaultSeeds = 300;
constexpr int kDefaultOps = 200;
constexpr int kCheckEvery = 25;
constexpr size_t kMaxFileBytes = 20 * 1024;

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

std::string CodeName(StatusCode c) {
  return std::string(StatusCodeName(c));
}

// ---------------------------------------------------------------------------------------------
// The reference model: a map from canonical absolute path to node.

struct Node {
  FileType type = FileType::kDirectory;
  uint32_t mode = 0755;
  std::shared_ptr<const std::string> data;  // files
  std::string target;                       // symlinks
  std::string version_id;                   // files: as returned by the commit that wrote `data`
  int64_t mtime_ns = 0;                     // files
  uint64_t ino = 0;                         // 0 until first seen through the volume
  // Names of one file (hard links) share a group, and a change through one shows in all.
  uint64_t group = 0;
};

// Keys under one directory are contiguous (they share the prefix "dir/").
using Tree = std::map<std::string, Node>;

struct ModelSnapshot {
  std::string path;       // the subtree it covers
  Tree tree;              // the whole live tree when it was taken
  uint64_t sequence = 0;  // the commit that created it
};

std::vector<std::string> Segments(const std::string& path) {
  std::vector<std::string> out;
  size_t pos = 1;
  while (pos < path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string::npos) slash = path.size();
    out.push_back(path.substr(pos, slash - pos));
    pos = slash + 1;
  }
  return out;
}

std::string Child(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

// True if `path` is strictly below `dir`.
bool IsUnder(const std::string& path, const std::string& dir) {
  if (dir == "/") return path != "/";
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         path[dir.size()] == '/';
}

// `path` (equal to or below `from`) re-rooted at `to`.
std::string Rebase(const std::string& path, const std::string& from, const std::string& to) {
  if (path == from) return to;
  std::string rel = from == "/" ? path : path.substr(from.size());
  return to == "/" ? rel : to + rel;
}

// Names of the direct children of `dir`, sorted bytewise.
std::vector<std::string> Children(const Tree& t, const std::string& dir) {
  const std::string prefix = dir == "/" ? "/" : dir + "/";
  std::vector<std::string> out;
  for (auto it = t.lower_bound(prefix);
       it != t.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    if (it->first.size() == prefix.size()) continue;  // the root itself
    if (it->first.find('/', prefix.size()) == std::string::npos) {
      out.push_back(it->first.substr(prefix.size()));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool HasChildren(const Tree& t, const std::string& dir) {
  const std::string prefix = dir == "/" ? "/" : dir + "/";
  auto it = t.upper_bound(prefix);  // skips the root itself when dir is "/"
  return it != t.end() && it->first.compare(0, prefix.size(), prefix) == 0;
}

bool IsReserved(const std::string& path) {
  auto segs = Segments(path);
  return !segs.empty() && segs[0] == ".weft";
}

// Walks the directories `segs` from the root. With `allow_missing`, stops at the first missing
// one (those are created by the caller) and reports its index in *first_missing.
StatusCode WalkDirs(const Tree& t, const std::vector<std::string>& segs, bool allow_missing,
                    size_t* first_missing = nullptr) {
  if (first_missing != nullptr) *first_missing = segs.size();
  std::string cur = "/";
  for (size_t i = 0; i < segs.size(); ++i) {
    cur = Child(cur, segs[i]);
    auto it = t.find(cur);
    if (it == t.end()) {
      if (!allow_missing) return StatusCode::kNotFound;
      if (first_missing != nullptr) *first_missing = i;
      return StatusCode::kOk;
    }
    if (it->second.type != FileType::kDirectory) return StatusCode::kNotADirectory;
  }
  return StatusCode::kOk;
}

std::vector<std::string> ParentSegments(const std::string& path) {
  auto segs = Segments(path);
  if (!segs.empty()) segs.pop_back();
  return segs;
}

// What a read (Stat, OpenReader, ReadDir) of `path` in `t` resolves to.
StatusCode Lookup(const Tree& t, const std::string& path, const Node** node) {
  *node = nullptr;
  if (path != "/") {
    StatusCode c = WalkDirs(t, ParentSegments(path), false);
    if (c != StatusCode::kOk) return c;
  }
  auto it = t.find(path);
  if (it == t.end()) return StatusCode::kNotFound;
  *node = &it->second;
  return StatusCode::kOk;
}

// Creates the directories of `path`'s parent from index `from` on (mkdir -p).
void CreateParents(Tree* t, const std::string& path, size_t from) {
  auto segs = ParentSegments(path);
  std::string cur = "/";
  for (size_t i = 0; i < segs.size(); ++i) {
    cur = Child(cur, segs[i]);
    if (i >= from) (*t)[cur] = Node{};
  }
}

// Model semantics of every mutation. Each returns the status code the volume must return and,
// when it is OK, applies the change to `tree`.
struct Model {
  Tree tree;
  std::map<std::string, ModelSnapshot> snapshots;
  uint64_t next_group = 1;

  Model() { tree["/"] = Node{}; }

  // Applies `change` to the node at `path` and to every other name of its file.
  template <typename Change>
  void ForNames(const std::string& path, Change change) {
    const uint64_t group = tree.at(path).group;
    if (group == 0) return change(tree.at(path));
    for (auto& [p, n] : tree) {
      if (n.group == group) change(n);
    }
  }

  // The link count the volume reports for `path` in the live tree.
  uint32_t Links(const std::string& path) const {
    const Node& n = tree.at(path);
    uint32_t count = 0;
    if (n.type == FileType::kDirectory) {
      count = 2;
      for (const std::string& name : Children(tree, path)) {
        count += tree.at(Child(path, name)).type == FileType::kDirectory;
      }
      return count;
    }
    if (n.group == 0) return 1;
    for (const auto& [p, other] : tree) count += other.group == n.group;
    return count;
  }

  // The checks OpenWriter makes before any byte is written.
  StatusCode CheckWritable(const std::string& path, bool create_parents) const {
    if (path == "/") return StatusCode::kInvalidArgument;
    if (IsReserved(path)) return StatusCode::kReadOnly;
    StatusCode c = WalkDirs(tree, ParentSegments(path), create_parents);
    if (c != StatusCode::kOk) return c;
    auto it = tree.find(path);
    if (it != tree.end() && it->second.type == FileType::kDirectory) {
      return StatusCode::kIsADirectory;
    }
    return StatusCode::kOk;
  }

  // The outcome of committing a write; `*replaced_file` says whether it overwrote a file (which
  // keeps its inode and mode).
  StatusCode Write(const std::string& path, const WriteOptions& opts, bool* replaced_file) const {
    *replaced_file = false;
    StatusCode c = CheckWritable(path, opts.create_parents);
    if (c != StatusCode::kOk) return c;
    auto it = tree.find(path);
    if (opts.if_version) {
      // "" = must not exist: a symlink at the path exists as much as a file does.
      if (opts.if_version->empty() ? it != tree.end()
                                   : it == tree.end() || it->second.type != FileType::kFile ||
                                         it->second.version_id != *opts.if_version) {
        return StatusCode::kFailedPrecondition;
      }
    }
    *replaced_file = it != tree.end() && it->second.type == FileType::kFile;
    return StatusCode::kOk;
  }

  void ApplyWrite(const std::string& path, const WriteOptions& opts, Node file) {
    size_t first_missing = 0;
    (void)WalkDirs(tree, ParentSegments(path), true, &first_missing);
    CreateParents(&tree, path, first_missing);
    auto it = tree.find(path);
    if (it != tree.end() && it->second.type == FileType::kFile) {
      // An overwrite keeps the file's mode and inode, and is the content of all its names.
      file.mode = it->second.mode;
      file.ino = it->second.ino;
      file.group = it->second.group;
      ForNames(path, [&](Node& n) { n = file; });
      return;
    }
    file.mode = opts.mode & 07777;
    tree[path] = std::move(file);
  }

  // `*changed` is false for an OK that commits nothing (mkdir -p of an existing directory).
  StatusCode Mkdir(const std::string& path, uint32_t mode, bool parents, bool* changed) {
    *changed = false;
    if (path == "/") return parents ? StatusCode::kOk : StatusCode::kAlreadyExists;
    if (IsReserved(path)) return StatusCode::kReadOnly;
    size_t first_missing = 0;
    StatusCode c = WalkDirs(tree, ParentSegments(path), parents, &first_missing);
    if (c != StatusCode::kOk) return c;
    auto it = tree.find(path);
    if (it != tree.end()) {
      if (parents && it->second.type == FileType::kDirectory) return StatusCode::kOk;
      return StatusCode::kAlreadyExists;
    }
    CreateParents(&tree, path, first_missing);
    Node dir;
    dir.mode = mode & 07777;
    tree[path] = dir;
    *changed = true;
    return StatusCode::kOk;
  }

  StatusCode Symlink(const std::string& path, const std::string& target) {
    if (path == "/") return StatusCode::kInvalidArgument;
    if (IsReserved(path)) return StatusCode::kReadOnly;
    if (target.empty()) return StatusCode::kInvalidArgument;
    StatusCode c = WalkDirs(tree, ParentSegments(path), false);
    if (c != StatusCode::kOk) return c;
    if (tree.count(path)) return StatusCode::kAlreadyExists;
    Node link;
    link.type = FileType::kSymlink;
    link.mode = 0777;
    link.target = target;
    tree[path] = link;
    return StatusCode::kOk;
  }

  StatusCode Mknod(const std::string& path, FileType type, uint32_t mode) {
    if (path == "/") return StatusCode::kInvalidArgument;
    if (IsReserved(path)) return StatusCode::kReadOnly;
    StatusCode c = WalkDirs(tree, ParentSegments(path), false);
    if (c != StatusCode::kOk) return c;
    if (tree.count(path)) return StatusCode::kAlreadyExists;
    Node node;
    node.type = type;
    node.mode = mode & 07777;
    tree[path] = node;
    return StatusCode::kOk;
  }

  StatusCode Link(const std::string& existing, const std::string& path) {
    if (existing == "/" || path == "/") return StatusCode::kInvalidArgument;
    if (IsReserved(existing) || IsReserved(path)) return StatusCode::kReadOnly;
    StatusCode c = WalkDirs(tree, ParentSegments(existing), false);
    if (c != StatusCode::kOk) return c;
    auto src = tree.find(existing);
    if (src == tree.end()) return StatusCode::kNotFound;
    if (src->second.type == FileType::kDirectory) return StatusCode::kIsADirectory;
    c = WalkDirs(tree, ParentSegments(path), false);
    if (c != StatusCode::kOk) return c;
    if (tree.count(path)) return StatusCode::kAlreadyExists;
    if (src->second.group == 0) src->second.group = next_group++;
    tree[path] = src->second;
    return StatusCode::kOk;
  }

  // `*changed` is false for a rename of a path onto itself.
  StatusCode Rename(const std::string& from, const std::string& to, bool* changed) {
    *changed = false;
    if (from == "/" || to == "/") return StatusCode::kInvalidArgument;
    if (IsReserved(from) || IsReserved(to)) return StatusCode::kReadOnly;
    if (from == to) {
      // POSIX rename(p, p) succeeds without doing anything, but only if p exists.
      const Node* n = nullptr;
      return Lookup(tree, from, &n);
    }
    // Checked on the names alone, before either path is resolved.
    if (IsUnder(to, from)) return StatusCode::kInvalidArgument;
    StatusCode c = WalkDirs(tree, ParentSegments(from), false);
    if (c != StatusCode::kOk) return c;
    auto src = tree.find(from);
    if (src == tree.end()) return StatusCode::kNotFound;
    c = WalkDirs(tree, ParentSegments(to), false);
    if (c != StatusCode::kOk) return c;
    bool src_dir = src->second.type == FileType::kDirectory;
    auto dst = tree.find(to);
    // Two names of one file: rename(2) does nothing and succeeds.
    if (dst != tree.end() && src->second.group != 0 && dst->second.group == src->second.group) {
      return StatusCode::kOk;
    }
    if (dst != tree.end()) {
      bool dst_dir = dst->second.type == FileType::kDirectory;
      if (src_dir && !dst_dir) return StatusCode::kNotADirectory;
      if (!src_dir && dst_dir) return StatusCode::kIsADirectory;
      if (dst_dir && HasChildren(tree, to)) return StatusCode::kNotEmpty;
      tree.erase(dst);
    }
    std::vector<std::pair<std::string, Node>> moving;
    for (auto it = tree.begin(); it != tree.end();) {
      if (it->first == from || IsUnder(it->first, from)) {
        moving.emplace_back(Rebase(it->first, from, to), std::move(it->second));
        it = tree.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& [p, n] : moving) tree[p] = std::move(n);
    *changed = true;
    return StatusCode::kOk;
  }

  StatusCode Unlink(const std::string& path) {
    if (path == "/") return StatusCode::kInvalidArgument;
    if (IsReserved(path)) return StatusCode::kReadOnly;
    StatusCode c = WalkDirs(tree, ParentSegments(path), false);
    if (c != StatusCode::kOk) return c;
    auto it = tree.find(path);
    if (it == tree.end()) return StatusCode::kNotFound;
    if (it->second.type == FileType::kDirectory) return StatusCode::kIsADirectory;
    tree.erase(it);
    return StatusCode::kOk;
  }

  StatusCode Rmdir(const std::string& path) {
    if (path == "/") return StatusCode::kInvalidArgument;
    if (IsReserved(path)) return StatusCode::kReadOnly;
    StatusCode c = WalkDirs(tree, ParentSegments(path), false);
    if (c != StatusCode::kOk) return c;
    auto it = tree.find(path);
    if (it == tree.end()) return StatusCode::kNotFound;
    if (it->second.type != FileType::kDirectory) return StatusCode::kNotADirectory;
    if (HasChildren(tree, path)) return StatusCode::kNotEmpty;
    tree.erase(it);
    return StatusCode::kOk;
  }

  StatusCode SetMode(const std::string& path, uint32_t mode) {
    if (IsReserved(path)) return StatusCode::kReadOnly;
    if (path != "/") {
      StatusCode c = WalkDirs(tree, ParentSegments(path), false);
      if (c != StatusCode::kOk) return c;
    }
    auto it = tree.find(path);
    if (it == tree.end()) return StatusCode::kNotFound;
    ForNames(path, [&](Node& n) { n.mode = mode & 07777; });
    return StatusCode::kOk;
  }

  StatusCode CreateSnapshot(const std::string& name, const std::string& path, uint64_t seq) {
    if (name.empty() || name.find('/') != std::string::npos) return StatusCode::kInvalidArgument;
    if (IsReserved(path)) return StatusCode::kReadOnly;
    if (snapshots.count(name)) return StatusCode::kAlreadyExists;
    StatusCode c = WalkDirs(tree, Segments(path), false);
    if (c != StatusCode::kOk) return c;
    snapshots[name] = ModelSnapshot{path, tree, seq};
    return StatusCode::kOk;
  }

  StatusCode DeleteSnapshot(const std::string& name) {
    if (name.empty() || name.find('/') != std::string::npos) return StatusCode::kInvalidArgument;
    if (!snapshots.erase(name)) return StatusCode::kNotFound;
    return StatusCode::kOk;
  }
};

// ---------------------------------------------------------------------------------------------
// Findings aggregated over all seeds: one entry per kind of disagreement.

struct Finding {
  int seeds = 0;
  uint64_t first_seed = 0;
  std::string message;
  std::string trace;  // the op trace of the first seed up to the disagreement
};

using Coverage = std::map<std::string, std::map<std::string, int>>;  // op -> expected code -> n

// ---------------------------------------------------------------------------------------------
// One seed: the volume, the model, the random op sequence and the checks.

class SeedRun {
 public:
  SeedRun(uint64_t seed, int num_ops, bool verbose, std::map<std::string, Finding>* findings,
          Coverage* coverage)
      : seed_(seed),
        num_ops_(num_ops),
        verbose_(verbose),
        findings_(findings),
        coverage_(coverage),
        rng_(seed * 0x9E3779B97F4A7C15ull + 1) {}

  void Run() {
    kv_ = std::shared_ptr<KvStore>(NewMemKvStore());
    chunks_ = std::shared_ptr<ChunkStore>(NewMemChunkStore());
    if (!Open()) return;
    for (int i = 0; i < 4; ++i) {
      pool_.push_back(Bytes(2048 + Uniform(kMaxFileBytes - 2048)));
    }
    const int reopen_at = 1 + static_cast<int>(Uniform(std::max(num_ops_ - 1, 1)));
    for (int i = 0; i < num_ops_ && !diverged_; ++i) {
      if (i == reopen_at) {
        Trace("reopen");
        if (!Open()) return;
      }
      clock_.AdvanceNanos(1'000'000 + Uniform(1'000'000));
      RandomOp(/*allow_interleaved=*/true);
      if (!diverged_ && (i + 1) % kCheckEvery == 0) CheckAll(/*final_check=*/false);
    }
    if (!diverged_) CheckAll(/*final_check=*/true);
  }

  uint64_t ops_run() const { return ops_run_; }

 private:
  // -- Randomness --------------------------------------------------------------------------

  uint64_t Uniform(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  bool OneIn(uint64_t n) { return Uniform(n) == 0; }

  // A small alphabet, so that paths collide often; it mixes case, a '.', a prefix of another
  // name and a multi-byte name to exercise bytewise ordering.
  std::string RandomName() {
    static const char* const kNames[] = {"a", "ab", "B", "c.d", "\xc3\xa9"};
    return kNames[Uniform(5)];
  }

  std::string RandomDeepPath() {
    std::string p = "/";
    int depth = 1 + static_cast<int>(Uniform(3));
    for (int i = 0; i < depth; ++i) p = Child(p, RandomName());
    return p;
  }

  // A path chosen by kind: an existing file, directory (not the root) or symlink, a new name in
  // an existing directory, or a random path that may cross files and missing directories.
  enum PathKind { kFile, kDir, kLink, kNewChild, kRandom };
  std::string PickPath(const std::vector<int>& weights) {
    int total = 0;
    for (int w : weights) total += w;
    int r = static_cast<int>(Uniform(total));
    int kind = 0;
    while (r >= weights[kind]) r -= weights[kind++];
    std::vector<const std::string*> dirs, candidates;
    for (const auto& [path, node] : model_.tree) {
      if (node.type == FileType::kDirectory) dirs.push_back(&path);
      if (path == "/") continue;
      if ((kind == kFile && node.type == FileType::kFile) ||
          (kind == kDir && node.type == FileType::kDirectory) ||
          (kind == kLink && (node.type == FileType::kSymlink || IsSpecialFile(node.type)))) {
        candidates.push_back(&path);
      }
    }
    if (kind == kRandom) return RandomDeepPath();
    if (kind == kNewChild || candidates.empty()) {
      return Child(*dirs[Uniform(dirs.size())], RandomName());
    }
    return *candidates[Uniform(candidates.size())];
  }

  // Random bytes, eight per draw (RandomBytes draws one per byte, which is slow in Debug).
  std::string Bytes(size_t n) {
    std::string out(n, '\0');
    for (size_t i = 0; i < n; i += 8) {
      uint64_t r = rng_();
      std::memcpy(out.data() + i, &r, std::min<size_t>(8, n - i));
    }
    return out;
  }

  uint32_t RandomMode() {
    static const uint32_t kModes[] = {0600, 0644, 0640, 0700, 0755, 0444, 01777, 04755, 0100644};
    return kModes[Uniform(9)];
  }

  // A small tar archive (ustar headers with valid checksums, members cut from the blobs),
  // sometimes cut short, to exercise the splitter's forced cuts at member boundaries.
  std::string TarData() {
    std::string out;
    for (int m = 0, members = 1 + static_cast<int>(Uniform(4)); m < members; ++m) {
      const std::string& blob = pool_[Uniform(pool_.size())];
      const std::string body = blob.substr(0, Uniform(4000));
      const bool is_dir = OneIn(6);  // no data follows whatever the size field says
      std::string h(512, '\0');
      const std::string name = "member" + std::to_string(m);
      std::memcpy(h.data(), name.data(), name.size());
      std::memcpy(&h[100], "0000644", 7);
      std::snprintf(&h[124], 12, "%011llo", static_cast<unsigned long long>(body.size()));
      h[156] = is_dir ? '5' : '0';
      std::memcpy(&h[257], "ustar", 5);  // then NUL and version "00"
      h[263] = h[264] = '0';
      std::memset(&h[148], ' ', 8);
      unsigned sum = 0;
      for (char c : h) sum += static_cast<uint8_t>(c);
      std::snprintf(&h[148], 8, "%06o", sum);
      out += h;
      if (!is_dir) {
        out += body;
        out.append((512 - body.size() % 512) % 512, '\0');
      }
    }
    if (!OneIn(4)) out.append(1024, '\0');
    if (OneIn(4)) out.resize(Uniform(out.size() + 1));
    if (out.size() > kMaxFileBytes) out.resize(kMaxFileBytes);
    return out;
  }

  // File contents: fresh bytes, copies and edits of a few per-seed blobs so that chunks are
  // shared between files and versions, or small tar archives.
  std::string RandomData() {
    if (OneIn(12)) return TarData();
    size_t size;
    uint64_t r = Uniform(100);
    if (r < 5) {
      size = 0;
    } else if (r < 40) {
      size = Uniform(512);
    } else if (r < 80) {
      size = 512 + Uniform(3584);
    } else {
      size = 4096 + Uniform(kMaxFileBytes - 4096 + 1);
    }
    r = Uniform(100);
    if (r < 45 || size == 0) return Bytes(size);
    const std::string& blob = pool_[Uniform(pool_.size())];
    if (r < 65) return blob;
    if (r < 85) {
      std::string edited = blob;
      for (int i = 0, n = 1 + static_cast<int>(Uniform(3)); i < n; ++i) {
        edited[Uniform(edited.size())] ^= static_cast<char>(1 + Uniform(255));
      }
      return edited;
    }
    const std::string& other = pool_[Uniform(pool_.size())];
    std::string mixed = blob.substr(Uniform(blob.size())) + Bytes(Uniform(300)) +
                        other.substr(0, Uniform(other.size()));
    if (mixed.size() > kMaxFileBytes) mixed.resize(kMaxFileBytes);
    return mixed;
  }

  // Writes data[begin, end) in random pieces.
  Status WritePieces(FileWriter* w, const std::string& data, size_t begin, size_t end) {
    size_t max_piece = data.size() < 512 && OneIn(3) ? 7 : 1 + Uniform(6000);
    for (size_t off = begin; off < end;) {
      size_t n = std::min<size_t>(end - off, 1 + Uniform(max_piece));
      Status s = w->Write(AsBytes(std::string_view(data).substr(off, n)));
      if (!s.ok()) return s;
      off += n;
    }
    return OkStatus();
  }

  // -- Reporting ---------------------------------------------------------------------------

  void Trace(const std::string& line) {
    trace_.push_back(line);
    if (verbose_) std::cout << "  [" << seed_ << "] " << line << "\n";
  }

  std::string TraceText() const {
    std::string out;
    size_t from = trace_.size() > 60 ? trace_.size() - 60 : 0;
    if (from > 0) out += "    ... " + std::to_string(from) + " earlier ops\n";
    for (size_t i = from; i < trace_.size(); ++i) out += "    " + trace_[i] + "\n";
    return out;
  }

  void Fail(const std::string& kind, const std::string& message) {
    if (verbose_) std::cout << "  [" << seed_ << "] FAIL " << kind << ": " << message << "\n";
    if (!kinds_.insert(kind).second) return;
    Finding& f = (*findings_)[kind];
    if (f.seeds++ == 0) {
      f.first_seed = seed_;
      f.message = message;
      f.trace = TraceText();
    }
  }

  // A change-feed entry a committed mutation must append.
  static Change Feed(const std::string& op, const std::string& path,
                     const std::string& path2 = "") {
    Change c;
    c.op = op;
    c.path = path;
    c.path2 = path2;
    return c;
  }

  // Compares a mutation's status with the model's prediction, then checks that the change feed
  // grew by exactly the entries `feed` (one per committed sequence) if it succeeded and not at
  // all if it failed. An OK that commits nothing passes an empty `feed`.
  bool Expect(const std::string& op, const std::string& what, StatusCode want, const Status& got,
              const std::vector<Change>& feed) {
    ++ops_run_;
    ++(*coverage_)[op][CodeName(want)];
    Trace(what + " -> " + CodeName(got.code()) +
          (got.code() != want ? "   <-- model expects " + CodeName(want) : ""));
    if (got.code() != want) {
      Fail(op + ": model expects " + CodeName(want) + ", volume returns " + CodeName(got.code()),
           what + ": " + got.ToString());
      diverged_ = true;
      return false;
    }
    const size_t commits = want == StatusCode::kOk ? feed.size() : 0;
    auto changes = vol_->ReadChanges(ctx_, seq_, static_cast<uint32_t>(commits + 8));
    if (!changes.ok() || changes->size() != commits) {
      std::string got_feed =
          changes.ok() ? std::to_string(changes->size()) + " entries" : changes.status().ToString();
      if (changes.ok() && !changes->empty()) got_feed += ", first op " + (*changes)[0].op;
      Fail("change feed after " + op, what + ": expected " + std::to_string(commits) +
                                          " entries after sequence " + std::to_string(seq_) +
                                          ", got " + got_feed);
      diverged_ = true;
      return false;
    }
    for (size_t i = 0; i < commits; ++i) {
      const Change& c = (*changes)[i];
      const Change& w = feed[i];
      if (c.sequence != seq_ + 1 + i || c.op != w.op || c.path != w.path || c.path2 != w.path2 ||
          c.principal != ctx_.principal || c.time_ns != clock_.NowNanos()) {
        Fail("change feed entry of " + op + " differs from the model",
             what + ": got seq " + std::to_string(c.sequence) + " op " + c.op + " path '" + c.path +
                 "' path2 '" + c.path2 + "' principal " + c.principal + "; want seq " +
                 std::to_string(seq_ + 1 + i) + " op " + w.op + " path '" + w.path + "' path2 '" +
                 w.path2 + "'");
      }
    }
    seq_ += commits;
    return true;
  }

  // -- Ops ---------------------------------------------------------------------------------

  bool Open() {
    vol_.reset();
    LocalVolumeOptions opts;
    opts.chunker.min_size = 64;
    opts.chunker.avg_size = 256;
    opts.chunker.max_size = 1024;
    opts.clock = &clock_;
    auto v = NewLocalVolume(kv_, chunks_, opts);
    if (!v.ok()) {
      Fail("reopen fails", v.status().ToString());
      diverged_ = true;
      return false;
    }
    vol_ = std::move(v).value();
    return true;
  }

  void RandomOp(bool allow_interleaved) {
    struct Choice {
      int weight;
      void (SeedRun::*op)();
    };
    static const Choice kOps[] = {
        {26, &SeedRun::DoWrite},         {3, &SeedRun::DoInterleavedWrite},
        {1, &SeedRun::DoAbortedWrite},   {4, &SeedRun::DoCommitAll},
        {10, &SeedRun::DoMkdir},         {14, &SeedRun::DoRename},
        {8, &SeedRun::DoUnlink},         {7, &SeedRun::DoRmdir},
        {4, &SeedRun::DoSetAttr},        {4, &SeedRun::DoSymlink},
        {2, &SeedRun::DoMknod},          {5, &SeedRun::DoLink},
        {3, &SeedRun::DoCreateSnapshot}, {2, &SeedRun::DoDeleteSnapshot},
        {2, &SeedRun::DoCollectGarbage}, {1, &SeedRun::DoReservedMutation},
        {6, &SeedRun::DoProbe},          {2, &SeedRun::DoHeldReader},
    };
    int total = 0;
    for (const Choice& c : kOps) total += c.weight;
    while (true) {
      int r = static_cast<int>(Uniform(total));
      for (const Choice& c : kOps) {
        if (r < c.weight) {
          if (!allow_interleaved &&
              (c.op == &SeedRun::DoInterleavedWrite || c.op == &SeedRun::DoHeldReader)) {
            break;
          }
          (this->*c.op)();
          return;
        }
        r -= c.weight;
      }
    }
  }

  // Picks the path, options and bytes of a write.
  struct WriteRequest {
    std::string path;
    WriteOptions opts;
    std::string data;
  };
  WriteRequest RandomWrite() {
    WriteRequest req;
    uint64_t r = Uniform(100);
    if (r < 2) {
      req.path = "/";
    } else if (r < 4) {
      req.path = "/.weft/snapshots/" + RandomName();
    } else {
      req.path = PickPath({35, 8, 5, 35, 17});
    }
    req.opts.create_parents = OneIn(3);
    req.opts.mode = RandomMode();
    if (OneIn(10)) req.opts.mtime_ns = 1'000'000'000LL * static_cast<int64_t>(1 + Uniform(1000));
    if (OneIn(8)) {
      auto it = model_.tree.find(req.path);
      uint64_t k = Uniform(3);
      if (k == 0) {
        req.opts.if_version = "";
      } else if (k == 1 && it != model_.tree.end() && it->second.type == FileType::kFile) {
        req.opts.if_version = it->second.version_id;
      } else {
        // A stale id: another file's version (or one never issued), never this path's current
        // one nor one a CommitAll batch is about to create.
        req.opts.if_version = "0.1";
        std::vector<const std::string*> others;
        for (const auto& [p, n] : model_.tree) {
          if (n.type == FileType::kFile && p != req.path) others.push_back(&n.version_id);
        }
        if (!others.empty()) req.opts.if_version = *others[Uniform(others.size())];
      }
    }
    req.data = RandomData();
    return req;
  }

  std::string Describe(const WriteRequest& req) const {
    std::string s = "write " + req.path + " size=" + std::to_string(req.data.size()) + " mode=0" +
                    ToOctal(req.opts.mode);
    if (req.opts.create_parents) s += " create_parents";
    if (req.opts.if_version) s += " if_version='" + *req.opts.if_version + "'";
    if (req.opts.mtime_ns) s += " mtime=" + std::to_string(*req.opts.mtime_ns);
    return s;
  }

  static std::string ToOctal(uint32_t v) {
    std::string out;
    do {
      out.insert(out.begin(), static_cast<char>('0' + (v & 7)));
      v >>= 3;
    } while (v != 0);
    return out;
  }

  // Commits `req` through `writer` (already holding data[0, written)) and checks the result
  // against the model as it is now.
  void FinishWrite(const WriteRequest& req, FileWriter* writer, size_t written,
                   const std::string& what) {
    bool replaced_file = false;
    StatusCode want = model_.Write(req.path, req.opts, &replaced_file);
    Status s = WritePieces(writer, req.data, written, req.data.size());
    Result<FileInfo> info = s.ok() ? writer->Commit() : Result<FileInfo>(s);
    if (!Expect("write", what, want, info.status(), {Feed("write", req.path)}) ||
        want != StatusCode::kOk) {
      return;
    }
    ApplyCommitted(req, *info, replaced_file, what);
  }

  // Applies a committed write to the model and checks the FileInfo the commit returned.
  void ApplyCommitted(const WriteRequest& req, const FileInfo& info, bool replaced_file,
                      const std::string& what) {
    Node file;
    file.type = FileType::kFile;
    file.data = std::make_shared<const std::string>(req.data);
    file.version_id = info.version_id;
    file.mtime_ns = req.opts.mtime_ns.value_or(clock_.NowNanos());
    uint64_t old_ino = 0;
    if (auto it = model_.tree.find(req.path); it != model_.tree.end()) old_ino = it->second.ino;
    model_.ApplyWrite(req.path, req.opts, file);
    Node& n = model_.tree[req.path];
    std::string diff;
    if (info.path != req.path) diff += " path " + info.path;
    if (info.type != FileType::kFile) diff += " type";
    if (info.size != req.data.size()) diff += " size " + std::to_string(info.size);
    if (info.etag != Md5Hex(AsBytes(req.data))) diff += " etag";
    if (info.mode != n.mode) diff += " mode 0" + ToOctal(info.mode);
    if (info.mtime_ns != n.mtime_ns) diff += " mtime";
    if (info.version_id.empty()) diff += " empty version id";
    if (replaced_file && old_ino != 0 && info.inode != old_ino) diff += " inode changed";
    if (!diff.empty()) Fail("write: commit returns wrong FileInfo", what + ":" + diff);
    n.ino = info.inode;
  }

  void DoWrite() {
    WriteRequest req = RandomWrite();
    std::string what = Describe(req);
    StatusCode want_open = model_.CheckWritable(req.path, req.opts.create_parents);
    auto w = vol_->OpenWriter(ctx_, req.path, req.opts);
    if (!w.ok() || want_open != StatusCode::kOk) {
      Expect("write", what, want_open, w.status(), {});
      return;
    }
    FinishWrite(req, w->get(), 0, what);
  }

  // A writer stays open across another mutation (or GC): the commit must see the namespace as it
  // is at commit time, and GC must keep the writer's chunks.
  void DoInterleavedWrite() {
    WriteRequest req = RandomWrite();
    std::string what = Describe(req) + " [interleaved]";
    StatusCode want_open = model_.CheckWritable(req.path, req.opts.create_parents);
    auto w = vol_->OpenWriter(ctx_, req.path, req.opts);
    if (!w.ok() || want_open != StatusCode::kOk) {
      Expect("write", what + " (open)", want_open, w.status(), {});
      return;
    }
    size_t half = req.data.size() / 2;
    Status s = WritePieces(w->get(), req.data, 0, half);
    if (!s.ok()) {
      Expect("write", what + " (first half)", StatusCode::kOk, s, {});
      return;
    }
    Trace("  ... writer open on " + req.path + " while:");
    RandomOp(/*allow_interleaved=*/false);
    if (diverged_) return;
    FinishWrite(req, w->get(), half, what + " (commit)");
  }

  // Writers committed together with CommitAll: all files or none, in order, each at its own
  // sequence with its own change-feed entry. Some batches write one path twice.
  void DoCommitAll() {
    const int n = 1 + static_cast<int>(Uniform(4));
    std::vector<WriteRequest> reqs;
    std::vector<std::unique_ptr<FileWriter>> writers;
    std::string what = "commit-all [";
    for (int i = 0; i < n; ++i) {
      WriteRequest req = RandomWrite();
      if (!reqs.empty() && OneIn(4)) req.path = reqs[Uniform(reqs.size())].path;
      StatusCode want_open = model_.CheckWritable(req.path, req.opts.create_parents);
      auto w = vol_->OpenWriter(ctx_, req.path, req.opts);
      if (w.status().code() != want_open) {
        Expect("write", Describe(req) + " (open for commit-all)", want_open, w.status(), {});
        return;
      }
      if (!w.ok()) continue;
      Status s = WritePieces(w->get(), req.data, 0, req.data.size());
      if (!s.ok()) {
        Expect("write", Describe(req) + " (for commit-all)", StatusCode::kOk, s, {});
        return;
      }
      what += (reqs.empty() ? "" : "; ") + Describe(req);
      reqs.push_back(std::move(req));
      writers.push_back(std::move(w).value());
    }
    what += "]";
    // The model: the writes in order on a scratch tree; the first failure fails them all.
    StatusCode want = StatusCode::kOk;
    std::vector<bool> replaced(reqs.size());
    std::vector<Change> feed;
    {
      Model scratch;
      scratch.tree = model_.tree;
      for (size_t i = 0; i < reqs.size() && want == StatusCode::kOk; ++i) {
        bool r = false;
        want = scratch.Write(reqs[i].path, reqs[i].opts, &r);
        replaced[i] = r;
        Node file;
        file.type = FileType::kFile;
        file.version_id = "in batch " + std::to_string(i);  // matches no if_version
        if (want == StatusCode::kOk) scratch.ApplyWrite(reqs[i].path, reqs[i].opts, file);
        feed.push_back(Feed("write", reqs[i].path));
      }
    }
    auto infos = vol_->CommitAll(ctx_, std::move(writers));
    if (!Expect("commit-all", what, want, infos.status(), feed) || want != StatusCode::kOk) return;
    if (infos->size() != reqs.size()) {
      Fail("commit-all: returns the wrong number of FileInfos", what);
      diverged_ = true;
      return;
    }
    for (size_t i = 0; i < reqs.size(); ++i) {
      ApplyCommitted(reqs[i], (*infos)[i], replaced[i], what + " #" + std::to_string(i));
    }
  }

  // An aborted or dropped writer changes nothing.
  void DoAbortedWrite() {
    std::string path = PickPath({40, 0, 0, 60, 0});
    auto w = vol_->OpenWriter(ctx_, path, {});
    if (!w.ok()) return;  // not the point of this op
    std::string data = RandomData();
    Status s = WritePieces(w->get(), data, 0, data.size());
    if (OneIn(2)) {
      (*w)->Abort();
      Expect("abort", "abort writer of " + path, StatusCode::kOk, s, {});
    } else {
      w->reset();
      Expect("abort", "drop writer of " + path, StatusCode::kOk, s, {});
    }
  }

  void DoMkdir() {
    std::string path = OneIn(50) ? "/" : PickPath({8, 15, 4, 50, 23});
    bool parents = OneIn(2);
    uint32_t mode = RandomMode();
    bool changed = false;
    StatusCode want = model_.Mkdir(path, mode, parents, &changed);
    auto r = vol_->Mkdir(ctx_, path, mode, parents);
    std::string what = "mkdir " + path + " mode=0" + ToOctal(mode) + (parents ? " -p" : "");
    Change feed = Feed("mkdir", path);
    if (!Expect("mkdir", what, want, r.status(),
                changed ? std::vector<Change>{feed} : std::vector<Change>{}))
      return;
    if (r.ok()) {
      Node& n = model_.tree[path];
      if (r->type != FileType::kDirectory || r->mode != n.mode || r->path != path) {
        Fail("mkdir: returns wrong FileInfo", what);
      }
      if (n.ino == 0) n.ino = r->inode;
    }
  }

  void DoRename() {
    std::string from = OneIn(50) ? "/" : PickPath({35, 30, 10, 10, 15});
    std::string to;
    uint64_t r = Uniform(100);
    if (r < 5) {
      to = from;
    } else if (r < 12) {
      to = Child(from == "/" ? "" : from, RandomName());
      if (OneIn(2)) to = Child(to, RandomName());
    } else if (r < 14) {
      to = "/.weft/" + RandomName();
    } else if (r < 15) {
      to = "/";
    } else {
      to = PickPath({22, 15, 5, 40, 18});
    }
    bool changed = false;
    StatusCode want = model_.Rename(from, to, &changed);
    Status s = vol_->Rename(ctx_, from, to);
    Change feed = Feed("rename", from, to);
    Expect("rename", "rename " + from + " -> " + to, want, s,
           changed ? std::vector<Change>{feed} : std::vector<Change>{});
  }

  void DoUnlink() {
    std::string path = OneIn(100) ? "/" : PickPath({50, 15, 12, 13, 10});
    StatusCode want = model_.Unlink(path);
    Change feed = Feed("unlink", path);
    Expect("unlink", "unlink " + path, want, vol_->Unlink(ctx_, path), {feed});
  }

  void DoRmdir() {
    std::string path = OneIn(50) ? "/" : PickPath({12, 60, 5, 13, 10});
    StatusCode want = model_.Rmdir(path);
    Change feed = Feed("rmdir", path);
    Expect("rmdir", "rmdir " + path, want, vol_->Rmdir(ctx_, path), {feed});
  }

  void DoSetAttr() {
    std::string path = OneIn(20) ? "/" : PickPath({35, 30, 10, 10, 15});
    uint32_t mode = RandomMode();
    StatusCode want = model_.SetMode(path, mode);
    SetAttrRequest req;
    req.mode = mode;
    auto r = vol_->SetAttr(ctx_, path, req);
    std::string what = "setattr " + path + " mode=0" + ToOctal(mode);
    Change feed = Feed("setattr", path);
    if (!Expect("setattr", what, want, r.status(), {feed})) return;
    if (r.ok() && r->mode != (mode & 07777)) Fail("setattr: returns wrong mode", what);
  }

  void DoSymlink() {
    std::string path = PickPath({10, 8, 5, 62, 15});
    std::string target =
        OneIn(20) ? "" : (OneIn(2) ? "../t" : "/abs/") + std::to_string(Uniform(99));
    StatusCode want = model_.Symlink(path, target);
    auto r = vol_->Symlink(ctx_, path, target);
    std::string what = "symlink " + path + " -> '" + target + "'";
    Change feed = Feed("symlink", path, target);
    if (!Expect("symlink", what, want, r.status(), {feed})) return;
    if (r.ok()) model_.tree[path].ino = r->inode;
  }

  void DoMknod() {
    static const FileType kTypes[] = {FileType::kFifo, FileType::kSocket, FileType::kCharDevice,
                                      FileType::kBlockDevice};
    std::string path = PickPath({10, 8, 5, 62, 15});
    FileType type = kTypes[Uniform(4)];
    uint32_t mode = RandomMode();
    StatusCode want = model_.Mknod(path, type, mode);
    auto r = vol_->Mknod(ctx_, path, type, mode, 7);
    std::string what = "mknod " + path + " " + std::string(FileTypeName(type));
    Change feed = Feed("mknod", path, std::string(FileTypeName(type)));
    if (!Expect("mknod", what, want, r.status(), {feed})) return;
    if (r.ok()) model_.tree[path].ino = r->inode;
  }

  void DoLink() {
    std::string existing = OneIn(50) ? "/" : PickPath({50, 10, 15, 10, 15});
    std::string path = OneIn(20) ? "/.weft/x" : PickPath({10, 5, 5, 65, 15});
    StatusCode want = model_.Link(existing, path);
    auto r = vol_->Link(ctx_, existing, path);
    std::string what = "link " + existing + " -> " + path;
    if (!Expect("link", what, want, r.status(), {Feed("link", path, existing)})) return;
    if (r.ok() && r->inode != model_.tree[existing].ino && model_.tree[existing].ino != 0) {
      Fail("link: the new name names another inode", what);
    }
  }

  std::string RandomSnapshotName() {
    if (OneIn(40)) return OneIn(2) ? "" : "bad/name";
    return "s" + std::to_string(Uniform(5));
  }

  void DoCreateSnapshot() {
    std::string name = RandomSnapshotName();
    std::string path;
    uint64_t r = Uniform(100);
    if (r < 45) {
      path = "/";
    } else if (r < 85) {
      path = PickPath({0, 1, 0, 0, 0});
    } else if (r < 98) {
      path = PickPath({3, 0, 1, 1, 3});
    } else {
      path = "/.weft";
    }
    StatusCode want = model_.CreateSnapshot(name, path, seq_ + 1);
    auto s = vol_->CreateSnapshot(ctx_, name, path);
    std::string what = "snapshot create '" + name + "' of " + path;
    Change feed = Feed("snapshot", path, name);
    if (!Expect("snapshot-create", what, want, s.status(), {feed})) return;
    if (s.ok() && (s->name != name || s->path != path || s->sequence != seq_)) {
      Fail("snapshot-create: returns wrong SnapshotInfo",
           what + ": got path " + s->path + " sequence " + std::to_string(s->sequence));
    }
  }

  void DoDeleteSnapshot() {
    std::string name = RandomSnapshotName();
    if (!model_.snapshots.empty() && OneIn(2)) {
      auto it = model_.snapshots.begin();
      std::advance(it, Uniform(model_.snapshots.size()));
      name = it->first;
    }
    StatusCode want = model_.DeleteSnapshot(name);
    Change feed = Feed("snapshot-delete", "", name);
    Expect("snapshot-delete", "snapshot delete '" + name + "'", want,
           vol_->DeleteSnapshot(ctx_, name), {feed});
  }

  void DoCollectGarbage() {
    clock_.AdvanceNanos(2'000'000'000);
    GcOptions opts;
    opts.keep_noncurrent_ns = 0;
    auto r = vol_->CollectGarbage(ctx_, opts);
    ++gc_runs_;
    verified_.clear();  // GC must not have dropped a chunk of any readable version
    if (Expect("gc", "gc keep_noncurrent=0", StatusCode::kOk, r.status(), {})) {
      CheckGcLeftNoGarbage(opts);
    }
    clock_.AdvanceNanos(1'000'000);
  }

  // Right after a GC with keep_noncurrent 0, a second run finds nothing, and without snapshots
  // only the current version of each live file is retained.
  void CheckGcLeftNoGarbage(const GcOptions& opts) {
    auto again = vol_->CollectGarbage(ctx_, opts);
    if (!again.ok() || again->versions_pruned != 0 || again->chunks_removed != 0) {
      Fail("gc: an immediate second run still finds garbage",
           again.ok() ? std::to_string(again->versions_pruned) + " versions, " +
                            std::to_string(again->chunks_removed) + " chunks"
                      : again.status().ToString());
    }
    if (!model_.snapshots.empty()) return;
    uint64_t bytes = 0;
    std::set<uint64_t> groups;  // a file with several names counts once
    for (const auto& [path, n] : model_.tree) {
      if (n.type != FileType::kFile) continue;
      if (n.group == 0 || groups.insert(n.group).second) bytes += n.data->size();
      auto versions = vol_->ListVersions(ctx_, path);
      if (versions.ok() && versions->size() != 1) {
        Fail("gc: a non-current version outlives keep_noncurrent 0 without snapshots",
             path + ": " + std::to_string(versions->size()) + " versions listed");
      }
    }
    auto u = vol_->Usage(ctx_);
    if (u.ok() && u->referenced_bytes != bytes) {
      Fail("gc: referenced bytes exceed the live bytes after a full collection",
           std::to_string(u->referenced_bytes) + " referenced, " + std::to_string(bytes) + " live");
    }
  }

  // A reader opened before another op (an overwrite, unlink, rename, GC...) keeps reading the
  // version it opened (volume.h: "fixed at open ... never tears").
  void DoHeldReader() {
    std::string path = PickPath({1, 0, 0, 0, 0});
    auto it = model_.tree.find(path);
    if (it == model_.tree.end() || it->second.type != FileType::kFile) return;
    const Node n = it->second;
    auto r = vol_->OpenReader(ctx_, path);
    ++ops_run_;
    if (!r.ok()) {
      Fail("held reader: OpenReader of a live file fails", path + ": " + r.status().ToString());
      return;
    }
    Trace("  ... reader open on " + path + " (version " + n.version_id + ") while:");
    const uint64_t gcs = gc_runs_;
    RandomOp(/*allow_interleaved=*/false);
    if (diverged_) return;
    auto bytes = (*r)->ReadAt(0, n.data->size() + 1);
    if (bytes.ok() && *bytes == *n.data) return;
    if (bytes.ok()) {
      Fail("held reader: reads bytes of another version", path + " " + n.version_id);
    } else if (gc_runs_ == gcs || StillRetained(n.version_id) ||
               bytes.status().code() != StatusCode::kNotFound) {
      Fail("held reader: read fails", path + " " + n.version_id + ": " + bytes.status().ToString());
    }
    // Otherwise GC with keep_noncurrent 0 dropped the version under the open reader: readers do
    // not pin versions, so a clean NotFound is the documented limit (never torn bytes).
  }

  // Whether a live file or a snapshot still has this version.
  bool StillRetained(const std::string& version_id) const {
    auto has = [&](const Tree& t) {
      for (const auto& [p, node] : t) {
        if (node.type == FileType::kFile && node.version_id == version_id) return true;
      }
      return false;
    };
    if (has(model_.tree)) return true;
    for (const auto& [name, snap] : model_.snapshots) {
      if (has(snap.tree)) return true;
    }
    return false;
  }

  // Every mutation under /.weft is ReadOnly and changes nothing.
  void DoReservedMutation() {
    std::string path = OneIn(3) ? "/.weft" : "/.weft/snapshots/s" + std::to_string(Uniform(5));
    if (OneIn(2)) path = Child(path, RandomName());
    Status s;
    std::string what;
    switch (Uniform(7)) {
      case 0: {
        what = "write " + path;
        auto w = vol_->OpenWriter(ctx_, path, {});
        s = w.ok() ? (*w)->Commit().status() : w.status();
        break;
      }
      case 1:
        what = "mkdir -p " + path;
        s = vol_->Mkdir(ctx_, path, 0755, true).status();
        break;
      case 2:
        what = "unlink " + path;
        s = vol_->Unlink(ctx_, path);
        break;
      case 3:
        what = "rmdir " + path;
        s = vol_->Rmdir(ctx_, path);
        break;
      case 4:
        what = "setattr " + path;
        s = vol_->SetAttr(ctx_, path, SetAttrRequest{0700, {}, {}, {}, {}, {}, {}}).status();
        break;
      case 5:
        what = "symlink " + path;
        s = vol_->Symlink(ctx_, path, "x").status();
        break;
      default: {
        std::string other = PickPath({1, 1, 1, 0, 0});
        bool out = OneIn(2);
        what = out ? "rename " + path + " -> " + other : "rename " + other + " -> " + path;
        s = out ? vol_->Rename(ctx_, path, other) : vol_->Rename(ctx_, other, path);
        break;
      }
    }
    Expect("reserved", what, StatusCode::kReadOnly, s, {});
  }

  // -- Read checks -------------------------------------------------------------------------

  // Differences between a node of the model and what the volume says about it ("" if none);
  // learns the inode number the first time.
  std::string Diff(Node* n, const FileInfo& info, const std::string& vpath) {
    std::string d;
    if (info.path != vpath) d += " path=" + info.path;
    if (info.type != n->type) d += " type=" + std::to_string(static_cast<int>(info.type));
    if (info.mode != n->mode) {
      d += " mode=0" + ToOctal(info.mode) + " (want 0" + ToOctal(n->mode) + ")";
    }
    if (n->ino == 0) n->ino = info.inode;
    if (info.inode != n->ino) d += " inode=" + std::to_string(info.inode);
    if (n->type == FileType::kFile) {
      if (info.size != n->data->size()) d += " size=" + std::to_string(info.size);
      if (info.etag != Md5Hex(AsBytes(*n->data))) d += " etag";
      if (info.version_id != n->version_id) d += " version=" + info.version_id;
      if (info.mtime_ns != n->mtime_ns) d += " mtime=" + std::to_string(info.mtime_ns);
    } else if (n->type == FileType::kSymlink) {
      if (info.symlink_target != n->target) d += " target=" + info.symlink_target;
      if (info.size != n->target.size()) d += " size=" + std::to_string(info.size);
    }
    return d;
  }

  // Compares what `r` reads with the file `n`: the whole file the first time its version is read
  // in a check, afterwards (the same manifest, reached another way) one random range.
  std::string ReadDiff(FileReader* r, const Node& n) {
    const std::string& data = *n.data;
    if (verified_.insert(n.version_id).second) {
      auto all = r->ReadAt(0, data.size() + 10);
      if (!all.ok()) return " read: " + all.status().ToString();
      if (*all != data) {
        return " content differs (got " + std::to_string(all->size()) + " bytes, want " +
               std::to_string(data.size()) + ")";
      }
      return "";
    }
    uint64_t off = Uniform(data.size() + 2), len = 1 + Uniform(3000);
    auto part = r->ReadAt(off, len);
    std::string want = off < data.size() ? data.substr(off, len) : "";
    if (!part.ok() || *part != want) {
      return " range [" + std::to_string(off) + ", +" + std::to_string(len) + ") differs";
    }
    return "";
  }

  // Lists the directory `dir` of `t` as the volume path `vdir` (optionally at a snapshot) in
  // small pages, and recursively checks every entry with Stat and every file's bytes.
  void CheckDir(Tree* t, const std::string& dir, const std::string& vdir,
                const std::optional<std::string>& snap, const std::string& label) {
    ReadDirOptions opts;
    opts.snapshot = snap;
    opts.limit = 1 + static_cast<uint32_t>(Uniform(4));
    opts.with_info = true;
    std::vector<DirEntry> got;
    for (int pages = 0;; ++pages) {
      auto page = vol_->ReadDir(ctx_, vdir, opts);
      if (!page.ok()) {
        Fail(label + ": ReadDir fails", vdir + ": " + page.status().ToString());
        return;
      }
      for (auto& e : page->entries) got.push_back(std::move(e));
      if (!page->truncated) break;
      if (page->entries.empty() || pages > 1000) {
        Fail(label + ": ReadDir paging does not advance", vdir);
        return;
      }
      opts.start_after = got.back().name;
    }
    std::vector<std::string> want_names = Children(*t, dir), got_names;
    for (const DirEntry& e : got) got_names.push_back(e.name);
    if (got_names != want_names) {
      std::string w, g;
      for (auto& n : want_names) w += " '" + n + "'";
      for (auto& n : got_names) g += " '" + n + "'";
      Fail(label + ": ReadDir lists the wrong names",
           vdir + (snap ? " @" + *snap : "") + ": want [" + w + " ] got [" + g + " ]");
      return;
    }
    for (const DirEntry& e : got) {
      std::string mpath = Child(dir, e.name), vpath = Child(vdir, e.name);
      Node* n = &(*t)[mpath];
      std::string d;
      if (e.type != n->type) d += " entry type";
      if (!e.info) {
        d += " no info";
      } else {
        d += Diff(n, *e.info, vpath);
        if (e.inode != e.info->inode) d += " entry inode";
      }
      // Link counts are not versioned: checked in the live tree only.
      if (e.info && t == &model_.tree && e.info->nlink != model_.Links(mpath)) {
        d += " nlink=" + std::to_string(e.info->nlink) + " (want " +
             std::to_string(model_.Links(mpath)) + ")";
      }
      if (!d.empty()) Fail(label + ": ReadDir info differs from the model", vpath + ":" + d);
      ReadOptions ropts;
      ropts.snapshot = snap;
      if (thorough_ || !snap.has_value() || OneIn(3)) {
        auto st = vol_->Stat(ctx_, vpath, ropts);
        if (!st.ok()) {
          Fail(label + ": Stat fails", vpath + ": " + st.status().ToString());
        } else if (std::string sd = Diff(n, *st, vpath); !sd.empty()) {
          Fail(label + ": Stat differs from the model", vpath + ":" + sd);
        }
      }
      if (n->type == FileType::kDirectory) {
        CheckDir(t, mpath, vpath, snap, label);
      } else if (n->type == FileType::kFile) {
        auto r = vol_->OpenReader(ctx_, vpath, ropts);
        if (!r.ok()) {
          Fail(label + ": OpenReader fails", vpath + ": " + r.status().ToString());
          continue;
        }
        std::string rd = Diff(n, (*r)->info(), vpath) + ReadDiff(r->get(), *n);
        if (!rd.empty()) Fail(label + ": file reads differ from the model", vpath + ":" + rd);
      }
    }
  }

  void CheckTree(Tree* t, const std::string& base, const std::string& vbase,
                 const std::optional<std::string>& snap, const std::string& label) {
    ReadOptions ropts;
    ropts.snapshot = snap;
    auto st = vol_->Stat(ctx_, vbase, ropts);
    if (!st.ok()) {
      Fail(label + ": Stat of the base fails", vbase + ": " + st.status().ToString());
      return;
    }
    if (std::string d = Diff(&(*t)[base], *st, vbase); !d.empty()) {
      Fail(label + ": Stat differs from the model", vbase + ":" + d);
    }
    if (t == &model_.tree && st->nlink != model_.Links(base)) {
      Fail(label + ": link count differs from the model", vbase + ": " + std::to_string(st->nlink) +
                                                              ", want " +
                                                              std::to_string(model_.Links(base)));
    }
    CheckDir(t, base, vbase, snap, label);
  }

  void CheckSnapshotList() {
    auto list = vol_->ListSnapshots(ctx_);
    std::string want, got;
    for (const auto& [name, s] : model_.snapshots) {
      want += " " + name + ":" + s.path + "@" + std::to_string(s.sequence);
    }
    if (list.ok()) {
      for (const SnapshotInfo& s : *list) {
        got += " " + s.name + ":" + s.path + "@" + std::to_string(s.sequence);
      }
    }
    if (!list.ok() || want != got) {
      Fail("ListSnapshots differs from the model",
           "want [" + want + " ] got [" + got + " ]" + (list.ok() ? "" : list.status().ToString()));
    }
    // The virtual directories, paged.
    std::vector<std::string> names;
    ReadDirOptions opts;
    opts.limit = 2;
    for (int pages = 0; pages < 100; ++pages) {
      auto page = vol_->ReadDir(ctx_, "/.weft/snapshots", opts);
      if (!page.ok()) break;
      for (const DirEntry& e : page->entries) names.push_back(e.name);
      if (!page->truncated || page->entries.empty()) break;
      opts.start_after = names.back();
    }
    std::vector<std::string> want_names;
    for (const auto& [name, s] : model_.snapshots) want_names.push_back(name);
    if (names != want_names) Fail("ReadDir /.weft/snapshots differs from the model", want);
    auto weft = vol_->ReadDir(ctx_, "/.weft", {});
    if (!weft.ok() || weft->entries.size() != 1 || weft->entries[0].name != "snapshots") {
      Fail("ReadDir /.weft is not [snapshots]", weft.status().ToString());
    }
    for (int i = 0; i < 5; ++i) {
      std::string name = "s" + std::to_string(i);
      if (model_.snapshots.count(name)) continue;
      auto st = vol_->Stat(ctx_, "/.weft/snapshots/" + name);
      ReadOptions ropts;
      ropts.snapshot = name;
      auto st2 = vol_->Stat(ctx_, "/", ropts);
      if (st.status().code() != StatusCode::kNotFound ||
          st2.status().code() != StatusCode::kNotFound) {
        Fail("a deleted snapshot is still readable", name);
      }
    }
  }

  // Every live file's versions start with the current one, which OpenVersion reads back, and
  // every older version listed is readable. Periodic checks sample the OpenVersion calls, each of
  // which lists the versions again.
  void CheckVersions() {
    for (const auto& [path, n] : model_.tree) {
      if (n.type != FileType::kFile) continue;
      auto versions = vol_->ListVersions(ctx_, path);
      if (!versions.ok() || versions->empty()) {
        Fail("ListVersions of a live file fails", path + ": " + versions.status().ToString());
        continue;
      }
      const VersionInfo& first = versions->front();
      int current = 0;
      std::string listed;
      std::set<std::string> ids;
      for (const VersionInfo& v : *versions) {
        current += v.is_current;
        listed += " " + (v.is_delete_marker ? "marker@" + std::to_string(v.sequence)
                                            : v.version_id + (v.is_current ? "*" : ""));
        if (!ids.insert(v.version_id).second) {
          Fail("ListVersions lists a version twice", path + ": " + v.version_id);
        }
        if (v.is_delete_marker || v.version_id == n.version_id || !(thorough_ || OneIn(4))) {
          continue;
        }
        // A retained older version must still be readable and match its size and etag.
        auto old = vol_->OpenVersion(ctx_, path, v.version_id);
        auto bytes = old.ok() ? (*old)->ReadAt(0, v.size + 1) : Result<std::string>(old.status());
        if (!bytes.ok()) {
          Fail("a listed non-current version is not readable",
               path + " " + v.version_id + ": " + bytes.status().ToString());
        } else if (bytes->size() != v.size || Md5Hex(AsBytes(*bytes)) != v.etag) {
          Fail("a listed non-current version reads bytes that do not match its etag",
               path + " " + v.version_id);
        }
      }
      if (first.version_id != n.version_id || !first.is_current || first.is_delete_marker) {
        Fail("ListVersions: the current version is not first",
             path + ": current " + n.version_id + ", listed [" + listed + " ] (* = is_current)");
      } else if (first.size != n.data->size() || first.etag != Md5Hex(AsBytes(*n.data))) {
        Fail("ListVersions: the current version has the wrong size or etag", path);
      }
      if (current != 1) {
        Fail("ListVersions: not exactly one current version", path + ": [" + listed + " ]");
      }
      if (!thorough_ && !OneIn(2)) continue;
      auto r = vol_->OpenVersion(ctx_, path, n.version_id);
      if (!r.ok()) {
        Fail("OpenVersion of the current version fails", path + ": " + r.status().ToString());
      } else if (std::string d = ReadDiff(r->get(), n); !d.empty()) {
        Fail("OpenVersion of the current version reads wrong bytes", path + ":" + d);
      }
    }
  }

  void CheckUsageAndFsck() {
    uint64_t files = 0, dirs = 0, bytes = 0;
    std::set<uint64_t> groups;  // a file with several names counts once
    for (const auto& [path, n] : model_.tree) {
      if (n.type == FileType::kFile && (n.group == 0 || groups.insert(n.group).second)) {
        ++files;
        bytes += n.data->size();
      } else if (n.type == FileType::kDirectory) {
        ++dirs;
      }
    }
    auto u = vol_->Usage(ctx_);
    if (!u.ok() || u->files != files || u->directories != dirs || u->logical_bytes != bytes) {
      Fail("Usage differs from the model",
           "want files=" + std::to_string(files) + " dirs=" + std::to_string(dirs) +
               " bytes=" + std::to_string(bytes) +
               (u.ok() ? " got files=" + std::to_string(u->files) +
                             " dirs=" + std::to_string(u->directories) +
                             " bytes=" + std::to_string(u->logical_bytes)
                       : " " + u.status().ToString()));
    }
    auto fsck = vol_->Fsck(ctx_);
    if (!fsck.ok()) {
      Fail("Fsck fails", fsck.status().ToString());
    } else if (fsck->files_checked != files) {
      Fail("Fsck checks a different number of files than are live",
           std::to_string(fsck->files_checked) + " checked, " + std::to_string(files) + " live");
    }
    if (fsck.ok() && !fsck->problems.empty()) {
      Fail("Fsck reports problems",
           std::to_string(fsck->problems.size()) + " problems, first: " + fsck->problems.front());
    }
  }

  // The periodic checks sample (each snapshot through one of its two read forms, Stat in snapshots
  // and OpenVersion for some files); the final check does everything.
  void CheckAll(bool final_check) {
    Trace("check");
    verified_.clear();
    thorough_ = final_check;
    CheckTree(&model_.tree, "/", "/", std::nullopt, "live");
    for (auto& [name, s] : model_.snapshots) {
      bool path_form = final_check || OneIn(2);
      if (path_form) {
        CheckTree(&s.tree, s.path, "/.weft/snapshots/" + name, std::nullopt,
                  "snapshot (path form)");
      }
      if (final_check || !path_form) {
        CheckTree(&s.tree, s.path, s.path, name, "snapshot (ReadOptions form)");
      }
    }
    CheckSnapshotList();
    CheckVersions();
    CheckUsageAndFsck();
  }

  // Reads of one random path, live and in a snapshot, compared with the model: the status
  // codes of Stat, OpenReader and ReadDir, and the bytes or names where they succeed.
  void DoProbe() {
    std::string path = OneIn(20) ? "/" : PickPath({3, 3, 2, 2, 3});
    ProbeOne(model_.tree, path, path, std::nullopt, "probe live");
    if (model_.snapshots.empty()) return;
    auto it = model_.snapshots.begin();
    std::advance(it, Uniform(model_.snapshots.size()));
    const ModelSnapshot& snap = it->second;
    // A path of the snapshot's own tree half of the time, so that old names are probed too.
    if (OneIn(2)) {
      auto node = snap.tree.begin();
      std::advance(node, Uniform(snap.tree.size()));
      path = node->first;
    }
    if (path == snap.path || IsUnder(path, snap.path)) {
      ProbeOne(snap.tree, path, Rebase(path, snap.path, "/.weft/snapshots/" + it->first),
               std::nullopt, "probe snapshot (path form)");
      ProbeOne(snap.tree, path, path, it->first, "probe snapshot (ReadOptions form)");
    } else {
      ReadOptions ropts;
      ropts.snapshot = it->first;
      auto st = vol_->Stat(ctx_, path, ropts);
      ++ops_run_;
      if (st.status().code() != StatusCode::kNotFound) {
        Fail("probe: a path outside a subtree snapshot is not NotFound",
             path + " @" + it->first + " (covers " + snap.path + "): " + st.status().ToString());
      }
    }
  }

  void ProbeOne(const Tree& t, const std::string& mpath, const std::string& vpath,
                const std::optional<std::string>& snap, const std::string& label) {
    ++ops_run_;
    const Node* n = nullptr;
    StatusCode want = Lookup(t, mpath, &n);
    ++(*coverage_)[label.substr(0, label.find(' ', 6))][CodeName(want)];
    ReadOptions ropts;
    ropts.snapshot = snap;
    std::string what = vpath + (snap ? " @" + *snap : "");
    auto st = vol_->Stat(ctx_, vpath, ropts);
    if (st.status().code() != want) {
      Fail(label + ": Stat returns the wrong code",
           what + ": want " + CodeName(want) + ", got " + st.status().ToString());
      return;
    }
    StatusCode want_read = want;
    StatusCode want_list = want;
    if (n != nullptr) {
      if (n->type == FileType::kDirectory) want_read = StatusCode::kIsADirectory;
      if (n->type == FileType::kSymlink || IsSpecialFile(n->type))
        want_read = StatusCode::kInvalidArgument;
      if (n->type != FileType::kDirectory) want_list = StatusCode::kNotADirectory;
    }
    auto r = vol_->OpenReader(ctx_, vpath, ropts);
    if (r.status().code() != want_read) {
      Fail(label + ": OpenReader returns the wrong code",
           what + ": want " + CodeName(want_read) + ", got " + r.status().ToString());
    } else if (r.ok()) {
      if (std::string d = ReadDiff(r->get(), *n); !d.empty()) {
        Fail(label + ": file reads differ from the model", what + ":" + d);
      }
    }
    ReadDirOptions dopts;
    dopts.snapshot = snap;
    auto page = vol_->ReadDir(ctx_, vpath, dopts);
    if (page.status().code() != want_list) {
      Fail(label + ": ReadDir returns the wrong code",
           what + ": want " + CodeName(want_list) + ", got " + page.status().ToString());
    } else if (page.ok()) {
      std::vector<std::string> names;
      for (const DirEntry& e : page->entries) names.push_back(e.name);
      if (names != Children(t, mpath)) Fail(label + ": ReadDir lists the wrong names", what);
      // One page from a random start_after, which need not be a name in the directory.
      static const char* const kAfter[] = {"a", "aa", "ab", "B", "c", "\xc3", "\xff", "a\x01"};
      dopts.start_after = kAfter[Uniform(8)];
      dopts.limit = 1 + static_cast<uint32_t>(Uniform(3));
      std::vector<std::string> want_names;
      for (const std::string& name : Children(t, mpath)) {
        if (name > dopts.start_after) want_names.push_back(name);
      }
      bool want_truncated = want_names.size() > dopts.limit;
      if (want_truncated) want_names.resize(dopts.limit);
      auto from = vol_->ReadDir(ctx_, vpath, dopts);
      names.clear();
      if (from.ok()) {
        for (const DirEntry& e : from->entries) names.push_back(e.name);
      }
      if (!from.ok() || names != want_names || from->truncated != want_truncated) {
        Fail(label + ": ReadDir from a start_after lists the wrong page",
             what + " after '" + dopts.start_after + "' limit " + std::to_string(dopts.limit));
      }
    }
  }

  const uint64_t seed_;
  const int num_ops_;
  const bool verbose_;
  std::map<std::string, Finding>* findings_;
  Coverage* coverage_;
  std::mt19937_64 rng_;

  FakeClock clock_;
  RequestContext ctx_;
  std::shared_ptr<KvStore> kv_;
  std::shared_ptr<ChunkStore> chunks_;
  std::unique_ptr<Volume> vol_;

  Model model_;
  uint64_t seq_ = 1;  // the last commit sequence; a new volume commits its root at 1
  std::vector<std::string> pool_;
  std::vector<std::string> trace_;
  bool thorough_ = false;           // in the final check: no sampling
  std::set<std::string> verified_;  // version ids read in full since the last check or GC
  std::set<std::string> kinds_;     // kinds of disagreement already reported for this seed
  bool diverged_ = false;  // a mutation disagreed: the model no longer describes the volume
  uint64_t ops_run_ = 0;
  uint64_t gc_runs_ = 0;
};

// The seeds are dealt round-robin to a few shards, which ctest runs in parallel.
constexpr int kShards = 4;

class VolumeModelTest : public ::testing::TestWithParam<int> {};

TEST_P(VolumeModelTest, RandomOpsMatchTheModel) {
  const int shard = GetParam();
  const int seeds = EnvInt("WEFT_MODEL_SEEDS", kDefaultSeeds);
  const int ops = EnvInt("WEFT_MODEL_OPS", kDefaultOps);
  const uint64_t first = static_cast<uint64_t>(EnvInt("WEFT_MODEL_FIRST_SEED", 1));
  const bool verbose = EnvInt("WEFT_MODEL_VERBOSE", 0) != 0;
  std::map<std::string, Finding> findings;
  Coverage coverage;
  uint64_t total_ops = 0;
  int run_seeds = 0;
  auto start = std::chrono::steady_clock::now();
  for (int i = shard; i < seeds; i += kShards) {
    SeedRun run(first + static_cast<uint64_t>(i), ops, verbose, &findings, &coverage);
    run.Run();
    total_ops += run.ops_run();
    ++run_seeds;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "shard " << shard << ": " << run_seeds << " seeds x " << ops << " ops (" << total_ops
            << " checked ops) in " << secs << " s\n";
  if (shard == 0 || verbose) {
    std::cout << "expected outcomes:\n";
    for (const auto& [op, codes] : coverage) {
      std::cout << "  " << op << ":";
      for (const auto& [code, n] : codes) std::cout << " " << code << "=" << n;
      std::cout << "\n";
    }
  }
  for (const auto& [kind, f] : findings) {
    ADD_FAILURE() << kind << "\n  in " << f.seeds << " of " << run_seeds
                  << " seeds of this shard; first seed " << f.first_seed
                  << " (rerun: WEFT_MODEL_FIRST_SEED=" << f.first_seed
                  << " WEFT_MODEL_SEEDS=1 WEFT_MODEL_VERBOSE=1)\n  " << f.message
                  << "\n  ops of that seed:\n"
                  << f.trace;
  }
}

INSTANTIATE_TEST_SUITE_P(Shards, VolumeModelTest, ::testing::Range(0, kShards));

}  // namespace
}  // namespace weft
