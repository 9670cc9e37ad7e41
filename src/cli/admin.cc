#include "cli/admin.h"

#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

#include "auth/identity_store.h"
#include "cli/cli_util.h"
#include "frontends/rest/json.h"
#include "frontends/rest/rest_frontend.h"
#include "net/http_client.h"
#include "server/identity.h"

namespace weft::cli {

using rest::json;
using rest::KeyJson;
using rest::RuleJson;
using rest::UserJson;

namespace {

// Tokens live only as long as one command needs them.
constexpr int kTokenTtlSeconds = 300;

std::string Dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

void PrintLine(FILE* f, const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), f);
  std::fputc('\n', f);
}

template <typename T>
json ArrayOf(const std::vector<T>& items, json (*to_json)(const T&)) {
  json out = json::array();
  for (const T& item : items) out.push_back(to_json(item));
  return out;
}

// ---- Back ends ---------------------------------------------------------------------------

// What the commands run against. Every object and array is in the REST API's JSON shape.
class Admin {
 public:
  virtual ~Admin() = default;
  virtual Result<json> CreateUser(const std::string& name,
                                  const std::vector<std::string>& groups) = 0;
  virtual Result<json> ListUsers() = 0;
  virtual Result<json> GetUser(const std::string& name) = 0;
  virtual Result<json> SetGroups(const std::string& name,
                                 const std::vector<std::string>& groups) = 0;
  virtual Status DeleteUser(const std::string& name) = 0;
  virtual Result<json> CreateKey(const std::string& user) = 0;  // with secret_access_key
  virtual Result<json> ListKeys(const std::string& user) = 0;
  // A new key (with secret_access_key); the user's others stop after `overlap_seconds`.
  virtual Result<json> RotateKey(const std::string& user, int64_t overlap_seconds) = 0;
  virtual Status DeleteKey(const std::string& access_key_id) = 0;
  virtual Result<json> AddRule(const std::string& subject, const std::string& prefix,
                               const std::string& permissions) = 0;
  virtual Result<json> ListRules() = 0;
  virtual Status DeleteRule(const std::string& id) = 0;
  virtual Result<json> ListSpokes() = 0;
  virtual Result<json> CacheStats() = 0;
};

// The identity store in the data directory, opened the way the hub opens it.
class LocalAdmin : public Admin {
 public:
  explicit LocalAdmin(std::unique_ptr<auth::IdentityStore> store) : store_(std::move(store)) {}

