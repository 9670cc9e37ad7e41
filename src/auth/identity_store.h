// IdentityStore: Weft's users, groups, access keys, access rules and bearer tokens, kept in a
// KvStore (key layout: docs/formats/identity.md), and the one Authorize() check every front end
// calls for every request. Secret keys are stored encrypted (AES-256-GCM) under a server key
// that never enters the KvStore. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "io/file_system.h"
#include "meta/kv_store.h"

namespace weft::auth {

// The built-in administrator: allowed everything, cannot be deleted.
inline constexpr std::string_view kRootUser = "root";
// The principal of an unsigned request. Only rules for subject "*" apply to it.
inline constexpr std::string_view kAnonymous = "anonymous";

// Bit set of what a rule grants on a prefix.
enum Permission : uint8_t {
  kRead = 1,   // read object bytes and metadata (GET, HEAD, versions)
  kWrite = 2,  // create, overwrite, delete, copy into
  kList = 4,   // list names under the prefix
  kAdmin = 8,  // everything above, plus bucket settings and snapshots
};
// "read,list" <-> kRead|kList. Parse fails on unknown words or an empty list.
std::string PermissionsToString(uint8_t permissions);
Result<uint8_t> ParsePermissions(std::string_view text);

struct User {
  std::string name;  // [a-z0-9][a-z0-9._-]{0,63}
  std::vector<std::string> groups;
  int64_t created_ns = 0;
};

struct AccessKey {
  std::string access_key_id;  // 20 characters [A-Z0-9]
  std::string secret_key;     // 40 characters; empty in listings
  std::string user;
  int64_t created_ns = 0;
  // 0: never. A key rotated out with an overlap keeps working until then, and not after.
  int64_t expires_ns = 0;
};

// Grants `permissions` on every path that starts with `prefix` to `subject`:
// "user:NAME", "group:NAME", "authenticated" (any signed-in user) or "*" (anyone, anonymous
// included). Rules only grant; nothing is allowed without one (except to root).
struct Rule {
  std::string id;  // assigned by AddRule
  std::string subject;
  std::string prefix;  // absolute path prefix, "/" for everything; "/b/" for bucket b
  uint8_t permissions = 0;
};

struct BearerToken {
  std::string token;  // opaque, URL-safe
  std::string user;
  int64_t expires_ns = 0;
};

class IdentityStore {
 public:
  // `server_key` is 32 random bytes (see LoadOrCreateServerKey). The store keeps the KvStore.
  static Result<std::unique_ptr<IdentityStore>> Open(std::shared_ptr<KvStore> kv,
                                                     std::string server_key,
                                                     Clock* clock = SystemClock::Default());
  virtual ~IdentityStore() = default;

  // Users. Root exists implicitly. Deleting a user deletes its keys and its "user:" rules.
  virtual Result<User> CreateUser(std::string_view name, std::vector<std::string> groups) = 0;
  virtual Result<User> GetUser(std::string_view name) = 0;
  virtual Result<std::vector<User>> ListUsers() = 0;
  virtual Result<User> SetGroups(std::string_view name, std::vector<std::string> groups) = 0;
  virtual Status DeleteUser(std::string_view name) = 0;

  // Access keys. CreateKey generates a pair and returns the secret once. ImportKey stores a
  // given pair (root's key from WEFT_ROOT_ACCESS_KEY / WEFT_ROOT_SECRET_KEY); importing an id
  // that exists for the same user replaces its secret (FailedPrecondition for one that was
  // rotated out and has expired: it is not brought back). An expired key is as unknown to
  // LookupKey and ListKeys.
  virtual Result<AccessKey> CreateKey(std::string_view user) = 0;
  virtual Result<AccessKey> ImportKey(std::string_view user, std::string_view access_key_id,
                                      std::string_view secret_key) = 0;
  virtual Result<std::vector<AccessKey>> ListKeys(std::string_view user) = 0;  // no secrets
  // A new key for `user` (secret returned once), and the user's other keys rotated out: they
  // keep working for `overlap_ns` more (less if they expire sooner), or stop at once with 0.
  // Keys that have expired are deleted.
  virtual Result<AccessKey> RotateKey(std::string_view user, int64_t overlap_ns) = 0;
  virtual Status DeleteKey(std::string_view access_key_id) = 0;
  // The key with its decrypted secret, for signature verification. NotFound if unknown.
  virtual Result<AccessKey> LookupKey(std::string_view access_key_id) = 0;

  // Rules.
  virtual Result<Rule> AddRule(Rule rule) = 0;
  virtual Result<std::vector<Rule>> ListRules() = 0;
  virtual Status DeleteRule(std::string_view id) = 0;

  // Bearer tokens for the REST API: self-verifying (HMAC under the server key), so issuing
  // one writes nothing. VerifyToken fails with PermissionDenied when forged, expired or its
  // user was deleted.
  virtual Result<BearerToken> IssueToken(std::string_view user, int64_t ttl_ns) = 0;
  virtual Result<std::string> VerifyToken(std::string_view token) = 0;

  // OK when `principal` may do `needed` (one or more Permission bits, all required) on
  // `path` (absolute; a directory may end with '/'); PermissionDenied (Reason::kAccessDenied)
  // otherwise. kAdmin on a covering prefix implies every bit.
  virtual Status Authorize(std::string_view principal, uint8_t needed, std::string_view path) = 0;

  // Every Permission bit the rules give `principal` on `path` (all of them for root, or with
  // kAdmin); 0 for an unknown user or a path that is not normalized.
  virtual uint8_t Granted(std::string_view principal, std::string_view path) = 0;

  // True when a rule grants `principal` something strictly below directory `dir`: the
  // directories on the way to what a user may reach are theirs to pass through (and see),
  // though not to list in full. Always true for root.
  virtual bool MayTraverse(std::string_view principal, std::string_view dir) = 0;
};

// An "Authorization: Bearer <token>" header value -> the user the token names. PermissionDenied
// (Reason::kUnauthenticated) when the header is missing, not Bearer, forged or expired;
// `how_to_get_one` ends the message for a missing header.
Result<std::string> AuthenticateBearer(std::optional<std::string_view> authorization,
                                       IdentityStore& identities, std::string_view how_to_get_one);

// A token for the user owning access key `access_key_id`, if `secret` is its secret (compared
// in constant time); PermissionDenied (Reason::kInvalidCredentials) otherwise, the same for an
// unknown id and a wrong secret.
Result<BearerToken> IssueTokenForKey(IdentityStore& identities, std::string_view access_key_id,
                                     std::string_view secret, int64_t ttl_ns);

// Size of the server key that IdentityStore::Open takes.
inline constexpr size_t kServerKeyBytes = 32;

// Reads the 32-byte server key from `path`, or creates it (mode 0600, synced) if missing.
Result<std::string> LoadOrCreateServerKey(FileSystem& fs, const std::string& path);

}  // namespace weft::auth
