// Tests for HttpServer: a real server on 127.0.0.1 port 0 against small blocking clients
// (Beast for well-formed HTTP, raw bytes for the malformed and timing-sensitive cases).
#include "net/http_server.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <future>
#include <latch>
#include <mutex>
#include <thread>

#include "base/test_util.h"
#include "net/test_tls.h"

namespace weft::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Fn = std::function<void(const HttpRequest&, BodyReader&, ResponseWriter&)>;

Result<std::string> ReadAll(BodyReader& body, size_t piece) {
  std::string out, buf(piece, '\0');
  for (;;) {
    WEFT_ASSIGN_OR_RETURN(size_t n, body.Read(buf));
    if (n == 0) return out;
    EXPECT_LE(n, piece);
    out.append(buf.data(), n);
  }
}

// Echoes the body; test cases replace `fn`. Protocol errors answer "proto:<code>".
class TestHandler : public HttpHandler {
 public:
  void Handle(const HttpRequest& request, BodyReader& body, ResponseWriter& response) override {
    ++requests;
    if (fn) return fn(request, body, response);
    Result<std::string> data = ReadAll(body, 65537);
    if (!data.ok()) {
      (void)response.Send(400, {}, data.status().ToString());
      return;
    }
    (void)response.Send(200,
                        {{"X-Method", request.method},
                         {"X-Path", request.path},
                         {"X-Query", request.query},
                         {"X-Chunked", request.chunked ? "1" : "0"}},
                        *data);
  }
  void HandleProtocolError(int status, std::string_view code, std::string_view message,
                           ResponseWriter& response) override {
    (void)message;
    (void)response.Send(status, {{"Content-Type", "text/plain"}}, "proto:" + std::string(code));
  }

  Fn fn;
  std::atomic<int> requests{0};
};

struct Reply {
  int status = 0;
  http::fields headers;
  std::string body;
  bool keep_alive = false;
  beast::error_code ec;
};

// A blocking HTTP/1.1 client on one connection.
class Client {
 public:
  explicit Client(uint16_t port) : socket_(io_) {
    socket_.connect({asio::ip::make_address("127.0.0.1"), port});
  }

  void Send(std::string_view raw) { asio::write(socket_, asio::buffer(raw.data(), raw.size())); }

  Reply Read(bool head = false) {
    http::response_parser<http::string_body> parser;
    parser.body_limit(std::numeric_limits<uint64_t>::max());
    parser.skip(head);
    Reply r;
    http::read(socket_, buffer_, parser, r.ec);
    if (r.ec) return r;
    r.status = parser.get().result_int();
    r.headers = parser.get().base();
    r.body = parser.get().body();
    r.keep_alive = parser.get().keep_alive();
    return r;
  }

  Reply Request(std::string_view method, std::string_view target, std::string_view body = {}) {
    Send(std::string(method) + " " + std::string(target) +
         " HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
         std::string(body));
    return Read(method == "HEAD");
  }

  // Exactly n bytes (first from what Read buffered).
  std::string ReadRaw(size_t n) {
    std::string out;
    while (out.size() < n) {
      if (buffer_.size() == 0) buffer_.commit(socket_.read_some(buffer_.prepare(n - out.size())));
      const size_t take = std::min(n - out.size(), buffer_.size());
      out.append(static_cast<const char*>(buffer_.data().data()), take);
      buffer_.consume(take);
    }
    return out;
  }

