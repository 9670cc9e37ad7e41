// PackChunkStore: the ChunkStore that appends chunks to pack files of 16-64 MiB, each sealed
// with an index file (docs/formats/pack.md, docs/formats/chunk-index.md), and serves lookups
// from an in-memory map. Every file operation goes through the injected FileSystem.
// Thread-safe: Puts and Flushes serialize on one mutex, Gets read in parallel outside it, and
// Sweep/Verify run one at a time beside them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "chunk/chunk_store.h"
#include "io/file_system.h"

namespace weft {

struct PackStoreOptions {
  // The active pack is sealed, and a new one started, once it holds this many bytes. Also the
  // most unsynced data the store keeps in memory. Allowed: 16-64 MiB.
  uint64_t target_pack_size = 32 << 20;
  // zstd level for chunks that compress; 1 keeps ingest fast.
  int zstd_level = 1;
  // When non-zero, replaces target_pack_size without its range check (at most 1 GiB), so tests
  // can seal packs after a few KiB.
  uint64_t target_pack_size_for_test = 0;
  // Chunk data is refused (ResourceExhausted, nothing written) when it would leave the disk
  // with less than this free, so the metadata store beside the packs always has room to
  // commit, delete and recover: a full disk never stops it (RocksDB aborts on some write
  // errors). Unset: 5 % of the disk, at least 4 MiB (a tenth of a disk under 40 MiB) and at
  // most 64 MiB. Compaction in Sweep may use three quarters of it: it frees more than it takes.
  std::optional<uint64_t> reserve_bytes;
};

// The reserve PackStoreOptions::reserve_bytes defaults to on a disk of `total` bytes.
uint64_t DefaultReserveBytes(uint64_t total);

// Opens the store in `dir`, creating the directory if needed. Loads every pack index; a pack
// without a valid index (the active pack when the process died) is scanned up to its first
// torn or invalid record and sealed with a rebuilt index. Problems found on the way (a corrupt
// index, an unreadable pack) do not fail the open; Verify() reports them. `fs` is not owned and
// must outlive the store. Chunks Put but not Flushed before the store is destroyed may be lost.
//
// Errors: a failed write or fsync (ResourceExhausted for a full disk) is returned by the Put or
// Flush that hit it, and loses nothing: chunks already accepted stay readable from memory and
// the next successful Flush makes them durable. A Put that returns an error may still have
// accepted its chunk (Contains() tells); a Put refused because the disk is full adds nothing.
Result<std::unique_ptr<ChunkStore>> OpenPackChunkStore(FileSystem* fs, const std::string& dir,
                                                       const PackStoreOptions& opts);

}  // namespace weft
