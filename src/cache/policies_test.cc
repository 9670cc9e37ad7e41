// Each policy pinned on small hand-made traces, Belady checked against an exhaustive optimum,
// and the epoch-aware policies measured on the shuffled-epoch workloads of
// research/anchors-cache.md §4 (scaled down to stay fast in a Debug build).

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/cache.h"
#include "cache/internal/declared_order.h"

namespace weft::cache {
namespace {

Request Req(Key key, uint32_t job = 0) {
  Request r;
  r.item.key = key;
  r.item.size = 1;
  r.job = job;
  return r;
}

// A unit-size cache driven by key lists; Read returns one letter per read: h(it), a(dmitted),
// b(ypassed).
struct Harness {
  explicit Harness(const std::string& name, uint64_t capacity)
      : cache(capacity, MakePolicy(name, capacity)) {}

  std::string Read(const std::vector<Key>& keys, uint32_t job = 0) {
    std::string out;
    for (Key k : keys) {
      switch (cache.Read(Req(k, job), &evicted)) {
        case Outcome::kHit:
          out += 'h';
          break;
        case Outcome::kAdmitted:
          out += 'a';
          break;
        case Outcome::kBypassed:
          out += 'b';
          break;
      }
    }
    return out;
  }
  bool Prefetch(Key key, uint32_t job = 0) { return cache.Insert(Req(key, job), &evicted); }
  void Declare(const std::vector<Key>& keys, uint32_t job, uint32_t rank = 0, uint32_t world = 1,
               uint32_t local = 0) {
    Hint hint{
        .job = job, .rank = rank, .world = world, .local = local, .next = {}, .replace = true};
    for (Key k : keys) hint.next.push_back(Req(k, job).item);
    cache.policy().OnHint(hint);
  }

