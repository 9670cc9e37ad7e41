#include "cli/demo.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <vector>

#include "auth/sigv4.h"
#include "base/bytes.h"
#include "fabric/neural_cache.h"
#include "net/http_client.h"
#include "vfs/local_volume.h"

extern char** environ;

namespace weft::cli {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// A child `weft` process whose output is collected line by line.
class Child {
 public:
  static Result<std::unique_ptr<Child>> Start(const std::string& name,
                                              const std::vector<std::string>& args,
                                              const std::vector<std::string>& env,
                                              const std::string& log_path) {
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) return Internal("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
    std::vector<std::string> argv_s = {"weft"};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_s;
    for (char** e = environ; *e != nullptr; ++e) env_s.emplace_back(*e);
    env_s.insert(env_s.end(), env.begin(), env.end());
    std::vector<char*> envp;
    for (std::string& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    auto child = std::unique_ptr<Child>(new Child(name));
    int rc =
        posix_spawn(&child->pid_, "/proc/self/exe", &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    close(pipe_fds[1]);
    if (rc != 0) {
      close(pipe_fds[0]);
      return Internal("could not start 'weft " + args[0] + "': " + std::strerror(rc));
    }
    child->log_ = std::fopen(log_path.c_str(), "w");
    child->reader_ = std::thread([c = child.get(), fd = pipe_fds[0]] { c->ReadLoop(fd); });
    return child;
  }

  ~Child() {
    Stop();
    if (reader_.joinable()) reader_.join();
    if (log_ != nullptr) std::fclose(log_);
  }

  // The first line starting with `prefix` (waiting up to `timeout` for it).
  Result<std::string> WaitForLine(const std::string& prefix, std::chrono::seconds timeout) {
    std::unique_lock lock(mu_);
    size_t seen = 0;
    const auto deadline = Clock::now() + timeout;
    while (true) {
      for (; seen < lines_.size(); ++seen) {
        if (lines_[seen].starts_with(prefix)) {
          std::string line = lines_[seen];
          lines_.erase(lines_.begin(), lines_.begin() + seen + 1);
          return line;
        }
      }
      if (closed_) return Internal(name_ + " exited: " + (lines_.empty() ? "" : lines_.back()));
      if (changed_.wait_until(lock, deadline) == std::cv_status::timeout) {
        return Unavailable(name_ + " did not say '" + prefix + "' in time");
      }
    }
  }

  void Signal(int sig) {
    if (pid_ > 0) kill(pid_, sig);
  }

  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 100; ++i) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    pid_ = 0;
  }

 private:
  explicit Child(std::string name) : name_(std::move(name)) {}

  void ReadLoop(int fd) {
    std::string partial;
    char buf[4096];
    while (true) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n <= 0) break;
      if (log_ != nullptr) {
        std::fwrite(buf, 1, n, log_);
        std::fflush(log_);
      }
      partial.append(buf, n);
      std::lock_guard lock(mu_);
      for (size_t nl; (nl = partial.find('\n')) != std::string::npos;) {
        lines_.push_back(partial.substr(0, nl));
        partial.erase(0, nl + 1);
      }
      changed_.notify_all();
    }
    close(fd);
    std::lock_guard lock(mu_);
    closed_ = true;
    changed_.notify_all();
  }

  const std::string name_;
  pid_t pid_ = 0;
  FILE* log_ = nullptr;
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::string> lines_;  // GUARDED_BY(mu_)
  bool closed_ = false;             // GUARDED_BY(mu_)
};

// "... at http://127.0.0.1:1234 ..." -> "http://127.0.0.1:1234".
std::string UrlIn(const std::string& line) {
  size_t at = line.find("http");
  if (at == std::string::npos) return "";
  size_t end = line.find_first_of(" )", at);
  return line.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

std::string RandomHex(std::mt19937_64& rng, size_t chars) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (size_t i = 0; i < chars; ++i) out += kHex[rng() % 16];
  return out;
}

