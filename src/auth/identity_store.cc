// KvIdentityStore: IdentityStore over a KvStore (key layout: docs/formats/identity.md).
// Users and rules are read once at Open and then served from memory, because Authorize runs
// on every request; the KvStore stays the truth and every mutation writes it first.
#include "auth/identity_store.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <utility>

#include "auth/sigv4.h"
#include "base/ascii.h"
#include "base/bytes.h"
#include "base/hash.h"

namespace weft::auth {
namespace {

constexpr uint8_t kCodec = 1;
constexpr uint32_t kFormatVersion = 1;

// Keys. Every key starts with 'A' so the tables can share a store with the volume metadata,
// whose table tags are other letters.
constexpr std::string_view kFormatKey = "Af";
constexpr std::string_view kNextRuleKey = "An";
constexpr std::string_view kUserPrefix = "Au";
constexpr std::string_view kKeyPrefix = "Ak";
constexpr std::string_view kRulePrefix = "Ar";

constexpr size_t kMaxNameBytes = 64;
constexpr size_t kMaxGroups = 64;
constexpr size_t kMaxPrefixBytes = 4096;
constexpr size_t kMinKeyIdBytes = 16;
constexpr size_t kMaxKeyIdBytes = 128;
constexpr size_t kMinSecretBytes = 8;
constexpr size_t kMaxSecretBytes = 128;
constexpr size_t kGeneratedKeyIdBytes = 20;
constexpr size_t kGeneratedSecretBytes = 40;
constexpr size_t kNonceBytes = 12;
constexpr size_t kTagBytes = 16;
constexpr size_t kMacBytes = 32;
constexpr size_t kMaxTokenBytes = 512;
constexpr uint8_t kAllPermissions = kRead | kWrite | kList | kAdmin;

constexpr std::string_view kTokenPrefix = "wt1.";
constexpr std::string_view kUpperAlnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
constexpr std::string_view kSecretAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Labels deriving independent subkeys from the server key, so the AES key and the token MAC
// key are never the same bytes.
constexpr std::string_view kSecretKeyLabel = "weft identity v1: secret encryption";
constexpr std::string_view kTokenKeyLabel = "weft identity v1: bearer tokens";

constexpr std::pair<uint8_t, std::string_view> kPermissionNames[] = {
    {kRead, "read"}, {kWrite, "write"}, {kList, "list"}, {kAdmin, "admin"}};

// ---- Validation --------------------------------------------------------------------------

bool IsLowerAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
bool IsAlnum(char c) {
  return IsLowerAlnum(c) || (c >= 'A' && c <= 'Z');
}

// [a-z0-9][a-z0-9._-]{0,63}, for user and group names.
bool IsValidName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameBytes || !IsLowerAlnum(name[0])) return false;
  return std::all_of(name.begin() + 1, name.end(),
                     [](char c) { return IsLowerAlnum(c) || c == '.' || c == '_' || c == '-'; });
}

Status CheckName(std::string_view what, std::string_view name) {
  if (IsValidName(name)) return OkStatus();
  return InvalidArgument(std::string(what) + " name '" + std::string(name.substr(0, 80)) +
                         "' is invalid: use 1-64 characters [a-z0-9._-], starting with a letter "
                         "or digit");
}

// Sorted and without duplicates, so stored records and comparisons do not depend on order.
Result<std::vector<std::string>> NormalizeGroups(std::vector<std::string> groups) {
  for (const std::string& g : groups) WEFT_RETURN_IF_ERROR(CheckName("group", g));
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  if (groups.size() > kMaxGroups) {
    return InvalidArgument("a user may be in at most " + std::to_string(kMaxGroups) + " groups");
  }
  return groups;
}

// True for an absolute path without NUL and without "." or ".." segments. Rule prefixes and
// authorised paths must both be normalised, or "/b/alice/../bob" would pass a "/b/alice/" rule.
bool IsNormalizedPath(std::string_view path) {
  if (path.empty() || path[0] != '/' || path.size() > kMaxPrefixBytes) return false;
  if (path.find('\0') != std::string_view::npos) return false;
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view segment = path.substr(start, end - start);
    if (segment == "." || segment == "..") return false;
    start = end + 1;
  }
  return true;
}

enum class SubjectKind : uint8_t { kUser, kGroup, kAuthenticated, kEveryone };

struct Subject {
  SubjectKind kind = SubjectKind::kEveryone;
  std::string name;  // for kUser and kGroup
};

Result<Subject> ParseSubject(std::string_view subject) {
  if (subject == "*") return Subject{SubjectKind::kEveryone, {}};
  if (subject == "authenticated") return Subject{SubjectKind::kAuthenticated, {}};
  if (subject.starts_with("user:")) {
    const std::string_view name = subject.substr(5);
    WEFT_RETURN_IF_ERROR(CheckName("user", name));
    if (name == kAnonymous) {
      return InvalidArgument("rule subject 'user:anonymous' is not allowed; use '*'");
    }
    return Subject{SubjectKind::kUser, std::string(name)};
  }
  if (subject.starts_with("group:")) {
    const std::string_view name = subject.substr(6);
    WEFT_RETURN_IF_ERROR(CheckName("group", name));
    return Subject{SubjectKind::kGroup, std::string(name)};
  }
  return InvalidArgument("rule subject '" + std::string(subject.substr(0, 80)) +
                         "' is invalid: use user:NAME, group:NAME, authenticated or *");
}

Status CheckRule(const Rule& rule) {
  WEFT_RETURN_IF_ERROR(ParseSubject(rule.subject).status());
  if (!IsNormalizedPath(rule.prefix)) {
    return InvalidArgument(
        "rule prefix must be an absolute path of at most 4096 bytes without NUL, '.' or '..' "
        "segments");
  }
  if (rule.permissions == 0 || (rule.permissions & ~kAllPermissions) != 0) {
    return InvalidArgument("rule permissions must be a nonempty set of read, write, list, admin");
  }
  return OkStatus();
}

Status CheckKeyId(std::string_view id) {
  if (id.size() < kMinKeyIdBytes || id.size() > kMaxKeyIdBytes ||
      !std::all_of(id.begin(), id.end(), IsAlnum)) {
    return InvalidArgument("access key id must be 16-128 characters [A-Za-z0-9]");
  }
  return OkStatus();
}

