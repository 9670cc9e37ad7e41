// HubClient: a spoke's connection to its hub (or to the spoke it chains to). Holds a pool of
// keep-alive HTTP connections (bulk chunk transfer runs on several at once, as one TCP stream
// is window-limited across a WAN), a bearer token renewed before it expires, and the spoke id
// the hub gave at attach. Calls retry an unreachable hub until `hub_timeout`, then fail with
// Unavailable naming the hub. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "fabric/wire.h"
#include "net/http_client.h"

namespace weft::fabric {

struct HubClientOptions {
  std::string hub_url;  // http(s)://host:port
  net::HttpClientOptions http;
  std::string access_key_id;
  std::string secret_access_key;
  size_t connections = 8;
  // How long a call keeps retrying a hub it cannot reach before failing.
  std::chrono::milliseconds hub_timeout{10'000};
  // Opens a connection to the hub. Unset: HTTP(S) to hub_url with `http`. A simulation or a
  // test sets it to reach a HubService in the same process (net::InProcessLink).
  std::function<Result<std::unique_ptr<net::HttpClient>>()> connect;
  // Token renewal and retry deadlines (the pause between retries is real).
  Clock* clock = SystemClock::Default();
};

struct AttachRequest {
  std::string site;
  std::vector<std::string> tags;
  std::vector<std::string> portals;  // hub paths
};

class HubClient {
 public:
  static Result<std::unique_ptr<HubClient>> Open(const HubClientOptions& options);

  // Registers this spoke; later calls carry the id. Returns the hub's lease length. When the
  // hub later answers that it does not know the id (it restarted), a call attaches again with
  // the same request and is retried once; `on_forgotten` runs first, before any call can
  // carry the new id (a spoke drops its whole cache there: the hub forgot its leases).
  Result<std::chrono::milliseconds> Attach(const AttachRequest& request);
  void SetForgottenHandler(std::function<void()> on_forgotten);
  std::string spoke_id() const;

  // A JSON call to /_weft/fabric/v1/<op>; the spoke id is added. A hub error comes back as
  // its Status, with the answer's JSON (a NotFound lookup carries a lease) in *error_body.
  // An answer that carries chunk frames after its JSON (kFramedContentType) puts them in
  // *frames; without `frames` such an answer is an error.
  Result<json> Call(const std::string& op, json args, json* error_body = nullptr,
                    std::string* frames = nullptr);
  // A framed call (commit, upload, missing): JSON header + binary payload; the raw answer.
  Result<std::string> CallFramed(const std::string& op, json header, std::string_view payload);
  // A JSON call whose answer is binary (fetch), decompressed if it came compressed;
  // `*wire_bytes` says how many bytes it took on the wire.
  Result<std::string> CallBinary(const std::string& op, json args, uint64_t* wire_bytes = nullptr);

  const std::string& url() const { return options_.hub_url; }
  size_t connections() const { return options_.connections; }
  uint64_t bytes_received() const;  // answer bytes of fetch calls

 private:
  explicit HubClient(HubClientOptions options) : options_(std::move(options)) {}
  struct Lease;  // a pooled connection, returned on destruction
  Result<std::unique_ptr<net::HttpClient>> Connect() const;
  Result<std::unique_ptr<net::HttpClient>> Acquire();
  void Release(std::unique_ptr<net::HttpClient> client);
  Result<std::string> Token(net::HttpClient& client, bool renew);
  Result<net::HttpResponse> Send(const std::string& op, const std::string& content_type,
                                 std::string body);
  // Sends with the current spoke id; on UnknownSpoke attaches again and retries once.
  template <typename Fn>
  auto WithSpokeId(Fn&& send) -> decltype(send(std::string()));
  Status Reattach(const std::string& forgotten_id);

  const HubClientOptions options_;
  mutable std::mutex id_mu_;
  std::string spoke_id_;                   // GUARDED_BY(id_mu_)
  std::optional<AttachRequest> attached_;  // GUARDED_BY(id_mu_)
  std::function<void()> on_forgotten_;     // GUARDED_BY(id_mu_)
  std::mutex reattach_mu_;                 // one re-attach at a time
  std::mutex poll_mu_;
  std::unique_ptr<net::HttpClient> poll_client_;  // GUARDED_BY(poll_mu_): the events poll's own
  mutable std::mutex mu_;
  std::condition_variable released_;
  std::vector<std::unique_ptr<net::HttpClient>> idle_;    // GUARDED_BY(mu_)
  size_t open_ = 0;                                       // GUARDED_BY(mu_)
  std::string token_;                                     // GUARDED_BY(mu_)
  std::chrono::steady_clock::time_point token_renew_at_;  // GUARDED_BY(mu_)
  uint64_t bytes_received_ = 0;                           // GUARDED_BY(mu_)
};

}  // namespace weft::fabric