  // Reads until the server closes; returns everything read.
  std::string ReadToEof() {
    std::string out(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    buffer_.consume(buffer_.size());
    char buf[4096];
    beast::error_code ec;
    while (!ec) out.append(buf, socket_.read_some(asio::buffer(buf), ec));
    return out;
  }

  tcp::socket& socket() { return socket_; }

 private:
  asio::io_context io_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
};

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer() {
    Result<std::unique_ptr<HttpServer>> s = HttpServer::Start(options_, &handler_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
  }
  uint16_t port() const { return server_->port(); }

  HttpServerOptions options_;
  TestHandler handler_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, GetWithBodyAndRequestFields) {
  HttpRequest seen;
  handler_.fn = [&](const HttpRequest& req, BodyReader& body, ResponseWriter& resp) {
    seen = req;
    Result<std::string> data = ReadAll(body, 3);
    ASSERT_TRUE(data.ok());
    EXPECT_EQ(body.bytes_read(), 5u);
    (void)resp.Send(200, {{"X-Body", *data}}, "ok");
  };
  StartServer();
  EXPECT_EQ(server_->url(), "http://127.0.0.1:" + std::to_string(port()));
  Client c(port());
  c.Send(
      "GET /b/k%20x?list-type=2&a HTTP/1.1\r\nHost: t\r\nX-A: 1\r\nx-b: 2\r\nX-A: 3\r\n"
      "Content-Length: 5\r\n\r\nhello");
  Reply r = c.Read();
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok");
  EXPECT_EQ(r.headers["X-Body"], "hello");
  EXPECT_EQ(r.headers["Server"], "weft");
  EXPECT_FALSE(r.headers["Date"].empty());
  EXPECT_TRUE(r.keep_alive);
  EXPECT_EQ(seen.method, "GET");
  EXPECT_EQ(seen.target, "/b/k%20x?list-type=2&a");
  EXPECT_EQ(seen.path, "/b/k%20x");
  EXPECT_EQ(seen.query, "list-type=2&a");
  ASSERT_EQ(seen.headers.size(), 5u);
  EXPECT_EQ(seen.headers[1].name, "X-A");
  EXPECT_EQ(seen.headers[2].name, "x-b");
  EXPECT_EQ(seen.headers[3].value, "3");
  EXPECT_EQ(seen.Header("x-a"), "1");
  EXPECT_EQ(seen.Header("X-B"), "2");
  EXPECT_FALSE(seen.Header("missing").has_value());
  EXPECT_EQ(seen.content_length, 5u);
  EXPECT_FALSE(seen.chunked);
  EXPECT_FALSE(seen.tls);
  EXPECT_TRUE(seen.remote_address.starts_with("127.0.0.1:")) << seen.remote_address;
}

TEST_F(HttpServerTest, PutStreamsEveryByte) {
  const std::string data = testutil::RandomBytes(6 << 20, 7);
  std::string got;
  size_t largest_read = 0;
  handler_.fn = [&](const HttpRequest&, BodyReader& body, ResponseWriter& resp) {
    std::vector<char> buf(100'000);
    for (;;) {
      Result<size_t> n = body.Read(buf);
      ASSERT_TRUE(n.ok()) << n.status().ToString();
      if (*n == 0) break;
      largest_read = std::max(largest_read, *n);
      got.append(buf.data(), *n);
    }
    (void)resp.Send(201, {}, std::to_string(body.bytes_read()));
  };
  StartServer();
  Client c(port());
  Reply r = c.Request("PUT", "/big", data);
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.body, std::to_string(data.size()));
  EXPECT_EQ(got.size(), data.size());
  EXPECT_TRUE(got == data);
  EXPECT_LE(largest_read, 100'000u);
}

TEST_F(HttpServerTest, KeepAliveAndPipelining) {
  std::mutex mu;
  std::vector<std::string> remotes;
  handler_.fn = [&](const HttpRequest& req, BodyReader&, ResponseWriter& resp) {
    {
      std::lock_guard<std::mutex> lock(mu);
      remotes.push_back(req.remote_address);
    }
    (void)resp.Send(200, {}, req.path);
  };
  StartServer();
  Client c(port());
  EXPECT_EQ(c.Request("GET", "/one").body, "/one");
  EXPECT_EQ(c.Request("GET", "/two").body, "/two");
  c.Send("GET /three HTTP/1.1\r\nHost: t\r\n\r\nGET /four HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(c.Read().body, "/three");
  EXPECT_EQ(c.Read().body, "/four");
  ASSERT_EQ(remotes.size(), 4u);
  for (const std::string& r : remotes) EXPECT_EQ(r, remotes[0]);
}

// A kept connection's next request is read by the worker that served the previous one when it
// comes soon, and by the io thread when it comes late; both must behave the same.
TEST_F(HttpServerTest, NextRequestSoonOrLateOnAKeptConnection) {
  handler_.fn = [&](const HttpRequest& req, BodyReader&, ResponseWriter& resp) {
    (void)resp.Send(200, {}, req.path);
  };
  StartServer();
  Client c(port());
  EXPECT_EQ(c.Request("GET", "/soon").body, "/soon");
  EXPECT_EQ(c.Request("GET", "/again").body, "/again");
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(c.Request("GET", "/late").body, "/late");
  // Half a head now, the rest later: the worker waiting on the socket must not answer early.
  c.Send("GET /split HTTP/1.1\r\nHo");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  c.Send("st: t\r\n\r\n");
  EXPECT_EQ(c.Read().body, "/split");
  c.Send("NOT AN HTTP REQUEST\r\n\r\n");
  const Reply r = c.Read();
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, "proto:BadRequest");
  EXPECT_FALSE(r.keep_alive);
  Client big(port());
  EXPECT_EQ(big.Request("GET", "/first").body, "/first");
  big.Send("GET /x HTTP/1.1\r\nX-Big: " + std::string(20 << 10, 'a') + "\r\n\r\n");
  EXPECT_EQ(big.Read().status, 400);
  EXPECT_EQ(handler_.requests, 5);
}

// Clients that send half a request head after a response must not hold the workers: the
// head goes back to the io thread, and other clients are still served.
TEST_F(HttpServerTest, HalfSentHeadsDoNotHoldWorkers) {
  options_.worker_threads = 4;
  options_.idle_timeout = std::chrono::seconds(3);  // frees a held worker, too late for `other`
  StartServer();
  std::vector<std::unique_ptr<Client>> stalled;
  for (int i = 0; i < 8; ++i) {
    stalled.push_back(std::make_unique<Client>(port()));
    EXPECT_EQ(stalled.back()->Request("GET", "/x").status, 200);
    stalled.back()->Send("GET /half HTTP/1.1\r\nHo");
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto start = std::chrono::steady_clock::now();
  Client other(port());
  EXPECT_EQ(other.Request("GET", "/y").status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  // The stalled ones finish their heads later and are served.
  for (auto& c : stalled) c->Send("st: t\r\n\r\n");
  for (auto& c : stalled) EXPECT_EQ(c->Read().status, 200);
}

TEST_F(HttpServerTest, ChunkedRequestBody) {
  StartServer();
  Client c(port());
  c.Send(
      "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n");
  Reply r = c.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello world");
  EXPECT_EQ(r.headers["X-Chunked"], "1");
  EXPECT_TRUE(r.keep_alive);
  // The connection stays in sync after a chunked body.
  EXPECT_EQ(c.Request("POST", "/again", "xyz").body, "xyz");
}

TEST_F(HttpServerTest, MalformedChunkedBodyIsIncomplete) {
  StartServer();
  Client c(port());
  c.Send(
      "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\nzz\r\n");
  Reply r = c.Read();
  EXPECT_EQ(r.status, 400);
  EXPECT_TRUE(r.body.starts_with("InvalidArgument: IncompleteBody: ")) << r.body;
  EXPECT_FALSE(r.keep_alive);
}

TEST_F(HttpServerTest, ExpectContinueSentOnFirstRead) {
  StartServer();
  Client c(port());
  c.Send("PUT /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_EQ(c.ReadRaw(25), "HTTP/1.1 100 Continue\r\n\r\n");
  c.Send("hello");
  Reply r = c.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello");
  EXPECT_TRUE(r.keep_alive);
}

TEST_F(HttpServerTest, ExpectContinueRejectedWithoutReading) {
  handler_.fn = [](const HttpRequest&, BodyReader&, ResponseWriter& resp) {
    (void)resp.Send(403, {}, "denied");
  };
  StartServer();
  Client c(port());
  c.Send("PUT /x HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\nExpect: 100-continue\r\n\r\n");
  Reply r = c.Read();  // a 100 Continue would show up here as status 100
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.body, "denied");
  EXPECT_FALSE(r.keep_alive);
  EXPECT_EQ(c.ReadToEof(), "");
}

// An empty body with "Expect: 100-continue" on a kept connection: the 100 goes before the
// answer, which botocore needs to read the connection's next response right.
TEST_F(HttpServerTest, ExpectContinueWithEmptyBodyGetsTheContinueFirst) {
  StartServer();
  Client c(port());
  c.Send("PUT /x HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_EQ(c.ReadRaw(25), "HTTP/1.1 100 Continue\r\n\r\n");
  Reply r = c.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.keep_alive);
  EXPECT_EQ(c.Request("GET", "/again", "y").body, "y");
}

TEST_F(HttpServerTest, HeadSendsContentLengthWithoutBody) {
  handler_.fn = [](const HttpRequest& req, BodyReader&, ResponseWriter& resp) {
    if (req.method == "HEAD") {
      ASSERT_TRUE(resp.Start(200, {{"ETag", "\"e\""}}, 1234).ok());
      ASSERT_TRUE(resp.Finish().ok());
    } else {
      (void)resp.Send(200, {}, "pong");
    }
  };
  StartServer();
  Client c(port());
  Reply r = c.Request("HEAD", "/obj");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["Content-Length"], "1234");
  EXPECT_EQ(r.headers["ETag"], "\"e\"");
  EXPECT_EQ(r.body, "");
  EXPECT_EQ(c.Request("GET", "/ping").body, "pong");  // no stray body bytes came before
}

TEST_F(HttpServerTest, HeaderSectionTooLarge) {
  StartServer();
  Client c(port());
  std::string head = "GET / HTTP/1.1\r\nHost: t\r\n";
  for (int i = 0; i < 64; ++i)
    head += "X-Pad-" + std::to_string(i) + ": " + std::string(1000, 'p') + "\r\n";
  c.Send(head + "\r\n");
  Reply r = c.Read();
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, "proto:RequestHeaderSectionTooLarge");
  EXPECT_FALSE(r.keep_alive);
  EXPECT_EQ(handler_.requests, 0);
  Client c2(port());
  EXPECT_EQ(c2.Request("GET", "/", "still").body, "still");
}

TEST_F(HttpServerTest, MalformedRequestAndUnsupportedTransferEncoding) {
  StartServer();
  Client c(port());
  c.Send("NOT AN HTTP REQUEST\r\n\r\n");
  Reply r = c.Read();
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, "proto:BadRequest");
  Client c2(port());
  c2.Send("PUT /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n");
  r = c2.Read();
  EXPECT_EQ(r.status, 501);
  EXPECT_EQ(r.body, "proto:NotImplemented");
  EXPECT_FALSE(r.keep_alive);
  EXPECT_EQ(handler_.requests, 0);
}

TEST_F(HttpServerTest, TruncatedBodyIsIncomplete) {
  std::promise<Status> seen;
  handler_.fn = [&](const HttpRequest&, BodyReader& body, ResponseWriter& resp) {
    Result<std::string> data = ReadAll(body, 4096);
    seen.set_value(data.status());
    (void)resp.Send(400, {}, "");
  };
  StartServer();
  Client c(port());
  c.Send("PUT /x HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n0123456789");
  c.socket().shutdown(tcp::socket::shutdown_send);
  const Status status = seen.get_future().get();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.reason(), Reason::kIncompleteBody) << status.ToString();
  EXPECT_NE(status.message().find("10 of 1000"), std::string::npos) << status.ToString();
}

