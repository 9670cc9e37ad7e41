// The hub-spoke wire format (docs/fabric.md). Metadata travels as JSON; chunk bytes as binary
// frames, each chunk zstd-compressed when that saves at least 5 %:
//
//   frame := id[32] plaintext_length:u32be codec:u8 stored_length:u32be stored[stored_length]
//   codec := 0 raw | 1 zstd | 2 delta | 3 delta over several bases
//   delta stored := base_id[32] zstd frame compressed with the base chunk's plaintext as its
//                   prefix (zstd --patch-from): a chunk the receiver holds, of an earlier
//                   version of the same file, so an edited region costs about its own size
//   codec 3 stored := count:u8 base_id[32]*count zstd frame, the bases' plaintexts joined in
//                   order as the prefix (2 <= count <= kMaxDeltaBases): where content moved
//                   by insertions or deletions, a new chunk's old content spans old chunks
//
// A commit body is a JSON header, then frames of the chunks sent inline:
//
//   commit := header_length:u32be header[header_length] frame*
//
// Decoders treat input as hostile: a malformed frame, an unknown codec or bytes that do not
// hash to their id is InvalidArgument and nothing is used. Pure functions; thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "vfs/volume.h"

namespace weft::fabric {

using json = nlohmann::json;

inline constexpr std::string_view kFabricPrefix = "/_weft/fabric/v1/";
// An answer made of a JSON header and chunk frames: 4-byte big-endian header length, the
// header, then frames (a lookup that carries its small file's bytes).
inline constexpr std::string_view kFramedContentType = "application/x-weft-framed";
// A JSON answer compressed with zstd (a spoke that sent "zstd": true gets large answers so):
// 4-byte big-endian length of the JSON text, then one zstd frame of it. Listings and batched
// lookups are mostly names, versions and chunk ids: this about halves them on the wire.
inline constexpr std::string_view kZstdJsonContentType = "application/x-weft-json+zstd";
// Chunk frames compressed as one zstd stream, in the same form (a `fetch` of a spoke that sent
// "zstd": true): across a batch zstd finds what repeats beyond one chunk (records, phrases and
// headers of text and tar shards), which frames compressed one by one cannot. The frames
// inside are then raw or deltas. Incompressible batches are sent as plain frames.
inline constexpr std::string_view kZstdFramesContentType = "application/x-weft-frames+zstd";
// Answers shorter than this are not worth compressing.
inline constexpr size_t kMinZstdJsonBytes = 512;
// The largest JSON text a compressed answer may claim (a hostile hub cannot make a spoke
// allocate more).
inline constexpr uint32_t kMaxZstdJsonBytes = 256u << 20;

// A chunk frame's header size.
inline constexpr size_t kFrameHeaderBytes = 32 + 4 + 1 + 4;
// Largest chunk accepted on the wire (the chunker's maximum is far below).
inline constexpr uint32_t kMaxWireChunk = 16u << 20;
// Paths (or lease keys) one batched `lookup` (or `renew`) may name.
inline constexpr size_t kMaxLookupBatch = 1000;
// Entries a `dir` answer lists whole (a larger directory is looked up path by path).
inline constexpr uint32_t kMaxDirEntries = 4096;
// Changes a `dir` answer with "since" reads from the change feed before it lists whole.
inline constexpr uint32_t kMaxDirChanges = 4096;
// The largest file a lookup carries inline.
inline constexpr uint64_t kMaxInlineBytes = 4 << 20;
// Chunk ids a lookup's 'have' may name (the chunks of one small file).
inline constexpr size_t kMaxHaveIds = 256;

// Status <-> {"code": <int>, "name": "NotFound", "message": "...", "reason": "NoSuchKey"}
// ("reason" only when the Status has one).
json StatusToJson(const Status& status);
Status StatusFromJson(const json& j);

json InfoToJson(const FileInfo& info);
Result<FileInfo> InfoFromJson(const json& j);
json ChunksToJson(const std::vector<ChunkRef>& chunks);  // [["hex", length], ...]
Result<std::vector<ChunkRef>> ChunksFromJson(const json& j);
json SnapshotToJson(const SnapshotInfo& snap);
Result<SnapshotInfo> SnapshotFromJson(const json& j);
json VersionToJson(const VersionInfo& v);
Result<VersionInfo> VersionFromJson(const json& j);
json ChangeToJson(const Change& c);
Result<Change> ChangeFromJson(const json& j);
json UsageToJson(const UsageInfo& u);
Result<UsageInfo> UsageFromJson(const json& j);

// JSON text of a fabric message. JSON carries UTF-8 only, and a POSIX name may hold any byte
// but NUL and '/': a string value that is not UTF-8 travels as {"$bytes": "<hex>"}, which
// ParseJson turns back, so every name crosses the fabric exactly (object keys that start with
// '$' gain another, so nothing else looks like that). Object keys are not names: one that is
// not UTF-8 is replaced, lossily, rather than failing the message.
std::string DumpJson(const json& j);
// Parses a JSON body (DumpJson's too); InvalidArgument naming the problem.
Result<json> ParseJson(std::string_view body);

// The body of a compressed answer (kZstdJsonContentType, kZstdFramesContentType) carrying
// `text`, or nullopt when that would not save `min_saving` of its size.
std::optional<std::string> CompressAnswer(std::string_view text, double min_saving = 0.05);
// The text of such a body; InvalidArgument if it is malformed or claims over
// kMaxZstdJsonBytes.
Result<std::string> DecompressAnswer(std::string_view body);

// A chunk the receiver holds, to encode another against (codecs 2 and 3).
struct DeltaBase {
  ChunkId id;
  std::string_view plaintext;
};
// Bases one delta frame may name.
inline constexpr size_t kMaxDeltaBases = 4;

// Appends one frame carrying `plaintext`: compressed when it pays, and as a delta against
// `bases` (the first kMaxDeltaBases, in order) when some are given and that is smaller still.
// With `compress` false, only a delta is encoded (the frames go into a compressed stream).
void AppendChunkFrame(const ChunkId& id, std::string_view plaintext, std::string* out,
                      std::span<const DeltaBase> bases = {}, bool compress = true);

// The end offset of each of `chunks` in the file they make up.
std::vector<uint64_t> ChunkEnds(const std::vector<ChunkRef>& chunks);

// Which chunks of an earlier version of a file (chunk i ends at base_ends[i]) to send the new
// chunk at [start, end) of a `new_size`-byte version as a delta against: those overlapping
// the same range and the range scaled to the earlier size (content inserted or deleted all
// through a file shifts it so), widened by a quarter on each side; past the earlier end, its
// last chunks (appended records resemble the last ones). At most kMaxDeltaBases, those
// overlapping most; ascending.
std::vector<size_t> DeltaBaseIndices(const std::vector<uint64_t>& base_ends, uint64_t start,
                                     uint64_t end, uint64_t new_size);

struct ChunkFrame {
  ChunkId id;
  std::string plaintext;  // verified against id
  // A delta frame whose base the receiver no longer holds: consumed, plaintext empty; the
  // chunk must be asked for again without a base.
  bool unresolved = false;
};

// The plaintext of a chunk the receiver holds, or null.
using BaseLookup = std::function<std::shared_ptr<const std::string>(const ChunkId&)>;

// Decodes, decompresses and verifies the frame at the front of `*in`, consuming it; nullopt
// at the end of input. Delta frames need `bases` (InvalidArgument without).
Result<std::optional<ChunkFrame>> NextChunkFrame(std::string_view* in,
                                                 const BaseLookup* bases = nullptr);

// Ids as raw concatenated 32-byte values (the "missing" exchange).
std::string EncodeIds(const std::vector<ChunkId>& ids);
Result<std::vector<ChunkId>> DecodeIds(std::string_view raw);

}  // namespace weft::fabric
