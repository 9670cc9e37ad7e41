#include "fabric/wire.h"

#include <zstd.h>

#include <algorithm>

#include "base/bytes.h"
#include "base/utf8.h"
#include "chunk/codec.h"

namespace weft::fabric {
namespace {

constexpr int kWireZstdLevel = 1;  // the link, not the cores, should be the bottleneck
constexpr uint8_t kDeltaCodec = 2;
constexpr uint8_t kMultiDeltaCodec = 3;
// Whole answers (metadata; a batch of frames) compress much better with a little more effort:
// level 3's window and search find what repeats from chunk to chunk. Generated JSONL in
// 4 MiB batches: 0.90 MB at level 3 against 1.40 at level 1 and 1.60 chunk by chunk.
constexpr int kAnswerZstdLevel = 3;
// A delta costs a zstd pass over its base as well: a level that finds the long matches.
constexpr int kDeltaZstdLevel = 3;

// Contexts kept per thread: a delta is a few hundred KiB of work, and making a context each
// time would cost as much.
struct ZstdContexts {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_DCtx* d = ZSTD_createDCtx();
  ~ZstdContexts() {
    ZSTD_freeCCtx(c);
    ZSTD_freeDCtx(d);
  }
};
ZstdContexts& Contexts() {
  thread_local ZstdContexts contexts;
  return contexts;
}

// The base ids, then `plaintext` compressed with the bases' plaintexts, concatenated in order,
// as zstd's prefix; a count byte first when there are several (kMultiDeltaCodec).
bool EncodeDelta(std::string_view plaintext, std::span<const DeltaBase> bases, std::string* out) {
  std::string joined;
  std::string_view prefix = bases[0].plaintext;
  out->clear();
  if (bases.size() > 1) {
    out->push_back(static_cast<char>(bases.size()));
    for (const DeltaBase& b : bases) joined += b.plaintext;
    prefix = joined;
  }
  for (const DeltaBase& b : bases) out->append(b.id.raw());
  const size_t head = out->size();
  ZSTD_CCtx* c = Contexts().c;
  ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
  if (ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, kDeltaZstdLevel)) ||
      ZSTD_isError(ZSTD_CCtx_refPrefix(c, prefix.data(), prefix.size()))) {
    return false;
  }
  out->resize(head + ZSTD_compressBound(plaintext.size()));
  const size_t n =
      ZSTD_compress2(c, out->data() + head, out->size() - head, plaintext.data(), plaintext.size());
  if (ZSTD_isError(n)) return false;
  out->resize(head + n);
  return true;
}

Result<std::string> DecodeDelta(std::string_view stored, std::string_view prefix,
                                uint32_t raw_size) {
  ZSTD_DCtx* d = Contexts().d;
  ZSTD_DCtx_reset(d, ZSTD_reset_session_and_parameters);
  if (ZSTD_isError(ZSTD_DCtx_refPrefix(d, prefix.data(), prefix.size()))) {
    return InvalidArgument("delta chunk frame: zstd refused its base");
  }
  std::string plain(raw_size, '\0');
  const size_t n = ZSTD_decompressDCtx(d, plain.data(), plain.size(), stored.data(), stored.size());
  if (ZSTD_isError(n) || n != raw_size) {
    return InvalidArgument("delta chunk frame does not decode");
  }
  return plain;
}

// Runs a decoder body, turning nlohmann's type and key errors into InvalidArgument.
template <typename T, typename Fn>
Result<T> Decode(std::string_view what, Fn&& fn) {
  try {
    return fn();
  } catch (const json::exception& e) {
    return InvalidArgument("malformed " + std::string(what) + ": " + e.what());
  }
}

}  // namespace

json StatusToJson(const Status& status) {
  json j = {{"code", static_cast<int>(status.code())},
            {"name", StatusCodeName(status.code())},
            {"message", status.message()}};
  if (status.reason() != Reason::kNone) j["reason"] = ReasonName(status.reason());
  return j;
}

Status StatusFromJson(const json& j) {
  try {
    int code = j.at("code").get<int>();
    std::string message = j.at("message").get<std::string>();
    if (code <= 0 || code > static_cast<int>(StatusCode::kUnimplemented)) {
      return Internal("hub error: " + message);
    }
    // A reason this build does not know is dropped: the code still says what kind of error.
    Reason reason = ReasonFromName(j.value("reason", std::string()));
    return Status(static_cast<StatusCode>(code), reason, std::move(message));
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("malformed error from the hub: ") + e.what());
  }
}

