// The `weft user|key|rule` commands: users, access keys and access rules, managed either in
// the identity store of the --data directory (while no hub holds it) or through a running
// hub's REST API (--server URL, signing in with WEFT_ACCESS_KEY/WEFT_SECRET_KEY or root's
// WEFT_ROOT_* pair). Output and --json objects are the same both ways (docs/rest-api.md field
// names). Exit codes as in commands.h. Not thread-safe: one command per process.
#pragma once

#include <string>
#include <vector>

#include "cli/commands.h"

namespace weft::cli {

// Where the admin commands act.
struct AdminTarget {
  std::string server;   // hub URL ("https://hub:9000"); empty = the data directory itself
  std::string ca_file;  // PEM CA certificates for an https:// server with a private CA
};

int RunUserCreate(CommandEnv& env, const AdminTarget& target, const std::string& name,
                  const std::vector<std::string>& groups);
int RunUserList(CommandEnv& env, const AdminTarget& target);
int RunUserShow(CommandEnv& env, const AdminTarget& target, const std::string& name);
int RunUserDelete(CommandEnv& env, const AdminTarget& target, const std::string& name);
// Replaces the user's groups (none given: no groups).
int RunUserGroups(CommandEnv& env, const AdminTarget& target, const std::string& name,
                  const std::vector<std::string>& groups);

// Prints the new key's secret, the only time it can be seen.
int RunKeyCreate(CommandEnv& env, const AdminTarget& target, const std::string& user);
int RunKeyList(CommandEnv& env, const AdminTarget& target, const std::string& user);
// `overlap`: a duration ("24h"; "0" stops the old keys at once).
int RunKeyRotate(CommandEnv& env, const AdminTarget& target, const std::string& user,
                 const std::string& overlap);
int RunKeyDelete(CommandEnv& env, const AdminTarget& target, const std::string& access_key_id);

// `permissions` is a comma-separated subset of read,write,list,admin.
int RunRuleAdd(CommandEnv& env, const AdminTarget& target, const std::string& subject,
               const std::string& prefix, const std::string& permissions);
int RunRuleList(CommandEnv& env, const AdminTarget& target);
int RunRuleDelete(CommandEnv& env, const AdminTarget& target, const std::string& id);

// The spokes attached to the hub at target.server (site, tags, portals, leases, bytes).
int RunSpokeList(CommandEnv& env, const AdminTarget& target);

// The NeuralCache of the spoke at target.server: policy, hits, prefetching and its experts.
int RunCacheStats(CommandEnv& env, const AdminTarget& target);

}  // namespace weft::cli
