#include "cache/prefetch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>

namespace weft::cache {
namespace {

constexpr int64_t kMs = 1'000'000;

Item MakeItem(uint64_t file, uint32_t block = 0, uint64_t dir = 1, uint64_t size = 4096) {
  return Item{ItemKey(file, block), file, block, dir, size};
}

Request Read(const Item& item, uint32_t job, int64_t time_ns) {
  Request r;
  r.item = item;
  r.job = job;
  r.time_ns = time_ns;
  return r;
}

// Items added in name (and block) order.
class FakeCatalog : public Catalog {
 public:
  void Add(const Item& item) {
    by_dir_[item.dir].push_back(item);
    by_file_[item.file].push_back(item);
  }
  std::vector<Item> ItemsInDir(uint64_t dir) const override {
    auto it = by_dir_.find(dir);
    return it == by_dir_.end() ? std::vector<Item>{} : it->second;
  }
  std::vector<Item> ItemsOfFile(uint64_t file) const override {
    auto it = by_file_.find(file);
    return it == by_file_.end() ? std::vector<Item>{} : it->second;
  }

 private:
  std::map<uint64_t, std::vector<Item>> by_dir_;
  std::map<uint64_t, std::vector<Item>> by_file_;
};

// Proposes whatever the test puts in `next`.
class ListExpert : public Expert {
 public:
  explicit ListExpert(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  void Observe(const Request&, bool) override {}
  void Propose(int64_t, size_t limit, std::vector<Candidate>* out) override {
    for (size_t i = 0; i < next->size() && i < limit; ++i) out->push_back((*next)[i]);
  }
  std::shared_ptr<std::vector<Candidate>> next = std::make_shared<std::vector<Candidate>>();

 private:
  std::string name_;
};

Candidate Cand(const Item& item, double p, double eta_s = 0, uint32_t job = 1) {
  return Candidate{item, job, eta_s, p, -1};
}

std::vector<Key> Keys(const std::vector<Candidate>& cs) {
  std::vector<Key> keys;
  for (const Candidate& c : cs) keys.push_back(c.item.key);
  return keys;
}

std::vector<Key> KeysOf(const std::vector<Item>& items) {
  std::vector<Key> keys;
  for (const Item& i : items) keys.push_back(i.key);
  return keys;
}

std::vector<Item> Files(uint64_t first, uint64_t n, uint64_t dir = 1, uint64_t size = 4096) {
  std::vector<Item> items;
  for (uint64_t f = first; f < first + n; ++f) items.push_back(MakeItem(f, 0, dir, size));
  return items;
}

std::vector<Candidate> ProposeAll(Expert& e, int64_t now_ns, size_t limit = 1000) {
  std::vector<Candidate> out;
  e.Propose(now_ns, limit, &out);
  return out;
}

// --- hints -------------------------------------------------------------------------------------

TEST(HintExpert, ProposesDeclaredOrderAndAdvances) {
  auto e = MakeHintExpert();
  const std::vector<Item> items = Files(0, 10);
  e->OnHint(Hint{.job = 1, .next = items, .replace = true});
  auto c = ProposeAll(*e, 0, 5);
  EXPECT_EQ(Keys(c), KeysOf({items.begin(), items.begin() + 5}));
  for (const Candidate& x : c) EXPECT_DOUBLE_EQ(x.probability, 1.0);
  for (size_t i = 1; i < c.size(); ++i) EXPECT_LE(c[i - 1].eta_s, c[i].eta_s);

  e->Observe(Read(items[0], 1, 10 * kMs), false);
  e->Observe(Read(items[1], 1, 20 * kMs), false);
  c = ProposeAll(*e, 20 * kMs, 5);
  EXPECT_EQ(Keys(c), KeysOf({items.begin() + 2, items.begin() + 7}));
  // The ETA follows the observed 10 ms per read.
  EXPECT_NEAR(c[0].eta_s, 0.010, 1e-6);
  EXPECT_NEAR(c[4].eta_s, 0.050, 1e-6);

  // Appending extends the stream; replacing restarts it.
  e->OnHint(Hint{.job = 1, .next = Files(100, 2), .replace = false});
  EXPECT_EQ(ProposeAll(*e, 20 * kMs).size(), 10u);
  e->OnHint(Hint{.job = 1, .next = Files(200, 3), .replace = true});
  EXPECT_EQ(Keys(ProposeAll(*e, 20 * kMs)), KeysOf(Files(200, 3)));
}

// A job's ranks declare their own shares; reads (which name only the job) advance the rank
// that declared them, and proposals take each rank's next items in turn, the k-th of each at
// the job's (k × ranks)-th next read. A rank's new hint replaces only its own share.
TEST(HintExpert, RanksDeclareTheirOwnSharesAndAreProposedInTurn) {
  auto e = MakeHintExpert();
  const std::vector<Item> r0 = Files(0, 4), r1 = Files(10, 4);
  e->OnHint(Hint{.job = 1, .rank = 0, .world = 2, .next = r0, .replace = true});
  e->OnHint(Hint{.job = 1, .rank = 1, .world = 2, .next = r1, .replace = true});
  EXPECT_EQ(Keys(ProposeAll(*e, 0, 4)), KeysOf({r0[0], r1[0], r0[1], r1[1]}));
  for (int i = 0; i < 2; ++i) {
    e->Observe(Read(r0[i], 1, (2 * i + 1) * 10 * kMs), false);
    e->Observe(Read(r1[i], 1, (2 * i + 2) * 10 * kMs), false);
  }
  auto c = ProposeAll(*e, 40 * kMs);
  EXPECT_EQ(Keys(c), KeysOf({r0[2], r1[2], r0[3], r1[3]}));
  EXPECT_NEAR(c[0].eta_s, 0.020, 1e-6);  // two ranks at 10 ms per job read
  EXPECT_NEAR(c[2].eta_s, 0.040, 1e-6);
  // Rank 1 moves on; rank 0's share stays declared.
  e->OnHint(Hint{.job = 1, .rank = 1, .world = 2, .next = Files(20, 1), .replace = true});
  EXPECT_EQ(Keys(ProposeAll(*e, 40 * kMs)), KeysOf({r0[2], Files(20, 1)[0], r0[3]}));
}

TEST(HintExpert, AnItemDeclaredTwiceMatchesItsFirstUnreadDeclaration) {
  // Two epochs declared at once: the same items, the second epoch in another order.
  auto e = MakeHintExpert();
  const std::vector<Item> epoch0 = Files(0, 200);
  std::vector<Item> both = epoch0;
  both.insert(both.end(), epoch0.rbegin(), epoch0.rend());
  e->OnHint(Hint{.job = 1, .next = both, .replace = true});
  for (size_t i = 0; i < 150; ++i) e->Observe(Read(epoch0[i], 1, i * kMs), false);
  // Reads of epoch 0 consumed epoch 0's declarations, not epoch 1's: what comes next is the
  // rest of epoch 0, then epoch 1 from its start; every read matched.
  auto c = ProposeAll(*e, 150 * kMs, 52);
  ASSERT_EQ(c.size(), 52u);
  EXPECT_EQ(c[0].item.key, epoch0[150].key);
  EXPECT_EQ(c[49].item.key, epoch0[199].key);
  EXPECT_EQ(c[50].item.key, epoch0[199].key);  // epoch 1 starts with the last file
  EXPECT_EQ(c[51].item.key, epoch0[198].key);
  EXPECT_DOUBLE_EQ(c[0].probability, 1.0);
  EXPECT_TRUE(e->Overrides(1));
}

TEST(HintExpert, ToleratesSmallReorderings) {
  auto e = MakeHintExpert();
  const std::vector<Item> items = Files(0, 20);
  e->OnHint(Hint{.job = 1, .next = items, .replace = true});
  for (int i : {1, 0, 3, 2, 5, 4}) e->Observe(Read(items[i], 1, i * kMs), false);
  EXPECT_EQ(ProposeAll(*e, 6 * kMs, 3)[0].item.key, items[6].key);
  // Reading 8 before 6 and 7: 8 is not proposed again, 6 and 7 still are.
  e->Observe(Read(items[8], 1, 7 * kMs), false);
  EXPECT_EQ(Keys(ProposeAll(*e, 7 * kMs, 3)),
            (std::vector<Key>{items[6].key, items[7].key, items[9].key}));
  // Every read so far matched the declared stream.
  auto c = ProposeAll(*e, 7 * kMs, 1);
  EXPECT_DOUBLE_EQ(c[0].probability, 1.0);
}

// A job pausing between epochs (evaluation, a checkpoint) has not missed what it declared:
// its predictions are not scored while it reads nothing, so the hints expert keeps its
// precision (and its weight) through the pause.
TEST(HintExpert, APauseBetweenEpochsIsNotAMiss) {
  FakeCatalog catalog;
  const std::vector<Item> items = Files(0, 400);
  for (const Item& i : items) catalog.Add(i);
  auto experts = MakeExperts(&catalog, {"hints"});
  Ensemble ens(EnsembleOptions{}, &catalog, std::move(experts));
  ens.AddHint(Hint{.job = 1, .next = items, .replace = true});
  auto held = [](Key) { return true; };  // every item local: nothing to fetch, all scored
  int64_t t = 0;
  for (size_t i = 0; i < 200; ++i) {
    t += 10 * kMs;
    ens.Observe(Read(items[i], 1, t), true);
    ens.Plan(t, held);
  }
  t += 20'000 * kMs;  // 20 s of evaluation
  ens.Plan(t, held);
  EXPECT_GT(ens.Stats().experts[0].precision, 0.99);
  for (size_t i = 200; i < 400; ++i) {
    t += 10 * kMs;
    ens.Observe(Read(items[i], 1, t), true);
    ens.Plan(t, held);
  }
  EXPECT_GT(ens.Stats().experts[0].precision, 0.99);
}

// Nor is the pause the job's pace: the next epoch's head stays due at once, not seconds away.
TEST(HintExpert, APauseIsNotThePace) {
  auto e = MakeHintExpert();
  const std::vector<Item> items = Files(0, 100);
  e->OnHint(Hint{.job = 1, .next = items, .replace = true});
  int64_t t = 0;
  for (size_t i = 0; i < 50; ++i) e->Observe(Read(items[i], 1, t += 10 * kMs), false);
  e->Observe(Read(items[50], 1, t += 20'000 * kMs), false);  // after 20 s of evaluation
  auto c = ProposeAll(*e, t, 2);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_NEAR(c[1].eta_s, 0.020, 1e-3);  // still 10 ms a read
}

// But the gaps between a loader's bursts are the pace: 64 reads 0.05 ms apart every 100 ms
// is ~1.6 ms a read, not 0.05 ms (which would put every declared read within a second and
// have the ensemble score most of them as misses).
TEST(HintExpert, GapsBetweenBurstsAreThePace) {
  auto e = MakeHintExpert();
  const std::vector<Item> items = Files(0, 2000);
  e->OnHint(Hint{.job = 1, .next = items, .replace = true});
  int64_t t = 0;
  size_t n = 0;
  for (int burst = 0; burst < 20; ++burst) {
    t += 100 * kMs;
    for (int i = 0; i < 64; ++i) e->Observe(Read(items[n++], 1, t += kMs / 20), false);
  }
  auto c = ProposeAll(*e, t, 100);
  ASSERT_EQ(c.size(), 100u);
  // 1 to 2 ms a read (a window ending on a burst sees 4 bursts but only 3 steps: ~1.2 ms).
  EXPECT_GT(c[99].eta_s, 0.100);
  EXPECT_LT(c[99].eta_s, 0.200);
}

TEST(HintExpert, OverridesOtherExpertsOnceItMatches) {
  FakeCatalog catalog;
  const std::vector<Item> items = Files(0, 400);
  const std::vector<Item> others = Files(1000, 400, /*dir=*/2);
  for (const Item& i : items) catalog.Add(i);
  for (const Item& i : others) catalog.Add(i);
  auto experts = MakeExperts(&catalog, {"hints", "dir"});
  ASSERT_EQ(experts.size(), 2u);
  Expert* hints = experts[0].get();
  Ensemble ens(EnsembleOptions{}, &catalog, std::move(experts));
  ens.AddHint(Hint{.job = 1, .next = items, .replace = true});
  // Job 2 declares nothing and reads every other file of another directory.
  auto never = [](Key) { return false; };
  int64_t t = 0;
  for (size_t i = 0; i < 150; ++i) {
    t += 10 * kMs;
    ens.Observe(Read(items[i], 1, t), false);
    ens.Observe(Read(others[2 * i], 2, t), false);
    if (i == 50) {
      EXPECT_FALSE(hints->Overrides(1));  // too few reads to tell
      for (const Candidate& c : ens.Plan(t, never)) ens.Landed(c.item.key, c.item.size, true);
      EXPECT_FALSE(ens.Stats().hints_override);
    }
  }
  EXPECT_TRUE(hints->Overrides(1));
  EXPECT_FALSE(hints->Overrides(2));
  const std::vector<Candidate> plan = ens.Plan(t, never);
  EXPECT_TRUE(ens.Stats().hints_override);
  bool job2 = false;
  for (const Candidate& c : plan) {
    if (c.job == 1) {
      EXPECT_EQ(c.expert, 0) << "job 1 is fetched on its hint alone";
    }
    job2 = job2 || c.job == 2;
  }
  EXPECT_TRUE(job2) << "other jobs still get the other experts";

  // A hint that stops matching loses the override.
  auto solo = MakeHintExpert();
  solo->OnHint(Hint{.job = 1, .next = items, .replace = true});
  for (size_t i = 0; i < 120; ++i) solo->Observe(Read(items[i], 1, i), false);
  EXPECT_TRUE(solo->Overrides(1));
  for (size_t i = 0; i < 5; ++i) solo->Observe(Read(MakeItem(9000 + i), 1, 200), false);
  EXPECT_FALSE(solo->Overrides(1));
}

// --- epoch -------------------------------------------------------------------------------------

TEST(EpochExpert, ProposesExactlyTheUnreadRemainderOfTheEpoch) {
  auto e = MakeEpochSetExpert();
  const std::vector<Item> items = Files(0, 10);
  int64_t t = 0;
  for (const Item& i : items) e->Observe(Read(i, 1, t += kMs), false);
  EXPECT_TRUE(ProposeAll(*e, t).empty()) << "the set is not known until the epoch ends";
  e->Observe(Read(items[3], 1, t += kMs), false);  // the first repeat: epoch 2 begins
  e->Observe(Read(items[7], 1, t += kMs), false);
  std::vector<Key> got = Keys(ProposeAll(*e, t));
  std::vector<Key> want;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i != 3 && i != 7) want.push_back(items[i].key);
  }
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  for (const Candidate& c : ProposeAll(*e, t)) EXPECT_GT(c.probability, 0.9);
  // The limit is respected, and a new epoch refills the set.
  EXPECT_EQ(ProposeAll(*e, t, 3).size(), 3u);
  for (size_t i = 0; i < items.size(); ++i) {
    if (i != 3 && i != 7) e->Observe(Read(items[i], 1, t += kMs), false);
  }
  EXPECT_TRUE(ProposeAll(*e, t).empty());
  e->Observe(Read(items[5], 1, t += kMs), false);  // epoch 3
  EXPECT_EQ(ProposeAll(*e, t).size(), 9u);
}

// --- readahead ---------------------------------------------------------------------------------

TEST(ReadaheadExpert, BlockStreamProposesNextBlocks) {
  FakeCatalog catalog;
  std::vector<Item> blocks;
  for (uint32_t b = 0; b < 8; ++b) blocks.push_back(MakeItem(50, b, 1, kBlockBytes));
  for (const Item& i : blocks) catalog.Add(i);
  auto e = MakeReadaheadExpert(&catalog);
  e->Observe(Read(blocks[0], 1, kMs), false);
  EXPECT_TRUE(ProposeAll(*e, kMs).empty()) << "one read is not a stream";
  e->Observe(Read(blocks[1], 1, 2 * kMs), false);
  e->Observe(Read(blocks[2], 1, 3 * kMs), false);
  auto c = ProposeAll(*e, 3 * kMs, 3);
  EXPECT_EQ(Keys(c), KeysOf({blocks.begin() + 3, blocks.begin() + 6}));
  EXPECT_GT(c[0].probability, 0.5);
}

TEST(ReadaheadExpert, NameOrderedFilesAndShardsProposeNextFiles) {
  FakeCatalog catalog;
  const std::vector<Item> files = Files(10, 8, /*dir=*/7);
  for (const Item& i : files) catalog.Add(i);
  auto e = MakeReadaheadExpert(&catalog);
  for (int i = 0; i < 3; ++i) e->Observe(Read(files[i], 1, (i + 1) * kMs), false);
  EXPECT_EQ(Keys(ProposeAll(*e, 3 * kMs, 3)), KeysOf({files.begin() + 3, files.begin() + 6}));

  // Shards of 2 blocks read whole in shuffled order: propose the unread shards' first blocks.
  FakeCatalog shards;
  for (uint64_t f = 0; f < 6; ++f) {
    for (uint32_t b = 0; b < 2; ++b) shards.Add(MakeItem(100 + f, b, 9, kBlockBytes));
  }
  auto s = MakeReadaheadExpert(&shards);
  int64_t t = 0;
  for (uint64_t f : {104, 101}) {
    for (uint32_t b = 0; b < 2; ++b)
      s->Observe(Read(MakeItem(f, b, 9, kBlockBytes), 2, t += kMs), false);
  }
  s->Observe(Read(MakeItem(103, 0, 9, kBlockBytes), 2, t += kMs), false);
  s->Observe(Read(MakeItem(103, 1, 9, kBlockBytes), 2, t += kMs), false);
  std::set<Key> got;
  for (const Candidate& c : ProposeAll(*s, t)) got.insert(c.item.key);
  EXPECT_EQ(got, (std::set<Key>{ItemKey(100, 0), ItemKey(102, 0), ItemKey(105, 0)}));
}

// --- history, dir, peer ------------------------------------------------------------------------

TEST(HistoryExpert, ProposesLastRunsItemsWithObservedOverlap) {
  auto e = MakeHistoryExpert();
  const std::vector<Item> items = Files(0, 100);
  int64_t t = 0;
  for (const Item& i : items) e->Observe(Read(i, 1, t += kMs), false);
  // Job 2 reads 10 items of the old run and 10 new ones.
  for (int i = 0; i < 10; ++i) e->Observe(Read(items[i], 2, t += kMs), false);
  for (int i = 0; i < 10; ++i) e->Observe(Read(MakeItem(1000 + i), 2, t += kMs), false);
  std::vector<Candidate> c;
  for (const Candidate& x : ProposeAll(*e, t)) {
    if (x.job == 2) c.push_back(x);
  }
  ASSERT_EQ(c.size(), 90u);
  const std::vector<Key> first = KeysOf({items.begin(), items.begin() + 10});
  const std::set<Key> read(first.begin(), first.end());
  for (const Candidate& x : c) {
    EXPECT_EQ(read.count(x.item.key), 0u);
    EXPECT_NEAR(x.probability, 10.5 / 21, 1e-9);
  }
}

TEST(DirectoryExpert, ProposesSiblingsAtLowProbability) {
  FakeCatalog catalog;
  const std::vector<Item> files = Files(0, 5, 3);
  for (const Item& i : files) catalog.Add(i);
  auto e = MakeDirectoryExpert(&catalog);
  e->Observe(Read(files[2], 1, kMs), false);
  auto c = ProposeAll(*e, kMs);
  EXPECT_EQ(Keys(c), (std::vector<Key>{files[3].key, files[4].key, files[0].key, files[1].key}));
  for (const Candidate& x : c) EXPECT_LT(x.probability, 0.5);
}

TEST(PeerExpert, ProposesWhatOtherJobsReadAndThisOneHasNot) {
  auto e = MakePeerExpert();
  const std::vector<Item> items = Files(0, 4);
  e->Observe(Read(items[3], 2, kMs), false);
  e->Observe(Read(items[0], 1, 2 * kMs), false);
  e->Observe(Read(items[1], 1, 3 * kMs), false);
  e->Observe(Read(items[3], 1, 4 * kMs), false);  // job 1 has read 3 too
  std::map<uint32_t, std::vector<Key>> by_job;
  for (const Candidate& c : ProposeAll(*e, 4 * kMs)) by_job[c.job].push_back(c.item.key);
  EXPECT_TRUE(by_job[1].empty());
  EXPECT_EQ(by_job[2], (std::vector<Key>{items[0].key, items[1].key}));
}

// --- ensemble ----------------------------------------------------------------------------------

struct OneExpert {
  explicit OneExpert(EnsembleOptions options = {}) {
    auto e = std::make_unique<ListExpert>("list");
    next = e->next;
    std::vector<std::unique_ptr<Expert>> v;
    v.push_back(std::move(e));
    ens = std::make_unique<Ensemble>(options, nullptr, std::move(v));
  }
  std::shared_ptr<std::vector<Candidate>> next;
  std::unique_ptr<Ensemble> ens;
};

TEST(Ensemble, RespectsTheBudgetAndLandedFreesIt) {
  OneExpert f;
  const uint64_t mb10 = 10'000'000;
  for (uint64_t i = 0; i < 10; ++i) f.next->push_back(Cand(MakeItem(i, 0, 1, mb10), 0.9));
  auto never = [](Key) { return false; };
  auto plan = f.ens->Plan(0, never);
  EnsembleStats s = f.ens->Stats();
  EXPECT_EQ(s.budget_bytes, static_cast<uint64_t>(62.5e6 * 0.54));
  EXPECT_EQ(plan.size(), 3u);
  EXPECT_EQ(s.in_flight_bytes, 3 * mb10);
  EXPECT_LE(s.in_flight_bytes, s.budget_bytes);
  EXPECT_TRUE(f.ens->Plan(kMs, never).empty()) << "budget full; issued items are not reissued";
  f.ens->Landed(plan[0].item.key, mb10, true);
  EXPECT_EQ(f.ens->Stats().in_flight_bytes, 2 * mb10);
  auto more = f.ens->Plan(2 * kMs, never);
  ASSERT_EQ(more.size(), 1u);
  const std::vector<Key> first = Keys(plan);
  EXPECT_EQ(std::count(first.begin(), first.end(), more[0].item.key), 0);
  EXPECT_LE(f.ens->Stats().in_flight_bytes, f.ens->Stats().budget_bytes);
  // Items the caller holds are skipped.
  for (const Candidate& c : more) f.ens->Landed(c.item.key, mb10, true);
  for (const Candidate& c : plan) f.ens->Landed(c.item.key, mb10, true);
  EXPECT_EQ(f.ens->Stats().in_flight_bytes, 0u);
  auto all = [](Key) { return true; };
  EXPECT_TRUE(f.ens->Plan(3 * kMs, all).empty());
}

// Guesses (below the "sure" probability) are ranked by stall saved per byte.
TEST(Ensemble, SmallFilesOutrankBigOnesAtEqualProbability) {
  OneExpert f;
  f.next->push_back(Cand(MakeItem(1, 0, 1, kBlockBytes), 0.4));
  for (uint64_t i = 2; i < 6; ++i) f.next->push_back(Cand(MakeItem(i, 0, 1, 4096), 0.4));
  f.next->push_back(Cand(MakeItem(9, 0, 1, 1'000'000), 0.4));
  auto plan = f.ens->Plan(0, [](Key) { return false; });
  ASSERT_EQ(plan.size(), 6u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(plan[i].item.size, 4096u);
  EXPECT_EQ(plan[4].item.size, 1'000'000u);
  EXPECT_EQ(plan[5].item.size, kBlockBytes);
}

// Sure predictions due at the same moment (all overdue: a new epoch's head, declared after a
// pause in reading) go in the order proposed, which for a hint is the declared order: the
// reader waits for the first of them, whatever the others' sizes.
TEST(Ensemble, SurePredictionsDueTogetherKeepTheOrderProposed) {
  OneExpert f;
  f.next->push_back(Cand(MakeItem(1, 0, 1, kBlockBytes), 0.9));
  f.next->push_back(Cand(MakeItem(2, 0, 1, 1'000'000), 0.9));
  f.next->push_back(Cand(MakeItem(3, 0, 1, 4096), 0.9));
  f.next->push_back(Cand(MakeItem(4, 0, 1, 4096), 0.9));
  std::vector<Candidate> plan = f.ens->Plan(0, [](Key) { return false; });
  std::vector<uint64_t> files;
  for (const Candidate& c : plan) files.push_back(c.item.file);
  EXPECT_EQ(files, (std::vector<uint64_t>{1, 2, 3, 4}));
}

// Sure predictions due within the lead window go nearest first, whatever their size, and one
// that does not fit the room keeps its place instead of letting later, smaller items past.
TEST(Ensemble, SurePredictionsDueSoonGoInDeadlineOrder) {
  OneExpert f;
  const uint64_t kBig = 3'000'000;
  f.next->push_back(Cand(MakeItem(1, 0, 1, 4096), 0.9, 0.01));
  f.next->push_back(Cand(MakeItem(2, 0, 1, kBig), 0.9, 0.02));
  f.next->push_back(Cand(MakeItem(3, 0, 1, 4096), 0.9, 0.03));
  f.next->push_back(Cand(MakeItem(4, 0, 1, 4096), 0.3, 0.005));  // a guess: ranked per byte
  f.next->push_back(Cand(MakeItem(5, 0, 1, 4096), 0.9, 5.0));    // sure, but not due yet
  auto never = [](Key) { return false; };
  std::vector<Candidate> plan = f.ens->Plan(0, never);
  std::vector<uint64_t> files;
  for (const Candidate& c : plan) files.push_back(c.item.file);
  EXPECT_EQ(files, (std::vector<uint64_t>{1, 2, 3, 4, 5}));

  // Room for the first small item and not the big one: the plan stops there.
  OneExpert g;
  *g.next = {Cand(MakeItem(1, 0, 1, 4096), 0.9, 0.01), Cand(MakeItem(2, 0, 1, kBig), 0.9, 0.02),
             Cand(MakeItem(3, 0, 1, 4096), 0.9, 0.03)};
  plan = g.ens->Plan(0, never, /*max_bytes=*/kBig);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].item.file, 1u);
  plan = g.ens->Plan(kMs, never, /*max_bytes=*/kBig);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].item.file, 2u);
}