json InfoToJson(const FileInfo& info) {
  json j = {{"path", info.path},
            {"inode", info.inode},
            {"type", int(info.type)},
            {"mode", info.mode},
            {"uid", info.uid},
            {"gid", info.gid},
            {"size", info.size},
            {"mtime_ns", info.mtime_ns},
            {"ctime_ns", info.ctime_ns},
            {"etag", info.etag},
            {"version", info.version_id},
            {"chunks", info.chunks},
            {"target", info.symlink_target}};
  if (info.atime_ns != info.mtime_ns) j["atime_ns"] = info.atime_ns;
  if (info.nlink != 1) j["nlink"] = info.nlink;
  if (info.rdev != 0) j["rdev"] = info.rdev;
  if (!info.attributes.empty()) j["attributes"] = info.attributes;
  return j;
}

Result<FileInfo> InfoFromJson(const json& j) {
  return Decode<FileInfo>("file info", [&]() -> Result<FileInfo> {
    FileInfo info;
    info.path = j.at("path").get<std::string>();
    info.inode = j.at("inode").get<uint64_t>();
    int type = j.at("type").get<int>();
    if (type < 1 || type > kMaxFileType)
      return InvalidArgument("malformed file info: type " + std::to_string(type));
    info.type = static_cast<FileType>(type);
    info.mode = j.at("mode").get<uint32_t>();
    info.uid = j.at("uid").get<uint32_t>();
    info.gid = j.at("gid").get<uint32_t>();
    info.size = j.at("size").get<uint64_t>();
    info.mtime_ns = j.at("mtime_ns").get<int64_t>();
    info.ctime_ns = j.at("ctime_ns").get<int64_t>();
    info.etag = j.at("etag").get<std::string>();
    info.version_id = j.at("version").get<std::string>();
    info.chunks = j.at("chunks").get<uint64_t>();
    info.symlink_target = j.at("target").get<std::string>();
    info.atime_ns = j.value("atime_ns", info.mtime_ns);
    info.nlink = j.value("nlink", uint32_t{1});
    info.rdev = j.value("rdev", uint64_t{0});
    if (j.contains("attributes")) info.attributes = j.at("attributes").get<Attributes>();
    return info;
  });
}

json ChunksToJson(const std::vector<ChunkRef>& chunks) {
  json a = json::array();
  for (const ChunkRef& c : chunks) a.push_back(json::array({c.id.ToHex(), c.length}));
  return a;
}

Result<std::vector<ChunkRef>> ChunksFromJson(const json& j) {
  return Decode<std::vector<ChunkRef>>("chunk list", [&]() -> Result<std::vector<ChunkRef>> {
    std::vector<ChunkRef> out;
    out.reserve(j.size());
    for (const json& e : j) {
      auto id = ChunkId::FromHex(e.at(0).get<std::string>());
      uint32_t length = e.at(1).get<uint32_t>();
      if (!id || length == 0 || length > kMaxWireChunk) {
        return InvalidArgument("malformed chunk list entry");
      }
      out.push_back({*id, length});
    }
    return out;
  });
}

json SnapshotToJson(const SnapshotInfo& s) {
  return {
      {"name", s.name}, {"path", s.path}, {"sequence", s.sequence}, {"created_ns", s.created_ns}};
}

Result<SnapshotInfo> SnapshotFromJson(const json& j) {
  return Decode<SnapshotInfo>("snapshot", [&]() -> Result<SnapshotInfo> {
    return SnapshotInfo{j.at("name").get<std::string>(), j.at("path").get<std::string>(),
                        j.at("sequence").get<uint64_t>(), j.at("created_ns").get<int64_t>()};
  });
}

json VersionToJson(const VersionInfo& v) {
  return {{"version", v.version_id},
          {"size", v.size},
          {"etag", v.etag},
          {"mtime_ns", v.mtime_ns},
          {"sequence", v.sequence},
          {"current", v.is_current},
          {"delete_marker", v.is_delete_marker}};
}

Result<VersionInfo> VersionFromJson(const json& j) {
  return Decode<VersionInfo>("version", [&]() -> Result<VersionInfo> {
    VersionInfo v;
    v.version_id = j.at("version").get<std::string>();
    v.size = j.at("size").get<uint64_t>();
    v.etag = j.at("etag").get<std::string>();
    v.mtime_ns = j.at("mtime_ns").get<int64_t>();
    v.sequence = j.at("sequence").get<uint64_t>();
    v.is_current = j.at("current").get<bool>();
    v.is_delete_marker = j.at("delete_marker").get<bool>();
    return v;
  });
}

