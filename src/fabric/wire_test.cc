// Chunk frames: plain and zstd frames round-trip; a delta frame carries an edit of its base in
// about the edit's size, decodes only against that base, and says so when the base is gone;
// hostile frames are refused.
#include "fabric/wire.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "base/test_util.h"
#include "base/utf8.h"

namespace weft::fabric {
namespace {

using testutil::RandomBytes;

TEST(WireTest, DeltaFramesCarryAnEditInAboutItsSize) {
  const std::string base = RandomBytes(200'000, 1);
  std::string edited = base;
  const std::string patch = RandomBytes(2'000, 2);
  edited.replace(50'000, patch.size(), patch);
  const ChunkId base_id = ChunkId::Of(AsBytes(base)), id = ChunkId::Of(AsBytes(edited));
  const DeltaBase delta{base_id, base};
  std::string plain_frame, delta_frame;
  AppendChunkFrame(id, edited, &plain_frame);
  AppendChunkFrame(id, edited, &delta_frame, {&delta, 1});
  EXPECT_GT(plain_frame.size(), 200'000u);
  EXPECT_LT(delta_frame.size(), 2'000u + 200);

  auto base_bytes = std::make_shared<const std::string>(base);
  const BaseLookup bases = [&](const ChunkId& want) -> std::shared_ptr<const std::string> {
    return want == base_id ? base_bytes : nullptr;
  };
  std::string_view in = delta_frame;
  auto frame = NextChunkFrame(&in, &bases);
  ASSERT_TRUE(frame.ok()) << frame.status().ToString();
  ASSERT_TRUE(*frame);
  EXPECT_FALSE((*frame)->unresolved);
  EXPECT_EQ((*frame)->plaintext, edited);
  EXPECT_TRUE(in.empty());

  // Without its base: consumed, and flagged, so the chunk is asked for again.
  const BaseLookup none = [](const ChunkId&) -> std::shared_ptr<const std::string> {
    return nullptr;
  };
  in = delta_frame;
  frame = NextChunkFrame(&in, &none);
  ASSERT_TRUE(frame.ok());
  EXPECT_TRUE((*frame)->unresolved);
  EXPECT_TRUE(in.empty());
  // Where no delta may come (an upload to the hub), and against the wrong base: refused.
  in = delta_frame;
  EXPECT_EQ(NextChunkFrame(&in).status().code(), StatusCode::kInvalidArgument);
  auto wrong_bytes = std::make_shared<const std::string>(RandomBytes(200'000, 3));
  const BaseLookup wrong = [&](const ChunkId&) { return wrong_bytes; };
  in = delta_frame;
  EXPECT_EQ(NextChunkFrame(&in, &wrong).status().code(), StatusCode::kInvalidArgument);
  // A truncated delta frame.
  std::string cut = delta_frame.substr(0, kFrameHeaderBytes + 10);
  cut[kFrameHeaderBytes - 4] = 0;  // stored length 10: shorter than a base id
  cut[kFrameHeaderBytes - 3] = 0;
  cut[kFrameHeaderBytes - 2] = 0;
  cut[kFrameHeaderBytes - 1] = 10;
  in = cut;
  EXPECT_EQ(NextChunkFrame(&in, &bases).status().code(), StatusCode::kInvalidArgument);
}

TEST(WireTest, AnUnrelatedBaseFallsBackToThePlainFrame) {
  const std::string data = std::string(100'000, 'a');  // compresses well on its own
  const std::string other = RandomBytes(100'000, 4);
  const DeltaBase delta{ChunkId::Of(AsBytes(other)), other};
  std::string with, without;
  AppendChunkFrame(ChunkId::Of(AsBytes(data)), data, &without);
  AppendChunkFrame(ChunkId::Of(AsBytes(data)), data, &with, {&delta, 1});
  EXPECT_LE(with.size(), without.size());
  std::string_view in = with;
  auto frame = NextChunkFrame(&in);  // no delta inside: no bases needed
  ASSERT_TRUE(frame.ok()) << frame.status().ToString();
  EXPECT_EQ((*frame)->plaintext, data);
}

TEST(WireTest, NamesThatAreNotUtf8CrossTheFabricExactly) {
  const std::string latin1 = "/data/caf\xe9.jpg";  // a Latin-1 name, as old tools write them
  const std::string raw = std::string("/d/\xff\xfe\x80", 6);
  json message = {{"path", latin1},
                  {"paths", {raw, "/plain", latin1}},
                  {"attributes", {{"$bytes", "00"}, {"$$x", "y"}, {"k", "v"}}},
                  {"note", "$bytes"},
                  {"n", 7}};
  const std::string text = DumpJson(message);
  EXPECT_TRUE(IsValidUtf8(text));
  EXPECT_EQ(text.find('\xe9'), std::string::npos);
  auto back = ParseJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, message);  // the user's "$"-keys included: nothing else decodes as a name

  // Plain messages are sent as they are, and parse as they are.
  const json plain = {{"path", "/data/ok"}, {"lease_ms", 5000}};
  EXPECT_EQ(DumpJson(plain), plain.dump());
  EXPECT_EQ(*ParseJson(plain.dump()), plain);
  // A forged marker is refused, not taken as a name.
  EXPECT_EQ(ParseJson(R"({"path": {"$bytes": "zz"}})").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(WireTest, CompressedJsonAnswersRoundTripAndRefuseWhatTheyCannotBe) {
  json listing = json::array();
  for (int i = 0; i < 200; ++i) {
    listing.push_back({{"name", "img_" + std::to_string(1000000 + i) + ".jpg"},
                       {"version", std::to_string(i) + ".77"}});
  }
  const std::string text = DumpJson(listing);
  std::optional<std::string> body = CompressAnswer(text);
  ASSERT_TRUE(body.has_value());
  EXPECT_LT(body->size(), text.size() / 3);
  auto back = DecompressAnswer(*body);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, text);

  // Small answers go as they are.
  EXPECT_FALSE(CompressAnswer(R"({"lease_ms": 5000})").has_value());
  // A body that lies about its length, claims too much, or is cut, is refused.
  std::string longer = *body;
  longer[3] = static_cast<char>(longer[3] + 1);
  EXPECT_EQ(DecompressAnswer(longer).status().code(), StatusCode::kInvalidArgument);
  std::string huge = *body;
  huge[0] = '\x7f';
  EXPECT_EQ(DecompressAnswer(huge).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DecompressAnswer(body->substr(0, body->size() / 2)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(DecompressAnswer("ab").status().code(), StatusCode::kInvalidArgument);
}

TEST(WireTest, ADeltaOverSeveralBasesCarriesContentThatMovedAcrossOldChunks) {
  // Three old chunks; the new chunk is the end of the first, all of the second and the start
  // of the third, with a few bytes deleted here and there: no single base holds it.
  const std::string a = RandomBytes(60'000, 11), b = RandomBytes(60'000, 12),
                    c = RandomBytes(60'000, 13);
  std::string moved = a.substr(30'000) + b + c.substr(0, 30'000);
  for (size_t at : {100'000u, 50'000u, 10'000u}) moved.erase(at, 7);
  const ChunkId id = ChunkId::Of(AsBytes(moved));
  const std::vector<DeltaBase> bases = {
      {ChunkId::Of(AsBytes(a)), a}, {ChunkId::Of(AsBytes(b)), b}, {ChunkId::Of(AsBytes(c)), c}};
  std::string one, several;
  AppendChunkFrame(id, moved, &one, {&bases[1], 1});
  AppendChunkFrame(id, moved, &several, bases);
  EXPECT_GT(one.size(), 55'000u);  // a and c's parts cost their size against b alone
  EXPECT_LT(several.size(), 1'000u);

  std::map<ChunkId, std::shared_ptr<const std::string>> held;
  for (const DeltaBase& d : bases) held[d.id] = std::make_shared<const std::string>(d.plaintext);
  const BaseLookup lookup = [&](const ChunkId& want) -> std::shared_ptr<const std::string> {
    auto it = held.find(want);
    return it == held.end() ? nullptr : it->second;
  };
  std::string_view in = several;
  auto frame = NextChunkFrame(&in, &lookup);
  ASSERT_TRUE(frame.ok()) << frame.status().ToString();
  EXPECT_EQ((*frame)->plaintext, moved);
  EXPECT_TRUE(in.empty());

  // One base gone: consumed and flagged, like a single-base delta.
  held.erase(bases[2].id);
  in = several;
  frame = NextChunkFrame(&in, &lookup);
  ASSERT_TRUE(frame.ok());
  EXPECT_TRUE((*frame)->unresolved);
  EXPECT_TRUE(in.empty());

  // A count byte outside 2..kMaxDeltaBases is refused.
  for (char count : {'\0', '\1', static_cast<char>(kMaxDeltaBases + 1)}) {
    std::string bad = several;
    bad[kFrameHeaderBytes] = count;
    in = bad;
    EXPECT_EQ(NextChunkFrame(&in, &lookup).status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(WireTest, DeltaBasesAreTheOldChunksOfTheSameOrTheScaledRegion) {
  const std::vector<uint64_t> ends = {100, 200, 300, 400, 500, 600, 700, 800, 900, 1000};
  // Unchanged size: the chunk at the same place and its neighbours' edges.
  EXPECT_EQ(DeltaBaseIndices(ends, 300, 400, 1000), (std::vector<size_t>{2, 3, 4}));
  // Past the old end (an append): the last old chunks.
  EXPECT_EQ(DeltaBaseIndices(ends, 1000, 1100, 1100), (std::vector<size_t>{6, 7, 8, 9}));
  EXPECT_EQ(DeltaBaseIndices({100, 200}, 200, 300, 300), (std::vector<size_t>{0, 1}));
  // Half the content deleted all through: the new [400, 450) came from about [800, 900).
  const std::vector<size_t> shrunk = DeltaBaseIndices(ends, 400, 450, 500);
  EXPECT_LE(shrunk.size(), kMaxDeltaBases);
  EXPECT_TRUE(std::find(shrunk.begin(), shrunk.end(), 8) != shrunk.end());
  EXPECT_TRUE(std::find(shrunk.begin(), shrunk.end(), 4) != shrunk.end());
  EXPECT_TRUE(std::is_sorted(shrunk.begin(), shrunk.end()));
  // Never more than kMaxDeltaBases, however small the old chunks.
  std::vector<uint64_t> tiny;
  for (uint64_t e = 10; e <= 1000; e += 10) tiny.push_back(e);
  EXPECT_EQ(DeltaBaseIndices(tiny, 200, 600, 1000).size(), kMaxDeltaBases);
  EXPECT_TRUE(DeltaBaseIndices({}, 0, 10, 10).empty());
}

}  // namespace
}  // namespace weft::fabric