Status CheckSecret(std::string_view secret) {
  if (secret.size() < kMinSecretBytes || secret.size() > kMaxSecretBytes ||
      !std::all_of(secret.begin(), secret.end(), [](char c) { return c > ' ' && c <= '~'; })) {
    return InvalidArgument("secret key must be 8-128 printable ASCII characters without spaces");
  }
  return OkStatus();
}

// "r<n>" -> n; nullopt for anything else.
std::optional<uint64_t> ParseRuleId(std::string_view id) {
  if (id.size() < 2 || id[0] != 'r' || id[1] == '0') return std::nullopt;
  uint64_t n = 0;
  const char* end = id.data() + id.size();
  auto [ptr, ec] = std::from_chars(id.data() + 1, end, n);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return n;
}

// ---- Randomness and crypto ---------------------------------------------------------------

Status FillRandom(void* out, size_t n) {
  if (RAND_bytes(static_cast<unsigned char*>(out), static_cast<int>(n)) != 1) {
    return Internal("RAND_bytes failed");
  }
  return OkStatus();
}

// `n` characters drawn uniformly from `alphabet` (rejection sampling avoids modulo bias).
Result<std::string> RandomString(size_t n, std::string_view alphabet) {
  const unsigned limit = 256 - 256 % alphabet.size();
  std::string out;
  unsigned char buf[64];
  while (out.size() < n) {
    WEFT_RETURN_IF_ERROR(FillRandom(buf, sizeof(buf)));
    for (unsigned char b : buf) {
      if (b < limit && out.size() < n) out.push_back(alphabet[b % alphabet.size()]);
    }
  }
  return out;
}

struct CipherCtxFree {
  void operator()(EVP_CIPHER_CTX* ctx) const { EVP_CIPHER_CTX_free(ctx); }
};
using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, CipherCtxFree>;

unsigned char* U(char* p) {
  return reinterpret_cast<unsigned char*>(p);
}
const unsigned char* U(const char* p) {
  return reinterpret_cast<const unsigned char*>(p);
}

// AES-256-GCM: nonce:12 || ciphertext || tag:16.
Result<std::string> Seal(std::string_view key, std::string_view aad, std::string_view plain) {
  std::string out(kNonceBytes + plain.size() + kTagBytes, '\0');
  WEFT_RETURN_IF_ERROR(FillRandom(out.data(), kNonceBytes));
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  char* ct = out.data() + kNonceBytes;
  int len = 0;
  int final_len = 0;
  if (!ctx || EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(kNonceBytes),
                          nullptr) != 1 ||
      EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr, U(key.data()), U(out.data())) != 1 ||
      EVP_EncryptUpdate(ctx.get(), nullptr, &len, U(aad.data()), static_cast<int>(aad.size())) !=
          1 ||
      EVP_EncryptUpdate(ctx.get(), U(ct), &len, U(plain.data()), static_cast<int>(plain.size())) !=
          1 ||
      EVP_EncryptFinal_ex(ctx.get(), U(ct + len), &final_len) != 1 ||
      static_cast<size_t>(len + final_len) != plain.size() ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, static_cast<int>(kTagBytes),
                          ct + plain.size()) != 1) {
    return Internal("AES-256-GCM encryption failed");
  }
  return out;
}

// The plaintext, or nullopt when `sealed` was not made by Seal with this key and aad.
std::optional<std::string> Unseal(std::string_view key, std::string_view aad,
                                  std::string_view sealed) {
  if (sealed.size() < kNonceBytes + kTagBytes) return std::nullopt;
  const std::string_view ct = sealed.substr(kNonceBytes, sealed.size() - kNonceBytes - kTagBytes);
  std::string tag(sealed.substr(sealed.size() - kTagBytes));
  std::string plain(ct.size(), '\0');
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  int len = 0;
  int final_len = 0;
  if (!ctx || EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(kNonceBytes),
                          nullptr) != 1 ||
      EVP_DecryptInit_ex(ctx.get(), nullptr, nullptr, U(key.data()), U(sealed.data())) != 1 ||
      EVP_DecryptUpdate(ctx.get(), nullptr, &len, U(aad.data()), static_cast<int>(aad.size())) !=
          1 ||
      EVP_DecryptUpdate(ctx.get(), U(plain.data()), &len, U(ct.data()),
                        static_cast<int>(ct.size())) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, static_cast<int>(kTagBytes),
                          tag.data()) != 1 ||
      EVP_DecryptFinal_ex(ctx.get(), U(plain.data() + len), &final_len) != 1) {
    return std::nullopt;
  }
  return plain;
}

// Binds a sealed secret to its key id and owner: a ciphertext copied to another key record,
// or a record edited to name another user, no longer decrypts.
std::string SecretAad(std::string_view access_key_id, std::string_view user) {
  std::string aad = "weft secret v1";
  aad.push_back('\0');
  aad.append(access_key_id);
  aad.push_back('\0');
  aad.append(user);
  return aad;
}

// ---- Records -----------------------------------------------------------------------------

std::string UserKey(std::string_view name) {
  return std::string(kUserPrefix) + std::string(name);
}
std::string AccessKeyKey(std::string_view id) {
  return std::string(kKeyPrefix) + std::string(id);
}
std::string RuleKey(uint64_t n) {
  std::string key(kRulePrefix);
  PutBigEndian64(&key, n);
  return key;
}

// Names the key in the message; its bytes may be binary or garbage, so only printable ASCII
// passes through.
Status Malformed(std::string_view what, std::string_view key) {
  std::string printable;
  for (char c : key.substr(0, 140)) printable.push_back(c >= ' ' && c <= '~' ? c : '?');
  return Corruption("malformed " + std::string(what) + " record '" + printable +
                    "' in the identity store");
}

bool GetCodec(ByteReader* r) {
  uint8_t c = 0;
  return r->GetByte(&c) && c == kCodec;
}

std::string EncodeUser(const User& user) {
  std::string out(1, static_cast<char>(kCodec));
  PutSignedVarint64(&out, user.created_ns);
  PutVarint64(&out, user.groups.size());
  for (const std::string& g : user.groups) PutLengthPrefixed(&out, g);
  return out;
}

