#include "vfs/internal/namespace_view.h"

#include <algorithm>
#include <set>

namespace weft {

using schema::Dirent;
using schema::Inode;

namespace {

// For a history table: the record of the key whose history starts with `prefix` that was
// current at `seq`, if any. Records sort by end sequence, so it is the first with end > seq.
template <typename T, typename Decode>
Result<std::optional<T>> HistoryAt(KvReader* reader, const std::string& prefix, uint64_t seq,
                                   Decode decode) {
  std::string seek = prefix;
  PutBigEndian64(&seek, seq + 1);
  auto it = reader->NewIterator();
  it->Seek(seek);
  if (!it->Valid()) {
    WEFT_RETURN_IF_ERROR(it->status());
    return std::optional<T>();
  }
  if (!it->key().starts_with(prefix)) return std::optional<T>();
  WEFT_ASSIGN_OR_RETURN(auto h, decode(it->value()));
  if (h.seq_begin > seq) return std::optional<T>();
  return std::optional<T>(h.value);
}

}  // namespace

Result<std::optional<Dirent>> NamespaceView::GetDirent(uint64_t parent, std::string_view name) {
  WEFT_ASSIGN_OR_RETURN(auto v, reader_->Get(schema::DirentKey(parent, name)));
  if (v) {
    WEFT_ASSIGN_OR_RETURN(auto cur, schema::DecodeDirent(*v));
    if (live() || cur.seq_begin <= seq_) return std::optional<Dirent>(cur.value);
  }
  if (live()) return std::optional<Dirent>();
  return HistoryAt<Dirent>(reader_, schema::DirentHistoryNamePrefix(parent, name), seq_,
                           schema::DecodeDirentHistory);
}

Result<std::optional<Inode>> NamespaceView::GetInode(uint64_t ino) {
  WEFT_ASSIGN_OR_RETURN(auto v, reader_->Get(schema::InodeKey(ino)));
  if (v) {
    WEFT_ASSIGN_OR_RETURN(auto cur, schema::DecodeInode(*v));
    if (live()) return std::optional<Inode>(cur.value);
    if (cur.seq_begin <= seq_) return AsOfSnapshot(std::move(cur.value));
  }
  if (live()) return std::optional<Inode>();
  WEFT_ASSIGN_OR_RETURN(
      std::optional<Inode> old,
      HistoryAt<Inode>(reader_, schema::InodeHistoryPrefix(ino), seq_, schema::DecodeInodeHistory));
  if (!old) return old;
  return AsOfSnapshot(std::move(*old));
}

// Link counts change in place, unversioned (metadata.md): a snapshot's directory would say
// how many subdirectories it has now, and a tool trusting that could skip some. It says it
// does not count them.
std::optional<Inode> NamespaceView::AsOfSnapshot(Inode inode) {
  if (inode.type == FileType::kDirectory) inode.nlink = 0;
  return inode;
}

Result<schema::Manifest> NamespaceView::GetManifest(uint64_t ino, uint64_t content_seq) {
  WEFT_ASSIGN_OR_RETURN(auto v, reader_->Get(schema::ManifestKey(ino, content_seq)));
  if (!v) {
    return NotFound("content version " + schema::MakeVersionId(ino, content_seq) +
                    " is no longer retained");
  }
  return schema::DecodeManifest(*v);
}

Result<NamespaceView::Resolved> NamespaceView::Resolve(const std::vector<std::string>& segments,
                                                       const std::string& display) {
  Resolved r;
  r.ino = schema::kRootInode;
  WEFT_ASSIGN_OR_RETURN(auto root, GetInode(r.ino));
  if (!root) return Corruption("the root directory inode is missing");
  r.inode = *root;
  for (const std::string& name : segments) {
    WEFT_ASSIGN_OR_RETURN(r, Step(r, name, display));
  }
  return r;
}

Result<NamespaceView::Resolved> NamespaceView::Step(const Resolved& dir, const std::string& name,
                                                    const std::string& display) {
  if (dir.inode.type != FileType::kDirectory) {
    return NotADirectory(display + ": a path component is not a directory");
  }
  WEFT_ASSIGN_OR_RETURN(auto d, GetDirent(dir.ino, name));
  if (!d) return NotFound(display + ": no such file or directory");
  WEFT_ASSIGN_OR_RETURN(auto inode, GetInode(d->ino));
  if (!inode) return Corruption(display + ": directory entry points to missing inode");
  return Resolved{d->ino, *inode};
}

Result<ReadDirPage> NamespaceView::List(uint64_t dir, const std::string& dir_path,
                                        const ReadDirOptions& opts) {
  // Candidates from current records (valid at seq) and, for old sequences, from history
  // records; for one name at most one record is valid at a given sequence.
  std::vector<std::pair<std::string, Dirent>> found;
  const size_t want = static_cast<size_t>(opts.limit) + 1;  // one extra reveals truncation
  const std::string prefix = schema::DirentPrefix(dir);
  {
    auto it = reader_->NewIterator();
    it->Seek(opts.start_after.empty() ? prefix : prefix + opts.start_after + '\0');
    for (; it->Valid() && it->key().starts_with(prefix); it->Next()) {
      std::string_view name = it->key().substr(prefix.size());
      WEFT_ASSIGN_OR_RETURN(auto cur, schema::DecodeDirent(it->value()));
      if (!live() && cur.seq_begin > seq_) continue;
      found.emplace_back(std::string(name), cur.value);
      if (found.size() >= want) break;
    }
    WEFT_RETURN_IF_ERROR(it->status());
  }
  if (!live()) {
    const std::string hprefix = schema::DirentHistoryPrefix(dir);
    auto it = reader_->NewIterator();
    it->Seek(opts.start_after.empty() ? hprefix : hprefix + opts.start_after + '\x01');
    size_t from_history = 0;
    while (it->Valid() && it->key().starts_with(hprefix) && from_history < want) {
      std::string_view rest = it->key().substr(hprefix.size());
      size_t nul = rest.find('\0');
      if (nul == std::string_view::npos) return Corruption("malformed history key");
      std::string name(rest.substr(0, nul));
      std::optional<Dirent> valid;
      for (; it->Valid() && it->key().starts_with(hprefix) &&
             it->key().substr(hprefix.size(), nul + 1) == std::string_view(name + '\0');
           it->Next()) {
        if (valid) continue;
        WEFT_ASSIGN_OR_RETURN(auto h, schema::DecodeDirentHistory(it->value()));
        if (h.seq_begin <= seq_ && seq_ < h.seq_end) valid = h.value;
      }
      if (valid) {
        found.emplace_back(std::move(name), *valid);
        ++from_history;
      }
    }
    WEFT_RETURN_IF_ERROR(it->status());
    std::sort(found.begin(), found.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  // Files with history but no current entry (a removed directory's files cannot be listed by
  // name any more, so removed directories are left out). Each name is read up to its last
  // record, which (records sort by end sequence) says what it named last.
  std::set<std::string> removed;
  if (live() && opts.include_removed) {
    // The page holds the first `limit` names of both kinds. When the current names filled
    // it, no removed name past the last of them can be in it; otherwise `current` holds every
    // current name after start_after, so it alone tells which names are live.
    const bool current_full = found.size() >= want;
    const std::string bound = current_full ? found.back().first : std::string();
    std::set<std::string, std::less<>> current;
    for (const auto& f : found) current.insert(f.first);
    const std::string hprefix = schema::DirentHistoryPrefix(dir);
    auto it = reader_->NewIterator();
    it->Seek(opts.start_after.empty() ? hprefix : hprefix + opts.start_after + '\x01');
    while (it->Valid() && it->key().starts_with(hprefix) && removed.size() < want) {
      std::string_view rest = it->key().substr(hprefix.size());
      size_t nul = rest.find('\0');
      if (nul == std::string_view::npos) return Corruption("malformed history key");
      std::string name(rest.substr(0, nul));
      if (current_full && name > bound) break;
      if (current.count(name)) {
        it->Seek(hprefix + name + '\x01');  // past this live name's records
        continue;
      }
      std::optional<Dirent> last;
      const std::string name_prefix = hprefix + name + '\0';
      for (; it->Valid() && it->key().starts_with(name_prefix); it->Next()) {
        WEFT_ASSIGN_OR_RETURN(auto h, schema::DecodeDirentHistory(it->value()));
        last = h.value;
      }
      if (last && last->type == FileType::kFile) {
        found.emplace_back(name, *last);
        removed.insert(std::move(name));
      }
    }
    WEFT_RETURN_IF_ERROR(it->status());
    std::sort(found.begin(), found.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  ReadDirPage page;
  for (auto& [name, d] : found) {
    if (page.entries.size() == opts.limit) {
      page.truncated = true;
      break;
    }
    DirEntry e;
    e.name = name;
    e.type = d.type;
    e.inode = d.ino;
    if (removed.count(name)) {
      e.removed = true;
      page.entries.push_back(std::move(e));
      continue;
    }
    if (opts.with_info) {
      WEFT_ASSIGN_OR_RETURN(auto inode, GetInode(d.ino));
      if (!inode) return Corruption(ChildPath(dir_path, name) + ": entry points to missing inode");
      e.info = MakeFileInfo(ChildPath(dir_path, name), d.ino, *inode);
    }
    page.entries.push_back(std::move(e));
  }
  return page;
}

FileInfo MakeFileInfo(const std::string& path, uint64_t ino, const Inode& inode) {
  FileInfo f;
  f.path = path;
  f.inode = ino;
  f.type = inode.type;
  f.mode = inode.mode;
  f.uid = inode.uid;
  f.gid = inode.gid;
  f.size = inode.size;
  f.mtime_ns = inode.mtime_ns;
  f.ctime_ns = inode.ctime_ns;
  f.atime_ns = inode.atime_ns.value_or(inode.mtime_ns);
  f.nlink = inode.nlink != 0 ? inode.nlink : 1;
  f.rdev = inode.rdev;
  f.symlink_target = inode.symlink_target;
  f.attributes = inode.attributes;
  if (inode.type == FileType::kFile) {
    f.etag = inode.etag;
    f.version_id = schema::MakeVersionId(ino, inode.content_seq);
    f.chunks = inode.chunks;
  }
  return f;
}

}  // namespace weft
