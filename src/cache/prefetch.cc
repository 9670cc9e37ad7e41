// The prefetch ensemble: merges the experts' predictions, ranks them by weighted expected
// stall-seconds saved per WAN byte, issues them within a bandwidth-delay budget, and learns
// each expert's weight from how many of its predictions come true (anchors-cache.md §5a).
//
// Scoring. Every prediction an expert makes, issued or not, is remembered (per expert, up to
// kMaxPending keys) until the item is read (a hit) or its deadline passes (a miss). The
// deadline is now + 2·ETA + kMinHorizonS + rtt + lead: an ETA is an expectation, and experts
// whose reads are uniform over a span (epoch, history) give half the span. A deadline passing
// while the prediction's job has read nothing for kMinHorizonS (a pause between epochs, up to
// kPausedAtMostS) moves on by the same horizon instead of counting a miss. Hits and misses
// feed a per-expert window of the last kPrecisionWindow verdicts; precision = hits / verdicts.
//
// Weighting. Hedge over the experts: after every kUpdateEvery new verdicts,
// w_e ← w_e·exp(−η·loss_e) with loss_e = 1 − precision_e (experts with too few verdicts take
// the mean loss, i.e. stay put), then w is normalised to sum 1 and floored at kWeightFloor/n so
// a demoted expert can climb back (fixed share). η follows CACHEUS's idea: every
// kEtaWindow verdicts of issued predictions it compares the issued precision with the previous
// window's; if it improved, η keeps moving the same way (×1.25 or ×0.8), if it fell, η turns
// around; it stays within [η0/8, 8·η0] and returns to η0 after kEtaPatience windows without
// improvement.
//
// Guardrails. An expert with ≥ kMinScored verdicts in its window and precision < retire_below
// is retired: it still proposes, and its predictions are still scored (all as shadow), but
// none are issued; it returns once its precision reaches retire_below + kRetireHysteresis.
// A job for which an expert Overrides() (the hints expert at ≥ 99 % match) is fetched for on
// that expert's word alone.
#include "cache/prefetch.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>

#include "cache/internal/window.h"

namespace weft::cache {
namespace {

constexpr size_t kMaxExperts = 64;        // Plan keeps a bit mask of experts per key
constexpr size_t kMaxPending = 8192;      // remembered predictions per expert
constexpr size_t kMaxIssued = 1 << 16;    // issued items awaiting a read or an eviction
constexpr size_t kPrecisionWindow = 512;  // verdicts per expert
constexpr size_t kMinScored = 64;         // verdicts before an expert can be retired
constexpr size_t kMinForLoss = 16;        // verdicts before an expert's loss counts
constexpr size_t kUpdateEvery = 32;       // new verdicts between Hedge steps
constexpr size_t kEtaWindow = 1024;       // verdicts of issued predictions per η step
constexpr int kEtaPatience = 10;
constexpr double kWeightFloor = 0.01;
// A prediction this sure, due within the lead window, is fetched in deadline order rather
// than by stall saved per byte: all of them are needed, and the nearest first.
constexpr double kDueProbability = 0.5;
constexpr double kRetireHysteresis = 0.05;
constexpr double kMinHorizonS = 2.0;
constexpr double kMaxHorizonS = 3600.0;
// A job idle this long is gone, not pausing: its predictions expire again.
constexpr double kPausedAtMostS = 60.0;

int64_t Ns(double s) {
  return static_cast<int64_t>(s * 1e9);
}

}  // namespace

struct Ensemble::State {
  struct Pending {
    int64_t deadline_ns = 0;
    uint64_t seq = 0;
    bool issued = false;
    uint32_t job = 0;
    int64_t horizon_ns = 0;
  };
  using Expiry = std::tuple<int64_t, uint64_t, Key>;  // deadline, seq, key
  struct ExpertState {
    std::unique_ptr<Expert> expert;
    double weight = 0;
    internal::HitWindow window{kPrecisionWindow};
    bool retired = false;
    uint64_t issued = 0;
    uint64_t useful = 0;
    uint64_t shadow = 0;
    uint64_t shadow_hits = 0;
    std::unordered_map<Key, Pending> pending;
    std::priority_queue<Expiry, std::vector<Expiry>, std::greater<Expiry>> expiry;
  };
  struct Issue {
    int expert = 0;
    int64_t time_ns = 0;
    uint64_t bytes = 0;
    bool landed = false;
    uint64_t seq = 0;
  };