TEST_F(HttpServerTest, HandlerWithoutResponseGets500) {
  handler_.fn = [](const HttpRequest&, BodyReader&, ResponseWriter&) {};
  StartServer();
  Client c(port());
  Reply r = c.Request("GET", "/x");
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, "proto:InternalError");
  EXPECT_TRUE(r.keep_alive);
  EXPECT_EQ(c.Request("GET", "/y").status, 500);
}

TEST_F(HttpServerTest, ShortResponseClosesConnection) {
  handler_.fn = [](const HttpRequest&, BodyReader&, ResponseWriter& resp) {
    ASSERT_TRUE(resp.Start(200, {}, 100).ok());
    ASSERT_TRUE(resp.Write("0123456789").ok());
    EXPECT_FALSE(resp.Write(std::string(91, 'x')).ok());  // longer than declared
    const std::string x(91, 'x');
    const std::array<std::string_view, 2> over = {std::string_view(x).substr(0, 50),
                                                  std::string_view(x).substr(50)};
    EXPECT_FALSE(resp.Write(over).ok());  // so are pieces that only together are
    EXPECT_FALSE(resp.Finish().ok());
  };
  StartServer();
  Client c(port());
  Reply r = c.Request("GET", "/x");
  EXPECT_EQ(r.ec, http::error::partial_message);
}