json ChangeToJson(const Change& c) {
  return {{"sequence", c.sequence}, {"time_ns", c.time_ns}, {"op", c.op},
          {"path", c.path},         {"path2", c.path2},     {"principal", c.principal}};
}

Result<Change> ChangeFromJson(const json& j) {
  return Decode<Change>("change", [&]() -> Result<Change> {
    return Change{j.at("sequence").get<uint64_t>(), j.at("time_ns").get<int64_t>(),
                  j.at("op").get<std::string>(),    j.at("path").get<std::string>(),
                  j.at("path2").get<std::string>(), j.at("principal").get<std::string>()};
  });
}

json UsageToJson(const UsageInfo& u) {
  return {{"files", u.files},
          {"directories", u.directories},
          {"logical_bytes", u.logical_bytes},
          {"referenced_bytes", u.referenced_bytes},
          {"unique_bytes", u.unique_bytes},
          {"stored_bytes", u.stored_bytes},
          {"pack_bytes", u.pack_bytes},
          {"metadata_bytes", u.metadata_bytes}};
}

Result<UsageInfo> UsageFromJson(const json& j) {
  return Decode<UsageInfo>("usage", [&]() -> Result<UsageInfo> {
    UsageInfo u;
    u.files = j.at("files").get<uint64_t>();
    u.directories = j.at("directories").get<uint64_t>();
    u.logical_bytes = j.at("logical_bytes").get<uint64_t>();
    u.referenced_bytes = j.at("referenced_bytes").get<uint64_t>();
    u.unique_bytes = j.at("unique_bytes").get<uint64_t>();
    u.stored_bytes = j.at("stored_bytes").get<uint64_t>();
    u.pack_bytes = j.at("pack_bytes").get<uint64_t>();
    u.metadata_bytes = j.at("metadata_bytes").get<uint64_t>();
    return u;
  });
}

namespace {

// A string that is not UTF-8 becomes {"$bytes": hex}. So that no real object can look like
// one, object keys starting with '$' (attribute names are free-form) gain another '$'.
constexpr const char* kBytesKey = "$bytes";

bool NeedsEncoding(const json& j) {
  if (j.is_string()) return !IsValidUtf8(j.get_ref<const std::string&>());
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key().starts_with('$') || NeedsEncoding(it.value())) return true;
    }
  } else if (j.is_array()) {
    for (const json& v : j) {
      if (NeedsEncoding(v)) return true;
    }
  }
  return false;
}

json Encode(const json& j) {
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    if (IsValidUtf8(s)) return j;
    return json{{kBytesKey, ToHex(AsBytes(s))}};
  }
  if (j.is_object()) {
    json out = json::object();
    for (auto it = j.begin(); it != j.end(); ++it) {
      out[it.key().starts_with('$') ? "$" + it.key() : it.key()] = Encode(it.value());
    }
    return out;
  }
  if (j.is_array()) {
    json out = json::array();
    for (const json& v : j) out.push_back(Encode(v));
    return out;
  }
  return j;
}

// Undoes Encode, in place.
Status Decode(json* j) {
  if (j->is_object()) {
    if (j->size() == 1 && j->contains(kBytesKey)) {
      const json& hex = (*j)[kBytesKey];
      std::optional<std::string> bytes =
          hex.is_string() ? FromHex(hex.get_ref<const std::string&>()) : std::nullopt;
      if (!bytes) return InvalidArgument("a malformed \"$bytes\" string in the JSON body");
      *j = std::move(*bytes);
      return OkStatus();
    }
    json out = json::object();
    for (auto& [key, value] : j->items()) {
      WEFT_RETURN_IF_ERROR(Decode(&value));
      out[key.starts_with("$$") ? key.substr(1) : key] = std::move(value);
    }
    *j = std::move(out);
  } else if (j->is_array()) {
    for (json& v : *j) WEFT_RETURN_IF_ERROR(Decode(&v));
  }
  return OkStatus();
}

}  // namespace