  // A key's proposals merged within one Plan.
  struct Merged {
    Candidate best;
    double wp = 0;
    double best_wp = -1;
    uint64_t experts = 0;  // bit e: expert e proposed it
    bool skip = false;     // cached, in flight or issued
    size_t proposed = 0;   // its first proposal's place among all (experts' order kept)
  };

  EnsembleOptions options;
  const Catalog* catalog = nullptr;
  // Plan's scratch space, kept so each call reuses the allocations.
  std::vector<Candidate> scratch_all;
  std::vector<Candidate> scratch_mine;
  std::unordered_map<Key, Merged> scratch_merged;
  std::vector<ExpertState> experts;
  int64_t now_ns = 0;
  uint64_t seq = 0;

  std::unordered_map<Key, Issue> issued;
  std::deque<std::pair<Key, uint64_t>> issue_order;  // for forgetting the oldest
  std::unordered_map<Key, uint64_t> in_flight;
  uint64_t in_flight_bytes = 0;
  uint64_t bytes_prefetched = 0;
  uint64_t bytes_wasted = 0;
  uint64_t useful = 0;
  uint64_t late = 0;
  bool hints_override = false;

  size_t verdicts_since_update = 0;
  double eta = 0;
  double eta_direction = 1;
  double eta_prev_perf = -1;
  int eta_stale = 0;
  size_t eta_verdicts = 0;
  size_t eta_hits = 0;

  std::unordered_map<uint32_t, int64_t> last_read_ns;  // per job

  uint64_t budget() const {
    return static_cast<uint64_t>(options.link_bytes_per_s * (options.rtt_s + options.lead_s));
  }

  void Verdict(ExpertState& e, const Pending& p, bool hit) {
    e.window.Push(hit);
    if (!p.issued) {
      ++e.shadow;
      e.shadow_hits += hit ? 1 : 0;
    } else {
      ++eta_verdicts;
      eta_hits += hit ? 1 : 0;
    }
    ++verdicts_since_update;
  }

  // Whether `job` has read nothing for a while, but not so long that it is gone.
  bool Paused(uint32_t job) const {
    auto it = last_read_ns.find(job);
    if (it == last_read_ns.end()) return false;
    const int64_t idle = now_ns - it->second;
    return idle >= Ns(kMinHorizonS) && idle < Ns(kPausedAtMostS);
  }

  void Expire() {
    for (ExpertState& e : experts) {
      while (!e.expiry.empty() && std::get<0>(e.expiry.top()) < now_ns) {
        auto [deadline, s, key] = e.expiry.top();
        e.expiry.pop();
        auto it = e.pending.find(key);
        if (it == e.pending.end() || it->second.seq != s) continue;  // already resolved
        // A prediction's clock runs only while its job reads: a job pausing between epochs
        // (evaluation, a checkpoint) has not missed what it said it reads next.
        if (Paused(it->second.job)) {
          it->second.deadline_ns = now_ns + it->second.horizon_ns;
          e.expiry.emplace(it->second.deadline_ns, s, key);
          continue;
        }
        Verdict(e, it->second, false);
        e.pending.erase(it);
      }
      // Resolved entries linger in the heap until their deadline; rebuild if they pile up.
      if (e.expiry.size() > 4 * std::max<size_t>(e.pending.size(), 1024)) {
        decltype(e.expiry) fresh;
        for (const auto& [key, p] : e.pending) fresh.emplace(p.deadline_ns, p.seq, key);
        e.expiry = std::move(fresh);
      }
    }
  }

  void Remember(ExpertState& e, const Candidate& c) {
    if (e.pending.count(c.item.key) != 0 || e.pending.size() >= kMaxPending) return;
    const double horizon = std::min(kMaxHorizonS, 2 * std::max(0.0, c.eta_s) + kMinHorizonS) +
                           options.rtt_s + options.lead_s;
    const Pending p{now_ns + Ns(horizon), ++seq, false, c.job, Ns(horizon)};
    e.pending.emplace(c.item.key, p);
    e.expiry.emplace(p.deadline_ns, p.seq, c.item.key);
  }

