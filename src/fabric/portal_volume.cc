#include "fabric/portal_volume.h"

#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "base/bytes.h"
#include "base/utf8.h"
#include "chunk/bounded_chunk_store.h"
#include "chunk/zero_chunks.h"
#include "fabric/coherent_volume.h"
#include "fabric/content_hints.h"
#include "fabric/meta_cache.h"
#include "vfs/path.h"
#include "vfs/residency.h"

namespace weft::fabric {
namespace {

// A stat at a spoke lists the directory when it holds at most this many entries (one page).
constexpr uint32_t kStatListingEntries = 1000;
// Files and chunk refs whose content a spoke remembers for its lookups' hints and deltas, per
// generation (two are kept: at most about 60 MB).
constexpr size_t kHintedFiles = 256 << 10;
constexpr size_t kHintedChunks = 512 << 10;
// Plaintext of chunks just fetched, handed straight to the reader that asked for them, so
// that an eviction round between the fetch and the read cannot take them away. The keys are
// the chunks wanted; a value stays null unless its chunk came in that fetch.
using FetchedChunks = std::unordered_map<ChunkId, std::shared_ptr<const std::string>, ChunkIdHash>;

Result<std::string> Normalise(std::string_view path) {
  WEFT_ASSIGN_OR_RETURN(auto segments, SplitPath(path));
  return JoinPath(segments);
}

// "/a" + "/b/c" -> "/a/b/c", with "/" as the identity on either side.
std::string Join(const std::string& base, std::string_view rest) {
  if (rest.empty() || rest == "/") return base;
  if (base == "/") return std::string(rest);
  return base + std::string(rest);
}

std::string LeaseKey(const std::string& dir, const std::optional<std::string>& snapshot) {
  if (!snapshot) return dir;
  return "/.weft/snapshots/" + *snapshot + (dir == "/" ? "" : dir);
}

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

// The indices of the chunks that overlap NeuralCache block `block` of a file.
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

std::string NewSessionId() {
  std::array<unsigned char, 16> raw{};
  RAND_bytes(raw.data(), raw.size());
  return ToHex(ByteSpan(raw.data(), raw.size()));
}

class PortalVolumeImpl;

class PortalFileReader final : public FileReader {
 public:
  PortalFileReader(PortalVolumeImpl* volume, FileInfo info, std::string hub_path,
                   std::vector<ChunkRef> chunks, uint32_t job)
      : volume_(volume),
        info_(std::move(info)),
        hub_path_(std::move(hub_path)),
        chunks_(std::move(chunks)),
        job_(job) {
    offsets_.reserve(chunks_.size() + 1);
    uint64_t off = 0;
    for (const ChunkRef& c : chunks_) {
      offsets_.push_back(off);
      off += c.length;
    }
    offsets_.push_back(off);
  }

  const FileInfo& info() const override { return info_; }
  const std::vector<ChunkRef>& chunks() const override { return chunks_; }
  Result<std::string> ReadAt(uint64_t offset, uint64_t length) override;
  Result<std::shared_ptr<const std::string>> ReadChunk(size_t index) override;
  // The spoke keeps every chunk it fetched in its store whatever `reuse` says: its cache
  // policy decides what stays.
  Result<std::vector<std::shared_ptr<const std::string>>> ReadChunks(size_t first, size_t last,
                                                                     Reuse reuse) override;

  PortalVolumeImpl* owner() const { return volume_; }

 private:
  // Makes chunks [first, last] local, plus read-ahead when the reader is sequential; the
  // plaintext of those of [first, last] it fetched is handed back in `*fetched`.
  Status Ensure(size_t first, size_t last, FetchedChunks* fetched);
  // Chunk `index`, from `fetched` if Ensure handed it back, else as ReadChunk reads it.
  Result<std::shared_ptr<const std::string>> ReadEnsuredChunk(size_t index,
                                                              const FetchedChunks& fetched);
  // Tells NeuralCache of the blocks of [offset, offset + length) this reader has not read yet.
  void ReportRead(uint64_t offset, uint64_t length);
  // The ids of the chunks that overlap block `block` (cache::kBlockBytes each).
  std::vector<ChunkId> BlockChunkIds(uint32_t block) const;

  PortalVolumeImpl* volume_;
  FileInfo info_;
  std::string hub_path_;
  std::vector<ChunkRef> chunks_;
  std::vector<uint64_t> offsets_;
  const uint32_t job_;
  std::mutex mu_;
  uint64_t next_offset_ = 0;    // GUARDED_BY(mu_): where a sequential reader goes next
  size_t fetched_through_ = 0;  // GUARDED_BY(mu_): read-ahead already covers below this
  std::vector<bool> reported_;  // GUARDED_BY(mu_): blocks NeuralCache was told of
};

class PortalFileWriter final : public FileWriter {
 public:
  PortalFileWriter(PortalVolumeImpl* volume, RequestContext ctx, std::string local_path,
                   std::string hub_path, WriteOptions opts);
  ~PortalFileWriter() override { Abort(); }

  Status Write(ByteSpan data) override;
  Status AppendFrom(FileReader& source) override;
  Status AppendChunk(const ChunkRef& chunk, std::optional<ByteSpan> data) override;
  Status WriteZeros(uint64_t length) override;
  Result<FileInfo> Commit() override;
  void Abort() override;
  uint64_t bytes_written() const override { return size_; }

 private:
  Status Check() const {
    return done_ ? FailedPrecondition(local_path_ + ": writer already committed or aborted")
                 : OkStatus();
  }
  Status Fail(Status s) {
    if (!s.ok()) Abort();
    return s;
  }
  std::unique_ptr<StreamSplitter> NewSplitter();

  PortalVolumeImpl* volume_;
  RequestContext ctx_;
  std::string local_path_;
  std::string hub_path_;
  WriteOptions opts_;
  std::unique_ptr<StreamSplitter> splitter_;
  Md5Hasher md5_;
  uint64_t hole_bytes_ = 0;  // written by WriteZeros; past kMaxHoleMd5Bytes, no MD5
  std::vector<ChunkRef> chunks_;
  std::vector<ChunkId> held_;  // stored here, kept from eviction until the commit is done
  uint64_t size_ = 0;
  bool done_ = false;
};

class PortalVolumeImpl final : public PortalVolume, private DataStore {
 public:
  PortalVolumeImpl(std::unique_ptr<HubClient> hub, std::shared_ptr<ChunkStore> chunks,
                   PortalVolumeOptions options)
      : hub_(std::move(hub)), options_(std::move(options)) {
    if (options_.cache_bytes > 0) {
      bounded_ = std::make_shared<BoundedChunkStore>(std::move(chunks), options_.cache_bytes);
      chunks = bounded_;
    }
    // Holes are never fetched, uploaded or cached (chunk/zero_chunks.h).
    chunks_ = std::make_shared<ZeroChunkStore>(std::move(chunks));
    // Longest local path first: the most specific portal wins.
    std::sort(
        options_.portals.begin(), options_.portals.end(),
        [](const Portal& a, const Portal& b) { return a.local_path.size() > b.local_path.size(); });
  }

  ~PortalVolumeImpl() override {
    neural_.reset();  // its prefetch threads call into this volume
    stop_ = true;
    if (poller_.joinable()) poller_.join();
    if (renewer_.joinable()) renewer_.join();
  }