TEST_F(HttpServerTest, UnreadBodyDrainedOrClosed) {
  handler_.fn = [](const HttpRequest&, BodyReader&, ResponseWriter& resp) {
    (void)resp.Send(200, {}, "ignored");
  };
  StartServer();
  Client c(port());
  Reply r = c.Request("PUT", "/small", std::string(1000, 's'));
  EXPECT_TRUE(r.keep_alive);
  EXPECT_EQ(c.Request("PUT", "/again", "x").body, "ignored");
  Reply big = c.Request("PUT", "/big", std::string(4 << 20, 'b'));
  EXPECT_EQ(big.status, 200);
  EXPECT_FALSE(big.keep_alive);
}

TEST_F(HttpServerTest, LargeResponsesWithLengthAndChunked) {
  const std::string data = testutil::RandomBytes(5 << 20, 3);
  handler_.fn = [&](const HttpRequest& req, BodyReader&, ResponseWriter& resp) {
    std::optional<uint64_t> length;
    if (req.query != "chunked") length = data.size();
    ASSERT_TRUE(resp.Start(200, {}, length).ok());
    // Each MiB as one gather write of uneven pieces, an empty one among them: a chunked
    // body's size line counts them all, and none is cut at asio's 64 KiB per call.
    for (size_t off = 0; off < data.size(); off += 1 << 20) {
      const std::string_view mib = std::string_view(data).substr(off, 1 << 20);
      const std::array<std::string_view, 4> pieces = {mib.substr(0, 100), mib.substr(100, 0),
                                                      mib.substr(100, 700000), mib.substr(700100)};
      ASSERT_TRUE(resp.Write(pieces).ok());
    }
    ASSERT_TRUE(resp.Finish().ok());
  };
  StartServer();
  Client c(port());
  Reply r = c.Request("GET", "/data");
  EXPECT_EQ(r.headers["Content-Length"], std::to_string(data.size()));
  EXPECT_TRUE(r.body == data);
  r = c.Request("GET", "/data?chunked");
  EXPECT_EQ(r.headers["Transfer-Encoding"], "chunked");
  EXPECT_TRUE(r.body == data);
  EXPECT_TRUE(r.keep_alive);
}

