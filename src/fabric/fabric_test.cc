// Hub and spokes in one process: a LocalVolume on in-memory stores behind CoherentVolume +
// HubService, and PortalVolumes talking to it through HubClient - each test twice, over real
// loopback HTTP and over an in-process link (net::InProcessLink) that hands requests to the
// service without sockets, so that the link a simulation uses is held to the same behaviour.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <thread>

#include "fabric/test_hub.h"

namespace weft::fabric {
namespace {

using namespace test_hub;  // NOLINT(build/namespaces): the helpers of test_hub.h

class FabricTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override { ASSERT_TRUE(hub_.volume().Mkdir(ctx_, "/data").ok()); }
  // A hub user for a spoke in the EU, with read,list on /data/eu/ (made) and nothing else.
  auth::AccessKey SiteEuKey() {
    auth::IdentityStore& ids = hub_.identities();
    EXPECT_TRUE(ids.CreateUser("site-eu", {}).ok());
    auto key = ids.CreateKey("site-eu");
    EXPECT_TRUE(key.ok());
    EXPECT_TRUE(ids.AddRule({"", "user:site-eu", "/data/eu/", auth::kRead | auth::kList}).ok());
    EXPECT_TRUE(hub_.volume().Mkdir(ctx_, "/data/eu").ok());
    return key.ok() ? *key : auth::AccessKey{};
  }
  RequestContext ctx_;
  Hub hub_{milliseconds(2000), GetParam()};
};

TEST_P(FabricTest, SpokeReadsWhatTheHubHoldsAndCachesIt) {
  const std::string data = RandomBytes(700'000, 1);
  ASSERT_TRUE(Put(hub_.volume(), "/data/a.bin", data).ok());
  auto spoke = OpenSpoke(hub_, {"/data:/train"});
  ASSERT_TRUE(spoke.ok()) << spoke.status().ToString();
  Volume& v = **spoke;

  auto info = v.Stat(ctx_, "/train/a.bin");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->path, "/train/a.bin");
  EXPECT_EQ(info->size, data.size());
  EXPECT_EQ(*Get(v, "/train/a.bin"), data);
  auto reader = v.OpenReader(ctx_, "/train/a.bin");
  EXPECT_EQ(*(*reader)->ReadAt(123'456, 1000), data.substr(123'456, 1000));

  const PortalStats first = (*spoke)->Stats();
  EXPECT_GT(first.chunks_fetched, 1u);
  EXPECT_GT(first.metadata_hits, 0u);  // the second open used the leased answer
  // A second full read moves no chunk again.
  EXPECT_EQ(*Get(v, "/train/a.bin"), data);
  EXPECT_EQ((*spoke)->Stats().chunks_fetched, first.chunks_fetched);

  // Listing, the synthetic root, and paths outside every portal.
  auto root = v.ReadDir(ctx_, "/");
  ASSERT_TRUE(root.ok());
  ASSERT_EQ(root->entries.size(), 1u);
  EXPECT_EQ(root->entries[0].name, "train");
  ReadDirOptions with_info;
  with_info.with_info = true;
  auto listing = v.ReadDir(ctx_, "/train", with_info);
  ASSERT_TRUE(listing.ok()) << listing.status().ToString();
  ASSERT_EQ(listing->entries.size(), 1u);
  EXPECT_EQ(listing->entries[0].info->path, "/train/a.bin");
  EXPECT_EQ(v.Stat(ctx_, "/elsewhere").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(v.Stat(ctx_, "/train/missing").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Put(v, "/outside", "x").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(v.Mkdir(ctx_, "/", 0755, false).status().code(), StatusCode::kAlreadyExists);
}

// ReadChunks (how S3 GETs stream) gives the same bytes at a spoke as at the hub, and fetches
// the chunks it is asked for, once.
TEST_P(FabricTest, ReadChunksAtASpokeAndAtTheHubAgree) {
  const std::string data = RandomBytes(2'000'000, 23);
  ASSERT_TRUE(Put(hub_.volume(), "/data/c.bin", data).ok());
  auto spoke = OpenSpoke(hub_, {"/data"});
  ASSERT_TRUE(spoke.ok()) << spoke.status().ToString();
  for (Volume* v : {&hub_.volume(), static_cast<Volume*>(spoke->get())}) {
    auto reader = v->OpenReader(ctx_, "/data/c.bin");
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    const size_t n = (*reader)->chunks().size();
    ASSERT_GT(n, 4u);
    std::string got;
    for (size_t first = 0; first < n; first += 3) {
      auto chunks = (*reader)->ReadChunks(first, std::min(n, first + 3),
                                          first % 2 ? Reuse::kUnlikely : Reuse::kLikely);
      ASSERT_TRUE(chunks.ok()) << chunks.status().ToString();
      ASSERT_EQ(chunks->size(), std::min<size_t>(3, n - first));
      for (const auto& c : *chunks) got += *c;
    }
    EXPECT_EQ(got, data);
    EXPECT_TRUE((*reader)->ReadChunks(2, 2, Reuse::kLikely)->empty());
    EXPECT_EQ((*reader)->ReadChunks(n - 1, n + 1, Reuse::kUnlikely).status().code(),
              StatusCode::kOutOfRange);
  }
  const uint64_t fetched = (*spoke)->Stats().chunks_fetched;
  auto again = (*spoke)->OpenReader(ctx_, "/data/c.bin");
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE((*again)->ReadChunks(0, (*again)->chunks().size(), Reuse::kUnlikely).ok());
  EXPECT_EQ((*spoke)->Stats().chunks_fetched, fetched);
}

// A small file's chunk list comes with its directory's listing, and its bytes with one
// fetch; read again after it changed at the hub, the delta comes with the directory's
// revalidation: one round trip each time. A large file is fetched in batches.
TEST_P(FabricTest, ASmallFileArrivesInOneRoundTripAfterItsDirectorysListing) {
  const std::string small = RandomBytes(150'000, 21);
  const std::string large = RandomBytes(3'000'000, 22);
  ASSERT_TRUE(Put(hub_.volume(), "/data/small", small).ok());
  ASSERT_TRUE(Put(hub_.volume(), "/data/large", large).ok());
  auto spoke = OpenSpoke(hub_, {"/data"});
  ASSERT_TRUE(spoke.ok());
  EXPECT_EQ(*Get(**spoke, "/data/small"), small);
  EXPECT_EQ((*spoke)->Stats().metadata_misses, 1u);
  const uint64_t fetched = (*spoke)->hub().bytes_received();
  EXPECT_GT(fetched, small.size());
  std::string edited = small;
  edited.replace(1'000, 100, RandomBytes(100, 23));
  ASSERT_TRUE(Put(hub_.volume(), "/data/small", edited).ok());
  EXPECT_EQ(*Get(**spoke, "/data/small"), edited);
  EXPECT_EQ((*spoke)->Stats().metadata_misses, 2u);
  EXPECT_EQ((*spoke)->hub().bytes_received(), fetched);  // no fetch: it came with the answer
  EXPECT_LT((*spoke)->Stats().bytes_fetched, small.size() + 2'000);
  EXPECT_EQ(*Get(**spoke, "/data/large"), large);
  EXPECT_GT((*spoke)->hub().bytes_received(), fetched + large.size() / 2);
}

// The spoke's leases run on the clock it is given (base/clock.h), not on the system's: a
// simulation moves time without sleeping through it.
TEST_P(FabricTest, ASpokesLeasesRunOnItsClock) {
  ASSERT_TRUE(Put(hub_.volume(), "/data/x", "one").ok());
  FakeClock clock;
  PortalVolumeOptions options;
  options.clock = &clock;
  auto spoke = OpenSpoke(hub_, {"/data"}, nullptr, options);
  ASSERT_TRUE(spoke.ok());
  ASSERT_TRUE((*spoke)->Stat(ctx_, "/data/x").ok());
  const uint64_t asked = (*spoke)->Stats().metadata_misses;
  ASSERT_TRUE((*spoke)->Stat(ctx_, "/data/x").ok());
  EXPECT_EQ((*spoke)->Stats().metadata_misses, asked);  // leased
  clock.AdvanceNanos(int64_t{3'000'000'000});           // past the hub's 2 s lease, at once
  ASSERT_TRUE((*spoke)->Stat(ctx_, "/data/x").ok());
  EXPECT_GT((*spoke)->Stats().metadata_misses, asked);
}

// A new version of a dataset (a changed and an added file, each revoking the directory's
// lease, as lapsed leases also end): re-reading it moves the new bytes and the metadata, and
// none of the bytes of the files that did not change, which the spoke still holds.
TEST_P(FabricTest, ReReadsOfUnchangedSmallFilesMoveMetadataOnly) {
  std::map<std::string, std::string> files;
  uint64_t total = 0;
  for (int i = 0; i < 40; ++i) {
    files["/data/img" + std::to_string(i)] = RandomBytes(100'000 + i, 100 + i);
    total += 100'000 + i;
  }
  for (const auto& [path, data] : files) ASSERT_TRUE(Put(hub_.volume(), path, data).ok());
  auto spoke = OpenSpoke(hub_, {"/data"});
  ASSERT_TRUE(spoke.ok());
  for (const auto& [path, data] : files) EXPECT_EQ(*Get(**spoke, path), data);
  const uint64_t first = (*spoke)->Stats().bytes_fetched;
  EXPECT_GE(first, total);

  const std::map<std::string, std::string> v2 = {{"/data/img3", RandomBytes(100'000, 999)},
                                                 {"/data/new", RandomBytes(80'000, 997)}};
  for (const auto& [path, data] : v2) {
    ASSERT_TRUE(Put(hub_.volume(), path, data).ok());
    files[path] = data;
  }
  for (const auto& [path, data] : files) EXPECT_EQ(*Get(**spoke, path), data);
  const uint64_t second = (*spoke)->Stats().bytes_fetched - first;
  EXPECT_GE(second, 180'000u);
  EXPECT_LE(second, 180'000u + 1'000u);  // the new bytes and their frame headers, nothing else
}

// A directory read again and again keeps its lease: the spoke renews it in one round trip
// before it lapses, so re-reads past the lease's length ask the hub nothing per file, and a
// change at the hub is still seen at once (the renewed lease is revoked like any other).
TEST_P(FabricTest, LeasesOfDirectoriesInUseAreRenewedNotLetLapse) {
  std::map<std::string, std::string> files;
  for (int i = 0; i < 20; ++i) files["/data/f" + std::to_string(i)] = RandomBytes(5'000, 200 + i);
  for (const auto& [path, data] : files) ASSERT_TRUE(Put(hub_.volume(), path, data).ok());
  auto spoke = OpenSpoke(hub_, {"/data"});
  ASSERT_TRUE(spoke.ok());
  for (const auto& [path, data] : files) ASSERT_EQ(*Get(**spoke, path), data);
  const PortalStats first = (*spoke)->Stats();
  // Three lease lengths of reading one file every 200 ms.
  const auto until = std::chrono::steady_clock::now() + milliseconds(6000);
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_EQ(*Get(**spoke, "/data/f0"), files["/data/f0"]);
    std::this_thread::sleep_for(milliseconds(200));
  }
  for (const auto& [path, data] : files) ASSERT_EQ(*Get(**spoke, path), data);
  const PortalStats later = (*spoke)->Stats();
  EXPECT_GE(later.lease_renewals, 2u);
  EXPECT_EQ(later.metadata_misses, first.metadata_misses);
  const std::string v2 = RandomBytes(5'000, 999);
  ASSERT_TRUE(Put(hub_.volume(), "/data/f3", v2).ok());
  EXPECT_EQ(*Get(**spoke, "/data/f3"), v2);
}

// Changed files move about what changed: a small file with a region rewritten and one with
// bytes appended arrive inside their lookups as deltas against the version the spoke holds;
// a large file with scattered edits is fetched as deltas chunk by chunk.
TEST_P(FabricTest, ChangedFilesArriveAsDeltasAgainstWhatTheSpokeHolds) {
  const std::string image = RandomBytes(120'000, 31), log = RandomBytes(90'000, 32);
  const std::string big = RandomBytes(6'000'000, 33);
  ASSERT_TRUE(Put(hub_.volume(), "/data/image", image).ok());
  ASSERT_TRUE(Put(hub_.volume(), "/data/log", log).ok());
  ASSERT_TRUE(Put(hub_.volume(), "/data/big", big).ok());
  auto spoke = OpenSpoke(hub_, {"/data"});
  ASSERT_TRUE(spoke.ok());
  for (const char* path : {"/data/image", "/data/log", "/data/big"})
    ASSERT_TRUE(Get(**spoke, path).ok());
  const uint64_t before = (*spoke)->Stats().bytes_fetched;

  std::string image2 = image;
  image2.replace(40'000, 4'000, RandomBytes(4'000, 34));
  const std::string log2 = log + RandomBytes(3'000, 35);
  std::string big2 = big;
  for (int k = 0; k < 10; ++k) big2.replace(k * 590'000 + 1'000, 500, RandomBytes(500, 40 + k));
  ASSERT_TRUE(Put(hub_.volume(), "/data/image", image2).ok());
  ASSERT_TRUE(Put(hub_.volume(), "/data/log", log2).ok());
  ASSERT_TRUE(Put(hub_.volume(), "/data/big", big2).ok());
  EXPECT_EQ(*Get(**spoke, "/data/image"), image2);
  EXPECT_EQ(*Get(**spoke, "/data/log"), log2);
  EXPECT_EQ(*Get(**spoke, "/data/big"), big2);
  const uint64_t moved = (*spoke)->Stats().bytes_fetched - before;
  // 4,000 + 3,000 + 5,000 new bytes, plus frame headers and the zstd framing of each delta
  // (whole chunks would be about 120 KB + 90 KB + 10 x 64 KiB).
  EXPECT_LT(moved, 30'000u);
}

// A large file looked up again after its lease lapsed costs its info only when the spoke
// already knows the chunks of its version; another version comes with its chunks.
TEST_P(FabricTest, ALookupOfAVersionTheSpokeKnowsLeavesItsChunksOut) {
  Hub hub(milliseconds(300), GetParam());
  ASSERT_TRUE(hub.volume().Mkdir(ctx_, "/data").ok());
  const std::string big = RandomBytes(3'000'000, 61);
  ASSERT_TRUE(Put(hub.volume(), "/data/big", big).ok());
  auto spoke = OpenSpoke(hub, {"/data"});
  ASSERT_TRUE(spoke.ok());
  EXPECT_EQ(*Get(**spoke, "/data/big"), big);
  const std::string version = (*spoke)->Stat(ctx_, "/data/big")->version_id;
  auto client = RawClient(hub, "raw", {}, {"/data"});
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto same = (*client)->Call("lookup", {{"path", "/data/big"}, {"known_version", version}});
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_TRUE(same->value("chunks_unchanged", false));
  EXPECT_FALSE(same->contains("chunks"));
  auto other = (*client)->Call("lookup", {{"path", "/data/big"}, {"known_version", "1.1"}});
  ASSERT_TRUE(other.ok());
  EXPECT_GT(other->at("chunks").size(), 10u);
  // Read again after the lease lapsed, unchanged and then changed at the hub.
  std::this_thread::sleep_for(milliseconds(400));
  EXPECT_EQ(*Get(**spoke, "/data/big"), big);
  std::string big2 = big;
  big2.replace(1'000'000, 100, RandomBytes(100, 62));
  ASSERT_TRUE(Put(hub.volume(), "/data/big", big2).ok());
  std::this_thread::sleep_for(milliseconds(400));
  EXPECT_EQ(*Get(**spoke, "/data/big"), big2);
}

// A batch of chunks is compressed as one stream: what repeats from one chunk to the next
// (records, phrases, tar headers) costs nothing the second time, where chunks compressed one
// by one pay for each. Incompressible bytes cost about their size.
TEST_P(FabricTest, FetchedChunksAreCompressedAcrossTheBatch) {
  const std::string block = RandomBytes(300'000, 51);  // longer than the largest chunk
  std::string repeated;
  for (int r = 0; repeated.size() < 3'000'000; ++r) {
    std::string copy = block;  // a byte in every 4 KiB differs: no chunk is stored twice
    for (size_t k = r; k < copy.size(); k += 4096) copy[k] ^= 0x5a;
    repeated += copy;
  }
  const std::string random = RandomBytes(1'000'000, 52);
  ASSERT_TRUE(Put(hub_.volume(), "/data/repeated", repeated).ok());
  ASSERT_TRUE(Put(hub_.volume(), "/data/random", random).ok());
  auto spoke = OpenSpoke(hub_, {"/data"});
  ASSERT_TRUE(spoke.ok());
  EXPECT_EQ(*Get(**spoke, "/data/repeated"), repeated);
  const uint64_t repeated_moved = (*spoke)->Stats().bytes_fetched;
  EXPECT_LT(repeated_moved, 3 * block.size() / 2);  // not 3 MB: one block, about
  EXPECT_EQ(*Get(**spoke, "/data/random"), random);
  const uint64_t random_moved = (*spoke)->Stats().bytes_fetched - repeated_moved;
  EXPECT_GT(random_moved, random.size());
  EXPECT_LT(random_moved, random.size() + 20'000);
}

// Stats of the files of one directory share one listing of it, which names each small
// file's chunks too, so a job opening each file (a FUSE lookup, then the read) costs one round
// trip per file: the fetch of its bytes, with no lookup. A name the whole listing lacks is not
// there; a change at the hub is seen at once.
TEST_P(FabricTest, StatsInOneDirectoryShareOneListing) {
  WriteOptions parents;
  parents.create_parents = true;
  std::vector<std::string> bodies;
  for (int i = 0; i < 20; ++i) {
    bodies.push_back(RandomBytes(1000 + i * 500, 40 + i));
    ASSERT_TRUE(Put(hub_.volume(), "/data/imgs/f" + std::to_string(i), bodies[i], parents).ok());
  }
  auto spoke = OpenSpoke(hub_, {"/data"});
  ASSERT_TRUE(spoke.ok()) << spoke.status().ToString();
  Volume& v = **spoke;
  const uint64_t misses = (*spoke)->Stats().metadata_misses;
  for (int i = 0; i < 20; ++i) {
    auto info = v.Stat(ctx_, "/data/imgs/f" + std::to_string(i));
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_EQ(info->size, bodies[i].size());
    EXPECT_EQ(info->path, "/data/imgs/f" + std::to_string(i));
  }
  EXPECT_EQ((*spoke)->Stats().metadata_misses, misses + 1);
  Status missing = v.Stat(ctx_, "/data/imgs/nope").status();
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("/data/imgs/nope"), std::string::npos) << missing.ToString();
  EXPECT_EQ((*spoke)->Stats().metadata_misses, misses + 1);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(*Get(v, "/data/imgs/f" + std::to_string(i)), bodies[i]);
  EXPECT_EQ((*spoke)->Stats().metadata_misses, misses + 1);
  EXPECT_GT((*spoke)->hub().bytes_received(), 115'000u);  // fetched: no lookup brought them
  ASSERT_TRUE(Put(hub_.volume(), "/data/imgs/nope", "now here").ok());
  auto added = v.Stat(ctx_, "/data/imgs/nope");
  ASSERT_TRUE(added.ok()) << added.status().ToString();
  EXPECT_EQ(added->size, 8u);
  // Any listing with info feeds stats the same way (a readdirplus, os.scandir).
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Put(hub_.volume(), "/data/more/g" + std::to_string(i), "g", parents).ok());
  }
  ReadDirOptions with_info;
  with_info.with_info = true;
  ASSERT_TRUE(v.ReadDir(ctx_, "/data/more", with_info).ok());
  const uint64_t after_listing = (*spoke)->Stats().metadata_misses;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(v.Stat(ctx_, "/data/more/g" + std::to_string(i)).ok());
  EXPECT_EQ(v.Stat(ctx_, "/data/more/none").status().code(), StatusCode::kNotFound);
  EXPECT_EQ((*spoke)->Stats().metadata_misses, after_listing);
  // The root has no directory to be listed in (a spoke of the whole namespace).
  auto whole = OpenSpoke(hub_, {"/"});
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  for (const char* path : {"/", "/data", "/data/imgs", "/data/imgs/f3"}) {
    EXPECT_TRUE((*whole)->Stat(ctx_, path).ok()) << path;
  }
  EXPECT_EQ((*whole)->Stat(ctx_, "/nope").status().code(), StatusCode::kNotFound);
}

// A new version of a directory the spoke read before costs what changed in it, however it
// changed: one `dir` round trip names the changes since the spoke's last listing (files
// removed, one rewritten, one added), and files moved to another directory (a relabelling)
// are read from the chunks the spoke holds, their new directory's listing naming them.
TEST_P(FabricTest, ANewVersionOfADirectoryCostsWhatChangedInIt) {
  WriteOptions parents;
  parents.create_parents = true;
  std::map<std::string, std::string> v1;
  for (int i = 0; i < 60; ++i) {
    v1["/data/set/img" + std::to_string(i)] = RandomBytes(20'000 + i, 300 + i);
  }
  for (const auto& [path, data] : v1) ASSERT_TRUE(Put(hub_.volume(), path, data, parents).ok());
  auto spoke = OpenSpoke(hub_, {"/data"});
  ASSERT_TRUE(spoke.ok());
  Volume& v = **spoke;
  for (const auto& [path, data] : v1) ASSERT_EQ(*Get(v, path), data);
  const PortalStats read1 = (*spoke)->Stats();

  std::map<std::string, std::string> v2 = v1;
  for (int i : {4, 5, 6}) {
    ASSERT_TRUE(hub_.volume().Unlink(ctx_, "/data/set/img" + std::to_string(i)).ok());
    v2.erase("/data/set/img" + std::to_string(i));
  }
  for (int i = 10; i < 20; ++i) {
    const std::string from = "/data/set/img" + std::to_string(i);
    const std::string to = "/data/other/img" + std::to_string(i);
    ASSERT_TRUE(hub_.volume().Mkdir(ctx_, "/data/other", 0755, true).ok());
    ASSERT_TRUE(hub_.volume().Rename(ctx_, from, to).ok());
    v2[to] = v2[from];
    v2.erase(from);
  }
  // A copy under a new name, as an S3 relabelling does it: new bytes, same chunks.
  ASSERT_TRUE(Put(hub_.volume(), "/data/other/copy30", v1["/data/set/img30"], parents).ok());
  v2["/data/other/copy30"] = v1["/data/set/img30"];
  v2["/data/set/img40"] = RandomBytes(20'040, 999);
  v2["/data/set/new"] = RandomBytes(7'000, 998);
  for (const char* path : {"/data/set/img40", "/data/set/new"}) {
    ASSERT_TRUE(Put(hub_.volume(), path, v2[path]).ok());
  }

  for (const auto& [path, data] : v2) ASSERT_EQ(*Get(v, path), data) << path;
  for (int i : {4, 5, 10}) {
    EXPECT_EQ(v.Stat(ctx_, "/data/set/img" + std::to_string(i)).status().code(),
              StatusCode::kNotFound);
  }
  const PortalStats read2 = (*spoke)->Stats();
  // The rewritten and the new file's bytes, nothing of the moved or copied ones.
  const uint64_t moved = read2.bytes_fetched - read1.bytes_fetched;
  EXPECT_GE(moved, 27'000u);
  EXPECT_LE(moved, 27'040u + 1'000u);
  // Two round trips of metadata: /data/set's changes and /data/other's listing.
  EXPECT_EQ(read2.metadata_misses - read1.metadata_misses, 2u);
  EXPECT_EQ(read2.dirs_changed - read1.dirs_changed, 1u);
  EXPECT_EQ(read2.dirs_whole - read1.dirs_whole, 1u);
}

// A file too large for a `dir` answer's chunk lists is looked up on its own, and its
// directory's listing, still leased, is not asked for again first.
TEST_P(FabricTest, LargeFilesOfAListedDirectoryCostOneLookupEach) {
  WriteOptions parents;
  parents.create_parents = true;
  const std::string a = RandomBytes(1'500'000, 61), b = RandomBytes(1'600'000, 62);
  ASSERT_TRUE(Put(hub_.volume(), "/data/big/a", a, parents).ok());
  ASSERT_TRUE(Put(hub_.volume(), "/data/big/b", b).ok());
  auto spoke = OpenSpoke(hub_, {"/data"});
  ASSERT_TRUE(spoke.ok());
  ASSERT_EQ(*Get(**spoke, "/data/big/a"), a);
  const uint64_t before = (*spoke)->Stats().metadata_misses;
  ASSERT_EQ(*Get(**spoke, "/data/big/b"), b);
  EXPECT_EQ((*spoke)->Stats().metadata_misses, before + 1);
  EXPECT_EQ((*spoke)->Stats().dirs_changed, 0u);
}

// A directory renamed above the spoke's listing (its changes could not be read as a delta of
// its children), and one larger than a `dir` answer lists, are still read right.
TEST_P(FabricTest, DirectoriesMovedOrTooLargeToListAreReadRight) {
  WriteOptions parents;
  parents.create_parents = true;
  ASSERT_TRUE(Put(hub_.volume(), "/data/a/x/f", "one", parents).ok());
  auto spoke = OpenSpoke(hub_, {"/data"});
  ASSERT_TRUE(spoke.ok());
  Volume& v = **spoke;
  ASSERT_EQ(*Get(v, "/data/a/x/f"), "one");
  ASSERT_TRUE(hub_.volume().Rename(ctx_, "/data/a", "/data/b").ok());
  ASSERT_TRUE(Put(hub_.volume(), "/data/a/x/f", "two", parents).ok());
  EXPECT_EQ(*Get(v, "/data/a/x/f"), "two");
  EXPECT_EQ(*Get(v, "/data/b/x/f"), "one");

  for (uint32_t i = 0; i <= kMaxDirEntries; ++i) {
    ASSERT_TRUE(hub_.volume().Mkdir(ctx_, "/data/big/d" + std::to_string(i), 0755, true).ok());
  }
  ASSERT_TRUE(Put(hub_.volume(), "/data/big/file", "in a large directory").ok());
  EXPECT_EQ(*Get(v, "/data/big/file"), "in a large directory");
  EXPECT_EQ(v.Stat(ctx_, "/data/big/none").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(v.Stat(ctx_, "/data/big/d7").ok());
}

TEST_P(FabricTest, WriteAtSpokeIsDurableAtHubBeforeItReturns) {
  auto spoke = OpenSpoke(hub_, {"/data"});
  ASSERT_TRUE(spoke.ok()) << spoke.status().ToString();
  const std::string data = RandomBytes(300'000, 2);
  WriteOptions parents;
  parents.create_parents = true;
  auto info = Put(**spoke, "/data/ckpt/step1", data, parents);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->path, "/data/ckpt/step1");
  EXPECT_EQ(info->etag, Md5Hex(AsBytes(data)));
  // Byte-identical at the hub, same version and ETag.
  EXPECT_EQ(*Get(hub_.volume(), "/data/ckpt/step1"), data);
  auto at_hub = hub_.volume().Stat(ctx_, "/data/ckpt/step1");
  EXPECT_EQ(at_hub->version_id, info->version_id);
  EXPECT_EQ(at_hub->etag, info->etag);

  // The same bytes again: the hub lacks none of the chunks, so none are sent.
  const uint64_t uploaded = (*spoke)->Stats().bytes_uploaded;
  ASSERT_TRUE(Put(**spoke, "/data/ckpt/copy", data).ok());
  EXPECT_EQ((*spoke)->Stats().bytes_uploaded, uploaded);
  EXPECT_EQ(*Get(hub_.volume(), "/data/ckpt/copy"), data);

  // Conditional commits: the hub decides.
  WriteOptions stale;
  stale.if_version = "1.999";
  EXPECT_EQ(Put(**spoke, "/data/ckpt/step1", "new", stale).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(*Get(hub_.volume(), "/data/ckpt/step1"), data);
}

TEST_P(FabricTest, TheSpokeKeepsItsChunksWithinTheCacheLimit) {
  const std::string data = RandomBytes(3'000'000, 12);
  ASSERT_TRUE(Put(hub_.volume(), "/data/big", data).ok());
  auto store = std::shared_ptr<ChunkStore>(NewMemChunkStore());
  PortalVolumeOptions small;
  small.cache_bytes = 1 << 20;
  small.inline_commit_bytes = 64 << 10;  // the write below uploads in batches first
  auto spoke = OpenSpoke(hub_, {"/data"}, store, small);
  ASSERT_TRUE(spoke.ok());
  EXPECT_EQ(*Get(**spoke, "/data/big"), data);  // read in pieces as they are evicted
  EXPECT_LE(store->Stats().raw_bytes, 1u << 20);
  EXPECT_GT((*spoke)->Stats().evictions, 0u);
  // A write larger than the cache: its chunks stay until the hub has them.
  const std::string ckpt = RandomBytes(2'500'000, 13);
  ASSERT_TRUE(Put(**spoke, "/data/ckpt", ckpt).ok());
  EXPECT_EQ(*Get(hub_.volume(), "/data/ckpt"), ckpt);
  EXPECT_LE(store->Stats().raw_bytes, 1u << 20);  // and may go once committed
  EXPECT_EQ(*Get(**spoke, "/data/ckpt"), ckpt);
}

// A store that keeps what is Put but loses each chunk just before it is read, as when an
// eviction round always runs between a spoke's fetch and its read: the race made certain.
class ForgetfulChunkStore final : public ChunkStore {
 public:
  Result<bool> Put(const ChunkId& id, ByteSpan data) override { return base_->Put(id, data); }
  Status Flush() override { return base_->Flush(); }
  bool Contains(const ChunkId& id) override { return base_->Contains(id); }
  Result<std::string> Get(const ChunkId& id) override {
    ++lost_;
    return NotFound("evicted: " + id.ShortHex());
  }
  Result<SweepStats> Sweep(const std::function<bool(const ChunkId&)>& is_live) override {
    return base_->Sweep(is_live);
  }
  Status Verify(std::vector<ChunkProblem>* problems) override { return base_->Verify(problems); }
  ChunkStoreStats Stats() override { return base_->Stats(); }
  int lost() const { return lost_; }

 private:
  std::unique_ptr<ChunkStore> base_ = NewMemChunkStore();
  std::atomic<int> lost_ = 0;
};

// A chunk evicted between its fetch and its read is fetched again and read from what came,
// however often that happens: reads at a busy spoke with a small cache never fail for it.
TEST_P(FabricTest, ReadsSurviveChunksEvictedBetweenFetchAndRead) {
  const std::string data = RandomBytes(1'500'000, 31);
  ASSERT_TRUE(Put(hub_.volume(), "/data/e.bin", data).ok());
  auto store = std::make_shared<ForgetfulChunkStore>();
  PortalVolumeOptions options;
  options.inline_read_bytes = 0;
  auto spoke = OpenSpoke(hub_, {"/data"}, store, options);
  ASSERT_TRUE(spoke.ok()) << spoke.status().ToString();
  auto reader = (*spoke)->OpenReader(ctx_, "/data/e.bin");
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  const size_t n = (*reader)->chunks().size();
  ASSERT_GT(n, 4u);
  // Read twice: first the chunks come with the read's own fetch; then the store claims them
  // all, and each read finds its chunk gone and fetches it again.
  for (int pass = 0; pass < 2; ++pass) {
    auto all = (*reader)->ReadAt(0, data.size());
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    EXPECT_EQ(*all, data);
    std::string streamed;
    auto chunks = (*reader)->ReadChunks(0, n, Reuse::kLikely);
    ASSERT_TRUE(chunks.ok()) << chunks.status().ToString();
    for (const auto& c : *chunks) streamed += *c;
    EXPECT_EQ(streamed, data);
  }
  EXPECT_GT(store->lost(), 0);
}

TEST_P(FabricTest, LargeWritesUploadInBatchesThenCommit) {
  PortalVolumeOptions options;
  options.inline_commit_bytes = 64 << 10;
  options.batch_bytes = 256 << 10;
  auto spoke = OpenSpoke(hub_, {"/data"}, nullptr, options);
  ASSERT_TRUE(spoke.ok());
  const std::string data = RandomBytes(3'000'000, 3);
  ASSERT_TRUE(Put(**spoke, "/data/big", data).ok());
  EXPECT_EQ(*Get(hub_.volume(), "/data/big"), data);
  EXPECT_GE((*spoke)->Stats().bytes_uploaded, data.size());
  auto fsck = hub_.volume().Fsck(ctx_);
  ASSERT_TRUE(fsck.ok());
  EXPECT_TRUE(fsck->problems.empty());
}

TEST_P(FabricTest, HubWriteInvalidatesSpokeCacheBeforeItReturns) {
  ASSERT_TRUE(Put(hub_.volume(), "/data/x", "one").ok());
  auto spoke = OpenSpoke(hub_, {"/data"});
  ASSERT_TRUE(spoke.ok());
  EXPECT_EQ(*Get(**spoke, "/data/x"), "one");
  EXPECT_EQ(*Get(**spoke, "/data/x"), "one");  // under the lease, from cache
  // The lease is 2 s; the hub's write must not wait for it: the spoke acknowledges.
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(Put(hub_.volume(), "/data/x", "two").ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1500));
  EXPECT_EQ(*Get(**spoke, "/data/x"), "two");  // no sleep: the write returned after the ack
  EXPECT_EQ(hub_.leases().expired_waits(), 0u);
  // Removal and rename are seen at once as well; absence was cached and is invalidated too.
  EXPECT_EQ((*spoke)->Stat(ctx_, "/data/y").status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(hub_.volume().Rename(ctx_, "/data/x", "/data/y").ok());
  EXPECT_EQ((*spoke)->Stat(ctx_, "/data/x").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*Get(**spoke, "/data/y"), "two");
  EXPECT_GE((*spoke)->Stats().invalidations, 2u);
}

TEST_P(FabricTest, CreatingParentsRevokesOnlyWhatItCreates) {
  ASSERT_TRUE(hub_.volume().Mkdir(ctx_, "/data/old").ok());
  auto spoke = OpenSpoke(hub_, {"/data"});
  ASSERT_TRUE(spoke.ok());
  Volume& v = **spoke;
  ASSERT_TRUE(v.Stat(ctx_, "/data").ok());      // leased under "/"
  ASSERT_TRUE(v.Stat(ctx_, "/data/old").ok());  // under "/data"
  ASSERT_EQ(v.ReadDir(ctx_, "/data")->entries.size(), 1u);
  WriteOptions parents;
  parents.create_parents = true;
  ASSERT_TRUE(Put(hub_.volume(), "/data/new/deep/x", "x", parents).ok());
  // "/data" changed (a new entry) and is seen at once; "/" did not change and stays cached.
  EXPECT_EQ(v.ReadDir(ctx_, "/data")->entries.size(), 2u);
  const uint64_t misses = (*spoke)->Stats().metadata_misses;
  ASSERT_TRUE(v.Stat(ctx_, "/data").ok());
  EXPECT_EQ((*spoke)->Stats().metadata_misses, misses);
  EXPECT_EQ(*Get(v, "/data/new/deep/x"), "x");
  // A path looked below while it was a file is answered afresh once it becomes a directory.
  ASSERT_TRUE(Put(hub_.volume(), "/data/f", "file").ok());
  EXPECT_EQ(v.Stat(ctx_, "/data/f/g").status().code(), StatusCode::kNotADirectory);
  ASSERT_TRUE(hub_.volume().Unlink(ctx_, "/data/f").ok());
  ASSERT_TRUE(hub_.volume().Mkdir(ctx_, "/data/f").ok());
  EXPECT_EQ(v.Stat(ctx_, "/data/f/g").status().code(), StatusCode::kNotFound);
}

TEST_P(FabricTest, WritesAtOneSpokeAreSeenAtAnother) {
  auto a = OpenSpoke(hub_, {"/data"});
  auto b = OpenSpoke(hub_, {"/data:/d"});
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(Put(**a, "/data/f", "v1").ok());
  EXPECT_EQ(*Get(**b, "/d/f"), "v1");
  for (int i = 2; i < 6; ++i) {
    const std::string value = "v" + std::to_string(i);
    ASSERT_TRUE(Put(**a, "/data/f", value).ok());
    EXPECT_EQ(*Get(**b, "/d/f"), value);  // linearizable: the completed write is visible
  }
  ASSERT_TRUE((*a)->Unlink(ctx_, "/data/f").ok());
  EXPECT_EQ((*b)->Stat(ctx_, "/d/f").status().code(), StatusCode::kNotFound);
}

TEST_P(FabricTest, AFileWithSeveralNamesIsNewUnderEveryNameAtOnce) {
  ASSERT_TRUE(hub_.volume().Mkdir(ctx_, "/data/a").ok());
  ASSERT_TRUE(hub_.volume().Mkdir(ctx_, "/data/b").ok());
  ASSERT_TRUE(Put(hub_.volume(), "/data/a/x", "one").ok());
  auto a = OpenSpoke(hub_, {"/data"});
  auto b = OpenSpoke(hub_, {"/data"});
  ASSERT_TRUE(a.ok() && b.ok());
  // A spoke that listed the directory before the link learns of the new name and count.
  EXPECT_EQ((*b)->Stat(ctx_, "/data/a/x")->nlink, 1u);
  ASSERT_TRUE((*a)->Link(ctx_, "/data/a/x", "/data/b/y").ok());
  EXPECT_EQ((*b)->Stat(ctx_, "/data/a/x")->nlink, 2u);
  EXPECT_EQ(*Get(**b, "/data/b/y"), "one");
  EXPECT_EQ(*Get(**b, "/data/a/x"), "one");
  // A write through one name, at the hub or at a spoke, is read at once through the other,
  // though the directories were listed and leased before.
  ASSERT_TRUE(Put(hub_.volume(), "/data/a/x", "two").ok());
  EXPECT_EQ(*Get(**b, "/data/b/y"), "two");
  ASSERT_TRUE(Put(**a, "/data/b/y", "three").ok());
  EXPECT_EQ(*Get(**b, "/data/a/x"), "three");
  EXPECT_EQ((*b)->Stat(ctx_, "/data/b/y")->inode, (*b)->Stat(ctx_, "/data/a/x")->inode);
  // Removing one name leaves the other, counted once.
  ASSERT_TRUE((*a)->Unlink(ctx_, "/data/a/x").ok());
  EXPECT_EQ((*b)->Stat(ctx_, "/data/a/x").status().code(), StatusCode::kNotFound);
  EXPECT_EQ((*b)->Stat(ctx_, "/data/b/y")->nlink, 1u);
  EXPECT_EQ(*Get(**b, "/data/b/y"), "three");
  EXPECT_TRUE(hub_.volume().Fsck(ctx_)->problems.empty());
  // Special files cross the fabric too: made at one spoke, listed and statted at another.
  auto fifo = (*a)->Mknod(ctx_, "/data/b/pipe", FileType::kFifo, 0640, 0);
  ASSERT_TRUE(fifo.ok()) << fifo.status().ToString();
  ASSERT_TRUE((*a)->Mknod(ctx_, "/data/b/tty", FileType::kCharDevice, 0600, 0x501).ok());
  EXPECT_EQ((*b)->Stat(ctx_, "/data/b/pipe")->type, FileType::kFifo);
  EXPECT_EQ((*b)->Stat(ctx_, "/data/b/tty")->rdev, 0x501u);
  auto listed = (*b)->ReadDir(ctx_, "/data/b", {});
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(listed->entries.size(), 3u);  // pipe, tty, y
}

TEST_P(FabricTest, AVanishedSpokeDelaysHubWritesOnlyUntilItsLeaseEnds) {
  Hub hub(milliseconds(600), GetParam());
  ASSERT_TRUE(hub.volume().Mkdir(ctx_, "/data").ok());
  ASSERT_TRUE(Put(hub.volume(), "/data/x", "one").ok());
  {
    auto spoke = OpenSpoke(hub, {"/data"});
    ASSERT_TRUE(spoke.ok());
    EXPECT_EQ(*Get(**spoke, "/data/x"), "one");
  }  // gone without a word, still holding a lease
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(Put(hub.volume(), "/data/x", "two").ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1500));
  EXPECT_EQ(hub.leases().expired_waits(), 1u);
}

TEST_P(FabricTest, SnapshotsAndVersionsThroughASpoke) {
  auto spoke = OpenSpoke(hub_, {"/data"});
  ASSERT_TRUE(spoke.ok());
  ASSERT_TRUE(Put(**spoke, "/data/m", "old").ok());
  auto snap = (*spoke)->CreateSnapshot(ctx_, "v1", "/data");
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  EXPECT_EQ(snap->path, "/data");
  ASSERT_TRUE(Put(**spoke, "/data/m", "new").ok());
  EXPECT_EQ(*Get(**spoke, "/.weft/snapshots/v1/m"), "old");
  ReadOptions at_v1;
  at_v1.snapshot = "v1";
  auto r = (*spoke)->OpenReader(ctx_, "/data/m", at_v1);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*(*r)->ReadAt(0, 10), "old");
  auto versions = (*spoke)->ListVersions(ctx_, "/data/m");
  ASSERT_TRUE(versions.ok());
  ASSERT_EQ(versions->size(), 2u);
  auto old = (*spoke)->OpenVersion(ctx_, "/data/m", (*versions)[1].version_id);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(*(*old)->ReadAt(0, 10), "old");
  auto list = (*spoke)->ListSnapshots(ctx_);
  ASSERT_EQ(list->size(), 1u);
  ASSERT_TRUE((*spoke)->DeleteSnapshot(ctx_, "v1").ok());
  EXPECT_EQ((*spoke)->Stat(ctx_, "/.weft/snapshots/v1/m").status().code(), StatusCode::kNotFound);
}

TEST_P(FabricTest, APinnedSnapshotCostsOneRoundTripForAllItsFiles) {
  WriteOptions parents;
  parents.create_parents = true;
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(Put(hub_.volume(),
                    "/data/train/" + std::to_string(i % 4) + "/s" + std::to_string(i),
                    "v1-" + std::to_string(i), parents)
                    .ok());
  }
  ASSERT_TRUE(hub_.volume().CreateSnapshot(ctx_, "epoch", "/data").ok());
  auto spoke = OpenSpoke(hub_, {"/data"});
  ASSERT_TRUE(spoke.ok());
  Volume& v = **spoke;
  const uint64_t misses = (*spoke)->Stats().metadata_misses;
  ReadOptions at;
  at.snapshot = "epoch";
  for (int i = 0; i < 40; ++i) {
    const std::string rel = "train/" + std::to_string(i % 4) + "/s" + std::to_string(i);
    auto got = Get(v, "/.weft/snapshots/epoch/" + rel);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, "v1-" + std::to_string(i));
    auto r = v.OpenReader(ctx_, "/data/" + rel, at);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*(*r)->ReadAt(0, 100), "v1-" + std::to_string(i));
  }
  // One manifest for every open and stat above; the chunks came in the reads.
  EXPECT_EQ((*spoke)->Stats().metadata_misses, misses + 1);
  ReadDirOptions page;
  page.limit = 4;
  page.with_info = true;
  auto first = v.ReadDir(ctx_, "/.weft/snapshots/epoch/train/1", page);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->entries.size(), 4u);
  EXPECT_TRUE(first->truncated);
  EXPECT_EQ(first->entries[0].name, "s1");
  page.start_after = first->entries.back().name;
  page.limit = 100;
  auto rest = v.ReadDir(ctx_, "/.weft/snapshots/epoch/train/1", page);
  EXPECT_EQ(rest->entries.size(), 6u);
  EXPECT_FALSE(rest->truncated);
  EXPECT_EQ(v.Stat(ctx_, "/.weft/snapshots/epoch/nope").status().code(), StatusCode::kNotFound);

  // Live writes do not touch the pinned snapshot...
  ASSERT_TRUE(Put(hub_.volume(), "/data/train/0/s0", "v2-0").ok());
  EXPECT_EQ(*Get(v, "/.weft/snapshots/epoch/train/0/s0"), "v1-0");
  EXPECT_EQ(*Get(v, "/data/train/0/s0"), "v2-0");
  // ...but re-creating the snapshot under the same name is seen at once.
  ASSERT_TRUE(hub_.volume().DeleteSnapshot(ctx_, "epoch").ok());
  EXPECT_EQ(v.Stat(ctx_, "/.weft/snapshots/epoch/train/0/s0").status().code(),
            StatusCode::kNotFound);
  ASSERT_TRUE(hub_.volume().CreateSnapshot(ctx_, "epoch", "/data").ok());
  EXPECT_EQ(*Get(v, "/.weft/snapshots/epoch/train/0/s0"), "v2-0");
}

// A request's "zstd" flag is read after its parsing is over: one that is not a boolean gets a
// plain answer, not a crash.
TEST_P(FabricTest, AMalformedCompressionFlagGetsAPlainAnswer) {
  if (GetParam() != Transport::kInProcess) GTEST_SKIP() << "a raw link is in-process only";
  auto link = hub_.NewLink();
  std::unique_ptr<net::HttpClient> client = link->Connect();
  for (const char* flag : {R"("yes")", "1", "null", "[true]"}) {
    const std::string body = std::string(R"({"access_key_id": ")") + kRootKey +
                             R"(", "secret_access_key": ")" + kRootSecret + R"(", "zstd": )" +
                             flag + "}";
    auto r = client->Send("POST", std::string(kFabricPrefix) + "token",
                          {{"Content-Type", "application/json"}}, body);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200) << flag;
    EXPECT_EQ(r->Header("Content-Type"), "application/json") << flag;
  }
}

// Every wire call a spoke can make, hand-made to name a path outside its user's rules: each is
// refused at the hub (the lists answer with nothing), and nothing at the hub changes.
TEST_P(FabricTest, EveryWireCallOutsideTheSpokeUsersRulesIsRefused) {
  const auth::AccessKey eu = SiteEuKey();
  ASSERT_TRUE(hub_.volume().Mkdir(ctx_, "/data/secrets").ok());
  auto secret = Put(hub_.volume(), "/data/secret", "no");
  ASSERT_TRUE(secret.ok());
  ASSERT_TRUE(hub_.volume().CreateSnapshot(ctx_, "all", "/data").ok());
  const uint64_t changes_before = hub_.volume().ReadChanges(ctx_, 0, 10000)->size();
  auto client = RawClient(hub_, "eu-1", {"eu"}, {"/data/eu"}, eu.access_key_id, eu.secret_key);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto refused = [](const Status& s) { return s.code() == StatusCode::kPermissionDenied; };
  HubClient& c = **client;
  ASSERT_TRUE(c.Call("list", {{"path", "/data/eu"}}).ok());  // the client itself works
  const std::string v = secret->version_id;
  const json chunks = json::array({json::array({std::string(64, 'a'), 2})});
  for (const auto& [op, args] : std::vector<std::pair<std::string, json>>{
           {"lookup", {{"path", "/data/secret"}}},
           {"lookup", {{"path", "/.weft/snapshots/all/secret"}}},
           {"list", {{"path", "/data"}}},
           {"list", {{"path", "/data/secrets"}}},
           {"dir", {{"path", "/data/secrets"}}},
           {"fetch",
            {{"items",
              json::array(
                  {{{"path", "/data/secret"}, {"version", v}, {"indices", json::array({0})}}})}}},
           {"manifest", {{"snapshot", "all"}}},
       }) {
    EXPECT_TRUE(refused(c.Call(op, args).status())) << op << " " << args.dump();
  }
  EXPECT_TRUE(refused(
      c.CallFramed("commit", {{"path", "/data/new"}, {"etag", "x"}, {"chunks", json::array()}}, "")
          .status()));
  EXPECT_TRUE(
      refused(c.CallFramed("upload", {{"path", "/data/new"}, {"session", std::string(32, 's')}}, "")
                  .status()));
  for (const json& call : std::vector<json>{
           {{"op", "mkdir"}, {"path", "/data/d"}},
           {{"op", "symlink"}, {"path", "/data/l"}, {"target", "secret"}},
           {{"op", "link"}, {"existing", "/data/secret"}, {"path", "/data/eu/l"}},
           {{"op", "mknod"}, {"path", "/data/p"}, {"type", 4}, {"mode", 0644}},
           {{"op", "rename"}, {"from", "/data/secret"}, {"to", "/data/eu/s"}},
           {{"op", "unlink"}, {"path", "/data/secret"}},
           {{"op", "rmdir"}, {"path", "/data/secrets"}},
           {{"op", "setattr"}, {"path", "/data/secret"}, {"mode", 0600}},
           {{"op", "setattr"}, {"path", "/data/eu"}, {"attributes", json::object()}},
           {{"op", "snapshot_create"}, {"path", "/data"}, {"name", "mine"}},
           {{"op", "snapshot_delete"}, {"name", "all"}},
           {{"op", "versions"}, {"path", "/data/secret"}},
           {{"op", "delete_version"}, {"path", "/data/secret"}, {"version", v}},
           {{"op", "changes"}, {"after", 0}, {"limit", 100}},
           {{"op", "usage"}},
       }) {
    EXPECT_TRUE(refused(c.Call("call", call).status())) << call.dump();
  }
  auto snapshots = c.Call("call", {{"op", "snapshot_list"}});
  ASSERT_TRUE(snapshots.ok());
  EXPECT_TRUE(snapshots->at("snapshots").empty());
  EXPECT_EQ(hub_.volume().ReadChanges(ctx_, 0, 10000)->size(), changes_before);
  EXPECT_EQ(*Get(hub_.volume(), "/data/secret"), "no");
}

TEST_P(FabricTest, SpokesAreAuthorisedAsTheirHubUser) {
  auth::IdentityStore& ids = hub_.identities();
  const auth::AccessKey eu = SiteEuKey();
  ASSERT_TRUE(Put(hub_.volume(), "/data/eu/ok", "fine").ok());
  ASSERT_TRUE(Put(hub_.volume(), "/data/secret", "no").ok());

  // Not allowed to extend /data as a whole.
  auto denied = OpenSpoke(hub_, {"/data"}, nullptr, {}, eu.access_key_id, eu.secret_key);
  EXPECT_EQ(denied.status().code(), StatusCode::kPermissionDenied);
  auto wrong = OpenSpoke(hub_, {"/data/eu"}, nullptr, {}, eu.access_key_id, "nope");
  EXPECT_EQ(wrong.status().code(), StatusCode::kPermissionDenied);

  auto spoke = OpenSpoke(hub_, {"/data/eu:/eu"}, nullptr, {}, eu.access_key_id, eu.secret_key);
  ASSERT_TRUE(spoke.ok()) << spoke.status().ToString();
  EXPECT_EQ(*Get(**spoke, "/eu/ok"), "fine");
  // Read-only rule: a write is refused at the hub and nothing changes.
  EXPECT_EQ(Put(**spoke, "/eu/new", "x").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(hub_.volume().Stat(ctx_, "/data/eu/new").status().code(), StatusCode::kNotFound);
  auto spokes = hub_.service().Spokes();
  EXPECT_EQ(spokes.size(), 1u);
  EXPECT_EQ(spokes[0].user, "site-eu");
  // Snapshot paths are judged by the live paths they show: readable here, not elsewhere.
  ASSERT_TRUE(hub_.volume().CreateSnapshot(ctx_, "eu-v1", "/data/eu").ok());
  ASSERT_TRUE(hub_.volume().CreateSnapshot(ctx_, "all-v1", "/data").ok());
  EXPECT_EQ(*Get(**spoke, "/.weft/snapshots/eu-v1/ok"), "fine");
  EXPECT_EQ((*spoke)->Stat(ctx_, "/.weft/snapshots/all-v1/secret").status().code(),
            StatusCode::kPermissionDenied);
  // Writing a directory's attributes (its settings, residency) takes admin, not write.
  ASSERT_TRUE(ids.AddRule({"", "user:site-eu", "/data/eu/", auth::kWrite}).ok());
  SetAttrRequest lift;
  lift.attributes = Attributes{};
  EXPECT_EQ((*spoke)->SetAttr(ctx_, "/eu", lift).status().code(), StatusCode::kPermissionDenied);
  SetAttrRequest touch;
  touch.mtime_ns = 1;
  EXPECT_TRUE((*spoke)->SetAttr(ctx_, "/eu/ok", touch).ok());
}

// POSIX names may hold any byte but NUL and '/'; the fabric's JSON carries UTF-8 only
// (wire.h: DumpJson). Such names must list, read, write and rename exactly, and not crash
// either side.
TEST_P(FabricTest, NamesThatAreNotUtf8CrossExactly) {
  const std::string latin1 = "/data/caf\xe9.jpg";
  const std::string raw = std::string("/data/\xff\xfe", 8);
  const std::string data = RandomBytes(50'000, 31);
  ASSERT_TRUE(Put(hub_.volume(), latin1, data).ok());
  auto spoke = OpenSpoke(hub_, {"/data"});
  ASSERT_TRUE(spoke.ok());
  auto listed = (*spoke)->ReadDir(ctx_, "/data", {});
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->entries.size(), 1u);
  EXPECT_EQ(listed->entries[0].name, "caf\xe9.jpg");
  EXPECT_EQ(*Get(**spoke, latin1), data);
  ASSERT_TRUE(Put(**spoke, raw, "written at the spoke").ok());
  EXPECT_EQ(*Get(hub_.volume(), raw), "written at the spoke");
  ASSERT_TRUE((*spoke)->Rename(ctx_, raw, "/data/renamed").ok());
  EXPECT_EQ(*Get(hub_.volume(), "/data/renamed"), "written at the spoke");
  EXPECT_EQ((*spoke)->Stat(ctx_, raw).status().code(), StatusCode::kNotFound);
}

TEST_P(FabricTest, ResidentDirectoriesNeverReachOtherSites) {
  ASSERT_TRUE(hub_.volume().Mkdir(ctx_, "/data/eu").ok());
  const std::string secret = RandomBytes(100'000, 9);
  ASSERT_TRUE(Put(hub_.volume(), "/data/eu/scan.dcm", secret).ok());
  ASSERT_TRUE(Put(hub_.volume(), "/data/open.txt", "public").ok());
  SetAttrRequest resident;
  resident.attributes = Attributes{{kResidencyAttribute, "eu"}};
  ASSERT_TRUE(hub_.volume().SetAttr(ctx_, "/data/eu", resident).ok());

  PortalVolumeOptions us;
  us.site = "us-west";
  us.tags = {"us", "gpu"};
  auto spoke = OpenSpoke(hub_, {"/data"}, nullptr, us);
  ASSERT_TRUE(spoke.ok()) << spoke.status().ToString();
  Status denied = (*spoke)->Stat(ctx_, "/data/eu/scan.dcm").status();
  EXPECT_EQ(denied.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(denied.message().find("resident to sites tagged 'eu'"), std::string::npos);
  EXPECT_EQ((*spoke)->Stat(ctx_, "/data/eu").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ((*spoke)->ReadDir(ctx_, "/data/eu").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(Put(**spoke, "/data/eu/new", "x").status().code(), StatusCode::kPermissionDenied);
  auto listing = (*spoke)->ReadDir(ctx_, "/data");
  ASSERT_TRUE(listing.ok());
  ASSERT_EQ(listing->entries.size(), 1u);  // not even the name
  EXPECT_EQ(listing->entries[0].name, "open.txt");
  EXPECT_EQ((*spoke)->Stats().chunks_fetched, 0u);
  // A snapshot of the resident directory is just as resident.
  ASSERT_TRUE(hub_.volume().CreateSnapshot(ctx_, "eu1", "/data/eu").ok());
  EXPECT_EQ((*spoke)->Stat(ctx_, "/.weft/snapshots/eu1/scan.dcm").status().code(),
            StatusCode::kPermissionDenied);
  // Extending the resident directory itself is refused at attach.
  EXPECT_EQ(OpenSpoke(hub_, {"/data/eu"}, nullptr, us).status().code(),
            StatusCode::kPermissionDenied);
  // Nor does a hand-made `dir` call get it: the resident directory is withheld from the
  // answer, and the file to send along must be a name in the directory, not a path below.
  auto client = RawClient(hub_, "us-west", {"us"}, {"/data"});
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  std::string frames;
  auto answer =
      (*client)->Call("dir", {{"path", "/data"}, {"chunks_max_bytes", 1 << 20}}, nullptr, &frames);
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  EXPECT_TRUE(answer->value("withheld", false));
  EXPECT_EQ(answer->at("entries").size(), 1u);
  EXPECT_EQ(answer->dump().find("scan.dcm"), std::string::npos);
  for (const char* read : {"eu/scan.dcm", "../data/eu/scan.dcm", ""}) {
    auto sneak = (*client)->Call("dir",
                                 {{"path", "/data"},
                                  {"read", read},
                                  {"inline_bytes", 1 << 20},
                                  {"have", {std::string(64, '0')}}},
                                 nullptr, &frames);
    EXPECT_EQ(sneak.status().code(), StatusCode::kInvalidArgument) << read;
  }
  EXPECT_EQ(frames.find(secret.substr(0, 64)), std::string::npos);

  PortalVolumeOptions eu;
  eu.site = "eu-central";
  eu.tags = {"eu"};
  auto eu_spoke = OpenSpoke(hub_, {"/data"}, nullptr, eu);
  ASSERT_TRUE(eu_spoke.ok());
  EXPECT_EQ(*Get(**eu_spoke, "/data/eu/scan.dcm"), secret);
  EXPECT_EQ(*Get(**eu_spoke, "/.weft/snapshots/eu1/scan.dcm"), secret);
  EXPECT_EQ((*eu_spoke)->ReadDir(ctx_, "/data")->entries.size(), 2u);
}

TEST_P(FabricTest, ARestartedHubWaitsOutOldLeasesAndSpokesAttachAgain) {
  Hub hub(milliseconds(800), GetParam());
  ASSERT_TRUE(hub.volume().Mkdir(ctx_, "/data").ok());
  ASSERT_TRUE(Put(hub.volume(), "/data/x", "one").ok());
  auto spoke = OpenSpoke(hub, {"/data"});
  ASSERT_TRUE(spoke.ok());
  EXPECT_EQ(*Get(**spoke, "/data/x"), "one");
  const std::string first_id = (*spoke)->hub().spoke_id();
  hub.Restart();
  // The new hub does not know the spoke's lease; its first write waits until it must be over.
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(Put(hub.volume(), "/data/x", "two").ok());
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(600));
  EXPECT_EQ(*Get(**spoke, "/data/x"), "two");
  // The spoke attached again under a new id, transparently, and is coherent again.
  EXPECT_NE((*spoke)->hub().spoke_id(), first_id);
  ASSERT_TRUE(Put(hub.volume(), "/data/x", "three").ok());
  EXPECT_EQ(*Get(**spoke, "/data/x"), "three");
}

TEST_P(FabricTest, HubAndSpokeTalkTlsWhenTheUrlIsHttps) {
  if (GetParam() != Transport::kHttp) GTEST_SKIP() << "TLS belongs to the socket transport";
  net::testtls::TempDir dir;
  Hub hub(milliseconds(2000), Transport::kHttp,
          net::testtls::WriteCaSignedCert(dir.path(), "IP:127.0.0.1"));
  ASSERT_EQ(hub.url().substr(0, 8), "https://");
  ASSERT_TRUE(hub.volume().Mkdir(ctx_, "/data").ok());
  const std::string data = RandomBytes(300'000, 14);
  ASSERT_TRUE(Put(hub.volume(), "/data/x", data).ok());
  auto spoke = OpenSpoke(hub, {"/data"}, nullptr, {}, kRootKey, kRootSecret,
                         dir.path() + "/ca.pem");  // WriteCaSignedCert writes it there
  ASSERT_TRUE(spoke.ok()) << spoke.status().ToString();
  EXPECT_EQ(*Get(**spoke, "/data/x"), data);
  ASSERT_TRUE(Put(**spoke, "/data/y", data).ok());
  EXPECT_EQ(*Get(hub.volume(), "/data/y"), data);
  // A spoke that does not trust the hub's CA does not attach.
  auto untrusting = OpenSpoke(hub, {"/data"});
  ASSERT_FALSE(untrusting.ok());
  EXPECT_NE(untrusting.status().message().find("certificate"), std::string::npos)
      << untrusting.status().ToString();
}

TEST_P(FabricTest, ABusyHubAnswersPollsAtOnceAndSpokesStillAcknowledge) {
  HubServiceOptions no_waiting;
  no_waiting.max_waiting_polls = 0;  // as if every worker were taken by other spokes' polls
  Hub hub(milliseconds(3000), GetParam(), {}, no_waiting);
  ASSERT_TRUE(hub.volume().Mkdir(ctx_, "/data").ok());
  ASSERT_TRUE(Put(hub.volume(), "/data/x", "one").ok());
  auto spoke = OpenSpoke(hub, {"/data"});
  ASSERT_TRUE(spoke.ok());
  EXPECT_EQ(*Get(**spoke, "/data/x"), "one");
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(Put(hub.volume(), "/data/x", "two").ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));  // acked, not expired
  EXPECT_EQ(hub.leases().expired_waits(), 0u);
  EXPECT_EQ(*Get(**spoke, "/data/x"), "two");
}

TEST_P(FabricTest, StaleOkServesExpiredMetadataWhenTheHubIsGoneAndSaysSo) {
  Hub hub(milliseconds(500), GetParam());
  ASSERT_TRUE(hub.volume().Mkdir(ctx_, "/data").ok());
  const std::string data = RandomBytes(200'000, 11);
  ASSERT_TRUE(Put(hub.volume(), "/data/x", data).ok());
  PortalVolumeOptions stale_ok;
  stale_ok.stale_ok = true;
  auto tolerant = OpenSpoke(hub, {"/data"}, nullptr, stale_ok);
  auto strict = OpenSpoke(hub, {"/data"});
  ASSERT_TRUE(tolerant.ok() && strict.ok());
  EXPECT_EQ(*Get(**tolerant, "/data/x"), data);
  EXPECT_EQ(*Get(**strict, "/data/x"), data);
  EXPECT_FALSE((*tolerant)->Stat(ctx_, "/data/x")->stale);

  hub.Stop();
  std::this_thread::sleep_for(milliseconds(600));  // the leases run out
  auto info = (*tolerant)->Stat(ctx_, "/data/x");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_TRUE(info->stale);
  EXPECT_EQ(*Get(**tolerant, "/data/x"), data);  // its chunks are here
  EXPECT_GE((*tolerant)->Stats().stale_answers, 1u);
  // What it never saw it cannot make up.
  EXPECT_EQ((*tolerant)->Stat(ctx_, "/data/never-seen").status().code(), StatusCode::kUnavailable);
  // Without --stale-ok: a clear error naming the hub.
  Status gone = (*strict)->Stat(ctx_, "/data/x").status();
  EXPECT_EQ(gone.code(), StatusCode::kUnavailable);
  EXPECT_NE(gone.message().find("unreachable"), std::string::npos);
}

// --- NeuralCache in the spoke ---

class NeuralCacheTest : public FabricTest {
 protected:
  // `files` files of about 50 KB under /data/train/c{0,1}/ at the hub; their paths.
  std::vector<std::string> MakeDataset(int files) {
    std::vector<std::string> paths;
    WriteOptions parents;
    parents.create_parents = true;
    for (int i = 0; i < files; ++i) {
      std::string path = "/data/train/c" + std::to_string(i % 2) + "/f" + std::to_string(i);
      std::string data = RandomBytes(40'000 + 500 * i, 100 + i);
      EXPECT_TRUE(Put(hub_.volume(), path, data, parents).ok());
      contents_[path] = data;
      paths.push_back(path);
    }
    return paths;
  }

  Result<std::unique_ptr<PortalVolume>> OpenCachingSpoke(std::string policy,
                                                         std::vector<std::string> experts,
                                                         uint64_t cache_bytes,
                                                         std::shared_ptr<ChunkStore> store = {}) {
    PortalVolumeOptions options;
    options.cache_bytes = cache_bytes;
    NeuralCacheOptions neural;
    neural.policy = std::move(policy);
    neural.experts = std::move(experts);
    options.neural_cache = neural;
    return OpenSpoke(hub_, {"/data"}, std::move(store), options);
  }

  // Waits (up to 10 s) until the spoke issued prefetches of at least `bytes` and all landed.
  static uint64_t WaitForPrefetched(NeuralCache& neural, uint64_t bytes) {
    uint64_t got = 0;
    for (int i = 0; i < 1000; ++i) {
      const auto prefetch = neural.StatsJson()["prefetch"];
      got = prefetch["bytes_prefetched"].get<uint64_t>();
      if (got >= bytes && prefetch["in_flight_bytes"].get<uint64_t>() == 0) break;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return got;
  }

  std::map<std::string, std::string> contents_;
};

TEST_P(NeuralCacheTest, HintedFilesArriveBeforeTheyAreReadAndReadsMoveNothing) {
  std::vector<std::string> paths = MakeDataset(30);
  auto spoke = OpenCachingSpoke("neural", {"hints"}, 64 << 20);
  ASSERT_TRUE(spoke.ok()) << spoke.status().ToString();
  NeuralCache* neural = (*spoke)->neural_cache();
  ASSERT_NE(neural, nullptr);

  std::vector<std::string> order(paths.rbegin(), paths.rbegin() + 20);
  HintRequest hint;
  hint.job = "job-1";
  hint.dataset = "/data/train";
  hint.paths = order;
  hint.paths.push_back("/data/train/c0/missing");
  auto declared = neural->Hint(hint);
  ASSERT_TRUE(declared.ok()) << declared.status().ToString();
  EXPECT_EQ(declared->accepted, 20u);  // one item per small file
  EXPECT_EQ(declared->unknown_count, 1u);
  uint64_t bytes = 0;
  for (const std::string& p : order) bytes += contents_[p].size();
  EXPECT_GE(WaitForPrefetched(*neural, bytes), bytes);
  // The cache was cold: they went straight into the policy's free room, not into staging.
  EXPECT_EQ(neural->StatsJson()["items"].get<uint64_t>(), 20u);
  EXPECT_EQ(neural->StatsJson()["prefetch"]["staged_bytes"].get<uint64_t>(), 0u);

  // Reading them now (as the hinted job) moves no chunk: all arrived ahead.
  const uint64_t fetched = (*spoke)->Stats().chunks_fetched;
  RequestContext job;
  job.principal = "job-1";
  for (const std::string& p : order) {
    auto reader = (*spoke)->OpenReader(job, p);
    ASSERT_TRUE(reader.ok());
    EXPECT_EQ(*(*reader)->ReadAt(0, (*reader)->info().size), contents_[p]) << p;
  }
  EXPECT_EQ((*spoke)->Stats().chunks_fetched, fetched);
  const auto stats = neural->StatsJson();
  EXPECT_EQ(stats["reads"].get<uint64_t>(), 20u);
  EXPECT_EQ(stats["hits"].get<uint64_t>(), 20u);
  EXPECT_EQ(stats["prefetch"]["experts"][0]["name"], "hints");
  EXPECT_EQ(stats["prefetch"]["useful"].get<uint64_t>(), 20u);
  EXPECT_NE(neural->MetricsText().find("weft_cache_hits_total 20"), std::string::npos);

  // Bad hints change nothing and say why.
  HintRequest outside = hint;
  outside.paths = {"/data/other"};
  EXPECT_EQ(neural->Hint(outside).status().code(), StatusCode::kInvalidArgument);
  HintRequest bad_rank = hint;
  bad_rank.paths.clear();
  bad_rank.rank = 2;
  bad_rank.world_size = 2;
  EXPECT_EQ(neural->Hint(bad_rank).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(NeuralCacheTest, PrefetchesNobodyReadsLeaveStaging) {
  std::vector<std::string> paths = MakeDataset(20);
  PortalVolumeOptions options;
  options.cache_bytes = 1 << 20;  // the policy keeps 733,950 bytes, staging 157,275
  NeuralCacheOptions neural;
  neural.experts = {"hints"};
  neural.staged_ttl = milliseconds(200);
  options.neural_cache = neural;
  auto spoke = OpenSpoke(hub_, {"/data"}, nullptr, options);
  ASSERT_TRUE(spoke.ok()) << spoke.status().ToString();
  // Another job's reads fill the policy's room (files 0-15: 700,000 bytes), so prefetches
  // land in staging.
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(*Get(**spoke, paths[i]), contents_[paths[i]]);
  HintRequest hint;
  hint.job = "job-2";
  hint.dataset = "/data/train";
  hint.paths.assign(paths.begin() + 16, paths.end());
  ASSERT_TRUE((*spoke)->neural_cache()->Hint(hint).ok());
  nlohmann::json prefetch;
  for (int i = 0; i < 500; ++i) {
    prefetch = (*spoke)->neural_cache()->StatsJson()["prefetch"];
    if (prefetch["staged_bytes"].get<uint64_t>() > 0) break;
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_GT(prefetch["staged_bytes"].get<uint64_t>(), 0u) << prefetch.dump();
  // While nobody reads (a pause between epochs) staged items do not age.
  std::this_thread::sleep_for(milliseconds(600));
  prefetch = (*spoke)->neural_cache()->StatsJson()["prefetch"];
  EXPECT_EQ(prefetch["staging_drops"].get<uint64_t>(), 0u) << prefetch.dump();
  // Never read while the other job reads on: after the TTL they are dropped as waste, so
  // their room is free again (the still-declared order may fetch them again, until its job
  // counts as idle).
  for (int i = 0; i < 500; ++i) {
    EXPECT_EQ(*Get(**spoke, paths[i % 16]), contents_[paths[i % 16]]);
    prefetch = (*spoke)->neural_cache()->StatsJson()["prefetch"];
    if (prefetch["staging_drops"].get<uint64_t>() >= hint.paths.size()) break;
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_GE(prefetch["staging_drops"].get<uint64_t>(), hint.paths.size()) << prefetch.dump();
  EXPECT_GT(prefetch["bytes_wasted"].get<uint64_t>(), 0u);
  EXPECT_LE(prefetch["staged_bytes"].get<uint64_t>(), prefetch["staging_bytes"].get<uint64_t>());
}

TEST_P(NeuralCacheTest, SeedHintsSplitTheDatasetByRankInTheDocumentedOrder) {
  std::vector<std::string> paths = MakeDataset(10);
  auto spoke = OpenCachingSpoke("neural", {"hints"}, 64 << 20);
  ASSERT_TRUE(spoke.ok()) << spoke.status().ToString();
  HintRequest hint;
  hint.dataset = "/data/train";
  hint.seed = 7;
  hint.epoch = 1;
  hint.rank = 1;
  hint.world_size = 3;
  auto declared = (*spoke)->neural_cache()->Hint(hint);
  ASSERT_TRUE(declared.ok()) << declared.status().ToString();
  EXPECT_EQ(declared->accepted, 3u);  // ranks take 4, 3 and 3 of 10
  // The order is a permutation, fixed by the seed.
  std::vector<uint64_t> order = PermutationOrder(10, 8);
  std::vector<uint64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (uint64_t i = 0; i < 10; ++i) EXPECT_EQ(sorted[i], i);
  EXPECT_EQ(order, PermutationOrder(10, 8));
  EXPECT_NE(order, PermutationOrder(10, 9));
}

// A declared order brings back, in batched lookups, the metadata of files the spoke holds
// whose leases lapsed (a pause between epochs), so the reads that follow ask the hub nothing;
// also without prefetching. The spoke's clock jumps past the leases instead of sleeping.
TEST_P(NeuralCacheTest, AHintRevalidatesLapsedMetadataWithoutPrefetching) {
  std::vector<std::string> paths = MakeDataset(30);
  FakeClock clock;
  PortalVolumeOptions options;
  options.cache_bytes = 64 << 20;
  options.clock = &clock;
  NeuralCacheOptions neural;
  neural.policy = "epoch";
  neural.experts = {"none"};
  options.neural_cache = neural;
  auto spoke = OpenSpoke(hub_, {"/data"}, nullptr, options);
  ASSERT_TRUE(spoke.ok()) << spoke.status().ToString();
  for (const std::string& p : paths) ASSERT_EQ(*Get(**spoke, p), contents_[p]);
  clock.AdvanceNanos(int64_t{10'000'000'000});  // every lease (2 s) lapsed
  const uint64_t before = (*spoke)->Stats().metadata_misses;
  HintRequest hint;
  hint.dataset = "/data/train";
  hint.paths = paths;
  ASSERT_TRUE((*spoke)->neural_cache()->Hint(hint).ok());
  for (int i = 0; i < 500 && (*spoke)->Stats().metadata_misses < before + paths.size(); ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  const uint64_t revalidated = (*spoke)->Stats().metadata_misses;
  EXPECT_EQ(revalidated, before + paths.size());  // asked in one batch
  for (const std::string& p : paths) EXPECT_EQ(*Get(**spoke, p), contents_[p]);
  EXPECT_EQ((*spoke)->Stats().metadata_misses, revalidated);  // the reads asked nothing
}

TEST_P(NeuralCacheTest, ThePolicyDecidesWhatStaysAndItsChunksStayWithinTheLimit) {
  std::vector<std::string> paths = MakeDataset(40);  // about 2 MB
  auto store = std::shared_ptr<ChunkStore>(NewMemChunkStore());
  auto spoke = OpenCachingSpoke("epoch", {"none"}, 1 << 20, store);
  ASSERT_TRUE(spoke.ok()) << spoke.status().ToString();
  NeuralCache* neural = (*spoke)->neural_cache();
  // Two shuffled epochs: epoch-aware eviction keeps what it admitted first and bypasses the
  // rest, so the second epoch hits about as many files as fit (LRU would hit almost none).
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<uint64_t> order = PermutationOrder(paths.size(), epoch);
    for (uint64_t i : order) {
      EXPECT_EQ(*Get(**spoke, paths[i]), contents_[paths[i]]);
    }
  }
  const auto stats = neural->StatsJson();
  EXPECT_TRUE(stats["prefetch"].is_null());
  // Without prefetching, hints still reach the policy: they are accepted, not refused.
  HintRequest hint;
  hint.dataset = "/data/train";
  hint.paths = {paths[0], paths[1]};
  auto declared = neural->Hint(hint);
  ASSERT_TRUE(declared.ok()) << declared.status().ToString();
  EXPECT_EQ(declared->accepted, 2u);
  EXPECT_LE(stats["used_bytes"].get<uint64_t>(), (1u << 20) / 100 * 80);  // the policy's share
  EXPECT_GE(stats["hits"].get<uint64_t>(), 12u);                          // ~16 files fit in 840 KB
  EXPECT_LE(store->Stats().raw_bytes, 1u << 20);
  // Held chunks were released as items left: the store's LRU could evict down to its limit.
  EXPECT_GT((*spoke)->Stats().evictions, 0u);
}

INSTANTIATE_TEST_SUITE_P(Transports, FabricTest,
                         ::testing::Values(Transport::kHttp, Transport::kInProcess), TransportName);
INSTANTIATE_TEST_SUITE_P(Transports, NeuralCacheTest,
                         ::testing::Values(Transport::kHttp, Transport::kInProcess), TransportName);

}  // namespace
}  // namespace weft::fabric