Result<User> DecodeUser(std::string_view key, std::string_view value) {
  User user;
  user.name = std::string(key.substr(kUserPrefix.size()));
  ByteReader r(value);
  uint64_t n = 0;
  if (!IsValidName(user.name) || user.name == kRootUser || user.name == kAnonymous ||
      !GetCodec(&r) || !r.GetSignedVarint64(&user.created_ns) || !r.GetVarint64(&n) ||
      n > kMaxGroups) {
    return Malformed("user", key);
  }
  for (uint64_t i = 0; i < n; ++i) {
    std::string_view g;
    // Authorize binary-searches the groups, so they must be sorted and unique.
    if (!r.GetLengthPrefixed(&g) || !IsValidName(g) ||
        (!user.groups.empty() && user.groups.back() >= g)) {
      return Malformed("user", key);
    }
    user.groups.emplace_back(g);
  }
  if (!r.empty()) return Malformed("user", key);
  return user;
}

// Marks the optional expiry at the end of a key record.
constexpr char kExpiresTag = 'E';

struct KeyRecord {
  std::string user;
  int64_t created_ns = 0;
  std::string sealed_secret;
  int64_t expires_ns = 0;  // 0: never
  bool ExpiredAt(int64_t now_ns) const { return expires_ns != 0 && now_ns >= expires_ns; }
};

std::string EncodeKey(const KeyRecord& k) {
  std::string out(1, static_cast<char>(kCodec));
  PutLengthPrefixed(&out, k.user);
  PutSignedVarint64(&out, k.created_ns);
  PutLengthPrefixed(&out, k.sealed_secret);
  // Only a rotated-out key carries its expiry, so other records stay as older builds wrote them.
  if (k.expires_ns != 0) {
    out.push_back(kExpiresTag);
    PutSignedVarint64(&out, k.expires_ns);
  }
  return out;
}

Result<KeyRecord> DecodeKey(std::string_view key, std::string_view value) {
  KeyRecord k;
  ByteReader r(value);
  std::string_view user, sealed;
  if (!GetCodec(&r) || !r.GetLengthPrefixed(&user) || !r.GetSignedVarint64(&k.created_ns) ||
      !r.GetLengthPrefixed(&sealed) || !IsValidName(user) ||
      sealed.size() < kNonceBytes + kTagBytes) {
    return Malformed("access key", key);
  }
  uint8_t tag = 0;
  if (!r.empty() && (!r.GetByte(&tag) || tag != kExpiresTag ||
                     !r.GetSignedVarint64(&k.expires_ns) || k.expires_ns <= k.created_ns)) {
    return Malformed("access key", key);
  }
  if (!r.empty()) return Malformed("access key", key);
  k.user = std::string(user);
  k.sealed_secret = std::string(sealed);
  return k;
}

std::string EncodeRule(const Rule& rule) {
  std::string out(1, static_cast<char>(kCodec));
  PutLengthPrefixed(&out, rule.subject);
  PutLengthPrefixed(&out, rule.prefix);
  out.push_back(static_cast<char>(rule.permissions));
  return out;
}

Result<Rule> DecodeRule(std::string_view key, std::string_view value) {
  if (key.size() != kRulePrefix.size() + 8) return Malformed("rule", key);
  const uint64_t n = GetBigEndian64(key.data() + kRulePrefix.size());
  Rule rule;
  rule.id = "r" + std::to_string(n);
  ByteReader r(value);
  std::string_view subject, prefix;
  if (n == 0 || !GetCodec(&r) || !r.GetLengthPrefixed(&subject) || !r.GetLengthPrefixed(&prefix) ||
      !r.GetByte(&rule.permissions) || !r.empty()) {
    return Malformed("rule", key);
  }
  rule.subject = std::string(subject);
  rule.prefix = std::string(prefix);
  if (!CheckRule(rule).ok()) return Malformed("rule", key);
  return rule;
}

std::string EncodeU64(uint64_t v) {
  std::string out;
  PutBigEndian64(&out, v);
  return out;
}

// ---- The store ---------------------------------------------------------------------------

// A rule with its subject parsed once, for Authorize.
struct CachedRule {
  Rule rule;
  Subject subject;
};

// Ownership: shares the KvStore; `clock` must outlive the store.
// Threads: mutations serialise on write_mu_ (check, KV write, then cache update, so the cache
// never shows what the store does not hold); readers of the cache take cache_mu_ shared, so
// Authorize calls run in parallel and only wait for a mutation's in-memory update.
class KvIdentityStore final : public IdentityStore {
 public:
  KvIdentityStore(std::shared_ptr<KvStore> kv, std::string secret_key, std::string token_key,
                  Clock* clock)
      : kv_(std::move(kv)),
        secret_key_(std::move(secret_key)),
        token_key_(std::move(token_key)),
        clock_(clock) {}

  Status Load();

  Result<User> CreateUser(std::string_view name, std::vector<std::string> groups) override;
  Result<User> GetUser(std::string_view name) override;
  Result<std::vector<User>> ListUsers() override;
  Result<User> SetGroups(std::string_view name, std::vector<std::string> groups) override;
  Status DeleteUser(std::string_view name) override;

  Result<AccessKey> CreateKey(std::string_view user) override;
  Result<AccessKey> RotateKey(std::string_view user, int64_t overlap_ns) override;
  Result<AccessKey> ImportKey(std::string_view user, std::string_view access_key_id,
                              std::string_view secret_key) override;
  Result<std::vector<AccessKey>> ListKeys(std::string_view user) override;
  Status DeleteKey(std::string_view access_key_id) override;
  Result<AccessKey> LookupKey(std::string_view access_key_id) override;

  Result<Rule> AddRule(Rule rule) override;
  Result<std::vector<Rule>> ListRules() override;
  Status DeleteRule(std::string_view id) override;

  Result<BearerToken> IssueToken(std::string_view user, int64_t ttl_ns) override;
  Result<std::string> VerifyToken(std::string_view token) override;

