#include "chunk/splitter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>

#include "base/test_util.h"
#include "chunk/chunk_id.h"

namespace weft {
namespace {

using testutil::RandomBytes;

struct Chunk {
  uint64_t offset;
  std::string bytes;
};

// Splits `data` by writing it in pieces of `piece` bytes.
std::vector<Chunk> Split(std::string_view data, const ChunkerOptions& options,
                         size_t piece = SIZE_MAX) {
  std::vector<Chunk> chunks;
  uint64_t offset = 0;
  StreamSplitter splitter(options, [&](ByteSpan chunk) {
    chunks.push_back({offset, std::string(AsChars(chunk))});
    offset += chunk.size();
    return OkStatus();
  });
  for (size_t i = 0; i < data.size(); i += piece) {
    EXPECT_TRUE(splitter.Write(AsBytes(data.substr(i, piece))).ok());
  }
  EXPECT_TRUE(splitter.Finish().ok());
  EXPECT_EQ(splitter.bytes_written(), data.size());
  return chunks;
}

std::string Join(const std::vector<Chunk>& chunks) {
  std::string out;
  for (const Chunk& c : chunks) out += c.bytes;
  return out;
}

std::multiset<std::string> Ids(const std::vector<Chunk>& chunks) {
  std::multiset<std::string> ids;
  for (const Chunk& c : chunks) ids.insert(ChunkId::Of(AsBytes(c.bytes)).ToHex());
  return ids;
}

std::vector<uint64_t> Boundaries(const std::vector<Chunk>& chunks) {
  std::vector<uint64_t> b;
  for (const Chunk& c : chunks) b.push_back(c.offset);
  return b;
}

ChunkerOptions SmallOptions() {
  ChunkerOptions o;
  o.min_size = 2 * 1024;
  o.avg_size = 8 * 1024;
  o.max_size = 32 * 1024;
  return o;
}

TEST(ChunkerOptionsTest, Validate) {
  EXPECT_TRUE(ChunkerOptions().Validate().ok());
  ChunkerOptions o;
  o.avg_size = 60000;
  EXPECT_EQ(o.Validate().code(), StatusCode::kInvalidArgument);
  o = ChunkerOptions();
  o.min_size = 32;
  EXPECT_FALSE(o.Validate().ok());
  o = ChunkerOptions();
  o.min_size = o.avg_size * 2;
  EXPECT_FALSE(o.Validate().ok());
  o = ChunkerOptions();
  o.max_size = o.avg_size / 2;
  EXPECT_FALSE(o.Validate().ok());
  o = SmallOptions();
  EXPECT_TRUE(o.Validate().ok());
}

TEST(ChunkerTest, CutsStayWithinBoundsAndAreContentDefined) {
  const ChunkerOptions o;
  Chunker chunker(o);
  const std::string data = RandomBytes(1 << 20, 1);
  const ByteSpan all = AsBytes(data);
  EXPECT_EQ(chunker.NextCut(all.first(100)), 100u);
  EXPECT_EQ(chunker.NextCut(all.first(o.min_size)), o.min_size);
  const size_t cut = chunker.NextCut(all);
  EXPECT_GT(cut, o.min_size);
  EXPECT_LE(cut, o.max_size);
  // The cut does not depend on how much data follows it.
  EXPECT_EQ(chunker.NextCut(all.first(o.max_size)), cut);
  EXPECT_EQ(chunker.NextCut(all.first(cut)), cut);
  // All-zero data never matches the mask: cut at max_size.
  const std::string zeros(o.max_size * 2, '\0');
  EXPECT_EQ(chunker.NextCut(AsBytes(zeros)), o.max_size);
}

TEST(StreamSplitterTest, DeterministicAndLossless) {
  const std::string data = RandomBytes(8 << 20, 2);
  const std::vector<Chunk> a = Split(data, ChunkerOptions());
  const std::vector<Chunk> b = Split(data, ChunkerOptions());
  ASSERT_EQ(Boundaries(a), Boundaries(b));
  EXPECT_EQ(Join(a), data);
}

TEST(StreamSplitterTest, ChunkSizesWithinBoundsAndAverageNearTarget) {
  const ChunkerOptions o;
  const std::string data = RandomBytes(32 << 20, 3);
  const std::vector<Chunk> chunks = Split(data, o);
  ASSERT_GT(chunks.size(), 100u);
  for (size_t i = 0; i + 1 < chunks.size(); ++i) {
    EXPECT_GE(chunks[i].bytes.size(), o.min_size);
    EXPECT_LE(chunks[i].bytes.size(), o.max_size);
  }
  EXPECT_LE(chunks.back().bytes.size(), o.max_size);
  const double average = static_cast<double>(data.size()) / chunks.size();
  EXPECT_GT(average, 0.8 * o.avg_size);
  EXPECT_LT(average, 1.4 * o.avg_size);
}

TEST(StreamSplitterTest, InsertNearStartKeepsLaterChunks) {
  const std::string data = RandomBytes(4 << 20, 4);
  std::string edited = data;
  edited.insert(1000, "a few inserted bytes");
  const std::multiset<std::string> before = Ids(Split(data, ChunkerOptions()));
  const std::vector<Chunk> after = Split(edited, ChunkerOptions());
  size_t unchanged = 0;
  for (const Chunk& c : after) unchanged += before.count(ChunkId::Of(AsBytes(c.bytes)).ToHex());
  // Only the chunk holding the edit (and perhaps its successor) may differ.
  EXPECT_GE(unchanged + 2, after.size());
  EXPECT_GT(after.size(), 30u);
}

TEST(StreamSplitterTest, WriteSizesDoNotChangeChunks) {
  const std::string data = RandomBytes(3 << 20, 5);
  const std::vector<uint64_t> whole = Boundaries(Split(data, ChunkerOptions()));
  EXPECT_EQ(Boundaries(Split(data, ChunkerOptions(), 1)), whole);
  EXPECT_EQ(Boundaries(Split(data, ChunkerOptions(), 7)), whole);
  EXPECT_EQ(Boundaries(Split(data, ChunkerOptions(), 1 << 20)), whole);
}

// Writes of random sizes (some under a tar block, some over max_size), so that cuts fall on
// both sides of write boundaries and chunks span two writes, tar or not.
std::vector<uint64_t> SplitInRandomPieces(std::string_view data, const ChunkerOptions& options,
                                          uint32_t seed) {
  std::vector<uint64_t> boundaries;
  uint64_t offset = 0;
  StreamSplitter splitter(options, [&](ByteSpan chunk) {
    boundaries.push_back(offset);
    offset += chunk.size();
    return OkStatus();
  });
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> piece(1, 3 * options.max_size);
  for (size_t i = 0; i < data.size();) {
    const size_t n = std::min(data.size() - i, rng() % 4 == 0 ? rng() % 600 + 1 : piece(rng));
    EXPECT_TRUE(splitter.Write(AsBytes(data.substr(i, n))).ok());
    i += n;
  }
  EXPECT_TRUE(splitter.Finish().ok());
  EXPECT_EQ(offset, data.size());
  return boundaries;
}

TEST(StreamSplitterTest, IrregularWriteSizesDoNotChangeChunks) {
  const std::string data = RandomBytes(2 << 20, 8);
  for (const ChunkerOptions& o : {SmallOptions(), ChunkerOptions()}) {
    const std::vector<uint64_t> whole = Boundaries(Split(data, o));
    for (uint32_t seed = 1; seed <= 5; ++seed) {
      EXPECT_EQ(SplitInRandomPieces(data, o, seed), whole) << "seed " << seed;
    }
  }
}

// A large write is cut where it lies: the sink sees views of the caller's bytes, and only the
// chunks that span two writes are copied.
TEST(StreamSplitterTest, LargeWritesAreCutInPlace) {
  const std::string data = RandomBytes(8 << 20, 9);
  constexpr size_t kPiece = 1 << 20;
  const char* piece_begin = nullptr;
  size_t in_place = 0;
  size_t total = 0;
  StreamSplitter splitter(ChunkerOptions(), [&](ByteSpan chunk) {
    const char* p = reinterpret_cast<const char*>(chunk.data());
    if (p >= piece_begin && p + chunk.size() <= piece_begin + kPiece) in_place += chunk.size();
    total += chunk.size();
    return OkStatus();
  });
  for (size_t i = 0; i < data.size(); i += kPiece) {
    const std::string piece = data.substr(i, kPiece);  // a buffer of its own, as a reader's
    piece_begin = piece.data();
    ASSERT_TRUE(splitter.Write(AsBytes(piece)).ok());
  }
  ASSERT_TRUE(splitter.Finish().ok());
  EXPECT_EQ(total, data.size());
  // At most about one chunk (up to 256 KiB) per write crosses a write boundary.
  EXPECT_GT(in_place, data.size() / 2);
}

TEST(StreamSplitterTest, EmitsWhileStreaming) {
  const ChunkerOptions o = SmallOptions();
  size_t emitted = 0;
  StreamSplitter splitter(o, [&](ByteSpan chunk) {
    emitted += chunk.size();
    return OkStatus();
  });
  const std::string data = RandomBytes(20 * o.max_size, 6);
  for (size_t i = 0; i < data.size(); i += 4096) {
    ASSERT_TRUE(splitter.Write(AsBytes(data).subspan(i, 4096)).ok());
    // The splitter holds back less than max_size plus a tar header.
    ASSERT_LT(i + 4096 - emitted, o.max_size + 512u);
  }
  ASSERT_TRUE(splitter.Finish().ok());
  EXPECT_EQ(emitted, data.size());
}

TEST(StreamSplitterTest, EmptyAndTinyStreams) {
  EXPECT_TRUE(Split("", ChunkerOptions()).empty());
  const std::vector<Chunk> one = Split("hello", ChunkerOptions());
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].bytes, "hello");
}

