// Tests for HttpClient against a real HttpServer on 127.0.0.1 port 0: requests and keep-alive,
// reconnecting, connection and timeout errors, and TLS verification with a CA made at test time.
#include "net/http_client.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "base/test_util.h"
#include "net/http_server.h"
#include "net/test_tls.h"

namespace weft::net {
namespace {

Result<std::string> ReadAll(BodyReader& body) {
  std::string out, buf(65536, '\0');
  for (;;) {
    WEFT_ASSIGN_OR_RETURN(size_t n, body.Read(buf));
    if (n == 0) return out;
    out.append(buf.data(), n);
  }
}

// Echoes the request: method, target, one header and the peer address in headers, the body
// as the body. While `hold` is set, requests to /slow wait until it is cleared.
class EchoHandler : public HttpHandler {
 public:
  void Handle(const HttpRequest& request, BodyReader& body, ResponseWriter& response) override {
    if (request.path == "/slow") {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return !hold_; });
    }
    Result<std::string> data = ReadAll(body);
    (void)response.Send(200,
                        {{"X-Method", request.method},
                         {"X-Target", request.target},
                         {"X-Host", std::string(request.Header("Host").value_or(""))},
                         {"X-Test", std::string(request.Header("X-Test").value_or(""))},
                         {"X-Peer", request.remote_address}},
                        data.ok() ? *data : "error");
  }