  Status Authorize(std::string_view principal, uint8_t needed, std::string_view path) override;
  uint8_t Granted(std::string_view principal, std::string_view path) override;
  bool MayTraverse(std::string_view principal, std::string_view dir) override;

 private:
  // Calls visit(rule) for every rule whose subject matches `principal`, under the cache lock;
  // false (nothing visited) when the principal is neither anonymous nor a known user.
  template <typename Visit>
  bool ForEachRuleOf(std::string_view principal, Visit&& visit) const;
  // The user's creation time, or nullopt if there is no such user; root exists (time 0).
  std::optional<int64_t> UserCreatedNs(std::string_view name) const;
  Status CheckUserExists(std::string_view name) const;
  // Every access key record, in key-id order.
  Result<std::vector<std::pair<std::string, KeyRecord>>> ScanKeys();
  // Writes the key (with whatever `batch` holds already) and clears the key cache.
  Result<AccessKey> PutKey(std::string_view user, std::string_view id, std::string_view secret,
                           int64_t created_ns, int64_t expires_ns, WriteBatch batch);
  // A generated key for `user`, written with `batch`. Needs write_mu_.
  Result<AccessKey> NewKey(std::string_view user, WriteBatch batch);

  const std::shared_ptr<KvStore> kv_;
  const std::string secret_key_;  // AES-256 key for secrets at rest, derived from the server key
  const std::string token_key_;   // HMAC key for bearer tokens, derived from the server key
  Clock* const clock_;

  std::mutex write_mu_;
  uint64_t next_rule_ = 1;  // GUARDED_BY(write_mu_)

  mutable std::shared_mutex cache_mu_;
  std::map<std::string, User, std::less<>> users_;  // GUARDED_BY(cache_mu_), not root
  std::map<uint64_t, CachedRule> rules_;            // GUARDED_BY(cache_mu_), by rule number
  // Decrypted keys by id: every signed request looks its key up, and a KV read plus an AES-GCM
  // open per request is measurable. Cleared by every key or user mutation; bounded.
  std::map<std::string, AccessKey, std::less<>> keys_;  // GUARDED_BY(cache_mu_)
  // Bumped with every clear, so a lookup that read the KvStore before a concurrent delete does
  // not put the deleted key back.
  uint64_t keys_generation_ = 0;  // GUARDED_BY(cache_mu_)
  static constexpr size_t kMaxCachedKeys = 10000;
};

Status KvIdentityStore::Load() {
  WriteBatch init;
  WEFT_ASSIGN_OR_RETURN(std::optional<std::string> format, kv_->Get(kFormatKey));
  if (!format) {
    std::string v;
    PutBigEndian32(&v, kFormatVersion);
    init.Put(kFormatKey, v);
  } else if (format->size() != 4) {
    return Corruption("malformed identity store format record");
  } else if (GetBigEndian32(format->data()) != kFormatVersion) {
    return FailedPrecondition(
        "identity store format version " + std::to_string(GetBigEndian32(format->data())) +
        " is not supported (this build reads version " + std::to_string(kFormatVersion) + ")");
  }
  WEFT_ASSIGN_OR_RETURN(std::optional<std::string> next, kv_->Get(kNextRuleKey));
  if (next) {
    if (next->size() != 8) return Corruption("malformed identity store rule counter");
    next_rule_ = GetBigEndian64(next->data());
  }

  std::unique_ptr<KvIterator> it = kv_->NewIterator();
  for (it->Seek(kUserPrefix); it->Valid() && it->key().starts_with(kUserPrefix); it->Next()) {
    WEFT_ASSIGN_OR_RETURN(User user, DecodeUser(it->key(), it->value()));
    std::string name = user.name;
    users_.emplace(std::move(name), std::move(user));
  }
  WEFT_RETURN_IF_ERROR(it->status());
  it = kv_->NewIterator();
  for (it->Seek(kRulePrefix); it->Valid() && it->key().starts_with(kRulePrefix); it->Next()) {
    WEFT_ASSIGN_OR_RETURN(Rule rule, DecodeRule(it->key(), it->value()));
    WEFT_ASSIGN_OR_RETURN(Subject subject, ParseSubject(rule.subject));
    const uint64_t n = GetBigEndian64(it->key().data() + kRulePrefix.size());
    // A lost counter must not hand out an id that is still in use.
    next_rule_ = std::max(next_rule_, n + 1);
    rules_.emplace(n, CachedRule{std::move(rule), std::move(subject)});
  }
  WEFT_RETURN_IF_ERROR(it->status());
  if (!init.empty()) WEFT_RETURN_IF_ERROR(kv_->Write(init));
  return OkStatus();
}

std::optional<int64_t> KvIdentityStore::UserCreatedNs(std::string_view name) const {
  if (name == kRootUser) return 0;
  std::shared_lock lock(cache_mu_);
  auto it = users_.find(name);
  if (it == users_.end()) return std::nullopt;
  return it->second.created_ns;
}

Status KvIdentityStore::CheckUserExists(std::string_view name) const {
  if (UserCreatedNs(name)) return OkStatus();
  return NotFound("user '" + std::string(name.substr(0, 80)) + "' does not exist");
}

// ---- Users ----

Result<User> KvIdentityStore::CreateUser(std::string_view name, std::vector<std::string> groups) {
  if (name == kRootUser) return AlreadyExists("user 'root' is built in");
  if (name == kAnonymous) return InvalidArgument("user name 'anonymous' is reserved");
  WEFT_RETURN_IF_ERROR(CheckName("user", name));
  User user;
  user.name = std::string(name);
  WEFT_ASSIGN_OR_RETURN(user.groups, NormalizeGroups(std::move(groups)));
  user.created_ns = clock_->NowNanos();

  std::lock_guard write_lock(write_mu_);
  if (UserCreatedNs(name)) return AlreadyExists("user '" + user.name + "' already exists");
  WriteBatch batch;
  batch.Put(UserKey(name), EncodeUser(user));
  WEFT_RETURN_IF_ERROR(kv_->Write(batch));
  std::unique_lock lock(cache_mu_);
  users_[user.name] = user;
  return user;
}

