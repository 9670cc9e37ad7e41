// WanEmulator over Boost.Asio: one io_context thread owns every socket, timer, delay line and
// token bucket, so only the counters, the capture and the link flag are shared with callers.
// Boost calls use the error_code overloads; thread creation, the one call that throws, is caught.
#include "net/wan_emulator.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <deque>
#include <future>
#include <mutex>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

namespace weft::net {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

constexpr size_t kReadSize = 64 << 10;

enum Direction { kUpstream = 0, kDownstream = 1 };

// A token bucket in bytes. It runs into debt rather than splitting writes to fit the tokens
// left: a write may start whenever the balance is positive and is charged in full, so the
// long-run rate is exact and a write overshoots the burst by at most one write.
class TokenBucket {
 public:
  TokenBucket(uint64_t rate, size_t burst)
      : rate_(static_cast<double>(rate)), burst_(static_cast<double>(burst)), tokens_(burst_) {}

  // How long to wait before the next write may start; zero when it may start now.
  Clock::duration Wait(Clock::time_point now) {
    if (rate_ == 0) return Clock::duration::zero();
    tokens_ =
        std::min(burst_, tokens_ + rate_ * std::chrono::duration<double>(now - last_).count());
    last_ = now;
    if (tokens_ > 0) return Clock::duration::zero();
    return std::chrono::ceil<Clock::duration>(std::chrono::duration<double>((1 - tokens_) / rate_));
  }

  void Take(size_t bytes) {
    if (rate_ != 0) tokens_ -= static_cast<double>(bytes);
  }

 private:
  const double rate_;  // bytes per second; 0 = unlimited
  const double burst_;
  double tokens_;
  Clock::time_point last_ = Clock::now();
};

// Closes `socket` with a TCP reset (SO_LINGER 0), which a peer cannot mistake for a clean end of
// stream as it could a FIN: a truncated response must fail, not look complete.
void ResetSocket(tcp::socket& socket) {
  error_code ignored;
  socket.set_option(asio::socket_base::linger(true, 0), ignored);
  socket.close(ignored);
}

}  // namespace

// All members except those marked are used on the io thread only.
class WanEmulator::Impl {
 public:
  class Connection;

  explicit Impl(const WanOptions& o)
      : options(o),
        acceptor(io),
        work(asio::make_work_guard(io)),
        buckets{TokenBucket(o.rate_bytes_per_second, o.burst_bytes),
                TokenBucket(o.rate_bytes_per_second, o.burst_bytes)} {}

  void Accept();
  void ResetAll();
  // Counts and captures bytes about to be handed to the receiving socket.
  void Delivered(Direction direction, std::string_view bytes);

  const WanOptions options;
  asio::io_context io;
  tcp::acceptor acceptor;
  asio::executor_work_guard<asio::io_context::executor_type> work;
  tcp::resolver::results_type target;
  uint16_t port = 0;                                     // set before the thread starts
  std::array<TokenBucket, 2> buckets;                    // by Direction: the link's two halves
  std::unordered_set<std::shared_ptr<Connection>> live;  // open connections
  std::thread thread;

  // Shared with callers.
  std::array<std::atomic<uint64_t>, 2> bytes{};  // by Direction
  std::atomic<uint64_t> connections{0};
  std::atomic<bool> link_up{true};
  std::atomic<bool> capture_on{false};
  mutable std::mutex capture_mu;
  std::array<std::string, 2> captured;  // by Direction; guarded by capture_mu
  bool capture_overflowed = false;      // guarded by capture_mu
  std::mutex control_mu;  // serialises Stop and SetLinkUp, so nothing is posted after Stop
  bool stopped = false;   // guarded by control_mu
};

