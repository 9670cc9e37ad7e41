#include "chunk/internal/pack_format.h"

#include <gtest/gtest.h>

namespace weft::chunk_internal {
namespace {

TEST(PackFormatTest, PackHeader) {
  const std::string header = EncodePackHeader();
  EXPECT_EQ(header.size(), kPackHeaderSize);
  EXPECT_EQ(CheckPackHeader(header).value_or(0), kPackVersion);
  EXPECT_EQ(CheckPackHeader(EncodePackHeader(kPackVersion1)).value_or(0), kPackVersion1);
  EXPECT_EQ(CheckPackHeader(header.substr(0, 10)).status().code(), StatusCode::kCorruption);
  std::string bad = header;
  bad[0] = 'X';
  EXPECT_EQ(CheckPackHeader(bad).status().code(), StatusCode::kCorruption);
  bad = header;
  bad[11] = 3;  // version 3
  EXPECT_EQ(CheckPackHeader(bad).status().code(), StatusCode::kCorruption);
}

TEST(PackFormatTest, RecordHeaderRoundTripAndEveryBitFlipIsCaught) {
  RecordHeader in{ChunkId::Of(AsBytes("x")), Codec::kZstd, 1000, 300, StoredChecksum("abc")};
  std::string bytes;
  AppendRecordHeader(in, &bytes);
  ASSERT_EQ(bytes.size(), kRecordHeaderSize);
  Result<RecordHeader> out = DecodeRecordHeader(bytes);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->id, in.id);
  EXPECT_EQ(out->codec, Codec::kZstd);
  EXPECT_EQ(out->raw_size, 1000u);
  EXPECT_EQ(out->stored_size, 300u);
  EXPECT_EQ(out->stored_checksum, StoredChecksum("abc"));
  for (size_t i = 0; i < bytes.size() * 8; ++i) {
    std::string flipped = bytes;
    flipped[i / 8] ^= static_cast<char>(1 << (i % 8));
    EXPECT_EQ(DecodeRecordHeader(flipped).status().code(), StatusCode::kCorruption) << i;
  }
  EXPECT_FALSE(DecodeRecordHeader(bytes.substr(0, kRecordHeaderSize - 1)).ok());
  // A version-2 header is not a version-1 one, nor the reverse.
  EXPECT_FALSE(DecodeRecordHeader(bytes, kPackVersion1).ok());
}

TEST(PackFormatTest, Version1RecordHeaderHasNoStoredChecksum) {
  RecordHeader in{ChunkId::Of(AsBytes("x")), Codec::kRaw, 10, 10, 12345};
  std::string bytes;
  AppendRecordHeader(in, &bytes, kPackVersion1);
  ASSERT_EQ(bytes.size(), kRecordHeaderSizeV1);
  Result<RecordHeader> out = DecodeRecordHeader(bytes, kPackVersion1);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->id, in.id);
  EXPECT_EQ(out->raw_size, 10u);
  EXPECT_EQ(out->stored_checksum, 0u);
  bytes.append(8, '\0');
  EXPECT_FALSE(DecodeRecordHeader(bytes).ok());
}

TEST(PackFormatTest, RecordHeaderRejectsImplausibleSizes) {
  std::string bytes;
  AppendRecordHeader({ChunkId(), Codec::kRaw, 10, 11}, &bytes);  // raw must be stored as is
  EXPECT_FALSE(DecodeRecordHeader(bytes).ok());
  bytes.clear();
  AppendRecordHeader({ChunkId(), Codec::kZstd, 10, 10}, &bytes);  // zstd must be smaller
  EXPECT_FALSE(DecodeRecordHeader(bytes).ok());
  bytes.clear();
  AppendRecordHeader({ChunkId(), Codec::kRaw, kMaxChunkSize + 1, kMaxChunkSize + 1}, &bytes);
  EXPECT_FALSE(DecodeRecordHeader(bytes).ok());
}

PackIndex SampleIndex() {
  PackIndex index;
  index.pack_id = 7;
  uint64_t offset = kPackHeaderSize;
  for (int i = 0; i < 5; ++i) {
    IndexEntry e{ChunkId::Of(AsBytes(std::to_string(i))), offset, 100, 100, Codec::kRaw};
    if (i % 2) e = {e.id, offset, 40, 100, Codec::kZstd};
    index.entries.push_back(e);
    offset += kRecordHeaderSize + e.stored_size;
  }
  index.data_size = offset;
  return index;
}

TEST(PackFormatTest, IndexRoundTrip) {
  const PackIndex in = SampleIndex();
  const std::string bytes = EncodePackIndex(in);
  EXPECT_EQ(bytes.size(), kIndexHeaderSize + 5 * kIndexEntrySize + kIndexTrailerSize);
  Result<PackIndex> out = DecodePackIndex(bytes, 7);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->data_size, in.data_size);
  ASSERT_EQ(out->entries.size(), in.entries.size());
  for (size_t i = 0; i < in.entries.size(); ++i) {
    EXPECT_EQ(out->entries[i].id, in.entries[i].id);
    EXPECT_EQ(out->entries[i].offset, in.entries[i].offset);
    EXPECT_EQ(out->entries[i].stored_size, in.entries[i].stored_size);
    EXPECT_EQ(out->entries[i].raw_size, in.entries[i].raw_size);
    EXPECT_EQ(out->entries[i].codec, in.entries[i].codec);
  }
  EXPECT_EQ(DecodePackIndex(bytes, 8).status().code(), StatusCode::kCorruption);
}

TEST(PackFormatTest, IndexKeepsThePackVersion) {
  PackIndex in = SampleIndex();
  in.pack_version = kPackVersion1;
  Result<PackIndex> out = DecodePackIndex(EncodePackIndex(in), 7);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->pack_version, kPackVersion1);
  EXPECT_EQ(DecodePackIndex(EncodePackIndex(SampleIndex()), 7)->pack_version, kPackVersion);
  in.pack_version = 3;
  EXPECT_EQ(DecodePackIndex(EncodePackIndex(in), 7).status().code(), StatusCode::kCorruption);
}

TEST(PackFormatTest, IndexCorruptionIsDetected) {
  const std::string bytes = EncodePackIndex(SampleIndex());
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string flipped = bytes;
    flipped[i] ^= 0x04;
    EXPECT_EQ(DecodePackIndex(flipped, 7).status().code(), StatusCode::kCorruption) << i;
  }
  for (size_t n : {size_t{0}, size_t{10}, bytes.size() - 1}) {
    EXPECT_FALSE(DecodePackIndex(bytes.substr(0, n), 7).ok());
  }
  // A well-formed index whose entry points past its data size.
  PackIndex bad = SampleIndex();
  bad.data_size -= 1;
  EXPECT_EQ(DecodePackIndex(EncodePackIndex(bad), 7).status().code(), StatusCode::kCorruption);
  bad = SampleIndex();
  bad.entries[0].offset = ~uint64_t{0} - 10;
  EXPECT_EQ(DecodePackIndex(EncodePackIndex(bad), 7).status().code(), StatusCode::kCorruption);
}

TEST(PackFormatTest, PackIdHex) {
  EXPECT_EQ(PackIdHex(7), "0000000000000007");
  EXPECT_EQ(PackIdHex(0xabcdef), "0000000000abcdef");
}

}  // namespace
}  // namespace weft::chunk_internal