TEST(StreamSplitterTest, SinkErrorStopsTheStream) {
  // Not tar-aware, the first write is cut in place; tar-aware, it is buffered until its first
  // 512 bytes are seen.
  for (bool tar_aware : {false, true}) {
    SCOPED_TRACE(tar_aware ? "tar-aware" : "not tar-aware");
    ChunkerOptions o = SmallOptions();
    o.tar_aware = tar_aware;
    int calls = 0;
    StreamSplitter splitter(o, [&](ByteSpan) {
      ++calls;
      return ResourceExhausted("disk full");
    });
    const std::string data = RandomBytes(1 << 20, 7);
    Status s = splitter.Write(AsBytes(data));
    EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(splitter.Write(AsBytes(data)).code(), StatusCode::kResourceExhausted);
    EXPECT_EQ(splitter.Finish().code(), StatusCode::kResourceExhausted);
    EXPECT_EQ(calls, 1);
  }
}

TEST(StreamSplitterTest, WriteAfterFinishFails) {
  StreamSplitter splitter(SmallOptions(), [](ByteSpan) { return OkStatus(); });
  ASSERT_TRUE(splitter.Finish().ok());
  EXPECT_EQ(splitter.Write(AsBytes("x")).code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(splitter.Finish().ok());
}

// ---- tar ----

std::string TarHeader(const std::string& name, uint64_t size, char type = '0',
                      bool base256 = false) {
  std::string h(512, '\0');
  std::memcpy(&h[0], name.data(), std::min<size_t>(name.size(), 99));
  std::snprintf(&h[100], 8, "%07o", 0644);
  std::snprintf(&h[108], 8, "%07o", 1000);
  std::snprintf(&h[116], 8, "%07o", 1000);
  if (base256) {
    h[124] = static_cast<char>(0x80);
    for (int i = 0; i < 8; ++i) h[135 - i] = static_cast<char>((size >> (8 * i)) & 0xff);
  } else {
    std::snprintf(&h[124], 12, "%011llo", static_cast<unsigned long long>(size));
  }
  std::snprintf(&h[136], 12, "%011o", 1700000000);
  h[156] = type;
  std::memcpy(&h[257], "ustar", 6);
  h[263] = '0';
  h[264] = '0';
  std::memset(&h[148], ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(&h[148], 8, "%06o", sum);
  h[155] = ' ';
  return h;
}

struct Member {
  std::string name;
  std::string data;
  char type = '0';
  bool base256 = false;
};

struct Tar {
  std::string bytes;
  std::vector<uint64_t> header_offsets;
  std::vector<std::pair<uint64_t, uint64_t>> data_ranges;  // [start, end incl. padding)
};

Tar BuildTar(const std::vector<Member>& members) {
  Tar tar;
  for (const Member& m : members) {
    tar.header_offsets.push_back(tar.bytes.size());
    tar.bytes += TarHeader(m.name, m.data.size(), m.type, m.base256);
    const uint64_t start = tar.bytes.size();
    tar.bytes += m.data;
    tar.bytes.resize((tar.bytes.size() + 511) / 512 * 512, '\0');
    tar.data_ranges.emplace_back(start, tar.bytes.size());
  }
  tar.bytes.append(1024, '\0');
  return tar;
}

std::vector<Member> SampleMembers() {
  return {
      {"a.bin", RandomBytes(300 * 1024, 10)},
      {"dir/", "", '5'},
      {"b.bin", RandomBytes(5000, 11)},
      {"c.bin", RandomBytes(1 << 20, 12)},
      {"d.txt", std::string(700, 'd')},
      {"e.bin", RandomBytes(200 * 1024, 13)},
      {"empty", ""},
      {"f.bin", RandomBytes(70 * 1024, 14)},
  };
}

bool IsBoundary(const std::vector<Chunk>& chunks, uint64_t offset) {
  for (const Chunk& c : chunks) {
    if (c.offset == offset) return true;
  }
  return false;
}

TEST(StreamSplitterTarTest, MemberHeadersAndDataStartsAreCuts) {
  const Tar tar = BuildTar(SampleMembers());
  const std::vector<Chunk> chunks = Split(tar.bytes, SmallOptions());
  EXPECT_EQ(Join(chunks), tar.bytes);
  for (uint64_t h : tar.header_offsets) EXPECT_TRUE(IsBoundary(chunks, h)) << h;
  for (auto [start, end] : tar.data_ranges) {
    EXPECT_TRUE(IsBoundary(chunks, start)) << start;
    EXPECT_TRUE(IsBoundary(chunks, end) || end == tar.bytes.size()) << end;
  }
  for (const Chunk& c : chunks) EXPECT_LE(c.bytes.size(), SmallOptions().max_size);
  // Every write size gives the same chunks, tar or not.
  EXPECT_EQ(Boundaries(Split(tar.bytes, SmallOptions(), 1)), Boundaries(chunks));
  EXPECT_EQ(Boundaries(Split(tar.bytes, SmallOptions(), 7)), Boundaries(chunks));
  EXPECT_EQ(Boundaries(Split(tar.bytes, SmallOptions(), 100000)), Boundaries(chunks));
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    EXPECT_EQ(SplitInRandomPieces(tar.bytes, SmallOptions(), seed), Boundaries(chunks));
  }
}

// A write larger than the splitter cuts in place at once (8 MiB) gives the same chunks, tar
// or not; and a tar of tiny members in one write is cut like its pieces.
TEST(StreamSplitterTarTest, WritesLargerThanASliceCutTheSame) {
  const std::string random = RandomBytes(20 << 20, 21);
  EXPECT_EQ(Boundaries(Split(random, ChunkerOptions())),
            Boundaries(Split(random, ChunkerOptions(), 1 << 20)));
  std::vector<Member> tiny;
  for (int i = 0; i < 12000; ++i) tiny.push_back({"m" + std::to_string(i), "x"});
  const Tar tar = BuildTar(tiny);
  ASSERT_GT(tar.bytes.size(), 8u << 20);
  const std::vector<Chunk> whole = Split(tar.bytes, SmallOptions());
  EXPECT_EQ(Boundaries(whole), Boundaries(Split(tar.bytes, SmallOptions(), 1 << 20)));
  for (uint64_t h : {tar.header_offsets[1], tar.header_offsets[9000]}) {
    EXPECT_TRUE(IsBoundary(whole, h)) << h;
  }
}

// The chunk format: these inputs must keep these cut points (any change to them changes
// every chunk id, and a new version would no longer dedup against data stored before). The
// digests were taken with the splitter of d8bb8c4, which copied every byte before cutting.
TEST(StreamSplitterTarTest, CutPointsAreThoseOfTheChunkFormat) {
  auto digest = [](const std::vector<Chunk>& chunks) {
    std::string joined;
    for (const Chunk& c : chunks) joined += std::to_string(c.offset) + ",";
    return ChunkId::Of(AsBytes(joined)).ToHex().substr(0, 16);
  };
  const std::string random = RandomBytes(6 << 20, 23);
  EXPECT_EQ(digest(Split(random, ChunkerOptions(), 100000)), "9893835a7813f229");
  const Tar tar = BuildTar(SampleMembers());
  EXPECT_EQ(digest(Split(tar.bytes, SmallOptions(), 4096)), "9d2e8c38b3c169c1");
}

TEST(StreamSplitterTarTest, ResizingOneMemberKeepsEveryOtherMembersChunks) {
  std::vector<Member> members = SampleMembers();
  const Tar before = BuildTar(members);
  members[2].data += RandomBytes(3333, 15);  // b.bin grows; everything after it shifts
  const Tar after = BuildTar(members);
  for (const ChunkerOptions& o : {SmallOptions(), ChunkerOptions()}) {
    const std::vector<Chunk> old_chunks = Split(before.bytes, o);
    const std::multiset<std::string> new_ids = Ids(Split(after.bytes, o));
    size_t checked = 0;
    for (const Chunk& c : old_chunks) {
      const uint64_t end = c.offset + c.bytes.size();
      // Chunks inside b.bin's header or data are allowed to change.
      if (end > before.header_offsets[2] && c.offset < before.data_ranges[2].second) continue;
      EXPECT_EQ(new_ids.count(ChunkId::Of(AsBytes(c.bytes)).ToHex()), 1u)
          << "chunk at " << c.offset << " of " << c.bytes.size() << " bytes was lost";
      ++checked;
    }
    EXPECT_GT(checked, 10u);
  }
}

TEST(StreamSplitterTarTest, GnuBase256SizeIsFollowed) {
  std::vector<Member> members = SampleMembers();
  members[3].base256 = true;
  const Tar tar = BuildTar(members);
  const std::vector<Chunk> chunks = Split(tar.bytes, SmallOptions());
  EXPECT_EQ(Join(chunks), tar.bytes);
  for (uint64_t h : tar.header_offsets) EXPECT_TRUE(IsBoundary(chunks, h)) << h;
}

TEST(StreamSplitterTarTest, NotATarWhenFirstHeaderIsInvalid) {
  Tar tar = BuildTar(SampleMembers());
  tar.bytes[148] ^= 1;  // checksum no longer matches
  const std::vector<Chunk> plain = Split(tar.bytes, SmallOptions());
  EXPECT_EQ(Join(plain), tar.bytes);
  ChunkerOptions no_tar = SmallOptions();
  no_tar.tar_aware = false;
  EXPECT_EQ(Boundaries(plain), Boundaries(Split(tar.bytes, no_tar)));
}

TEST(StreamSplitterTarTest, InvalidLaterHeaderEndsTarModeOnly) {
  Tar tar = BuildTar(SampleMembers());
  const uint64_t bad = tar.header_offsets[3];
  tar.bytes[bad + 124] = 'x';  // size field is not octal (checksum now wrong too)
  const std::vector<Chunk> chunks = Split(tar.bytes, SmallOptions());
  EXPECT_EQ(Join(chunks), tar.bytes);
  for (int i = 0; i <= 3; ++i) EXPECT_TRUE(IsBoundary(chunks, tar.header_offsets[i]));
  EXPECT_EQ(Boundaries(Split(tar.bytes, SmallOptions(), 7)), Boundaries(chunks));
}

TEST(StreamSplitterTarTest, MalformedHeadersNeverCrash) {
  const ChunkerOptions o = SmallOptions();
  std::vector<std::string> cases;
  // A size far past the end of the stream.
  cases.push_back(TarHeader("huge", uint64_t{1} << 40) + RandomBytes(100000, 20));
  // Base-256 sizes: maximal positive, negative, and an undefined leading byte.
  for (uint8_t lead : {uint8_t{0x80}, uint8_t{0xff}, uint8_t{0xc0}}) {
    std::string h = TarHeader("b256", 0);
    h[124] = static_cast<char>(lead);
    std::memset(&h[125], 0xff, 11);
    std::memset(&h[148], ' ', 8);
    unsigned sum = 0;
    for (unsigned char c : h) sum += c;
    std::snprintf(&h[148], 8, "%06o", sum);
    h[155] = ' ';
    cases.push_back(h + RandomBytes(50000, 21));
  }
  // Truncated in the middle of the first and of a later header.
  const Tar tar = BuildTar(SampleMembers());
  cases.push_back(tar.bytes.substr(0, 300));
  cases.push_back(tar.bytes.substr(0, tar.header_offsets[4] + 200));
  // Old GNU sparse member with extension headers.
  std::string sparse = TarHeader("sparse", 4096, 'S');
  sparse[482] = 1;
  std::memset(&sparse[148], ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : sparse) sum += c;
  std::snprintf(&sparse[148], 8, "%06o", sum);
  sparse[155] = ' ';
  cases.push_back(sparse + RandomBytes(20000, 22));
  // Random corruption of a real archive.
  std::mt19937_64 rng(23);
  for (int i = 0; i < 40; ++i) {
    std::string mutated = tar.bytes;
    for (int j = 0; j < 20; ++j) {
      const uint64_t h = tar.header_offsets[rng() % tar.header_offsets.size()];
      mutated[h + rng() % 512] = static_cast<char>(rng());
    }
    cases.push_back(mutated);
  }
  for (const std::string& data : cases) {
    const std::vector<Chunk> chunks = Split(data, o);
    ASSERT_EQ(Join(chunks), data);
    for (const Chunk& c : chunks) {
      ASSERT_GT(c.bytes.size(), 0u);
      ASSERT_LE(c.bytes.size(), o.max_size);
    }
    ASSERT_EQ(Boundaries(Split(data, o, 997)), Boundaries(chunks));
  }
}

}  // namespace
}  // namespace weft
