#include "base/hash.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>

namespace weft {
namespace {

// EVP calls on a valid context fail only when memory runs out; hashing has no error channel in
// this API, so such a failure is fatal rather than a silently wrong id.
void CheckEvp(int ok, const char* what) {
  if (ok != 1) {
    std::fprintf(stderr, "weft: OpenSSL %s failed\n", what);
    std::abort();
  }
}

// Fetched once: with OpenSSL 3 the legacy EVP_sha256() handle makes every init look the
// algorithm up in the provider again, which costs more than hashing a small chunk.
const EVP_MD* FetchedMd(const char* name, const EVP_MD* fallback) {
  EVP_MD* md = EVP_MD_fetch(nullptr, name, nullptr);
  return md != nullptr ? md : fallback;
}

const EVP_MD* Sha256Md() {
  static const EVP_MD* const md = FetchedMd("SHA256", EVP_sha256());
  return md;
}

const EVP_MD* Md5Md() {
  static const EVP_MD* const md = FetchedMd("MD5", EVP_md5());
  return md;
}

// OpenSSL 3's HMAC() looks both algorithms up by name on every call, which cost more than
// hashing SigV4's short inputs. Each thread keeps one context per digest, set up once, and
// re-keys it.
std::string Hmac(const char* digest_name, std::string_view key, std::string_view data) {
  struct FreeContext {
    void operator()(EVP_MAC_CTX* ctx) const { EVP_MAC_CTX_free(ctx); }
  };
  auto make = [](const char* name) {
    EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    CheckEvp(mac != nullptr, "HMAC fetch");
    EVP_MAC_CTX* c = EVP_MAC_CTX_new(mac);
    EVP_MAC_free(mac);  // the context holds its own reference
    std::string digest(name);
    const OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest.data(), 0),
        OSSL_PARAM_construct_end()};
    CheckEvp(c != nullptr && EVP_MAC_CTX_set_params(c, params) == 1, "HMAC setup");
    return std::unique_ptr<EVP_MAC_CTX, FreeContext>(c);
  };
  thread_local const std::unique_ptr<EVP_MAC_CTX, FreeContext> sha256 = make("SHA256");
  thread_local const std::unique_ptr<EVP_MAC_CTX, FreeContext> sha1 = make("SHA1");
  EVP_MAC_CTX* ctx = std::string_view(digest_name) == "SHA1" ? sha1.get() : sha256.get();
  unsigned char md[EVP_MAX_MD_SIZE];
  size_t len = 0;
  CheckEvp(EVP_MAC_init(ctx, reinterpret_cast<const unsigned char*>(key.data()), key.size(),
                        nullptr) == 1 &&
               EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(data.data()),
                              data.size()) == 1 &&
               EVP_MAC_final(ctx, md, &len, sizeof(md)) == 1,
           "HMAC");
  return std::string(reinterpret_cast<const char*>(md), len);
}

}  // namespace

std::string HmacSha256(std::string_view key, std::string_view data) {
  return Hmac("SHA256", key, data);
}

std::string HmacSha1(std::string_view key, std::string_view data) {
  return Hmac("SHA1", key, data);
}

void Sha256(ByteSpan data, uint8_t* out) {
  unsigned int len = 0;
  CheckEvp(EVP_Digest(data.data(), data.size(), out, &len, Sha256Md(), nullptr), "SHA-256");
}

struct Sha256Hasher::Ctx {
  EVP_MD_CTX* md = nullptr;
};

Sha256Hasher::Sha256Hasher() : ctx_(std::make_unique<Ctx>()) {
  ctx_->md = EVP_MD_CTX_new();
  CheckEvp(ctx_->md != nullptr, "EVP_MD_CTX_new");
  CheckEvp(EVP_DigestInit_ex(ctx_->md, Sha256Md(), nullptr), "SHA-256 init");
}

Sha256Hasher::~Sha256Hasher() {
  EVP_MD_CTX_free(ctx_->md);
}

void Sha256Hasher::Update(ByteSpan data) {
  CheckEvp(EVP_DigestUpdate(ctx_->md, data.data(), data.size()), "SHA-256 update");
}

std::array<uint8_t, 32> Sha256Hasher::Finish() {
  std::array<uint8_t, 32> out;
  unsigned int len = 0;
  CheckEvp(EVP_DigestFinal_ex(ctx_->md, out.data(), &len), "SHA-256 final");
  // Re-arm so the hasher can be reused for the next value.
  CheckEvp(EVP_DigestInit_ex(ctx_->md, Sha256Md(), nullptr), "SHA-256 init");
  return out;
}

struct Md5Hasher::Ctx {
  EVP_MD_CTX* md = nullptr;
};

Md5Hasher::Md5Hasher() : ctx_(std::make_unique<Ctx>()) {
  ctx_->md = EVP_MD_CTX_new();
  CheckEvp(ctx_->md != nullptr, "EVP_MD_CTX_new");
  CheckEvp(EVP_DigestInit_ex(ctx_->md, Md5Md(), nullptr), "MD5 init");
}

Md5Hasher::~Md5Hasher() {
  EVP_MD_CTX_free(ctx_->md);
}

void Md5Hasher::Update(ByteSpan data) {
  CheckEvp(EVP_DigestUpdate(ctx_->md, data.data(), data.size()), "MD5 update");
}

std::array<uint8_t, 16> Md5Hasher::Finish() {
  std::array<uint8_t, 16> out;
  unsigned int len = 0;
  CheckEvp(EVP_DigestFinal_ex(ctx_->md, out.data(), &len), "MD5 final");
  CheckEvp(EVP_DigestInit_ex(ctx_->md, Md5Md(), nullptr), "MD5 init");
  return out;
}

std::string Sha256Hex(ByteSpan data) {
  std::array<uint8_t, 32> digest;
  Sha256(data, digest.data());
  return ToHex(ByteSpan(digest));
}

std::string Md5Hex(ByteSpan data) {
  std::array<uint8_t, 16> digest;
  unsigned int len = 0;
  CheckEvp(EVP_Digest(data.data(), data.size(), digest.data(), &len, Md5Md(), nullptr), "MD5");
  return ToHex(ByteSpan(digest));
}

}  // namespace weft
