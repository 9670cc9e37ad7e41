#include "fabric/internal/spoke_metadata.h"

#include <algorithm>

#include "base/bytes.h"
#include "base/utf8.h"
#include "fabric/wire.h"
#include "vfs/path.h"

namespace weft::fabric {
namespace {

// A stat at a spoke lists the directory when it holds at most this many entries (one page).
constexpr uint32_t kStatListingEntries = 1000;
// Directory manifests kept as bases for revalidation, in entries (each a few hundred bytes).
constexpr size_t kManifestEntries = 256 << 10;
// A directory too large to list whole is looked up path by path; asked again after this.
constexpr std::chrono::seconds kLargeDirRetry{300};
constexpr size_t kMaxLargeDirs = 4096;

bool IsPathError(const Status& s) {
  switch (s.code()) {
    case StatusCode::kNotFound:
    case StatusCode::kNotADirectory:
    case StatusCode::kIsADirectory:
      return true;
    default:
      return false;
  }
}

}  // namespace

void SpokeMetadata::Start() {
  poller_ = std::thread([this] { PollLoop(); });
  renewer_ = std::thread([this] { RenewLoop(); });
}

void SpokeMetadata::Stop() {
  stop_ = true;
  if (poller_.joinable()) poller_.join();
  if (renewer_.joinable()) renewer_.join();
}

void SpokeMetadata::SetInvalidationHook(std::function<void(const Affected&)> hook) {
  std::lock_guard lock(hook_mu_);
  hook_ = std::move(hook);
}

SpokeMetadataStats SpokeMetadata::Stats() const {
  return {hits_, misses_, invalidations_, renewals_, stale_answers_, dirs_whole_, dirs_changed_};
}

std::optional<CachedLookup> SpokeMetadata::StaleLookup(const std::string& key,
                                                       const std::string& path) {
  if (!options_.stale_ok) return std::nullopt;
  std::optional<CachedLookup> old = cache_.FindExpiredLookup(key, path);
  if (old) {
    ++stale_answers_;
    old->info.stale = true;
  }
  return old;
}

Result<CachedLookup> SpokeMetadata::Lookup(const std::string& hub_path,
                                           const std::optional<std::string>& snapshot,
                                           bool for_read) {
  const std::string key = LeaseKey(ParentDir(hub_path), snapshot);
  if (auto hit = cache_.FindLookup(key, hub_path, Now())) {
    ++hits_;
    return *hit;
  }
  // The whole directory in one round trip, or what changed in it since it was last listed:
  // the rest of it is then read without a lookup each, and the chunks a file shares with
  // what this spoke holds (it was renamed, copied, or read before) are not sent again.
  const std::string dir = ParentDir(hub_path);
  std::optional<uint64_t> listed_size;
  // What the directory's leased listing says: a NotFound, or a file listed without its chunks
  // (larger than a `dir` answer carries: looked up on its own, its directory still leased).
  auto from_listing = [&]() -> std::optional<CachedLookup> {
    std::optional<CachedLookup> listed = cache_.FindForStat(key, hub_path, Now());
    if (listed && listed->status.ok()) {
      listed_size = listed->info.size;
      return std::nullopt;
    }
    return listed;
  };
  if (auto listed = from_listing()) return *listed;
  if (!listed_size && !snapshot && hub_path != "/" && !IsAtOrUnder(hub_path, "/.weft") &&
      paths_->InPortal(dir)) {
    if (Status revalidated = RevalidateDir(dir, for_read ? &hub_path : nullptr); revalidated.ok()) {
      if (auto hit = cache_.FindLookup(key, hub_path, Now())) return *hit;
      if (auto listed = from_listing()) return *listed;
    } else if (revalidated.code() == StatusCode::kUnavailable) {
      if (auto old = StaleLookup(key, hub_path)) return *old;
      return revalidated;
    }
  }
  ++misses_;
  const MetaCache::Ticket ticket = cache_.Begin(key, Now());
  json args = {{"path", hub_path}};
  if (snapshot) args["snapshot"] = *snapshot;
  // The version whose chunks this spoke knows: unchanged, the answer leaves them out.
  const std::optional<KnownVersion> known = snapshot ? std::nullopt : chunks_->Latest(hub_path);
  if (known) args["known_version"] = known->version_id;
  // A file listed as larger than what comes inline: naming the chunks held would be wasted.
  if (for_read && options_.inline_read_bytes > 0 &&
      listed_size.value_or(0) <= options_.inline_read_bytes) {
    args["inline_bytes"] = options_.inline_read_bytes;
    chunks_->DescribeHeld(hub_path, options_.inline_read_bytes, &args);
  }
  json error_body;
  std::string frames;
  Result<json> reply = hub_->Call("lookup", args, &error_body, &frames);
  CachedLookup result;
  int64_t lease_ms = 0;
  if (reply.ok()) {
    WEFT_ASSIGN_OR_RETURN(result.info, InfoFromJson(reply->at("info")));
    if (reply->contains("chunks")) {
      WEFT_ASSIGN_OR_RETURN(result.chunks, ChunksFromJson(reply->at("chunks")));
      if (!snapshot) chunks_->Remember(hub_path, result.info.version_id, result.chunks);
    } else if (reply->contains("chunks_unchanged")) {
      if (!known || known->version_id != result.info.version_id) {
        return InvalidArgument("hub left out the chunks of a version this spoke does not know");
      }
      result.chunks = known->chunks;
    }
    WEFT_RETURN_IF_ERROR(chunks_->StoreFrames(frames).status());
    lease_ms = reply->value("lease_ms", int64_t{0});
  } else if (IsPathError(reply.status())) {
    result.status = reply.status();
    lease_ms = error_body.value("lease_ms", int64_t{0});
  } else {
    if (reply.status().code() == StatusCode::kUnavailable) {
      if (auto old = StaleLookup(key, hub_path)) return *old;
    }
    return reply.status();
  }
  cache_.InstallLookup(ticket, lease_ms, Now(), hub_path, result);
  return result;
}

Result<ReadDirPage> SpokeMetadata::List(const std::string& hub_path, const ReadDirOptions& opts) {
  const std::string key = LeaseKey(hub_path, opts.snapshot);
  // The path too: a live path read at a snapshot and a /.weft path can share a lease key.
  const std::string page_key = hub_path + '\0' + opts.start_after + '\0' +
                               std::to_string(opts.limit) + (opts.with_info ? "+" : "-");
  if (auto hit = cache_.FindPage(key, page_key, Now())) {
    ++hits_;
    return *hit;
  }
  ++misses_;
  const MetaCache::Ticket ticket = cache_.Begin(key, Now());
  json args = {{"path", hub_path}, {"limit", opts.limit}, {"with_info", opts.with_info}};
  if (IsValidUtf8(opts.start_after)) {
    args["start_after"] = opts.start_after;
  } else {  // JSON strings carry UTF-8 only (an S3 listing seeks with 0xff bytes)
    args["start_after_hex"] = ToHex(AsBytes(opts.start_after));
  }
  if (opts.snapshot) args["snapshot"] = *opts.snapshot;
  Result<json> listed = hub_->Call("list", args);
  if (!listed.ok() && options_.stale_ok && listed.status().code() == StatusCode::kUnavailable) {
    if (auto old = cache_.FindExpiredPage(key, page_key)) {
      ++stale_answers_;
      old->stale = true;
      for (DirEntry& e : old->entries) {
        if (e.info) e.info->stale = true;
      }
      return *old;
    }
  }
  WEFT_ASSIGN_OR_RETURN(json reply, std::move(listed));
  ReadDirPage page;
  page.truncated = reply.value("truncated", false);
  try {
    for (const json& e : reply.at("entries")) {
      DirEntry entry;
      entry.name = e.at("name").get<std::string>();
      const int type = e.at("type").get<int>();
      if (type < 1 || type > kMaxFileType) {
        return InvalidArgument("malformed listing from the hub: type " + std::to_string(type));
      }
      entry.type = static_cast<FileType>(type);
      entry.inode = e.at("inode").get<uint64_t>();
      if (e.contains("info")) {
        WEFT_ASSIGN_OR_RETURN(entry.info, InfoFromJson(e.at("info")));
      }
      page.entries.push_back(std::move(entry));
    }
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("malformed listing from the hub: ") + e.what());
  }
  const int64_t lease_ms = reply.value("lease_ms", int64_t{0});
  cache_.InstallPage(ticket, lease_ms, Now(), page_key, page);
  if (opts.with_info && !opts.snapshot) {
    const bool whole =
        opts.start_after.empty() && !page.truncated && !reply.value("withheld", false);
    cache_.InstallListed(ticket, lease_ms, Now(), hub_path, page, whole);
  }
  return page;
}