Result<User> KvIdentityStore::GetUser(std::string_view name) {
  if (name == kRootUser) return User{std::string(kRootUser), {}, 0};
  std::shared_lock lock(cache_mu_);
  auto it = users_.find(name);
  if (it == users_.end()) {
    return NotFound("user '" + std::string(name.substr(0, 80)) + "' does not exist");
  }
  return it->second;
}

Result<std::vector<User>> KvIdentityStore::ListUsers() {
  std::vector<User> out;
  {
    std::shared_lock lock(cache_mu_);
    out.reserve(users_.size() + 1);
    for (const auto& [name, user] : users_) out.push_back(user);
  }
  out.push_back(User{std::string(kRootUser), {}, 0});
  std::sort(out.begin(), out.end(), [](const User& a, const User& b) { return a.name < b.name; });
  return out;
}

Result<User> KvIdentityStore::SetGroups(std::string_view name, std::vector<std::string> groups) {
  if (name == kRootUser) return InvalidArgument("root has every permission; it has no groups");
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> normalized, NormalizeGroups(std::move(groups)));
  std::lock_guard write_lock(write_mu_);
  WEFT_ASSIGN_OR_RETURN(User user, GetUser(name));
  user.groups = std::move(normalized);
  WriteBatch batch;
  batch.Put(UserKey(name), EncodeUser(user));
  WEFT_RETURN_IF_ERROR(kv_->Write(batch));
  std::unique_lock lock(cache_mu_);
  users_[user.name] = user;
  return user;
}

Status KvIdentityStore::DeleteUser(std::string_view name) {
  if (name == kRootUser) return InvalidArgument("user 'root' cannot be deleted");
  std::lock_guard write_lock(write_mu_);
  WEFT_RETURN_IF_ERROR(GetUser(name).status());
  WriteBatch batch;
  batch.Delete(UserKey(name));
  WEFT_ASSIGN_OR_RETURN(auto keys, ScanKeys());
  for (const auto& [id, record] : keys) {
    if (record.user == name) batch.Delete(AccessKeyKey(id));
  }
  std::vector<uint64_t> dropped_rules;
  {
    std::shared_lock lock(cache_mu_);
    for (const auto& [n, cached] : rules_) {
      if (cached.subject.kind == SubjectKind::kUser && cached.subject.name == name) {
        batch.Delete(RuleKey(n));
        dropped_rules.push_back(n);
      }
    }
  }
  WEFT_RETURN_IF_ERROR(kv_->Write(batch));
  std::unique_lock lock(cache_mu_);
  users_.erase(users_.find(name));
  for (uint64_t n : dropped_rules) rules_.erase(n);
  keys_.clear();
  keys_generation_++;
  return OkStatus();
}

// ---- Access keys ----

Result<std::vector<std::pair<std::string, KeyRecord>>> KvIdentityStore::ScanKeys() {
  std::vector<std::pair<std::string, KeyRecord>> out;
  std::unique_ptr<KvIterator> it = kv_->NewIterator();
  for (it->Seek(kKeyPrefix); it->Valid() && it->key().starts_with(kKeyPrefix); it->Next()) {
    WEFT_ASSIGN_OR_RETURN(KeyRecord record, DecodeKey(it->key(), it->value()));
    out.emplace_back(std::string(it->key().substr(kKeyPrefix.size())), std::move(record));
  }
  WEFT_RETURN_IF_ERROR(it->status());
  return out;
}

Result<AccessKey> KvIdentityStore::PutKey(std::string_view user, std::string_view id,
                                          std::string_view secret, int64_t created_ns,
                                          int64_t expires_ns, WriteBatch batch) {
  KeyRecord record;
  record.user = std::string(user);
  record.created_ns = created_ns;
  record.expires_ns = expires_ns;
  WEFT_ASSIGN_OR_RETURN(record.sealed_secret, Seal(secret_key_, SecretAad(id, user), secret));
  batch.Put(AccessKeyKey(id), EncodeKey(record));
  WEFT_RETURN_IF_ERROR(kv_->Write(batch));
  {
    std::unique_lock lock(cache_mu_);
    keys_.clear();
    keys_generation_++;
  }
  return AccessKey{std::string(id), std::string(secret), std::string(user), created_ns, expires_ns};
}

Result<AccessKey> KvIdentityStore::CreateKey(std::string_view user) {
  std::lock_guard write_lock(write_mu_);
  WEFT_RETURN_IF_ERROR(CheckUserExists(user));
  return NewKey(user, WriteBatch());
}

Result<AccessKey> KvIdentityStore::NewKey(std::string_view user, WriteBatch batch) {
  std::string id;
  // 18 random characters from 36 make a collision practically impossible; check anyway.
  for (int attempt = 0;; ++attempt) {
    if (attempt == 8) return Internal("could not generate an unused access key id");
    WEFT_ASSIGN_OR_RETURN(std::string random, RandomString(kGeneratedKeyIdBytes - 2, kUpperAlnum));
    id = "WK" + random;
    WEFT_ASSIGN_OR_RETURN(std::optional<std::string> existing, kv_->Get(AccessKeyKey(id)));
    if (!existing) break;
  }
  WEFT_ASSIGN_OR_RETURN(std::string secret, RandomString(kGeneratedSecretBytes, kSecretAlphabet));
  return PutKey(user, id, secret, clock_->NowNanos(), 0, std::move(batch));
}

Result<AccessKey> KvIdentityStore::RotateKey(std::string_view user, int64_t overlap_ns) {
  if (overlap_ns < 0) return InvalidArgument("a rotation's overlap cannot be negative");
  std::lock_guard write_lock(write_mu_);
  WEFT_RETURN_IF_ERROR(CheckUserExists(user));
  const int64_t now = clock_->NowNanos();
  const int64_t until = overlap_ns > INT64_MAX - now ? INT64_MAX : now + overlap_ns;
  WEFT_ASSIGN_OR_RETURN(auto keys, ScanKeys());
  // The old keys change in the batch that adds the new one: a crash leaves both or neither.
  WriteBatch batch;
  for (auto& [id, record] : keys) {
    if (record.user != user) continue;
    if (record.ExpiredAt(now) || overlap_ns == 0) {
      batch.Delete(AccessKeyKey(id));
    } else if (record.expires_ns == 0 || record.expires_ns > until) {
      record.expires_ns = until;
      batch.Put(AccessKeyKey(id), EncodeKey(record));
    }
  }
  return NewKey(user, std::move(batch));
}