  Cache cache;
  std::vector<Key> evicted;
};

using Keys = std::vector<Key>;

TEST(LruTest, EvictsLeastRecentlyUsed) {
  Harness h("lru", 3);
  EXPECT_EQ(h.Read({1, 2, 3, 1, 4, 2, 5}), "aaahaaa");
  EXPECT_EQ(h.evicted, (Keys{2, 3, 1}));
}

TEST(SieveTest, HandSparesVisitedAndKeepsItsPlace) {
  Harness h("sieve", 3);
  EXPECT_EQ(h.Read({1, 2, 3, 1, 4}), "aaaha");  // hand passes 1 (clearing it), evicts 2
  EXPECT_EQ(h.Read({1, 5, 6}), "haa");  // 1 is visited again, but the hand is already past it
  EXPECT_EQ(h.Read({7}), "a");          // the hand wraps to 1, clears it, and takes 5
  EXPECT_EQ(h.evicted, (Keys{2, 3, 4, 5}));
}

TEST(S3FifoTest, QuickDemotionAndGhostPromotion) {
  Harness h("s3fifo", 4);                           // small FIFO: 1 item, ghost: 3 items
  EXPECT_EQ(h.Read({1, 2, 3, 4, 2, 5}), "aaaaha");  // one-hit 1 leaves first
  EXPECT_EQ(h.Read({1}), "a");                      // 2 (read twice) moves to main; 3 leaves
  EXPECT_EQ(h.Read({6, 7, 8}), "aaa");  // 1 came back from the ghost into main: not evicted
  EXPECT_EQ(h.evicted, (Keys{1, 3, 4, 5, 6}));
  EXPECT_EQ(h.Read({2, 1}), "hh");
}

TEST(ArcTest, GhostHitsMoveTheTarget) {
  Harness h("arc", 2);
  EXPECT_EQ(h.Read({1, 1, 2, 3}), "ahaa");  // 1 in T2; 2 goes T1 -> B1
  EXPECT_EQ(h.cache.policy().Describe(), "p=0 t1=1 t2=1 b1=1 b2=0");
  EXPECT_EQ(h.Read({2}), "a");  // B1 hit: p grows, so T2's 1 goes to B2
  EXPECT_EQ(h.cache.policy().Describe(), "p=1 t1=1 t2=1 b1=0 b2=1");
  EXPECT_EQ(h.Read({1}), "a");  // B2 hit: p shrinks back, T1's 3 goes
  EXPECT_EQ(h.cache.policy().Describe(), "p=0 t1=0 t2=2 b1=1 b2=0");
  EXPECT_EQ(h.evicted, (Keys{2, 1, 3}));
}

TEST(PinTest, AdmitsUntilFullThenNeverEvicts) {
  Harness h("pin", 2);
  EXPECT_EQ(h.Read({1, 2, 3, 1, 2, 3}), "aabhhb");
  EXPECT_FALSE(h.Prefetch(4));
  EXPECT_TRUE(h.evicted.empty());
}

TEST(EpochTest, BypassesInsideAnEpochAndSwapsOnlyForPrefetch) {
  Harness h("epoch", 2);
  EXPECT_EQ(h.Read({1, 2, 3, 4}), "aabb");  // epoch 0: pin what fits
  EXPECT_EQ(h.Read({3, 1}), "bh");          // epoch 1 starts at the repeat of 3
  // A prefetched item (read soon) replaces 1, which this epoch already read.
  EXPECT_TRUE(h.Prefetch(4));
  EXPECT_EQ(h.evicted, (Keys{1}));
  EXPECT_EQ(h.Read({4, 2}), "hh");
}

TEST(EpochTest, ItemsUnreadForTwoEpochsAreDead) {
  Harness h("epoch", 2);
  EXPECT_EQ(h.Read({1, 2, 3}), "aab");
  EXPECT_EQ(h.Read({1, 4, 5}), "hbb");  // epoch 1: 2 may still be read
  EXPECT_EQ(h.Read({1, 6}), "ha");      // epoch 2: 2 was read in neither, so it is dead
  EXPECT_EQ(h.evicted, (Keys{2}));
}

// Ranks end an epoch a few reads apart: a read of an item the ended epoch never read, just
// after the epoch turned, belongs to that epoch, so its read later in this epoch is no
// repeat and does not end this epoch mid-way (which would declare 2 dead and evict it).
TEST(EpochTest, AStragglerOfTheLastEpochDoesNotEndThisOne) {
  Harness h("epoch", 2);
  EXPECT_EQ(h.Read({1, 2, 3, 4, 5, 6, 7, 8}), "aabbbbbb");
  // Epoch 1 starts at the repeat of 1; 9 is a straggler of epoch 0.
  EXPECT_EQ(h.Read({1, 9, 3, 4, 5, 6, 7, 8, 9}), "hbbbbbbbb");
  // Still epoch 1: 2 (read in epoch 0) is due, so a new item bypasses rather than evict it.
  EXPECT_EQ(h.Read({10, 2}), "bh");
  EXPECT_TRUE(h.evicted.empty());
}

TEST(EpochTest, NewRunReclaimsTheFinishedRunsItems) {
  Harness h("epoch", 2);
  EXPECT_EQ(h.Read({1, 2, 3, 4, 1, 2, 3, 4}, /*job=*/7), "aabbhhbb");
  // Job 8 starts; job 7's items are kept while it might just be pausing, then reclaimed
  // oldest first once job 7 has been idle for half its epoch (2 reads).
  EXPECT_EQ(h.Read({5, 6, 7, 8}, /*job=*/8), "bbaa");
  EXPECT_EQ(h.evicted, (Keys{1, 2}));
  EXPECT_EQ(h.Read({5, 6, 7, 8}, /*job=*/8), "bbhh");  // job 8's own epoch pins again
}

TEST(EpochTest, DeclaredRunTakesOverTheSharedItemsAtOnce) {
  Harness h("epoch", 4);
  for (int epoch = 0; epoch < 2; ++epoch) {
    h.Declare({1, 2, 3, 4}, /*job=*/7);
    EXPECT_EQ(h.Read({1, 2, 3, 4}, /*job=*/7), epoch == 0 ? "aaaa" : "hhhh");
  }
  // Job 7 read all it declared; job 8 declares a subset sharing 3 and 4. Job 7's other items
  // die at once (without hints they waited half an epoch: NewRunReclaims...), the shared ones
  // are job 8's.
  h.Declare({5, 6, 3, 4}, /*job=*/8);
  EXPECT_EQ(h.Read({5, 6, 3, 4}, /*job=*/8), "aahh");
  EXPECT_EQ(h.evicted, (Keys{1, 2}));
}

TEST(EpochTest, DeclaredItemsWaitForAJobThatHasNotStarted) {
  Harness h("epoch", 2);
  EXPECT_EQ(h.Read({1, 2}, /*job=*/7), "aa");
  h.Declare({1, 2}, /*job=*/8);
  // Job 7 is idle past half its epoch, but job 8 said it reads 1 and 2: they stay for as
  // many reads as job 8 declared.
  EXPECT_EQ(h.Read({3, 4}, /*job=*/9), "bb");
  EXPECT_EQ(h.Read({1, 2}, /*job=*/8), "hh");
}

// A job's ranks read one epoch between them and each declares only its own share: a rank's
// hint replaces only its own, and the job's epochs count the reads of all of them.
// Job 7, two ranks, two epochs of items 1-4 in a cache of 4: it has read all it declared.
void TwoEpochsOfATwoRankJob(Harness& h) {
  h.Declare({1, 2}, /*job=*/7, /*rank=*/0, /*world=*/2);
  h.Declare({3, 4}, /*job=*/7, /*rank=*/1, /*world=*/2);
  EXPECT_EQ(h.Read({1, 3, 2, 4}, /*job=*/7), "aaaa");
  // Epoch 1 deals the items afresh: what rank 0 read, rank 1 reads now.
  h.Declare({3, 1}, /*job=*/7, /*rank=*/0, /*world=*/2);
  h.Declare({4, 2}, /*job=*/7, /*rank=*/1, /*world=*/2);
  EXPECT_EQ(h.Read({3, 4, 1, 2}, /*job=*/7), "hhhh");
}

TEST(EpochTest, RanksOfAJobDeclareTheirOwnShares) {
  Harness h("epoch", 4);
  TwoEpochsOfATwoRankJob(h);
  // Job 8's first rank declares: job 7 read all it declared, but job 8's other rank has not
  // declared yet and may share items with it, so nothing of job 7 is dropped (5 bypasses).
  h.Declare({5, 1}, /*job=*/8, /*rank=*/0, /*world=*/2);
  EXPECT_EQ(h.Read({5}, /*job=*/8), "b");
  h.Declare({6, 2}, /*job=*/8, /*rank=*/1, /*world=*/2);
  // Now job 8 is whole: job 7's 3 and 4 are dead, 1 and 2 are job 8's.
  EXPECT_EQ(h.Read({6, 5, 1, 2}, /*job=*/8), "aahh");
  std::sort(h.evicted.begin(), h.evicted.end());
  EXPECT_EQ(h.evicted, (Keys{3, 4}));
}

// A job of 4 ranks on two nodes, each node with its own cache: this cache hears ranks 0 and 1
// only. Once both declared the job is whole here, and a finished job's items make way, as
// when every rank of a job declares to one cache (above).
TEST(EpochTest, AJobSpreadOverNodesIsWholeOnceItsLocalRanksDeclared) {
  for (const uint32_t local : {2u, 0u}) {
    Harness h("epoch", 4);
    TwoEpochsOfATwoRankJob(h);
    h.Declare({5, 1}, /*job=*/8, /*rank=*/0, /*world=*/4, local);
    h.Declare({6, 2}, /*job=*/8, /*rank=*/1, /*world=*/4, local);
    if (local == 2) {
      EXPECT_EQ(h.Read({6, 5, 1, 2}, /*job=*/8), "aahh");  // job 7's 3 and 4 are dead
      std::sort(h.evicted.begin(), h.evicted.end());
      EXPECT_EQ(h.evicted, (Keys{3, 4}));
    } else {
      // Without it, this cache waits for ranks 2 and 3, which declare elsewhere: job 7's
      // items are never released here.
      EXPECT_EQ(h.Read({6, 5, 1, 2}, /*job=*/8), "bbhh");
      EXPECT_TRUE(h.evicted.empty());
    }
  }
}

TEST(DeclaredOrderTest, AHintReplacesOnlyItsRanksDeclarations) {
  internal::DeclaredOrder order(100);
  auto hint = [](uint32_t rank, std::vector<Key> keys, bool replace) {
    Hint h{.job = 1, .rank = rank, .world = 2, .next = {}, .replace = replace};
    for (Key k : keys) h.next.push_back(Req(k).item);
    return h;
  };
  order.Declare(hint(0, {1, 2, 3}, true));
  order.Declare(hint(1, {4, 5, 3}, true));
  EXPECT_EQ(order.unread(), 6u);
  // 3 is declared by both; once 1 is read, rank 0's 3 is one ahead of its cursor and rank
  // 1's two ahead, so the read matches rank 0's.
  EXPECT_TRUE(order.Consume(1));
  EXPECT_TRUE(order.Consume(3));
  EXPECT_TRUE(order.Contains(3));  // rank 1's declaration of it is still to come
  EXPECT_FALSE(order.Consume(9));
  // Rank 0 replaces its order: its unread 2 goes, rank 1's 4, 5 and 3 stay.
  order.Declare(hint(0, {6}, true));
  EXPECT_FALSE(order.Contains(2));
  EXPECT_TRUE(order.Contains(4));
  EXPECT_TRUE(order.Contains(6));
  EXPECT_EQ(order.unread(), 4u);
  // Appending keeps what the rank declared.
  order.Declare(hint(1, {7}, false));
  EXPECT_EQ(order.unread(), 5u);
  for (Key k : {4, 5, 3, 6, 7}) EXPECT_TRUE(order.Consume(k)) << k;
  EXPECT_TRUE(order.empty());
}

// ---------------------------------------------------------------------------------------------
// Belady against an exhaustive optimum.

void FillNextUse(std::vector<Request>* reads) {
  std::unordered_map<Key, int64_t> next;
  for (int64_t i = static_cast<int64_t>(reads->size()) - 1; i >= 0; --i) {
    Request& r = (*reads)[i];
    auto it = next.find(r.item.key);
    r.next_use = it == next.end() ? kNever : it->second;
    next[r.item.key] = i;
  }
}

// Fewest misses over all admit/evict/bypass choices (unit sizes), by DP over cache contents.
int OptimalMisses(const std::vector<int>& trace, int capacity) {
  std::map<std::pair<size_t, unsigned>, int> memo;
  auto best = [&](auto& self, size_t i, unsigned set) -> int {
    if (i == trace.size()) return 0;
    auto [it, fresh] = memo.try_emplace({i, set}, 0);
    if (!fresh) return it->second;
    const unsigned bit = 1u << trace[i];
    int result;
    if (set & bit) {
      result = self(self, i + 1, set);
    } else {
      result = self(self, i + 1, set);  // bypass
      if (std::popcount(set) < capacity) {
        result = std::min(result, self(self, i + 1, set | bit));
      } else {
        for (unsigned s = set; s != 0; s &= s - 1) {
          result = std::min(result, self(self, i + 1, (set & ~(s & -s)) | bit));
        }
      }
      ++result;
    }
    memo[{i, set}] = result;
    return result;
  };
  return best(best, 0, 0);
}

TEST(BeladyTest, MatchesExhaustiveOptimum) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<int> trace(30);
    for (int& k : trace) k = static_cast<int>(rng() % 8);
    std::vector<Request> reads;
    for (int k : trace) reads.push_back(Req(static_cast<Key>(k)));
    FillNextUse(&reads);
    Cache cache(3, MakePolicy("belady", 3));
    int misses = 0;
    for (const Request& r : reads) misses += cache.Read(r, nullptr) != Outcome::kHit;
    EXPECT_EQ(misses, OptimalMisses(trace, 3)) << "seed " << seed;
  }
}

