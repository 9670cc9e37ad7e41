#include "fabric/neural_cache.h"

#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "cache/cache.h"
#include "cache/prefetch.h"
#include "fabric/lease_table.h"

namespace weft::fabric {

namespace {

uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

using cache::Item;
using cache::Key;
using json = nlohmann::json;

uint64_t Hash64(std::string_view s) {
  return XXH3_64bits(s.data(), s.size());
}

uint32_t BlockCount(uint64_t size) {
  return size == 0 ? 1 : static_cast<uint32_t>((size - 1) / cache::kBlockBytes + 1);
}

// What the spoke knows of the files it has seen read or listed, for the experts. A file id
// names one content version of a path, so a changed file is a new file and its old items die.
class SpokeCatalog final : public cache::Catalog {
 public:
  struct File {
    std::string path;
    std::string version;
    uint64_t size = 0;
    uint64_t dir = 0;
  };

  uint64_t Add(const FileInfo& info) {
    const uint64_t id = Hash64(info.path + '\0' + info.version_id);
    auto [it, added] = files_.try_emplace(id);
    if (!added) return id;  // every read of a known file: nothing to learn
    const std::string parent = ParentDir(info.path);
    const uint64_t dir = Hash64(parent);
    it->second = File{info.path, info.version_id, info.size, dir};
    by_path_[info.path] = id;
    dirs_[dir][info.path.substr(parent.size())] = id;
    return id;
  }

  const File* Find(uint64_t file) const {
    auto it = files_.find(file);
    return it == files_.end() ? nullptr : &it->second;
  }

  std::optional<uint64_t> FindPath(const std::string& path) const {
    auto it = by_path_.find(path);
    if (it == by_path_.end()) return std::nullopt;
    return it->second;
  }

  Item ItemOf(uint64_t file, uint32_t block) const {
    const File& f = files_.at(file);
    Item item;
    item.key = cache::ItemKey(file, block);
    item.file = file;
    item.block = block;
    item.dir = f.dir;
    const uint64_t start = uint64_t{block} * cache::kBlockBytes;
    item.size = f.size <= start ? 0 : std::min<uint64_t>(cache::kBlockBytes, f.size - start);
    return item;
  }

  std::vector<Item> ItemsOfFile(uint64_t file) const override {
    std::vector<Item> items;
    const File* f = Find(file);
    if (f == nullptr) return items;
    for (uint32_t b = 0; b < BlockCount(f->size); ++b) items.push_back(ItemOf(file, b));
    return items;
  }

  std::vector<Item> ItemsInDir(uint64_t dir) const override {
    std::vector<Item> items;
    auto it = dirs_.find(dir);
    if (it == dirs_.end()) return items;
    for (const auto& [name, file] : it->second) {
      for (Item& item : ItemsOfFile(file)) items.push_back(item);
    }
    return items;
  }

 private:
  std::unordered_map<uint64_t, File> files_;
  std::unordered_map<std::string, uint64_t> by_path_;                   // current version of a path
  std::unordered_map<uint64_t, std::map<std::string, uint64_t>> dirs_;  // name order
};

class NeuralCacheImpl final : public NeuralCache {
 public:
  NeuralCacheImpl(NeuralCacheOptions options, DataStore* store,
                  std::unique_ptr<cache::Policy> policy, std::vector<std::string> experts)
      : options_(std::move(options)),
        store_(store),
        cache_(options_.capacity_bytes == 0 ? UINT64_MAX : options_.capacity_bytes,
               std::move(policy)),
        start_(options_.clock->SteadyNow()),
        staging_bytes_(options_.staging_bytes == 0 ? UINT64_MAX : options_.staging_bytes),
        staged_ttl_ns_(
            std::chrono::duration_cast<std::chrono::nanoseconds>(options_.staged_ttl).count()) {
    if (experts.size() == 1 && experts[0] == "none") {
      // No prefetching; one worker still brings declared files' metadata back (Hint).
      workers_.emplace_back([this] { FetchLoop(); });
      return;
    }
    cache::EnsembleOptions e;
    e.link_bytes_per_s = options_.link_bytes_per_s;
    e.rtt_s = options_.rtt_s;
    ensemble_ =
        std::make_unique<cache::Ensemble>(e, &catalog_, cache::MakeExperts(&catalog_, experts));
    planner_ = std::thread([this] { PlanLoop(); });
    for (size_t i = 0; i < std::max<size_t>(1, options_.prefetch_threads); ++i) {
      workers_.emplace_back([this] { FetchLoop(); });
    }
  }

