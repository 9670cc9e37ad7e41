// Tests for WanEmulator: blocking Asio clients on 127.0.0.1 talk through it to small echo, sink
// and source servers running on threads. The timing bounds are loose on purpose (CI is noisy):
// they tell a delay or a rate that works from one that is missing, not its precision.
#include "net/wan_emulator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio.hpp>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "base/test_util.h"

namespace weft::net {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A blocking TCP server on 127.0.0.1, port 0, that runs `serve` on a thread per connection.
// The destructor waits for those threads, so every connection must end: the emulator, declared
// after the server, resets its connections when it goes first.
class TestServer {
 public:
  explicit TestServer(std::function<void(tcp::socket&)> serve)
      : acceptor_(io_, tcp::endpoint(asio::ip::address_v4::loopback(), 0)),
        serve_(std::move(serve)),
        thread_([this] { AcceptLoop(); }) {}

  ~TestServer() {
    stop_ = true;
    // accept() does not return when the acceptor is closed from another thread; a connection
    // wakes it.
    tcp::socket wake(io_);
    error_code ignored;
    wake.connect(tcp::endpoint(asio::ip::address_v4::loopback(), port()), ignored);
    thread_.join();
    for (std::thread& t : handlers_) t.join();
  }

  uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  void AcceptLoop() {
    for (;;) {
      tcp::socket socket(io_);
      error_code ec;
      acceptor_.accept(socket, ec);
      if (stop_) return;
      if (ec) continue;
      handlers_.emplace_back([this, s = std::move(socket)]() mutable { serve_(s); });
    }
  }

  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::function<void(tcp::socket&)> serve_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> handlers_;  // accept thread only, until it is joined
  std::thread thread_;
};

// Sends back what it reads; passes EOF on.
void Echo(tcp::socket& s) {
  char buf[64 << 10];
  for (;;) {
    error_code ec;
    const size_t n = s.read_some(asio::buffer(buf), ec);
    if (ec == asio::error::eof) break;
    if (ec) return;
    asio::write(s, asio::buffer(buf, n), ec);
    if (ec) return;
  }
  error_code ignored;
  s.shutdown(tcp::socket::shutdown_send, ignored);
}

// Reads to EOF, then answers with the number of bytes read (8 bytes, host order) and closes.
void Sink(tcp::socket& s) {
  char buf[64 << 10];
  uint64_t total = 0;
  for (;;) {
    error_code ec;
    total += s.read_some(asio::buffer(buf), ec);
    if (ec == asio::error::eof) break;
    if (ec) return;
  }
  error_code ignored;
  asio::write(s, asio::buffer(&total, sizeof(total)), ignored);
  s.shutdown(tcp::socket::shutdown_send, ignored);
}

// Reads an 8-byte count, sends that many bytes and closes.
void Source(tcp::socket& s) {
  uint64_t n = 0;
  error_code ec;
  asio::read(s, asio::buffer(&n, sizeof(n)), ec);
  if (ec) return;
  asio::write(s, asio::buffer(std::string(n, 'y')), ec);
  s.shutdown(tcp::socket::shutdown_send, ec);
}

std::unique_ptr<WanEmulator> StartWan(uint16_t target_port, WanOptions options) {
  options.target_host = "127.0.0.1";
  options.target_port = target_port;
  Result<std::unique_ptr<WanEmulator>> wan = WanEmulator::Start(options);
  EXPECT_TRUE(wan.ok()) << wan.status().ToString();
  return wan.ok() ? std::move(*wan) : nullptr;
}

tcp::socket Dial(asio::io_context& io, uint16_t port) {
  tcp::socket s(io);
  error_code ec;
  s.connect(tcp::endpoint(asio::ip::address_v4::loopback(), port), ec);
  EXPECT_FALSE(ec) << ec.message();
  return s;
}

std::string ReadToEof(tcp::socket& s) {
  std::string out;
  char buf[64 << 10];
  for (;;) {
    error_code ec;
    const size_t n = s.read_some(asio::buffer(buf), ec);
    out.append(buf, n);
    if (ec) {
      EXPECT_EQ(ec, asio::error::eof) << ec.message();
      return out;
    }
  }
}

// Writes `message` and reads as many bytes back.
std::string RoundTrip(tcp::socket& s, std::string_view message) {
  error_code ec;
  asio::write(s, asio::buffer(message), ec);
  EXPECT_FALSE(ec) << ec.message();
  std::string reply(message.size(), '\0');
  asio::read(s, asio::buffer(reply), ec);
  EXPECT_FALSE(ec) << ec.message();
  return reply;
}

// Sends `n` bytes through `port` to a Sink and returns the count the sink reports.
uint64_t SendToSink(uint16_t port, size_t n) {
  asio::io_context io;
  tcp::socket s = Dial(io, port);
  error_code ec;
  asio::write(s, asio::buffer(std::string(n, 'x')), ec);
  EXPECT_FALSE(ec) << ec.message();
  s.shutdown(tcp::socket::shutdown_send, ec);
  const std::string reply = ReadToEof(s);
  uint64_t count = 0;
  EXPECT_EQ(reply.size(), sizeof(count));
  if (reply.size() == sizeof(count)) std::memcpy(&count, reply.data(), sizeof(count));
  return count;
}

// Asks a Source through `port` for `n` bytes and returns how many arrived.
size_t ReceiveFromSource(uint16_t port, uint64_t n) {
  asio::io_context io;
  tcp::socket s = Dial(io, port);
  error_code ec;
  asio::write(s, asio::buffer(&n, sizeof(n)), ec);
  EXPECT_FALSE(ec) << ec.message();
  return ReadToEof(s).size();
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST(WanEmulatorTest, RejectsBadOptions) {
  EXPECT_EQ(WanEmulator::Start({}).status().code(), StatusCode::kInvalidArgument);
  WanOptions options;
  options.target_host = "127.0.0.1";
  options.target_port = 1;
  options.rate_bytes_per_second = 1000;
  options.burst_bytes = 0;
  EXPECT_EQ(WanEmulator::Start(options).status().code(), StatusCode::kInvalidArgument);
}

TEST(WanEmulatorTest, BytesArriveIntactBothWaysAndAreCounted) {
  TestServer echo(Echo);
  std::unique_ptr<WanEmulator> wan = StartWan(echo.port(), {});
  ASSERT_NE(wan, nullptr);
  const std::string payload = testutil::RandomBytes(4 << 20, 7);

  asio::io_context io;
  tcp::socket s = Dial(io, wan->port());
  // Writing all before reading would deadlock once the echo's socket buffers fill.
  std::thread writer([&] {
    error_code ec;
    asio::write(s, asio::buffer(payload), ec);
    EXPECT_FALSE(ec) << ec.message();
    s.shutdown(tcp::socket::shutdown_send, ec);
  });
  const std::string back = ReadToEof(s);
  writer.join();

  EXPECT_EQ(back.size(), payload.size());
  EXPECT_TRUE(back == payload);  // not EXPECT_EQ: a failure would print 8 MiB
  // Bytes are counted before they are handed on, so the echo's EOF cannot overtake the count.
  EXPECT_EQ(wan->bytes_upstream(), payload.size());
  EXPECT_EQ(wan->bytes_downstream(), payload.size());
  EXPECT_EQ(wan->connections(), 1u);
}

TEST(WanEmulatorTest, RoundTripTakesTwiceTheOneWayDelay) {
  TestServer echo(Echo);
  WanOptions options;
  options.one_way_delay = 50ms;
  std::unique_ptr<WanEmulator> wan = StartWan(echo.port(), options);
  ASSERT_NE(wan, nullptr);
  asio::io_context io;
  tcp::socket s = Dial(io, wan->port());
  for (int i = 0; i < 3; ++i) {
    const Clock::time_point start = Clock::now();
    EXPECT_EQ(RoundTrip(s, "ping"), "ping");
    const double seconds = SecondsSince(start);
    EXPECT_GE(seconds, 0.100);
    EXPECT_LT(seconds, 1.0);
  }
}

TEST(WanEmulatorTest, HalfCloseIsPassedOnAfterTheDelayedData) {
  TestServer sink(Sink);
  WanOptions options;
  options.one_way_delay = 20ms;
  std::unique_ptr<WanEmulator> wan = StartWan(sink.port(), options);
  ASSERT_NE(wan, nullptr);
  const Clock::time_point start = Clock::now();
  // The sink answers only after our EOF, so the count proves the EOF came after every byte.
  EXPECT_EQ(SendToSink(wan->port(), 100'000), 100'000u);
  EXPECT_GE(SecondsSince(start), 0.040);
}

TEST(WanEmulatorTest, RateLimitsUpstream) {
  TestServer sink(Sink);
  WanOptions options;
  options.rate_bytes_per_second = 4'000'000;
  std::unique_ptr<WanEmulator> wan = StartWan(sink.port(), options);
  ASSERT_NE(wan, nullptr);
  const Clock::time_point start = Clock::now();
  EXPECT_EQ(SendToSink(wan->port(), 4'000'000), 4'000'000u);
  const double seconds = SecondsSince(start);
  EXPECT_GE(seconds, 0.7);
  EXPECT_LE(seconds, 2.5);
}

TEST(WanEmulatorTest, ConnectionsShareTheDownstreamRate) {
  TestServer source(Source);
  WanOptions options;
  options.rate_bytes_per_second = 4'000'000;
  std::unique_ptr<WanEmulator> wan = StartWan(source.port(), options);
  ASSERT_NE(wan, nullptr);
  // Two connections of 2 MB each: about 1 s on a shared 4 MB/s link, 0.5 s if each had its own.
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> clients;
  std::atomic<size_t> received{0};
  for (int i = 0; i < 2; ++i) {
    clients.emplace_back([&] { received += ReceiveFromSource(wan->port(), 2'000'000); });
  }
  for (std::thread& t : clients) t.join();
  const double seconds = SecondsSince(start);
  EXPECT_EQ(received, 4'000'000u);
  EXPECT_GE(seconds, 0.7);
  EXPECT_LE(seconds, 2.5);
  EXPECT_EQ(wan->connections(), 2u);
}

TEST(WanEmulatorTest, DelayDoesNotCutThroughput) {
  TestServer sink(Sink);
  WanOptions options;
  options.one_way_delay = 50ms;
  std::unique_ptr<WanEmulator> wan = StartWan(sink.port(), options);
  ASSERT_NE(wan, nullptr);
  // One read in flight at a time would take 256 reads x 50 ms = 13 s at least.
  const Clock::time_point start = Clock::now();
  EXPECT_EQ(SendToSink(wan->port(), 16 << 20), uint64_t{16} << 20);
  EXPECT_LT(SecondsSince(start), 3.0);
  EXPECT_EQ(wan->bytes_upstream(), uint64_t{16} << 20);
}

TEST(WanEmulatorTest, LinkDownResetsConnectionsAndLinkUpRestoresService) {
  TestServer echo(Echo);
  std::unique_ptr<WanEmulator> wan = StartWan(echo.port(), {});
  ASSERT_NE(wan, nullptr);
  asio::io_context io;
  char c;
  error_code ec;

  tcp::socket before = Dial(io, wan->port());
  EXPECT_EQ(RoundTrip(before, "ping"), "ping");
  wan->SetLinkUp(false);
  before.read_some(asio::buffer(&c, 1), ec);
  EXPECT_EQ(ec, asio::error::connection_reset) << ec.message();

  tcp::socket during = Dial(io, wan->port());
  during.read_some(asio::buffer(&c, 1), ec);
  EXPECT_EQ(ec, asio::error::connection_reset) << ec.message();

  wan->SetLinkUp(true);
  tcp::socket after = Dial(io, wan->port());
  EXPECT_EQ(RoundTrip(after, "pong"), "pong");
  EXPECT_EQ(wan->connections(), 2u);  // `during` never reached the target
}

TEST(WanEmulatorTest, StopResetsConnections) {
  TestServer echo(Echo);
  std::unique_ptr<WanEmulator> wan = StartWan(echo.port(), {});
  ASSERT_NE(wan, nullptr);
  asio::io_context io;
  tcp::socket s = Dial(io, wan->port());
  EXPECT_EQ(RoundTrip(s, "ping"), "ping");
  wan->Stop();
  wan->Stop();
  char c;
  error_code ec;
  s.read_some(asio::buffer(&c, 1), ec);
  EXPECT_EQ(ec, asio::error::connection_reset) << ec.message();
}

TEST(WanEmulatorTest, CaptureRecordsTheBytesThatCrossed) {
  TestServer echo(Echo);
  std::unique_ptr<WanEmulator> wan = StartWan(echo.port(), {});
  ASSERT_NE(wan, nullptr);
  asio::io_context io;
  tcp::socket s = Dial(io, wan->port());
  EXPECT_EQ(RoundTrip(s, "before"), "before");

  wan->SetCapture(true);
  EXPECT_EQ(RoundTrip(s, "secret"), "secret");
  wan->SetCapture(false);
  EXPECT_EQ(RoundTrip(s, "after"), "after");

  EXPECT_EQ(wan->captured_upstream(), "secret");
  EXPECT_EQ(wan->captured_downstream(), "secret");
  EXPECT_FALSE(wan->capture_overflowed());
  wan->SetCapture(true);
  EXPECT_EQ(wan->captured_upstream(), "");
}

}  // namespace
}  // namespace weft::net