// S3 requests signed with SigV4 (UNSIGNED-PAYLOAD), over one keep-alive connection.
class S3Reader {
 public:
  static Result<std::unique_ptr<S3Reader>> Open(const std::string& url, std::string key,
                                                std::string secret) {
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<net::HttpClient> http, net::HttpClient::Open(url));
    auto r = std::unique_ptr<S3Reader>(new S3Reader);
    r->http_ = std::move(http);
    r->host_ = url.substr(url.find("://") + 3);
    r->key_ = std::move(key);
    r->secret_ = std::move(secret);
    return r;
  }

  // The object's size.
  Result<uint64_t> Get(const std::string& path) {
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char amz_date[32], date[16];
    std::strftime(amz_date, sizeof amz_date, "%Y%m%dT%H%M%SZ", &tm);
    std::strftime(date, sizeof date, "%Y%m%d", &tm);
    sigv4::Request req;
    req.method = "GET";
    req.path = path;
    req.headers = {
        {"host", host_}, {"x-amz-content-sha256", "UNSIGNED-PAYLOAD"}, {"x-amz-date", amz_date}};
    const std::vector<std::string> signed_headers = {"host", "x-amz-content-sha256", "x-amz-date"};
    sigv4::Credential cred{key_, date, "us-east-1", "s3"};
    WEFT_ASSIGN_OR_RETURN(
        std::string signature,
        sigv4::ComputeSignature(req, signed_headers, "UNSIGNED-PAYLOAD", amz_date, cred, secret_));
    std::vector<net::HttpHeader> headers = {
        {"x-amz-content-sha256", "UNSIGNED-PAYLOAD"},
        {"x-amz-date", amz_date},
        {"Authorization",
         "AWS4-HMAC-SHA256 Credential=" + key_ + "/" + cred.Scope() +
             ", SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=" + signature}};
    WEFT_ASSIGN_OR_RETURN(net::HttpResponse resp,
                          http_->Send("GET", sigv4::UriEncodePath(path), headers, ""));
    if (resp.status != 200) {
      return Internal("GET " + path + ": HTTP " + std::to_string(resp.status) + " " +
                      resp.body.substr(0, 200));
    }
    return resp.body.size();
  }

 private:
  std::unique_ptr<net::HttpClient> http_;
  std::string host_, key_, secret_;
};

// The spoke's REST API with a bearer token.
class RestClient {
 public:
  static Result<std::unique_ptr<RestClient>> Open(const std::string& url, const std::string& key,
                                                  const std::string& secret) {
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<net::HttpClient> http, net::HttpClient::Open(url));
    auto r = std::unique_ptr<RestClient>(new RestClient);
    r->http_ = std::move(http);
    WEFT_ASSIGN_OR_RETURN(
        json reply,
        r->Call("POST", "tokens",
                {{"access_key_id", key}, {"secret_access_key", secret}, {"ttl_seconds", 3600}}));
    r->token_ = reply.value("token", "");
    return r;
  }

  Result<json> Call(const std::string& method, const std::string& endpoint,
                    const json& body = nullptr) {
    std::vector<net::HttpHeader> headers = {{"Content-Type", "application/json"}};
    if (!token_.empty()) headers.push_back({"Authorization", "Bearer " + token_});
    WEFT_ASSIGN_OR_RETURN(net::HttpResponse resp,
                          http_->Send(method, "/_weft/api/v1/" + endpoint, headers,
                                      body.is_null() ? "" : body.dump()));
    if (resp.status / 100 != 2) {
      return Internal(method + " " + endpoint + ": HTTP " + std::to_string(resp.status) + " " +
                      resp.body.substr(0, 200));
    }
    json out = json::parse(resp.body, nullptr, false);
    if (out.is_discarded()) return Internal(endpoint + ": malformed JSON");
    return out;
  }

 private:
  std::unique_ptr<net::HttpClient> http_;
  std::string token_;
};

struct Dataset {
  std::vector<std::string> paths;  // S3 paths: /data/train/class_NN/img_NNNNN.jpg
  uint64_t bytes = 0;
};