  Result<json> CreateUser(const std::string& name,
                          const std::vector<std::string>& groups) override {
    WEFT_ASSIGN_OR_RETURN(auth::User user, store_->CreateUser(name, groups));
    return UserJson(user);
  }
  Result<json> ListUsers() override {
    WEFT_ASSIGN_OR_RETURN(std::vector<auth::User> users, store_->ListUsers());
    return ArrayOf(users, UserJson);
  }
  Result<json> GetUser(const std::string& name) override {
    WEFT_ASSIGN_OR_RETURN(auth::User user, store_->GetUser(name));
    return UserJson(user);
  }
  Result<json> SetGroups(const std::string& name, const std::vector<std::string>& groups) override {
    WEFT_ASSIGN_OR_RETURN(auth::User user, store_->SetGroups(name, groups));
    return UserJson(user);
  }
  Status DeleteUser(const std::string& name) override { return store_->DeleteUser(name); }
  Result<json> CreateKey(const std::string& user) override {
    WEFT_ASSIGN_OR_RETURN(auth::AccessKey key, store_->CreateKey(user));
    json out = KeyJson(key);
    out["secret_access_key"] = key.secret_key;
    return out;
  }
  Result<json> ListKeys(const std::string& user) override {
    WEFT_ASSIGN_OR_RETURN(std::vector<auth::AccessKey> keys, store_->ListKeys(user));
    return ArrayOf(keys, KeyJson);
  }
  Result<json> RotateKey(const std::string& user, int64_t overlap_seconds) override {
    WEFT_ASSIGN_OR_RETURN(auth::AccessKey key,
                          store_->RotateKey(user, overlap_seconds * 1'000'000'000));
    json out = KeyJson(key);
    out["secret_access_key"] = key.secret_key;
    return out;
  }
  Status DeleteKey(const std::string& access_key_id) override {
    return store_->DeleteKey(access_key_id);
  }
  Result<json> AddRule(const std::string& subject, const std::string& prefix,
                       const std::string& permissions) override {
    auth::Rule rule;
    rule.subject = subject;
    rule.prefix = prefix;
    WEFT_ASSIGN_OR_RETURN(rule.permissions, auth::ParsePermissions(permissions));
    WEFT_ASSIGN_OR_RETURN(auth::Rule added, store_->AddRule(std::move(rule)));
    return RuleJson(added);
  }
  Result<json> ListRules() override {
    WEFT_ASSIGN_OR_RETURN(std::vector<auth::Rule> rules, store_->ListRules());
    return ArrayOf(rules, RuleJson);
  }
  Status DeleteRule(const std::string& id) override { return store_->DeleteRule(id); }
  Result<json> ListSpokes() override {
    return FailedPrecondition("spokes attach to a running hub: ask it with --server URL");
  }
  Result<json> CacheStats() override {
    return FailedPrecondition("NeuralCache runs in a spoke: ask it with --server URL");
  }

 private:
  std::unique_ptr<auth::IdentityStore> store_;
};

Result<std::unique_ptr<Admin>> OpenLocalAdmin(const std::string& data_dir) {
  Result<std::unique_ptr<auth::IdentityStore>> store = server::OpenIdentityStore(data_dir);
  if (!store.ok() && store.status().code() == StatusCode::kUnavailable) {
    return Unavailable(data_dir +
                       " is in use by another weft process (a running hub?); manage users, "
                       "keys and rules through the hub with --server URL");
  }
  if (!store.ok()) return store.status().WithContext("opening " + data_dir);
  return std::unique_ptr<Admin>(std::make_unique<LocalAdmin>(std::move(*store)));
}

// Path segments are percent-encoded, so any name reaches the hub as one segment.
std::string Segment(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

StatusCode CodeForHttpStatus(int http_status) {
  switch (http_status) {
    case 401:
    case 403:
      return StatusCode::kPermissionDenied;
    case 404:
      return StatusCode::kNotFound;
    case 409:
      return StatusCode::kFailedPrecondition;
    default:
      return http_status >= 500 ? StatusCode::kUnavailable : StatusCode::kInvalidArgument;
  }
}

// A hub's REST API. Its errors become Statuses whose message is "<the hub's code>: <its
// message>", so they print just as the hub sent them.
class RemoteAdmin : public Admin {
 public:
  // Signs in with the access key from the environment and keeps the bearer token.
  static Result<std::unique_ptr<Admin>> Open(const AdminTarget& target) {
    const char* id_var = "WEFT_ACCESS_KEY";
    const char* secret_var = "WEFT_SECRET_KEY";
    if (std::getenv(id_var) == nullptr && std::getenv(secret_var) == nullptr) {
      id_var = "WEFT_ROOT_ACCESS_KEY";
      secret_var = "WEFT_ROOT_SECRET_KEY";
    }
    const char* id = std::getenv(id_var);
    const char* secret = std::getenv(secret_var);
    if (id == nullptr || secret == nullptr) {
      return InvalidArgument(
          "--server needs an access key: set WEFT_ACCESS_KEY and WEFT_SECRET_KEY (or "
          "WEFT_ROOT_ACCESS_KEY and WEFT_ROOT_SECRET_KEY)");
    }
    net::HttpClientOptions options;
    options.ca_file = target.ca_file;
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<net::HttpClient> client,
                          net::HttpClient::Open(target.server, options));
    auto admin = std::make_unique<RemoteAdmin>(std::move(client));
    Result<json> reply = admin->Call(
        "POST", "tokens",
        {{"access_key_id", id}, {"secret_access_key", secret}, {"ttl_seconds", kTokenTtlSeconds}},
        /*authenticated=*/false);
    if (!reply.ok() && reply.status().code() == StatusCode::kPermissionDenied) {
      return Status(reply.status().code(), reply.status().message() + " (signing in with key " +
                                               id + " from " + id_var + ")");
    }
    if (!reply.ok()) return reply.status();
    if (!reply->contains("token") || !(*reply)["token"].is_string()) {
      return admin->Malformed();
    }
    admin->token_ = (*reply)["token"].get<std::string>();
    return std::unique_ptr<Admin>(std::move(admin));
  }

  explicit RemoteAdmin(std::unique_ptr<net::HttpClient> client) : client_(std::move(client)) {}

  Result<json> CreateUser(const std::string& name,
                          const std::vector<std::string>& groups) override {
    return Call("POST", "users", {{"name", name}, {"groups", groups}});
  }
  Result<json> ListUsers() override { return ListCall("users", "users"); }
  Result<json> GetUser(const std::string& name) override {
    return Call("GET", "users/" + Segment(name));
  }
  Result<json> SetGroups(const std::string& name, const std::vector<std::string>& groups) override {
    return Call("PUT", "users/" + Segment(name) + "/groups", {{"groups", groups}});
  }
  Status DeleteUser(const std::string& name) override {
    return Call("DELETE", "users/" + Segment(name)).status();
  }
  Result<json> CreateKey(const std::string& user) override {
    return Call("POST", "users/" + Segment(user) + "/keys", json::object());
  }
  Result<json> ListKeys(const std::string& user) override {
    return ListCall("users/" + Segment(user) + "/keys", "keys");
  }
  Result<json> RotateKey(const std::string& user, int64_t overlap_seconds) override {
    return Call("POST", "users/" + Segment(user) + "/keys/rotate",
                {{"overlap_seconds", overlap_seconds}});
  }
  Status DeleteKey(const std::string& access_key_id) override {
    return Call("DELETE", "keys/" + Segment(access_key_id)).status();
  }
  Result<json> AddRule(const std::string& subject, const std::string& prefix,
                       const std::string& permissions) override {
    return Call("POST", "rules",
                {{"subject", subject}, {"prefix", prefix}, {"permissions", permissions}});
  }
  Result<json> ListRules() override { return ListCall("rules", "rules"); }
  Status DeleteRule(const std::string& id) override {
    return Call("DELETE", "rules/" + Segment(id)).status();
  }
  Result<json> ListSpokes() override { return ListCall("spokes", "spokes"); }
  Result<json> CacheStats() override { return Call("GET", "cache"); }

 private:
  // One request to the API; `body` null sends none. A 204 gives null.
  Result<json> Call(std::string_view method, const std::string& path, const json& body = nullptr,
                    bool authenticated = true) {
    std::vector<net::HttpHeader> headers = {{"Accept", "application/json"}};
    if (authenticated) headers.push_back({"Authorization", "Bearer " + token_});
    std::string payload;
    if (!body.is_null()) {
      headers.push_back({"Content-Type", "application/json"});
      payload = Dump(body);
    }
    WEFT_ASSIGN_OR_RETURN(
        net::HttpResponse response,
        client_->Send(method, std::string(rest::kApiPrefix) + path, headers, payload));
    json reply = response.body.empty() ? json()
                                       : json::parse(response.body, nullptr,
                                                     /*allow_exceptions=*/false);
    if (response.status >= 200 && response.status < 300) {
      if (reply.is_discarded()) return Malformed();
      return reply;
    }
    const StatusCode code = CodeForHttpStatus(response.status);
    if (reply.is_object() && reply.contains("error") && reply["error"].is_string() &&
        reply.contains("message") && reply["message"].is_string()) {
      return Status(code,
                    reply["error"].get<std::string>() + ": " + reply["message"].get<std::string>());
    }
    return Status(code, "HTTP " + std::to_string(response.status) + " from " + client_->url() +
                            ", not a Weft API reply (is it a Weft hub?)");
  }

  // GET of a listing: the array in `field` of the reply.
  Result<json> ListCall(const std::string& path, const char* field) {
    WEFT_ASSIGN_OR_RETURN(json reply, Call("GET", path));
    if (!reply.is_object() || !reply.contains(field) || !reply[field].is_array()) {
      return Malformed();
    }
    return std::move(reply[field]);
  }

  Status Malformed() const {
    return Unavailable(client_->url() + " sent a reply that is not the Weft API's JSON");
  }

  std::unique_ptr<net::HttpClient> client_;
  std::string token_;
};

// Opens the back end, runs `fn`, and turns a failure into the one-line error and exit 1.
// Local errors print as "<code>: <message>"; a hub's already read that way.
int WithAdmin(CommandEnv& env, const AdminTarget& target, std::string_view what,
              const std::function<Status(Admin&)>& fn) {
  const bool remote = !target.server.empty();
  Result<std::unique_ptr<Admin>> admin =
      remote ? RemoteAdmin::Open(target) : OpenLocalAdmin(env.options().data_dir);
  Status status = admin.ok() ? fn(**admin) : admin.status();
  if (status.ok()) return kExitOk;
  std::fflush(env.out());
  std::string line =
      "weft: " + std::string(what) + ": " + (remote ? status.message() : status.ToString());
  std::replace(line.begin(), line.end(), '\n', ' ');  // one line, whatever the message holds
  PrintLine(env.err(), line);
  return kExitError;
}

// ---- Output --------------------------------------------------------------------------------

std::string Str(const json& object, const char* field) {
  if (!object.is_object() || !object.contains(field)) return "";
  const json& value = object[field];
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::string Groups(const json& user) {
  std::string out;
  if (user.is_object() && user.contains("groups") && user["groups"].is_array()) {
    for (const json& g : user["groups"]) {
      if (!out.empty()) out += ",";
      out += g.is_string() ? g.get<std::string>() : g.dump();
    }
  }
  return out.empty() ? "-" : out;
}

// Root exists from the start; its creation time is the epoch.
std::string Created(const json& object) {
  std::string created = Str(object, "created");
  return created.starts_with("1970-01-01T00:00:00") ? "-" : created;
}

// Columns as wide as their widest cell, two spaces apart; the last column is not padded.
void PrintTable(FILE* out, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    PrintLine(out, line);
  }
}

// A listing: the JSON array as is, or a table with a header row.
void PrintList(CommandEnv& env, const json& items, std::vector<std::string> header,
               const std::function<std::vector<std::string>(const json&)>& row) {
  if (env.options().json) {
    PrintLine(env.out(), Dump(items));
    return;
  }
  std::vector<std::vector<std::string>> rows = {std::move(header)};
  for (const json& item : items) rows.push_back(row(item));
  PrintTable(env.out(), rows);
}

std::vector<std::string> UserRow(const json& user) {
  return {Str(user, "name"), Groups(user), Created(user)};
}

void PrintUser(CommandEnv& env, const json& user, std::string_view verb) {
  if (env.options().json) {
    PrintLine(env.out(), Dump(user));
  } else if (!verb.empty()) {
    PrintLine(env.out(),
              std::string(verb) + " user " + Str(user, "name") + " (groups: " + Groups(user) + ")");
  } else {
    PrintTable(
        env.out(),
        {{"name:", Str(user, "name")}, {"groups:", Groups(user)}, {"created:", Created(user)}});
  }
}

}  // namespace

int RunUserCreate(CommandEnv& env, const AdminTarget& target, const std::string& name,
                  const std::vector<std::string>& groups) {
  return WithAdmin(env, target, "user create", [&](Admin& admin) -> Status {
    WEFT_ASSIGN_OR_RETURN(json user, admin.CreateUser(name, groups));
    PrintUser(env, user, "created");
    return OkStatus();
  });
}

int RunUserList(CommandEnv& env, const AdminTarget& target) {
  return WithAdmin(env, target, "user list", [&](Admin& admin) -> Status {
    WEFT_ASSIGN_OR_RETURN(json users, admin.ListUsers());
    PrintList(env, users, {"NAME", "GROUPS", "CREATED (UTC)"}, UserRow);
    return OkStatus();
  });
}

int RunUserShow(CommandEnv& env, const AdminTarget& target, const std::string& name) {
  return WithAdmin(env, target, "user show", [&](Admin& admin) -> Status {
    WEFT_ASSIGN_OR_RETURN(json user, admin.GetUser(name));
    PrintUser(env, user, "");
    return OkStatus();
  });
}

int RunUserDelete(CommandEnv& env, const AdminTarget& target, const std::string& name) {
  return WithAdmin(env, target, "user delete",
                   [&](Admin& admin) { return admin.DeleteUser(name); });
}

int RunUserGroups(CommandEnv& env, const AdminTarget& target, const std::string& name,
                  const std::vector<std::string>& groups) {
  return WithAdmin(env, target, "user groups", [&](Admin& admin) -> Status {
    WEFT_ASSIGN_OR_RETURN(json user, admin.SetGroups(name, groups));
    PrintUser(env, user, "updated");
    return OkStatus();
  });
}

// A new key as `weft key create` and `rotate` print it: the same form as the hub's generated
// root key, ready to paste into an environment.
void PrintNewKey(CommandEnv& env, const json& key, const std::string& what) {
  if (env.options().json) return PrintLine(env.out(), Dump(key));
  PrintLine(env.out(), what + " for user " + Str(key, "user") +
                           " (the secret is shown only now; keep it safe):");
  PrintLine(env.out(), "  WEFT_ACCESS_KEY=" + Str(key, "access_key_id"));
  PrintLine(env.out(), "  WEFT_SECRET_KEY=" + Str(key, "secret_access_key"));
}

int RunKeyCreate(CommandEnv& env, const AdminTarget& target, const std::string& user) {
  return WithAdmin(env, target, "key create", [&](Admin& admin) -> Status {
    WEFT_ASSIGN_OR_RETURN(json key, admin.CreateKey(user));
    PrintNewKey(env, key, "created an access key");
    return OkStatus();
  });
}

int RunKeyRotate(CommandEnv& env, const AdminTarget& target, const std::string& user,
                 const std::string& overlap) {
  return WithAdmin(env, target, "key rotate", [&](Admin& admin) -> Status {
    WEFT_ASSIGN_OR_RETURN(int64_t overlap_ns, ParseDuration(overlap));
    WEFT_ASSIGN_OR_RETURN(json key, admin.RotateKey(user, overlap_ns / 1'000'000'000));
    PrintNewKey(env, key, "rotated: a new access key");
    if (!env.options().json) {
      PrintLine(env.out(), overlap_ns < 1'000'000'000
                               ? "the user's other keys stopped working now"
                               : "the user's other keys stop working in " + overlap +
                                     " (weft key list " + user + " shows when)");
    }
    return OkStatus();
  });
}

int RunKeyList(CommandEnv& env, const AdminTarget& target, const std::string& user) {
  return WithAdmin(env, target, "key list", [&](Admin& admin) -> Status {
    WEFT_ASSIGN_OR_RETURN(json keys, admin.ListKeys(user));
    PrintList(env, keys, {"ACCESS KEY ID", "USER", "CREATED (UTC)", "EXPIRES (UTC)"},
              [](const json& key) {
                std::string expires = key.contains("expires") ? Str(key, "expires") : "never";
                return std::vector<std::string>{Str(key, "access_key_id"), Str(key, "user"),
                                                Created(key), expires};
              });
    return OkStatus();
  });
}

int RunKeyDelete(CommandEnv& env, const AdminTarget& target, const std::string& access_key_id) {
  return WithAdmin(env, target, "key delete",
                   [&](Admin& admin) { return admin.DeleteKey(access_key_id); });
}

int RunRuleAdd(CommandEnv& env, const AdminTarget& target, const std::string& subject,
               const std::string& prefix, const std::string& permissions) {
  return WithAdmin(env, target, "rule add", [&](Admin& admin) -> Status {
    WEFT_ASSIGN_OR_RETURN(json rule, admin.AddRule(subject, prefix, permissions));
    if (env.options().json) {
      PrintLine(env.out(), Dump(rule));
    } else {
      PrintLine(env.out(), "added rule " + Str(rule, "id") + ": " + Str(rule, "subject") + " may " +
                               Str(rule, "permissions") + " under " + Str(rule, "prefix"));
    }
    return OkStatus();
  });
}

int RunRuleList(CommandEnv& env, const AdminTarget& target) {
  return WithAdmin(env, target, "rule list", [&](Admin& admin) -> Status {
    WEFT_ASSIGN_OR_RETURN(json rules, admin.ListRules());
    PrintList(env, rules, {"ID", "SUBJECT", "PERMISSIONS", "PREFIX"}, [](const json& rule) {
      return std::vector<std::string>{Str(rule, "id"), Str(rule, "subject"),
                                      Str(rule, "permissions"), Str(rule, "prefix")};
    });
    return OkStatus();
  });
}

int RunSpokeList(CommandEnv& env, const AdminTarget& target) {
  return WithAdmin(env, target, "spokes", [&](Admin& admin) -> Status {
    WEFT_ASSIGN_OR_RETURN(json spokes, admin.ListSpokes());
    auto joined = [](const json& list) {
      std::string out;
      for (const json& v : list) out += (out.empty() ? "" : ",") + v.get<std::string>();
      return out.empty() ? std::string("-") : out;
    };
    PrintList(env, spokes, {"SITE", "TAGS", "PORTALS", "USER", "LEASES", "SENT", "RECEIVED", "ID"},
              [&](const json& s) {
                return std::vector<std::string>{Str(s, "site"),
                                                joined(s.value("tags", json::array())),
                                                joined(s.value("portals", json::array())),
                                                Str(s, "user"),
                                                std::to_string(s.value("leases", 0)),
                                                HumanBytes(s.value("bytes_sent", uint64_t{0})),
                                                HumanBytes(s.value("bytes_received", uint64_t{0})),
                                                Str(s, "spoke")};
              });
    return OkStatus();
  });
}

int RunRuleDelete(CommandEnv& env, const AdminTarget& target, const std::string& id) {
  return WithAdmin(env, target, "rule delete", [&](Admin& admin) { return admin.DeleteRule(id); });
}

int RunCacheStats(CommandEnv& env, const AdminTarget& target) {
  return WithAdmin(env, target, "cache stats", [&](Admin& admin) -> Status {
    WEFT_ASSIGN_OR_RETURN(json s, admin.CacheStats());
    if (env.options().json) {
      PrintLine(env.out(), Dump(s));
      return OkStatus();
    }
    auto num = [&](const json& j, const char* f) { return j.value(f, uint64_t{0}); };
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.1f %%", 100 * s.value("hit_ratio", 0.0));
    std::vector<std::vector<std::string>> rows = {
        {"policy", Str(s, "policy") + " " + Str(s, "policy_state")},
        {"kept", HumanBytes(num(s, "used_bytes")) + " of " +
                     (num(s, "capacity_bytes") ? HumanBytes(num(s, "capacity_bytes"))
                                               : std::string("unlimited")) +
                     " in " + std::to_string(num(s, "items")) + " items"},
        {"reads", std::to_string(num(s, "reads")) + " items, " + HumanBytes(num(s, "bytes_read"))},
        {"hits",
         std::to_string(num(s, "hits")) + " (" + ratio + "), " + HumanBytes(num(s, "bytes_hit"))}};
    const json p = s.value("prefetch", json());
    if (!p.is_object()) {
      rows.push_back({"prefetch", "off"});
      PrintTable(env.out(), rows);
      return OkStatus();
    }
    rows.push_back({"prefetched", HumanBytes(num(p, "bytes_prefetched")) + ", " +
                                      HumanBytes(num(p, "bytes_wasted")) + " of it unread, " +
                                      std::to_string(num(p, "late")) + " late"});
    rows.push_back({"budget", HumanBytes(num(p, "budget_bytes")) + " in flight at most" +
                                  (p.value("hints_override", false) ? " (hints override)" : "")});
    PrintTable(env.out(), rows);
    PrintLine(env.out(), "");
    std::vector<std::vector<std::string>> experts = {
        {"EXPERT", "WEIGHT", "PRECISION", "ISSUED", "USEFUL", "SHADOW", "STATE"}};
    for (const json& e : p.value("experts", json::array())) {
      char weight[16], precision[16];
      std::snprintf(weight, sizeof weight, "%.3f", e.value("weight", 0.0));
      std::snprintf(precision, sizeof precision, "%.2f", e.value("precision", 0.0));
      experts.push_back({Str(e, "name"), weight, precision, std::to_string(num(e, "issued")),
                         std::to_string(num(e, "useful")), std::to_string(num(e, "shadow")),
                         e.value("retired", false) ? "retired" : "active"});
    }
    PrintTable(env.out(), experts);
    return OkStatus();
  });
}

}  // namespace weft::cli
