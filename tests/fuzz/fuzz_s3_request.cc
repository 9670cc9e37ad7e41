// Fuzzes the S3 front end end to end (S3Frontend::Handle) on in-memory fakes: a LocalVolume over
// MemKvStore + MemChunkStore, an IdentityStore over MemKvStore, in-memory HTTP bodies. The
// target signs requests itself when asked, so the handlers behind authentication are fuzzed
// too, and checks after every request that
//   - the handler answered once, with a well-framed response and valid headers, never 500;
//   - every change it made is one its principal may make (IdentityStore::Authorize), so no
//     handler can be reached around the one authorisation path.
//
// Input: up to kMaxRequests requests separated by a line "~~~". Each request is
//   <mode><METHOD> <target>\n<Name>: <value>\n...\n\n<body>
// where <mode> is one character: 'A' anonymous; header-signed with 'S' the body's SHA-256,
// 'U' UNSIGNED-PAYLOAD, 'C' aws-chunked signed chunks, 'T' aws-chunked + crc32 trailer; 'P'
// presigned URL. Upper case signs as root, lower case as alice, who may write only under
// /pub/alice/ and read /pub/; anyone may read /pub/public/. Any other character: the line is
// the request line, anonymous. The target frames C and T bodies itself (chunk size from an
// "x-fuzz-chunk: N" header, default 1000) and replaces "@UPLOAD@" in the target and header values
// with the last UploadId returned and "@VERSION@" with the last x-amz-version-id. Each input starts
// from an empty volume holding bucket "pub", so a crash reproduces from its input alone. A request
// the HTTP server's parser would refuse (control characters, bad tokens) is skipped.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "auth/identity_store.h"
#include "auth/sigv4.h"
#include "base/ascii.h"
#include "base/clock.h"
#include "chunk/mem_chunk_store.h"
#include "frontends/s3/aws_chunked.h"
#include "frontends/s3/request.h"
#include "frontends/s3/s3_frontend.h"
#include "fuzz_check.h"
#include "meta/kv_store.h"
#include "net/http_server.h"
#include "vfs/local_volume.h"

namespace weft::s3 {
namespace {

constexpr int64_t kNow = 1'780'000'000;  // seconds; 2026-05-28
constexpr size_t kMaxRequests = 12;
constexpr std::string_view kSeparator = "\n~~~\n";
constexpr std::string_view kRegion = "us-east-1";

struct Principal {
  std::string_view user;
  std::string_view access_key;
  std::string_view secret;
};
constexpr Principal kRoot = {"root", "ROOTACCESSKEY0000000", "rootsecret"};
constexpr Principal kAlice = {"alice", "ALICEACCESSKEY000000", "alicesecret"};

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Serves `data`, then either ends or, like a peer that hung up early, fails once
// `declared_length` is not reached; reads stop at the declared length like the real server's.
class StringBody : public net::BodyReader {
 public:
  StringBody(std::string data, std::optional<uint64_t> declared_length)
      : data_(std::move(data)), limit_(declared_length.value_or(UINT64_MAX)) {}
  Result<size_t> Read(std::span<char> out) override {
    const uint64_t left = std::min<uint64_t>(limit_, data_.size()) - pos_;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), left));
    if (n == 0 && !out.empty() && pos_ < limit_ && limit_ != UINT64_MAX) {
      return InvalidArgument(Reason::kIncompleteBody, "the peer stopped sending");
    }
    std::memcpy(out.data(), data_.data() + pos_, n);
    pos_ += n;
    return n;
  }
  uint64_t bytes_read() const override { return pos_; }

 private:
  std::string data_;
  uint64_t limit_;
  uint64_t pos_ = 0;
};

// Holds the response and enforces what the real ResponseWriter enforces (http_server.cc); a
// handler that breaks a rule would send a broken or missing response to a real client.
class CheckedResponse : public net::ResponseWriter {
 public:
  explicit CheckedResponse(bool head_request) : head_request_(head_request) {}