Result<AccessKey> KvIdentityStore::ImportKey(std::string_view user, std::string_view access_key_id,
                                             std::string_view secret_key) {
  WEFT_RETURN_IF_ERROR(CheckKeyId(access_key_id));
  WEFT_RETURN_IF_ERROR(CheckSecret(secret_key));
  std::lock_guard write_lock(write_mu_);
  WEFT_RETURN_IF_ERROR(CheckUserExists(user));
  const std::string key = AccessKeyKey(access_key_id);
  WEFT_ASSIGN_OR_RETURN(std::optional<std::string> existing, kv_->Get(key));
  int64_t created_ns = clock_->NowNanos();
  int64_t expires_ns = 0;
  if (existing) {
    WEFT_ASSIGN_OR_RETURN(KeyRecord record, DecodeKey(key, *existing));
    if (record.user != user) {
      return AlreadyExists("access key " + std::string(access_key_id) + " belongs to another user");
    }
    if (record.ExpiredAt(created_ns)) {
      return FailedPrecondition("access key " + std::string(access_key_id) +
                                " was rotated out and has expired; use its successor");
    }
    created_ns = record.created_ns;
    expires_ns = record.expires_ns;
  }
  return PutKey(user, access_key_id, secret_key, created_ns, expires_ns, WriteBatch());
}

Result<std::vector<AccessKey>> KvIdentityStore::ListKeys(std::string_view user) {
  WEFT_RETURN_IF_ERROR(CheckUserExists(user));
  WEFT_ASSIGN_OR_RETURN(auto keys, ScanKeys());
  std::vector<AccessKey> out;
  const int64_t now = clock_->NowNanos();
  for (auto& [id, record] : keys) {
    if (record.user != user || record.ExpiredAt(now)) continue;
    out.push_back(AccessKey{id, {}, record.user, record.created_ns, record.expires_ns});
  }
  return out;
}

Status KvIdentityStore::DeleteKey(std::string_view access_key_id) {
  std::lock_guard write_lock(write_mu_);
  const std::string key = AccessKeyKey(access_key_id);
  WEFT_ASSIGN_OR_RETURN(std::optional<std::string> existing, kv_->Get(key));
  if (!existing) {
    return NotFound("access key " + std::string(access_key_id.substr(0, 140)) + " does not exist");
  }
  WriteBatch batch;
  batch.Delete(key);
  WEFT_RETURN_IF_ERROR(kv_->Write(batch));
  std::unique_lock lock(cache_mu_);
  keys_.clear();
  keys_generation_++;
  return OkStatus();
}

Result<AccessKey> KvIdentityStore::LookupKey(std::string_view access_key_id) {
  auto not_found = [&] {
    return NotFound("access key " + std::string(access_key_id.substr(0, 140)) + " does not exist");
  };
  if (access_key_id.empty() || access_key_id.size() > kMaxKeyIdBytes) return not_found();
  uint64_t generation = 0;
  const int64_t now = clock_->NowNanos();
  {
    std::shared_lock lock(cache_mu_);
    if (auto it = keys_.find(access_key_id); it != keys_.end()) {
      if (it->second.expires_ns != 0 && now >= it->second.expires_ns) return not_found();
      return it->second;
    }
    generation = keys_generation_;
  }
  const std::string key = AccessKeyKey(access_key_id);
  WEFT_ASSIGN_OR_RETURN(std::optional<std::string> value, kv_->Get(key));
  if (!value) return not_found();
  WEFT_ASSIGN_OR_RETURN(KeyRecord record, DecodeKey(key, *value));
  if (record.ExpiredAt(now)) return not_found();
  std::optional<std::string> secret =
      Unseal(secret_key_, SecretAad(access_key_id, record.user), record.sealed_secret);
  if (!secret) {
    return Corruption("access key " + std::string(access_key_id) +
                      ": secret does not decrypt (wrong server key?)");
  }
  AccessKey found{std::string(access_key_id), std::move(*secret), std::move(record.user),
                  record.created_ns, record.expires_ns};
  std::unique_lock lock(cache_mu_);
  if (generation != keys_generation_) return found;  // changed meanwhile: do not cache
  if (keys_.size() >= kMaxCachedKeys) keys_.clear();
  keys_.emplace(found.access_key_id, found);
  return found;
}

// ---- Rules ----

Result<Rule> KvIdentityStore::AddRule(Rule rule) {
  WEFT_RETURN_IF_ERROR(CheckRule(rule));
  WEFT_ASSIGN_OR_RETURN(Subject subject, ParseSubject(rule.subject));
  std::lock_guard write_lock(write_mu_);
  // A rule for a missing user would silently apply to whoever is later created with the name,
  // and DeleteUser could not have removed it.
  if (subject.kind == SubjectKind::kUser) WEFT_RETURN_IF_ERROR(CheckUserExists(subject.name));
  const uint64_t n = next_rule_;
  rule.id = "r" + std::to_string(n);
  WriteBatch batch;
  batch.Put(RuleKey(n), EncodeRule(rule));
  batch.Put(kNextRuleKey, EncodeU64(n + 1));
  WEFT_RETURN_IF_ERROR(kv_->Write(batch));
  next_rule_ = n + 1;
  std::unique_lock lock(cache_mu_);
  rules_.emplace(n, CachedRule{rule, std::move(subject)});
  return rule;
}

Result<std::vector<Rule>> KvIdentityStore::ListRules() {
  std::shared_lock lock(cache_mu_);
  std::vector<Rule> out;
  out.reserve(rules_.size());
  for (const auto& [n, cached] : rules_) out.push_back(cached.rule);
  return out;
}

Status KvIdentityStore::DeleteRule(std::string_view id) {
  const std::optional<uint64_t> n = ParseRuleId(id);
  std::lock_guard write_lock(write_mu_);
  bool exists = false;
  if (n) {
    std::shared_lock lock(cache_mu_);
    exists = rules_.contains(*n);
  }
  if (!exists) return NotFound("rule '" + std::string(id.substr(0, 80)) + "' does not exist");
  WriteBatch batch;
  batch.Delete(RuleKey(*n));
  WEFT_RETURN_IF_ERROR(kv_->Write(batch));
  std::unique_lock lock(cache_mu_);
  rules_.erase(*n);
  return OkStatus();
}