Result<Dataset> WriteDataset(const std::string& hub_dir, const DemoOptions& o,
                             const RequestContext& ctx) {
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Volume> volume, OpenLocalVolume(hub_dir));
  std::mt19937_64 rng(o.seed);
  // Log-normal with ImageNet's mean and a coefficient of variation near its 136/114.7.
  const double cv = 136.0 / 114.7;
  const double sigma = std::sqrt(std::log(1 + cv * cv));
  const double mu = std::log(o.mean_kb * 1000) - sigma * sigma / 2;
  std::lognormal_distribution<double> size_of(mu, sigma);
  Dataset d;
  std::string data;
  for (uint32_t i = 0; i < o.files; ++i) {
    char name[96];
    std::snprintf(name, sizeof name, "/data/train/class_%02u/img_%05u.jpg", i % o.classes, i);
    const auto size = static_cast<size_t>(std::clamp(size_of(rng), 2e3, 4e6));
    data.resize(size);
    for (size_t j = 0; j < size; j += 8) {  // incompressible, like JPEG
      uint64_t v = rng();
      std::memcpy(data.data() + j, &v, std::min<size_t>(8, size - j));
    }
    WriteOptions opts;
    opts.create_parents = true;
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<FileWriter> w, volume->OpenWriter(ctx, name, opts));
    WEFT_RETURN_IF_ERROR(w->Write(AsBytes(data)));
    WEFT_RETURN_IF_ERROR(w->Commit().status());
    d.paths.push_back(name);
    d.bytes += size;
  }
  return d;
}

// "weft: bytes upstream U, downstream D, ..." -> U + D.
uint64_t WanBytes(const std::string& line) {
  unsigned long long up = 0, down = 0;
  std::sscanf(line.c_str(), "weft: bytes upstream %llu, downstream %llu", &up, &down);
  return up + down;
}

struct EpochResult {
  double seconds = 0;
  double compute_seconds = 0;  // per rank (they step together)
  uint64_t bytes = 0;
  std::vector<double> read_ms;  // each GET
};

// One epoch of a job of `shares.size()` ranks, each read the way a PyTorch DataLoader reads:
// `workers` threads per rank build whole batches (items one after another), at most 2 batches
// ahead per worker (prefetch_factor), while the rank's training loop "computes" on each batch
// in order. The ranks step together, as DDP's all-reduce makes them: no rank starts its next
// step before every rank finished this one. `readers` holds one client per rank and worker.
Result<EpochResult> RunEpoch(const std::vector<std::vector<std::string>>& shares,
                             const DemoOptions& o,
                             std::vector<std::unique_ptr<S3Reader>>& readers) {
  const size_t ranks = shares.size();
  // --batch is the job's (global) batch, split over the ranks, and each step still computes
  // for compute_ms: the job asks the same throughput, in as many steps, whatever the ranks.
  const size_t batch = (o.batch + ranks - 1) / ranks;
  const size_t batches = (shares[0].size() + batch - 1) / batch;  // equal shares
  const auto compute = std::chrono::microseconds(static_cast<int64_t>(o.compute_ms * 1e3));
  struct Rank {
    std::vector<bool> ready;
    size_t consumed = 0;
  };
  std::vector<Rank> rank_state(ranks);
  for (Rank& r : rank_state) r.ready.assign(batches, false);
  std::mutex mu;
  std::condition_variable cv;
  Status failed;
  std::atomic<uint64_t> bytes = 0;
  std::vector<double> read_ms;  // GUARDED_BY(mu)
  const size_t ahead = 2 * o.workers;
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (size_t rank = 0; rank < ranks; ++rank) {
    for (uint32_t w = 0; w < o.workers; ++w) {
      threads.emplace_back([&, rank, w] {
        Rank& me = rank_state[rank];
        const std::vector<std::string>& order = shares[rank];
        std::vector<double> mine;
        for (size_t b = w; b < batches; b += o.workers) {
          {
            std::unique_lock lock(mu);
            cv.wait(lock, [&] { return b < me.consumed + ahead || !failed.ok(); });
            if (!failed.ok()) break;
          }
          for (size_t i = b * batch; i < std::min(order.size(), (b + 1) * batch); ++i) {
            const auto t0 = Clock::now();
            Result<uint64_t> got = readers[rank * o.workers + w]->Get(order[i]);
            mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
            if (!got.ok()) {
              std::lock_guard lock(mu);
              if (failed.ok()) failed = got.status();
              cv.notify_all();
              return;
            }
            bytes += *got;
          }
          std::lock_guard lock(mu);
          me.ready[b] = true;
          cv.notify_all();
        }
        std::lock_guard lock(mu);
        read_ms.insert(read_ms.end(), mine.begin(), mine.end());
      });
    }
  }
  std::barrier step(static_cast<std::ptrdiff_t>(ranks));
  std::vector<std::thread> loops;
  for (size_t rank = 0; rank < ranks; ++rank) {
    loops.emplace_back([&, rank] {
      Rank& me = rank_state[rank];
      for (size_t b = 0; b < batches; ++b) {
        bool ok = true;
        {
          std::unique_lock lock(mu);
          cv.wait(lock, [&] { return me.ready[b] || !failed.ok(); });
          ok = failed.ok();
        }
        if (ok) std::this_thread::sleep_for(compute);
        step.arrive_and_wait();  // every rank arrives every step, even after a failure
        std::lock_guard lock(mu);
        me.consumed = b + 1;
        cv.notify_all();
      }
    });
  }
  for (std::thread& t : loops) t.join();
  for (std::thread& t : threads) t.join();
  WEFT_RETURN_IF_ERROR(failed);
  EpochResult r;
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.compute_seconds = std::chrono::duration<double>(compute).count() * batches;
  r.bytes = bytes;
  r.read_ms = std::move(read_ms);
  return r;
}