  ~NeuralCacheImpl() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    plan_cv_.notify_all();
    work_cv_.notify_all();
    landed_cv_.notify_all();
    if (planner_.joinable()) planner_.join();
    for (std::thread& t : workers_) t.join();
  }

  bool Prefetching(const std::string& path) override {
    std::lock_guard lock(mu_);
    std::optional<uint64_t> file = catalog_.FindPath(path);
    return file && in_flight_.contains(cache::ItemKey(*file, 0));
  }

  void OnRead(uint32_t job, const FileInfo& info, uint32_t first_block, uint32_t last_block,
              const BlockChunks& chunks_of) override {
    std::vector<std::pair<Key, std::vector<ChunkId>>> to_hold;
    std::vector<ChunkId> to_release;
    {
      std::unique_lock lock(mu_);
      const uint64_t file = catalog_.Add(info);
      for (uint32_t b = first_block; b <= last_block; ++b) {
        cache::Request r;
        r.item = catalog_.ItemOf(file, b);
        r.job = job;
        r.time_ns = NowNs();
        AdvanceReadClock(r.time_ns);
        const Key key = r.item.key;
        // A prefetch of it is on the way: wait for it rather than fetch it twice.
        if (!cache_.Contains(key) && in_flight_.contains(key)) {
          ++late_waits_;
          landed_cv_.wait_for(lock, std::chrono::seconds(30),
                              [&] { return stop_ || !in_flight_.contains(key); });
        }
        // Served here (no WAN) when the policy keeps it or a prefetch staged it. A staged item
        // leaves staging and is offered to the policy like any other read.
        std::optional<std::vector<ChunkId>> staged = Unstage(key);
        const bool hit = cache_.Contains(key) || staged.has_value();
        std::vector<Key> evicted;
        const cache::Outcome outcome = cache_.Read(r, &evicted);
        if (ensemble_) ensemble_->Observe(r, hit);
        ++reads_;
        bytes_read_ += r.item.size;
        if (hit) {
          ++hits_;
          bytes_hit_ += r.item.size;
        }
        if (outcome == cache::Outcome::kAdmitted) {
          if (staged) {
            held_.emplace(key, std::move(*staged));  // already held
          } else {
            to_hold.emplace_back(key, chunks_of(b));
          }
        }
        if (outcome == cache::Outcome::kBypassed) {
          ++bypassed_;
          // Its chunks are about to be read: release them a little later, not now.
          if (staged) recently_read_.push_back(std::move(*staged));
          while (recently_read_.size() > kRecentlyRead) {
            to_release.insert(to_release.end(), recently_read_.front().begin(),
                              recently_read_.front().end());
            recently_read_.pop_front();
          }
        }
        DropLocked(evicted, &to_release);
      }
      wake_ = true;
    }
    plan_cv_.notify_one();
    store_->Release(to_release);
    for (auto& [key, ids] : to_hold) Keep(key, std::move(ids));
  }

  void OnListing(const std::string&, const std::vector<FileInfo>& files) override {
    std::lock_guard lock(mu_);
    for (const FileInfo& f : files) {
      if (f.type == FileType::kFile) catalog_.Add(f);
    }
  }