TEST_F(HttpServerTest, Http10BodyEndsWithClose) {
  handler_.fn = [](const HttpRequest&, BodyReader&, ResponseWriter& resp) {
    ASSERT_TRUE(resp.Start(200, {}, std::nullopt).ok());
    ASSERT_TRUE(resp.Write("abc").ok());
    ASSERT_TRUE(resp.Finish().ok());
  };
  StartServer();
  Client c(port());
  c.Send("GET / HTTP/1.0\r\n\r\n");
  const std::string raw = c.ReadToEof();
  EXPECT_TRUE(raw.starts_with("HTTP/1.1 200 OK\r\n")) << raw;
  EXPECT_NE(raw.find("Connection: close\r\n"), std::string::npos) << raw;
  EXPECT_EQ(raw.find("Transfer-Encoding"), std::string::npos) << raw;
  EXPECT_TRUE(raw.ends_with("\r\n\r\nabc")) << raw;
}

TEST_F(HttpServerTest, InvalidResponseHeaderIsRejected) {
  handler_.fn = [](const HttpRequest&, BodyReader&, ResponseWriter& resp) {
    EXPECT_EQ(resp.Start(200, {{"X-Evil", "a\r\nSet-Cookie: x"}}, 0).code(),
              StatusCode::kInvalidArgument);
    EXPECT_FALSE(resp.started());
  };
  StartServer();
  Client c(port());
  Reply r = c.Request("GET", "/");
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.headers.count("Set-Cookie"), 0u);
}