// ---- Tokens ----

// The payload also carries the user's creation time, so a token outlives neither its user
// nor a later user of the same name.
std::string TokenPayload(std::string_view user, int64_t expires_ns, int64_t user_created_ns) {
  return std::string(user) + "|" + std::to_string(expires_ns) + "|" +
         std::to_string(user_created_ns);
}

Result<BearerToken> KvIdentityStore::IssueToken(std::string_view user, int64_t ttl_ns) {
  if (ttl_ns <= 0) return InvalidArgument("token lifetime must be positive");
  const std::optional<int64_t> created = UserCreatedNs(user);
  if (!created) return NotFound("user '" + std::string(user.substr(0, 80)) + "' does not exist");
  const int64_t now = clock_->NowNanos();
  const int64_t expires =
      ttl_ns > INT64_MAX - now ? INT64_MAX : now + ttl_ns;  // saturate instead of wrapping
  const std::string payload = TokenPayload(user, expires, *created);
  std::string token(kTokenPrefix);
  token += Base64Encode(payload, /*url=*/true);
  token += '.';
  token += Base64Encode(HmacSha256(token_key_, payload), /*url=*/true);
  return BearerToken{std::move(token), std::string(user), expires};
}

Result<std::string> KvIdentityStore::VerifyToken(std::string_view token) {
  auto denied = [](std::string_view why) {
    return PermissionDenied(Reason::kAccessDenied, "bearer token " + std::string(why));
  };
  if (token.size() > kMaxTokenBytes || !token.starts_with(kTokenPrefix)) {
    return denied("is malformed");
  }
  const std::string_view body = token.substr(kTokenPrefix.size());
  const size_t dot = body.find('.');
  if (dot == std::string_view::npos) return denied("is malformed");
  const std::optional<std::string> payload = Base64Decode(body.substr(0, dot), /*url=*/true);
  const std::optional<std::string> mac = Base64Decode(body.substr(dot + 1), /*url=*/true);
  if (!payload || !mac || mac->size() != kMacBytes) return denied("is malformed");
  const std::string expected = HmacSha256(token_key_, *payload);
  if (CRYPTO_memcmp(expected.data(), mac->data(), kMacBytes) != 0) {
    return denied("has a bad signature");
  }
  // Signed by us, so well formed unless the format changed; parse strictly all the same.
  const size_t bar1 = payload->find('|');
  const size_t bar2 = bar1 == std::string::npos ? bar1 : payload->find('|', bar1 + 1);
  if (bar2 == std::string::npos) return denied("is malformed");
  const std::string_view p(*payload);
  int64_t expires = 0;
  int64_t created = 0;
  auto parse = [](std::string_view s, int64_t* v) {
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
    return ec == std::errc() && ptr == s.data() + s.size();
  };
  if (!parse(p.substr(bar1 + 1, bar2 - bar1 - 1), &expires) ||
      !parse(p.substr(bar2 + 1), &created)) {
    return denied("is malformed");
  }
  const std::string_view user = p.substr(0, bar1);
  if (clock_->NowNanos() >= expires) return denied("has expired");
  const std::optional<int64_t> current = UserCreatedNs(user);
  if (!current || *current != created) return denied("names a user that no longer exists");
  return std::string(user);
}

// ---- Authorisation ----

template <typename Visit>
bool KvIdentityStore::ForEachRuleOf(std::string_view principal, Visit&& visit) const {
  const bool anonymous = principal == kAnonymous;
  std::shared_lock lock(cache_mu_);
  const std::vector<std::string>* groups = nullptr;
  if (!anonymous) {
    auto user = users_.find(principal);
    if (user == users_.end()) return false;
    groups = &user->second.groups;
  }
  for (const auto& [n, cached] : rules_) {
    const Subject& s = cached.subject;
    bool match = false;
    switch (s.kind) {
      case SubjectKind::kEveryone:
        match = true;
        break;
      case SubjectKind::kAuthenticated:
        match = !anonymous;
        break;
      case SubjectKind::kUser:
        match = !anonymous && s.name == principal;
        break;
      case SubjectKind::kGroup:
        match = groups != nullptr && std::binary_search(groups->begin(), groups->end(), s.name);
        break;
    }
    if (match) visit(cached.rule);
  }
  return true;
}

Status KvIdentityStore::Authorize(std::string_view principal, uint8_t needed,
                                  std::string_view path) {
  if (principal == kRootUser) return OkStatus();
  auto denied = [&](uint8_t missing, std::string_view why) {
    std::string m(principal.substr(0, 80));
    m += " may not ";
    m += missing == 0 ? "access" : PermissionsToString(missing);
    m += ' ';
    m.append(path.substr(0, kMaxPrefixBytes));
    m.append(why);
    return PermissionDenied(Reason::kAccessDenied, std::move(m));
  };
  if (needed == 0 || (needed & ~kAllPermissions) != 0) return denied(0, " (no valid permission)");
  if (!IsNormalizedPath(path)) return denied(needed, " (path is not normalized)");

  uint8_t granted = 0;
  const bool known = ForEachRuleOf(principal, [&](const Rule& rule) {
    if (path.starts_with(rule.prefix)) granted |= rule.permissions;
  });
  if (!known) return denied(needed, "");
  if (granted & kAdmin) granted = kAllPermissions;
  const uint8_t missing = needed & ~granted;
  if (missing == 0) return OkStatus();
  return denied(missing, "");
}

uint8_t KvIdentityStore::Granted(std::string_view principal, std::string_view path) {
  if (principal == kRootUser) return kAllPermissions;
  if (!IsNormalizedPath(path)) return 0;
  uint8_t granted = 0;
  ForEachRuleOf(principal, [&](const Rule& rule) {
    if (path.starts_with(rule.prefix)) granted |= rule.permissions;
  });
  return (granted & kAdmin) ? kAllPermissions : granted;
}