  Result<HintResult> Hint(const HintRequest& hint) override {
    if (hint.world_size == 0 || hint.rank >= hint.world_size) {
      return InvalidArgument("rank must be below world_size, and world_size at least 1");
    }
    HintResult result;
    std::vector<std::string> order;
    if (!hint.paths.empty()) {
      for (const std::string& p : hint.paths) {
        if (!IsAtOrUnder(p, hint.dataset)) {
          return InvalidArgument("hinted path '" + p.substr(0, 200) + "' is not under dataset '" +
                                 hint.dataset + "'");
        }
      }
      order = hint.paths;
      // Learn every directory the paths name, one listing each.
      std::unordered_set<std::string> dirs;
      for (const std::string& p : order) {
        std::lock_guard lock(mu_);
        if (!catalog_.FindPath(p)) dirs.insert(ParentDir(p));
      }
      ListAll(std::vector<std::string>(dirs.begin(), dirs.end()));
    } else {
      if (hint.sampler != "permutation" && hint.sampler != "sequential") {
        return InvalidArgument("sampler must be 'permutation' or 'sequential', not '" +
                               hint.sampler.substr(0, 40) + "'");
      }
      WEFT_ASSIGN_OR_RETURN(std::vector<std::string> files, ListTree(hint.dataset));
      std::sort(files.begin(), files.end());
      std::vector<uint64_t> index(files.size());
      if (hint.sampler == "permutation") {
        index = PermutationOrder(files.size(), hint.seed + hint.epoch);
      } else {
        for (uint64_t i = 0; i < index.size(); ++i) index[i] = i;
      }
      for (uint64_t i = hint.rank; i < index.size(); i += hint.world_size) {
        order.push_back(files[index[i]]);
      }
    }
    cache::Hint declared;
    declared.job = JobId(hint.job);
    declared.rank = hint.rank;
    declared.world = hint.world_size;
    declared.local = hint.local_world_size;
    declared.replace = !hint.append;
    {
      std::lock_guard lock(mu_);
      for (const std::string& p : order) {
        std::optional<uint64_t> file = catalog_.FindPath(p);
        if (!file) {
          if (result.unknown.size() < 10) result.unknown.push_back(p);
          ++result.unknown_count;
          continue;
        }
        for (const Item& item : catalog_.ItemsOfFile(*file)) declared.next.push_back(item);
      }
      result.accepted = declared.next.size();
      // Eviction uses the declared order even when prefetching is off.
      cache_.policy().OnHint(declared);
      if (ensemble_) ensemble_->AddHint(declared);
      // The declared files the spoke already holds are read without a fetch, but each would
      // still need a lookup if its directory's lease lapsed (an evaluation or a checkpoint
      // between epochs): the fetchers bring their metadata back in batches, prefetching or not.
      for (const std::string& p : order) {
        if (revalidate_.size() >= kMaxRevalidate) break;
        revalidate_.push_back(p);
      }
      wake_ = true;
    }
    plan_cv_.notify_one();
    work_cv_.notify_one();
    return result;
  }

  json StatsJson() const override {
    std::lock_guard lock(mu_);
    json j = {{"policy", cache_.policy().name()},
              {"policy_state", cache_.policy().Describe()},
              {"capacity_bytes", options_.capacity_bytes},
              {"used_bytes", cache_.used_bytes()},
              {"items", cache_.size()},
              {"reads", reads_},
              {"hits", hits_},
              {"hit_ratio", reads_ == 0 ? 0.0 : double(hits_) / double(reads_)},
              {"bytes_read", bytes_read_},
              {"bytes_hit", bytes_hit_},
              {"bypassed", bypassed_},
              {"evictions", evictions_}};
    if (!ensemble_) {
      j["prefetch"] = nullptr;
      return j;
    }
    const cache::EnsembleStats s = ensemble_->Stats();
    json experts = json::array();
    for (const cache::ExpertStats& e : s.experts) {
      experts.push_back({{"name", e.name},
                         {"weight", e.weight},
                         {"precision", e.precision},
                         {"issued", e.issued},
                         {"useful", e.useful},
                         {"shadow", e.shadow},
                         {"shadow_hits", e.shadow_hits},
                         {"retired", e.retired}});
    }
    j["prefetch"] = {{"budget_bytes", s.budget_bytes},
                     {"in_flight_bytes", s.in_flight_bytes},
                     {"bytes_prefetched", s.bytes_prefetched},
                     {"bytes_wasted", s.bytes_wasted},
                     {"useful", s.prefetches_useful},
                     // Reads that waited for their prefetch to land (the ensemble observes
                     // them after the wait, so its own count stays 0 here).
                     {"late", late_waits_},
                     {"failed", prefetch_failures_},
                     {"hints_override", s.hints_override},
                     {"staging_bytes", staging_bytes_ == UINT64_MAX ? 0 : staging_bytes_},
                     {"staged_bytes", staged_bytes_},
                     {"staging_drops", staging_drops_},
                     {"experts", std::move(experts)}};
    return j;
  }