TEST_F(HttpServerTest, ShutdownFinishesRequestInFlight) {
  std::latch entered(1), release(1);
  handler_.fn = [&](const HttpRequest& req, BodyReader&, ResponseWriter& resp) {
    if (req.path == "/block") {
      entered.count_down();
      release.wait();
    }
    (void)resp.Send(200, {}, "done");
  };
  StartServer();
  const uint16_t p = port();
  Client idle(p);
  EXPECT_EQ(idle.Request("GET", "/ping").status, 200);
  Client busy(p);
  busy.Send("GET /block HTTP/1.1\r\nHost: t\r\n\r\n");
  entered.wait();
  std::thread stopper([&] { server_->Shutdown(std::chrono::seconds(30)); });
  EXPECT_EQ(idle.ReadToEof(), "");  // idle connections are closed first
  release.count_down();
  Reply r = busy.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "done");
  EXPECT_FALSE(r.keep_alive);
  stopper.join();
  asio::io_context io;
  tcp::socket s(io);
  beast::error_code ec;
  s.connect({asio::ip::make_address("127.0.0.1"), p}, ec);
  EXPECT_EQ(ec, asio::error::connection_refused);
  server_->Shutdown(std::chrono::seconds(1));  // idempotent
}

TEST_F(HttpServerTest, ShutdownForceClosesStuckRequest) {
  std::latch entered(1);
  std::promise<Status> seen;
  handler_.fn = [&](const HttpRequest&, BodyReader& body, ResponseWriter&) {
    entered.count_down();
    seen.set_value(ReadAll(body, 4096).status());
  };
  StartServer();
  Client c(port());
  c.Send("PUT /x HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\nabc");
  entered.wait();
  server_->Shutdown(std::chrono::milliseconds(0));
  EXPECT_EQ(seen.get_future().get().reason(), Reason::kIncompleteBody);
}

TEST_F(HttpServerTest, IdleConnectionTimesOut) {
  options_.idle_timeout = std::chrono::seconds(1);
  StartServer();
  Client c(port());
  EXPECT_EQ(c.Request("GET", "/", "x").body, "x");
  EXPECT_EQ(c.ReadToEof(), "");
}

using SteadyClock = std::chrono::steady_clock;

// A refused request's body is not waited for: the client gets its error and the connection
// closes, so 32 refused uploads that go quiet (the hub's old 120 s stall) hold no worker.
TEST_F(HttpServerTest, RefusedBodyIsNotAwaited) {
  options_.worker_threads = 2;
  options_.max_worker_threads = 2;
  handler_.fn = [](const HttpRequest&, BodyReader&, ResponseWriter& resp) {
    (void)resp.Send(403, {}, "denied");
  };
  StartServer();
  std::vector<std::unique_ptr<Client>> quiet;
  for (int i = 0; i < 32; ++i) {
    quiet.push_back(std::make_unique<Client>(port()));
    quiet.back()->Send(
        "PUT /any/x HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n\r\n0123456789");
  }
  for (auto& c : quiet) {
    Reply r = c->Read();
    EXPECT_EQ(r.status, 403);
    EXPECT_FALSE(r.keep_alive);
  }
  const auto start = SteadyClock::now();
  Client other(port());
  EXPECT_EQ(other.Request("PUT", "/y", "z").status, 403);
  EXPECT_LT(SteadyClock::now() - start, std::chrono::seconds(2));
}

// The status of each request's body read, for tests of how bodies end.
std::future<Status> RecordBodyStatus(TestHandler& handler, std::promise<Status>& seen) {
  handler.fn = [&seen](const HttpRequest&, BodyReader& body, ResponseWriter& resp) {
    Status s = ReadAll(body, 4096).status();
    (void)resp.Send(400, {}, "short");
    seen.set_value(s);
  };
  return seen.get_future();
}