std::string DumpJson(const json& j) {
  if (!NeedsEncoding(j)) return j.dump(-1, ' ', false, json::error_handler_t::replace);
  return Encode(j).dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<json> ParseJson(std::string_view body) {
  if (!JsonNestingWithin(body, 16)) return InvalidArgument("the JSON body nests too deep");
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("the body is not valid JSON");
  // Cheap when there is nothing to decode: an encoded message has a key starting with '$'.
  if (body.find("\"$") != std::string_view::npos) WEFT_RETURN_IF_ERROR(Decode(&j));
  return j;
}

void AppendChunkFrame(const ChunkId& id, std::string_view plaintext, std::string* out,
                      std::span<const DeltaBase> bases, bool compress) {
  std::string compressed;
  Codec codec =
      compress ? EncodeChunk(AsBytes(plaintext), kWireZstdLevel, &compressed) : Codec::kRaw;
  std::string_view stored = codec == Codec::kZstd ? std::string_view(compressed) : plaintext;
  uint8_t wire_codec = static_cast<uint8_t>(codec);
  std::string delta;
  bases = bases.first(std::min(bases.size(), kMaxDeltaBases));
  const bool self =
      std::any_of(bases.begin(), bases.end(), [&](const DeltaBase& b) { return b.id == id; });
  if (!bases.empty() && !self && EncodeDelta(plaintext, bases, &delta) &&
      delta.size() < stored.size()) {
    stored = delta;
    wire_codec = bases.size() == 1 ? kDeltaCodec : kMultiDeltaCodec;
  }
  out->append(id.raw());
  PutBigEndian32(out, static_cast<uint32_t>(plaintext.size()));
  out->push_back(static_cast<char>(wire_codec));
  PutBigEndian32(out, static_cast<uint32_t>(stored.size()));
  out->append(stored);
}

std::vector<uint64_t> ChunkEnds(const std::vector<ChunkRef>& chunks) {
  std::vector<uint64_t> ends;
  ends.reserve(chunks.size());
  uint64_t end = 0;
  for (const ChunkRef& c : chunks) ends.push_back(end += c.length);
  return ends;
}

std::vector<size_t> DeltaBaseIndices(const std::vector<uint64_t>& base_ends, uint64_t start,
                                     uint64_t end, uint64_t new_size) {
  if (base_ends.empty() || end <= start) return {};
  const uint64_t old_size = base_ends.back();
  if (start >= old_size) {  // appended: the old end, like content (the same records, words)
    std::vector<size_t> last;
    for (size_t j = base_ends.size() - std::min(base_ends.size(), kMaxDeltaBases);
         j < base_ends.size(); ++j) {
      last.push_back(j);
    }
    return last;
  }
  auto scale = [&](uint64_t at) {
    if (new_size == 0) return at;
    return static_cast<uint64_t>(static_cast<unsigned __int128>(at) * old_size / new_size);
  };
  const uint64_t scaled_start = scale(start), scaled_end = scale(end);
  const uint64_t widen = (end - start) / 4;
  uint64_t lo = std::min(start, scaled_start), hi = std::max(end, scaled_end);
  lo = lo > widen ? lo - widen : 0;
  hi = std::min(hi + widen, old_size);
  auto overlap = [](uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) -> uint64_t {
    return std::min(a1, b1) > std::max(a0, b0) ? std::min(a1, b1) - std::max(a0, b0) : 0;
  };
  std::vector<std::pair<uint64_t, size_t>> scored;  // (overlap, index)
  for (size_t j = std::upper_bound(base_ends.begin(), base_ends.end(), lo) - base_ends.begin();
       j < base_ends.size(); ++j) {
    const uint64_t begin = j == 0 ? 0 : base_ends[j - 1];
    if (begin >= hi) break;
    scored.emplace_back(overlap(begin, base_ends[j], start, end) +
                            overlap(begin, base_ends[j], scaled_start, scaled_end) +
                            overlap(begin, base_ends[j], lo, hi),
                        j);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<size_t> out;
  for (size_t k = 0; k < scored.size() && out.size() < kMaxDeltaBases; ++k) {
    out.push_back(scored[k].second);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::optional<ChunkFrame>> NextChunkFrame(std::string_view* in, const BaseLookup* bases) {
  if (in->empty()) return std::optional<ChunkFrame>();
  if (in->size() < kFrameHeaderBytes) return InvalidArgument("truncated chunk frame header");
  const char* p = in->data();
  ChunkFrame frame;
  frame.id = *ChunkId::FromBytes(in->substr(0, 32));
  uint32_t raw_size = GetBigEndian32(p + 32);
  uint8_t codec = static_cast<uint8_t>(p[36]);
  uint32_t stored_size = GetBigEndian32(p + 37);
  const bool delta = codec == kDeltaCodec || codec == kMultiDeltaCodec;
  if (!IsKnownCodec(codec) && !delta) return InvalidArgument("chunk frame with unknown codec");
  if (raw_size == 0 || raw_size > kMaxWireChunk || stored_size > kMaxWireChunk) {
    return InvalidArgument("chunk frame with an impossible size");
  }
  if (in->size() - kFrameHeaderBytes < stored_size) return InvalidArgument("truncated chunk frame");
  std::string_view stored = in->substr(kFrameHeaderBytes, stored_size);
  if (delta) {
    if (bases == nullptr) return InvalidArgument("a delta chunk frame where none is expected");
    size_t count = 1;
    if (codec == kMultiDeltaCodec) {
      if (stored.empty()) return InvalidArgument("truncated delta chunk frame");
      count = static_cast<uint8_t>(stored[0]);
      if (count < 2 || count > kMaxDeltaBases) {
        return InvalidArgument("delta chunk frame with " + std::to_string(count) + " bases");
      }
      stored.remove_prefix(1);
    }
    if (stored.size() < count * ChunkId::kSize)
      return InvalidArgument("truncated delta chunk frame");
    std::vector<std::shared_ptr<const std::string>> found;
    for (size_t k = 0; k < count; ++k) {
      found.push_back(
          (*bases)(*ChunkId::FromBytes(stored.substr(k * ChunkId::kSize, ChunkId::kSize))));
    }
    stored.remove_prefix(count * ChunkId::kSize);
    in->remove_prefix(kFrameHeaderBytes + stored_size);
    if (std::find(found.begin(), found.end(), nullptr) != found.end()) {
      frame.unresolved = true;
      return std::optional<ChunkFrame>(std::move(frame));
    }
    std::string joined;
    if (count > 1) {
      for (const auto& b : found) joined += *b;
    }
    WEFT_ASSIGN_OR_RETURN(frame.plaintext,
                          DecodeDelta(stored, count > 1 ? joined : *found[0], raw_size));
    if (ChunkId::Of(AsBytes(frame.plaintext)) != frame.id) {
      return InvalidArgument("chunk frame " + frame.id.ShortHex() + " does not match its bytes");
    }
    return std::optional<ChunkFrame>(std::move(frame));
  }
  auto plain = DecodeChunk(static_cast<Codec>(codec), AsBytes(stored), raw_size);
  if (!plain.ok())
    return InvalidArgument("chunk frame does not decode: " + plain.status().message());
  if (ChunkId::Of(AsBytes(*plain)) != frame.id) {
    return InvalidArgument("chunk frame " + frame.id.ShortHex() + " does not match its bytes");
  }
  frame.plaintext = std::move(plain).value();
  in->remove_prefix(kFrameHeaderBytes + stored_size);
  return std::optional<ChunkFrame>(std::move(frame));
}

std::optional<std::string> CompressAnswer(std::string_view text, double min_saving) {
  if (text.size() < kMinZstdJsonBytes || text.size() > kMaxZstdJsonBytes) return std::nullopt;
  std::string compressed;
  if (EncodeChunk(AsBytes(text), kAnswerZstdLevel, &compressed, min_saving) != Codec::kZstd) {
    return std::nullopt;
  }
  std::string out;
  PutBigEndian32(&out, static_cast<uint32_t>(text.size()));
  out += compressed;
  return out;
}

Result<std::string> DecompressAnswer(std::string_view body) {
  if (body.size() < 4) return InvalidArgument("compressed answer without its length");
  const uint32_t length = GetBigEndian32(body.data());
  if (length > kMaxZstdJsonBytes) {
    return InvalidArgument("compressed answer claims " + std::to_string(length) + " bytes");
  }
  Result<std::string> text = DecodeChunk(Codec::kZstd, AsBytes(body.substr(4)), length);
  if (!text.ok()) return InvalidArgument("compressed answer does not decode");
  return text;
}

std::string EncodeIds(const std::vector<ChunkId>& ids) {
  std::string out;
  out.reserve(ids.size() * ChunkId::kSize);
  for (const ChunkId& id : ids) out.append(id.raw());
  return out;
}

Result<std::vector<ChunkId>> DecodeIds(std::string_view raw) {
  if (raw.size() % ChunkId::kSize != 0) return InvalidArgument("id list is not whole ids");
  std::vector<ChunkId> ids;
  ids.reserve(raw.size() / ChunkId::kSize);
  for (size_t off = 0; off < raw.size(); off += ChunkId::kSize) {
    ids.push_back(*ChunkId::FromBytes(raw.substr(off, ChunkId::kSize)));
  }
  return ids;
}

}  // namespace weft::fabric
