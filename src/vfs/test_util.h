// Helpers shared by the vfs tests: deterministic bytes and whole-file write/read shortcuts.
#pragma once

#include <random>
#include <string>

#include "vfs/volume.h"

namespace weft::testutil {

inline std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

inline Result<FileInfo> WriteFile(Volume* v, const std::string& path, const std::string& data,
                                  WriteOptions opts = {}, size_t piece = 10000) {
  RequestContext ctx;
  WEFT_ASSIGN_OR_RETURN(auto w, v->OpenWriter(ctx, path, opts));
  for (size_t off = 0; off < data.size(); off += piece) {
    WEFT_RETURN_IF_ERROR(w->Write(AsBytes(std::string_view(data).substr(off, piece))));
  }
  return w->Commit();
}

inline Result<std::string> ReadFile(Volume* v, const std::string& path, ReadOptions opts = {}) {
  RequestContext ctx;
  WEFT_ASSIGN_OR_RETURN(auto r, v->OpenReader(ctx, path, opts));
  return r->ReadAt(0, r->info().size);
}

}  // namespace weft::testutil