  void UpdateWeights() {
    if (verdicts_since_update < kUpdateEvery) return;
    verdicts_since_update = 0;
    AdaptEta();
    const size_t n = experts.size();
    std::vector<double> loss(n, -1);
    double sum = 0;
    size_t scored = 0;
    for (size_t i = 0; i < n; ++i) {
      if (experts[i].window.count() < kMinForLoss) continue;
      loss[i] = 1 - experts[i].window.Rate();
      sum += loss[i];
      ++scored;
    }
    if (scored == 0) return;
    const double mean = sum / static_cast<double>(scored);
    double total = 0;
    for (size_t i = 0; i < n; ++i) {
      experts[i].weight *= std::exp(-eta * (loss[i] < 0 ? mean : loss[i]));
      total += experts[i].weight;
    }
    Normalise(total);
    for (ExpertState& e : experts) {
      if (e.window.count() < kMinScored) continue;
      const double precision = e.window.Rate();
      if (!e.retired && precision < options.retire_below) e.retired = true;
      if (e.retired && precision >= options.retire_below + kRetireHysteresis) e.retired = false;
    }
  }

  void Normalise(double total) {
    const double floor = kWeightFloor / static_cast<double>(experts.size());
    double again = 0;
    for (ExpertState& e : experts) {
      e.weight = total > 0 ? std::max(floor, e.weight / total) : 1.0 / experts.size();
      again += e.weight;
    }
    for (ExpertState& e : experts) e.weight /= again;
  }

  void AdaptEta() {
    if (eta_verdicts < kEtaWindow) return;
    const double perf = static_cast<double>(eta_hits) / static_cast<double>(eta_verdicts);
    eta_verdicts = 0;
    eta_hits = 0;
    if (eta_prev_perf >= 0) {
      if (perf > eta_prev_perf + 1e-3) {
        eta_stale = 0;
      } else {
        if (perf < eta_prev_perf - 1e-3) eta_direction = -eta_direction;
        ++eta_stale;
      }
      if (eta_stale >= kEtaPatience) {
        eta = options.learning_rate;
        eta_stale = 0;
      } else {
        eta *= eta_direction > 0 ? 1.25 : 0.8;
        eta = std::clamp(eta, options.learning_rate / 8, options.learning_rate * 8);
      }
    }
    eta_prev_perf = perf;
  }

