#include "cache/trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "cache/trace_gen.h"

namespace weft::cache {
namespace {

Trace Generate(GenOptions o) {
  Result<Trace> t = GenerateTrace(o);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

// The training files each run reads.
std::map<uint32_t, std::set<uint64_t>> RunSubsets(const Trace& t) {
  std::map<uint32_t, std::set<uint64_t>> out;
  for (const Access& a : t.accesses) {
    if (a.op == Op::kRead) out[a.run].insert(a.file);
  }
  return out;
}

TEST(TraceFormat, RoundTripsEveryField) {
  GenOptions o;
  o.workload = "images";
  o.files = 300;
  o.runs = 2;
  o.epochs = 2;
  o.world = 2;
  o.jobs = 2;
  o.validation = true;
  o.checkpoint_every = 3;
  o.checkpoint_bytes = 1000;
  const Trace t = Generate(o);
  ASSERT_GT(t.accesses.size(), 100u);
  const std::string text = FormatTrace(t);
  Result<Trace> back = ParseTrace(text, "t");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(FormatTrace(*back), text);
  ASSERT_EQ(back->accesses.size(), t.accesses.size());
  for (size_t i = 0; i < t.accesses.size(); ++i) {
    const Access& a = t.accesses[i];
    const Access& b = back->accesses[i];
    ASSERT_TRUE(a.t_ns == b.t_ns && a.job == b.job && a.run == b.run && a.node == b.node &&
                a.rank == b.rank && a.op == b.op && a.file == b.file && a.offset == b.offset &&
                a.len == b.len && a.epoch == b.epoch)
        << "access " << i;
  }
  ASSERT_EQ(back->jobs.size(), 4u);
  EXPECT_EQ(back->jobs[3].seed, t.jobs[3].seed);
  EXPECT_EQ(back->jobs[3].compute_ns, t.jobs[3].compute_ns);
  EXPECT_EQ(back->files[7].path, t.files[7].path);
  EXPECT_TRUE(ValidateTrace(*back).ok());
}

TEST(TraceFormat, RejectsMalformedInputNamingTheLine) {
  const std::string head =
      "weft-trace 1\njobs 1\njob 0 0 7 shuffle 1 2 1000 images\nfiles 2\n"
      "file 0 100 1 /a/x.jpg\nfile 1 50 1 /a/with space.jpg\naccesses 2\n";
  ASSERT_TRUE(ParseTrace(head + "0 0 0 0 0 r 0 0 100 0\n5 0 0 0 0 v 1 10 40 0\n").ok());
  struct Case {
    std::string text;
    std::string want;
  };
  const Case cases[] = {
      {"", "unexpected end of input"},
      {"hello\n", "line 1: not a weft trace"},
      {"weft-trace 9\n", "line 1: unsupported trace version '9'"},
      {"weft-trace 1\nfiles 0\n", "line 2: expected 'jobs <count>'"},
      {"weft-trace 1\njobs 1\njob 0 0 7 shuffle 0 2 1000 images\n", "line 3: job 0: world"},
      {"weft-trace 1\njobs 1\njob x\n", "line 3: expected 'job"},
      {head + "0 0 0 0 0 r 0 0 100 0\n", "fewer access lines"},
      {head + "0 0 0 0 0 r 9 0 100 0\n1 0 0 0 0 r 0 0 1 0\n", "line 8: file 9 is not in"},
      {head + "0 0 0 0 0 r 0 0 101 0\n1 0 0 0 0 r 0 0 1 0\n", "line 8: range is outside file 0"},
      {head + "0 0 0 0 0 r 0 0 100 0\n1 0 0 0 0 x 0 0 1 0\n", "line 9: op must be r, v or w"},
      {head + "9 0 0 0 0 r 0 0 100 0\n1 0 0 0 0 r 0 0 1 0\n", "line 9: time goes backwards"},
      {head + "0 0 0 0 1 r 0 0 100 0\n1 0 0 0 0 r 0 0 1 0\n", "line 8: rank"},
      {head + "0 3 0 0 0 r 0 0 100 0\n1 0 0 0 0 r 0 0 1 0\n", "line 8: job 3 is not"},
      {head + "0 0 1 0 0 r 0 0 100 0\n1 0 0 0 0 r 0 0 1 0\n", "line 8: run 1 differs"},
      {head + "0 0 0 0 0 r 0 0 0 0\n1 0 0 0 0 r 0 0 1 0\n", "line 8: zero-length"},
      {head + "0 0 0 0 0 r 0 0 -1 0\n1 0 0 0 0 r 0 0 1 0\n", "line 8: expected '<t_ns>"},
      {head + "0 0 0 0 0 r 0 0 1 0\n1 0 0 0 0 r 0 0 1 0\n2 0 0 0 0 r 0 0 1 0\n",
       "line 10: unexpected line"},
      {"weft-trace 1\njobs 0\nfiles 2\nfile 0 1 1 /a\nfile 0 1 1 /b\n",
       "line 5: file 0 is listed twice"},
      // Counts far beyond the text are refused, not reserved (std::bad_alloc before).
      {"weft-trace 1\njobs 0\nfiles 3000000000000\nfile 0 1 1 /a\n", "fewer file lines"},
      {head.substr(0, head.size() - 2) + "18446744073709551615\n0 0 0 0 0 r 0 0 1 0\n",
       "fewer access lines"},
  };
  for (const Case& c : cases) {
    Result<Trace> t = ParseTrace(c.text, "bad.trace");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find(c.want), std::string::npos)
        << t.status().message() << "  (wanted: " << c.want << ")";
    EXPECT_EQ(t.status().message().rfind("bad.trace", 0), 0u) << t.status().message();
  }
}

TEST(TraceFormat, FileRoundTripAndMissingFile) {
  GenOptions o;
  o.workload = "w1";
  o.files = 50;
  o.epochs = 2;
  const Trace t = Generate(o);
  const std::string path = ::testing::TempDir() + "/weft_trace_test.trace";
  ASSERT_TRUE(WriteTraceFile(t, path).ok());
  Result<Trace> back = ReadTraceFile(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(FormatTrace(*back), FormatTrace(t));
  EXPECT_FALSE(ReadTraceFile(path + ".missing").ok());
}

TEST(ItemReads, SplitsRangesIntoBlocks) {
  Trace t;
  t.jobs.push_back(TraceJob{});
  t.files.push_back(TraceFile{5, 20 * kBlockBytes / 8 + 3, 9, "/f"});  // 2.5 blocks + 3 B
  t.Index();
  Access a;
  a.file = 5;
  a.offset = kBlockBytes - 10;
  a.len = kBlockBytes + 20;  // touches blocks 0, 1 and 2
  t.accesses.push_back(a);
  const std::vector<ItemRead> reads = ItemReads(t);
  ASSERT_EQ(reads.size(), 3u);
  EXPECT_EQ(reads[0].item.block, 0u);
  EXPECT_EQ(reads[0].bytes, 10u);
  EXPECT_EQ(reads[1].bytes, kBlockBytes);
  EXPECT_EQ(reads[2].bytes, 10u);
  EXPECT_EQ(reads[0].item.size, kBlockBytes);
  EXPECT_EQ(reads[2].item.size, t.files[0].size - 2 * kBlockBytes);
  EXPECT_EQ(reads[2].item.key, ItemKey(5, 2));
  EXPECT_EQ(reads[1].item.dir, 9u);
}

TEST(ItemReads, NextUsesPointAtTheNextReadOfTheSameItem) {
  std::vector<ItemRead> reads(6);
  const Key keys[] = {1, 2, 1, 3, 2, 1};
  for (size_t i = 0; i < 6; ++i) reads[i].item.key = keys[i];
  const std::vector<int64_t> next = NextUses(reads);
  const std::vector<int64_t> want = {2, 4, 5, kNever, kNever, kNever};
  EXPECT_EQ(next, want);
}

TEST(OracleGeneral, WritesTwentyFourByteLittleEndianRecords) {
  GenOptions o;
  o.workload = "w1";
  o.files = 20;
  o.epochs = 2;
  o.unit_size = true;
  const Trace t = Generate(o);
  const std::string bytes = FormatOracleGeneral(t);
  ASSERT_EQ(bytes.size(), 40u * 24);
  auto u64 = [&](size_t at) {
    uint64_t v;
    std::memcpy(&v, bytes.data() + at, 8);  // the test host is little-endian
    return v;
  };
  uint32_t size;
  std::memcpy(&size, bytes.data() + 12, 4);
  EXPECT_EQ(size, o.unit_bytes);
  // The first read's object is read again in epoch 2, at its next_access_vtime.
  const int64_t next = static_cast<int64_t>(u64(16));
  ASSERT_GE(next, 20);
  ASSERT_LT(next, 40);
  EXPECT_EQ(u64(4), u64(static_cast<size_t>(next) * 24 + 4));
  EXPECT_EQ(static_cast<int64_t>(u64(39 * 24 + 16)), -1);
}

TEST(Generator, IsDeterministic) {
  GenOptions o;
  o.workload = "images";
  o.files = 500;
  o.runs = 3;
  o.jobs = 2;
  o.seed = 42;
  EXPECT_EQ(FormatTrace(Generate(o)), FormatTrace(Generate(o)));
  GenOptions other = o;
  other.seed = 43;
  EXPECT_NE(FormatTrace(Generate(o)), FormatTrace(Generate(other)));
}

TEST(Generator, RunsReadTheSubsetFractionWithTheOverlap) {
  for (double overlap : {0.3, 0.7}) {
    GenOptions o;
    o.workload = "images";
    o.files = 4000;
    o.runs = 4;
    o.epochs = 1;
    o.subset = 0.3;
    o.overlap = overlap;
    o.zipf = 0.8;
    const auto subsets = RunSubsets(Generate(o));
    ASSERT_EQ(subsets.size(), 4u);
    for (const auto& [run, files] : subsets) {
      EXPECT_NEAR(static_cast<double>(files.size()), 1200, 1) << "run " << run;
      if (run == 0) continue;
      const auto& prev = subsets.at(run - 1);
      size_t common = 0;
      for (uint64_t f : files) common += prev.count(f);
      EXPECT_NEAR(static_cast<double>(common) / prev.size(), overlap, 0.01) << "run " << run;
    }
  }
}

TEST(Generator, ZipfSkewsWhichSamplesRecur) {
  // With skew, the samples of run 0 and run 2 share more than chance (two 30 % draws share
  // 9 % at α = 0 but keep drawing the useful head at α = 1).
  auto shared = [](double zipf) {
    GenOptions o;
    o.workload = "images";
    o.files = 5000;
    o.runs = 3;
    o.epochs = 1;
    o.overlap = 0.3;
    o.zipf = zipf;
    const auto s = RunSubsets(Generate(o));
    size_t common = 0;
    for (uint64_t f : s.at(2)) common += s.at(0).count(f);
    return static_cast<double>(common) / s.at(0).size();
  };
  EXPECT_GT(shared(1.0), shared(0.0) + 0.05);
}

TEST(Generator, EachEpochPermutesTheSubsetSplitAcrossRanks) {
  GenOptions o;
  o.workload = "images";
  o.files = 1000;
  o.epochs = 3;
  o.world = 4;
  o.subset = 0.5;
  o.batch = 16;
  const Trace t = Generate(o);
  const std::set<uint64_t> subset = RunSubsets(t).at(0);
  ASSERT_EQ(subset.size(), 500u);
  std::vector<std::vector<uint64_t>> order(3);
  std::map<std::pair<uint32_t, uint32_t>, std::set<uint64_t>> by_rank;  // (epoch, rank)
  for (const Access& a : t.accesses) {
    ASSERT_EQ(a.op, Op::kRead);
    order[a.epoch].push_back(a.file);
    EXPECT_TRUE((by_rank[{a.epoch, a.rank}].insert(a.file).second)) << "read twice in a rank";
    EXPECT_EQ(a.node, a.rank / 8);
  }
  for (uint32_t e = 0; e < 3; ++e) {
    std::vector<uint64_t> sorted = order[e];
    std::sort(sorted.begin(), sorted.end());
    EXPECT_TRUE(std::equal(sorted.begin(), sorted.end(), subset.begin(), subset.end()))
        << "epoch " << e << " does not read the subset exactly once";
    size_t total = 0;
    for (uint32_t r = 0; r < 4; ++r) total += by_rank[{e, r}].size();
    EXPECT_EQ(total, 500u);  // ranks are disjoint and cover the epoch
  }
  EXPECT_NE(order[0], order[1]);
  EXPECT_NE(order[1], order[2]);
}

TEST(Generator, ValidationInOrderAndCheckpoints) {
  GenOptions o;
  o.workload = "scientific";
  o.files = 400;
  o.epochs = 2;
  o.validation = true;
  o.checkpoint_every = 5;
  const Trace t = Generate(o);
  std::vector<uint64_t> val;
  size_t writes = 0;
  uint32_t last_epoch_of_train = 0;
  for (const Access& a : t.accesses) {
    if (a.op == Op::kValRead) {
      EXPECT_EQ(a.epoch, last_epoch_of_train);
      val.push_back(a.file);
    } else if (a.op == Op::kRead) {
      last_epoch_of_train = a.epoch;
    } else {
      ++writes;
      EXPECT_EQ(a.len, t.File(a.file)->size);
    }
  }
  ASSERT_EQ(val.size(), 2u * 20);
  EXPECT_TRUE(std::is_sorted(val.begin(), val.begin() + 20));
  // 120 samples per epoch in batches of 16: 8 steps per epoch, 16 in all.
  EXPECT_EQ(writes, 3u);
}

TEST(Generator, DatasetShapes) {
  auto mean_size = [](const Trace& t) {
    double sum = 0;
    for (const TraceFile& f : t.files) sum += static_cast<double>(f.size);
    return sum / static_cast<double>(t.files.size());
  };
  GenOptions o;
  o.workload = "images";
  o.files = 6000;
  o.epochs = 1;
  const Trace images = Generate(o);
  EXPECT_NEAR(mean_size(images), 114.7e3, 0.06 * 114.7e3);
  std::set<uint64_t> dirs;
  for (const TraceFile& f : images.files) dirs.insert(f.dir);
  EXPECT_EQ(dirs.size(), 4u);  // 6000 / 1281 classes

  o.workload = "volumes";
  o.files = 168;
  EXPECT_NEAR(mean_size(Generate(o)), 146.6e6, 0.15 * 146.6e6);

  o.workload = "tokens";
  o.files = 10000;
  const Trace tokens = Generate(o);
  ASSERT_EQ(tokens.files.size(), 1u);
  EXPECT_EQ(tokens.accesses.size(), 3000u);
  for (const Access& a : tokens.accesses) ASSERT_EQ(a.len, 2048u);

  o.workload = "shards";
  o.files = 10;
  const Trace shards = Generate(o);
  std::map<uint64_t, uint64_t> next_offset;
  for (const Access& a : shards.accesses) {
    EXPECT_EQ(a.offset, next_offset[a.file]) << "shards are read front to back";
    next_offset[a.file] = a.offset + a.len;
    EXPECT_LE(a.len, 8'000'000u);
  }
  ASSERT_EQ(next_offset.size(), 3u);
  for (const auto& [file, end] : next_offset) EXPECT_EQ(end, shards.File(file)->size);
}

TEST(Generator, PresetsAndBadOptions) {
  GenOptions o;
  o.workload = "w2";
  o.files = 2000;
  o.unit_size = true;
  const Trace w2 = Generate(o);
  EXPECT_EQ(RunSubsets(w2).size(), 5u);
  EXPECT_EQ(w2.accesses.size(), 5u * 5 * 600);
  // Runs follow each other.
  for (size_t i = 1; i < w2.accesses.size(); ++i) {
    ASSERT_LE(w2.accesses[i - 1].run, w2.accesses[i].run);
  }
  o.workload = "w1";
  o.files = 100;
  const Trace w1 = Generate(o);
  EXPECT_EQ(w1.accesses.size(), 1000u);  // 10 epochs of everything

  GenOptions bad;
  bad.workload = "videos";
  EXPECT_FALSE(GenerateTrace(bad).ok());
  bad.workload = "images";
  bad.subset = 1.5;
  EXPECT_NE(GenerateTrace(bad).status().message().find("--subset"), std::string::npos);
}

}  // namespace
}  // namespace weft::cache
