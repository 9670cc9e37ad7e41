// The REST API's JSON objects (docs/rest-api.md). Shared with `weft user|key|rule` so the CLI
// prints the same objects whether it asked a hub or opened the identity store itself. Pure.
#pragma once

#include <nlohmann/json.hpp>

#include "auth/identity_store.h"
#include "vfs/volume.h"

namespace weft::rest {

// Field order is part of the output people read, so objects keep insertion order.
using json = nlohmann::ordered_json;

json UserJson(const auth::User& user);
json KeyJson(const auth::AccessKey& key);  // never the secret
json RuleJson(const auth::Rule& rule);
json SnapshotJson(const SnapshotInfo& snap);
json FileInfoJson(const FileInfo& info);

}  // namespace weft::rest