// ---------------------------------------------------------------------------------------------
// Shuffled-epoch workloads (anchors-cache.md §4), unit sizes, fixed seeds.

void AppendEpochs(const std::vector<Key>& subset, int epochs, uint32_t job, std::mt19937_64* rng,
                  std::vector<Request>* out) {
  std::vector<Key> order = subset;
  for (int e = 0; e < epochs; ++e) {
    std::shuffle(order.begin(), order.end(), *rng);
    for (Key k : order) out->push_back(Req(k, job));
  }
}

// W1: one job, n items, `epochs` fresh permutations.
std::vector<Request> W1(int n, int epochs) {
  std::mt19937_64 rng(11);
  std::vector<Key> items(n);
  for (int i = 0; i < n; ++i) items[i] = ItemKey(i, 0);
  std::vector<Request> reads;
  AppendEpochs(items, epochs, 1, &rng, &reads);
  FillNextUse(&reads);
  return reads;
}

// W2: `runs` runs (one job each) over 30% subsets of a universe; each keeps `overlap` of the
// previous run's items and draws the rest from the remainder.
std::vector<Request> W2(int universe, double overlap, int runs, int epochs) {
  std::mt19937_64 rng(22);
  std::vector<Key> all(universe);
  for (int i = 0; i < universe; ++i) all[i] = ItemKey(i, 0);
  const size_t subset_size = static_cast<size_t>(universe * 0.3);
  std::shuffle(all.begin(), all.end(), rng);
  std::vector<Key> subset(all.begin(), all.begin() + subset_size);
  std::vector<Request> reads;
  for (int run = 0; run < runs; ++run) {
    if (run > 0) {
      std::shuffle(subset.begin(), subset.end(), rng);
      subset.resize(static_cast<size_t>(subset_size * overlap));
      std::unordered_map<Key, bool> in(subset.size());
      for (Key k : subset) in[k] = true;
      std::shuffle(all.begin(), all.end(), rng);
      for (size_t i = 0; i < all.size() && subset.size() < subset_size; ++i) {
        if (!in.count(all[i])) subset.push_back(all[i]);
      }
    }
    AppendEpochs(subset, epochs, static_cast<uint32_t>(100 + run), &rng, &reads);
  }
  FillNextUse(&reads);
  return reads;
}

