// A training job through spokes, in one process: a hub, two spokes at different sites (each on
// an in-process link of its own), and the eight ranks of one job split across them, each
// reading its DistributedSampler share of a dataset epoch after epoch behind NeuralCache hints,
// stepping together as DDP does - while the hub publishes a new version of the dataset between
// epochs and one spoke's link fails in the middle of an epoch. Seeded: the dataset, the orders,
// the versions and the fault repeat; the threads' timing does not. What is checked holds
// whatever the timing: every read returns the bytes of the version current when its epoch
// began, a link cut shorter than the hub timeout fails no read, and a spoke whose cache holds
// the dataset moves each version of a file at most once.
#include <gtest/gtest.h>

#include <barrier>
#include <map>
#include <random>
#include <thread>

#include "fabric/test_hub.h"

namespace weft::fabric {
namespace {

using namespace test_hub;  // NOLINT(build/namespaces): the helpers of test_hub.h

constexpr uint32_t kRanks = 8;
constexpr uint32_t kRanksPerSpoke = 4;
constexpr int kEpochs = 3;
constexpr uint64_t kSeed = 20261207;
const std::string kDataset = "/data/ds";

struct Spoke {
  std::unique_ptr<net::InProcessLink> link;
  std::unique_ptr<PortalVolume> volume;
};

Result<Spoke> OpenSpokeOnItsOwnLink(Hub& hub, const std::string& site, uint64_t cache_bytes) {
  Spoke spoke;
  spoke.link = hub.NewLink();
  HubClientOptions client;
  client.hub_url = "http://in-process";
  client.access_key_id = kRootKey;
  client.secret_access_key = kRootSecret;
  client.hub_timeout = milliseconds(3000);
  net::InProcessLink* link = spoke.link.get();
  client.connect = [link]() -> Result<std::unique_ptr<net::HttpClient>> { return link->Connect(); };
  WEFT_ASSIGN_OR_RETURN(auto hub_client, HubClient::Open(client));
  PortalVolumeOptions options;
  WEFT_ASSIGN_OR_RETURN(Portal portal, ParsePortal("/data"));
  options.portals = {portal};
  options.site = site;
  options.cache_bytes = cache_bytes;
  options.neural_cache = NeuralCacheOptions{};
  options.poll_wait = milliseconds(300);
  WEFT_ASSIGN_OR_RETURN(spoke.volume,
                        PortalVolume::Open(std::move(hub_client), NewMemChunkStore(), options));
  return spoke;
}

Result<std::string> ReadAs(const RequestContext& ctx, Volume& v, const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(auto r, v.OpenReader(ctx, path));
  return r->ReadAt(0, r->info().size);
}

class FabricSimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(hub_.volume().Mkdir(ctx_, kDataset, 0755, true).ok());
    std::uniform_int_distribution<size_t> size(8 << 10, 96 << 10);
    for (int i = 0; i < 160; ++i) Publish(Name(next_name_++), size(rng_));
  }

  static std::string Name(int i) {
    char name[16];
    snprintf(name, sizeof name, "f%04d", i);
    return kDataset + "/" + name;
  }

  void Publish(const std::string& path, size_t size) {
    std::string data = RandomBytes(size, rng_());
    ASSERT_TRUE(Put(hub_.volume(), path, data).ok());
    published_bytes_ += data.size();
    current_[path] = std::move(data);
  }

  // Between epochs: a tenth of the files rewritten, two new, one deleted.
  void NewVersion() {
    std::vector<std::string> paths;
    for (const auto& [path, data] : current_) paths.push_back(path);
    std::shuffle(paths.begin(), paths.end(), rng_);
    for (size_t i = 0; i < paths.size() / 10; ++i) Publish(paths[i], current_[paths[i]].size());
    Publish(Name(next_name_++), 40 << 10);
    Publish(Name(next_name_++), 70 << 10);
    ASSERT_TRUE(hub_.volume().Unlink(ctx_, paths.back()).ok());
    current_.erase(paths.back());
  }