  void ForgetOldestIssued() {
    while (issued.size() > kMaxIssued && !issue_order.empty()) {
      auto [key, s] = issue_order.front();
      issue_order.pop_front();
      auto it = issued.find(key);
      if (it == issued.end() || it->second.seq != s) continue;
      bytes_wasted += it->second.bytes;  // forgotten unread
      issued.erase(it);
    }
    // Keys read or evicted leave stale entries; drop them once they dominate.
    if (issue_order.size() > 2 * std::max<size_t>(issued.size(), 1024)) {
      std::deque<std::pair<Key, uint64_t>> live;
      for (const auto& entry : issue_order) {
        auto it = issued.find(entry.first);
        if (it != issued.end() && it->second.seq == entry.second) live.push_back(entry);
      }
      issue_order = std::move(live);
    }
  }
};

Ensemble::Ensemble(EnsembleOptions options, const Catalog* catalog,
                   std::vector<std::unique_ptr<Expert>> experts)
    : state_(std::make_unique<State>()) {
  state_->options = options;
  state_->catalog = catalog;
  state_->eta = options.learning_rate;
  for (auto& expert : experts) {
    if (expert == nullptr || state_->experts.size() == kMaxExperts) continue;
    State::ExpertState e;
    e.expert = std::move(expert);
    state_->experts.push_back(std::move(e));
  }
  for (auto& e : state_->experts) e.weight = 1.0 / static_cast<double>(state_->experts.size());
}

Ensemble::~Ensemble() = default;

void Ensemble::Observe(const Request& read, bool hit) {
  State& s = *state_;
  if (read.prefetch) return;  // an arrival, not a read
  s.now_ns = std::max(s.now_ns, read.time_ns);
  s.last_read_ns[read.job] = s.now_ns;
  s.Expire();
  const Key key = read.item.key;
  for (auto& e : s.experts) {
    auto it = e.pending.find(key);
    if (it == e.pending.end()) continue;
    s.Verdict(e, it->second, true);
    e.pending.erase(it);
  }
  auto it = s.issued.find(key);
  if (it != s.issued.end()) {
    ++s.useful;
    ++s.experts[it->second.expert].useful;
    if (!it->second.landed) ++s.late;
    s.issued.erase(it);
  }
  for (auto& e : s.experts) e.expert->Observe(read, hit);
}

void Ensemble::AddHint(const Hint& hint) {
  for (auto& e : state_->experts) e.expert->OnHint(hint);
}

std::vector<Candidate> Ensemble::Plan(int64_t now_ns, const std::function<bool(Key)>& cached,
                                      uint64_t max_bytes) {
  State& s = *state_;
  s.now_ns = std::max(s.now_ns, now_ns);
  s.Expire();
  s.UpdateWeights();

  // Gather every expert's proposals; remember them all for scoring, retired or not.
  std::vector<Candidate>& all = s.scratch_all;
  std::vector<Candidate>& mine = s.scratch_mine;
  all.clear();
  for (size_t i = 0; i < s.experts.size(); ++i) {
    mine.clear();
    s.experts[i].expert->Propose(s.now_ns, s.options.proposals_per_expert, &mine);
    if (mine.size() > s.options.proposals_per_expert) mine.resize(s.options.proposals_per_expert);
    for (Candidate& c : mine) {
      c.expert = static_cast<int>(i);
      s.Remember(s.experts[i], c);
      all.push_back(c);
    }
  }

  // Jobs whose hint stream overrides everyone else: a mask of the experts that override each.
  std::map<uint32_t, uint64_t> overrides;
  for (const Candidate& c : all) {
    if (overrides.count(c.job) != 0) continue;
    uint64_t by = 0;
    for (size_t i = 0; i < s.experts.size(); ++i) {
      if (!s.experts[i].retired && s.experts[i].expert->Overrides(c.job)) by |= uint64_t{1} << i;
    }
    overrides[c.job] = by;
  }
  s.hints_override = false;
  for (const auto& [job, by] : overrides) s.hints_override = s.hints_override || by != 0;

  // Merge by key: Σ w·p, the earliest ETA, the heaviest contributor for attribution.
  auto& merged = s.scratch_merged;
  merged.clear();
  for (size_t i = 0; i < all.size(); ++i) {
    const Candidate& c = all[i];
    const auto& e = s.experts[c.expert];
    if (e.retired) continue;
    const uint64_t by = overrides[c.job];
    if (by != 0 && (by >> c.expert & 1) == 0) continue;
    auto [it, fresh] = merged.try_emplace(c.item.key);
    State::Merged& m = it->second;
    if (fresh) {
      m.proposed = i;
      m.skip = s.in_flight.count(c.item.key) != 0 || s.issued.count(c.item.key) != 0 ||
               (cached && cached(c.item.key));
    }
    if (m.skip) continue;
    const double wp = e.weight * c.probability;
    const double eta = m.best_wp < 0 ? c.eta_s : std::min(m.best.eta_s, c.eta_s);
    if (wp > m.best_wp) {
      m.best = c;
      m.best_wp = wp;
    }
    m.best.eta_s = eta;
    m.wp += wp;
    m.experts |= uint64_t{1} << c.expert;
  }

  // Score: Σ w·p × stall saved per byte, discounted beyond the lead window. Sure predictions
  // inside the window come first, soonest first (earliest deadline first); those due at the
  // same time (all overdue: ETA 0, as a new epoch's head when its hint comes after a pause)
  // in the order the experts proposed them, which for a hint is the declared order.
  struct Ranked {
    double score;
    bool due;  // needed within the lead window: fetched in deadline order
    const State::Merged* m;
  };
  std::vector<Ranked> ranked;
  ranked.reserve(merged.size());
  const double bw = std::max(1.0, s.options.link_bytes_per_s);
  for (const auto& [key, m] : merged) {
    if (m.skip) continue;
    const double size = static_cast<double>(std::max<uint64_t>(1, m.best.item.size));
    const double fetch_s = s.options.rtt_s + size / bw;
    const double lead = fetch_s + s.options.lead_s;
    const double discount = m.best.eta_s <= lead ? 1.0 : lead / m.best.eta_s;
    ranked.push_back(Ranked{m.wp * fetch_s / size * discount,
                            m.best.eta_s <= lead && m.best.probability >= kDueProbability, &m});
  }
  std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    if (a.due != b.due) return a.due;
    if (a.due && a.m->best.eta_s != b.m->best.eta_s) return a.m->best.eta_s < b.m->best.eta_s;
    if (a.due && a.m->proposed != b.m->proposed) return a.m->proposed < b.m->proposed;
    if (a.score != b.score) return a.score > b.score;
    if (a.m->best.eta_s != b.m->best.eta_s) return a.m->best.eta_s < b.m->best.eta_s;
    return a.m->best.item.key < b.m->best.item.key;
  });

  // Issue within the budget; one item larger than the budget goes alone.
  std::vector<Candidate> plan;
  const uint64_t budget = s.budget();
  uint64_t planned = 0;
  for (const Ranked& r : ranked) {
    if (s.in_flight_bytes >= budget || planned >= max_bytes) break;
    const Candidate& c = r.m->best;
    const uint64_t bytes = c.item.size;
    // A due item that does not fit keeps its place: the room it waits for must not go to
    // later, smaller items, or a large file is passed over until it is read (a miss).
    if (s.in_flight_bytes + bytes > budget && s.in_flight_bytes != 0) {
      if (r.due) break;
      continue;
    }
    if (planned + bytes > max_bytes) {
      if (r.due) break;
      continue;
    }
    planned += bytes;
    s.in_flight[c.item.key] = bytes;
    s.in_flight_bytes += bytes;
    s.bytes_prefetched += bytes;
    s.issued[c.item.key] = State::Issue{c.expert, s.now_ns, bytes, false, ++s.seq};
    s.issue_order.emplace_back(c.item.key, s.seq);
    ++s.experts[c.expert].issued;
    for (size_t e = 0; e < s.experts.size(); ++e) {
      if ((r.m->experts >> e & 1) == 0) continue;
      auto p = s.experts[e].pending.find(c.item.key);
      if (p != s.experts[e].pending.end()) p->second.issued = true;
    }
    plan.push_back(c);
  }
  s.ForgetOldestIssued();
  return plan;
}

