// AwsChunkedDecoder: removes S3's aws-chunked framing from a request body. Two forms:
// STREAMING-AWS4-HMAC-SHA256-PAYLOAD ("<hex>;chunk-signature=<sig>" per chunk, each signature
// chained to the one before) and STREAMING-UNSIGNED-PAYLOAD-TRAILER ("<hex>" per chunk, then
// trailer headers carrying a checksum of the whole payload, which current AWS SDKs send by
// default). Every signature and the trailer checksum are verified before the end is reported.
// One request's thread only.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "auth/sigv4.h"
#include "base/hash.h"
#include "base/status.h"

namespace weft::s3 {

// A checksum of the whole payload named by x-amz-trailer (x-amz-checksum-crc32, -crc32c,
// -sha1, -sha256), compared with the trailer's base64 value at the end.
class TrailerChecksum {
 public:
  // nullopt for an algorithm Weft does not know.
  static std::optional<TrailerChecksum> ForHeader(std::string_view trailer_name);
  TrailerChecksum(TrailerChecksum&&) noexcept;
  TrailerChecksum& operator=(TrailerChecksum&&) noexcept;
  ~TrailerChecksum();
  void Update(std::string_view data);
  std::string Base64Value();  // once, at the end
  const std::string& header() const { return header_; }

 private:
  struct State;
  TrailerChecksum(std::string header, std::unique_ptr<State> state);
  std::string header_;
  std::unique_ptr<State> state_;
};

class AwsChunkedDecoder {
 public:
  // Pulls raw body bytes: returns 0 at the end of the body.
  using RawRead = std::function<Result<size_t>(std::span<char>)>;

  // Signed chunks: `chain` checks each chunk signature (owned by the caller).
  AwsChunkedDecoder(RawRead raw, sigv4::ChunkVerifier* chain);
  // Unsigned chunks followed by trailers; `checksum` verifies the trailer it names.
  AwsChunkedDecoder(RawRead raw, std::optional<TrailerChecksum> checksum);

  // Decoded bytes, up to out.size(); 0 at the verified end.
  Result<size_t> Read(std::span<char> out);

 private:
  Result<bool> Fill();
  Result<std::string> ReadLine();
  Status EndChunk();
  Status ReadTrailers();

  RawRead raw_;
  sigv4::ChunkVerifier* chain_ = nullptr;  // signed form only
  std::optional<TrailerChecksum> checksum_;
  std::string buffer_;
  size_t pos_ = 0;
  uint64_t chunk_left_ = 0;
  bool in_chunk_ = false;
  bool done_ = false;
  std::string chunk_signature_;
  std::unique_ptr<Sha256Hasher> chunk_sha256_;  // signed form: the current chunk's hash
};

}  // namespace weft::s3
