// ContentWriter against an in-memory ChunkHolder: what it records, stores and holds, and which
// ETag it gives, whatever volume it writes for.
#include "vfs/content_writer.h"

#include <gtest/gtest.h>

#include <map>

#include "base/test_util.h"
#include "chunk/zero_chunks.h"

namespace weft {
namespace {

using testutil::RandomBytes;

// Chunks in a map; holds counted per id, so a test sees every hold released exactly once.
class MemHolder final : public ChunkHolder {
 public:
  Status Put(const ChunkId& id, ByteSpan data) override {
    ++holds[id];
    if (fail_puts) return IoError("disk full");
    stored[id] = std::string(reinterpret_cast<const char*>(data.data()), data.size());
    return OkStatus();
  }
  Status HoldStored(const ChunkId& id) override {
    if (!stored.contains(id)) return FailedPrecondition("not stored");
    ++holds[id];
    return OkStatus();
  }
  const std::vector<ChunkRef>* SharedChunks(FileReader& source) override {
    return source.info().path == "/shared" ? &source.chunks() : nullptr;
  }
  void Hold(const std::vector<ChunkRef>& chunks) override {
    for (const ChunkRef& c : chunks) ++holds[c.id];
  }
  void Release(const std::vector<ChunkRef>& chunks) override {
    for (const ChunkRef& c : chunks) {
      if (--holds[c.id] == 0) holds.erase(c.id);
    }
  }

  std::map<ChunkId, std::string> stored;
  std::map<ChunkId, int> holds;
  bool fail_puts = false;
};

// A reader over chunks held in memory; path "/shared" says they are in the holder's store.
class MemReader final : public FileReader {
 public:
  MemReader(std::string path, const std::string& data, ChunkerOptions chunker) {
    info_.path = std::move(path);
    info_.size = data.size();
    StreamSplitter splitter(chunker, [&](ByteSpan c) {
      chunks_.push_back({ChunkId::Of(c), static_cast<uint32_t>(c.size())});
      return OkStatus();
    });
    EXPECT_TRUE(splitter.Write(AsBytes(data)).ok());
    EXPECT_TRUE(splitter.Finish().ok());
    data_ = data;
  }
  const FileInfo& info() const override { return info_; }
  Result<std::string> ReadAt(uint64_t offset, uint64_t length) override {
    return data_.substr(offset, length);
  }
  const std::vector<ChunkRef>& chunks() const override { return chunks_; }
  Result<std::shared_ptr<const std::string>> ReadChunk(size_t) override {
    return Unimplemented("not needed");
  }