void Ensemble::Landed(Key key, uint64_t bytes, bool ok) {
  State& s = *state_;
  auto f = s.in_flight.find(key);
  if (f != s.in_flight.end()) {
    s.in_flight_bytes -= std::min(s.in_flight_bytes, f->second);
    s.in_flight.erase(f);
  } else {
    (void)bytes;  // not ours (or already landed): the budget holds only what we issued
  }
  auto it = s.issued.find(key);
  if (it == s.issued.end()) return;
  if (ok) {
    it->second.landed = true;
  } else {
    s.bytes_prefetched -= std::min(s.bytes_prefetched, it->second.bytes);
    s.issued.erase(it);  // nothing arrived: neither useful nor wasted
  }
}

void Ensemble::Evicted(Key key) {
  State& s = *state_;
  auto it = s.issued.find(key);
  if (it == s.issued.end()) return;  // read already, or never ours
  s.bytes_wasted += it->second.bytes;
  s.issued.erase(it);
}

EnsembleStats Ensemble::Stats() const {
  const State& s = *state_;
  EnsembleStats out;
  for (const auto& e : s.experts) {
    ExpertStats x;
    x.name = e.expert->name();
    x.weight = e.weight;
    x.precision = e.window.Rate();
    x.issued = e.issued;
    x.useful = e.useful;
    x.shadow = e.shadow;
    x.shadow_hits = e.shadow_hits;
    x.retired = e.retired;
    out.experts.push_back(std::move(x));
  }
  out.budget_bytes = s.budget();
  out.in_flight_bytes = s.in_flight_bytes;
  out.bytes_prefetched = s.bytes_prefetched;
  out.bytes_wasted = s.bytes_wasted;
  out.prefetches_useful = s.useful;
  out.prefetches_late = s.late;
  out.hints_override = s.hints_override;
  return out;
}

}  // namespace weft::cache
