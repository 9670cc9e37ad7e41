#include "fabric/hub_service.h"

#include <openssl/rand.h>

#include <array>
#include <set>
#include <unordered_map>

#include "base/bytes.h"
#include "fabric/internal/dir_changes.h"
#include "fabric/wire.h"
#include "vfs/path.h"
#include "vfs/residency.h"

namespace weft::fabric {
namespace {

// Appends chunk i of `file` as a frame: a delta against chunks `base_indices` of `base` (the
// spoke holds them) where that pays. A base that cannot be read is left out.
Status AppendFrame(FileReader& file, size_t i, FileReader* base,
                   const std::vector<size_t>& base_indices, std::string* out,
                   bool compress = true) {
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const std::string> data, file.ReadChunk(i));
  std::vector<std::shared_ptr<const std::string>> held;
  std::vector<DeltaBase> bases;
  for (size_t j : base_indices) {
    if (base == nullptr || j >= base->chunks().size()) continue;
    if (auto read = base->ReadChunk(j); read.ok()) {
      held.push_back(*read);
      bases.push_back(DeltaBase{base->chunks()[j].id, *held.back()});
    }
  }
  AppendChunkFrame(file.chunks()[i].id, *data, out, bases, compress);
  return OkStatus();
}

// A fetch batch goes compressed when that saves this much.
constexpr double kMinStreamSaving = 0.005;

// Whether the caller asked for compressed answers. Outside Dispatch's parse errors: a flag that
// is not a boolean is not a request for zstd.
bool WantsZstd(const json& args) {
  return args.is_object() && args.contains("zstd") && args["zstd"].is_boolean() &&
         args["zstd"].get<bool>();
}

int HttpStatusOf(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kPermissionDenied:
      return s.reason() == Reason::kUnauthenticated ? 401 : 403;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kNotADirectory:
    case StatusCode::kIsADirectory:
    case StatusCode::kNotEmpty:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kAborted:
      return 409;
    case StatusCode::kResourceExhausted:
      return 507;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kUnimplemented:
      return 501;
    default:
      return 500;
  }
}

std::string NewId() {
  std::array<unsigned char, 16> raw{};
  RAND_bytes(raw.data(), raw.size());
  return ToHex(ByteSpan(raw.data(), raw.size()));
}

Result<std::string> NormalisePath(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(auto segments, SplitPath(path));
  return JoinPath(segments);
}

// The lease key of a read: the live path, or its snapshot form, so that deleting a snapshot
// revokes exactly its keys (AffectedBySnapshot).
std::string LeaseKey(const std::string& dir, const std::optional<std::string>& snapshot) {
  if (!snapshot) return dir;
  return "/.weft/snapshots/" + *snapshot + (dir == "/" ? "" : dir);
}

// The list `name` of a batched call: at most kMaxLookupBatch entries.
Result<const json*> BatchArg(const json& args, const char* name) {
  const json& list = args.at(name);
  if (!list.is_array() || list.size() > kMaxLookupBatch) {
    return InvalidArgument("'" + std::string(name) + "' must be a list of at most " +
                           std::to_string(kMaxLookupBatch) + " entries");
  }
  return &list;
}

std::optional<std::string> OptionalString(const json& args, const char* key) {
  if (!args.contains(key) || args.at(key).is_null()) return std::nullopt;
  return args.at(key).get<std::string>();
}

}  // namespace

// One request: its parsed parts and where the answer goes.
struct HubService::Call {
  const net::HttpRequest& http;
  net::BodyReader& body;
  std::string op{};
  RequestContext ctx{.principal = ""};  // nobody until the token is checked
  json args{};                          // the JSON header (or whole JSON body)
  std::string payload{};                // binary bytes after a framed header
  json reply = json::object();
  std::optional<std::string> binary_reply{};
  std::string binary_type = "application/octet-stream";
  // Chunk frames sent after the JSON reply (a lookup with its small file's bytes inline).
  std::optional<std::string> frames_reply{};
};

// A chunk upload for one commit: a writer that is never committed holds the uploaded chunks
// against garbage collection until the commit that references them (or until it idles out).
struct HubService::Upload {
  std::mutex mu;
  std::string user;
  std::string path;
  std::unique_ptr<FileWriter> staging;  // GUARDED_BY(mu)
  std::chrono::steady_clock::time_point last_used;
};

HubService::HubService(access::AuthorizedVolume* volume, LeaseTable* leases,
                       HubServiceOptions options, UpstreamLeases* upstream)
    : volume_(volume), leases_(leases), options_(options), upstream_(upstream) {}

std::chrono::milliseconds HubService::GrantAround(const std::string& spoke, const std::string& key,
                                                  const std::function<void()>& read) {
  const uint64_t epoch = upstream_ != nullptr ? upstream_->Epoch(key) : 0;
  auto lease = leases_->Grant(spoke, key);
  read();
  if (upstream_ != nullptr) lease = std::min(lease, upstream_->Remaining(key, epoch));
  return lease;
}

HubService::~HubService() = default;

void HubService::Handle(const net::HttpRequest& request, net::BodyReader& body,
                        net::ResponseWriter& response) {
  Call call{request, body};
  Status s = Dispatch(call);
  // Calls that only read answer without waiting for their audit record to reach the file.
  static const std::set<std::string, std::less<>> kReads = {
      "dir", "events", "fetch", "list", "lookup", "manifest", "missing", "renew", "spokes"};
  response.Describe({call.ctx.principal, call.op, call.ctx.site, "",
                     !kReads.contains(std::string_view(call.op))});
  if (response.started()) return;
  if (s.ok() && call.binary_reply) {
    (void)response.Send(200, {{"Content-Type", call.binary_type}}, *call.binary_reply);
    return;
  }
  if (s.ok() && call.frames_reply) {
    const std::string head = DumpJson(call.reply);
    std::string framed;
    PutBigEndian32(&framed, static_cast<uint32_t>(head.size()));
    framed += head;
    framed += *call.frames_reply;
    (void)response.Send(200, {{"Content-Type", std::string(kFramedContentType)}}, framed);
    return;
  }
  const int status = s.ok() ? 200 : HttpStatusOf(s);
  if (!s.ok()) call.reply["error"] = StatusToJson(s);
  std::vector<net::HttpHeader> headers = {{"Content-Type", "application/json"}};
  if (status == 401) headers.push_back({"WWW-Authenticate", "Bearer realm=\"weft\""});
  std::string text = DumpJson(call.reply);
  if (WantsZstd(call.args)) {
    if (std::optional<std::string> compressed = CompressAnswer(text)) {
      headers[0].value = std::string(kZstdJsonContentType);
      text = std::move(*compressed);
    }
  }
  (void)response.Send(status, headers, text);
}