  std::string MetricsText() const override {
    const json s = StatsJson();
    std::string out;
    auto line = [&](const std::string& name, const std::string& type, const json& value,
                    const std::string& help) {
      out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
      out += name + " " + value.dump() + "\n";
    };
    line("weft_cache_reads_total", "counter", s["reads"], "Item reads seen by NeuralCache.");
    line("weft_cache_hits_total", "counter", s["hits"], "Item reads found in the cache.");
    line("weft_cache_read_bytes_total", "counter", s["bytes_read"], "Bytes of items read.");
    line("weft_cache_hit_bytes_total", "counter", s["bytes_hit"],
         "Bytes of items read from cache.");
    line("weft_cache_used_bytes", "gauge", s["used_bytes"], "Bytes of items the policy keeps.");
    line("weft_cache_evictions_total", "counter", s["evictions"], "Items the policy evicted.");
    if (s["prefetch"].is_null()) return out;
    const json& p = s["prefetch"];
    line("weft_cache_prefetched_bytes_total", "counter", p["bytes_prefetched"],
         "Bytes fetched ahead of reads.");
    line("weft_cache_prefetch_wasted_bytes_total", "counter", p["bytes_wasted"],
         "Prefetched bytes evicted unread.");
    line("weft_cache_prefetch_budget_bytes", "gauge", p["budget_bytes"],
         "Bytes the prefetcher may have in flight.");
    out += "# HELP weft_cache_expert_weight Weight of each prefetch expert.\n";
    out += "# TYPE weft_cache_expert_weight gauge\n";
    for (const json& e : p["experts"]) {
      out += "weft_cache_expert_weight{expert=\"" + e["name"].get<std::string>() + "\"} " +
             e["weight"].dump() + "\n";
    }
    out += "# HELP weft_cache_expert_precision Recent precision of each prefetch expert.\n";
    out += "# TYPE weft_cache_expert_precision gauge\n";
    for (const json& e : p["experts"]) {
      out += "weft_cache_expert_precision{expert=\"" + e["name"].get<std::string>() + "\"} " +
             e["precision"].dump() + "\n";
    }
    return out;
  }

 private:
  // Staged items age on a clock that runs only while reads come (a gap counts for at most a
  // second): a job pausing between epochs (evaluation, a checkpoint) finds the head of its
  // next epoch still staged, where a wall-clock TTL dropped it as a wrong guess.
  void AdvanceReadClock(int64_t now_ns) {  // REQUIRES(mu_)
    if (last_read_ns_ >= 0)
      read_clock_ns_ += std::min<int64_t>(now_ns - last_read_ns_, kMaxReadGapNs);
    last_read_ns_ = now_ns;
  }

  int64_t NowNs() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(options_.clock->SteadyNow() -
                                                                start_)
        .count();
  }

  // Takes `key` out of staging, returning its held chunk ids; nullopt if not staged.
  std::optional<std::vector<ChunkId>> Unstage(Key key) {
    auto it = staged_.find(key);
    if (it == staged_.end()) return std::nullopt;
    std::vector<ChunkId> ids = std::move(it->second.ids);
    staged_bytes_ -= it->second.bytes;
    staged_order_.erase(it->second.order);
    staged_.erase(it);
    return ids;
  }

