// Test helpers for hub and spokes in one process: a hub (LocalVolume on in-memory stores behind
// CoherentVolume + HubService) served over loopback HTTP or an in-process link, and spokes
// opened against it. For fabric_test.cc and fabric_sim_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "base/test_util.h"
#include "chunk/mem_chunk_store.h"
#include "fabric/coherent_volume.h"
#include "fabric/hub_service.h"
#include "fabric/portal_volume.h"
#include "meta/kv_store.h"
#include "net/http_server.h"
#include "net/in_process.h"
#include "net/test_tls.h"
#include "vfs/local_volume.h"

namespace weft::fabric::test_hub {

inline constexpr const char* kRootKey = "AKIAROOTROOTROOTROOT";
inline constexpr const char* kRootSecret = "rootsecretrootsecretrootsecretrootsecret";

using std::chrono::milliseconds;
using testutil::RandomBytes;

enum class Transport { kHttp, kInProcess };

inline std::string TransportName(const ::testing::TestParamInfo<Transport>& info) {
  return info.param == Transport::kHttp ? "Http" : "InProcess";
}

class Hub {
 public:
  explicit Hub(milliseconds lease, Transport transport = Transport::kHttp,
               net::testtls::CaSignedCert tls = {}, HubServiceOptions service_options = {})
      : lease_(lease),
        transport_(transport),
        tls_(std::move(tls)),
        service_options_(std::move(service_options)) {
    engine_ = *NewLocalVolume(NewMemKvStore(), NewMemChunkStore());
    identities_ = *auth::IdentityStore::Open(NewMemKvStore(), std::string(32, 'k'));
    EXPECT_TRUE(identities_->ImportKey("root", kRootKey, kRootSecret).ok());
    Serve(LeaseTableOptions{lease}, 0);
  }
  ~Hub() { Stop(); }
  // The hub goes away (its spokes see connection refused).
  void Stop() {
    if (!leases_) return;
    link_.Cut();
    leases_->Shutdown();
    if (server_) server_->Shutdown(milliseconds(1000));
    server_.reset();
    std::unique_lock wait_for_calls(front_.mu);  // in-process calls still in the service
    front_.service = nullptr;
    leases_.reset();
  }
  // A restart on the same port: the data stays, the leases and attached spokes are forgotten,
  // and mutations wait one lease (spokes were attached), as RunHub does.
  void Restart() {
    const uint16_t port = port_;
    Stop();
    LeaseTableOptions options{lease_};
    options.start_grace = lease_;
    Serve(options, port);
  }

  Volume& volume() { return *volume_; }
  LeaseTable& leases() { return *leases_; }
  auth::IdentityStore& identities() { return *identities_; }
  HubService& service() { return *service_; }
  Transport transport() const { return transport_; }
  std::string url() const {
    if (transport_ == Transport::kInProcess) return "http://in-process";
    return (tls_.cert_file.empty() ? "http://" : "https://") + std::string("127.0.0.1:") +
           std::to_string(port_);
  }
  // A link of its own to this hub (in-process only): one per spoke, to cut one alone.
  std::unique_ptr<net::InProcessLink> NewLink() {
    return std::make_unique<net::InProcessLink>(&front_, "http://in-process");
  }
  // How a spoke reaches this hub over the in-process link (unset over HTTP).
  std::function<Result<std::unique_ptr<net::HttpClient>>()> connect() {
    if (transport_ == Transport::kHttp) return nullptr;
    return [this]() -> Result<std::unique_ptr<net::HttpClient>> { return link_.Connect(); };
  }

 private:
  // What the in-process link calls: the service of the moment, which Stop takes away.
  struct Front final : net::HttpHandler {
    std::shared_mutex mu;
    HubService* service = nullptr;  // GUARDED_BY(mu)
    void Handle(const net::HttpRequest& request, net::BodyReader& body,
                net::ResponseWriter& response) override {
      std::shared_lock lock(mu);
      if (service == nullptr) {
        (void)response.Send(503, {}, "hub stopped");
        return;
      }
      service->Handle(request, body, response);
    }
  };