Status HubService::Dispatch(Call& call) {
  std::string_view path = call.http.path;
  if (!path.starts_with(kFabricPrefix)) return NotFound("no such fabric endpoint");
  call.op = std::string(path.substr(kFabricPrefix.size()));
  if (call.http.method != "POST" && !(call.http.method == "GET" && call.op == "spokes")) {
    return InvalidArgument("fabric endpoints take POST (GET for spokes)");
  }
  if (call.op != "token") {
    WEFT_ASSIGN_OR_RETURN(
        call.ctx.principal,
        auth::AuthenticateBearer(call.http.Header("Authorization"), volume_->identities(),
                                 "get one with POST " + std::string(kFabricPrefix) + "token"));
  }
  call.ctx.protocol = "fabric";
  // One request, many volume calls (a directory answer opens its small files): each directory
  // is checked for this site once.
  call.ctx.memo = std::make_shared<AccessMemo>();
  if (call.op == "spokes") return ListSpokes(call);

  // The body: JSON, or (commit, upload, missing) a length-prefixed JSON header and bytes.
  if (call.http.content_length && *call.http.content_length > options_.max_body_bytes) {
    return InvalidArgument("request body larger than " + std::to_string(options_.max_body_bytes));
  }
  std::string raw;
  std::array<char, 64 << 10> buffer;
  while (true) {
    WEFT_ASSIGN_OR_RETURN(size_t n, call.body.Read(buffer));
    if (n == 0) break;
    if (raw.size() + n > options_.max_body_bytes) {
      return InvalidArgument("request body larger than " + std::to_string(options_.max_body_bytes));
    }
    raw.append(buffer.data(), n);
  }
  std::string_view header = raw;
  const bool framed = call.op == "commit" || call.op == "upload" || call.op == "missing";
  if (framed) {
    if (raw.size() < 4) return InvalidArgument("framed body without its header length");
    uint32_t len = GetBigEndian32(raw.data());
    if (len > raw.size() - 4) return InvalidArgument("framed body shorter than its header");
    header = std::string_view(raw).substr(4, len);
    call.payload = raw.substr(4 + len);
  }
  WEFT_ASSIGN_OR_RETURN(call.args, ParseJson(header));
  if (!call.args.is_object()) return InvalidArgument("the request must be a JSON object");

  try {
    if (call.op == "token") return IssueToken(call);
    if (call.op == "attach") return Attach(call);
    // Every other call names the spoke it comes from, which must be this user's.
    WEFT_ASSIGN_OR_RETURN(SpokeRecord spoke,
                          FindSpoke(call, call.args.at("spoke").get<std::string>()));
    call.ctx.site = spoke.site;
    call.ctx.site_tags = spoke.tags;
    if (call.op == "events") return Events(call);
    if (call.op == "lookup") return Lookup(call);
    if (call.op == "renew") return Renew(call);
    if (call.op == "list") return List(call);
    if (call.op == "dir") return Dir(call);
    if (call.op == "fetch") return Fetch(call);
    if (call.op == "missing") return Missing(call);
    if (call.op == "upload") return UploadChunks(call);
    if (call.op == "commit") return Commit(call);
    if (call.op == "call") return Forward(call);
    if (call.op == "manifest") return Manifest(call);
  } catch (const json::exception& e) {
    return InvalidArgument("malformed " + call.op + " request: " + e.what());
  }
  return NotFound("no fabric endpoint '" + call.op + "'");
}

Result<SpokeRecord> HubService::FindSpoke(const Call& call, const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = spokes_.find(id);
  if (it == spokes_.end() || it->second.user != call.ctx.principal) {
    return FailedPrecondition(
        Reason::kUnknownSpoke,
        "spoke '" + id.substr(0, 40) + "' is not attached for this user; attach again");
  }
  return it->second;
}

Status HubService::IssueToken(Call& call) {
  constexpr int64_t kTokenTtlNs = 3600LL * 1'000'000'000;
  WEFT_ASSIGN_OR_RETURN(auth::BearerToken token,
                        auth::IssueTokenForKey(
                            volume_->identities(), call.args.at("access_key_id").get<std::string>(),
                            call.args.at("secret_access_key").get<std::string>(), kTokenTtlNs));
  call.reply = {{"token", token.token}, {"user", token.user}, {"expires_in", 3600}};
  return OkStatus();
}

Status HubService::Attach(Call& call) {
  SpokeRecord rec;
  rec.user = call.ctx.principal;
  rec.site = call.args.at("site").get<std::string>();
  if (rec.site.empty() || rec.site.size() > 64) return InvalidArgument("site must be 1..64 bytes");
  rec.tags = call.args.value("tags", std::vector<std::string>{});
  for (const std::string& tag : rec.tags) WEFT_RETURN_IF_ERROR(ValidateSiteTag(tag));
  RequestContext site_ctx = call.ctx;
  site_ctx.site = rec.site;
  site_ctx.site_tags = rec.tags;
  for (const std::string& p : call.args.value("portals", std::vector<std::string>{})) {
    WEFT_ASSIGN_OR_RETURN(std::string portal, NormalisePath(p));
    WEFT_RETURN_IF_ERROR(
        volume_->Check(site_ctx, auth::kRead | auth::kList, portal == "/" ? "/" : portal + "/"));
    rec.portals.push_back(portal);
  }
  rec.id = NewId();
  PruneForgotten();
  rec.attached_ns = options_.clock->NowNanos();
  {
    std::lock_guard lock(mu_);
    spokes_[rec.id] = rec;
  }
  if (options_.on_attach) WEFT_RETURN_IF_ERROR(options_.on_attach());
  call.reply = {
      {"spoke", rec.id}, {"lease_ms", leases_->lease_length().count()}, {"user", rec.user}};
  return OkStatus();
}