// Drives a stream of reads of fresh items: `good` predicts the next reads, `bad` predicts items
// never read, unless `bad_turns_good`.
struct TwoExperts {
  TwoExperts() {
    auto g = std::make_unique<ListExpert>("good");
    auto b = std::make_unique<ListExpert>("bad");
    good = g->next;
    bad = b->next;
    std::vector<std::unique_ptr<Expert>> v;
    v.push_back(std::move(g));
    v.push_back(std::move(b));
    ens = std::make_unique<Ensemble>(EnsembleOptions{}, nullptr, std::move(v));
  }
  void Run(int steps, bool bad_turns_good) {
    for (int n = 0; n < steps; ++n, ++step) {
      good->clear();
      bad->clear();
      for (uint64_t k = 1; k <= 4; ++k) {
        good->push_back(Cand(MakeItem(step + k), 0.9, 0.01 * k));
        bad->push_back(bad_turns_good ? Cand(MakeItem(step + k), 0.9, 0.01 * k)
                                      : Cand(MakeItem(1'000'000 + 4 * step + k), 0.9, 0.01 * k));
      }
      const int64_t t = static_cast<int64_t>(step) * 10 * kMs;
      for (const Candidate& c : ens->Plan(t, [](Key) { return false; })) {
        ens->Landed(c.item.key, c.item.size, true);
      }
      ens->Observe(Read(MakeItem(step + 1), 1, t + 5 * kMs), false);
    }
  }
  std::shared_ptr<std::vector<Candidate>> good, bad;
  std::unique_ptr<Ensemble> ens;
  uint64_t step = 0;
};