  Status Start() {
    AttachRequest req{options_.site, options_.tags, {}};
    for (const Portal& p : options_.portals) req.portals.push_back(p.hub_path);
    // A hub that forgot this spoke (it restarted) forgot its leases: nothing cached is safe.
    hub_->SetForgottenHandler([this] { cache_.Clear(); });
    WEFT_RETURN_IF_ERROR(hub_->Attach(req).status());
    poller_ = std::thread([this] { PollLoop(); });
    renewer_ = std::thread([this] { RenewLoop(); });
    if (options_.neural_cache) {
      NeuralCacheOptions n = *options_.neural_cache;
      n.clock = options_.clock;
      // The policy's items and the staged prefetches are held; what is left stays free for
      // chunks in transit (reads the policy bypassed), so the store's own LRU can always get
      // back under the limit without running an eviction round per fetched chunk.
      n.capacity_bytes = options_.cache_bytes / 100 * 70;
      n.staging_bytes = options_.cache_bytes / 100 * 15;
      n.prefetch_threads = std::max<size_t>(1, hub_->connections());
      WEFT_ASSIGN_OR_RETURN(neural_, NeuralCache::Create(std::move(n), this));
    }
    return OkStatus();
  }

  NeuralCache* neural_cache() override { return neural_.get(); }
  SteadyTime Now() const { return options_.clock->SteadyNow(); }
  uint32_t JobOf(const RequestContext& ctx) const {
    return JobId(ctx.principal.empty() ? "anonymous" : ctx.principal);
  }

  void SetInvalidationHook(std::function<void(const Affected&)> hook) override {
    std::lock_guard lock(hook_mu_);
    hook_ = std::move(hook);
  }

  PortalStats Stats() const override {
    PortalStats s;
    s.metadata_hits = metadata_hits_;
    s.metadata_misses = metadata_misses_;
    s.chunk_hits = chunk_hits_;
    s.chunks_fetched = chunks_fetched_;
    s.bytes_fetched = bytes_fetched_;
    s.bytes_uploaded = bytes_uploaded_;
    s.invalidations = invalidations_;
    s.lease_renewals = renewals_;
    s.stale_answers = stale_answers_;
    if (bounded_) {
      BoundedChunkStoreStats b = bounded_->bounded_stats();
      s.evictions = b.evictions;
      s.evicted_bytes = b.evicted_bytes;
    }
    return s;
  }
  const HubClient& hub() const override { return *hub_; }
  HubClient& hub_client() { return *hub_; }
  ChunkStore& chunk_store() { return *chunks_; }
  // Chunks a writer stored that the hub may lack must stay until its commit is done.
  void HoldChunk(const ChunkId& id) {
    if (bounded_) bounded_->Hold(id);
  }
  void ReleaseChunks(const std::vector<ChunkId>& ids) {
    if (!bounded_ || ids.empty()) return;
    for (const ChunkId& id : ids) bounded_->Release(id);
    bounded_->Trim();
  }
  const PortalVolumeOptions& options() const { return options_; }

  // --- DataStore, for NeuralCache ---

  std::vector<Result<std::vector<ChunkId>>> FetchAndHold(
      const std::vector<ItemRef>& items) override {
    std::vector<Result<std::vector<ChunkId>>> out(items.size(), Internal("not fetched"));
    std::vector<std::string> paths;
    for (const ItemRef& item : items) paths.push_back(item.path);
    std::vector<Result<Resolved>> resolved = ResolveAll(paths);
    // Then the chunks of every block asked for, in as few requests as the batch size allows.
    std::vector<FetchItem> fetch;
    std::vector<size_t> fetched_for;
    std::vector<std::vector<ChunkId>> ids(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      if (!resolved[i].ok()) {
        out[i] = resolved[i].status();
        continue;
      }
      const CachedLookup& l = resolved[i]->lookup;
      if (!l.status.ok()) {
        out[i] = l.status;
        continue;
      }
      if (l.info.type != FileType::kFile || l.info.version_id != items[i].version) {
        out[i] = FailedPrecondition(items[i].path + ": changed since it was predicted");
        continue;
      }
      FetchItem f{resolved[i]->fetch_path, items[i].version, &l.chunks,
                  BlockChunkIndices(l.chunks, items[i].block)};
      for (size_t c : f.indices) ids[i].push_back(l.chunks[c].id);
      Hold(ids[i]);
      fetch.push_back(std::move(f));
      fetched_for.push_back(i);
    }
    Status fetched = FetchMany(fetch);
    for (size_t i : fetched_for) {
      if (fetched.ok()) {
        out[i] = std::move(ids[i]);
      } else {
        Release(ids[i]);
        out[i] = fetched;
      }
    }
    return out;
  }
  void Revalidate(const std::vector<std::string>& paths) override { (void)ResolveAll(paths); }
  void Hold(const std::vector<ChunkId>& ids) override {
    for (const ChunkId& id : ids) HoldChunk(id);
  }
  void Release(const std::vector<ChunkId>& ids) override { ReleaseChunks(ids); }
  Result<std::vector<FileInfo>> List(const std::string& dir) override {
    std::vector<FileInfo> out;
    ReadDirOptions opts;
    opts.with_info = true;
    opts.limit = 1000;
    for (bool more = true; more;) {
      WEFT_ASSIGN_OR_RETURN(ReadDirPage page, ReadDir(RequestContext{}, dir, opts));
      more = page.truncated;
      for (DirEntry& e : page.entries) {
        opts.start_after = e.name;
        if (e.info) out.push_back(std::move(*e.info));
      }
    }
    return out;
  }

  // --- path mapping ---

  // Where a local path lives: at the hub (hub_path set), or a synthetic directory above the
  // portals (virtual_dir).
  struct Mapped {
    std::string local;
    std::string hub;
    bool virtual_dir = false;
  };

  Result<Mapped> Map(const std::string& path) const {
    WEFT_ASSIGN_OR_RETURN(std::string local, Normalise(path));
    Mapped m;
    m.local = local;
    if (IsAtOrUnder(local, "/.weft")) {  // snapshots: the hub's own namespace
      m.hub = local;
      return m;
    }
    for (const Portal& p : options_.portals) {
      if (IsAtOrUnder(local, p.local_path)) {
        m.hub = Join(p.hub_path, p.local_path == "/" ? local : local.substr(p.local_path.size()));
        return m;
      }
    }
    for (const Portal& p : options_.portals) {
      if (IsAtOrUnder(p.local_path, local)) {
        m.virtual_dir = true;
        return m;
      }
    }
    return NotFound(local + ": not in any portal of this spoke");
  }

  // A hub path back to the local path a client sees ("" if no portal shows it).
  std::string ToLocal(const std::string& hub_path) const {
    if (IsAtOrUnder(hub_path, "/.weft")) return hub_path;
    for (const Portal& p : options_.portals) {
      if (IsAtOrUnder(hub_path, p.hub_path)) {
        return Join(p.local_path,
                    p.hub_path == "/" ? hub_path : hub_path.substr(p.hub_path.size()));
      }
    }
    return "";
  }

  FileInfo Localise(FileInfo info, const std::string& local_path) const {
    info.path = local_path;
    return info;
  }