struct Score {
  double hit_ratio = 0;
  uint64_t miss_bytes = 0;
  std::string describe;
};

Score Replay(const std::string& name, const std::vector<Request>& reads, uint64_t capacity) {
  Cache cache(capacity, MakePolicy(name, capacity, /*seed=*/5));
  uint64_t hits = 0;
  Score s;
  for (const Request& r : reads) {
    if (cache.Read(r, nullptr) == Outcome::kHit) {
      ++hits;
    } else {
      s.miss_bytes += r.item.size;
    }
  }
  s.hit_ratio = static_cast<double>(hits) / static_cast<double>(reads.size());
  s.describe = cache.policy().Describe();
  return s;
}

// Replays every policy and prints one row of the table in anchors-cache.md §4.
std::map<std::string, Score> Row(const std::string& label, const std::vector<Request>& reads,
                                 uint64_t capacity) {
  std::map<std::string, Score> scores;
  std::string line = label;
  for (const std::string& name : PolicyNames()) {
    scores[name] = Replay(name, reads, capacity);
    char cell[32];
    std::snprintf(cell, sizeof(cell), " %s=%.3f", name.c_str(), scores[name].hit_ratio);
    line += cell;
  }
  std::printf("%s  [neural: %s]\n", line.c_str(), scores["neural"].describe.c_str());
  return scores;
}