  // Items the policy evicted: their chunks may go, and unread prefetches count as waste.
  void DropLocked(const std::vector<Key>& evicted, std::vector<ChunkId>* to_release) {
    for (Key key : evicted) {
      ++evictions_;
      if (ensemble_) ensemble_->Evicted(key);
      auto it = held_.find(key);
      if (it == held_.end()) continue;
      to_release->insert(to_release->end(), it->second.begin(), it->second.end());
      held_.erase(it);
    }
  }

  // Holds an admitted item's chunks, unless it was evicted meanwhile.
  void Keep(Key key, std::vector<ChunkId> ids) {
    store_->Hold(ids);
    {
      std::lock_guard lock(mu_);
      if (cache_.Contains(key) && !held_.contains(key)) {
        held_.emplace(key, std::move(ids));
        return;
      }
    }
    store_->Release(ids);
  }

  // Lists directories a few at a time: each listing is a round trip to the hub, and a first
  // epoch's hint naming ten directories waited 0.4 s for them one by one over a 40 ms link.
  void ListAll(const std::vector<std::string>& dirs) {
    constexpr size_t kAtOnce = 8;
    for (size_t start = 0; start < dirs.size(); start += kAtOnce) {
      const size_t end = std::min(dirs.size(), start + kAtOnce);
      std::vector<std::future<Result<std::vector<FileInfo>>>> listing;
      for (size_t i = start + 1; i < end; ++i) {
        listing.push_back(
            std::async(std::launch::async, [this, &d = dirs[i]] { return store_->List(d); }));
      }
      Result<std::vector<FileInfo>> first = store_->List(dirs[start]);
      if (first.ok()) OnListing(dirs[start], *first);
      for (size_t i = start + 1; i < end; ++i) {
        Result<std::vector<FileInfo>> listed = listing[i - start - 1].get();
        if (listed.ok()) OnListing(dirs[i], *listed);
      }
    }
  }

  Result<std::vector<std::string>> ListTree(const std::string& root) {
    std::vector<std::string> files;
    std::vector<std::string> dirs = {root};
    while (!dirs.empty()) {
      const std::string dir = std::move(dirs.back());
      dirs.pop_back();
      Result<std::vector<FileInfo>> listed_or = store_->List(dir);
      if (!listed_or.ok()) return listed_or.status().WithContext("hint dataset");
      std::vector<FileInfo> listed = std::move(listed_or).value();
      OnListing(dir, listed);
      for (const FileInfo& f : listed) {
        if (f.type == FileType::kDirectory) dirs.push_back(f.path);
        if (f.type == FileType::kFile) files.push_back(f.path);
      }
      if (files.size() > 10'000'000) return InvalidArgument("hint dataset has too many files");
    }
    return files;
  }