  Status NotWritable(const Mapped& m) const {
    return ReadOnly(m.local + ": above this spoke's portals; write inside a portal");
  }

  // --- metadata ---

  // With --stale-ok and the hub out of reach: what was cached about `path` under `key`
  // whatever its lease, marked stale.
  std::optional<CachedLookup> StaleLookup(const std::string& key, const std::string& path) {
    if (!options_.stale_ok) return std::nullopt;
    std::optional<CachedLookup> old = cache_.FindExpiredLookup(key, path);
    if (old) {
      ++stale_answers_;
      old->info.stale = true;
    }
    return old;
  }

  // With `for_read`, a file up to inline_read_bytes comes with its bytes (one round trip).
  Result<CachedLookup> LookupHub(const std::string& hub_path,
                                 const std::optional<std::string>& snapshot,
                                 bool for_read = false) {
    const std::string key = LeaseKey(ParentDir(hub_path), snapshot);
    if (auto hit = cache_.FindLookup(key, hub_path, Now())) {
      ++metadata_hits_;
      return *hit;
    }
    ++metadata_misses_;
    const MetaCache::Ticket ticket = cache_.Begin(key, Now());
    json args = {{"path", hub_path}};
    if (snapshot) args["snapshot"] = *snapshot;
    if (for_read && options_.inline_read_bytes > 0) {
      args["inline_bytes"] = options_.inline_read_bytes;
      // What this spoke still holds of the version it last saw: the hub leaves it out, and
      // sends the rest as deltas against it.
      if (std::optional<KnownContent> known = hints_.Recall(hub_path)) {
        json have = json::array();
        for (const ChunkRef& c : known->latest.chunks) {
          if (have.size() < kMaxHaveIds && chunks_->Contains(c.id)) {
            have.push_back(c.id.ToHex());
          }
        }
        if (!have.empty()) {
          args["have"] = std::move(have);
          args["base_version"] = known->latest.version_id;
        }
      }
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
        if (!snapshot) hints_.Remember(hub_path, result.info.version_id, result.chunks);
      }
      WEFT_RETURN_IF_ERROR(StoreFrames(frames).status());
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

  Result<ReadDirPage> ListHub(const std::string& hub_path, const ReadDirOptions& opts) {
    const std::string key = LeaseKey(hub_path, opts.snapshot);
    // The path too: a live path read at a snapshot and a /.weft path can share a lease key.
    const std::string page_key = hub_path + '\0' + opts.start_after + '\0' +
                                 std::to_string(opts.limit) + (opts.with_info ? "+" : "-");
    if (auto hit = cache_.FindPage(key, page_key, Now())) {
      ++metadata_hits_;
      return *hit;
    }
    ++metadata_misses_;
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
        entry.type = static_cast<FileType>(e.at("type").get<int>());
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

  // A stat of a live path inside a portal answered from a listing of its directory, listed
  // now if need be: a job that opens many files of one directory (an epoch over a dataset)
  // then costs one round trip per file, for its bytes, not two (as rclone lists a directory
  // once). nullopt when the listing cannot tell (a directory larger than one page): ask the
  // hub about the path itself.
  Result<std::optional<CachedLookup>> StatFromListing(const std::string& hub_path) {
    const std::string dir = ParentDir(hub_path);
    if (hub_path == "/" || IsAtOrUnder(hub_path, "/.weft") ||
        std::none_of(options_.portals.begin(), options_.portals.end(),
                     [&](const Portal& p) { return IsAtOrUnder(dir, p.hub_path); })) {
      return std::optional<CachedLookup>();
    }
    if (auto hit = cache_.FindForStat(dir, hub_path, Now())) {
      ++metadata_hits_;
      return hit;
    }
    ReadDirOptions whole;
    whole.with_info = true;
    whole.limit = kStatListingEntries;
    Result<ReadDirPage> listing = ListHub(dir, whole);
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

  void Invalidate(const Affected& affected) { cache_.Invalidate(affected); }

  // UpstreamLeases, keyed by local directories. Snapshot keys get no lease downstream.
  std::optional<std::string> HubKey(const std::string& local_dir) const {
    // The binding of snapshot names is leased like a directory; snapshot content needs none.
    if (local_dir == "/.weft/snapshots") return local_dir;
    if (IsAtOrUnder(local_dir, "/.weft")) return std::nullopt;
    auto m = Map(local_dir);
    if (!m.ok() || m->virtual_dir) return std::nullopt;
    return m->hub;
  }

  uint64_t Epoch(const std::string& dir) override {
    auto key = HubKey(dir);
    return key ? cache_.Epoch(*key) : 0;
  }

  std::chrono::milliseconds Remaining(const std::string& dir, uint64_t epoch) override {
    auto key = HubKey(dir);
    if (!key) return std::chrono::milliseconds(0);
    return cache_.Remaining(*key, epoch, Now());
  }

  Affected ToLocal(const Affected& hub) const {
    Affected local;
    for (const std::string& d : hub.dirs) {
      std::string l = ToLocal(d);
      if (!l.empty()) local.dirs.insert(l);
    }
    for (const std::string& s : hub.subtrees) {
      std::string l = ToLocal(s);
      if (!l.empty()) local.subtrees.insert(l);
    }
    return local;
  }

  void PollLoop() {
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
            if (hook_) hook_(ToLocal(a));
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
  void RenewLoop() {
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

  // --- chunks ---

  // Chunks of one version to fetch: chunks[indices].
  struct FetchItem {
    std::string hub_path;
    std::string version;
    const std::vector<ChunkRef>* chunks = nullptr;
    std::vector<size_t> indices;
  };

  // Fetches the listed chunks of one version that are not local, in parallel batches; with
  // `force`, also those the store claims (an eviction round may be removing them). The
  // plaintext of fetched chunks whose ids are keys of `*kept` is handed back there.
  Status FetchChunks(const std::string& hub_path, const std::string& version,
                     const std::vector<ChunkRef>& chunks, const std::vector<size_t>& indices,
                     bool force = false, FetchedChunks* kept = nullptr) {
    return FetchMany({FetchItem{hub_path, version, &chunks, indices}}, force, kept);
  }

  // Fetches the chunks `items` name that are not local: requests of up to batch_bytes, each
  // carrying chunks of as many files as fit, one per connection at a time. Fetched chunks
  // whose ids are keys of `*kept` get their plaintext there, as well as in the store.
  Status FetchMany(const std::vector<FetchItem>& items, bool force = false,
                   FetchedChunks* kept = nullptr) {
    using Batch = std::vector<std::pair<size_t, std::vector<size_t>>>;  // (item, indices)
    std::vector<Batch> batches(1);
    uint64_t batch_bytes = 0;
    std::unordered_set<ChunkId, ChunkIdHash> seen;
    for (size_t k = 0; k < items.size(); ++k) {
      for (size_t i : items[k].indices) {
        const ChunkRef& c = (*items[k].chunks)[i];
        if (!seen.insert(c.id).second) continue;
        if (!force && chunks_->Contains(c.id)) {
          ++chunk_hits_;
          continue;
        }
        if (batch_bytes + c.length > options_.batch_bytes && !batches.back().empty()) {
          batches.emplace_back();
          batch_bytes = 0;
        }
        Batch& b = batches.back();
        if (b.empty() || b.back().first != k) b.emplace_back(k, std::vector<size_t>());
        b.back().second.push_back(i);
        batch_bytes += c.length;
      }
    }
    if (batches.back().empty()) batches.pop_back();
    std::mutex kept_mu;
    // The earlier version of each file this spoke holds chunks of: the hub sends the wanted
    // chunks as deltas against its chunks at the same offsets.
    std::vector<std::optional<KnownVersion>> bases(items.size());
    for (size_t k = 0; k < items.size(); ++k) bases[k] = BaseFor(items[k]);
    auto fetch = [&](const Batch& batch, bool with_bases,
                     std::unordered_set<ChunkId, ChunkIdHash>* unresolved) -> Status {
      json wanted = json::array();
      size_t expected = 0;
      for (const auto& [k, indices] : batch) {
        json item = {
            {"path", items[k].hub_path}, {"version", items[k].version}, {"indices", indices}};
        if (with_bases && bases[k]) AddDeltaBases(*items[k].chunks, indices, *bases[k], &item);
        wanted.push_back(std::move(item));
        expected += indices.size();
      }
      json args = {{"items", std::move(wanted)}};
      WEFT_ASSIGN_OR_RETURN(std::string frames, hub_->CallBinary("fetch", args));
      std::vector<ChunkId> undecoded;
      WEFT_ASSIGN_OR_RETURN(size_t got, StoreFrames(frames, kept, &kept_mu, &undecoded));
      if (got + undecoded.size() != expected || (!undecoded.empty() && !with_bases)) {
        return Internal("hub sent " + std::to_string(got) + " of " + std::to_string(expected) +
                        " chunks");
      }
      if (unresolved != nullptr) unresolved->insert(undecoded.begin(), undecoded.end());
      return OkStatus();
    };
    // A delta whose base was evicted meanwhile cannot be decoded: those chunks again, whole.
    auto fetch_batch = [&](const Batch& batch) -> Status {
      std::unordered_set<ChunkId, ChunkIdHash> unresolved;
      WEFT_RETURN_IF_ERROR(fetch(batch, true, &unresolved));
      if (unresolved.empty()) return OkStatus();
      Batch again;
      for (const auto& [k, indices] : batch) {
        std::vector<size_t> redo;
        for (size_t i : indices) {
          if (unresolved.contains((*items[k].chunks)[i].id)) redo.push_back(i);
        }
        if (!redo.empty()) again.emplace_back(k, std::move(redo));
      }
      return fetch(again, false, nullptr);
    };
    // At most one batch per connection at a time; waves of them for a long read. The last
    // batch of a wave runs on this thread: most reads need one batch, and a thread started
    // for it cost more than the batch on a small file.
    const size_t parallel = std::max<size_t>(1, hub_->connections());
    Status first;
    for (size_t start = 0; start < batches.size() && first.ok(); start += parallel) {
      const size_t end = std::min(batches.size(), start + parallel);
      std::vector<std::future<Status>> running;
      for (size_t b = start; b + 1 < end; ++b) {
        running.push_back(std::async(std::launch::async, fetch_batch, std::cref(batches[b])));
      }
      first = fetch_batch(batches[end - 1]);
      for (auto& f : running) {
        Status s = f.get();
        if (first.ok() && !s.ok()) first = s;
      }
    }
    return first;
  }

  // The version of `item`'s file that this spoke saw before the one it fetches, if it knows
  // one: its chunks are the bases of deltas.
  std::optional<KnownVersion> BaseFor(const FetchItem& item) {
    std::optional<KnownContent> known = hints_.Recall(item.hub_path);
    if (!known) return std::nullopt;
    if (known->latest.version_id != item.version) return known->latest;
    return known->previous;
  }

  // Adds to a fetch item, for each wanted chunk, the chunk of `base` that covers the same
  // offset, when this spoke holds it: "base_version" and "bases": [[index, base index], ...].
  void AddDeltaBases(const std::vector<ChunkRef>& chunks, const std::vector<size_t>& indices,
                     const KnownVersion& base, json* item) {
    std::vector<uint64_t> base_ends;  // exclusive end offset of each base chunk
    uint64_t end = 0;
    for (const ChunkRef& c : base.chunks) base_ends.push_back(end += c.length);
    std::vector<uint64_t> starts;
    uint64_t at = 0;
    for (const ChunkRef& c : chunks) {
      starts.push_back(at);
      at += c.length;
    }
    json pairs = json::array();
    for (size_t i : indices) {
      // Past the old end (an append), the last old chunk: like content, a useful dictionary.
      const auto j = std::min(
          static_cast<size_t>(std::upper_bound(base_ends.begin(), base_ends.end(), starts[i]) -
                              base_ends.begin()),
          base.chunks.size() - 1);
      if (!chunks_->Contains(base.chunks[j].id)) continue;
      pairs.push_back({i, j});
    }
    if (pairs.empty()) return;
    (*item)["base_version"] = base.version_id;
    (*item)["bases"] = std::move(pairs);
  }

  // Stores the chunk frames of a hub answer (verified by id as they are put), handing those
  // `*kept` names back there too; how many. Delta frames are decoded against this spoke's
  // chunks; one whose base is gone is not stored, and goes to `*unresolved`.
  Result<size_t> StoreFrames(std::string_view in, FetchedChunks* kept = nullptr,
                             std::mutex* kept_mu = nullptr,
                             std::vector<ChunkId>* unresolved = nullptr) {
    bytes_fetched_ += in.size();
    size_t got = 0;
    const BaseLookup bases = [this](const ChunkId& id) -> std::shared_ptr<const std::string> {
      Result<std::shared_ptr<const std::string>> base = chunks_->GetShared(id);
      return base.ok() ? *base : nullptr;
    };
    while (true) {
      WEFT_ASSIGN_OR_RETURN(std::optional<ChunkFrame> frame, NextChunkFrame(&in, &bases));
      if (!frame) return got;
      if (frame->unresolved) {
        if (unresolved != nullptr) unresolved->push_back(frame->id);
        continue;
      }
      WEFT_RETURN_IF_ERROR(chunks_->Put(frame->id, AsBytes(frame->plaintext)).status());
      if (kept != nullptr) {
        std::lock_guard lock(*kept_mu);
        if (auto it = kept->find(frame->id); it != kept->end()) {
          it->second = std::make_shared<const std::string>(std::move(frame->plaintext));
        }
      }
      ++chunks_fetched_;
      ++got;
    }
  }

  // Sends what the hub lacks of `chunks` and commits them as `hub_path`.
  Result<FileInfo> CommitAtHub(const std::string& hub_path, const WriteOptions& opts,
                               const std::string& etag, const std::vector<ChunkRef>& chunks) {
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
        Result<std::shared_ptr<const std::string>> data = chunks_->GetShared(id);
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
    Invalidate(AffectedByWrite(hub_path, opts.create_parents));
    WEFT_ASSIGN_OR_RETURN(json reply, ParseJson(answer));
    return InfoFromJson(reply.at("info"));
  }

  // --- Volume ---

  Result<FileInfo> Stat(const RequestContext&, const std::string& path,
                        const ReadOptions& opts) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, Map(path));
    if (m.virtual_dir) return VirtualInfo(m.local);
    std::optional<CachedLookup> listed;
    if (!opts.snapshot) {
      WEFT_ASSIGN_OR_RETURN(listed, StatFromListing(m.hub));
    }
    Resolved r;
    if (listed) {
      r.lookup = std::move(*listed);
    } else {
      WEFT_ASSIGN_OR_RETURN(r, Resolve(m, opts.snapshot));
    }
    const CachedLookup& l = r.lookup;
    if (!l.status.ok()) return Status(l.status.code(), m.local + ": " + StripPath(l.status));
    WEFT_RETURN_IF_ERROR(CheckResident(m.local, l.info));
    return Localise(l.info, m.local);
  }

  // --- pinned snapshots ---

  // A snapshot's whole subtree, fetched in one `manifest` round trip. Its content never
  // changes; only the binding of its name to a sequence is leased (deleting or re-creating
  // the snapshot revokes it), so reads at a pinned snapshot cost no round trip per file.
  struct SnapshotView {
    uint64_t sequence = 0;
    std::string root;                             // the hub directory it covers
    std::map<std::string, CachedLookup> entries;  // by path below the root ("" = the root)
  };

  // The view of snapshot `name`, fetched or revalidated as needed; null when it is too large
  // to pin (reads then use leased lookups like the live tree).
  Result<std::shared_ptr<const SnapshotView>> Pinned(const std::string& name) {
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
        ++metadata_hits_;
        return view;
      }
    }
    ++metadata_misses_;
    const MetaCache::Ticket ticket = cache_.Begin(key, Now());
    json args = {{"snapshot", name}};
    if (view) args["if_sequence"] = view->sequence;
    Result<json> reply = hub_->Call("manifest", args);
    if (!reply.ok()) {
      if (reply.status().message().starts_with("TooLarge")) {
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

  // A read target: what the hub says about it, and the hub path chunks are fetched by.
  struct Resolved {
    CachedLookup lookup;
    std::string fetch_path;
    std::shared_ptr<const SnapshotView> view;  // set for reads at a pinned snapshot
    std::string rel;                           // below view->root
  };

  // Metadata of many local paths: leased answers where cached, batched lookups of up to
  // kMaxLookupBatch for the rest (snapshot paths resolve through their pinned views).
  std::vector<Result<Resolved>> ResolveAll(const std::vector<std::string>& paths) {
    std::vector<Result<Resolved>> out(paths.size(), Internal("not resolved"));
    std::vector<Resolved> resolved(paths.size());
    std::vector<bool> have(paths.size(), false);
    std::vector<size_t> ask;
    for (size_t i = 0; i < paths.size(); ++i) {
      Result<Mapped> m = Map(paths[i]);
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
        ++metadata_hits_;
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
      metadata_misses_ += end - start;
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
        }
        cache_.InstallLookup(tickets[k - start], one.value("lease_ms", int64_t{0}), Now(),
                             resolved[i].fetch_path, result);
        resolved[i].lookup = std::move(result);
        have[i] = true;
      }
    }
    for (size_t i = 0; i < paths.size(); ++i) {
      if (have[i]) out[i] = std::move(resolved[i]);
    }
    return out;
  }

  Result<Resolved> Resolve(const Mapped& m, const std::optional<std::string>& snapshot,
                           bool for_read = false) {
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
    WEFT_ASSIGN_OR_RETURN(r.lookup, LookupHub(m.hub, snapshot, for_read));
    r.fetch_path = m.hub;
    return r;
  }

  // A directory of a pinned snapshot, paged like ReadDir.
  static ReadDirPage ListPinned(const SnapshotView& view, const std::string& rel,
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

  // The hub refuses a spoke what is resident elsewhere; the spoke refuses it as well, should
  // a restricted directory's info reach it anyway (a hub of an older version, a bug).
  Status CheckResident(const std::string& local, const FileInfo& info) const {
    auto it = info.attributes.find(kResidencyAttribute);
    if (info.type != FileType::kDirectory || it == info.attributes.end() ||
        SiteMayHold(options_.tags, SplitSiteTags(it->second))) {
      return OkStatus();
    }
    return PermissionDenied("AccessDenied: " + local + " is resident to sites tagged '" +
                            it->second + "'; this site is not");
  }

  Result<ReadDirPage> ReadDir(const RequestContext&, const std::string& path,
                              const ReadDirOptions& opts) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, Map(path));
    if (m.virtual_dir) return VirtualListing(m.local, opts);
    ReadDirPage page;
    WEFT_ASSIGN_OR_RETURN(Resolved r, Resolve(m, opts.snapshot));
    if (r.view) {
      if (!r.lookup.status.ok()) {
        return Status(r.lookup.status.code(), m.local + ": " + StripPath(r.lookup.status));
      }
      if (r.lookup.info.type != FileType::kDirectory) {
        return NotADirectory(m.local + ": not a directory");
      }
      page = ListPinned(*r.view, r.rel, opts);
    } else {
      WEFT_ASSIGN_OR_RETURN(page, ListHub(m.hub, opts));
    }
    std::erase_if(page.entries, [&](const DirEntry& e) {
      return e.info && !CheckResident(m.local, *e.info).ok();
    });
    std::vector<FileInfo> files;
    for (DirEntry& e : page.entries) {
      if (!e.info) continue;
      e.info->path = Join(m.local, "/" + e.name);
      if (neural_ && !opts.snapshot && e.type == FileType::kFile) files.push_back(*e.info);
    }
    if (!files.empty()) neural_->OnListing(m.local, files);
    return page;
  }

  Result<std::unique_ptr<FileReader>> OpenReader(const RequestContext& ctx, const std::string& path,
                                                 const ReadOptions& opts) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, Map(path));
    if (m.virtual_dir) return IsADirectory(m.local + ": is a directory");
    WEFT_ASSIGN_OR_RETURN(Resolved r, Resolve(m, opts.snapshot, /*for_read=*/true));
    CachedLookup& l = r.lookup;
    if (!l.status.ok()) return Status(l.status.code(), m.local + ": " + StripPath(l.status));
    if (l.info.type == FileType::kDirectory) return IsADirectory(m.local + ": is a directory");
    return std::unique_ptr<FileReader>(new PortalFileReader(
        this, Localise(l.info, m.local), r.fetch_path, std::move(l.chunks), JobOf(ctx)));
  }

