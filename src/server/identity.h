// Opens a data directory's identity store the one way both the hub and the `weft user|key|rule`
// commands use: the server key in DIR/server.key (created on first use) and the RocksDB
// store in DIR/identity. Only one process can hold the store open at a time.
// Thread-safe (the returned store is).
#pragma once

#include <memory>
#include <string>

#include "auth/identity_store.h"
#include "base/status.h"

namespace weft::server {

// Creates `data_dir` if it is missing. Unavailable when another process (a running hub) holds
// the store.
Result<std::unique_ptr<auth::IdentityStore>> OpenIdentityStore(const std::string& data_dir);

}  // namespace weft::server