  Status Start(int status, const std::vector<net::HttpHeader>& headers,
               std::optional<uint64_t> content_length) override {
    FUZZ_CHECK(!started_, "the response was started twice");
    FUZZ_CHECK(status >= 200 && status <= 999, "invalid response status %d", status);
    for (const net::HttpHeader& h : headers) {
      FUZZ_CHECK(ValidHeader(h), "invalid response header '%s: %s'", h.name.c_str(),
                 h.value.c_str());
      if (AsciiLower(h.name) == "x-amz-version-id") version_id = h.value;
    }
    started_ = true;
    status_ = status;
    no_body_ = head_request_ || status == 204 || status == 304;
    length_ = content_length;
    return OkStatus();
  }
  using net::ResponseWriter::Write;
  Status Write(std::span<const std::string_view> pieces) override {
    FUZZ_CHECK(started_ && !finished_, "Write outside Start..Finish");
    for (std::string_view piece : pieces) {
      FUZZ_CHECK(!length_ || piece.size() <= *length_ - body.size(),
                 "the body is longer than its Content-Length %llu",
                 static_cast<unsigned long long>(*length_));
      body += piece;
    }
    return OkStatus();
  }
  Status Finish() override {
    FUZZ_CHECK(started_, "Finish before Start");
    if (!finished_ && length_ && !no_body_) {
      FUZZ_CHECK(body.size() == *length_, "the body has %zu of %llu bytes", body.size(),
                 static_cast<unsigned long long>(*length_));
    }
    finished_ = true;
    return OkStatus();
  }
  bool started() const override { return started_; }
  int status() const { return status_; }

  std::string body;
  std::string version_id;

 private:
  // As the server's ValidHeader: a token name, no CR, LF or NUL in the value.
  static bool ValidHeader(const net::HttpHeader& h) {
    if (h.name.empty()) return false;
    for (char c : h.name) {
      if (c <= ' ' || c == ':' || c == 0x7f) return false;
    }
    return h.value.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos;
  }

  const bool head_request_;
  bool started_ = false;
  bool finished_ = false;
  bool no_body_ = false;
  int status_ = 0;
  std::optional<uint64_t> length_;
};

// One request as the input describes it.
struct Spec {
  char mode = 'A';
  const Principal* principal = nullptr;  // nullptr: anonymous
  std::string method;
  std::string target;
  std::vector<net::HttpHeader> headers;
  std::string body;
};

Spec ParseSpec(std::string_view text) {
  Spec spec;
  const size_t head_end = text.find("\n\n");
  std::string_view head = text.substr(0, head_end);
  if (head_end != std::string_view::npos) spec.body = std::string(text.substr(head_end + 2));
  const size_t nl = head.find('\n');
  std::string_view line = head.substr(0, nl);
  head = nl == std::string_view::npos ? std::string_view() : head.substr(nl + 1);
  if (!line.empty() && std::strchr("ASUCTPsuctp", line[0]) != nullptr) {
    spec.mode = static_cast<char>(std::toupper(static_cast<unsigned char>(line[0])));
    if (spec.mode != 'A') spec.principal = std::islower(line[0]) ? &kAlice : &kRoot;
    line.remove_prefix(1);
  }
  const size_t space = line.find(' ');
  spec.method = std::string(line.substr(0, space));
  spec.target = space == std::string_view::npos ? "/" : std::string(line.substr(space + 1));
  while (!head.empty()) {
    const size_t end = head.find('\n');
    std::string_view header = head.substr(0, end);
    head = end == std::string_view::npos ? std::string_view() : head.substr(end + 1);
    const size_t colon = header.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = header.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    spec.headers.push_back({std::string(header.substr(0, colon)), std::string(value)});
  }
  return spec;
}