  Result<std::unique_ptr<FileReader>> OpenVersion(const RequestContext& ctx,
                                                  const std::string& path,
                                                  const std::string& version_id) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, Map(path));
    if (m.virtual_dir) return IsADirectory(m.local + ": is a directory");
    // A version is immutable: no lease, no cache of its metadata needed beyond the reader.
    WEFT_ASSIGN_OR_RETURN(json reply,
                          hub_->Call("lookup", {{"path", m.hub}, {"version", version_id}}));
    WEFT_ASSIGN_OR_RETURN(FileInfo info, InfoFromJson(reply.at("info")));
    WEFT_ASSIGN_OR_RETURN(std::vector<ChunkRef> chunks, ChunksFromJson(reply.at("chunks")));
    return std::unique_ptr<FileReader>(
        new PortalFileReader(this, Localise(info, m.local), m.hub, std::move(chunks), JobOf(ctx)));
  }

  Result<std::unique_ptr<FileWriter>> OpenWriter(const RequestContext& ctx, const std::string& path,
                                                 const WriteOptions& opts) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, Map(path));
    if (m.virtual_dir || IsAtOrUnder(m.local, "/.weft")) return NotWritable(m);
    return std::unique_ptr<FileWriter>(new PortalFileWriter(this, ctx, m.local, m.hub, opts));
  }

  Result<std::vector<FileInfo>> CommitAll(
      const RequestContext&, std::vector<std::unique_ptr<FileWriter>> writers) override {
    if (writers.size() == 1) {
      WEFT_ASSIGN_OR_RETURN(FileInfo info, writers[0]->Commit());
      return std::vector<FileInfo>{info};
    }
    // A hub commit is one file; committing several atomically needs a batch call.
    return Unimplemented("a spoke commits one file at a time; commit each writer");
  }

  Result<FileInfo> Mkdir(const RequestContext&, const std::string& path, uint32_t mode,
                         bool parents) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, Map(path));
    if (m.virtual_dir) {
      if (parents) return VirtualInfo(m.local);
      return AlreadyExists(m.local + ": exists");
    }
    WEFT_ASSIGN_OR_RETURN(
        json reply,
        Forward({{"op", "mkdir"}, {"path", m.hub}, {"mode", mode}, {"parents", parents}},
                AffectedByWrite(m.hub, parents)));
    WEFT_ASSIGN_OR_RETURN(FileInfo info, InfoFromJson(reply.at("info")));
    return Localise(info, m.local);
  }

  Result<FileInfo> Symlink(const RequestContext&, const std::string& path,
                           const std::string& target) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, Map(path));
    if (m.virtual_dir) return NotWritable(m);
    WEFT_ASSIGN_OR_RETURN(json reply,
                          Forward({{"op", "symlink"}, {"path", m.hub}, {"target", target}},
                                  AffectedByWrite(m.hub, false)));
    WEFT_ASSIGN_OR_RETURN(FileInfo info, InfoFromJson(reply.at("info")));
    return Localise(info, m.local);
  }

  Status Rename(const RequestContext&, const std::string& from, const std::string& to) override {
    WEFT_ASSIGN_OR_RETURN(Mapped f, Map(from));
    WEFT_ASSIGN_OR_RETURN(Mapped t, Map(to));
    if (f.virtual_dir) return NotWritable(f);
    if (t.virtual_dir) return NotWritable(t);
    return Forward({{"op", "rename"}, {"from", f.hub}, {"to", t.hub}},
                   AffectedByRename(f.hub, t.hub))
        .status();
  }

  Status Unlink(const RequestContext&, const std::string& path) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, Map(path));
    if (m.virtual_dir) return NotWritable(m);
    return Forward({{"op", "unlink"}, {"path", m.hub}}, AffectedByWrite(m.hub, false)).status();
  }

  Status Rmdir(const RequestContext&, const std::string& path) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, Map(path));
    if (m.virtual_dir) return NotWritable(m);
    return Forward({{"op", "rmdir"}, {"path", m.hub}}, AffectedByRemoveDir(m.hub)).status();
  }

  Result<FileInfo> SetAttr(const RequestContext&, const std::string& path,
                           const SetAttrRequest& req) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, Map(path));
    if (m.virtual_dir) return NotWritable(m);
    json args = {{"op", "setattr"}, {"path", m.hub}};
    if (req.mode) args["mode"] = *req.mode;
    if (req.uid) args["uid"] = *req.uid;
    if (req.gid) args["gid"] = *req.gid;
    if (req.mtime_ns) args["mtime_ns"] = *req.mtime_ns;
    if (req.attributes) args["attributes"] = *req.attributes;
    WEFT_ASSIGN_OR_RETURN(json reply, Forward(args, AffectedBySetAttr(m.hub)));
    WEFT_ASSIGN_OR_RETURN(FileInfo info, InfoFromJson(reply.at("info")));
    return Localise(info, m.local);
  }

  Result<SnapshotInfo> CreateSnapshot(const RequestContext&, const std::string& name,
                                      const std::string& path) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, Map(path));
    if (m.virtual_dir) return NotWritable(m);
    WEFT_ASSIGN_OR_RETURN(json reply,
                          Forward({{"op", "snapshot_create"}, {"name", name}, {"path", m.hub}},
                                  AffectedBySnapshot(name)));
    WEFT_ASSIGN_OR_RETURN(SnapshotInfo snap, SnapshotFromJson(reply.at("snapshot")));
    snap.path = ToLocal(snap.path);
    return snap;
  }

  Result<std::vector<SnapshotInfo>> ListSnapshots(const RequestContext&) override {
    WEFT_ASSIGN_OR_RETURN(json reply, hub_->Call("call", {{"op", "snapshot_list"}}));
    std::vector<SnapshotInfo> out;
    for (const json& j : reply.at("snapshots")) {
      WEFT_ASSIGN_OR_RETURN(SnapshotInfo snap, SnapshotFromJson(j));
      snap.path = ToLocal(snap.path);
      if (!snap.path.empty()) out.push_back(std::move(snap));
    }
    return out;
  }

  Status DeleteSnapshot(const RequestContext&, const std::string& name) override {
    return Forward({{"op", "snapshot_delete"}, {"name", name}}, AffectedBySnapshot(name)).status();
  }

  Result<std::vector<VersionInfo>> ListVersions(const RequestContext&,
                                                const std::string& path) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, Map(path));
    if (m.virtual_dir) return IsADirectory(m.local + ": is a directory");
    WEFT_ASSIGN_OR_RETURN(json reply, hub_->Call("call", {{"op", "versions"}, {"path", m.hub}}));
    std::vector<VersionInfo> out;
    for (const json& j : reply.at("versions")) {
      WEFT_ASSIGN_OR_RETURN(VersionInfo v, VersionFromJson(j));
      out.push_back(std::move(v));
    }
    return out;
  }

  Status DeleteVersion(const RequestContext&, const std::string& path,
                       const std::string& version_id) override {
    WEFT_ASSIGN_OR_RETURN(Mapped m, Map(path));
    if (m.virtual_dir) return NotWritable(m);
    return Forward({{"op", "delete_version"}, {"path", m.hub}, {"version", version_id}},
                   AffectedByWrite(m.hub, false))
        .status();
  }

  Result<std::vector<ChunkId>> MissingChunks(const RequestContext&,
                                             const std::vector<ChunkId>& ids) override {
    // What matters is what the hub holds: this spoke's commits land there.
    WEFT_ASSIGN_OR_RETURN(std::string raw,
                          hub_->CallFramed("missing", json::object(), EncodeIds(ids)));
    return DecodeIds(raw);
  }

  Result<std::vector<Change>> ReadChanges(const RequestContext&, uint64_t after,
                                          uint32_t limit) override {
    WEFT_ASSIGN_OR_RETURN(
        json reply, hub_->Call("call", {{"op", "changes"}, {"after", after}, {"limit", limit}}));
    std::vector<Change> out;
    for (const json& j : reply.at("changes")) {
      WEFT_ASSIGN_OR_RETURN(Change c, ChangeFromJson(j));
      out.push_back(std::move(c));
    }
    return out;
  }

  Result<UsageInfo> Usage(const RequestContext&) override {
    WEFT_ASSIGN_OR_RETURN(json reply, hub_->Call("call", {{"op", "usage"}}));
    return UsageFromJson(reply.at("usage"));
  }

  Result<GcReport> CollectGarbage(const RequestContext&, const GcOptions&) override {
    return Unimplemented("garbage collection runs at the hub: run `weft gc` there");
  }

  Result<FsckReport> Fsck(const RequestContext&) override {
    // A spoke checks what it holds: every cached chunk against its id.
    FsckReport report;
    std::vector<ChunkProblem> problems;
    WEFT_RETURN_IF_ERROR(chunks_->Verify(&problems));
    report.chunks_checked = chunks_->Stats().chunks;
    for (const ChunkProblem& p : problems)
      report.problems.push_back(p.where + ": " + p.status.message());
    return report;
  }

  // Counters the reader and writer update.
  std::atomic<uint64_t> chunk_hits_ = 0;
  std::atomic<uint64_t> bytes_uploaded_ = 0;

 private:
  Result<json> Forward(const json& args, const Affected& affected) {
    Result<json> reply = hub_->Call("call", args);
    // Whatever the outcome, what this spoke knew about these directories may be stale now.
    Invalidate(affected);
    return reply;
  }

  static std::string StripPath(const Status& s) {
    // Hub messages name the hub path; keep the reason only ("...: no such file").
    std::string_view m = s.message();
    size_t colon = m.find(": ");
    return std::string(colon == std::string_view::npos ? m : m.substr(colon + 2));
  }

  FileInfo VirtualInfo(const std::string& local) const {
    FileInfo info;
    info.path = local;
    info.type = FileType::kDirectory;
    info.mode = 0555;
    return info;
  }

  Result<ReadDirPage> VirtualListing(const std::string& local, const ReadDirOptions& opts) const {
    std::set<std::string> names;
    for (const Portal& p : options_.portals) {
      if (p.local_path == local || !IsAtOrUnder(p.local_path, local)) continue;
      std::string rest = p.local_path.substr(local == "/" ? 1 : local.size() + 1);
      names.insert(rest.substr(0, rest.find('/')));
    }
    ReadDirPage page;
    for (const std::string& name : names) {
      if (name <= opts.start_after) continue;
      if (page.entries.size() == opts.limit) {
        page.truncated = true;
        break;
      }
      DirEntry e;
      e.name = name;
      e.type = FileType::kDirectory;
      if (opts.with_info) e.info = VirtualInfo(Join(local, "/" + name));
      page.entries.push_back(std::move(e));
    }
    return page;
  }

  std::unique_ptr<HubClient> hub_;
  PortalVolumeOptions options_;
  std::shared_ptr<BoundedChunkStore> bounded_;  // null without a cache limit
  std::shared_ptr<ChunkStore> chunks_;          // bounded_ or the store given

  MetaCache cache_;
  // Survives leases and invalidations: lookups name what the spoke holds (content_hints.h).
  ContentHints hints_{kHintedFiles, kHintedChunks};

  std::mutex pinned_mu_;
  std::map<std::string, std::shared_ptr<const SnapshotView>> pinned_;  // GUARDED_BY(pinned_mu_)
  std::set<std::string> unpinnable_;  // GUARDED_BY(pinned_mu_): too large to pin

  std::mutex hook_mu_;
  std::function<void(const Affected&)> hook_;

  std::atomic<bool> stop_ = false;
  std::thread poller_;
  std::thread renewer_;

  std::atomic<uint64_t> metadata_hits_ = 0;
  std::atomic<uint64_t> metadata_misses_ = 0;
  std::atomic<uint64_t> chunks_fetched_ = 0;
  std::atomic<uint64_t> bytes_fetched_ = 0;
  std::atomic<uint64_t> invalidations_ = 0;
  std::atomic<uint64_t> renewals_ = 0;
  std::atomic<uint64_t> stale_answers_ = 0;

  // Set once by Start, before any reader exists; destroyed first (its threads call in here).
  std::unique_ptr<NeuralCache> neural_;
};