// A body that stops arriving fails with IncompleteBody after body_timeout, not idle_timeout.
TEST_F(HttpServerTest, StalledBodyTimesOut) {
  options_.body_timeout = std::chrono::seconds(1);
  std::promise<Status> seen;
  std::future<Status> result = RecordBodyStatus(handler_, seen);
  StartServer();
  const auto start = SteadyClock::now();
  Client c(port());
  c.Send("PUT /x HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\nabc");
  Status s = result.get();
  EXPECT_EQ(s.reason(), Reason::kIncompleteBody) << s.ToString();
  EXPECT_LT(SteadyClock::now() - start, std::chrono::seconds(5));
}

// A client dripping one byte at a time, each well within body_timeout, is cut off when its
// average falls below min_body_rate.
TEST_F(HttpServerTest, DrippedBodyFallsBelowMinimumRate) {
  options_.body_timeout = std::chrono::seconds(1);
  options_.min_body_rate = 500;
  std::promise<Status> seen;
  std::future<Status> result = RecordBodyStatus(handler_, seen);
  StartServer();
  const auto start = SteadyClock::now();
  Client c(port());
  c.Send("PUT /x HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n");
  beast::error_code ec;
  for (int i = 0;
       i < 40 && result.wait_for(std::chrono::milliseconds(200)) != std::future_status::ready;
       ++i) {
    asio::write(c.socket(), asio::buffer("d", 1), ec);
  }
  Status s = result.get();
  EXPECT_EQ(s.reason(), Reason::kIncompleteBody) << s.ToString();
  EXPECT_LT(SteadyClock::now() - start, std::chrono::seconds(4));
}