// What net::HttpServer's parser (Beast) lets through: a token method, a target of visible
// characters, token header names, and values without control characters other than tab.
// Anything else never reaches a handler, so it is not sent.
bool ServerWouldParse(const Spec& spec) {
  auto token = [](std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) ||
             std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
    });
  };
  auto visible = [](char c) { return static_cast<unsigned char>(c) > 0x20 && c != 0x7f; };
  auto text = [](char c) {
    return c == '\t' || (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f);
  };
  if (!token(spec.method) || spec.target.empty() ||
      !std::all_of(spec.target.begin(), spec.target.end(), visible)) {
    return false;
  }
  return std::all_of(spec.headers.begin(), spec.headers.end(), [&](const net::HttpHeader& h) {
    return token(h.name) && std::all_of(h.value.begin(), h.value.end(), text);
  });
}

bool HasHeader(const std::vector<net::HttpHeader>& headers, std::string_view name) {
  return std::any_of(headers.begin(), headers.end(),
                     [&](const net::HttpHeader& h) { return AsciiLower(h.name) == name; });
}
std::optional<std::string> TakeHeader(std::vector<net::HttpHeader>& headers,
                                      std::string_view name) {
  for (auto it = headers.begin(); it != headers.end(); ++it) {
    if (AsciiLower(it->name) == name) {
      std::string value = it->value;
      headers.erase(it);
      return value;
    }
  }
  return std::nullopt;
}

void ReplaceAll(std::string& s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
}

std::string AmzDate(int64_t seconds) {
  const time_t t = static_cast<time_t>(seconds);
  struct tm tm_utc;
  gmtime_r(&t, &tm_utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm_utc);
  return stamp;
}

// The SigV4 view of `http`; nullopt if its path or query cannot be decoded (then it goes out
// unsigned and the front end rejects it).
std::optional<sigv4::Request> SigningView(const net::HttpRequest& http) {
  Result<std::string> path = sigv4::UriDecode(http.path, false);
  Result<std::vector<sigv4::QueryParam>> query = sigv4::ParseQueryString(http.query);
  if (!path.ok() || !query.ok()) return std::nullopt;
  sigv4::Request request{http.method, *path, *query, {}};
  for (const net::HttpHeader& h : http.headers) request.headers.push_back({h.name, h.value});
  return request;
}

// Every header name SignedHeaders can carry, lower-case, sorted, unique; x-amz-* and host
// included, as the verifier requires.
std::vector<std::string> SignableHeaders(const net::HttpRequest& http) {
  std::vector<std::string> names;
  for (const net::HttpHeader& h : http.headers) {
    std::string name = AsciiLower(h.name);
    const bool ok =
        !name.empty() && name.size() <= 256 && std::all_of(name.begin(), name.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                 c == '.';
        });
    if (ok) names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  if (names.size() > sigv4::kMaxSignedHeaders) names.resize(sigv4::kMaxSignedHeaders);
  return names;
}

// Frames `data` as aws-chunked: signed chunks chained from `chain`, or unsigned chunks followed
// by the trailer `checksum` names.
std::string Frame(std::string_view data, size_t chunk, sigv4::ChunkVerifier* chain,
                  std::optional<TrailerChecksum> checksum) {
  std::string out;
  for (size_t pos = 0;; pos += chunk) {
    const std::string_view piece = data.substr(std::min(pos, data.size()), chunk);
    out += Hex(piece.size());
    if (chain != nullptr) {
      const std::string hash = sigv4::Sha256Hex(piece);
      const std::string signature = chain->Expected(hash);
      (void)chain->Verify(signature, hash);
      out += ";chunk-signature=" + signature;
    }
    out += "\r\n";
    if (piece.empty()) break;
    out += piece;
    out += "\r\n";
    if (checksum) checksum->Update(piece);
  }
  if (checksum) out += checksum->header() + ":" + checksum->Base64Value() + "\r\n";
  out += "\r\n";
  return out;
}

