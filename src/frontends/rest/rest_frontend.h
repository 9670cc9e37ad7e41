// RestFrontend: Weft's REST/JSON API under /_weft/api/v1/ (users, keys, rules, bearer tokens,
// namespace reads, snapshots, usage; docs/rest-api.md). Every request takes one path: parse and
// validate, authenticate the bearer token, route (handler + permission + resource path),
// IdentityStore::Authorize, then the handler; no handler can be reached another way.
// Thread-safe: requests run concurrently and share no mutable state.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string_view>

#include "access/audit_log.h"
#include "access/authorized_volume.h"
#include "auth/identity_store.h"
#include "base/clock.h"
#include "net/http_server.h"
#include "vfs/volume.h"

namespace weft::rest {

// The URL prefix every endpoint lives under.
inline constexpr std::string_view kApiPrefix = "/_weft/api/v1/";

class RestFrontend : public net::HttpHandler {
 public:
  // Keeps references: `volume` and `clock` must outlive the front end. Every namespace call
  // and every authorisation decision goes through `volume`.
  explicit RestFrontend(access::AuthorizedVolume& volume, Clock* clock = SystemClock::Default());

  // What `GET spokes` lists: the spokes attached to this server (set by the composition root
  // of a hub or a spoke; without it the endpoint answers NotFound).
  using SpokesProvider = std::function<nlohmann::ordered_json()>;
  void SetSpokesProvider(SpokesProvider provider) { spokes_ = std::move(provider); }

  // What `GET cache` and `POST cache/hints` reach: a spoke's NeuralCache (set by a spoke's
  // composition root; elsewhere both answer NotFound). `hint` gets the request body, whose
  // "dataset" the front end has validated and authorised (read) already.
  struct CacheControl {
    std::function<nlohmann::ordered_json()> stats;
    std::function<Result<nlohmann::ordered_json>(const RequestContext&, const std::string& dataset,
                                                 const nlohmann::ordered_json& body)>
        hint;
  };
  void SetCacheControl(CacheControl control) { cache_ = std::move(control); }

  // What `GET audit` searches (null: the endpoint answers NotFound).
  void SetAuditLog(access::AuditLog* audit) { audit_ = audit; }

  void Handle(const net::HttpRequest& request, net::BodyReader& body,
              net::ResponseWriter& response) override;
  void HandleProtocolError(int status, std::string_view code, std::string_view message,
                           net::ResponseWriter& response) override;

 private:
  access::AuthorizedVolume& volume_;
  Clock* clock_;
  SpokesProvider spokes_;
  CacheControl cache_;
  access::AuditLog* audit_ = nullptr;
};

}  // namespace weft::rest
