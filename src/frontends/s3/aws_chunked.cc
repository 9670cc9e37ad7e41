#include "frontends/s3/aws_chunked.h"

#include <openssl/evp.h>
#include <zlib.h>

#include <array>
#include <cstring>

#include "base/ascii.h"
#include "base/bytes.h"

namespace weft::s3 {
namespace {

constexpr size_t kMaxLine = 4096;
constexpr size_t kMaxTrailerBytes = 16 << 10;

Status Incomplete(std::string why) {
  return InvalidArgument(Reason::kIncompleteBody, why);
}

// CRC-32C (Castagnoli), reflected, as S3's x-amz-checksum-crc32c.
uint32_t Crc32c(uint32_t crc, const uint8_t* p, size_t n) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0x82F63B78u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

std::string BigEndian32(uint32_t v) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[static_cast<size_t>(i)] = static_cast<char>(v >> (24 - 8 * i));
  return out;
}

}  // namespace

// ---- TrailerChecksum ---------------------------------------------------------------------------

struct TrailerChecksum::State {
  enum Kind { kCrc32, kCrc32c, kDigest } kind = kCrc32;
  uint32_t crc = 0;
  EVP_MD_CTX* md = nullptr;
  ~State() {
    if (md != nullptr) EVP_MD_CTX_free(md);
  }
};

TrailerChecksum::TrailerChecksum(std::string header, std::unique_ptr<State> state)
    : header_(std::move(header)), state_(std::move(state)) {}
TrailerChecksum::TrailerChecksum(TrailerChecksum&&) noexcept = default;
TrailerChecksum& TrailerChecksum::operator=(TrailerChecksum&&) noexcept = default;
TrailerChecksum::~TrailerChecksum() = default;

std::optional<TrailerChecksum> TrailerChecksum::ForHeader(std::string_view name) {
  auto state = std::make_unique<State>();
  const EVP_MD* md = nullptr;
  if (name == "x-amz-checksum-crc32") {
    state->kind = State::kCrc32;
  } else if (name == "x-amz-checksum-crc32c") {
    state->kind = State::kCrc32c;
  } else if (name == "x-amz-checksum-sha1") {
    md = EVP_sha1();
  } else if (name == "x-amz-checksum-sha256") {
    md = EVP_sha256();
  } else {
    return std::nullopt;
  }
  if (md != nullptr) {
    state->kind = State::kDigest;
    state->md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(state->md, md, nullptr);
  }
  return TrailerChecksum(std::string(name), std::move(state));
}

void TrailerChecksum::Update(std::string_view data) {
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  switch (state_->kind) {
    case State::kCrc32:
      state_->crc = static_cast<uint32_t>(crc32(state_->crc, p, static_cast<uInt>(data.size())));
      break;
    case State::kCrc32c:
      state_->crc = Crc32c(state_->crc, p, data.size());
      break;
    case State::kDigest:
      EVP_DigestUpdate(state_->md, p, data.size());
      break;
  }
}

std::string TrailerChecksum::Base64Value() {
  if (state_->kind != State::kDigest) return Base64Encode(BigEndian32(state_->crc));
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(state_->md, digest, &n);
  return Base64Encode(std::string_view(reinterpret_cast<const char*>(digest), n));
}

// ---- AwsChunkedDecoder -------------------------------------------------------------------------

AwsChunkedDecoder::AwsChunkedDecoder(RawRead raw, sigv4::ChunkVerifier* chain)
    : raw_(std::move(raw)), chain_(chain) {}

AwsChunkedDecoder::AwsChunkedDecoder(RawRead raw, std::optional<TrailerChecksum> checksum)
    : raw_(std::move(raw)), checksum_(std::move(checksum)) {}

Result<bool> AwsChunkedDecoder::Fill() {
  if (pos_ > (1 << 20) || pos_ == buffer_.size()) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
  char piece[64 << 10];
  WEFT_ASSIGN_OR_RETURN(size_t got, raw_(std::span<char>(piece, sizeof piece)));
  if (got == 0) return false;
  buffer_.append(piece, got);
  return true;
}

Result<std::string> AwsChunkedDecoder::ReadLine() {
  while (true) {
    size_t end = buffer_.find("\r\n", pos_);
    if (end != std::string::npos) {
      std::string line = buffer_.substr(pos_, end - pos_);
      pos_ = end + 2;
      return line;
    }
    if (buffer_.size() - pos_ > kMaxLine) return Incomplete("an aws-chunked line is too long");
    WEFT_ASSIGN_OR_RETURN(bool more, Fill());
    if (!more) return Incomplete("the aws-chunked body ends in the middle of a line");
  }
}