// Adds the signature headers (or presigned query parameters) a client would, and frames the
// body for the aws-chunked modes.
void Sign(const Spec& spec, net::HttpRequest& http, std::string& body) {
  if (spec.principal == nullptr) return;
  const Principal& who = *spec.principal;
  const std::string amz_date = AmzDate(kNow);
  sigv4::Credential credential{std::string(who.access_key), amz_date.substr(0, 8),
                               std::string(kRegion), "s3"};
  if (!HasHeader(http.headers, "host")) http.headers.push_back({"Host", "127.0.0.1:9000"});

  if (spec.mode == 'P') {
    std::string query = http.query;
    if (!query.empty()) query += '&';
    query += "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" +
             sigv4::UriEncode(credential.access_key_id + "/" + credential.Scope()) +
             "&X-Amz-Date=" + amz_date + "&X-Amz-Expires=900&X-Amz-SignedHeaders=host";
    http.query = query;
    std::optional<sigv4::Request> view = SigningView(http);
    if (!view) return;
    const std::vector<std::string> signed_headers = {"host"};
    Result<std::string> signature =
        sigv4::ComputeSignature(*view, signed_headers, sigv4::kUnsignedPayload, amz_date,
                                credential, who.secret, "X-Amz-Signature");
    if (!signature.ok()) return;
    http.query += "&X-Amz-Signature=" + *signature;
    http.target = http.path + "?" + http.query;
    return;
  }

  // Header modes. The input may bring its own x-amz-date and x-amz-content-sha256.
  std::string date = amz_date;
  for (const net::HttpHeader& h : http.headers) {
    if (AsciiLower(h.name) == "x-amz-date") date = h.value;
  }
  if (!HasHeader(http.headers, "x-amz-date")) http.headers.push_back({"x-amz-date", date});
  credential.date = date.substr(0, 8);
  std::string payload_hash;
  const size_t chunk = std::clamp<size_t>(
      std::strtoul(TakeHeader(http.headers, "x-fuzz-chunk").value_or("1000").c_str(), nullptr, 10),
      1, 1 << 20);
  std::optional<TrailerChecksum> checksum;
  switch (spec.mode) {
    case 'S':
      payload_hash = sigv4::Sha256Hex(body);
      break;
    case 'U':
      payload_hash = sigv4::kUnsignedPayload;
      break;
    case 'C':
      payload_hash = sigv4::kStreamingPayload;
      break;
    case 'T': {
      payload_hash = sigv4::kStreamingUnsignedTrailer;
      if (!HasHeader(http.headers, "x-amz-trailer")) {
        http.headers.push_back({"x-amz-trailer", "x-amz-checksum-crc32"});
      }
      for (const net::HttpHeader& h : http.headers) {
        if (AsciiLower(h.name) == "x-amz-trailer")
          checksum = TrailerChecksum::ForHeader(AsciiLower(h.value));
      }
      break;
    }
  }
  if (spec.mode == 'C' || spec.mode == 'T') {
    if (!HasHeader(http.headers, "x-amz-decoded-content-length")) {
      http.headers.push_back({"x-amz-decoded-content-length", std::to_string(body.size())});
    }
    if (!HasHeader(http.headers, "content-encoding")) {
      http.headers.push_back({"Content-Encoding", "aws-chunked"});
    }
  }
  if (!HasHeader(http.headers, "x-amz-content-sha256")) {
    http.headers.push_back({"x-amz-content-sha256", payload_hash});
  }
  for (const net::HttpHeader& h : http.headers) {
    if (AsciiLower(h.name) == "x-amz-content-sha256") payload_hash = h.value;
  }

  std::optional<sigv4::Request> view = SigningView(http);
  if (!view) return;
  const std::vector<std::string> signed_headers = SignableHeaders(http);
  Result<std::string> signature =
      sigv4::ComputeSignature(*view, signed_headers, payload_hash, date, credential, who.secret);
  if (!signature.ok()) return;
  std::string joined;
  for (const std::string& name : signed_headers) joined += (joined.empty() ? "" : ";") + name;
  http.headers.push_back(
      {"Authorization", "AWS4-HMAC-SHA256 Credential=" + credential.access_key_id + "/" +
                            credential.Scope() + ", SignedHeaders=" + joined +
                            ", Signature=" + *signature});
  if (spec.mode == 'C') {
    sigv4::ChunkVerifier chain(
        sigv4::SigningKey(who.secret, credential.date, credential.region, credential.service), date,
        credential.Scope(), *signature);
    body = Frame(body, chunk, &chain, std::nullopt);
  } else if (spec.mode == 'T') {
    body = Frame(body, chunk, nullptr, std::move(checksum));
  }
}