  // Rank `rank`'s share of `epoch`, as DistributedSampler with the "permutation" sampler
  // deals it (docs/neuralcache.md).
  std::vector<std::string> Share(uint32_t rank, int epoch) const {
    std::vector<std::string> files;
    for (const auto& [path, data] : current_) files.push_back(path);  // sorted
    std::vector<uint64_t> order = PermutationOrder(files.size(), kSeed + epoch);
    std::vector<std::string> share;
    for (size_t i = rank; i < order.size(); i += kRanks) share.push_back(files[order[i]]);
    return share;
  }

  RequestContext ctx_;
  Hub hub_{milliseconds(2000), Transport::kInProcess};
  std::mt19937_64 rng_{kSeed};
  std::map<std::string, std::string> current_;
  int next_name_ = 0;
  uint64_t published_bytes_ = 0;  // every version ever published
};

TEST_F(FabricSimTest, EightRanksOnTwoSpokesReadEveryVersionRightThroughALinkFailure) {
  uint64_t dataset_bytes = 0;
  for (const auto& [path, data] : current_) dataset_bytes += data.size();
  // Each spoke can hold the whole dataset and its new versions: nothing needs fetching twice.
  std::vector<Spoke> spokes;
  for (const char* site : {"a", "b"}) {
    auto spoke = OpenSpokeOnItsOwnLink(hub_, site, 3 * dataset_bytes);
    ASSERT_TRUE(spoke.ok()) << spoke.status().ToString();
    spokes.push_back(std::move(*spoke));
  }
  RequestContext trainer;
  trainer.principal = "trainer";

  std::atomic<uint64_t> reads = 0;
  std::mutex failures_mu;
  std::vector<std::string> failures;
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    if (epoch > 0) NewVersion();
    std::barrier step(kRanks);  // DDP: no rank starts its next batch before all finished theirs
    std::vector<std::thread> ranks;
    for (uint32_t rank = 0; rank < kRanks; ++rank) {
      ranks.emplace_back([&, rank] {
        PortalVolume& spoke = *spokes[rank / kRanksPerSpoke].volume;
        HintRequest hint;
        hint.job = "trainer";
        hint.dataset = kDataset;
        hint.seed = kSeed;
        hint.epoch = epoch;
        hint.rank = rank;
        hint.world_size = kRanks;
        Result<HintResult> hinted = spoke.neural_cache()->Hint(hint);
        const std::vector<std::string> share = Share(rank, epoch);
        auto fail = [&](std::string why) {
          std::lock_guard lock(failures_mu);
          failures.push_back(std::move(why));
        };
        if (!hinted.ok() || hinted->accepted != share.size()) {
          fail("rank " + std::to_string(rank) + ": hint " +
               (hinted.ok() ? std::to_string(hinted->accepted) : hinted.status().ToString()));
        }
        // Every rank has the same number of batches (shares differ by at most one file).
        const size_t batches = (current_.size() / kRanks + 3) / 4;
        for (size_t b = 0; b < batches; ++b) {
          for (size_t i = b * 4; i < std::min(share.size(), b * 4 + 4); ++i) {
            Result<std::string> got = ReadAs(trainer, spoke, share[i]);
            ++reads;
            if (!got.ok()) {
              fail(share[i] + ": " + got.status().ToString());
            } else if (*got != current_.at(share[i])) {
              fail(share[i] + ": not the current version (epoch " + std::to_string(epoch) + ")");
            }
          }
          step.arrive_and_wait();
        }
      });
    }
    std::thread fault;
    if (epoch == 1) {  // spoke b's link fails for 0.4 s, in the middle of the epoch
      fault = std::thread([&] {
        std::this_thread::sleep_for(milliseconds(30));
        spokes[1].link->Cut();
        std::this_thread::sleep_for(milliseconds(400));
        spokes[1].link->Join();
      });
    }
    for (std::thread& t : ranks) t.join();
    if (fault.joinable()) fault.join();
  }
  for (const std::string& f : failures) ADD_FAILURE() << f;
  EXPECT_GE(reads.load(), kEpochs * (current_.size() - 2));
  for (const Spoke& s : spokes) {
    const PortalStats stats = s.volume->Stats();
    // Each version moved at most once (a frame header per chunk aside).
    EXPECT_LE(stats.bytes_fetched, published_bytes_ + published_bytes_ / 50)
        << s.volume->neural_cache()->StatsJson().dump();
    EXPECT_GT(stats.chunk_hits + stats.metadata_hits, 0u);
  }
}

}  // namespace
}  // namespace weft::fabric