Result<std::optional<CachedLookup>> SpokeMetadata::StatFromListing(const std::string& hub_path) {
  const std::string dir = ParentDir(hub_path);
  if (hub_path == "/" || IsAtOrUnder(hub_path, "/.weft") || !paths_->InPortal(dir)) {
    return std::optional<CachedLookup>();
  }
  if (auto hit = cache_.FindForStat(dir, hub_path, Now())) {
    ++hits_;
    return hit;
  }
  if (Status listed = RevalidateDir(dir); listed.ok()) {
    if (auto hit = cache_.FindForStat(dir, hub_path, Now())) return hit;
  } else if (listed.code() == StatusCode::kUnavailable) {
    if (!options_.stale_ok) return listed;
    if (auto old = StaleLookup(dir, hub_path)) return old;
    return std::optional<CachedLookup>();
  }
  ReadDirOptions whole;
  whole.with_info = true;
  whole.limit = kStatListingEntries;
  Result<ReadDirPage> listing = List(dir, whole);
  if (!listing.ok()) {
    // Out of reach: asking again about the path would only wait as long once more.
    if (listing.status().code() == StatusCode::kUnavailable) {
      if (!options_.stale_ok) return listing.status();
      if (auto old = StaleLookup(dir, hub_path)) return old;
    }
    // The path's own lookup says why, or finds what a stale page lacks.
    return std::optional<CachedLookup>();
  }
  return cache_.FindForStat(dir, hub_path, Now());
}

