#include "server/identity.h"

#include "io/file_system.h"
#include "meta/kv_store.h"

namespace weft::server {

Result<std::unique_ptr<auth::IdentityStore>> OpenIdentityStore(const std::string& data_dir) {
  FileSystem* fs = PosixFileSystem();
  WEFT_RETURN_IF_ERROR(fs->CreateDirs(data_dir));
  WEFT_ASSIGN_OR_RETURN(std::string server_key,
                        auth::LoadOrCreateServerKey(*fs, data_dir + "/server.key"));
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<KvStore> kv, OpenRocksKvStore(data_dir + "/identity"));
  return auth::IdentityStore::Open(std::move(kv), std::move(server_key));
}

}  // namespace weft::server
