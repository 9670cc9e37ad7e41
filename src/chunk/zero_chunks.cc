#include "chunk/zero_chunks.h"

#include <array>
#include <bit>
#include <mutex>

namespace weft {
namespace {

// SHA-256 of 2^k zero bytes, k = 0..24 (zero_chunks_test checks each against ChunkId::Of).
constexpr std::array<const char*, kMaxZeroChunkLog2 + 1> kZeroIdsHex = {
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
    "df3f619804a92fdb4057192dc43dd748ea778adc52bc498ce80524c014b81119",
    "af5570f5a1810b7af78caf4bc70a660f0df51e42baf91d4de5b2328de0e83dfc",
    "374708fff7719dd5979ec875d56cd2286f6d3cf7ec317a3b25632aab28ec37bb",
    "66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925",
    "f5a5fd42d16a20302798ef6ed309979b43003d2320d9f0e8ea9831a92759fb4b",
    "38723a2e5e8a17aa7950dc008209944e898f69a7bd10a23c839d341e935fd5ca",
    "5341e6b2646979a70e57653007a1f310169421ec9bdd9f1a5648f75ade005af1",
    "076a27c79e5ace2a3d47f9dd2e83e4ff6ea8872b3c2218f66c92b89b55f36560",
    "5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef",
    "e5a00aa9991ac8a5ee3109844d84a55583bd20572ad3ffcd42792f3c36b183ad",
    "ad7facb2586fc6e966c004d7d1d16b024f5805ff7cb47c7a85dabd8b48892ca7",
    "9f1dcbc35c350d6027f98be0f5c8b43b42ca52b7604459c0c42be3aa88913d47",
    "4fe7b59af6de3b665b67788cc2f99892ab827efae3a467342b3bb4e3bc8e5bfe",
    "c35020473aed1b4642cd726cad727b63fff2824ad68cedd7ffb73c7cbd890479",
    "de2f256064a0af797747c2b97505dc0b9f3df0de4f489eac731c23ae9ca9cc31",
    "fa43239bcee7b97ca62f007cc68487560a39e19f74f3dde7486db3f98df8e471",
    "8a39d2abd3999ab73c34db2476849cddf303ce389b35826850f9a700589b4a90",
    "07854d2fef297a06ba81685e660c332de36d5d18d546927d30daad6d7fda1541",
    "30e14955ebf1352266dc2ff8067e68104607e750abb9d3b36582b8af909fcb58",
    "5647f05ec18958947d32874eeb788fa396a05d0bab7c1b71f112ceb7e9b31eee",
    "bb9f8df61474d25e71fa00722318cd387396ca1736605e1248821cc0de3d3af8",
    "2daeb1f36095b44b318410b3f4e8b5d989dcc7bb023d1426c492dab0a3053e74",
    "080acf35a507ac9849cfcba47dc2ad83e01b75663a516279c8b9d243b719643e",
};

struct ZeroIds {
  std::array<ChunkId, kMaxZeroChunkLog2 + 1> ids;
  ZeroIds() {
    for (size_t k = 0; k < ids.size(); ++k) ids[k] = *ChunkId::FromHex(kZeroIdsHex[k]);
  }
};

const ZeroIds& Ids() {
  static const ZeroIds ids;
  return ids;
}

}  // namespace

const ChunkId& ZeroChunkId(int log2) {
  return Ids().ids.at(static_cast<size_t>(log2));
}

std::optional<uint32_t> ZeroChunkLength(const ChunkId& id) {
  const auto& ids = Ids().ids;
  for (size_t k = 0; k < ids.size(); ++k) {
    if (ids[k] == id) return uint32_t{1} << k;
  }
  return std::nullopt;
}

void ForEachZeroChunk(uint64_t length, const std::function<void(const ChunkId&, uint32_t)>& fn) {
  for (; length >= kMaxZeroChunk; length -= kMaxZeroChunk) {
    fn(ZeroChunkId(kMaxZeroChunkLog2), kMaxZeroChunk);
  }
  for (int k = kMaxZeroChunkLog2 - 1; k >= 0; --k) {
    if (length & (uint64_t{1} << k)) fn(ZeroChunkId(k), uint32_t{1} << k);
  }
}

std::shared_ptr<const std::string> ZeroChunkBytes(uint32_t length) {
  static std::mutex mu;
  static std::array<std::shared_ptr<const std::string>, kMaxZeroChunkLog2 + 1> made;
  const int k = std::countr_zero(length);
  std::lock_guard lock(mu);
  std::shared_ptr<const std::string>& slot = made.at(static_cast<size_t>(k));
  if (!slot) slot = std::make_shared<const std::string>(length, '\0');
  return slot;
}

Result<bool> ZeroChunkStore::Put(const ChunkId& id, ByteSpan data) {
  if (ZeroChunkLength(id)) return false;
  return base_->Put(id, data);
}

bool ZeroChunkStore::Contains(const ChunkId& id) {
  return ZeroChunkLength(id).has_value() || base_->Contains(id);
}

Result<std::string> ZeroChunkStore::Get(const ChunkId& id) {
  if (auto n = ZeroChunkLength(id)) return std::string(*n, '\0');
  return base_->Get(id);
}

Result<std::shared_ptr<const std::string>> ZeroChunkStore::GetShared(const ChunkId& id) {
  if (auto n = ZeroChunkLength(id)) return ZeroChunkBytes(*n);
  return base_->GetShared(id);
}

Result<std::shared_ptr<const std::string>> ZeroChunkStore::GetSharedOnce(const ChunkId& id) {
  if (auto n = ZeroChunkLength(id)) return ZeroChunkBytes(*n);
  return base_->GetSharedOnce(id);
}

Result<std::vector<std::shared_ptr<const std::string>>> ZeroChunkStore::GetManyOnce(
    std::span<const ChunkId> ids) {
  std::vector<ChunkId> stored;
  for (const ChunkId& id : ids) {
    if (!ZeroChunkLength(id)) stored.push_back(id);
  }
  if (stored.size() == ids.size()) return base_->GetManyOnce(ids);
  std::vector<std::shared_ptr<const std::string>> from_base;
  if (!stored.empty()) {
    WEFT_ASSIGN_OR_RETURN(from_base, base_->GetManyOnce(stored));
  }
  std::vector<std::shared_ptr<const std::string>> out;
  out.reserve(ids.size());
  size_t next = 0;
  for (const ChunkId& id : ids) {
    auto n = ZeroChunkLength(id);
    out.push_back(n ? ZeroChunkBytes(*n) : std::move(from_base[next++]));
  }
  return out;
}

Status ZeroChunkStore::LendMany(std::span<const ChunkId> ids, const ChunkUser& use) {
  std::vector<ChunkId> stored;
  for (const ChunkId& id : ids) {
    if (!ZeroChunkLength(id)) stored.push_back(id);
  }
  if (stored.size() == ids.size()) return base_->LendMany(ids, use);
  // The zero buffers outlive the call; the base's views are merged in between them.
  auto merge = [&](std::span<const std::string_view> lent) -> Status {
    std::vector<std::shared_ptr<const std::string>> zeros;
    std::vector<std::string_view> views;
    views.reserve(ids.size());
    size_t next = 0;
    for (const ChunkId& id : ids) {
      if (auto n = ZeroChunkLength(id)) {
        zeros.push_back(ZeroChunkBytes(*n));
        views.emplace_back(*zeros.back());
      } else {
        views.push_back(lent[next++]);
      }
    }
    return use(views);
  };
  if (stored.empty()) return merge({});
  return base_->LendMany(stored, merge);
}

void ZeroChunkStore::WillNeed(std::span<const ChunkId> ids) {
  std::vector<ChunkId> stored;
  for (const ChunkId& id : ids) {
    if (!ZeroChunkLength(id)) stored.push_back(id);
  }
  if (!stored.empty()) base_->WillNeed(stored);
}

}  // namespace weft
