#include "fabric/hub_client.h"

#include <thread>

#include "base/bytes.h"

namespace weft::fabric {
namespace {

bool IsIdempotent(const std::string& op) {
  return op != "commit" && op != "call";
}

}  // namespace

Result<std::unique_ptr<HubClient>> HubClient::Open(const HubClientOptions& options) {
  if (options.access_key_id.empty() || options.secret_access_key.empty()) {
    return InvalidArgument("a spoke needs the hub access key and secret of its hub user");
  }
  auto client = std::unique_ptr<HubClient>(new HubClient(options));
  // Fails early on a malformed URL or an unreadable CA file.
  WEFT_ASSIGN_OR_RETURN(auto probe, client->Connect());
  client->open_ = 1;  // the probe joins the pool as its first connection
  client->Release(std::move(probe));
  return client;
}

Result<std::unique_ptr<net::HttpClient>> HubClient::Connect() const {
  if (options_.connect) return options_.connect();
  return net::HttpClient::Open(options_.hub_url, options_.http);
}

Result<std::unique_ptr<net::HttpClient>> HubClient::Acquire() {
  std::unique_lock lock(mu_);
  const size_t limit = options_.connections;
  released_.wait(lock, [&] { return !idle_.empty() || open_ < limit; });
  if (!idle_.empty()) {
    auto client = std::move(idle_.back());
    idle_.pop_back();
    return client;
  }
  ++open_;
  lock.unlock();
  auto client = Connect();
  if (!client.ok()) {
    std::lock_guard relock(mu_);
    --open_;
    released_.notify_one();
  }
  return client;
}

void HubClient::Release(std::unique_ptr<net::HttpClient> client) {
  std::lock_guard lock(mu_);
  idle_.push_back(std::move(client));
  released_.notify_one();
}

Result<std::string> HubClient::Token(net::HttpClient& client, bool renew) {
  {
    std::lock_guard lock(mu_);
    if (!renew && !token_.empty() && options_.clock->SteadyNow() < token_renew_at_) {
      return token_;
    }
  }
  json body = {{"access_key_id", options_.access_key_id},
               {"secret_access_key", options_.secret_access_key}};
  WEFT_ASSIGN_OR_RETURN(net::HttpResponse r,
                        client.Send("POST", std::string(kFabricPrefix) + "token",
                                    {{"Content-Type", "application/json"}}, DumpJson(body)));
  auto parsed = ParseJson(r.body);
  if (r.status != 200 || !parsed.ok() || !parsed->contains("token")) {
    std::string why =
        parsed.ok() && parsed->contains("error") ? DumpJson(parsed->at("error")) : r.body;
    return PermissionDenied("the hub " + options_.hub_url +
                            " refused the spoke's credentials: " + why.substr(0, 200));
  }
  std::lock_guard lock(mu_);
  token_ = parsed->at("token").get<std::string>();
  int64_t ttl = parsed->value("expires_in", int64_t{3600});
  token_renew_at_ = options_.clock->SteadyNow() + std::chrono::seconds(ttl / 2);
  return token_;
}

Result<net::HttpResponse> HubClient::Send(const std::string& op, const std::string& content_type,
                                          std::string body) {
  const auto deadline = options_.clock->SteadyNow() + options_.hub_timeout;
  const bool retry = IsIdempotent(op);
  auto backoff = std::chrono::milliseconds(50);
  bool renewed = false;
  // The invalidation poll has a connection of its own: if it waited for one behind writes
  // that wait for this spoke's acknowledgement, each would wait out a whole lease.
  const bool poll = op == "events";
  while (true) {
    Status failure;
    {
      std::unique_ptr<net::HttpClient> client;
      if (poll) {
        std::lock_guard lock(poll_mu_);
        if (!poll_client_) {
          WEFT_ASSIGN_OR_RETURN(poll_client_, Connect());
        }
        client = std::move(poll_client_);
      } else {
        WEFT_ASSIGN_OR_RETURN(client, Acquire());
      }
      auto put_back = [&] {
        if (!poll) return Release(std::move(client));
        std::lock_guard lock(poll_mu_);
        poll_client_ = std::move(client);
      };
      Result<std::string> token = Token(*client, false);
      if (token.ok()) {
        Result<net::HttpResponse> r = client->Send(
            "POST", std::string(kFabricPrefix) + op,
            {{"Content-Type", content_type}, {"Authorization", "Bearer " + *token}}, body);
        put_back();
        if (r.ok() && r->status == 401 && !renewed) {
          renewed = true;  // the token expired early (hub restarted with a new key?)
          std::lock_guard lock(mu_);
          token_.clear();
          continue;
        }
        if (r.ok()) return r;
        failure = r.status();
      } else {
        put_back();
        if (token.status().code() != StatusCode::kUnavailable) {
          return token.status();
        }
        failure = token.status();
      }
    }
    if (!retry || options_.clock->SteadyNow() + backoff > deadline) {
      return Unavailable("hub " + options_.hub_url + " unreachable: " + failure.message());
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
}

Result<std::chrono::milliseconds> HubClient::Attach(const AttachRequest& request) {
  json args = {{"site", request.site}, {"tags", request.tags}, {"portals", request.portals}};
  WEFT_ASSIGN_OR_RETURN(net::HttpResponse r, Send("attach", "application/json", DumpJson(args)));
  WEFT_ASSIGN_OR_RETURN(json reply, ParseJson(r.body));
  if (reply.contains("error")) return StatusFromJson(reply.at("error"));
  if (!reply.contains("spoke") || !reply.contains("lease_ms")) {
    return Internal("hub answered attach without a spoke id");
  }
  std::lock_guard lock(id_mu_);
  spoke_id_ = reply.at("spoke").get<std::string>();
  attached_ = request;
  return std::chrono::milliseconds(reply.at("lease_ms").get<int64_t>());
}

void HubClient::SetForgottenHandler(std::function<void()> on_forgotten) {
  std::lock_guard lock(id_mu_);
  on_forgotten_ = std::move(on_forgotten);
}

std::string HubClient::spoke_id() const {
  std::lock_guard lock(id_mu_);
  return spoke_id_;
}

Status HubClient::Reattach(const std::string& forgotten_id) {
  std::lock_guard once(reattach_mu_);
  std::optional<AttachRequest> request;
  std::function<void()> on_forgotten;
  {
    std::lock_guard lock(id_mu_);
    if (spoke_id_ != forgotten_id) return OkStatus();  // another call already did it
    request = attached_;
    on_forgotten = on_forgotten_;
  }
  if (!request) return FailedPrecondition(Reason::kUnknownSpoke, "this spoke never attached");
  if (on_forgotten) on_forgotten();
  return Attach(*request).status();
}

template <typename Fn>
auto HubClient::WithSpokeId(Fn&& send) -> decltype(send(std::string())) {
  std::string id = spoke_id();
  auto result = send(id);
  if (result.ok() || result.status().reason() != Reason::kUnknownSpoke) return result;
  WEFT_RETURN_IF_ERROR(Reattach(id));
  return send(spoke_id());
}

Result<json> HubClient::Call(const std::string& op, json args, json* error_body,
                             std::string* frames) {
  return WithSpokeId([&](const std::string& id) -> Result<json> {
    args["spoke"] = id;
    args["zstd"] = true;  // large answers compressed (kZstdJsonContentType)
    WEFT_ASSIGN_OR_RETURN(net::HttpResponse r, Send(op, "application/json", DumpJson(args)));
    if (r.Header("Content-Type") == kZstdJsonContentType) {
      WEFT_ASSIGN_OR_RETURN(r.body, DecompressAnswer(r.body));
    }
    std::string_view body = r.body;
    const bool framed = r.status == 200 && r.Header("Content-Type") == kFramedContentType;
    uint32_t head = 0;
    if (framed) {
      if (frames == nullptr) return Internal("hub sent chunk frames nobody asked for");
      if (body.size() < 4 || GetBigEndian32(body.data()) > body.size() - 4) {
        return Internal("hub sent a malformed framed answer");
      }
      head = GetBigEndian32(body.data());
      body = body.substr(4, head);
    }
    WEFT_ASSIGN_OR_RETURN(json reply, ParseJson(body));
    if (framed) {
      // The frames stay in the response's buffer (moved down over the JSON): copying them
      // out cost a fresh allocation, and its page faults, per small file read.
      r.body.erase(0, 4 + head);
      *frames = std::move(r.body);
    }
    if (reply.contains("error")) {
      if (error_body != nullptr) *error_body = reply;
      return StatusFromJson(reply.at("error"));
    }
    if (r.status != 200) return Internal("hub answered HTTP " + std::to_string(r.status));
    return reply;
  });
}

namespace {

// A non-JSON answer: the bytes, or the error the hub sent as JSON.
Result<std::string> BinaryAnswer(net::HttpResponse r) {
  if (r.status == 200) return std::move(r.body);
  auto reply = ParseJson(r.body);
  if (reply.ok() && reply->contains("error")) return StatusFromJson(reply->at("error"));
  return Internal("hub answered HTTP " + std::to_string(r.status));
}

}  // namespace

Result<std::string> HubClient::CallFramed(const std::string& op, json header,
                                          std::string_view payload) {
  return WithSpokeId([&](const std::string& id) -> Result<std::string> {
    header["spoke"] = id;
    std::string head = DumpJson(header);
    std::string body;
    body.reserve(4 + head.size() + payload.size());
    PutBigEndian32(&body, static_cast<uint32_t>(head.size()));
    body += head;
    body += payload;
    WEFT_ASSIGN_OR_RETURN(net::HttpResponse r,
                          Send(op, "application/octet-stream", std::move(body)));
    return BinaryAnswer(std::move(r));
  });
}

Result<std::string> HubClient::CallBinary(const std::string& op, json args, uint64_t* wire_bytes) {
  return WithSpokeId([&](const std::string& id) -> Result<std::string> {
    args["spoke"] = id;
    args["zstd"] = true;  // chunk frames compressed as one stream (kZstdFramesContentType)
    WEFT_ASSIGN_OR_RETURN(net::HttpResponse r, Send(op, "application/json", DumpJson(args)));
    const bool compressed = r.status == 200 && r.Header("Content-Type") == kZstdFramesContentType;
    WEFT_ASSIGN_OR_RETURN(std::string bytes, BinaryAnswer(std::move(r)));
    {
      std::lock_guard lock(mu_);
      bytes_received_ += bytes.size();
    }
    if (wire_bytes != nullptr) *wire_bytes = bytes.size();
    if (compressed) return DecompressAnswer(bytes);
    return bytes;
  });
}

uint64_t HubClient::bytes_received() const {
  std::lock_guard lock(mu_);
  return bytes_received_;
}

}  // namespace weft::fabric