Status HubService::Events(Call& call) {
  const std::string spoke = call.args.at("spoke").get<std::string>();
  uint64_t ack = call.args.value("ack", uint64_t{0});
  if (call.args.value("ack_spoke", spoke) != spoke) ack = 0;  // counted under a forgotten id
  auto wait = std::min(std::chrono::milliseconds(call.args.value("wait_ms", int64_t{0})),
                       options_.max_poll_wait);
  // A waiting poll holds a server worker: beyond max_waiting_polls, answer at once and tell
  // the spoke when to ask again, so that many spokes cannot take every worker.
  const bool may_wait = ++waiting_polls_ <= options_.max_waiting_polls;
  if (!may_wait) wait = std::chrono::milliseconds(0);
  json list = json::array();
  for (const Invalidation& inv : leases_->Poll(spoke, ack, wait)) {
    list.push_back({{"seq", inv.seq}, {"dirs", inv.dirs}, {"subtrees", inv.subtrees}});
  }
  --waiting_polls_;
  call.reply = {{"invalidations", list}};
  if (!may_wait) call.reply["retry_ms"] = options_.busy_poll_retry.count();
  return OkStatus();
}

Status HubService::Lookup(Call& call) {
  const std::string spoke = call.args.at("spoke").get<std::string>();
  if (!call.args.contains("paths")) {
    return LookupOne(call, spoke, call.args, &call.reply, &call.frames_reply);
  }
  // A batch (a spoke prefetching many files): one answer per path, each with its own lease
  // or error, so one missing file does not fail the others.
  WEFT_ASSIGN_OR_RETURN(const json* paths, BatchArg(call.args, "paths"));
  json results = json::array();
  for (const json& p : *paths) {
    json one = json::object();
    Status s = LookupOne(call, spoke, json{{"path", p}}, &one, nullptr);
    if (!s.ok()) one["error"] = StatusToJson(s);
    results.push_back(std::move(one));
  }
  call.reply["results"] = std::move(results);
  return OkStatus();
}

// Renews the leases a spoke still holds on directories it is reading (`dirs`, as leased):
// one round trip keeps a working set's metadata, where letting the leases lapse would cost a
// lookup per file. Reveals nothing: only a lease already granted (hence authorised) is
// extended, and each answer is just its new length (0: not held, or being revoked).
Status HubService::Renew(Call& call) {
  const std::string spoke = call.args.at("spoke").get<std::string>();
  WEFT_ASSIGN_OR_RETURN(const json* dirs, BatchArg(call.args, "dirs"));
  json results = json::array();
  for (const json& d : *dirs) {
    const std::string key = d.get<std::string>();
    const uint64_t epoch = upstream_ != nullptr ? upstream_->Epoch(key) : 0;
    auto lease = leases_->Renew(spoke, key);
    if (upstream_ != nullptr) lease = std::min(lease, upstream_->Remaining(key, epoch));
    results.push_back(lease.count());
  }
  call.reply["lease_ms"] = std::move(results);
  return OkStatus();
}

Status HubService::LookupOne(Call& call, const std::string& spoke, const json& args, json* reply,
                             std::optional<std::string>* frames) {
  WEFT_ASSIGN_OR_RETURN(std::string path, NormalisePath(args.at("path").get<std::string>()));
  ReadOptions opts;
  opts.snapshot = OptionalString(args, "snapshot");
  WEFT_RETURN_IF_ERROR(volume_->CheckNode(call.ctx, auth::kRead, path, opts));
  if (auto version = OptionalString(args, "version")) {
    // A version never changes: no lease.
    WEFT_ASSIGN_OR_RETURN(auto reader, OpenVersion(call.ctx, path, *version));
    (*reply)["info"] = InfoToJson(reader->info());
    (*reply)["chunks"] = ChunksToJson(reader->chunks());
    return OkStatus();
  }
  Result<FileInfo> info = Internal("not read");
  std::vector<ChunkRef> chunks;
  std::unique_ptr<FileReader> file;
  auto lease = GrantAround(spoke, LeaseKey(ParentDir(path), opts.snapshot), [&] {
    info = volume_->Stat(call.ctx, path, opts);
    if (info.ok() && info->type == FileType::kFile) {
      Result<std::unique_ptr<FileReader>> reader = volume_->OpenReader(call.ctx, path, opts);
      info = reader.ok() ? Result<FileInfo>((*reader)->info()) : reader.status();
      if (reader.ok()) {
        chunks = (*reader)->chunks();
        file = std::move(*reader);
      }
    }
  });
  (*reply)["lease_ms"] = lease.count();
  if (!info.ok()) return info.status();  // NotFound keeps its lease: absence is cached too
  (*reply)["info"] = InfoToJson(*info);
  if (info->type != FileType::kFile) return OkStatus();
  // The spoke knows the chunks of the version it names: a file unchanged since costs its
  // info only (a 4 MB tar shard's list is ~10 KB even compressed).
  if (OptionalString(args, "known_version") == info->version_id) {
    (*reply)["chunks_unchanged"] = true;
  } else {
    (*reply)["chunks"] = ChunksToJson(chunks);
  }
  // A spoke about to read a small file takes its bytes along: one round trip, not two. The
  // chunks are named by their bytes, so they stay right whatever the lease does later.
  if (frames != nullptr && file) {
    WEFT_ASSIGN_OR_RETURN(*frames, InlineFrames(call, spoke, args, path, *file));
  }
  return OkStatus();
}