  void Serve(LeaseTableOptions options, uint16_t port) {
    service_.reset();
    authorized_.reset();
    volume_.reset();
    leases_ = std::make_unique<LeaseTable>(options);
    volume_ = NewCoherentVolume(engine_.get(), leases_.get());
    authorized_ = std::make_unique<access::AuthorizedVolume>(volume_.get(), identities_.get());
    service_ = std::make_unique<HubService>(authorized_.get(), leases_.get(), service_options_);
    if (transport_ == Transport::kInProcess) {
      {
        std::unique_lock lock(front_.mu);
        front_.service = service_.get();
      }
      link_.Join();
      return;
    }
    net::HttpServerOptions http;
    http.port = port;
    http.tls_cert_file = tls_.cert_file;
    http.tls_key_file = tls_.key_file;
    server_ = *net::HttpServer::Start(http, service_.get());
    port_ = server_->port();
  }

  milliseconds lease_;
  Transport transport_;
  net::testtls::CaSignedCert tls_;
  HubServiceOptions service_options_;
  uint16_t port_ = 0;
  std::unique_ptr<Volume> engine_;
  std::unique_ptr<auth::IdentityStore> identities_;
  std::unique_ptr<LeaseTable> leases_;
  std::unique_ptr<Volume> volume_;
  std::unique_ptr<access::AuthorizedVolume> authorized_;
  std::unique_ptr<HubService> service_;
  std::unique_ptr<net::HttpServer> server_;
  Front front_;
  net::InProcessLink link_{&front_, "http://in-process"};
};

inline Result<std::unique_ptr<PortalVolume>> OpenSpoke(
    Hub& hub_to, std::vector<std::string> portals, std::shared_ptr<ChunkStore> store = nullptr,
    PortalVolumeOptions options = {}, std::string key = kRootKey, std::string secret = kRootSecret,
    std::string ca_file = "") {
  HubClientOptions hub;
  hub.http.ca_file = ca_file;
  hub.hub_url = hub_to.url();
  hub.connect = hub_to.connect();
  hub.access_key_id = key;
  hub.secret_access_key = secret;
  hub.hub_timeout = milliseconds(1500);
  WEFT_ASSIGN_OR_RETURN(auto client, HubClient::Open(hub));
  for (const std::string& p : portals) {
    WEFT_ASSIGN_OR_RETURN(Portal portal, ParsePortal(p));
    options.portals.push_back(portal);
  }
  options.poll_wait = milliseconds(300);
  if (!store) store = NewMemChunkStore();
  return PortalVolume::Open(std::move(client), std::move(store), options);
}

// A hub client of root's key attached as site `site` with `portals`, for calls a test makes by
// hand.
inline Result<std::unique_ptr<HubClient>> RawClient(Hub& hub_to, const std::string& site,
                                                    std::vector<std::string> tags,
                                                    std::vector<std::string> portals,
                                                    std::string key = kRootKey,
                                                    std::string secret = kRootSecret) {
  HubClientOptions raw;
  raw.hub_url = hub_to.url();
  raw.connect = hub_to.connect();
  raw.access_key_id = std::move(key);
  raw.secret_access_key = std::move(secret);
  WEFT_ASSIGN_OR_RETURN(auto client, HubClient::Open(raw));
  WEFT_RETURN_IF_ERROR(client->Attach({site, std::move(tags), std::move(portals)}).status());
  return client;
}

inline Result<FileInfo> Put(Volume& v, const std::string& path, const std::string& data,
                            WriteOptions opts = {}) {
  WEFT_ASSIGN_OR_RETURN(auto w, v.OpenWriter(RequestContext{}, path, opts));
  WEFT_RETURN_IF_ERROR(w->Write(AsBytes(data)));
  return w->Commit();
}

inline Result<std::string> Get(Volume& v, const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(auto r, v.OpenReader(RequestContext{}, path));
  return r->ReadAt(0, r->info().size);
}

}  // namespace weft::fabric::test_hub
