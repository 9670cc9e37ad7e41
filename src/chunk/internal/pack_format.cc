#include "chunk/internal/pack_format.h"

#include <xxhash.h>

#include <cstdio>

#include "base/bytes.h"

namespace weft::chunk_internal {
namespace {

uint64_t Checksum(std::string_view bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

// Sizes must be consistent with the codec: zstd is kept only when it is smaller than the raw
// bytes, and raw is stored as is.
bool SizesPlausible(Codec codec, uint32_t raw_size, uint32_t stored_size) {
  if (raw_size > kMaxChunkSize) return false;
  return codec == Codec::kRaw ? stored_size == raw_size : stored_size < raw_size;
}

bool IsReadableVersion(uint32_t version) {
  return version == kPackVersion1 || version == kPackVersion;
}

}  // namespace

uint64_t StoredChecksum(std::string_view stored) {
  return Checksum(stored);
}

std::string EncodePackHeader(uint32_t version) {
  std::string out(kPackMagic);
  PutBigEndian32(&out, version);
  PutBigEndian32(&out, 0);  // reserved
  return out;
}

Result<uint32_t> CheckPackHeader(std::string_view header) {
  if (header.size() < kPackHeaderSize) return Corruption("pack header is truncated");
  if (header.substr(0, kPackMagic.size()) != kPackMagic) return Corruption("bad pack magic");
  const uint32_t version = GetBigEndian32(header.data() + 8);
  if (!IsReadableVersion(version)) {
    return Corruption("unsupported pack format version " + std::to_string(version));
  }
  return version;
}

void AppendRecordHeader(const RecordHeader& header, std::string* out, uint32_t pack_version) {
  const size_t start = out->size();
  PutBigEndian32(out, kRecordMagic);
  out->append(header.id.raw());
  out->push_back(static_cast<char>(header.codec));
  PutBigEndian32(out, header.raw_size);
  PutBigEndian32(out, header.stored_size);
  if (pack_version != kPackVersion1) PutBigEndian64(out, header.stored_checksum);
  PutBigEndian64(out, Checksum(std::string_view(*out).substr(start)));
}

Result<RecordHeader> DecodeRecordHeader(std::string_view bytes, uint32_t pack_version) {
  const size_t size = RecordHeaderSize(pack_version);
  if (bytes.size() < size) return Corruption("record header is truncated");
  const char* p = bytes.data();
  if (GetBigEndian32(p) != kRecordMagic) return Corruption("bad record magic");
  if (GetBigEndian64(p + size - 8) != Checksum(bytes.substr(0, size - 8))) {
    return Corruption("record header checksum mismatch");
  }
  RecordHeader header;
  header.id = *ChunkId::FromBytes(bytes.substr(4, ChunkId::kSize));
  const auto codec = static_cast<uint8_t>(p[36]);
  if (!IsKnownCodec(codec)) return Corruption("unknown codec " + std::to_string(codec));
  header.codec = static_cast<Codec>(codec);
  header.raw_size = GetBigEndian32(p + 37);
  header.stored_size = GetBigEndian32(p + 41);
  if (pack_version != kPackVersion1) header.stored_checksum = GetBigEndian64(p + 45);
  if (!SizesPlausible(header.codec, header.raw_size, header.stored_size)) {
    return Corruption("record sizes are implausible");
  }
  return header;
}

std::string EncodePackIndex(const PackIndex& index) {
  std::string out(kIndexMagic);
  out.reserve(kIndexHeaderSize + index.entries.size() * kIndexEntrySize + kIndexTrailerSize);
  PutBigEndian32(&out, index.pack_version);
  PutBigEndian32(&out, 0);  // reserved
  PutBigEndian64(&out, index.pack_id);
  PutBigEndian64(&out, index.data_size);
  PutBigEndian32(&out, static_cast<uint32_t>(index.entries.size()));
  for (const IndexEntry& e : index.entries) {
    out.append(e.id.raw());
    PutBigEndian64(&out, e.offset);
    PutBigEndian32(&out, e.stored_size);
    PutBigEndian32(&out, e.raw_size);
    out.push_back(static_cast<char>(e.codec));
  }
  PutBigEndian64(&out, Checksum(out));
  return out;
}

Result<PackIndex> DecodePackIndex(std::string_view bytes, uint64_t expected_pack_id) {
  if (bytes.size() < kIndexHeaderSize + kIndexTrailerSize) return Corruption("index truncated");
  const size_t body = bytes.size() - kIndexTrailerSize;
  if (GetBigEndian64(bytes.data() + body) != Checksum(bytes.substr(0, body))) {
    return Corruption("index checksum mismatch");
  }
  if (bytes.substr(0, kIndexMagic.size()) != kIndexMagic) return Corruption("bad index magic");
  const char* p = bytes.data();
  PackIndex index;
  index.pack_version = GetBigEndian32(p + 8);
  if (!IsReadableVersion(index.pack_version)) return Corruption("unsupported index version");
  index.pack_id = GetBigEndian64(p + 16);
  index.data_size = GetBigEndian64(p + 24);
  const uint64_t count = GetBigEndian32(p + 32);
  if (index.pack_id != expected_pack_id) return Corruption("index names another pack");
  if (index.data_size < kPackHeaderSize || index.data_size > kMaxPackSize) {
    return Corruption("index data size out of range");
  }
  if (count * kIndexEntrySize != body - kIndexHeaderSize) {
    return Corruption("index entry count does not match its size");
  }
  index.entries.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    const char* e = p + kIndexHeaderSize + i * kIndexEntrySize;
    IndexEntry entry;
    entry.id = *ChunkId::FromBytes(std::string_view(e, ChunkId::kSize));
    entry.offset = GetBigEndian64(e + 32);
    entry.stored_size = GetBigEndian32(e + 40);
    entry.raw_size = GetBigEndian32(e + 44);
    const auto codec = static_cast<uint8_t>(e[48]);
    if (!IsKnownCodec(codec)) return Corruption("index entry has an unknown codec");
    entry.codec = static_cast<Codec>(codec);
    if (!SizesPlausible(entry.codec, entry.raw_size, entry.stored_size) ||
        entry.offset < kPackHeaderSize || entry.offset > index.data_size ||
        index.data_size - entry.offset < RecordHeaderSize(index.pack_version) + entry.stored_size) {
      return Corruption("index entry " + std::to_string(i) + " is out of range");
    }
    index.entries.push_back(entry);
  }
  return index;
}

std::string PackIdHex(uint64_t pack_id) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(pack_id));
  return buf;
}

}  // namespace weft::chunk_internal