 private:
  FileInfo info_;
  std::string data_;
  std::vector<ChunkRef> chunks_;
};

std::string Md5Hex(const std::string& data) {
  Md5Hasher md5;
  md5.Update(AsBytes(data));
  auto d = md5.Finish();
  return ToHex(ByteSpan(d.data(), d.size()));
}

std::string Join(const MemHolder& h, const std::vector<ChunkRef>& chunks) {
  std::string out;
  for (const ChunkRef& c : chunks) {
    auto zero = ZeroChunkLength(c.id);
    out += zero ? std::string(*zero, '\0') : h.stored.at(c.id);
  }
  return out;
}

class ContentWriterTest : public ::testing::Test {
 protected:
  ChunkerOptions chunker_;
  MemHolder holder_;
};

TEST_F(ContentWriterTest, CutsStoresAndHoldsUntilAbortWithTheMd5AsETag) {
  const std::string data = RandomBytes(3 << 20, 1);
  {
    ContentWriter w("/f", chunker_, {}, &holder_);
    for (size_t off = 0; off < data.size(); off += 100'000) {
      ASSERT_TRUE(w.Write(AsBytes(std::string_view(data).substr(off, 100'000))).ok());
    }
    auto content = w.Finish();
    ASSERT_TRUE(content.ok());
    EXPECT_EQ(content->size, data.size());
    EXPECT_EQ(content->etag, Md5Hex(data));
    EXPECT_GT(content->chunks.size(), 1u);
    EXPECT_EQ(Join(holder_, content->chunks), data);
    EXPECT_FALSE(holder_.holds.empty());  // held until the commit is done
    EXPECT_EQ(w.Write(AsBytes(std::string("late"))).code(), StatusCode::kFailedPrecondition);
  }
  EXPECT_TRUE(holder_.holds.empty());  // released by the destructor
}

TEST_F(ContentWriterTest, ALargeStreamPastTheMd5LimitGoesThroughThePipelineWithChunkETag) {
  const std::string data = RandomBytes(6 << 20, 2);
  WriteOptions opts;
  opts.md5_etag_limit = 1 << 20;
  ContentWriter w("/f", chunker_, opts, &holder_);
  for (size_t off = 0; off < data.size(); off += 256 << 10) {
    ASSERT_TRUE(w.Write(AsBytes(std::string_view(data).substr(off, 256 << 10))).ok());
  }
  auto content = w.Finish();
  ASSERT_TRUE(content.ok());
  EXPECT_EQ(content->etag, ChunksEtag(content->chunks));
  EXPECT_EQ(Join(holder_, content->chunks), data);  // stored in order from the helper thread
  w.Abort();
  EXPECT_TRUE(holder_.holds.empty());
}

TEST_F(ContentWriterTest, HolesAreZeroChunksAndAFileOfMostlyHolesGetsTheChunkETag) {
  ContentWriter small("/f", chunker_, {}, &holder_);
  ASSERT_TRUE(small.Write(AsBytes(std::string("head"))).ok());
  ASSERT_TRUE(small.WriteZeros(1 << 20).ok());
  ASSERT_TRUE(small.Write(AsBytes(std::string("tail"))).ok());
  auto content = small.Finish();
  ASSERT_TRUE(content.ok());
  const std::string expected = "head" + std::string(1 << 20, '\0') + "tail";
  EXPECT_EQ(content->etag, Md5Hex(expected));
  EXPECT_EQ(Join(holder_, content->chunks), expected);

  ContentWriter sparse("/g", chunker_, {}, &holder_);
  ASSERT_TRUE(sparse.WriteZeros(kMaxHoleMd5Bytes + 1).ok());
  auto big = sparse.Finish();
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->size, kMaxHoleMd5Bytes + 1);
  EXPECT_EQ(big->etag, ChunksEtag(big->chunks));
}

TEST_F(ContentWriterTest, AppendFromNamesSharedChunksAndCopiesOthers) {
  const std::string a = RandomBytes(500'000, 3);
  const std::string b = RandomBytes(300'000, 4);
  MemReader shared("/shared", a, chunker_);
  MemReader other("/elsewhere", b, chunker_);
  WriteOptions opts;
  opts.etag = "given-etag";
  ContentWriter w("/f", chunker_, opts, &holder_);
  ASSERT_TRUE(w.AppendFrom(shared).ok());
  EXPECT_TRUE(holder_.stored.empty());  // named, not copied
  ASSERT_TRUE(w.AppendFrom(other).ok());
  EXPECT_FALSE(holder_.stored.empty());  // copied into the store
  auto content = w.Finish();
  ASSERT_TRUE(content.ok());
  EXPECT_EQ(content->etag, "given-etag");
  EXPECT_EQ(content->size, a.size() + b.size());
  w.Abort();
  EXPECT_TRUE(holder_.holds.empty());

  ContentWriter without_etag("/g", chunker_, {}, &holder_);
  EXPECT_EQ(without_etag.AppendFrom(shared).code(), StatusCode::kFailedPrecondition);
}

TEST_F(ContentWriterTest, AChunkThatDoesNotMatchItsBytesAbortsAndReleasesEverything) {
  WriteOptions opts;
  opts.etag = "e";
  ContentWriter w("/f", chunker_, opts, &holder_);
  const std::string good = RandomBytes(1000, 5);
  const ChunkRef ref{ChunkId::Of(AsBytes(good)), 1000};
  ASSERT_TRUE(w.AppendChunk(ref, AsBytes(good)).ok());
  ASSERT_TRUE(w.AppendChunk(ref, std::nullopt).ok());  // now stored: held by name
  EXPECT_EQ(holder_.holds[ref.id], 2);
  const std::string bad = RandomBytes(1000, 6);
  Status s = w.AppendChunk(ref, AsBytes(bad));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(holder_.holds.empty());
  EXPECT_EQ(w.Finish().status().code(), StatusCode::kFailedPrecondition);
  ContentWriter unknown("/g", chunker_, opts, &holder_);
  EXPECT_EQ(unknown.AppendChunk({ChunkId::Of(AsBytes(bad)), 1000}, std::nullopt).code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(ContentWriterTest, AFailedPutAbortsAndReleasesWhatWasHeld) {
  holder_.fail_puts = true;
  ContentWriter w("/f", chunker_, {}, &holder_);
  Status s = w.Write(AsBytes(RandomBytes(2 << 20, 7)));
  if (s.ok()) s = w.Finish().status();
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(holder_.holds.empty());
}

}  // namespace
}  // namespace weft