void SpokeMetadata::Clear() {
  cache_.Clear();
  std::lock_guard lock(dirs_mu_);
  manifests_.clear();
  manifest_entries_ = 0;
  large_dirs_.clear();
}

Status SpokeMetadata::RevalidateDir(const std::string& dir, const std::string* read) {
  std::promise<Status> done;
  std::shared_future<Status> running;
  {
    std::lock_guard lock(dirs_mu_);
    if (auto large = large_dirs_.find(dir); large != large_dirs_.end()) {
      if (large->second > Now()) return FailedPrecondition(dir + ": too large to list whole");
      large_dirs_.erase(large);
    }
    if (auto it = revalidating_.find(dir); it != revalidating_.end()) {
      running = it->second;
    } else {
      revalidating_[dir] = done.get_future().share();
    }
  }
  if (running.valid()) return running.get();
  Status s = FetchDir(dir, read);
  {
    std::lock_guard lock(dirs_mu_);
    revalidating_.erase(dir);
  }
  done.set_value(s);
  return s;
}

Status SpokeMetadata::FetchDir(const std::string& dir, const std::string* read) {
  std::shared_ptr<const DirManifest> base;
  {
    std::lock_guard lock(dirs_mu_);
    if (auto it = manifests_.find(dir); it != manifests_.end()) base = it->second;
  }
  const std::string key = LeaseKey(dir, std::nullopt);
  const MetaCache::Ticket ticket = cache_.Begin(key, Now());
  json args = {{"path", dir}, {"chunks_max_bytes", options_.inline_read_bytes}};
  if (base) args["since"] = base->sequence;
  // The hub sends a file's bytes with the answer only for a small one the spoke read before.
  if (read != nullptr && options_.inline_read_bytes > 0 &&
      chunks_->DescribeHeld(*read, options_.inline_read_bytes, &args)) {
    args["read"] = read->substr(read->rfind('/') + 1);
    args["inline_bytes"] = options_.inline_read_bytes;
  }
  ++misses_;
  std::string frames;
  WEFT_ASSIGN_OR_RETURN(json reply, hub_->Call("dir", args, nullptr, &frames));
  WEFT_RETURN_IF_ERROR(chunks_->StoreFrames(frames).status());
  bool too_large = false, withheld = false;
  int64_t lease_ms = 0;
  try {
    too_large = reply.value("too_large", false);
    withheld = reply.value("withheld", false);
    lease_ms = reply.value("lease_ms", int64_t{0});
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("malformed directory from the hub: ") + e.what());
  }
  if (too_large) {
    std::lock_guard lock(dirs_mu_);
    if (large_dirs_.size() >= kMaxLargeDirs) large_dirs_.clear();
    large_dirs_[dir] = Now() + kLargeDirRetry;
    return FailedPrecondition(dir + ": too large to list whole");
  }
  auto fresh = std::make_shared<DirManifest>();
  std::vector<std::pair<std::string, const CachedLookup*>> learned;  // files with chunks
  try {
    if (reply.contains("since")) {
      if (!base || reply.at("since").get<uint64_t>() != base->sequence) {
        return Internal("hub answered changes since a sequence not asked for");
      }
      fresh->entries = base->entries;
      for (const json& name : reply.at("removed")) fresh->entries.erase(name.get<std::string>());
    }
    for (const json& e : reply.at("entries")) {
      std::pair<CachedLookup, bool> entry;
      WEFT_ASSIGN_OR_RETURN(entry.first.info, InfoFromJson(e.at("info")));
      entry.second = entry.first.info.type != FileType::kFile || e.contains("chunks");
      if (e.contains("chunks")) {
        WEFT_ASSIGN_OR_RETURN(entry.first.chunks, ChunksFromJson(e.at("chunks")));
      }
      if (ParentDir(entry.first.info.path) != dir) {
        return Internal("hub listed " + entry.first.info.path + " in " + dir);
      }
      auto& slot = fresh->entries[e.at("name").get<std::string>()];
      // The version it replaces, as the base of deltas for its changed chunks (the content
      // hints may have forgotten it in a dataset larger than they hold).
      if (slot.second && slot.first.info.type == FileType::kFile && entry.second &&
          slot.first.info.version_id != entry.first.info.version_id) {
        chunks_->Remember(slot.first.info.path, slot.first.info.version_id, slot.first.chunks);
      }
      slot = std::move(entry);
      if (slot.second && slot.first.info.type == FileType::kFile) {
        learned.emplace_back(slot.first.info.path, &slot.first);
      }
    }
    fresh->sequence = reply.value("sequence", uint64_t{0});
    ++(reply.contains("since") ? dirs_changed_ : dirs_whole_);
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("malformed directory from the hub: ") + e.what());
  }
  for (const auto& [path, lookup] : learned) {
    chunks_->Remember(path, lookup->info.version_id, lookup->chunks);
  }
  std::vector<std::pair<const CachedLookup*, bool>> entries;
  // A file with several names changes when another of its names is written, and the hub's
  // changes since a sequence name only the one written: such a directory is listed whole.
  bool other_names = false;
  for (const auto& [name, entry] : fresh->entries) {
    entries.emplace_back(&entry.first, entry.second);
    other_names |= entry.first.info.type != FileType::kDirectory && entry.first.info.nlink > 1;
  }
  if (!cache_.InstallDir(ticket, lease_ms, Now(), entries, withheld)) {
    return Aborted(dir + " changed while it was listed");
  }
  std::lock_guard lock(dirs_mu_);
  if (auto old = manifests_.find(dir); old != manifests_.end()) {
    manifest_entries_ -= old->second->entries.size();
    manifests_.erase(old);
  }
  if (fresh->sequence == 0 || withheld || other_names) return OkStatus();
  // Bounded: past kManifestEntries, forget others (any: a forgotten directory costs one
  // whole listing next time, not a wrong answer).
  while (manifest_entries_ + fresh->entries.size() > kManifestEntries && !manifests_.empty()) {
    manifest_entries_ -= manifests_.begin()->second->entries.size();
    manifests_.erase(manifests_.begin());
  }
  if (fresh->entries.size() <= kManifestEntries) {
    manifest_entries_ += fresh->entries.size();
    manifests_[dir] = std::move(fresh);
  }
  return OkStatus();
}