class Harness {
 public:
  Harness() {
    clock_.SetNanos(kNow * 1'000'000'000);
    LocalVolumeOptions options;
    options.clock = &clock_;
    auto volume = NewLocalVolume(NewMemKvStore(), NewMemChunkStore(), options);
    FUZZ_CHECK(volume.ok(), "NewLocalVolume: %s", volume.status().ToString().c_str());
    volume_ = std::move(volume).value();
    auto identities = auth::IdentityStore::Open(NewMemKvStore(), std::string(32, 'k'), &clock_);
    FUZZ_CHECK(identities.ok(), "IdentityStore::Open: %s", identities.status().ToString().c_str());
    identities_ = std::move(identities).value();
    FUZZ_CHECK(identities_->ImportKey("root", kRoot.access_key, kRoot.secret).ok(), "root key");
    FUZZ_CHECK(identities_->CreateUser("alice", {}).ok(), "alice");
    FUZZ_CHECK(identities_->ImportKey("alice", kAlice.access_key, kAlice.secret).ok(), "key");
    FUZZ_CHECK(identities_->AddRule({"", "user:alice", "/pub/", auth::kRead | auth::kList}).ok(),
               "rule");
    FUZZ_CHECK(
        identities_->AddRule({"", "user:alice", "/pub/alice/", auth::kWrite | auth::kRead}).ok(),
        "rule");
    FUZZ_CHECK(identities_->AddRule({"", "*", "/pub/public/", auth::kRead}).ok(), "rule");
    S3Options s3;
    s3.clock = &clock_;
    s3.region = std::string(kRegion);
    authorized_ = std::make_unique<access::AuthorizedVolume>(volume_.get(), identities_.get());
    frontend_ = std::make_unique<S3Frontend>(*authorized_, s3);
    Spec pub = ParseSpec("SPUT /pub");
    FUZZ_CHECK(Send(pub) == 200, "creating bucket pub failed");
  }

  int Send(const Spec& spec) {
    if (!ServerWouldParse(spec)) return 400;
    net::HttpRequest http;
    http.method = spec.method;
    http.target = spec.target;
    ReplaceAll(http.target, "@UPLOAD@", last_upload_);
    ReplaceAll(http.target, "@VERSION@", last_version_);
    const size_t q = http.target.find('?');
    http.path = http.target.substr(0, q);
    http.query = q == std::string::npos ? "" : http.target.substr(q + 1);
    http.headers = spec.headers;
    for (net::HttpHeader& h : http.headers) {  // x-amz-copy-source names versions too
      ReplaceAll(h.value, "@UPLOAD@", last_upload_);
      ReplaceAll(h.value, "@VERSION@", last_version_);
    }
    http.remote_address = "127.0.0.1:40000";
    std::string body = spec.body;
    Sign(spec, http, body);
    // Framing as the server derives it: Content-Length from the header when there is one
    // (possibly longer than what arrives), else the bytes sent; chunked has neither.
    http.chunked = HasHeader(http.headers, "transfer-encoding");
    if (!http.chunked) {
      http.content_length = body.size();
      for (const net::HttpHeader& h : http.headers) {
        if (AsciiLower(h.name) != "content-length") continue;
        if (!h.value.empty() && h.value.size() < 16 &&
            std::all_of(h.value.begin(), h.value.end(),
                        [](char c) { return c >= '0' && c <= '9'; })) {
          http.content_length = std::stoull(h.value);
        }
      }
    }
    StringBody reader(std::move(body), http.content_length);
    CheckedResponse response(http.method == "HEAD");
    const uint64_t before = LastSequence();
    frontend_->Handle(http, reader, response);

    FUZZ_CHECK(response.started(), "the handler sent no response to %s %s", http.method.c_str(),
               http.target.c_str());
    FUZZ_CHECK(response.status() != 500, "500 for %s %s:\n%s", http.method.c_str(),
               http.target.c_str(), response.body.c_str());
    CheckChanges(before, spec.principal == nullptr ? auth::kAnonymous : spec.principal->user);
    // WEFT_FUZZ_VERBOSE=1 shows what each request got: how to check that a seed gets past
    // authentication and reaches the handler it was written for.
    static const bool verbose = std::getenv("WEFT_FUZZ_VERBOSE") != nullptr;
    if (verbose) {
      std::fprintf(stderr, "%d %s %s\n%.300s\n", response.status(), http.method.c_str(),
                   http.target.c_str(), response.body.c_str());
    }
    if (size_t at = response.body.find("<UploadId>"); at != std::string::npos) {
      const size_t end = response.body.find("</UploadId>", at);
      if (end != std::string::npos) last_upload_ = response.body.substr(at + 10, end - at - 10);
    }
    if (!response.version_id.empty()) last_version_ = response.version_id;
    return response.status();
  }

 private:
  uint64_t LastSequence() {
    uint64_t last = 0;
    while (true) {
      auto changes = volume_->ReadChanges(RequestContext{}, last, 1000);
      FUZZ_CHECK(changes.ok(), "ReadChanges: %s", changes.status().ToString().c_str());
      if (changes->empty()) return last;
      last = changes->back().sequence;
    }
  }

  // Every change since `after` was made by `principal`, on a path it may write. Multipart
  // parts live under /<bucket>/.weft-uploads/ until completed; the front end authorises them
  // by key.
  static bool InUploadStaging(std::string_view path) {
    const size_t second = path.find('/', 1);  // "/bucket/.weft-uploads[/...]"
    if (second == std::string_view::npos) return false;
    const std::string_view rest = path.substr(second + 1);
    return rest.starts_with(kUploadsDirName) &&
           (rest.size() == kUploadsDirName.size() || rest[kUploadsDirName.size()] == '/');
  }

  void CheckChanges(uint64_t after, std::string_view principal) {
    auto changes = volume_->ReadChanges(RequestContext{}, after, 1000);
    FUZZ_CHECK(changes.ok(), "ReadChanges: %s", changes.status().ToString().c_str());
    for (const Change& change : *changes) {
      FUZZ_CHECK(change.principal == principal, "%s changed %s on behalf of %s",
                 change.principal.c_str(), change.path.c_str(), std::string(principal).c_str());
      // A directory is named with a trailing '/' (IdentityStore::Authorize), so a user whose
      // prefix is "/b/u/" may remove the emptied directory /b/u.
      const bool directory = change.op == "mkdir" || change.op == "rmdir" || change.op == "setattr";
      for (const std::string* path : {&change.path, &change.path2}) {
        if (path->empty() || !path->starts_with('/') || InUploadStaging(*path)) continue;
        if (change.op == "delete-version" && path == &change.path2) continue;  // a version id
        Status allowed =
            identities_->Authorize(principal, auth::kWrite, directory ? *path + "/" : *path);
        FUZZ_CHECK(allowed.ok(), "%s did '%s' on %s without write permission",
                   std::string(principal).c_str(), change.op.c_str(), path->c_str());
      }
    }
  }

  FakeClock clock_;
  std::unique_ptr<Volume> volume_;
  std::unique_ptr<auth::IdentityStore> identities_;
  std::unique_ptr<access::AuthorizedVolume> authorized_;
  std::unique_ptr<S3Frontend> frontend_;
  std::string last_upload_ = "00000000000000000000000000000000";
  std::string last_version_ = "1.1";
};

void FuzzOne(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  Harness harness;
  for (size_t i = 0; i < kMaxRequests && !input.empty(); ++i) {
    const size_t end = input.find(kSeparator);
    harness.Send(ParseSpec(input.substr(0, end)));
    input =
        end == std::string_view::npos ? std::string_view() : input.substr(end + kSeparator.size());
  }
}

}  // namespace
}  // namespace weft::s3

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  weft::s3::FuzzOne(data, size);
  return 0;
}