  void PlanLoop() {
    std::unique_lock lock(mu_);
    while (!stop_) {
      plan_cv_.wait_for(lock, std::chrono::milliseconds(20), [&] { return stop_ || wake_; });
      wake_ = false;
      if (stop_) break;
      std::vector<ChunkId> expired;
      while (!staged_order_.empty()) {
        const Key oldest = staged_order_.begin()->second;
        if (read_clock_ns_ - staged_.at(oldest).landed_ns < staged_ttl_ns_) break;
        std::optional<std::vector<ChunkId>> dropped = Unstage(oldest);
        expired.insert(expired.end(), dropped->begin(), dropped->end());
        ensemble_->Evicted(oldest);
        ++staging_drops_;
      }
      if (!expired.empty()) {
        lock.unlock();
        store_->Release(expired);
        lock.lock();
        if (stop_) break;
      }
      // Prefetches land in the policy's free room, else in staging: plan no more than both
      // can take.
      const uint64_t room = SaturatingAdd(staging_bytes_, cache_.free_bytes());
      if (staged_bytes_ + in_flight_bytes_ >= room) continue;
      // Plan in batches: a read frees one item's room, and planning for it alone would send
      // one small fetch per read (a round trip and a hub request each) and run Plan per read.
      if (in_flight_bytes_ > 0 && room - staged_bytes_ - in_flight_bytes_ < kMinPlanBytes) {
        continue;
      }
      std::vector<cache::Candidate> plan = ensemble_->Plan(
          NowNs(),
          [&](Key k) {
            return cache_.Contains(k) || in_flight_.contains(k) || staged_.contains(k);
          },
          room - staged_bytes_ - in_flight_bytes_);
      const int64_t planned_ns = NowNs();
      for (const cache::Candidate& c : plan) {
        if (catalog_.Find(c.item.file) == nullptr) {
          ensemble_->Landed(c.item.key, c.item.size, false);
          continue;
        }
        in_flight_.emplace(c.item.key, c);
        in_flight_bytes_ += c.item.size;
        queue_.push_back({c, planned_ns + static_cast<int64_t>(c.eta_s * 1e9)});
      }
      if (!plan.empty()) work_cv_.notify_all();
    }
  }

  // Fetchers take several planned items at once: one batched lookup and a few multi-file
  // fetches move them, so small files go at link rate rather than at round-trip rate.
  void FetchLoop() {
    std::unique_lock lock(mu_);
    while (true) {
      work_cv_.wait(lock, [&] { return stop_ || !queue_.empty() || !revalidate_.empty(); });
      if (stop_) return;
      if (!revalidate_.empty()) {
        const size_t n = std::min(revalidate_.size(), kRevalidateBatch);
        std::vector<std::string> paths(revalidate_.begin(), revalidate_.begin() + n);
        revalidate_.erase(revalidate_.begin(), revalidate_.begin() + n);
        lock.unlock();
        store_->Revalidate(paths);
        lock.lock();
        continue;
      }
      std::vector<cache::Candidate> batch;
      std::vector<DataStore::ItemRef> refs;
      uint64_t bytes = 0;
      const uint64_t limit = BatchBytesDueBy(queue_.front().due_ns);
      while (!queue_.empty() && batch.size() < kBatchItems && bytes < limit) {
        const cache::Candidate c = queue_.front().candidate;
        queue_.pop_front();
        const SpokeCatalog::File& file = *catalog_.Find(c.item.file);
        refs.push_back({file.path, file.version, c.item.block});
        batch.push_back(c);
        bytes += c.item.size;
      }
      fetching_bytes_ += bytes;
      lock.unlock();
      std::vector<Result<std::vector<ChunkId>>> got = store_->FetchAndHold(refs);
      std::vector<ChunkId> to_release;
      lock.lock();
      fetching_bytes_ -= bytes;
      for (size_t i = 0; i < batch.size(); ++i) Landed(batch[i], std::move(got[i]), &to_release);
      wake_ = true;
      landed_cv_.notify_all();
      plan_cv_.notify_one();
      if (!to_release.empty()) {
        lock.unlock();
        store_->Release(to_release);
        lock.lock();
      }
    }
  }

  // A fetcher's batch lands all at once, and with n fetchers busy B bytes take about
  // rtt + n × B / bandwidth. Its first item should land before it is read, so a batch whose
  // head is due soon is small (the start of an epoch's declared order: its first reads waited
  // ~0.25 s behind 4 MiB batches), one due later large (fewer round trips and hub requests).
  // A batch no larger than what the fetchers already move delays none of it, so while reads
  // outrun the link (a first epoch: every head is due at once) batches still grow to fill it.
  uint64_t BatchBytesDueBy(int64_t due_ns) const {
    const double slack_s = static_cast<double>(due_ns - NowNs()) / 1e9 - options_.rtt_s;
    const double fits = options_.link_bytes_per_s * slack_s /
                        static_cast<double>(std::max<size_t>(1, options_.prefetch_threads));
    const uint64_t by_deadline = fits <= 0 ? 0 : static_cast<uint64_t>(fits);
    return std::clamp(std::max(by_deadline, fetching_bytes_), kMinBatchBytes, kBatchBytes);
  }

