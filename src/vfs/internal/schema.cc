#include "vfs/internal/schema.h"

#include <charconv>

#include "base/bytes.h"

namespace weft::schema {
namespace {

constexpr uint8_t kCodecVersion = 1;
// Inode and manifest records with attributes carry this codec byte and a trailing attributes
// field. Writers use it only when there are attributes, so every other record stays
// byte-identical to codec 1, and a record cut right before the field is still detected.
constexpr uint8_t kCodecWithAttributes = 2;
// Inode records that keep what codec 2 cannot (an explicit atime, a device number, a link
// count) carry this codec byte, the attributes field (possibly empty), then those three.
constexpr uint8_t kCodecExtended = 3;

Status Malformed(std::string_view what) {
  return Corruption("malformed " + std::string(what) + " record in the metadata store");
}

std::string Tagged(char tag) {
  return std::string(1, tag);
}

uint8_t CodecOf(const Dirent&) {
  return kCodecVersion;
}
uint8_t CodecOf(const Inode& i) {
  if (i.atime_ns || i.rdev != 0 || i.nlink != 0) return kCodecExtended;
  return i.attributes.empty() ? kCodecVersion : kCodecWithAttributes;
}

void PutAttributes(std::string* out, const Attributes& attributes) {
  PutVarint64(out, attributes.size());
  for (const auto& [name, value] : attributes) {
    PutLengthPrefixed(out, name);
    PutLengthPrefixed(out, value);
  }
}

// Names are stored in map order; anything else (a duplicate included) is corruption.
bool GetAttributes(ByteReader* r, Attributes* attributes) {
  uint64_t n = 0;
  if (!r->GetVarint64(&n) || n > r->remaining()) return false;
  std::string_view prev;
  for (uint64_t i = 0; i < n; ++i) {
    std::string_view name, value;
    if (!r->GetLengthPrefixed(&name) || !r->GetLengthPrefixed(&value)) return false;
    if (i > 0 && name <= prev) return false;
    attributes->emplace_hint(attributes->end(), std::string(name), std::string(value));
    prev = name;
  }
  return true;
}

void PutDirentBody(std::string* out, const Dirent& d) {
  PutVarint64(out, d.ino);
  out->push_back(static_cast<char>(d.type));
}

bool ValidType(uint8_t t) {
  return t >= 1 && t <= kMaxFileType;
}

bool GetDirentBody(ByteReader* r, uint8_t codec, Dirent* d) {
  uint8_t t = 0;
  if (codec != kCodecVersion || !r->GetVarint64(&d->ino) || !r->GetByte(&t) || !ValidType(t))
    return false;
  d->type = static_cast<FileType>(t);
  return true;
}

void PutInodeBody(std::string* out, const Inode& i) {
  out->push_back(static_cast<char>(i.type));
  PutVarint64(out, i.mode);
  PutVarint64(out, i.uid);
  PutVarint64(out, i.gid);
  PutVarint64(out, i.size);
  PutSignedVarint64(out, i.mtime_ns);
  PutSignedVarint64(out, i.ctime_ns);
  PutVarint64(out, i.content_seq);
  PutLengthPrefixed(out, i.etag);
  PutVarint64(out, i.chunks);
  PutLengthPrefixed(out, i.symlink_target);
  const uint8_t codec = CodecOf(i);
  if (codec != kCodecVersion) PutAttributes(out, i.attributes);
  if (codec == kCodecExtended) {
    out->push_back(i.atime_ns ? 1 : 0);
    if (i.atime_ns) PutSignedVarint64(out, *i.atime_ns);
    PutVarint64(out, i.rdev);
    PutVarint64(out, i.nlink);
  }
}

bool GetU32(ByteReader* r, uint32_t* v) {
  uint64_t u = 0;
  if (!r->GetVarint64(&u) || u > UINT32_MAX) return false;
  *v = static_cast<uint32_t>(u);
  return true;
}

bool GetInodeBody(ByteReader* r, uint8_t codec, Inode* i) {
  uint8_t t = 0;
  std::string_view etag, target;
  if (codec != kCodecVersion && codec != kCodecWithAttributes && codec != kCodecExtended) {
    return false;
  }
  if (!r->GetByte(&t) || !ValidType(t)) return false;
  i->type = static_cast<FileType>(t);
  if (!GetU32(r, &i->mode) || !GetU32(r, &i->uid) || !GetU32(r, &i->gid) ||
      !r->GetVarint64(&i->size) || !r->GetSignedVarint64(&i->mtime_ns) ||
      !r->GetSignedVarint64(&i->ctime_ns) || !r->GetVarint64(&i->content_seq) ||
      !r->GetLengthPrefixed(&etag) || !r->GetVarint64(&i->chunks) ||
      !r->GetLengthPrefixed(&target)) {
    return false;
  }
  i->etag = std::string(etag);
  i->symlink_target = std::string(target);
  if (codec == kCodecVersion) return true;
  if (!GetAttributes(r, &i->attributes)) return false;
  if (codec != kCodecExtended) return true;
  uint8_t has_atime = 0;
  if (!r->GetByte(&has_atime) || has_atime > 1) return false;
  if (has_atime) {
    int64_t atime = 0;
    if (!r->GetSignedVarint64(&atime)) return false;
    i->atime_ns = atime;
  }
  return r->GetVarint64(&i->rdev) && GetU32(r, &i->nlink);
}

bool GetVersionByte(ByteReader* r) {
  uint8_t v = 0;
  return r->GetByte(&v) && v == kCodecVersion;
}

template <typename T, typename PutBody>
std::string EncodeCurrent(uint64_t seq_begin, const T& value, PutBody put) {
  std::string out(1, static_cast<char>(CodecOf(value)));
  PutVarint64(&out, seq_begin);
  put(&out, value);
  return out;
}

template <typename T, typename GetBody>
Result<Current<T>> DecodeCurrent(std::string_view v, GetBody get, std::string_view what) {
  ByteReader r(v);
  Current<T> c;
  uint8_t codec = 0;
  if (!r.GetByte(&codec) || !r.GetVarint64(&c.seq_begin) || !get(&r, codec, &c.value) ||
      !r.empty()) {
    return Malformed(what);
  }
  return c;
}

template <typename T, typename PutBody>
std::string EncodeHistory(const History<T>& h, PutBody put) {
  std::string out(1, static_cast<char>(CodecOf(h.value)));
  PutVarint64(&out, h.seq_begin);
  PutVarint64(&out, h.seq_end);
  PutSignedVarint64(&out, h.end_time_ns);
  put(&out, h.value);
  return out;
}

template <typename T, typename GetBody>
Result<History<T>> DecodeHistory(std::string_view v, GetBody get, std::string_view what) {
  ByteReader r(v);
  History<T> h;
  uint8_t codec = 0;
  if (!r.GetByte(&codec) || !r.GetVarint64(&h.seq_begin) || !r.GetVarint64(&h.seq_end) ||
      !r.GetSignedVarint64(&h.end_time_ns) || !get(&r, codec, &h.value) || !r.empty()) {
    return Malformed(what);
  }
  return h;
}

}  // namespace

std::string SystemKey(std::string_view name) {
  return Tagged(kSystem) + std::string(name);
}

std::string DirentPrefix(uint64_t parent) {
  std::string k = Tagged(kDirent);
  PutBigEndian64(&k, parent);
  return k;
}

std::string DirentKey(uint64_t parent, std::string_view name) {
  return DirentPrefix(parent) + std::string(name);
}

std::string InodeKey(uint64_t ino) {
  std::string k = Tagged(kInode);
  PutBigEndian64(&k, ino);
  return k;
}

std::string ManifestKey(uint64_t ino, uint64_t content_seq) {
  std::string k = Tagged(kManifest);
  PutBigEndian64(&k, ino);
  PutBigEndian64(&k, content_seq);
  return k;
}

std::string SnapshotKey(std::string_view name) {
  return Tagged(kSnapshot) + std::string(name);
}

std::string FeedKey(uint64_t seq) {
  std::string k = Tagged(kFeed);
  PutBigEndian64(&k, seq);
  return k;
}

std::string DirentHistoryPrefix(uint64_t parent) {
  return Tagged(kHistory) + DirentPrefix(parent);
}

std::string DirentHistoryNamePrefix(uint64_t parent, std::string_view name) {
  std::string k = DirentHistoryPrefix(parent);
  k += name;
  k.push_back('\0');  // names never contain NUL, so this ends the name unambiguously
  return k;
}

std::string DirentHistoryKey(uint64_t parent, std::string_view name, uint64_t seq_end) {
  std::string k = DirentHistoryNamePrefix(parent, name);
  PutBigEndian64(&k, seq_end);
  return k;
}

std::string RemovedMarkerKey(uint64_t parent, std::string_view name, uint64_t seq) {
  std::string k = Tagged(kRemovedMarker);
  PutBigEndian64(&k, parent);
  k += name;
  k.push_back('\0');
  PutBigEndian64(&k, seq);
  return k;
}

std::string RemovedMarkerKeyOf(std::string_view dirent_history_key) {
  // "H" "D" <parent:8><name>\0<seq:8>  ->  "X" <parent:8><name>\0<seq:8>
  return Tagged(kRemovedMarker) + std::string(dirent_history_key.substr(2));
}

std::string InodeHistoryPrefix(uint64_t ino) {
  return Tagged(kHistory) + InodeKey(ino);
}

std::string InodeHistoryKey(uint64_t ino, uint64_t seq_end) {
  std::string k = InodeHistoryPrefix(ino);
  PutBigEndian64(&k, seq_end);
  return k;
}

std::string EncodeDirent(uint64_t seq_begin, const Dirent& d) {
  return EncodeCurrent(seq_begin, d, PutDirentBody);
}
Result<Current<Dirent>> DecodeDirent(std::string_view v) {
  return DecodeCurrent<Dirent>(v, GetDirentBody, "directory entry");
}
std::string EncodeInode(uint64_t seq_begin, const Inode& i) {
  return EncodeCurrent(seq_begin, i, PutInodeBody);
}
Result<Current<Inode>> DecodeInode(std::string_view v) {
  return DecodeCurrent<Inode>(v, GetInodeBody, "inode");
}
std::string EncodeDirentHistory(const History<Dirent>& h) {
  return EncodeHistory(h, PutDirentBody);
}
Result<History<Dirent>> DecodeDirentHistory(std::string_view v) {
  return DecodeHistory<Dirent>(v, GetDirentBody, "directory entry history");
}
std::string EncodeInodeHistory(const History<Inode>& h) {
  return EncodeHistory(h, PutInodeBody);
}
Result<History<Inode>> DecodeInodeHistory(std::string_view v) {
  return DecodeHistory<Inode>(v, GetInodeBody, "inode history");
}

std::string EncodeManifest(const Manifest& m) {
  const uint8_t codec = m.attributes.empty() ? kCodecVersion : kCodecWithAttributes;
  std::string out(1, static_cast<char>(codec));
  PutVarint64(&out, m.size);
  PutLengthPrefixed(&out, m.etag);
  PutSignedVarint64(&out, m.mtime_ns);
  PutVarint64(&out, m.chunks.size());
  out.reserve(out.size() + m.chunks.size() * (ChunkId::kSize + 4));
  for (const ChunkRef& c : m.chunks) {
    out.append(c.id.raw());
    PutVarint64(&out, c.length);
  }
  if (codec == kCodecWithAttributes) PutAttributes(&out, m.attributes);
  return out;
}

Result<Manifest> DecodeManifest(std::string_view v) {
  ByteReader r(v);
  Manifest m;
  std::string_view etag;
  uint64_t n = 0;
  uint8_t codec = 0;
  if (!r.GetByte(&codec) || (codec != kCodecVersion && codec != kCodecWithAttributes) ||
      !r.GetVarint64(&m.size) || !r.GetLengthPrefixed(&etag) || !r.GetSignedVarint64(&m.mtime_ns) ||
      !r.GetVarint64(&n) || n > r.remaining()) {
    return Malformed("manifest");
  }
  m.etag = std::string(etag);
  m.chunks.reserve(n);
  uint64_t total = 0;
  for (uint64_t i = 0; i < n; ++i) {
    std::string_view raw;
    ChunkRef ref;
    if (!r.GetBytes(ChunkId::kSize, &raw) || !GetU32(&r, &ref.length)) return Malformed("manifest");
    ref.id = *ChunkId::FromBytes(raw);
    total += ref.length;
    m.chunks.push_back(ref);
  }
  if (codec == kCodecWithAttributes && !GetAttributes(&r, &m.attributes)) {
    return Malformed("manifest");
  }
  if (!r.empty() || total != m.size) return Malformed("manifest");
  return m;
}

std::string EncodeSnapshot(const SnapshotInfo& s) {
  std::string out(1, static_cast<char>(kCodecVersion));
  PutVarint64(&out, s.sequence);
  PutLengthPrefixed(&out, s.path);
  PutSignedVarint64(&out, s.created_ns);
  return out;
}

Result<SnapshotInfo> DecodeSnapshot(std::string_view name, std::string_view v) {
  ByteReader r(v);
  SnapshotInfo s;
  s.name = std::string(name);
  std::string_view path;
  if (!GetVersionByte(&r) || !r.GetVarint64(&s.sequence) || !r.GetLengthPrefixed(&path) ||
      !r.GetSignedVarint64(&s.created_ns) || !r.empty()) {
    return Malformed("snapshot");
  }
  s.path = std::string(path);
  return s;
}

std::string EncodeChange(const Change& c) {
  std::string out(1, static_cast<char>(kCodecVersion));
  PutSignedVarint64(&out, c.time_ns);
  PutLengthPrefixed(&out, c.op);
  PutLengthPrefixed(&out, c.path);
  PutLengthPrefixed(&out, c.path2);
  PutLengthPrefixed(&out, c.principal);
  return out;
}

Result<Change> DecodeChange(uint64_t seq, std::string_view v) {
  ByteReader r(v);
  Change c;
  c.sequence = seq;
  std::string_view op, path, path2, principal;
  if (!GetVersionByte(&r) || !r.GetSignedVarint64(&c.time_ns) || !r.GetLengthPrefixed(&op) ||
      !r.GetLengthPrefixed(&path) || !r.GetLengthPrefixed(&path2) ||
      !r.GetLengthPrefixed(&principal) || !r.empty()) {
    return Malformed("change feed");
  }
  c.op = std::string(op);
  c.path = std::string(path);
  c.path2 = std::string(path2);
  c.principal = std::string(principal);
  return c;
}

uint64_t DecodeU64(std::string_view v) {
  return v.size() == 8 ? GetBigEndian64(v.data()) : 0;
}
std::string EncodeU64(uint64_t v) {
  std::string out;
  PutBigEndian64(&out, v);
  return out;
}

std::string MakeVersionId(uint64_t ino, uint64_t content_seq) {
  return std::to_string(content_seq) + "." + std::to_string(ino);
}

bool ParseVersionId(std::string_view id, uint64_t* ino, uint64_t* content_seq) {
  size_t dot = id.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == id.size()) return false;
  auto parse = [](std::string_view s, uint64_t* out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return ec == std::errc() && p == s.data() + s.size();
  };
  return parse(id.substr(0, dot), content_seq) && parse(id.substr(dot + 1), ino);
}

}  // namespace weft::schema