Result<std::optional<std::string>> HubService::InlineFrames(Call& call, const std::string& spoke,
                                                            const json& args,
                                                            const std::string& path,
                                                            FileReader& file) {
  const uint64_t inline_max =
      std::min<uint64_t>(args.value("inline_bytes", uint64_t{0}), kMaxInlineBytes);
  if (file.info().size > inline_max) return std::optional<std::string>();
  // Chunks the spoke says it holds (it read an earlier version, or this one before its lease
  // lapsed) stay out: a re-read of unchanged files moves metadata only.
  std::set<ChunkId> have;
  if (auto listed = args.find("have"); listed != args.end() && listed->is_array()) {
    for (const json& h : *listed) {
      if (have.size() >= kMaxHaveIds) break;
      if (!h.is_string()) return InvalidArgument("lookup: 'have' holds chunk ids in hex");
      std::optional<ChunkId> id = ChunkId::FromHex(h.get<std::string>());
      if (!id) return InvalidArgument("lookup: 'have' holds chunk ids in hex");
      have.insert(*id);
    }
  }
  // The rest goes as deltas against the chunks of the version the spoke holds them of, in the
  // same region (an edited or appended-to file costs about what changed).
  std::unique_ptr<FileReader> base;
  if (auto version = OptionalString(args, "base_version"); version && !have.empty()) {
    if (auto opened = OpenVersion(call.ctx, path, *version); opened.ok()) base = std::move(*opened);
  }
  const std::vector<uint64_t> base_ends =
      base ? ChunkEnds(base->chunks()) : std::vector<uint64_t>();
  const std::vector<ChunkRef>& chunks = file.chunks();
  std::string out;
  uint64_t offset = 0;
  for (size_t i = 0; i < chunks.size(); offset += chunks[i++].length) {
    if (have.contains(chunks[i].id)) continue;
    std::vector<size_t> held;
    for (size_t j :
         DeltaBaseIndices(base_ends, offset, offset + chunks[i].length, file.info().size)) {
      if (have.contains(base->chunks()[j].id)) held.push_back(j);
    }
    WEFT_RETURN_IF_ERROR(AppendFrame(file, i, base.get(), held, &out));
  }
  std::lock_guard lock(mu_);
  spokes_[spoke].bytes_sent += out.size();
  return std::optional<std::string>(std::move(out));
}

Result<std::unique_ptr<FileReader>> HubService::OpenVersion(const RequestContext& ctx,
                                                            const std::string& path,
                                                            const std::string& version) {
  if (!IsAtOrUnder(path, "/.weft/snapshots")) return volume_->OpenVersion(ctx, path, version);
  // A snapshot path names one version for good: open it there and check it is the one.
  WEFT_ASSIGN_OR_RETURN(auto reader, volume_->OpenReader(ctx, path));
  if (reader->info().version_id != version) {
    return NotFound(path + ": no version " + version + " (the snapshot was replaced)");
  }
  return reader;
}