// One proxied connection: two pipes, each a delay line from one socket to the other. Handlers
// hold a shared_ptr to it, so it lives until the last of them has run; after Close they return
// without starting new work, which lets the io_context run dry on Stop.
class WanEmulator::Impl::Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Impl& emulator, tcp::socket client)
      : emulator_(emulator),
        client_(std::move(client)),
        target_(emulator.io),
        up_(emulator, kUpstream, &client_, &target_),
        down_(emulator, kDownstream, &target_, &client_) {}

  void Start() {
    asio::async_connect(target_, emulator_.target,
                        [self = shared_from_this()](error_code ec, const tcp::endpoint&) {
                          if (self->closed_) return;
                          if (ec) return self->Close(/*reset=*/true);
                          // The emulated link sets the timing; Nagle would add its own.
                          error_code ignored;
                          self->client_.set_option(tcp::no_delay(true), ignored);
                          self->target_.set_option(tcp::no_delay(true), ignored);
                          self->Read(self->up_);
                          self->Read(self->down_);
                        });
  }

  // With `reset` both sockets are reset; without, both ends have already seen our FIN.
  void Close(bool reset) {
    if (closed_) return;
    closed_ = true;
    for (Pipe* p : {&up_, &down_}) p->timer.cancel();
    for (tcp::socket* s : {&client_, &target_}) {
      if (reset) {
        ResetSocket(*s);
      } else {
        error_code ignored;
        s->close(ignored);
      }
    }
    emulator_.live.erase(shared_from_this());
  }

 private:
  struct Chunk {
    Clock::time_point release;  // read time + one_way_delay
    std::string data;           // empty for the EOF marker
    bool eof = false;
    size_t sent = 0;  // bytes of data already handed to the receiving socket
  };

  // One direction. At most one read and one delivery step (a timer wait or a write) are
  // pending at a time; `reading` and `busy` say which.
  struct Pipe {
    Pipe(Impl& emulator, Direction d, tcp::socket* f, tcp::socket* t)
        : direction(d), from(f), to(t), bucket(&emulator.buckets[d]), timer(emulator.io) {}

    const Direction direction;
    tcp::socket* const from;
    tcp::socket* const to;
    TokenBucket* const bucket;
    asio::steady_timer timer;
    std::deque<Chunk> queue;  // the delay line
    size_t queued_bytes = 0;
    bool reading = false;
    bool busy = false;
    bool read_eof = false;
    std::array<char, kReadSize> buffer;
  };

  // Reads while the delay line has room; a full one stops reading, and the sender then blocks
  // on its own socket buffer as it would behind a slow link.
  void Read(Pipe& p) {
    if (closed_ || p.reading || p.read_eof ||
        p.queued_bytes >= emulator_.options.max_in_flight_bytes) {
      return;
    }
    p.reading = true;
    p.from->async_read_some(
        asio::buffer(p.buffer), [self = shared_from_this(), &p](error_code ec, size_t n) {
          p.reading = false;
          if (self->closed_) return;
          const Clock::time_point release = Clock::now() + self->emulator_.options.one_way_delay;
          if (n > 0) {
            p.queue.push_back({release, std::string(p.buffer.data(), n)});
            p.queued_bytes += n;
          }
          if (ec == asio::error::eof) {
            p.read_eof = true;
            p.queue.push_back({release, {}, /*eof=*/true});
          } else if (ec) {
            return self->Close(/*reset=*/true);
          }
          self->Deliver(p);
          self->Read(p);
        });
  }

  // Hands the head of the delay line to the receiving socket once it is due and the link's
  // bucket allows, then continues with the next.
  void Deliver(Pipe& p) {
    if (closed_ || p.busy || p.queue.empty()) return;
    Chunk& chunk = p.queue.front();
    const Clock::time_point now = Clock::now();
    if (now < chunk.release) return WaitUntil(p, chunk.release);
    if (chunk.eof) {
      error_code ignored;
      p.to->shutdown(tcp::socket::shutdown_send, ignored);
      p.queue.pop_front();
      if (++directions_done_ == 2) Close(/*reset=*/false);
      return;
    }
    const Clock::duration wait = p.bucket->Wait(now);
    if (wait > Clock::duration::zero()) return WaitUntil(p, now + wait);

    size_t n = chunk.data.size() - chunk.sent;
    // Under a rate limit, writes no larger than the burst keep the bursts near what was asked.
    if (emulator_.options.rate_bytes_per_second != 0)
      n = std::min(n, emulator_.options.burst_bytes);
    p.bucket->Take(n);
    emulator_.Delivered(p.direction, std::string_view(chunk.data).substr(chunk.sent, n));
    p.busy = true;
    asio::async_write(*p.to, asio::buffer(chunk.data.data() + chunk.sent, n),
                      [self = shared_from_this(), &p, n](error_code ec, size_t) {
                        p.busy = false;
                        if (self->closed_) return;
                        if (ec) return self->Close(/*reset=*/true);
                        Chunk& done = p.queue.front();
                        done.sent += n;
                        p.queued_bytes -= n;
                        if (done.sent == done.data.size()) p.queue.pop_front();
                        self->Read(p);
                        self->Deliver(p);
                      });
  }

  void WaitUntil(Pipe& p, Clock::time_point when) {
    p.busy = true;
    p.timer.expires_at(when);
    p.timer.async_wait([self = shared_from_this(), &p](error_code) {
      p.busy = false;
      if (self->closed_) return;
      self->Deliver(p);
    });
  }

  Impl& emulator_;
  tcp::socket client_;
  tcp::socket target_;
  Pipe up_;    // client -> target
  Pipe down_;  // target -> client
  bool closed_ = false;
  int directions_done_ = 0;  // EOFs passed on
};

void WanEmulator::Impl::Accept() {
  acceptor.async_accept([this](error_code ec, tcp::socket socket) {
    if (!acceptor.is_open()) return;  // stopped
    // Other errors (a client that reset before we accepted, EMFILE) concern one connection.
    if (!ec) {
      if (!link_up) {
        ResetSocket(socket);
      } else {
        auto connection = std::make_shared<Connection>(*this, std::move(socket));
        live.insert(connection);
        ++connections;
        connection->Start();
      }
    }
    Accept();
  });
}

