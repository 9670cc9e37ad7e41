// Fuzzes AwsChunkedDecoder (src/frontends/s3/aws_chunked.h), both forms, with raw body bytes
// and output buffers of varying sizes. Besides "never crash", it checks the decoder's promise:
// a body it reports as complete and verified is exactly what the client signed or checksummed.
//
// Input: a 7-byte header, then the payload (missing header bytes read as 0).
//   byte 0  bit 0: signed chunks (else unsigned + trailer); bit 1: framed, i.e. the payload is
//           the decoded data and the target frames it correctly (else the payload is the raw
//           body); bits 2-3: trailer checksum (crc32, crc32c, sha1, sha256); bit 4: corrupt the
//           framed body; bit 5: no trailer checksum (unsigned form)
//   byte 1  sizes of the raw reads the decoder gets (0: as much as it asks for)
//   byte 2  sizes of the output buffers passed to Read (0: 64 KiB)
//   byte 3-4  where to corrupt (little-endian, modulo the body size)
//   byte 5  the byte to XOR there; 0 truncates the body there instead
//   byte 6  chunk sizes when framing (0: one chunk)
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "auth/sigv4.h"
#include "frontends/s3/aws_chunked.h"
#include "fuzz_check.h"

namespace weft::s3 {
namespace {

// The chain of AWS's published aws-chunked example (its seed signature and key), so seed bodies
// can be checked against the documentation's chunk signatures.
constexpr std::string_view kAmzDate = "20130524T000000Z";
constexpr std::string_view kScope = "20130524/us-east-1/s3/aws4_request";
constexpr std::string_view kSeedSignature =
    "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
constexpr std::string_view kTrailers[] = {"x-amz-checksum-crc32", "x-amz-checksum-crc32c",
                                          "x-amz-checksum-sha1", "x-amz-checksum-sha256"};

// The verifier a request with kSeedSignature would start; encoder and decoder each get one.
sigv4::ChunkVerifier NewChain() {
  return sigv4::ChunkVerifier(
      sigv4::SigningKey("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "20130524", "us-east-1", "s3"),
      std::string(kAmzDate), std::string(kScope), std::string(kSeedSignature));
}

// A deterministic sequence of sizes in [1, max] from one input byte; 0 means "always `full`".
class Sizes {
 public:
  Sizes(uint8_t selector, size_t full) : max_(selector), full_(full), state_(selector) {}
  size_t Next() {
    if (max_ == 0) return full_;
    state_ = state_ * 1103515245u + 12345u;
    return 1 + (state_ >> 16) % max_;
  }

 private:
  size_t max_;
  size_t full_;
  uint32_t state_;
};

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

// The body a well-behaved client sends for `data`.
std::string Frame(std::string_view data, bool sign, const char* trailer, uint8_t chunk_selector) {
  sigv4::ChunkVerifier chain = NewChain();
  std::optional<TrailerChecksum> checksum;
  if (trailer != nullptr) checksum = TrailerChecksum::ForHeader(trailer);
  Sizes chunk_sizes(chunk_selector, std::max<size_t>(data.size(), 1));
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t n = std::min(chunk_sizes.Next() * 16, data.size() - pos);
    const std::string_view chunk = data.substr(pos, n);
    pos += n;
    out += Hex(n);
    if (sign) {
      const std::string hash = sigv4::Sha256Hex(chunk);
      const std::string signature = chain.Expected(hash);
      FUZZ_CHECK(chain.Verify(signature, hash).ok(), "the chain rejected its own signature");
      out += ";chunk-signature=" + signature;
    }
    out += "\r\n";
    if (n == 0) break;
    out += chunk;
    out += "\r\n";
    if (checksum) checksum->Update(chunk);
  }
  if (checksum) out += checksum->header() + ":" + checksum->Base64Value() + "\r\n";
  out += "\r\n";
  return out;
}

void FuzzOne(const uint8_t* data, size_t size) {
  uint8_t h[7] = {};
  if (size > 0) std::memcpy(h, data, std::min(size, sizeof h));
  const std::string_view payload =
      size > sizeof h
          ? std::string_view(reinterpret_cast<const char*>(data) + sizeof h, size - sizeof h)
          : std::string_view();
  const bool sign = h[0] & 1;
  const bool framed = h[0] & 2;
  const char* trailer = (sign || (h[0] & 32)) ? nullptr : kTrailers[(h[0] >> 2) & 3].data();
  const bool corrupt = framed && (h[0] & 16);

  std::string body;
  if (framed) {
    body = Frame(payload, sign, trailer, h[6]);
    if (corrupt && !body.empty()) {
      const size_t at = (h[3] | (size_t{h[4]} << 8)) % body.size();
      if (h[5] == 0) {
        body.resize(at);
      } else {
        body[at] = static_cast<char>(body[at] ^ h[5]);
      }
    }
  } else {
    body = std::string(payload);
  }

  Sizes raw_sizes(h[1], 0);
  size_t raw_pos = 0;
  auto raw = [&](std::span<char> out) -> Result<size_t> {
    const size_t want = raw_sizes.Next();
    const size_t n = std::min({want == 0 ? out.size() : want, out.size(), body.size() - raw_pos});
    std::memcpy(out.data(), body.data() + raw_pos, n);
    raw_pos += n;
    return n;
  };
  sigv4::ChunkVerifier chain = NewChain();
  std::optional<AwsChunkedDecoder> decoder;
  if (sign) {
    decoder.emplace(raw, &chain);
  } else {
    std::optional<TrailerChecksum> checksum;
    if (trailer != nullptr) checksum = TrailerChecksum::ForHeader(trailer);
    decoder.emplace(raw, std::move(checksum));
  }

  Sizes out_sizes(h[2], 64 << 10);
  std::string decoded;
  std::string buffer(64 << 10, '\0');
  bool complete = false;
  while (true) {
    const size_t want = out_sizes.Next();
    Result<size_t> n = decoder->Read(std::span<char>(buffer.data(), want));
    if (!n.ok()) break;
    FUZZ_CHECK(*n <= want, "Read returned %zu bytes for a %zu-byte buffer", *n, want);
    if (*n == 0) {
      complete = true;
      break;
    }
    decoded.append(buffer.data(), *n);
    FUZZ_CHECK(decoded.size() <= body.size(), "decoded more bytes than the body holds");
  }
  if (complete) {
    Result<size_t> again = decoder->Read(std::span<char>(buffer.data(), 1));
    FUZZ_CHECK(again.ok() && *again == 0, "Read after the end returned data or an error");
  }
  if (framed && !corrupt) {
    FUZZ_CHECK(complete, "a well-formed aws-chunked body was rejected");
  }
  // Signatures and checksums make any accepted body the one the client sent.
  if (framed && complete && (!corrupt || sign || trailer != nullptr)) {
    FUZZ_CHECK(decoded == payload,
               "an accepted body differs from the one signed (%zu vs %zu bytes)", decoded.size(),
               payload.size());
  }
}

}  // namespace
}  // namespace weft::s3

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  weft::s3::FuzzOne(data, size);
  return 0;
}