  void Landed(const cache::Candidate& c, Result<std::vector<ChunkId>> ids,
              std::vector<ChunkId>* to_release) {
    in_flight_.erase(c.item.key);
    in_flight_bytes_ -= c.item.size;
    ensemble_->Landed(c.item.key, c.item.size, ids.ok());
    if (!ids.ok()) {
      ++prefetch_failures_;
      return;
    }
    if (cache_.Contains(c.item.key) || staged_.contains(c.item.key)) {
      // A demand read admitted it meanwhile and holds it.
      to_release->insert(to_release->end(), ids->begin(), ids->end());
      return;
    }
    // While the policy has free room (a cold cache: the first epoch), a prefetch is admitted
    // into it, which evicts nothing; the lead the prefetcher may keep is then the policy's
    // room and staging together, not staging alone.
    cache::Request arrival;
    arrival.item = c.item;
    arrival.job = c.job;
    arrival.time_ns = NowNs();
    if (cache_.InsertIfRoom(arrival)) {
      held_.emplace(c.item.key, std::move(*ids));
      return;
    }
    // Staged, not admitted: the policy's pinned items stay (research/anchors-cache.md §5b:
    // refetching a pinned item only adds WAN bytes). The oldest staged go first.
    staged_order_.emplace(next_stage_, c.item.key);
    staged_.emplace(c.item.key,
                    Staged{std::move(*ids), c.item.size, next_stage_++, read_clock_ns_});
    staged_bytes_ += c.item.size;
    while (staged_bytes_ > staging_bytes_ && !staged_order_.empty()) {
      const Key oldest = staged_order_.begin()->second;
      std::optional<std::vector<ChunkId>> dropped = Unstage(oldest);
      to_release->insert(to_release->end(), dropped->begin(), dropped->end());
      ensemble_->Evicted(oldest);
      ++staging_drops_;
    }
  }

  const NeuralCacheOptions options_;
  DataStore* const store_;