// The send deadline counts from the last progress: a response far larger than the socket
// buffers reaches a client that reads it slowly for longer than send_timeout.
TEST_F(HttpServerTest, ASlowReaderGetsALargeResponseWhole) {
  options_.send_timeout = std::chrono::seconds(1);
  const std::string big(48 << 20, 'r');
  handler_.fn = [&](const HttpRequest&, BodyReader&, ResponseWriter& resp) {
    (void)resp.Send(200, {}, big);
  };
  StartServer();
  Client c(port());
  c.Send("GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
  const auto start = SteadyClock::now();
  size_t got = 0;
  std::string head = c.ReadRaw(1);
  while (head.find("\r\n\r\n") == std::string::npos) head += c.ReadRaw(1);
  while (got < big.size()) {
    got += c.ReadRaw(std::min<size_t>(4 << 20, big.size() - got)).size();
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // a slow link
  }
  EXPECT_EQ(got, big.size());
  EXPECT_GT(SteadyClock::now() - start, std::chrono::seconds(1));  // longer than send_timeout
}

// A head that stops arriving is closed after header_timeout, on the io thread.
TEST_F(HttpServerTest, StalledHeadIsClosed) {
  options_.header_timeout = std::chrono::seconds(1);
  StartServer();
  const auto start = SteadyClock::now();
  Client c(port());
  c.Send("GET /half HTTP/1.1\r\nHo");
  EXPECT_EQ(c.ReadToEof(), "");
  EXPECT_LT(SteadyClock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(handler_.requests.load(), 0);
}

// Requests blocked on slow bodies each hold a thread, but more threads start: a client with a
// quick request is still served at once.
TEST_F(HttpServerTest, SlowBodiesDoNotStopOthers) {
  options_.worker_threads = 2;
  options_.max_worker_threads = 64;
  std::atomic<int> waiting{0};
  handler_.fn = [&](const HttpRequest& req, BodyReader& body, ResponseWriter& resp) {
    if (req.path == "/slow") ++waiting;
    Result<std::string> data = ReadAll(body, 4096);
    (void)resp.Send(data.ok() ? 200 : 400, {}, data.ok() ? *data : "short");
  };
  StartServer();
  std::vector<std::unique_ptr<Client>> slow;
  for (int i = 0; i < 40; ++i) {
    slow.push_back(std::make_unique<Client>(port()));
    slow.back()->Send("PUT /slow HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nab");
  }
  for (int i = 0; i < 500 && waiting.load() < 40; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(waiting.load(), 40);
  const auto start = SteadyClock::now();
  Client other(port());
  EXPECT_EQ(other.Request("PUT", "/quick", "q").body, "q");
  EXPECT_LT(SteadyClock::now() - start, std::chrono::seconds(2));
  for (auto& c : slow) c->Send(std::string(98, 'c'));
  for (auto& c : slow) EXPECT_EQ(c->Read().status, 200);
}

TEST_F(HttpServerTest, MaxConnectionsAnswers503) {
  options_.max_connections = 1;
  StartServer();
  Client first(port());
  EXPECT_EQ(first.Request("GET", "/", "a").status, 200);  // registered and idle
  Client second(port());
  EXPECT_TRUE(second.ReadToEof().starts_with("HTTP/1.1 503 ")) << "expected 503";
  EXPECT_EQ(first.Request("GET", "/", "b").body, "b");
}

TEST_F(HttpServerTest, BindFailureIsClear) {
  StartServer();
  HttpServerOptions options;
  options.port = port();
  Result<std::unique_ptr<HttpServer>> s = HttpServer::Start(options, &handler_);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(s.status().message().starts_with(
      "cannot listen on 127.0.0.1:" + std::to_string(port()) + ": "))
      << s.status().ToString();
  options.port = 0;
  options.tls_cert_file = "/nonexistent/cert.pem";
  options.tls_key_file = "/nonexistent/key.pem";
  s = HttpServer::Start(options, &handler_);
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(HttpServerTest, ConcurrentClients) {
  options_.worker_threads = 4;
  StartServer();
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::unique_ptr<Client> c;
      for (int i = 0; i < 50; ++i) {
        if (i % 10 == 0) c = std::make_unique<Client>(port());  // some fresh connections
        const std::string body = std::to_string(t) + "/" + std::to_string(i);
        Reply r = c->Request("PUT", "/c/" + body, body);
        if (r.status == 200 && r.body == body && r.headers["X-Path"] == "/c/" + body) ++ok;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok, 400);
  EXPECT_EQ(handler_.requests, 400);
}

TEST_F(HttpServerTest, Https) {
  char dir_template[] = "/tmp/weft_net_test_XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  options_.tls_cert_file = dir + "/cert.pem";
  options_.tls_key_file = dir + "/key.pem";
  testtls::WriteSelfSignedCert(options_.tls_cert_file, options_.tls_key_file);
  bool tls_seen = false;
  handler_.fn = [&](const HttpRequest& req, BodyReader& body, ResponseWriter& resp) {
    tls_seen = req.tls;
    (void)resp.Send(200, {}, ReadAll(body, 1000).value_or("error"));
  };
  StartServer();
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(server_->url().starts_with("https://127.0.0.1:"));

  asio::io_context io;
  ssl::context ctx(ssl::context::tls_client);
  ctx.set_verify_mode(ssl::verify_none);
  ssl::stream<tcp::socket> stream(io, ctx);
  stream.next_layer().connect({asio::ip::make_address("127.0.0.1"), port()});
  stream.handshake(ssl::stream_base::client);
  const std::string body = testutil::RandomBytes(300'000, 5);
  for (int i = 0; i < 2; ++i) {  // keep-alive over TLS
    http::request<http::string_body> req{http::verb::put, "/tls", 11};
    req.set(http::field::host, "localhost");
    req.body() = body;
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(stream, buffer, res);
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_TRUE(res.body() == body);
  }
  EXPECT_TRUE(tls_seen);

  // A request sent with the handshake's last flight, and two in one write: the bytes may wait
  // in the TLS stream's buffers, where the socket shows nothing to read.
  ssl::stream<tcp::socket> eager(io, ctx);
  eager.next_layer().connect({asio::ip::make_address("127.0.0.1"), port()});
  eager.handshake(ssl::stream_base::client);
  const std::string two =
      "PUT /a HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\naPUT /b HTTP/1.1\r\nHost: "
      "h\r\nContent-Length: 1\r\n\r\nb";
  asio::write(eager, asio::buffer(two));
  beast::flat_buffer buffer;
  for (const char* want : {"a", "b"}) {
    http::response<http::string_body> res;
    http::read(eager, buffer, res);
    EXPECT_EQ(res.body(), want);
  }
}

}  // namespace
}  // namespace weft::net