Status AwsChunkedDecoder::EndChunk() {
  if (chain_ != nullptr) {
    WEFT_RETURN_IF_ERROR(chain_->Verify(chunk_signature_, ToHex(chunk_sha256_->Finish())));
  }
  in_chunk_ = false;
  return OkStatus();
}

Status AwsChunkedDecoder::ReadTrailers() {
  size_t total = 0;
  std::optional<std::string> sent;
  while (true) {
    WEFT_ASSIGN_OR_RETURN(std::string line, ReadLine());
    if (line.empty()) break;
    total += line.size();
    if (total > kMaxTrailerBytes) return Incomplete("the aws-chunked trailers are too long");
    size_t colon = line.find(':');
    if (colon == std::string::npos) return Incomplete("a malformed aws-chunked trailer");
    std::string name = AsciiLower(std::string_view(line).substr(0, colon));
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    if (checksum_ && name == checksum_->header()) sent = value;
  }
  if (checksum_) {
    if (!sent)
      return InvalidArgument(Reason::kInvalidRequest,
                             "the " + checksum_->header() + " trailer is missing");
    if (*sent != checksum_->Base64Value()) {
      return InvalidArgument(
          Reason::kBadDigest,
          "the " + checksum_->header() + " you specified did not match the calculated checksum");
    }
  }
  return OkStatus();
}

Result<size_t> AwsChunkedDecoder::Read(std::span<char> out) {
  while (!done_) {
    if (in_chunk_ && chunk_left_ > 0) {
      if (pos_ == buffer_.size()) {
        WEFT_ASSIGN_OR_RETURN(bool more, Fill());
        if (!more) return Incomplete("the aws-chunked body ends inside a chunk");
      }
      size_t n = std::min<uint64_t>({out.size(), chunk_left_, buffer_.size() - pos_});
      std::memcpy(out.data(), buffer_.data() + pos_, n);
      pos_ += n;
      chunk_left_ -= n;
      std::string_view data(out.data(), n);
      if (chunk_sha256_) chunk_sha256_->Update(AsBytes(data));
      if (checksum_) checksum_->Update(data);
      return n;
    }
    if (in_chunk_) {
      // The chunk's data ends with CRLF.
      WEFT_ASSIGN_OR_RETURN(std::string rest, ReadLine());
      if (!rest.empty()) return Incomplete("aws-chunked data is longer than its chunk header");
      WEFT_RETURN_IF_ERROR(EndChunk());
      continue;
    }
    // A chunk header.
    uint64_t size = 0;
    if (chain_ != nullptr) {
      std::optional<sigv4::ChunkHeader> header;
      while (true) {
        auto parsed = sigv4::ParseChunkHeader(std::string_view(buffer_).substr(pos_));
        if (!parsed.ok()) return Incomplete(parsed.status().message());
        if (parsed->has_value()) {
          header = **parsed;
          break;
        }
        WEFT_ASSIGN_OR_RETURN(bool more, Fill());
        if (!more) return Incomplete("the aws-chunked body ends early");
      }
      pos_ += header->header_bytes;
      size = header->size;
      chunk_signature_ = header->signature;
      chunk_sha256_ = std::make_unique<Sha256Hasher>();
    } else {
      WEFT_ASSIGN_OR_RETURN(std::string line, ReadLine());
      std::string_view hex = std::string_view(line).substr(0, line.find(';'));
      if (hex.empty() || hex.size() > 15) return Incomplete("a malformed aws-chunked size");
      for (char c : hex) {
        int v = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                            : -1;
        if (v < 0) return Incomplete("a malformed aws-chunked size");
        size = size * 16 + static_cast<uint64_t>(v);
      }
      if (size > sigv4::kMaxChunkBytes) return Incomplete("an aws-chunked chunk is too large");
    }
    in_chunk_ = true;
    chunk_left_ = size;
    if (size == 0) {
      // The last chunk: its signature (signed form), then trailers or a final CRLF.
      if (chain_ != nullptr) {
        WEFT_RETURN_IF_ERROR(EndChunk());
        if (buffer_.size() - pos_ < 2) (void)Fill();
        if (buffer_.compare(pos_, 2, "\r\n") == 0) pos_ += 2;
      } else {
        in_chunk_ = false;
        WEFT_RETURN_IF_ERROR(ReadTrailers());
      }
      done_ = true;
    }
  }
  return size_t{0};
}

}  // namespace weft::s3