Status HubService::Manifest(Call& call) {
  const std::string spoke = call.args.at("spoke").get<std::string>();
  const std::string name = call.args.at("snapshot").get<std::string>();
  WEFT_RETURN_IF_ERROR(ValidateName(name).WithContext("snapshot name"));
  const size_t max_entries = std::min<size_t>(call.args.value("max_entries", size_t{200'000}),
                                              options_.max_manifest_entries);
  // The name's binding to a sequence is what a spoke leases: deleting (or re-creating) the
  // snapshot revokes it. The content at that sequence never changes.
  std::optional<SnapshotInfo> snap;
  Status found = OkStatus();
  auto lease = GrantAround(spoke, "/.weft/snapshots", [&] {
    Result<std::vector<SnapshotInfo>> all = volume_->ListSnapshots(call.ctx);
    if (!all.ok()) {
      found = all.status();
      return;
    }
    for (const SnapshotInfo& s : *all) {
      if (s.name == name) snap = s;
    }
  });
  WEFT_RETURN_IF_ERROR(found);
  if (!snap) {
    // The list shows only snapshots the caller may list: one who may list "/" would have seen
    // it, so it does not exist; anyone else is refused without learning which.
    WEFT_RETURN_IF_ERROR(volume_->Check(call.ctx, auth::kList, "/"));
    return NotFound("snapshot '" + name + "' does not exist");
  }
  WEFT_RETURN_IF_ERROR(volume_->Check(call.ctx, auth::kRead | auth::kList,
                                      snap->path == "/" ? "/" : snap->path + "/"));
  call.reply["lease_ms"] = lease.count();
  call.reply["snapshot"] = SnapshotToJson(*snap);
  if (call.args.value("if_sequence", uint64_t{0}) == snap->sequence) {
    call.reply["unchanged"] = true;
    return OkStatus();
  }
  // The whole subtree as of the snapshot: every directory and file with its info, files with
  // their chunks. Directories resident elsewhere are left out, as in listings.
  const std::string root = "/.weft/snapshots/" + name;
  json entries = json::array();
  WEFT_ASSIGN_OR_RETURN(FileInfo root_info, volume_->Stat(call.ctx, root));
  entries.push_back({{"path", ""}, {"info", InfoToJson(root_info)}});
  std::vector<std::string> dirs = {""};
  while (!dirs.empty()) {
    const std::string rel = std::move(dirs.back());
    dirs.pop_back();
    ReadDirOptions opts;
    opts.with_info = true;
    opts.limit = 1000;
    for (bool more = true; more;) {
      WEFT_ASSIGN_OR_RETURN(
          ReadDirPage page,
          volume_->ReadDir(call.ctx, rel.empty() ? root : root + "/" + rel, opts));
      more = page.truncated;
      for (const DirEntry& e : page.entries) {
        opts.start_after = e.name;
        if (!e.info) continue;
        const std::string child = rel.empty() ? e.name : rel + "/" + e.name;
        if (e.type == FileType::kDirectory) {
          // Resident as of the snapshot, or in the live tree since: left out either way.
          if (!volume_->CheckResidency(call.ctx, root + "/" + child).ok()) {
            continue;
          }
          dirs.push_back(child);
        }
        json j = {{"path", child}, {"info", InfoToJson(*e.info)}};
        if (e.type == FileType::kFile) {
          WEFT_ASSIGN_OR_RETURN(auto reader, volume_->OpenReader(call.ctx, root + "/" + child));
          j["chunks"] = ChunksToJson(reader->chunks());
        }
        entries.push_back(std::move(j));
        if (entries.size() > max_entries) {
          return FailedPrecondition(Reason::kTooLarge, "snapshot '" + name + "' has more than " +
                                                           std::to_string(max_entries) +
                                                           " entries; list it instead");
        }
      }
    }
  }
  call.reply["entries"] = std::move(entries);
  return OkStatus();
}

Status HubService::List(Call& call) {
  const std::string spoke = call.args.at("spoke").get<std::string>();
  WEFT_ASSIGN_OR_RETURN(std::string path, NormalisePath(call.args.at("path").get<std::string>()));
  ReadDirOptions opts;
  opts.snapshot = OptionalString(call.args, "snapshot");
  opts.start_after = call.args.value("start_after", std::string());
  // A position that is not UTF-8 (an S3 listing seeks just before a prefix with 0xff bytes)
  // cannot travel as a JSON string.
  if (auto hex = OptionalString(call.args, "start_after_hex")) {
    std::optional<std::string> raw = FromHex(*hex);
    if (!raw) return InvalidArgument("list: start_after_hex is not hex");
    opts.start_after = std::move(*raw);
  }
  opts.limit = call.args.value("limit", uint32_t{1000});
  const bool with_info = call.args.value("with_info", false);
  opts.with_info = true;  // to see which subdirectories are resident elsewhere
  WEFT_RETURN_IF_ERROR(volume_->CheckNode(call.ctx, auth::kList, path, ReadOptions{opts.snapshot}));
  Result<ReadDirPage> listed = Internal("not read");
  auto lease = GrantAround(spoke, LeaseKey(path, opts.snapshot),
                           [&] { listed = volume_->ReadDir(call.ctx, path, opts); });
  call.reply["lease_ms"] = lease.count();
  WEFT_ASSIGN_OR_RETURN(ReadDirPage page, std::move(listed));
  json entries = json::array();
  bool withheld = false;
  for (const DirEntry& e : page.entries) {
    // Not even the name of a directory resident elsewhere leaves the hub.
    if (e.info && access::AuthorizedVolume::ResidentElsewhere(call.ctx, *e.info)) {
      withheld = true;
      continue;
    }
    json j = {{"name", e.name}, {"type", int(e.type)}, {"inode", e.inode}};
    if (e.info && with_info) j["info"] = InfoToJson(*e.info);
    entries.push_back(std::move(j));
  }
  call.reply["entries"] = std::move(entries);
  call.reply["truncated"] = page.truncated;
  // A spoke must not take a name missing from this page for one missing from the directory.
  if (withheld) call.reply["withheld"] = true;
  return OkStatus();
}

Status HubService::Dir(Call& call) {
  const std::string spoke = call.args.at("spoke").get<std::string>();
  WEFT_ASSIGN_OR_RETURN(std::string path, NormalisePath(call.args.at("path").get<std::string>()));
  const uint64_t chunks_max =
      std::min<uint64_t>(call.args.value("chunks_max_bytes", uint64_t{0}), kMaxInlineBytes);
  const std::optional<uint64_t> since = call.args.contains("since")
                                            ? std::optional(call.args.at("since").get<uint64_t>())
                                            : std::nullopt;
  WEFT_RETURN_IF_ERROR(volume_->CheckNode(call.ctx, auth::kList, path));
  // An entry as the spoke caches it; nullopt for a directory resident elsewhere (not even
  // its name leaves the hub). Chunk lists only of files the caller may read.
  bool withheld = false;
  // Only for a file the spoke read before (it names the chunks it holds of it): the chunks of
  // one it never read may be ones it holds under another name, and are fetched once listed.
  const std::optional<std::string> read =
      call.args.contains("have") ? OptionalString(call.args, "read") : std::nullopt;
  // A name in this directory, never a path below it (whose residency was not checked).
  if (read) WEFT_RETURN_IF_ERROR(ValidateName(*read));
  std::unique_ptr<FileReader> read_file;  // the reader of `read`, for its inline frames
  auto entry = [&](const std::string& name, const FileInfo& info) -> Result<std::optional<json>> {
    if (access::AuthorizedVolume::ResidentElsewhere(call.ctx, info)) {
      withheld = true;
      return std::optional<json>();
    }
    json j = {{"name", name}, {"info", InfoToJson(info)}};
    const std::string child = ChildPath(path, name);
    if (info.type == FileType::kFile && info.size <= chunks_max &&
        volume_->Allows(call.ctx, auth::kRead, child)) {
      Result<std::unique_ptr<FileReader>> reader = volume_->OpenReader(call.ctx, child);
      // Changed since the listing: the reader's own info goes with its chunks.
      if (reader.ok()) {
        j["info"] = InfoToJson((*reader)->info());
        j["chunks"] = ChunksToJson((*reader)->chunks());
        if (read && *read == name) read_file = std::move(*reader);
      }
    }
    return std::optional<json>(std::move(j));
  };
  json entries = json::array(), removed = json::array();
  uint64_t sequence = 0;
  bool delta = false, too_large = false;
  Status failed;
  auto lease = GrantAround(spoke, LeaseKey(path, std::nullopt), [&] {
    failed = [&]() -> Status {
      // The sequence first: every change after it is then in the feed read next.
      ReadDirOptions head;
      head.limit = 1;
      WEFT_ASSIGN_OR_RETURN(ReadDirPage now, volume_->ReadDir(call.ctx, path, head));
      if (since && now.sequence != 0 && *since <= now.sequence) {
        Result<std::vector<Change>> changes =
            volume_->ReadChanges(call.ctx, *since, kMaxDirChanges + 1);
        std::optional<ChildChanges> changed =
            changes.ok() ? ChangedChildren(path, *since, now.sequence, *changes) : std::nullopt;
        if (changed) {
          delta = true;
          sequence = std::max(changed->sequence, now.sequence);
          for (const std::string& name : changed->names) {
            Result<FileInfo> info = volume_->Stat(call.ctx, ChildPath(path, name));
            if (info.status().code() == StatusCode::kNotFound) {
              removed.push_back(name);
              continue;
            }
            WEFT_RETURN_IF_ERROR(info.status());
            WEFT_ASSIGN_OR_RETURN(std::optional<json> e, entry(name, *info));
            if (e) entries.push_back(std::move(*e));
          }
          return OkStatus();
        }
      }
      ReadDirOptions whole;
      whole.limit = kMaxDirEntries;
      whole.with_info = true;
      WEFT_ASSIGN_OR_RETURN(ReadDirPage page, volume_->ReadDir(call.ctx, path, whole));
      if (page.truncated) {
        too_large = true;
        return OkStatus();
      }
      sequence = page.sequence;
      for (const DirEntry& d : page.entries) {
        if (!d.info) continue;
        WEFT_ASSIGN_OR_RETURN(std::optional<json> e, entry(d.name, *d.info));
        if (e) entries.push_back(std::move(*e));
      }
      return OkStatus();
    }();
  });
  call.reply["lease_ms"] = lease.count();
  WEFT_RETURN_IF_ERROR(failed);
  if (too_large) {
    call.reply["too_large"] = true;
    return OkStatus();
  }
  call.reply["entries"] = std::move(entries);
  if (delta) {
    call.reply["since"] = *since;
    call.reply["removed"] = std::move(removed);
  }
  // A spoke keeps an answer as the base of the next only with a sequence, and only whole.
  if (!withheld) call.reply["sequence"] = sequence;
  if (withheld) call.reply["withheld"] = true;
  if (read && !read_file && !withheld &&
      volume_->Allows(call.ctx, auth::kRead, ChildPath(path, *read))) {
    // Unchanged since the spoke's manifest: its bytes too, less the chunks it says it holds
    // (a file its cache let go of since).
    if (auto reader = volume_->OpenReader(call.ctx, ChildPath(path, *read)); reader.ok()) {
      read_file = std::move(*reader);
    }
  }
  if (read_file) {
    WEFT_ASSIGN_OR_RETURN(call.frames_reply,
                          InlineFrames(call, spoke, call.args, ChildPath(path, *read), *read_file));
  }
  return OkStatus();
}

Status HubService::Fetch(Call& call) {
  const std::string spoke = call.args.at("spoke").get<std::string>();
  // Every file first, so the reply can be sized once: grown append by append, a 4 MiB batch
  // was copied again at each doubling into freshly faulted pages (a fifth of the CPU of a
  // spoke's first epoch, hub, spoke and WAN emulator together).
  struct Wanted {
    std::unique_ptr<FileReader> reader;
    const json* indices;
    // The spoke's earlier version and, by wanted index, the indices of its chunks to send a
    // delta against (the spoke holds them).
    std::unique_ptr<FileReader> base;
    std::unordered_map<size_t, std::vector<size_t>> base_of;
  };
  std::vector<Wanted> wanted;
  uint64_t plaintext_bytes = 0;
  for (const json& item : call.args.at("items")) {
    WEFT_ASSIGN_OR_RETURN(std::string path, NormalisePath(item.at("path").get<std::string>()));
    WEFT_RETURN_IF_ERROR(volume_->CheckNode(call.ctx, auth::kRead, path));
    WEFT_ASSIGN_OR_RETURN(auto reader,
                          OpenVersion(call.ctx, path, item.at("version").get<std::string>()));
    const json& indices = item.at("indices");
    for (const json& index : indices) {
      const size_t i = index.get<size_t>();
      if (i < reader->chunks().size()) {
        plaintext_bytes += reader->chunks()[i].length + kFrameHeaderBytes;
      }
    }
    Wanted w{std::move(reader), &indices, nullptr, {}};
    if (auto version = OptionalString(item, "base_version"); version && item.contains("bases")) {
      if (auto base = OpenVersion(call.ctx, path, *version); base.ok()) {
        w.base = std::move(*base);
        // [i, j, ...]: wanted chunk i against base chunks j... (one before kMaxDeltaBases).
        for (const json& pair : item.at("bases")) {
          std::vector<size_t>& js = w.base_of[pair.at(0).get<size_t>()];
          for (size_t k = 1; k < pair.size() && js.size() < kMaxDeltaBases; ++k) {
            const size_t j = pair.at(k).get<size_t>();
            if (j < w.base->chunks().size()) js.push_back(j);
          }
        }
      }
    }
    wanted.push_back(std::move(w));
  }
  // The frames raw, then compressed as one stream, for a spoke that takes that.
  const bool stream = WantsZstd(call.args);
  std::string out;
  out.reserve(std::min<uint64_t>(plaintext_bytes, options_.max_body_bytes));
  for (const Wanted& w : wanted) {
    for (const json& index : *w.indices) {
      const size_t i = index.get<size_t>();
      auto b = w.base_of.find(i);
      WEFT_RETURN_IF_ERROR(AppendFrame(*w.reader, i, w.base.get(),
                                       b == w.base_of.end() ? std::vector<size_t>() : b->second,
                                       &out, /*compress=*/!stream));
      if (out.size() > options_.max_body_bytes) {
        return InvalidArgument("fetch batch larger than " +
                               std::to_string(options_.max_body_bytes));
      }
    }
  }
  if (stream) {
    // Frames are raw here: even the few percent that tar headers and JSON between incompressible
    // samples make pay for a decompression on the spoke (a 4 MiB batch: ~4 ms).
    if (std::optional<std::string> compressed = CompressAnswer(out, kMinStreamSaving)) {
      out = std::move(*compressed);
      call.binary_type = std::string(kZstdFramesContentType);
    }
  }
  {
    std::lock_guard lock(mu_);
    spokes_[spoke].bytes_sent += out.size();
  }
  call.binary_reply = std::move(out);
  return OkStatus();
}

Status HubService::Missing(Call& call) {
  WEFT_ASSIGN_OR_RETURN(std::vector<ChunkId> ids, DecodeIds(call.payload));
  WEFT_ASSIGN_OR_RETURN(std::vector<ChunkId> missing, volume_->MissingChunks(call.ctx, ids));
  call.binary_reply = EncodeIds(missing);
  return OkStatus();
}

Status HubService::UploadChunks(Call& call) {
  const std::string spoke = call.args.at("spoke").get<std::string>();
  const std::string session = call.args.at("session").get<std::string>();
  WEFT_ASSIGN_OR_RETURN(std::string path, NormalisePath(call.args.at("path").get<std::string>()));
  WEFT_RETURN_IF_ERROR(volume_->Check(call.ctx, auth::kWrite, path));
  if (session.size() < 16 || session.size() > 64) return InvalidArgument("bad upload session id");
  DropIdleUploads();
  std::shared_ptr<Upload> upload;
  {
    std::lock_guard lock(mu_);
    auto& slot = uploads_[session];
    if (!slot) {
      slot = std::make_shared<Upload>();
      slot->user = call.ctx.principal;
      slot->path = path;
    }
    upload = slot;
    upload->last_used = options_.clock->SteadyNow();
  }
  if (upload->user != call.ctx.principal || upload->path != path) {
    return PermissionDenied(Reason::kAccessDenied,
                            "upload session belongs to another user or path");
  }
  std::lock_guard lock(upload->mu);
  if (!upload->staging) {
    WriteOptions staging;
    staging.etag = "upload";
    staging.create_parents = true;
    WEFT_ASSIGN_OR_RETURN(upload->staging, volume_->OpenWriter(call.ctx, path, staging));
  }
  std::string_view in = call.payload;
  uint64_t stored = 0;
  while (true) {
    WEFT_ASSIGN_OR_RETURN(std::optional<ChunkFrame> frame, NextChunkFrame(&in));
    if (!frame) break;
    ChunkRef ref{frame->id, static_cast<uint32_t>(frame->plaintext.size())};
    Status s = upload->staging->AppendChunk(ref, AsBytes(frame->plaintext));
    if (!s.ok()) {
      upload->staging.reset();  // aborted by the failure; a later upload starts afresh
      return s;
    }
    ++stored;
  }
  {
    std::lock_guard l(mu_);
    spokes_[spoke].bytes_received += call.payload.size();
  }
  call.reply = {{"stored", stored}};
  return OkStatus();
}

Status HubService::Commit(Call& call) {
  const std::string spoke = call.args.at("spoke").get<std::string>();
  WEFT_ASSIGN_OR_RETURN(std::string path, NormalisePath(call.args.at("path").get<std::string>()));
  WEFT_RETURN_IF_ERROR(volume_->Check(call.ctx, auth::kWrite, path));
  WEFT_ASSIGN_OR_RETURN(std::vector<ChunkRef> chunks, ChunksFromJson(call.args.at("chunks")));
  WriteOptions opts;
  opts.etag = call.args.at("etag").get<std::string>();
  opts.mode = call.args.value("mode", uint32_t{0644});
  opts.create_parents = call.args.value("create_parents", false);
  if (call.args.contains("mtime_ns")) opts.mtime_ns = call.args.at("mtime_ns").get<int64_t>();
  if (call.args.contains("if_version")) opts.if_version = OptionalString(call.args, "if_version");
  if (call.args.contains("attributes"))
    opts.attributes = call.args.at("attributes").get<Attributes>();

  std::unordered_map<ChunkId, std::string, ChunkIdHash> inline_chunks;
  std::string_view in = call.payload;
  while (true) {
    WEFT_ASSIGN_OR_RETURN(std::optional<ChunkFrame> frame, NextChunkFrame(&in));
    if (!frame) break;
    inline_chunks[frame->id] = std::move(frame->plaintext);
  }
  DropIdleUploads();
  // The upload session (if any) keeps its chunks held until this commit is done.
  std::shared_ptr<Upload> upload;
  if (auto session = OptionalString(call.args, "session")) {
    std::lock_guard lock(mu_);
    auto it = uploads_.find(*session);
    if (it != uploads_.end() && it->second->user == call.ctx.principal) upload = it->second;
  }
  WEFT_ASSIGN_OR_RETURN(auto writer, volume_->OpenWriter(call.ctx, path, opts));
  for (const ChunkRef& ref : chunks) {
    auto it = inline_chunks.find(ref.id);
    std::optional<ByteSpan> data;
    if (it != inline_chunks.end()) data = AsBytes(it->second);
    WEFT_RETURN_IF_ERROR(writer->AppendChunk(ref, data).WithContext(path));
  }
  WEFT_ASSIGN_OR_RETURN(FileInfo info, writer->Commit());
  if (upload) {
    std::lock_guard lock(mu_);
    uploads_.erase(call.args.at("session").get<std::string>());
  }
  {
    std::lock_guard lock(mu_);
    spokes_[spoke].bytes_received += call.payload.size();
  }
  call.reply = {{"info", InfoToJson(info)}};
  return OkStatus();
}

void HubService::PruneForgotten() {
  // Spokes the lease table forgot (idle past its limit, or re-attached under a new id) leave
  // the registry too, so it lists what is attached now.
  auto live = leases_->Stats();
  const int64_t now = options_.clock->NowNanos();
  const int64_t grace = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::max(leases_->lease_length(), std::chrono::milliseconds(120'000)))
                            .count();
  std::lock_guard lock(mu_);
  for (auto it = spokes_.begin(); it != spokes_.end();) {
    bool forgotten = !live.contains(it->first) && now - it->second.attached_ns > grace;
    it = forgotten ? spokes_.erase(it) : std::next(it);
  }
}

void HubService::DropIdleUploads() {
  std::lock_guard lock(mu_);
  const auto now = options_.clock->SteadyNow();
  for (auto it = uploads_.begin(); it != uploads_.end();) {
    it = now - it->second->last_used > options_.upload_idle ? uploads_.erase(it) : std::next(it);
  }
}

Status HubService::Forward(Call& call) {
  const json& a = call.args;
  const std::string op = a.at("op").get<std::string>();
  auto path_arg = [&](const char* key) { return NormalisePath(a.at(key).get<std::string>()); };
  // Every call is authorised (rules, and residency for this spoke's site) by the volume itself.
  const RequestContext& ctx = call.ctx;
  if (op == "mkdir") {
    WEFT_ASSIGN_OR_RETURN(std::string path, path_arg("path"));
    WEFT_ASSIGN_OR_RETURN(FileInfo info, volume_->Mkdir(ctx, path, a.value("mode", uint32_t{0755}),
                                                        a.value("parents", false)));
    call.reply = {{"info", InfoToJson(info)}};
  } else if (op == "symlink") {
    WEFT_ASSIGN_OR_RETURN(std::string path, path_arg("path"));
    WEFT_ASSIGN_OR_RETURN(FileInfo info,
                          volume_->Symlink(ctx, path, a.at("target").get<std::string>()));
    call.reply = {{"info", InfoToJson(info)}};
  } else if (op == "link") {
    WEFT_ASSIGN_OR_RETURN(std::string existing, path_arg("existing"));
    WEFT_ASSIGN_OR_RETURN(std::string path, path_arg("path"));
    // Writes through the new name change the existing file: write on both.
    WEFT_ASSIGN_OR_RETURN(FileInfo info, volume_->Link(ctx, existing, path));
    call.reply = {{"info", InfoToJson(info)}};
  } else if (op == "mknod") {
    WEFT_ASSIGN_OR_RETURN(std::string path, path_arg("path"));
    const int type = a.at("type").get<int>();
    if (type < 1 || type > kMaxFileType) return InvalidArgument("mknod: unknown type");
    WEFT_ASSIGN_OR_RETURN(
        FileInfo info, volume_->Mknod(ctx, path, static_cast<FileType>(type),
                                      a.at("mode").get<uint32_t>(), a.value("rdev", uint64_t{0})));
    call.reply = {{"info", InfoToJson(info)}};
  } else if (op == "rename") {
    WEFT_ASSIGN_OR_RETURN(std::string from, path_arg("from"));
    WEFT_ASSIGN_OR_RETURN(std::string to, path_arg("to"));
    WEFT_RETURN_IF_ERROR(volume_->Rename(ctx, from, to));
  } else if (op == "unlink" || op == "rmdir") {
    WEFT_ASSIGN_OR_RETURN(std::string path, path_arg("path"));
    WEFT_RETURN_IF_ERROR(op == "rmdir" ? volume_->Rmdir(ctx, path) : volume_->Unlink(ctx, path));
  } else if (op == "setattr") {
    WEFT_ASSIGN_OR_RETURN(std::string path, path_arg("path"));
    // The volume decides: a directory's attributes need admin, a file's write on its version.
    SetAttrRequest req;
    if (a.contains("mode")) req.mode = a.at("mode").get<uint32_t>();
    if (a.contains("uid")) req.uid = a.at("uid").get<uint32_t>();
    if (a.contains("gid")) req.gid = a.at("gid").get<uint32_t>();
    if (a.contains("mtime_ns")) req.mtime_ns = a.at("mtime_ns").get<int64_t>();
    if (a.contains("atime_ns")) req.atime_ns = a.at("atime_ns").get<int64_t>();
    if (a.contains("attributes")) req.attributes = a.at("attributes").get<Attributes>();
    if (a.contains("if_version")) req.if_version = a.at("if_version").get<std::string>();
    WEFT_ASSIGN_OR_RETURN(FileInfo info, volume_->SetAttr(ctx, path, req));
    call.reply = {{"info", InfoToJson(info)}};
  } else if (op == "snapshot_create") {
    WEFT_ASSIGN_OR_RETURN(std::string path, path_arg("path"));
    WEFT_ASSIGN_OR_RETURN(SnapshotInfo snap,
                          volume_->CreateSnapshot(ctx, a.at("name").get<std::string>(), path));
    call.reply = {{"snapshot", SnapshotToJson(snap)}};
  } else if (op == "snapshot_list") {
    // Those whose subtree the caller may list (the volume filters) and this site may hold.
    WEFT_ASSIGN_OR_RETURN(auto snaps, volume_->ListSnapshots(ctx));
    json list = json::array();
    for (const SnapshotInfo& s : snaps) {
      if (volume_->CheckResidency(ctx, s.path).ok()) list.push_back(SnapshotToJson(s));
    }
    call.reply = {{"snapshots", list}};
  } else if (op == "snapshot_delete") {
    WEFT_RETURN_IF_ERROR(volume_->DeleteSnapshot(ctx, a.at("name").get<std::string>()));
  } else if (op == "versions") {
    WEFT_ASSIGN_OR_RETURN(std::string path, path_arg("path"));
    WEFT_ASSIGN_OR_RETURN(auto versions, volume_->ListVersions(ctx, path));
    json list = json::array();
    for (const VersionInfo& v : versions) list.push_back(VersionToJson(v));
    call.reply = {{"versions", list}};
  } else if (op == "delete_version") {
    WEFT_ASSIGN_OR_RETURN(std::string path, path_arg("path"));
    WEFT_RETURN_IF_ERROR(volume_->DeleteVersion(ctx, path, a.at("version").get<std::string>()));
  } else if (op == "changes") {
    WEFT_RETURN_IF_ERROR(volume_->Check(ctx, auth::kAdmin, "/"));
    WEFT_ASSIGN_OR_RETURN(auto changes, volume_->ReadChanges(ctx, a.at("after").get<uint64_t>(),
                                                             a.at("limit").get<uint32_t>()));
    // What is resident elsewhere the volume blanked; it does not leave the hub at all.
    json list = json::array();
    for (const Change& c : changes) {
      if (c.op != "hidden") list.push_back(ChangeToJson(c));
    }
    call.reply = {{"changes", list}};
  } else if (op == "usage") {
    WEFT_ASSIGN_OR_RETURN(UsageInfo usage, volume_->Usage(ctx));
    call.reply = {{"usage", UsageToJson(usage)}};
  } else {
    return NotFound("no fabric call '" + op.substr(0, 40) + "'");
  }
  return OkStatus();
}

Status HubService::ListSpokes(Call& call) {
  WEFT_RETURN_IF_ERROR(volume_->Check(call.ctx, auth::kAdmin, "/"));
  call.reply = {{"spokes", SpokesJson()}};
  return OkStatus();
}

json HubService::SpokesJson() {
  auto stats = leases_->Stats();
  json list = json::array();
  for (const SpokeRecord& s : Spokes()) {
    const SpokeLeaseStats& l = stats[s.id];
    list.push_back({{"spoke", s.id},
                    {"user", s.user},
                    {"site", s.site},
                    {"tags", s.tags},
                    {"portals", s.portals},
                    {"attached_ns", s.attached_ns},
                    {"leases", l.leases},
                    {"pending_invalidations", l.pending},
                    {"bytes_sent", s.bytes_sent},
                    {"bytes_received", s.bytes_received}});
  }
  return list;
}

std::vector<SpokeRecord> HubService::Spokes() {
  std::lock_guard lock(mu_);
  std::vector<SpokeRecord> out;
  for (const auto& [id, rec] : spokes_) out.push_back(rec);
  return out;
}

}  // namespace weft::fabric