constexpr int kW1Items = 5000;
constexpr int kW1Epochs = 10;

class W1Test : public testing::TestWithParam<double> {};

TEST_P(W1Test, EpochAwareReachesTheBound) {
  const double c = GetParam();
  const auto reads = W1(kW1Items, kW1Epochs);
  const uint64_t capacity = static_cast<uint64_t>(c * kW1Items);
  auto s = Row("W1 c=" + std::to_string(c).substr(0, 3), reads, capacity);
  const double bound = c * (kW1Epochs - 1) / kW1Epochs;
  EXPECT_GE(s["epoch"].hit_ratio, 0.95 * bound);
  EXPECT_GE(s["neural"].hit_ratio, 0.95 * bound);
  EXPECT_NEAR(s["belady"].hit_ratio, bound, 1e-9);  // MIN = pinning (§1.2)
  EXPECT_LT(s["lru"].hit_ratio, 0.7 * bound);
}

INSTANTIATE_TEST_SUITE_P(CacheFractions, W1Test, testing::Values(0.1, 0.5, 0.8));

constexpr int kW2Universe = 6000;
constexpr int kW2Subset = kW2Universe * 3 / 10;

TEST(W2Test, HalfSubsetNearBelady) {
  for (double overlap : {0.7, 0.3}) {
    const auto reads = W2(kW2Universe, overlap, 5, 5);
    auto s = Row("W2 0.5x overlap " + std::to_string(overlap).substr(0, 3), reads, kW2Subset / 2);
    const Score& belady = s["belady"];
    // The acceptance bar (anchors-cache.md §5d) is 0.9 of Belady at 70% overlap. At 30% the
    // policy measures 0.90 too, with no margin: until the old run's job retires (half an epoch
    // into the new run) new items are bypassed, and Belady fills those slots at once.
    const double bar = overlap > 0.5 ? 0.9 : 0.88;
    for (const char* name : {"epoch", "neural"}) {
      EXPECT_GE(s[name].hit_ratio, bar * belady.hit_ratio) << name << " overlap " << overlap;
      EXPECT_LE(s[name].miss_bytes, (2 - bar) * belady.miss_bytes)
          << name << " overlap " << overlap;
    }
  }
}