// --- reader ---

Status PortalFileReader::Ensure(size_t first, size_t last, FetchedChunks* fetched) {
  for (size_t i = first; i <= last; ++i) fetched->emplace(chunks_[i].id, nullptr);
  std::vector<size_t> wanted;
  {
    std::lock_guard lock(mu_);
    size_t until = last + 1;
    if (offsets_[first] == next_offset_ && next_offset_ != 0) {
      // Sequential: fetch ahead, once per window.
      uint64_t ahead_end = offsets_[last + 1] + volume_->options().readahead_bytes;
      while (until < chunks_.size() && offsets_[until] < ahead_end) ++until;
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
  return volume_->FetchChunks(hub_path_, info_.version_id, chunks_, wanted, false, fetched);
}

void PortalFileReader::ReportRead(uint64_t offset, uint64_t length) {
  NeuralCache* neural = volume_->neural_cache();
  if (neural == nullptr) return;
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
    neural->OnRead(job_, info_, b, b, [this](uint32_t block) { return BlockChunkIds(block); });
  }
}

std::vector<ChunkId> PortalFileReader::BlockChunkIds(uint32_t block) const {
  std::vector<ChunkId> ids;
  for (size_t i : BlockChunkIndices(chunks_, block)) ids.push_back(chunks_[i].id);
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
  if (last > chunks_.size()) {
    return OutOfRange(info_.path + ": chunks up to " + std::to_string(last) + " of " +
                      std::to_string(chunks_.size()));
  }
  if (first >= last) return std::vector<std::shared_ptr<const std::string>>();
  ReportRead(offsets_[first], offsets_[last] - offsets_[first]);
  FetchedChunks fetched;
  WEFT_RETURN_IF_ERROR(Ensure(first, last - 1, &fetched).WithContext(info_.path));
  return Collect(first, last, [&](size_t i) { return ReadEnsuredChunk(i, fetched); });
}

Result<std::shared_ptr<const std::string>> PortalFileReader::ReadEnsuredChunk(
    size_t index, const FetchedChunks& fetched) {
  auto it = fetched.find(chunks_[index].id);
  if (it == fetched.end() || it->second == nullptr) return ReadChunk(index);
  if (it->second->size() != chunks_[index].length) {
    return Corruption(info_.path + ": chunk " + chunks_[index].id.ShortHex() +
                      " has the wrong length");
  }
  return it->second;
}

Result<std::shared_ptr<const std::string>> PortalFileReader::ReadChunk(size_t index) {
  if (index >= chunks_.size()) {
    return OutOfRange(info_.path + ": chunk " + std::to_string(index) + " of " +
                      std::to_string(chunks_.size()));
  }
  const ChunkRef& c = chunks_[index];
  Result<std::shared_ptr<const std::string>> data = volume_->chunk_store().GetShared(c.id);
  if (!data.ok() && data.status().code() == StatusCode::kNotFound) {
    // Evicted since (or while) it was fetched: fetch it again, even if the store still lists
    // it (an eviction round may be removing it right now), and take the fetched plaintext
    // rather than the store's copy, which the next round could evict before it is read.
    FetchedChunks fetched = {{c.id, nullptr}};
    WEFT_RETURN_IF_ERROR(volume_
                             ->FetchChunks(hub_path_, info_.version_id, chunks_, {index},
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

// --- writer ---

PortalFileWriter::PortalFileWriter(PortalVolumeImpl* volume, RequestContext ctx,
                                   std::string local_path, std::string hub_path, WriteOptions opts)
    : volume_(volume),
      ctx_(std::move(ctx)),
      local_path_(std::move(local_path)),
      hub_path_(std::move(hub_path)),
      opts_(std::move(opts)),
      splitter_(NewSplitter()) {}

std::unique_ptr<StreamSplitter> PortalFileWriter::NewSplitter() {
  return std::make_unique<StreamSplitter>(volume_->options().chunker, [this](ByteSpan chunk) {
    ChunkId id = ChunkId::Of(chunk);
    chunks_.push_back({id, static_cast<uint32_t>(chunk.size())});
    volume_->HoldChunk(id);
    held_.push_back(id);
    return volume_->chunk_store().Put(id, chunk).status();
  });
}

void PortalFileWriter::Abort() {
  done_ = true;
  volume_->ReleaseChunks(held_);
  held_.clear();
}

Status PortalFileWriter::Write(ByteSpan data) {
  WEFT_RETURN_IF_ERROR(Check());
  if (!opts_.etag) md5_.Update(data);
  size_ += data.size();
  return Fail(splitter_->Write(data));
}

Status PortalFileWriter::AppendFrom(FileReader& source) {
  WEFT_RETURN_IF_ERROR(Check());
  if (!opts_.etag) {
    return FailedPrecondition(
        "AppendFrom needs WriteOptions::etag: the content's MD5 is not computed");
  }
  auto* portal = dynamic_cast<PortalFileReader*>(&source);
  if (portal != nullptr && portal->owner() == volume_) {
    // The hub has these chunks: reference them, move no bytes.
    WEFT_RETURN_IF_ERROR(Fail(splitter_->Finish()));
    splitter_ = NewSplitter();
    chunks_.insert(chunks_.end(), portal->chunks().begin(), portal->chunks().end());
    size_ += portal->info().size;
    return OkStatus();
  }
  constexpr uint64_t kPiece = 1 << 20;
  for (uint64_t off = 0; off < source.info().size;) {
    Result<std::string> piece = source.ReadAt(off, std::min(kPiece, source.info().size - off));
    if (!piece.ok()) return Fail(piece.status());
    if (piece->empty()) return Fail(OutOfRange(source.info().path + ": ended early"));
    WEFT_RETURN_IF_ERROR(Write(AsBytes(*piece)));
    off += piece->size();
  }
  return OkStatus();
}

Status PortalFileWriter::AppendChunk(const ChunkRef& chunk, std::optional<ByteSpan> data) {
  WEFT_RETURN_IF_ERROR(Check());
  if (!opts_.etag) {
    return Fail(
        FailedPrecondition("AppendChunk needs WriteOptions::etag: no MD5 is computed for it"));
  }
  WEFT_RETURN_IF_ERROR(Fail(splitter_->Finish()));
  splitter_ = NewSplitter();
  if (data) {
    if (data->size() != chunk.length || ChunkId::Of(*data) != chunk.id) {
      return Fail(InvalidArgument(local_path_ + ": chunk " + chunk.id.ShortHex() +
                                  " does not match its bytes"));
    }
    volume_->HoldChunk(chunk.id);
    held_.push_back(chunk.id);
    WEFT_RETURN_IF_ERROR(Fail(volume_->chunk_store().Put(chunk.id, *data).status()));
  }
  chunks_.push_back(chunk);
  size_ += chunk.length;
  return OkStatus();
}

Status PortalFileWriter::WriteZeros(uint64_t length) {
  WEFT_RETURN_IF_ERROR(Check());
  if (length == 0) return OkStatus();
  hole_bytes_ += length;
  if (!opts_.etag && hole_bytes_ <= kMaxHoleMd5Bytes) {
    const std::shared_ptr<const std::string> zeros = ZeroChunkBytes(1 << 20);
    for (uint64_t left = length; left > 0;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(left, zeros->size()));
      md5_.Update(AsBytes(std::string_view(*zeros).substr(0, n)));
      left -= n;
    }
  }
  // The hub and this spoke answer zero chunks themselves: nothing to store, hold or send.
  WEFT_RETURN_IF_ERROR(Fail(splitter_->Finish()));
  splitter_ = NewSplitter();
  ForEachZeroChunk(length, [&](const ChunkId& id, uint32_t n) { chunks_.push_back({id, n}); });
  size_ += length;
  return OkStatus();
}

Result<FileInfo> PortalFileWriter::Commit() {
  WEFT_RETURN_IF_ERROR(Check());
  WEFT_RETURN_IF_ERROR(Fail(splitter_->Finish()));
  done_ = true;
  // The chunks may be evicted once the hub has them (or the commit failed for good).
  struct Unhold {
    PortalFileWriter* w;
    ~Unhold() {
      w->volume_->ReleaseChunks(w->held_);
      w->held_.clear();
    }
  } unhold{this};
  std::string etag;
  if (opts_.etag) {
    etag = *opts_.etag;
  } else if (hole_bytes_ > kMaxHoleMd5Bytes) {
    etag = ChunksEtag(chunks_);
  } else {
    auto digest = md5_.Finish();
    etag = ToHex(ByteSpan(digest.data(), digest.size()));
  }
  WEFT_ASSIGN_OR_RETURN(FileInfo info, volume_->CommitAtHub(hub_path_, opts_, etag, chunks_));
  info.path = local_path_;
  return info;
}

}  // namespace

Result<Portal> ParsePortal(const std::string& text) {
  size_t colon = text.find(':');
  Portal p;
  WEFT_ASSIGN_OR_RETURN(p.hub_path, Normalise(text.substr(0, colon)));
  if (colon == std::string::npos) {
    p.local_path = p.hub_path;
  } else {
    WEFT_ASSIGN_OR_RETURN(p.local_path, Normalise(text.substr(colon + 1)));
  }
  if (IsAtOrUnder(p.local_path, "/.weft")) {
    return InvalidArgument("portal " + text + ": /.weft is reserved for snapshots");
  }
  return p;
}

Result<std::unique_ptr<PortalVolume>> PortalVolume::Open(std::unique_ptr<HubClient> hub,
                                                         std::shared_ptr<ChunkStore> chunks,
                                                         PortalVolumeOptions options) {
  if (options.portals.empty()) return InvalidArgument("a spoke needs at least one --portal");
  for (size_t i = 0; i < options.portals.size(); ++i) {
    for (size_t j = 0; j < options.portals.size(); ++j) {
      if (i != j && IsAtOrUnder(options.portals[i].local_path, options.portals[j].local_path)) {
        return InvalidArgument("portals " + options.portals[i].local_path + " and " +
                               options.portals[j].local_path + " overlap");
      }
      // One hub directory shown at two places would need every invalidation mapped to both.
      if (i != j && IsAtOrUnder(options.portals[i].hub_path, options.portals[j].hub_path)) {
        return InvalidArgument("portals of hub " + options.portals[i].hub_path + " and " +
                               options.portals[j].hub_path + " overlap");
      }
    }
  }
  auto volume = std::make_unique<PortalVolumeImpl>(std::move(hub), std::move(chunks), options);
  WEFT_RETURN_IF_ERROR(volume->Start());
  return std::unique_ptr<PortalVolume>(std::move(volume));
}

}  // namespace weft::fabric