void SpokeMetadata::PollLoop() {
  uint64_t acked = 0;
  std::string id = hub_->spoke_id();
  while (!stop_) {
    // "ack_spoke": the id the ack counts under; a poll re-sent under a new id after the hub
    // restarted must not acknowledge the new id's invalidations with the old count.
    json args = {{"ack", acked}, {"ack_spoke", id}, {"wait_ms", options_.poll_wait.count()}};
    Result<json> reply = hub_->Call("events", args);
    if (hub_->spoke_id() != id) {  // attached afresh: a new sequence of invalidations
      id = hub_->spoke_id();
      acked = 0;
    }
    if (!reply.ok()) {
      // Unreachable: leases run out on their own; try again shortly.
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    try {
      for (const json& inv : reply->at("invalidations")) {
        Affected a;
        for (const auto& d : inv.at("dirs")) a.dirs.insert(d.get<std::string>());
        for (const auto& s : inv.at("subtrees")) a.subtrees.insert(s.get<std::string>());
        Invalidate(a);
        ++invalidations_;
        {
          std::lock_guard lock(hook_mu_);
          if (hook_) hook_(paths_->ToLocal(a));
        }
        acked = std::max(acked, inv.at("seq").get<uint64_t>());
      }
      // A busy hub answers at once and says when to ask again.
      if (int64_t retry = reply->value("retry_ms", int64_t{0}); retry > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(retry, 1000)));
      }
    } catch (const json::exception&) {
      // A malformed answer acknowledges nothing: the hub waits out this spoke's leases. What
      // is cached may be stale, so drop it all.
      cache_.Clear();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}

// Keeps the leases of directories in use (read within the last minute) from lapsing:
// training re-reads a dataset every epoch, and a lapsed lease costs one lookup round trip
// per file read next (an epoch of 1,800 files took 8 s instead of 1.5 s at 40 ms). One
// batched "renew" every half lease keeps them; unused ones run out as before.
void SpokeMetadata::RenewLoop() {
  while (!stop_) {
    for (int i = 0; i < 5 && !stop_; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (stop_) break;
    const std::vector<std::string> dirs = cache_.Renewable(Now());
    for (size_t start = 0; start < dirs.size(); start += kMaxLookupBatch) {
      const size_t end = std::min(dirs.size(), start + kMaxLookupBatch);
      std::vector<MetaCache::Ticket> tickets;
      json keys = json::array();
      for (size_t k = start; k < end; ++k) {
        tickets.push_back(cache_.Begin(dirs[k], Now()));
        keys.push_back(dirs[k]);
      }
      Result<json> reply = hub_->Call("renew", {{"dirs", std::move(keys)}});
      if (!reply.ok()) break;  // unreachable (or an older hub): the leases just run out
      const json* leases = nullptr;
      if (auto it = reply->find("lease_ms");
          it != reply->end() && it->is_array() && it->size() == end - start) {
        leases = &*it;
      }
      if (leases == nullptr) break;
      for (size_t k = start; k < end; ++k) {
        const json& ms = (*leases)[k - start];
        if (!ms.is_number_integer()) continue;
        if (cache_.Renew(tickets[k - start], ms.get<int64_t>(), Now())) ++renewals_;
      }
    }
  }
}

Result<std::shared_ptr<const SnapshotView>> SpokeMetadata::Pinned(const std::string& name) {
  const std::string key = "/.weft/snapshots";
  const std::string binding = key + "/" + name;
  std::shared_ptr<const SnapshotView> view;
  {
    std::lock_guard lock(pinned_mu_);
    if (unpinnable_.contains(name)) return std::shared_ptr<const SnapshotView>();
    auto it = pinned_.find(name);
    if (it != pinned_.end()) view = it->second;
  }
  if (view) {
    auto bound = cache_.FindLookup(key, binding, Now());
    if (bound && bound->info.version_id == std::to_string(view->sequence)) {
      ++hits_;
      return view;
    }
  }
  ++misses_;
  const MetaCache::Ticket ticket = cache_.Begin(key, Now());
  json args = {{"snapshot", name}};
  if (view) args["if_sequence"] = view->sequence;
  Result<json> reply = hub_->Call("manifest", args);
  if (!reply.ok()) {
    if (reply.status().reason() == Reason::kTooLarge) {
      std::lock_guard lock(pinned_mu_);
      unpinnable_.insert(name);
      return std::shared_ptr<const SnapshotView>();
    }
    return reply.status();
  }
  WEFT_ASSIGN_OR_RETURN(SnapshotInfo snap, SnapshotFromJson(reply->at("snapshot")));
  if (!reply->value("unchanged", false) || !view) {
    auto fresh = std::make_shared<SnapshotView>();
    fresh->sequence = snap.sequence;
    fresh->root = snap.path;
    try {
      for (const json& e : reply->at("entries")) {
        CachedLookup l;
        WEFT_ASSIGN_OR_RETURN(l.info, InfoFromJson(e.at("info")));
        if (e.contains("chunks")) {
          WEFT_ASSIGN_OR_RETURN(l.chunks, ChunksFromJson(e.at("chunks")));
        }
        fresh->entries[e.at("path").get<std::string>()] = std::move(l);
      }
    } catch (const json::exception& e) {
      return InvalidArgument(std::string("malformed manifest from the hub: ") + e.what());
    }
    view = fresh;
    std::lock_guard lock(pinned_mu_);
    pinned_[name] = view;
  }
  CachedLookup bound;
  bound.info.version_id = std::to_string(snap.sequence);
  cache_.InstallLookup(ticket, reply->value("lease_ms", int64_t{0}), Now(), binding, bound);
  return view;
}

std::vector<Result<Resolved>> SpokeMetadata::ResolveAll(const std::vector<std::string>& paths) {
  std::vector<Result<Resolved>> out(paths.size(), Internal("not resolved"));
  std::vector<Resolved> resolved(paths.size());
  std::vector<bool> have(paths.size(), false);
  std::vector<size_t> ask;
  for (size_t i = 0; i < paths.size(); ++i) {
    Result<Mapped> m = paths_->Map(paths[i]);
    if (!m.ok() || m->virtual_dir) {
      out[i] = m.ok() ? IsADirectory(m->local + ": is a directory") : m.status();
      continue;
    }
    if (IsAtOrUnder(m->local, "/.weft")) {
      Result<Resolved> r = Resolve(*m, std::nullopt);
      if (!r.ok()) {
        out[i] = r.status();
        continue;
      }
      resolved[i] = std::move(*r);
      have[i] = true;
      continue;
    }
    resolved[i].fetch_path = m->hub;
    const std::string key = LeaseKey(ParentDir(m->hub), std::nullopt);
    if (auto hit = cache_.FindLookup(key, m->hub, Now())) {
      ++hits_;
      resolved[i].lookup = *hit;
      have[i] = true;
    } else {
      ask.push_back(i);
    }
  }
  for (size_t start = 0; start < ask.size(); start += kMaxLookupBatch) {
    const size_t end = std::min(ask.size(), start + kMaxLookupBatch);
    std::vector<MetaCache::Ticket> tickets;
    json hub_paths = json::array();
    for (size_t k = start; k < end; ++k) {
      const std::string& hub_path = resolved[ask[k]].fetch_path;
      tickets.push_back(cache_.Begin(LeaseKey(ParentDir(hub_path), std::nullopt), Now()));
      hub_paths.push_back(hub_path);
    }
    Result<json> reply = hub_->Call("lookup", {{"paths", std::move(hub_paths)}});
    if (reply.ok() && (!reply->contains("results") || !(*reply)["results"].is_array() ||
                       (*reply)["results"].size() != end - start)) {
      reply = InvalidArgument("malformed batch lookup from the hub");
    }
    for (size_t k = start; k < end; ++k) {
      const size_t i = ask[k];
      if (!reply.ok()) {
        out[i] = reply.status();
        continue;
      }
      const json& one = (*reply)["results"][k - start];
      CachedLookup result;
      if (one.contains("error")) {
        result.status = StatusFromJson(one.at("error"));
        if (!IsPathError(result.status)) {
          out[i] = result.status;
          continue;
        }
      } else {
        Result<FileInfo> info = InfoFromJson(one.at("info"));
        Result<std::vector<ChunkRef>> chunks =
            one.contains("chunks") ? ChunksFromJson(one.at("chunks"))
                                   : Result<std::vector<ChunkRef>>(std::vector<ChunkRef>());
        if (!info.ok() || !chunks.ok()) {
          out[i] = info.ok() ? chunks.status() : info.status();
          continue;
        }
        result.info = std::move(*info);
        result.chunks = std::move(*chunks);
        // Prefetched files too: a lookup after this lease lapsed names what the spoke holds.
        if (result.info.type == FileType::kFile) {
          chunks_->Remember(resolved[i].fetch_path, result.info.version_id, result.chunks);
        }
      }
      cache_.InstallLookup(tickets[k - start], one.value("lease_ms", int64_t{0}), Now(),
                           resolved[i].fetch_path, result);
      resolved[i].lookup = std::move(result);
      have[i] = true;
    }
    // Counted once answered: whoever sees the count sees what the batch installed.
    misses_ += end - start;
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    if (have[i]) out[i] = std::move(resolved[i]);
  }
  return out;
}

Result<Resolved> SpokeMetadata::Resolve(const Mapped& m, const std::optional<std::string>& snapshot,
                                        bool for_read) {
  // "/.weft/snapshots/NAME/rel" or a live path read at snapshot NAME.
  std::optional<std::string> name = snapshot;
  std::string rel;
  bool rel_known = false;
  if (!name && IsAtOrUnder(m.hub, "/.weft/snapshots")) {
    WEFT_ASSIGN_OR_RETURN(std::vector<std::string> parts, SplitPath(m.hub));
    if (parts.size() >= 3) {
      name = parts[2];
      for (size_t i = 3; i < parts.size(); ++i) rel += (rel.empty() ? "" : "/") + parts[i];
      rel_known = true;
    }
  }
  if (name) {
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const SnapshotView> view, Pinned(*name));
    if (view) {
      if (!rel_known) {
        if (!IsAtOrUnder(m.hub, view->root)) {
          return NotFound(m.local + ": not in snapshot '" + *name + "'");
        }
        rel = m.hub.substr(view->root == "/" ? 1 : view->root.size());
        if (!rel.empty() && rel[0] == '/') rel.erase(0, 1);
      }
      Resolved r;
      auto it = view->entries.find(rel);
      if (it == view->entries.end()) {
        r.lookup.status = NotFound(m.local + ": no such file or directory");
      } else {
        r.lookup = it->second;
      }
      r.fetch_path = "/.weft/snapshots/" + *name + (rel.empty() ? "" : "/" + rel);
      r.view = std::move(view);
      r.rel = rel;
      return r;
    }
  }
  Resolved r;
  WEFT_ASSIGN_OR_RETURN(r.lookup, Lookup(m.hub, snapshot, for_read));
  r.fetch_path = m.hub;
  return r;
}

ReadDirPage SpokeMetadata::ListPinned(const SnapshotView& view, const std::string& rel,
                                      const ReadDirOptions& opts) {
  ReadDirPage page;
  const std::string prefix = rel.empty() ? "" : rel + "/";
  for (auto it = view.entries.lower_bound(prefix + opts.start_after); it != view.entries.end();
       ++it) {
    const std::string& key = it->first;
    if (!key.starts_with(prefix) || key.size() == prefix.size()) {
      if (!key.starts_with(prefix)) break;
      continue;
    }
    std::string_view name = std::string_view(key).substr(prefix.size());
    if (name.find('/') != std::string_view::npos || name <= opts.start_after) continue;
    if (page.entries.size() == opts.limit) {
      page.truncated = true;
      break;
    }
    DirEntry e;
    e.name = std::string(name);
    e.type = it->second.info.type;
    e.inode = it->second.info.inode;
    if (opts.with_info) e.info = it->second.info;
    page.entries.push_back(std::move(e));
  }
  return page;
}

}  // namespace weft::fabric