  mutable std::mutex mu_;
  std::condition_variable plan_cv_;                      // wakes the planner (wake_)
  std::condition_variable work_cv_;                      // wakes fetchers (queue_)
  std::condition_variable landed_cv_;                    // a prefetch left in_flight_
  SpokeCatalog catalog_;                                 // GUARDED_BY(mu_)
  cache::Cache cache_;                                   // GUARDED_BY(mu_)
  std::unique_ptr<cache::Ensemble> ensemble_;            // GUARDED_BY(mu_); null: no prefetching
  std::unordered_map<Key, std::vector<ChunkId>> held_;   // GUARDED_BY(mu_): admitted items' chunks
  std::unordered_map<Key, cache::Candidate> in_flight_;  // GUARDED_BY(mu_)
  uint64_t in_flight_bytes_ = 0;                         // GUARDED_BY(mu_)
  uint64_t fetching_bytes_ = 0;  // GUARDED_BY(mu_): of those, taken by a fetcher (not queued)
  // Landed prefetches not read yet, held outside the policy's capacity.
  struct Staged {
    std::vector<ChunkId> ids;
    uint64_t bytes = 0;
    uint64_t order = 0;
    int64_t landed_ns = 0;  // on the read clock
  };
  std::unordered_map<Key, Staged> staged_;  // GUARDED_BY(mu_)
  std::map<uint64_t, Key> staged_order_;    // GUARDED_BY(mu_): oldest first
  uint64_t staged_bytes_ = 0;               // GUARDED_BY(mu_)
  uint64_t next_stage_ = 0;                 // GUARDED_BY(mu_)
  uint64_t staging_drops_ = 0;              // GUARDED_BY(mu_)
  // Chunks of bypassed reads, released a few reads later so their reader still finds them.
  static constexpr size_t kRecentlyRead = 64;
  // One fetcher's batch.
  static constexpr size_t kBatchItems = 64;
  // Paths revalidated per request (the hub's batch limit), and at most this many waiting.
  static constexpr size_t kRevalidateBatch = 1000;
  static constexpr size_t kMaxRevalidate = size_t{1} << 20;
  static constexpr uint64_t kMinPlanBytes = 2 << 20;
  static constexpr uint64_t kBatchBytes = 4 << 20;
  static constexpr uint64_t kMinBatchBytes = 256 << 10;
  std::deque<std::vector<ChunkId>> recently_read_;  // GUARDED_BY(mu_)
  struct Queued {
    cache::Candidate candidate;
    int64_t due_ns = 0;  // when the candidate's read is expected
  };
  std::deque<Queued> queue_;            // GUARDED_BY(mu_)
  std::deque<std::string> revalidate_;  // declared paths whose metadata to bring back (mu_)
  bool wake_ = false;                   // GUARDED_BY(mu_)
  bool stop_ = false;                   // GUARDED_BY(mu_)
  uint64_t reads_ = 0, hits_ = 0, bytes_read_ = 0, bytes_hit_ = 0;  // GUARDED_BY(mu_)
  uint64_t bypassed_ = 0, evictions_ = 0, late_waits_ = 0;          // GUARDED_BY(mu_)
  uint64_t prefetch_failures_ = 0;                                  // GUARDED_BY(mu_)
  const std::chrono::steady_clock::time_point start_;
  const uint64_t staging_bytes_;
  const int64_t staged_ttl_ns_;
  static constexpr int64_t kMaxReadGapNs = 1'000'000'000;
  int64_t read_clock_ns_ = 0;  // GUARDED_BY(mu_): see AdvanceReadClock
  int64_t last_read_ns_ = -1;  // GUARDED_BY(mu_)
  std::thread planner_;
  std::vector<std::thread> workers_;
};

}  // namespace

std::vector<uint64_t> PermutationOrder(uint64_t n, uint64_t seed) {
  std::vector<uint64_t> order(n);
  for (uint64_t i = 0; i < n; ++i) order[i] = i;
  uint64_t state = seed;
  auto next = [&state] {  // SplitMix64
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  for (uint64_t i = n; i > 1; --i) std::swap(order[i - 1], order[next() % i]);
  return order;
}

uint32_t JobId(const std::string& name) {
  return static_cast<uint32_t>(Hash64(name));
}

Result<std::unique_ptr<NeuralCache>> NeuralCache::Create(NeuralCacheOptions options,
                                                         DataStore* store) {
  if (options.policy == "belady") {
    return InvalidArgument("--cache-policy: belady needs the future and runs only in cache-sim");
  }
  std::string error;
  std::unique_ptr<cache::Policy> policy = cache::MakePolicy(
      options.policy, options.capacity_bytes == 0 ? UINT64_MAX : options.capacity_bytes, 1, &error);
  if (!policy) return InvalidArgument("--cache-policy: " + error);
  static const std::vector<std::string> kExperts = {"hints",   "epoch", "readahead",
                                                    "history", "dir",   "peer"};
  std::vector<std::string> experts = options.experts;
  if (!(experts.size() == 1 && experts[0] == "none")) {
    for (const std::string& e : experts) {
      if (std::find(kExperts.begin(), kExperts.end(), e) == kExperts.end()) {
        return InvalidArgument("--prefetch: unknown expert '" + e +
                               "' (experts: hints, epoch, readahead, history, dir, peer; or none)");
      }
    }
  }
  if (options.link_bytes_per_s <= 0 || options.rtt_s < 0) {
    return InvalidArgument("the link's bandwidth must be positive and its round trip not negative");
  }
  return std::unique_ptr<NeuralCache>(
      new NeuralCacheImpl(std::move(options), store, std::move(policy), std::move(experts)));
}

}  // namespace weft::fabric