TEST(Ensemble, PreciseExpertGainsWeightAndImpreciseOneRetiresThenReturns) {
  TwoExperts f;
  f.Run(1500, false);
  EnsembleStats s = f.ens->Stats();
  ASSERT_EQ(s.experts.size(), 2u);
  const ExpertStats& good = s.experts[0];
  const ExpertStats& bad = s.experts[1];
  EXPECT_GT(good.precision, 0.95);
  EXPECT_LT(bad.precision, 0.05);
  EXPECT_GT(good.weight, 0.9);
  EXPECT_LT(bad.weight, 0.1);
  EXPECT_FALSE(good.retired);
  EXPECT_TRUE(bad.retired);
  const uint64_t bad_issued = bad.issued;

  f.Run(200, false);
  EXPECT_EQ(f.ens->Stats().experts[1].issued, bad_issued) << "a retired expert issues nothing";

  f.Run(2000, true);
  s = f.ens->Stats();
  EXPECT_FALSE(s.experts[1].retired) << "its shadow precision recovered";
  EXPECT_GT(s.experts[1].precision, 0.9);
  EXPECT_GT(s.experts[1].shadow_hits, 0u);

  // Stats agree with one another.
  uint64_t issued = 0, useful = 0;
  for (const ExpertStats& e : s.experts) {
    issued += e.issued;
    useful += e.useful;
    EXPECT_LE(e.useful, e.issued);
    EXPECT_LE(e.shadow_hits, e.shadow);
  }
  EXPECT_EQ(useful, s.prefetches_useful);
  EXPECT_LE(s.prefetches_useful, issued);
  EXPECT_EQ(s.bytes_prefetched, issued * 4096);
  EXPECT_EQ(s.in_flight_bytes, 0u);
  double total = 0;
  for (const ExpertStats& e : s.experts) total += e.weight;
  EXPECT_NEAR(total, 1.0, 1e-9);
}