// Rank `rank`'s share of `index` as DistributedSampler deals it: padded with the first
// indices to a multiple of the ranks, then every ranks-th from `rank`.
std::vector<std::string> Share(const std::vector<uint64_t>& index, const Dataset& data,
                               uint32_t rank, uint32_t ranks) {
  const size_t total = (index.size() + ranks - 1) / ranks * ranks;
  std::vector<std::string> share;
  for (size_t i = rank; i < total; i += ranks) share.push_back(data.paths[index[i % index.size()]]);
  return share;
}

std::string Mb(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f MB", bytes / 1e6);
  return buf;
}

Status Demo(CommandEnv& env, const DemoOptions& o, const std::string& dir) {
  FILE* out = env.out();
  std::mt19937_64 rng(std::random_device{}());
  const std::string key = "WEFTDEMO" + RandomHex(rng, 12);
  const std::string secret = RandomHex(rng, 40);
  const std::vector<std::string> keys = {
      "WEFT_ROOT_ACCESS_KEY=" + key, "WEFT_ROOT_SECRET_KEY=" + secret, "WEFT_HUB_ACCESS_KEY=" + key,
      "WEFT_HUB_SECRET_KEY=" + secret};

  std::fprintf(out, "weft demo: writing %u image-like files at the hub (%s)...\n", o.files,
               dir.c_str());
  std::fflush(out);
  WEFT_ASSIGN_OR_RETURN(Dataset data, WriteDataset(dir + "/hub", o, env.ctx()));
  uint64_t cache_bytes = data.bytes / 10 * 6;
  if (!o.cache_size.empty()) {
    std::optional<uint64_t> parsed = ParseByteSize(o.cache_size);
    if (!parsed || *parsed == 0) return InvalidArgument("--cache-size: '" + o.cache_size + "'");
    cache_bytes = *parsed;
  }

  WEFT_ASSIGN_OR_RETURN(auto hub, Child::Start("hub",
                                               {"serve", "--data", dir + "/hub", "--listen",
                                                "127.0.0.1:0", "--lease-ms", "60000"},
                                               keys, dir + "/hub.log"));
  WEFT_ASSIGN_OR_RETURN(std::string hub_line,
                        hub->WaitForLine("weft: serving S3 at", std::chrono::seconds(30)));
  const std::string hub_url = UrlIn(hub_line);
  char delay[32], rate[32], rtt[32];
  std::snprintf(delay, sizeof delay, "%g", o.delay_ms);
  std::snprintf(rate, sizeof rate, "%g", o.rate_mbit);
  std::snprintf(rtt, sizeof rtt, "%g", 2 * o.delay_ms);
  WEFT_ASSIGN_OR_RETURN(auto wan,
                        Child::Start("WAN emulator",
                                     {"dev", "wan", "--listen", "127.0.0.1:0", "--target",
                                      hub_url.substr(7), "--delay-ms", delay, "--rate-mbit", rate},
                                     {}, dir + "/wan.log"));
  WEFT_ASSIGN_OR_RETURN(std::string wan_line,
                        wan->WaitForLine("weft: WAN link", std::chrono::seconds(30)));
  const std::string wan_addr = wan_line.substr(15, wan_line.find(" ->") - 15);
  std::vector<std::string> spoke_args = {"spoke",
                                         "--hub",
                                         "http://" + wan_addr,
                                         "--cache",
                                         dir + "/spoke",
                                         "--cache-size",
                                         std::to_string(cache_bytes),
                                         "--site",
                                         "gpu-node",
                                         "--portal",
                                         "/data",
                                         "--listen",
                                         "127.0.0.1:0",
                                         "--cache-policy",
                                         o.policy,
                                         "--prefetch",
                                         o.prefetch,
                                         "--wan-mbit",
                                         rate,
                                         "--wan-rtt-ms",
                                         rtt,
                                         "--connections",
                                         "16"};
  WEFT_ASSIGN_OR_RETURN(auto spoke, Child::Start("spoke", spoke_args, keys, dir + "/spoke.log"));
  WEFT_ASSIGN_OR_RETURN(std::string spoke_line,
                        spoke->WaitForLine("weft: spoke", std::chrono::seconds(30)));
  const std::string spoke_url = UrlIn(spoke_line);

  std::fprintf(out,
               "weft demo: hub %s, WAN link %s (%g ms round trip, %g Mbit/s), spoke %s\n"
               "weft demo: %zu files, %s; spoke cache %s (%s policy, prefetch: %s, hints %s)\n"
               "weft demo: %u rank%s stepping together, %u loader workers each; batches of %u "
               "(the job's, split over its ranks), %g ms of compute per step\n\n",
               hub_url.c_str(), wan_addr.c_str(), 2 * o.delay_ms, o.rate_mbit, spoke_url.c_str(),
               data.paths.size(), Mb(data.bytes).c_str(), Mb(cache_bytes).c_str(), o.policy.c_str(),
               o.prefetch.c_str(), o.hints ? "on" : "off", o.ranks, o.ranks == 1 ? "" : "s",
               o.workers, o.batch, o.compute_ms);
  std::fflush(out);

  std::vector<std::unique_ptr<S3Reader>> readers;
  for (uint32_t w = 0; w < o.ranks * o.workers; ++w) {
    WEFT_ASSIGN_OR_RETURN(auto r, S3Reader::Open(spoke_url, key, secret));
    readers.push_back(std::move(r));
  }
  WEFT_ASSIGN_OR_RETURN(auto rest, RestClient::Open(spoke_url, key, secret));
  const bool cache_on = o.policy != "off";

  std::fprintf(out, "%-6s %8s %6s %6s %10s %11s %8s %14s  %s\n", "epoch", "time", "util", "hits",
               "WAN bytes", "prefetched", "wasted", "read mean/p99", "useful prefetches by expert");
  json before = cache_on ? rest->Call("GET", "cache").value_or(json()) : json();
  uint64_t wan_before = 0;
  for (uint32_t epoch = 1; epoch <= o.epochs; ++epoch) {
    std::vector<uint64_t> index = fabric::PermutationOrder(data.paths.size(), o.seed + epoch);
    std::vector<uint64_t> next = fabric::PermutationOrder(data.paths.size(), o.seed + epoch + 1);
    std::vector<std::vector<std::string>> shares;
    for (uint32_t rank = 0; rank < o.ranks; ++rank) {
      shares.push_back(Share(index, data, rank, o.ranks));
      // Each rank declares its own share, and the next epoch's appended, as
      // weft.torch.HintingSampler does: the next epoch's head is fetched while this one ends.
      if (o.hints && cache_on && o.prefetch != "none") {
        auto declare = [&](const std::vector<std::string>& share, bool append) {
          json paths = json::array();
          for (const std::string& p : share) paths.push_back(p);
          return rest
              ->Call("POST", "cache/hints",
                     {{"dataset", "/data"},
                      {"paths", paths},
                      {"rank", rank},
                      {"world_size", o.ranks},
                      {"append", append}})
              .status();
        };
        WEFT_RETURN_IF_ERROR(declare(shares.back(), false));
        if (epoch < o.epochs) {
          WEFT_RETURN_IF_ERROR(declare(Share(next, data, rank, o.ranks), true));
        }
      }
    }
    WEFT_ASSIGN_OR_RETURN(EpochResult r, RunEpoch(shares, o, readers));
    wan->Signal(SIGHUP);
    WEFT_ASSIGN_OR_RETURN(std::string bytes_line,
                          wan->WaitForLine("weft: bytes upstream", std::chrono::seconds(10)));
    const uint64_t wan_now = WanBytes(bytes_line);
    json after = cache_on ? rest->Call("GET", "cache").value_or(json()) : json();
    auto delta = [&](const json& a, const json& b, const char* f) {
      return a.value(f, uint64_t{0}) - b.value(f, uint64_t{0});
    };
    const uint64_t reads = delta(after, before, "reads");
    const uint64_t hits = delta(after, before, "hits");
    std::string experts = "-";
    uint64_t prefetched = 0, wasted = 0;
    if (after.contains("prefetch") && after["prefetch"].is_object()) {
      const json& pa = after["prefetch"];
      const json pb = before.contains("prefetch") && before["prefetch"].is_object()
                          ? before["prefetch"]
                          : json::object();
      prefetched = delta(pa, pb, "bytes_prefetched");
      wasted = delta(pa, pb, "bytes_wasted");
      std::map<std::string, uint64_t> useful_before;
      for (const json& e : pb.value("experts", json::array())) {
        useful_before[e.value("name", "")] = e.value("useful", uint64_t{0});
      }
      experts.clear();
      for (const json& e : pa.value("experts", json::array())) {
        const uint64_t useful = e.value("useful", uint64_t{0}) - useful_before[e.value("name", "")];
        if (useful == 0) continue;
        if (!experts.empty()) experts += ", ";
        experts += e.value("name", "") + " " + std::to_string(useful);
      }
      if (experts.empty()) experts = "-";
    }
    char util[16], hit[16], secs[16], latency[32];
    std::snprintf(secs, sizeof secs, "%.1f s", r.seconds);
    std::sort(r.read_ms.begin(), r.read_ms.end());
    double mean = 0;
    for (double ms : r.read_ms) mean += ms;
    mean /= std::max<size_t>(1, r.read_ms.size());
    const double p99 = r.read_ms.empty() ? 0 : r.read_ms[r.read_ms.size() * 99 / 100];
    std::snprintf(latency, sizeof latency, "%.2f/%.1f ms", mean, p99);
    std::snprintf(util, sizeof util, "%.0f %%", 100 * r.compute_seconds / r.seconds);
    std::snprintf(hit, sizeof hit, "%.0f %%", reads ? 100.0 * hits / reads : 0.0);
    std::fprintf(out, "%-6u %8s %6s %6s %10s %11s %8s %14s  %s\n", epoch, secs, util,
                 cache_on ? hit : "-", Mb(wan_now - wan_before).c_str(), Mb(prefetched).c_str(),
                 Mb(wasted).c_str(), latency, experts.c_str());
    std::fflush(out);
    before = after;
    wan_before = wan_now;
  }
  std::fprintf(
      out,
      "\nutil: compute time / wall time (MLPerf Storage's accelerator utilisation); read:\n"
      "each S3 GET through the spoke, as the loader workers timed it.\n"
      "Try --no-hints, --cache-policy lru --prefetch none, or --cache-size 40M to see\n"
      "what each part of NeuralCache contributes; `weft cache stats` shows a spoke's.\n");
  readers.clear();
  rest.reset();
  spoke->Stop();
  wan->Stop();
  hub->Stop();
  return OkStatus();
}

}  // namespace