bool KvIdentityStore::MayTraverse(std::string_view principal, std::string_view dir) {
  if (principal == kRootUser) return true;
  if (!IsNormalizedPath(dir)) return false;
  std::string below(dir);
  if (!below.ends_with('/')) below += '/';
  bool found = false;
  ForEachRuleOf(principal, [&](const Rule& rule) {
    found = found || (rule.permissions != 0 && rule.prefix.starts_with(below));
  });
  return found;
}

// ---- Server key file ----

std::string Dirname(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Creates `tmp` with mode 0600 from the start: a chmod after creation would leave a window in
// which another local user could open the file and later read the key through that descriptor.
Status WritePrivateFile(const std::string& tmp, std::string_view data) {
  (void)::unlink(tmp.c_str());  // a leftover of a crash between create and rename
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoToStatus(errno, "creating " + tmp);
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return ErrnoToStatus(err, "writing " + tmp);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    return ErrnoToStatus(err, "syncing " + tmp);
  }
  if (::close(fd) != 0) return ErrnoToStatus(errno, "closing " + tmp);
  return OkStatus();
}

}  // namespace

std::string PermissionsToString(uint8_t permissions) {
  std::string out;
  for (const auto& [bit, name] : kPermissionNames) {
    if ((permissions & bit) == 0) continue;
    if (!out.empty()) out += ',';
    out += name;
  }
  return out;
}

Result<uint8_t> ParsePermissions(std::string_view text) {
  uint8_t out = 0;
  size_t start = 0;
  while (true) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view word = text.substr(start, end - start);
    while (!word.empty() && word.front() == ' ') word.remove_prefix(1);
    while (!word.empty() && word.back() == ' ') word.remove_suffix(1);
    uint8_t bit = 0;
    for (const auto& [b, name] : kPermissionNames) {
      if (word == name) bit = b;
    }
    if (bit == 0) {
      return InvalidArgument("unknown permission '" + std::string(word.substr(0, 40)) +
                             "': use a comma-separated list of read, write, list, admin");
    }
    out |= bit;
    if (end == text.size()) break;
    start = end + 1;
  }
  return out;
}

Result<std::unique_ptr<IdentityStore>> IdentityStore::Open(std::shared_ptr<KvStore> kv,
                                                           std::string server_key, Clock* clock) {
  if (server_key.size() != kServerKeyBytes) {
    return InvalidArgument("server key must be " + std::to_string(kServerKeyBytes) + " bytes");
  }
  auto store =
      std::make_unique<KvIdentityStore>(std::move(kv), HmacSha256(server_key, kSecretKeyLabel),
                                        HmacSha256(server_key, kTokenKeyLabel), clock);
  WEFT_RETURN_IF_ERROR(store->Load().WithContext("opening the identity store"));
  return std::unique_ptr<IdentityStore>(std::move(store));
}

Result<std::string> LoadOrCreateServerKey(FileSystem& fs, const std::string& path) {
  if (fs.Exists(path)) {
    WEFT_ASSIGN_OR_RETURN(std::string key, ReadFileToString(&fs, path));
    if (key.size() != kServerKeyBytes) {
      return Corruption("server key file " + path + " holds " + std::to_string(key.size()) +
                        " bytes, expected " + std::to_string(kServerKeyBytes) +
                        "; restore it from a backup (stored secrets need the original key)");
    }
    return key;
  }
  std::string key(kServerKeyBytes, '\0');
  WEFT_RETURN_IF_ERROR(FillRandom(key.data(), key.size()));
  if (&fs != PosixFileSystem()) {
    WEFT_RETURN_IF_ERROR(WriteFileAtomically(&fs, path, key));
    return key;
  }
  // FileSystem has no file modes, so on disk the private file is written here directly; the
  // rename and directory sync still go through `fs`.
  const std::string tmp = path + ".weft-tmp-key";
  Status status = WritePrivateFile(tmp, key);
  if (status.ok()) status = fs.Rename(tmp, path);
  if (!status.ok()) {
    (void)::unlink(tmp.c_str());
    return status.WithContext("writing server key " + path);
  }
  WEFT_RETURN_IF_ERROR(fs.SyncDir(Dirname(path)).WithContext("writing server key " + path));
  return key;
}

Result<std::string> AuthenticateBearer(std::optional<std::string_view> authorization,
                                       IdentityStore& identities, std::string_view how_to_get_one) {
  if (!authorization) {
    return PermissionDenied(Reason::kUnauthenticated,
                            "send 'Authorization: Bearer <token>'; " + std::string(how_to_get_one));
  }
  std::string_view value = *authorization;
  constexpr std::string_view kScheme = "bearer ";
  if (value.size() <= kScheme.size() || !EqualsIgnoreCase(value.substr(0, kScheme.size()), kScheme))
    return PermissionDenied(Reason::kUnauthenticated, "the Authorization scheme must be Bearer");
  value.remove_prefix(kScheme.size());
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  Result<std::string> user = identities.VerifyToken(value);
  if (!user.ok() && user.status().code() == StatusCode::kPermissionDenied) {
    return PermissionDenied(Reason::kUnauthenticated, user.status().message());
  }
  return user;
}

Result<BearerToken> IssueTokenForKey(IdentityStore& identities, std::string_view access_key_id,
                                     std::string_view secret, int64_t ttl_ns) {
  // Compared as digests, so the time taken says nothing about the secret.
  auto equal = [](std::string_view a, std::string_view b) {
    std::string ha = sigv4::Sha256Hex(a), hb = sigv4::Sha256Hex(b);
    return CRYPTO_memcmp(ha.data(), hb.data(), ha.size()) == 0;
  };
  const Status wrong = PermissionDenied(Reason::kInvalidCredentials,
                                        "the access key id or secret access key is wrong");
  Result<AccessKey> key = identities.LookupKey(access_key_id);
  if (!key.ok()) {
    if (key.status().code() != StatusCode::kNotFound) return key.status();
    (void)equal(secret, secret);  // as much work as for a known id
    return wrong;
  }
  if (!equal(key->secret_key, secret)) return wrong;
  return identities.IssueToken(key->user, ttl_ns);
}

}  // namespace weft::auth