  void Hold() {
    std::lock_guard lock(mu_);
    hold_ = true;
  }
  void Release() {
    {
      std::lock_guard lock(mu_);
      hold_ = false;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool hold_ = false;
};

class HttpClientTest : public ::testing::Test {
 protected:
  ~HttpClientTest() override { handler_.Release(); }

  std::unique_ptr<HttpServer> Start(HttpServerOptions options = {}) {
    Result<std::unique_ptr<HttpServer>> s = HttpServer::Start(options, &handler_);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }

  std::unique_ptr<HttpClient> Open(const std::string& url, HttpClientOptions options = {}) {
    Result<std::unique_ptr<HttpClient>> c = HttpClient::Open(url, options);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  EchoHandler handler_;
};

TEST_F(HttpClientTest, RequestsReuseOneConnection) {
  std::unique_ptr<HttpServer> server = Start();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<HttpClient> client = Open(server->url() + "/");
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->url(), server->url());

  const std::string body = testutil::RandomBytes(200'000, 3);
  Result<HttpResponse> r = client->Send("PUT", "/a/b?x=1", {{"X-Test", "yes"}}, body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(r->body == body);
  EXPECT_EQ(r->Header("x-method"), "PUT");
  EXPECT_EQ(r->Header("X-Target"), "/a/b?x=1");
  EXPECT_EQ(r->Header("X-Host"), "127.0.0.1:" + std::to_string(server->port()));
  EXPECT_EQ(r->Header("X-Test"), "yes");
  EXPECT_FALSE(r->Header("missing").has_value());
  const std::string peer(r->Header("X-Peer").value_or(""));

  for (int i = 0; i < 3; ++i) {
    r = client->Send("GET", "/again", {}, "");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->body, "");
    EXPECT_EQ(r->Header("X-Peer"), peer) << "a new connection for request " << i;
  }
  r = client->Send("HEAD", "/head", {}, "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->Header("X-Method"), "HEAD");
}

TEST_F(HttpClientTest, ReconnectsWhenTheServerClosedTheConnection) {
  std::unique_ptr<HttpServer> server = Start();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<HttpClient> client = Open(server->url());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Send("GET", "/1", {}, "").ok());

  // A new server on the same port: the client's kept-alive connection is dead.
  HttpServerOptions options;
  options.port = server->port();
  server.reset();
  server = Start(options);
  ASSERT_NE(server, nullptr);
  Result<HttpResponse> r = client->Send("POST", "/2", {}, "body");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "body");
}

TEST_F(HttpClientTest, ConnectionRefusedIsUnavailable) {
  std::unique_ptr<HttpServer> server = Start();
  ASSERT_NE(server, nullptr);
  const std::string url = server->url();
  server.reset();
  std::unique_ptr<HttpClient> client = Open(url);
  ASSERT_NE(client, nullptr);
  Result<HttpResponse> r = client->Send("GET", "/", {}, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(r.status().message().starts_with("cannot connect to " + url + ": "))
      << r.status().ToString();
}

TEST_F(HttpClientTest, TimeoutIsUnavailable) {
  std::unique_ptr<HttpServer> server = Start();
  ASSERT_NE(server, nullptr);
  HttpClientOptions options;
  options.timeout = std::chrono::milliseconds(200);
  std::unique_ptr<HttpClient> client = Open(server->url(), options);
  ASSERT_NE(client, nullptr);
  handler_.Hold();
  Result<HttpResponse> r = client->Send("GET", "/slow", {}, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("timed out after 200 ms"), std::string::npos)
      << r.status().ToString();
  handler_.Release();
  r = client->Send("GET", "/fast", {}, "");  // a fresh connection
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

TEST_F(HttpClientTest, MalformedUrls) {
  for (const char* url : {"ftp://x", "http://", "http://h:", "http://h:99999", "http://h/path",
                          "https://[::1", "http://u@h:1"}) {
    Result<std::unique_ptr<HttpClient>> c = HttpClient::Open(url);
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << url;
  }
  Result<std::unique_ptr<HttpClient>> c = HttpClient::Open("https://[::1]:9000/");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ((*c)->url(), "https://[::1]:9000");
  HttpClientOptions options;
  options.ca_file = "/nonexistent/ca.pem";
  c = HttpClient::Open("https://localhost:1", options);
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
}

class HttpClientTlsTest : public HttpClientTest {
 protected:
  std::unique_ptr<HttpServer> StartTls(const testtls::CaSignedCert& cert) {
    HttpServerOptions options;
    options.tls_cert_file = cert.cert_file;
    options.tls_key_file = cert.key_file;
    return Start(options);
  }

  Status Get(const std::string& url, HttpClientOptions options) {
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<HttpClient> client, HttpClient::Open(url, options));
    WEFT_ASSIGN_OR_RETURN(HttpResponse r, client->Send("POST", "/tls", {}, "secret"));
    EXPECT_EQ(r.body, "secret");
    return OkStatus();
  }

  testtls::TempDir dir_;
};

TEST_F(HttpClientTlsTest, VerifiesTheChainAndTheHostName) {
  const testtls::CaSignedCert cert =
      testtls::WriteCaSignedCert(dir_.path(), "DNS:localhost,IP:127.0.0.1");
  std::unique_ptr<HttpServer> server = StartTls(cert);
  ASSERT_NE(server, nullptr);
  const std::string port = std::to_string(server->port());
  HttpClientOptions trusted;
  trusted.ca_file = cert.ca_file;
  Status s = Get("https://127.0.0.1:" + port, trusted);
  EXPECT_TRUE(s.ok()) << s.ToString();
  s = Get("https://localhost:" + port, trusted);
  EXPECT_TRUE(s.ok()) << s.ToString();

  // The system store does not know the test CA.
  s = Get("https://127.0.0.1:" + port, {});
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("not trusted: unable to get local issuer certificate"),
            std::string::npos)
      << s.ToString();

  HttpClientOptions insecure;
  insecure.insecure = true;
  s = Get("https://127.0.0.1:" + port, insecure);
  EXPECT_TRUE(s.ok()) << s.ToString();

  // Plain HTTP to a TLS port fails cleanly instead of hanging.
  s = Get("http://127.0.0.1:" + port, {});
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
}

TEST_F(HttpClientTlsTest, RefusesACertificateForAnotherHost) {
  const testtls::CaSignedCert cert = testtls::WriteCaSignedCert(dir_.path(), "DNS:example.com");
  std::unique_ptr<HttpServer> server = StartTls(cert);
  ASSERT_NE(server, nullptr);
  const std::string port = std::to_string(server->port());
  HttpClientOptions trusted;
  trusted.ca_file = cert.ca_file;
  Status s = Get("https://127.0.0.1:" + port, trusted);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("not trusted: IP address mismatch"), std::string::npos)
      << s.ToString();
  s = Get("https://localhost:" + port, trusted);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("not trusted: hostname mismatch"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace weft::net
