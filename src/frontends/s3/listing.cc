#include "frontends/s3/listing.h"

#include <algorithm>

#include "frontends/s3/request.h"

namespace weft::s3 {
namespace {

constexpr uint32_t kPageSize = 1000;
constexpr size_t kMaxName = 255;

// The greatest string of at most kMaxName bytes that sorts before `s`, so that "names after
// it" are exactly "names >= s" (names never contain NUL and are at most kMaxName bytes).
std::string JustBefore(const std::string& s) {
  if (s.empty()) return "";
  auto last = static_cast<unsigned char>(s.back());
  if (last <= 1 || s.size() > kMaxName) return s.substr(0, s.size() - 1);
  std::string out = s.substr(0, s.size() - 1);
  out += static_cast<char>(last - 1);
  out.append(kMaxName + 1 - s.size(), '\xff');
  return out;
}

std::string SortKey(const DirEntry& e) {
  return e.type == FileType::kDirectory ? e.name + "/" : e.name;
}

}  // namespace

KeyWalker::KeyWalker(Volume& volume, RequestContext ctx, Options options)
    : volume_(volume), ctx_(std::move(ctx)), options_(std::move(options)) {}

bool KeyWalker::CouldHoldKeysAfterStart(const std::string& dir_key) const {
  if (!options_.skip_prefix.empty() && dir_key.starts_with(options_.skip_prefix)) return false;
  const std::string& start = options_.start_after;
  // Every key inside starts with dir_key; if start is past dir_key without being inside it,
  // it is past all of them.
  return start < dir_key || start.starts_with(dir_key);
}

Status KeyWalker::OpenFrame(std::string dir_path, std::string key_base, std::string name_prefix) {
  auto frame = std::make_unique<Frame>();
  frame->dir_path = std::move(dir_path);
  frame->key_base = std::move(key_base);
  frame->name_prefix = std::move(name_prefix);

  // Where in this directory the first wanted name can be: at or after the first segment of
  // the start position (when the start lies inside this directory) and of the name prefix.
  std::string seek = frame->name_prefix;
  const std::string& start = options_.start_after;
  std::string start_segment;
  if (start.starts_with(frame->key_base) && start.size() > frame->key_base.size()) {
    std::string_view rel = std::string_view(start).substr(frame->key_base.size());
    start_segment = std::string(rel.substr(0, rel.find('/')));
    seek = std::max(seek, start_segment);
  }
  frame->read_after = JustBefore(seek);
  // A directory "x" sorts as "x/", so it can follow a seek target "x-1" or "x.txt": such a
  // directory's name is a prefix of the target cut before a byte smaller than '/'.
  for (size_t k = 1; k < seek.size(); ++k) {
    if (static_cast<unsigned char>(seek[k]) >= '/') continue;
    std::string candidate = seek.substr(0, k);
    if (!candidate.starts_with(frame->name_prefix)) continue;
    ReadOptions read;
    read.snapshot = options_.snapshot;
    auto info = volume_.Stat(ctx_, frame->dir_path + "/" + candidate, read);
    if (info.ok() && info->type == FileType::kDirectory) {
      DirEntry entry;
      entry.name = candidate;
      entry.type = FileType::kDirectory;
      entry.inode = info->inode;
      entry.info = *info;
      frame->heap.push(Pending{SortKey(entry), std::move(entry)});
    }
  }
  stack_.push_back(std::move(frame));
  return OkStatus();
}

Status KeyWalker::Refill(Frame& frame) {
  ReadDirOptions opts;
  opts.snapshot = options_.snapshot;
  opts.start_after = frame.read_after;
  opts.limit = kPageSize;
  opts.with_info = true;
  opts.include_removed = options_.include_removed;
  auto page = volume_.ReadDir(ctx_, frame.dir_path, opts);
  if (!page.ok() && page.status().code() == StatusCode::kUnimplemented && opts.include_removed) {
    options_.include_removed = false;
    opts.include_removed = false;
    page = volume_.ReadDir(ctx_, frame.dir_path, opts);
  }
  if (!page.ok()) {
    if (page.status().code() == StatusCode::kNotFound ||
        page.status().code() == StatusCode::kNotADirectory) {
      frame.exhausted = true;  // vanished while we listed: nothing more here
      return OkStatus();
    }
    return page.status();
  }
  stale_ = stale_ || page->stale;
  for (DirEntry& e : page->entries) {
    frame.read_after = e.name;
    if (!e.name.starts_with(frame.name_prefix)) {
      // Names with the prefix are contiguous; past them there is nothing more to read.
      if (e.name > frame.name_prefix) {
        frame.exhausted = true;
        break;
      }
      continue;
    }
    // Multipart uploads in progress are not objects (s3_frontend.h).
    if (frame.key_base.empty() && e.name == kUploadsDirName) continue;
    std::string sort_key = SortKey(e);
    frame.heap.push(Pending{std::move(sort_key), std::move(e)});
  }
  if (!page->truncated) frame.exhausted = true;
  return OkStatus();
}

Result<std::optional<ListedKey>> KeyWalker::Next() {
  if (!started_) {
    started_ = true;
    // Start in the deepest directory the prefix names completely: "a/b/c" lists "a/b" for
    // names starting with "c".
    std::string dir_key;
    std::string name_prefix = options_.prefix;
    size_t slash = options_.prefix.rfind('/');
    if (slash != std::string::npos) {
      dir_key = options_.prefix.substr(0, slash + 1);
      name_prefix = options_.prefix.substr(slash + 1);
    }
    std::string dir_path = "/" + options_.bucket;
    if (!dir_key.empty()) dir_path += "/" + dir_key.substr(0, dir_key.size() - 1);
    // No key has an empty segment (ValidateKey), so a prefix with one ("a//", "/a") matches
    // nothing; it must not be read as the directory it would name without it.
    const bool impossible = dir_key.starts_with('/') || dir_key.find("//") != std::string::npos;
    if (!impossible && (dir_key.empty() || CouldHoldKeysAfterStart(dir_key))) {
      WEFT_RETURN_IF_ERROR(OpenFrame(dir_path, dir_key, name_prefix));
    }
  }
  if (last_directory_) {
    ListedKey dir = std::move(*last_directory_);
    last_directory_.reset();
    if (!skip_last_directory_ && CouldHoldKeysAfterStart(dir.key)) {
      std::string path = "/" + options_.bucket + "/" + dir.key.substr(0, dir.key.size() - 1);
      WEFT_RETURN_IF_ERROR(OpenFrame(std::move(path), dir.key, ""));
    }
    skip_last_directory_ = false;
  }
  while (!stack_.empty()) {
    Frame& frame = *stack_.back();
    // Pop only entries that no unread name can precede: unread names are > read_after.
    while (!frame.exhausted &&
           (frame.heap.empty() || frame.heap.top().sort_key > frame.read_after)) {
      WEFT_RETURN_IF_ERROR(Refill(frame));
    }
    if (frame.heap.empty()) {
      stack_.pop_back();
      continue;
    }
    Pending next = frame.heap.top();
    frame.heap.pop();
    ListedKey listed;
    listed.key = frame.key_base + next.sort_key;
    listed.is_directory = next.entry.type == FileType::kDirectory;
    if (next.entry.info) listed.info = std::move(*next.entry.info);
    // Symlinks and special files are not S3 objects.
    if (next.entry.type != FileType::kFile && !listed.is_directory) continue;
    if (listed.is_directory) {
      if (!CouldHoldKeysAfterStart(listed.key)) continue;
      last_directory_ = listed;
      return std::optional<ListedKey>(std::move(listed));
    }
    if (listed.key <= options_.start_after) continue;
    if (!options_.skip_prefix.empty() && listed.key.starts_with(options_.skip_prefix)) continue;
    if (!listed.key.starts_with(options_.prefix)) continue;
    return std::optional<ListedKey>(std::move(listed));
  }
  return std::optional<ListedKey>();
}

}  // namespace weft::s3