TEST(W2Test, WholeSubsetNoWorseThanS3Fifo) {
  for (double overlap : {0.7, 0.3}) {
    const auto reads = W2(kW2Universe, overlap, 5, 5);
    auto s = Row("W2 1.0x overlap " + std::to_string(overlap).substr(0, 3), reads, kW2Subset);
    EXPECT_GE(s["neural"].hit_ratio, s["s3fifo"].hit_ratio - 0.03) << "overlap " << overlap;
  }
}

// The same runs when every job declares, at each epoch's start, that epoch's order and the
// next's (a HintingSampler): the new run's declaration tells which of the old run's items are
// shared, so the hand-over costs only the new items, as it does for Belady.
TEST(W2Test, DeclaredOrdersReachBelady) {
  for (double overlap : {0.7, 0.3}) {
    const auto reads = W2(kW2Universe, overlap, 5, 5);
    for (uint64_t capacity : {kW2Subset / 2, kW2Subset}) {
      const Score belady = Replay("belady", reads, capacity);
      Cache cache(capacity, MakePolicy("neural", capacity, /*seed=*/5));
      Score hinted;
      uint64_t hits = 0;
      for (size_t i = 0; i < reads.size(); ++i) {
        if (i % kW2Subset == 0) {  // an epoch starts
          Hint hint{.job = reads[i].job, .next = {}, .replace = true};
          for (size_t j = i; j < std::min(reads.size(), i + 2 * kW2Subset); ++j) {
            if (reads[j].job == reads[i].job) hint.next.push_back(reads[j].item);
          }
          cache.policy().OnHint(hint);
        }
        if (cache.Read(reads[i], nullptr) == Outcome::kHit) {
          ++hits;
        } else {
          hinted.miss_bytes += reads[i].item.size;
        }
      }
      hinted.hit_ratio = static_cast<double>(hits) / static_cast<double>(reads.size());
      std::printf("W2 %.1fx overlap %.1f: neural+hints %.3f (misses %.3f x Belady's)\n",
                  static_cast<double>(capacity) / kW2Subset, overlap, hinted.hit_ratio,
                  static_cast<double>(hinted.miss_bytes) / static_cast<double>(belady.miss_bytes));
      EXPECT_GE(hinted.hit_ratio, 0.9 * belady.hit_ratio) << overlap << " " << capacity;
      EXPECT_LE(hinted.miss_bytes, 1.1 * belady.miss_bytes) << overlap << " " << capacity;
    }
  }
}

// Not epoch traffic: a skewed stream (Zipf 0.8), where frequency pays and "epoch" degenerates
// to LRU. The arbiter must find S3-FIFO; it starts with the weight on "epoch", so it pays for
// the first few thousand reads.
TEST(ZipfTest, NeuralFallsBackToS3Fifo) {
  constexpr int kItems = 5000;
  std::mt19937_64 rng(33);
  std::vector<double> weight(kItems);
  for (int i = 0; i < kItems; ++i) weight[i] = 1.0 / std::pow(i + 1, 0.8);
  std::discrete_distribution<int> pick(weight.begin(), weight.end());
  std::vector<Request> reads;
  for (int i = 0; i < 50000; ++i) reads.push_back(Req(ItemKey(pick(rng), 0)));
  FillNextUse(&reads);
  auto s = Row("Zipf 0.8 c=.05", reads, kItems / 20);
  EXPECT_GE(s["neural"].hit_ratio, s["s3fifo"].hit_ratio - 0.04);
  // The arbiter ends up following S3-FIFO.
  const size_t at = s["neural"].describe.find("s3fifo=");
  ASSERT_NE(at, std::string::npos);
  EXPECT_GT(std::stod(s["neural"].describe.substr(at + 7)), 0.9) << s["neural"].describe;
  EXPECT_GE(s["neural"].hit_ratio, s["epoch"].hit_ratio + 0.05);
}

}  // namespace
}  // namespace weft::cache