TEST(Ensemble, CountsUsefulLateAndWasted) {
  OneExpert f;
  const Item a = MakeItem(1), b = MakeItem(2), c = MakeItem(3);
  *f.next = {Cand(a, 0.9), Cand(b, 0.9), Cand(c, 0.9)};
  auto plan = f.ens->Plan(0, [](Key) { return false; });
  ASSERT_EQ(plan.size(), 3u);
  f.next->clear();
  f.ens->Landed(a.key, a.size, true);
  f.ens->Landed(b.key, b.size, true);
  f.ens->Observe(Read(a, 1, kMs), false);  // landed, then read: timely
  f.ens->Observe(Read(c, 1, kMs), false);  // read while in flight: late
  f.ens->Evicted(b.key);                   // never read: wasted
  f.ens->Evicted(a.key);                   // read already: not waste
  EnsembleStats s = f.ens->Stats();
  EXPECT_EQ(s.prefetches_useful, 2u);
  EXPECT_EQ(s.prefetches_late, 1u);
  EXPECT_EQ(s.bytes_wasted, b.size);
  EXPECT_EQ(s.bytes_prefetched, 3 * a.size);
  EXPECT_EQ(s.in_flight_bytes, c.size);
  EXPECT_EQ(s.experts[0].issued, 3u);
  EXPECT_EQ(s.experts[0].useful, 2u);
  f.ens->Landed(c.key, c.size, true);
  EXPECT_EQ(f.ens->Stats().in_flight_bytes, 0u);
}

TEST(MakeExperts, NamesSelectInStandardOrder) {
  FakeCatalog catalog;
  std::vector<std::string> names;
  for (const auto& e : MakeExperts(&catalog)) names.push_back(e->name());
  EXPECT_EQ(names,
            (std::vector<std::string>{"hints", "epoch", "readahead", "history", "dir", "peer"}));
  names.clear();
  for (const auto& e : MakeExperts(&catalog, {"peer", "epoch"})) names.push_back(e->name());
  EXPECT_EQ(names, (std::vector<std::string>{"epoch", "peer"}));
}

}  // namespace
}  // namespace weft::cache
