// S3Frontend: the S3 API over a Volume. Buckets are top-level directories and keys are paths
// below them; versions, snapshots and multipart uploads map onto the engine's own. Every
// request takes one path: parse and validate (request.h), authenticate (SigV4 header,
// presigned or anonymous), authorise the resolved path with IdentityStore::Authorize, then
// the handler. No handler can be reached another way. Thread-safe: requests run concurrently.
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <string>

#include "access/authorized_volume.h"
#include "auth/identity_store.h"
#include "base/clock.h"
#include "frontends/s3/cors.h"
#include "frontends/s3/request.h"
#include "net/access_log.h"
#include "net/http_server.h"
#include "vfs/volume.h"

namespace weft::s3 {

struct S3Options {
  // The region clients sign for (their default is us-east-1).
  std::string region = "us-east-1";
  // Accept Signature Version 2 (header and presigned); off: refused with a clear message.
  bool sigv2 = true;
  // Where a line per request goes (nullptr: nowhere). Not owned.
  net::AccessLog* access_log = nullptr;
  Clock* clock = SystemClock::Default();
};

// Every operation the front end serves, as the S3 API reference names them.
std::span<const std::string_view> S3Operations();
// The operation a request routes to (before authentication); an error for one none serves.
Result<std::string_view> S3OperationOf(const net::HttpRequest& http);

class S3Frontend : public net::HttpHandler {
 public:
  // Every namespace call and every authorisation decision goes through `volume`.
  explicit S3Frontend(access::AuthorizedVolume& volume, S3Options options = {});
  ~S3Frontend() override;

  void Handle(const net::HttpRequest& request, net::BodyReader& body,
              net::ResponseWriter& response) override;
  void HandleProtocolError(int status, std::string_view code, std::string_view message,
                           net::ResponseWriter& response) override;

  // One request being served (call.h; private to the front end's own files).
  class Call;

 private:
  // The request behind Handle, which logs it; `principal` is set once known.
  void Serve(const net::HttpRequest& request, net::BodyReader& body, net::ResponseWriter& response,
             const std::string& request_id, std::string* principal);
  // The bucket's CORS rules, if it has any (read without credentials: a preflight has none).
  std::optional<CorsRules> BucketCors(const std::string& bucket);
  // Answers a CORS preflight (OPTIONS) from the bucket's rules: 200 with the Access-Control-*
  // headers, 403 when no rule allows it, 400 without Origin.
  void Preflight(const S3Request& request, net::ResponseWriter& response,
                 const std::string& request_id);
  // Whether /bucket exists (an error other than NotFound counts as yes: only a sure answer
  // turns AccessDenied into NoSuchBucket).
  bool BucketExists(const std::string& bucket);

  access::AuthorizedVolume& volume_;
  S3Options options_;
  std::atomic<uint64_t> next_request_ = 1;
};

}  // namespace weft::s3
