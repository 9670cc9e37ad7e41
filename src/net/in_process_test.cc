#include "net/in_process.h"

#include <gtest/gtest.h>

namespace weft::net {
namespace {

// Echoes what it was asked, as a server's handler would see it.
class EchoHandler final : public HttpHandler {
 public:
  void Handle(const HttpRequest& request, BodyReader& body, ResponseWriter& response) override {
    std::string got;
    char buf[3];  // small reads: the body arrives in pieces, as from a socket
    while (true) {
      Result<size_t> n = body.Read(buf);
      if (!n.ok() || *n == 0) break;
      got.append(buf, *n);
    }
    if (request.path == "/silent") return;  // starts no response
    if (request.path == "/short") {
      (void)response.Start(200, {}, 10);
      (void)response.Write("abc");
      (void)response.Finish();
      return;
    }
    (void)response.Send(
        201, {{"X-Path", request.path}, {"X-Query", request.query}},
        request.method + " " + std::string(request.Header("X-In").value_or("")) + " " + got);
  }
};

TEST(InProcessLinkTest, HandsRequestsToTheHandlerAndAnswersAsAServerWould) {
  EchoHandler echo;
  InProcessLink link(&echo, "http://sim-hub");
  std::unique_ptr<HttpClient> client = link.Connect();
  EXPECT_EQ(client->url(), "http://sim-hub");
  Result<HttpResponse> r = client->Send("PUT", "/a/b%20c?x=1&y", {{"X-In", "v"}}, "hello body");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->Header("x-path"), "/a/b%20c");
  EXPECT_EQ(r->Header("X-Query"), "x=1&y");
  EXPECT_EQ(r->body, "PUT v hello body");
  EXPECT_EQ(link.requests(), 1u);
  EXPECT_EQ(link.bytes_sent(), 10u);
  EXPECT_EQ(link.bytes_received(), r->body.size());

  // A handler that answers nothing gets the server's 500; a short body is a broken connection.
  EXPECT_EQ(client->Send("GET", "/silent", {}, "")->status, 500);
  EXPECT_EQ(client->Send("GET", "/short", {}, "").status().code(), StatusCode::kUnavailable);
}

TEST(InProcessLinkTest, ACutLinkRefusesEveryClientUntilJoined) {
  EchoHandler echo;
  InProcessLink link(&echo);
  std::unique_ptr<HttpClient> a = link.Connect();
  std::unique_ptr<HttpClient> b = link.Connect();
  link.Cut();
  EXPECT_EQ(a->Send("GET", "/", {}, "").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(b->Send("GET", "/", {}, "").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(link.requests(), 0u);
  link.Join();
  EXPECT_EQ(a->Send("GET", "/", {}, "")->status, 201);
}

}  // namespace
}  // namespace weft::net