int RunDemo(CommandEnv& env, const DemoOptions& o) {
  if (o.files == 0 || o.epochs == 0 || o.batch == 0 || o.workers == 0 || o.classes == 0 ||
      o.ranks == 0) {
    return env.UsageError(
        "demo", "--files, --epochs, --batch, --workers, --ranks and --classes must be > 0");
  }
  if (o.ranks > 64 || o.ranks * o.workers > 256) {
    return env.UsageError("demo", "at most 64 ranks and 256 loader workers in all");
  }
  std::string dir = o.dir;
  std::error_code ec;
  if (dir.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path(ec) / "weft-demo-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      return env.Fail("demo", Internal("cannot create a directory under $TMPDIR"));
    }
    dir = tmpl;
  } else if (std::filesystem::exists(dir, ec)) {
    return env.UsageError("demo", "--dir " + dir + " exists; name a new directory");
  }
  std::filesystem::create_directories(dir, ec);
  Status s = Demo(env, o, dir);
  if (!o.keep) {
    std::filesystem::remove_all(dir, ec);
  } else {
    std::fprintf(env.out(), "weft demo: left %s (logs: hub.log, wan.log, spoke.log)\n",
                 dir.c_str());
  }
  return s.ok() ? kExitOk : env.Fail("demo", s);
}

}  // namespace weft::cli
