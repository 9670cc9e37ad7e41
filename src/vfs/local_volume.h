// LocalVolume: the hub's Volume, storing file content as chunks in a ChunkStore and the
// namespace as MVCC records in a KvStore (key layout: docs/formats/metadata.md).
// Thread-safe: reads run concurrently; mutations serialise on one commit lock, while chunking,
// hashing and chunk writes of FileWriters run outside it.
#pragma once

#include <memory>
#include <string>

#include "base/clock.h"
#include "chunk/chunk_store.h"
#include "chunk/splitter.h"
#include "io/file_system.h"
#include "meta/kv_store.h"
#include "vfs/volume.h"

namespace weft {

struct LocalVolumeOptions {
  ChunkerOptions chunker;
  Clock* clock = SystemClock::Default();
  // OpenLocalVolume only: memory for recently read, verified chunks (0 disables).
  uint64_t chunk_cache_bytes = 256ull << 20;
  // OpenLocalVolume only: memory for the metadata store's caches (RocksKvStoreOptions).
  uint64_t metadata_cache_bytes = 80ull << 20;
};

// Builds a LocalVolume over stores the caller made (tests use the in-memory fakes).
Result<std::unique_ptr<Volume>> NewLocalVolume(std::shared_ptr<KvStore> kv,
                                               std::shared_ptr<ChunkStore> chunks,
                                               const LocalVolumeOptions& options = {});

// Opens (creating if missing) the on-disk volume in `data_dir`: RocksDB metadata in
// data_dir/meta, pack files in data_dir/packs. Fails with a clear error if another process
// holds the directory.
Result<std::unique_ptr<Volume>> OpenLocalVolume(const std::string& data_dir,
                                                const LocalVolumeOptions& options = {});

}  // namespace weft