void WanEmulator::Impl::ResetAll() {
  // Close erases from `live`, so walk a copy.
  const std::vector<std::shared_ptr<Connection>> all(live.begin(), live.end());
  for (const auto& c : all) c->Close(/*reset=*/true);
}

void WanEmulator::Impl::Delivered(Direction direction, std::string_view data) {
  bytes[direction] += data.size();
  if (!capture_on) return;
  std::lock_guard<std::mutex> lock(capture_mu);
  if (!capture_on) return;
  std::string& out = captured[direction];
  const size_t room = kMaxCaptureBytes - out.size();
  if (data.size() > room) capture_overflowed = true;
  out.append(data.substr(0, room));
}

Result<std::unique_ptr<WanEmulator>> WanEmulator::Start(const WanOptions& options) {
  if (options.target_host.empty() || options.target_port == 0) {
    return InvalidArgument("WAN emulator needs a target host and port");
  }
  if (options.rate_bytes_per_second != 0 && options.burst_bytes == 0) {
    return InvalidArgument("WAN emulator: a rate limit needs burst_bytes > 0");
  }
  if (options.max_in_flight_bytes == 0) {
    return InvalidArgument("WAN emulator: max_in_flight_bytes must be > 0");
  }
  if (options.one_way_delay.count() < 0) {
    return InvalidArgument("WAN emulator: one_way_delay must not be negative");
  }
  auto impl = std::make_unique<Impl>(options);
  tcp::resolver resolver(impl->io);
  error_code ec;
  const auto listen = resolver.resolve(options.listen_host, std::to_string(options.listen_port),
                                       tcp::resolver::numeric_service, ec);
  if (ec) {
    return InvalidArgument("WAN emulator cannot resolve " + options.listen_host + ": " +
                           ec.message());
  }
  impl->target = resolver.resolve(options.target_host, std::to_string(options.target_port),
                                  tcp::resolver::numeric_service, ec);
  if (ec) {
    return Unavailable("WAN emulator cannot resolve " + options.target_host + ": " + ec.message());
  }
  const tcp::endpoint endpoint = listen.begin()->endpoint();
  tcp::acceptor& acceptor = impl->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Unavailable("WAN emulator cannot listen on " + options.listen_host + ":" +
                       std::to_string(options.listen_port) + ": " + ec.message());
  }
  impl->port = acceptor.local_endpoint(ec).port();
  if (ec) return Internal("WAN emulator: no local endpoint: " + ec.message());
  impl->Accept();
  try {
    impl->thread = std::thread([io = &impl->io] { io->run(); });
  } catch (const std::system_error& e) {
    return Internal(std::string("WAN emulator cannot start its thread: ") + e.what());
  }
  return std::unique_ptr<WanEmulator>(new WanEmulator(std::move(impl)));
}

WanEmulator::WanEmulator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

WanEmulator::~WanEmulator() {
  Stop();
}

uint16_t WanEmulator::port() const {
  return impl_->port;
}

void WanEmulator::Stop() {
  std::lock_guard<std::mutex> lock(impl_->control_mu);
  if (impl_->stopped) return;
  impl_->stopped = true;
  // Every pending operation then completes with an error and starts nothing new, so run()
  // returns once they have all run.
  asio::post(impl_->io, [impl = impl_.get()] {
    error_code ignored;
    impl->acceptor.close(ignored);
    impl->ResetAll();
    impl->work.reset();
  });
  impl_->thread.join();
}

void WanEmulator::SetLinkUp(bool up) {
  std::lock_guard<std::mutex> lock(impl_->control_mu);
  impl_->link_up = up;
  if (up || impl_->stopped) return;
  // Connections accepted before the flag changed are in `live` by the time this runs, since
  // accept handlers run on the same thread; later ones see the flag.
  std::promise<void> done;
  asio::post(impl_->io, [impl = impl_.get(), &done] {
    impl->ResetAll();
    done.set_value();
  });
  done.get_future().wait();
}

uint64_t WanEmulator::bytes_upstream() const {
  return impl_->bytes[kUpstream];
}
uint64_t WanEmulator::bytes_downstream() const {
  return impl_->bytes[kDownstream];
}
uint64_t WanEmulator::connections() const {
  return impl_->connections;
}

void WanEmulator::SetCapture(bool on) {
  std::lock_guard<std::mutex> lock(impl_->capture_mu);
  if (on) {
    for (std::string& s : impl_->captured) s.clear();
    impl_->capture_overflowed = false;
  }
  impl_->capture_on = on;
}

std::string WanEmulator::captured_upstream() const {
  std::lock_guard<std::mutex> lock(impl_->capture_mu);
  return impl_->captured[kUpstream];
}

std::string WanEmulator::captured_downstream() const {
  std::lock_guard<std::mutex> lock(impl_->capture_mu);
  return impl_->captured[kDownstream];
}

bool WanEmulator::capture_overflowed() const {
  std::lock_guard<std::mutex> lock(impl_->capture_mu);
  return impl_->capture_overflowed;
}

}  // namespace weft::net
