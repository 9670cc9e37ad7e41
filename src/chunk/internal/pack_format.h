// Encoding and decoding of the pack file and pack index formats (docs/formats/pack.md and
// docs/formats/chunk-index.md). Pure functions over byte strings; thread-safe. Decoders treat
// their input as untrusted: every failure is a Corruption status, never an assert.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "chunk/chunk_id.h"
#include "chunk/codec.h"

namespace weft::chunk_internal {

inline constexpr std::string_view kPackMagic = "WEFTPACK";
// New packs are written in version 2; version-1 packs (no checksum of the stored bytes) are
// still read, and Sweep rewrites their live records as version 2.
inline constexpr uint32_t kPackVersion = 2;
inline constexpr uint32_t kPackVersion1 = 1;
inline constexpr size_t kPackHeaderSize = 16;

inline constexpr uint32_t kRecordMagic = 0x57524543;  // "WREC"
// magic 4, chunk id 32, codec 1, raw length 4, stored length 4, stored-bytes checksum 8,
// header checksum 8.
inline constexpr size_t kRecordHeaderSize = 61;
// Version 1 lacks the stored-bytes checksum.
inline constexpr size_t kRecordHeaderSizeV1 = 53;
constexpr size_t RecordHeaderSize(uint32_t pack_version) {
  return pack_version == kPackVersion1 ? kRecordHeaderSizeV1 : kRecordHeaderSize;
}

// An index's version is that of the pack it describes (same layout for both).
inline constexpr std::string_view kIndexMagic = "WEFTPIDX";
inline constexpr size_t kIndexHeaderSize = 36;
inline constexpr size_t kIndexEntrySize = 49;
inline constexpr size_t kIndexTrailerSize = 8;

// Larger chunks are refused by Put and treated as corruption when read; it also bounds what a
// corrupt length field can make a reader allocate.
inline constexpr uint32_t kMaxChunkSize = 64 << 20;
// Offsets in a pack are 32-bit (see Location); a pack never grows past this.
inline constexpr uint64_t kMaxPackSize = uint64_t{1} << 32;

struct RecordHeader {
  ChunkId id;
  Codec codec = Codec::kRaw;
  uint32_t raw_size = 0;
  uint32_t stored_size = 0;
  uint64_t stored_checksum = 0;  // StoredChecksum of the stored bytes; version 2 only
};

// What the index says about one record. offset is where its header starts in the pack.
struct IndexEntry {
  ChunkId id;
  uint64_t offset = 0;
  uint32_t stored_size = 0;
  uint32_t raw_size = 0;
  Codec codec = Codec::kRaw;
};

struct PackIndex {
  uint64_t pack_id = 0;
  uint64_t data_size = 0;  // end of the last record the index covers
  uint32_t pack_version = kPackVersion;
  std::vector<IndexEntry> entries;
};

// XXH3-64 of a record's stored bytes: what reads check (docs/formats/pack.md, "Reading").
uint64_t StoredChecksum(std::string_view stored);

std::string EncodePackHeader(uint32_t version = kPackVersion);
// The pack's format version; Corruption unless `header` is kPackHeaderSize bytes of a pack
// header of a version this code reads.
Result<uint32_t> CheckPackHeader(std::string_view header);

// Version 1 is written only by tests (packs made by older releases).
void AppendRecordHeader(const RecordHeader& header, std::string* out,
                        uint32_t pack_version = kPackVersion);
// Checks magic, checksum and bounds of a RecordHeaderSize(pack_version)-byte header.
Result<RecordHeader> DecodeRecordHeader(std::string_view bytes,
                                        uint32_t pack_version = kPackVersion);

std::string EncodePackIndex(const PackIndex& index);
// Checks magic, version, checksum, pack id and that every entry lies inside data_size.
Result<PackIndex> DecodePackIndex(std::string_view bytes, uint64_t expected_pack_id);

// "0000000000000007": how packs are named in files and messages.
std::string PackIdHex(uint64_t pack_id);

}  // namespace weft::chunk_internal
