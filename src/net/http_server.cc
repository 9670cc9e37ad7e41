// HttpServer over Boost.Beast 1.74 / Asio. Heads are read asynchronously on the io threads; a
// request then runs on a worker thread with blocking socket I/O. Every Boost call uses the
// error_code overloads; the few that can only throw (allocation, thread creation, ssl::context)
// are caught where the server calls them.
#include "net/http_server.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <deque>
#include <functional>
#include <future>
#include <limits>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "base/ascii.h"

namespace weft::net {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<std::string_view> HttpRequest::Header(std::string_view name) const {
  for (const HttpHeader& h : headers) {
    if (EqualsIgnoreCase(h.name, name)) return std::string_view(h.value);
  }
  return std::nullopt;
}

Status ResponseWriter::Send(int status, const std::vector<HttpHeader>& headers,
                            std::string_view body) {
  WEFT_RETURN_IF_ERROR(Start(status, headers, body.size()));
  WEFT_RETURN_IF_ERROR(Write(body));
  return Finish();
}

void HttpHandler::HandleProtocolError(int status, std::string_view /*code*/,
                                      std::string_view message, ResponseWriter& response) {
  (void)response.Send(status, {{"Content-Type", "text/plain"}}, message);
}

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using SteadyClock = std::chrono::steady_clock;

// Unread request body up to this size, after a successful response, is read and discarded to
// keep the connection if it arrives within kDrainTime; a larger or slower remainder closes it.
constexpr uint64_t kDrainLimit = 1 << 20;
constexpr std::chrono::seconds kDrainTime{1};
// Worker threads beyond HttpServerOptions::worker_threads exit after this long without work.
constexpr std::chrono::seconds kSpareWorkerIdle{10};
// After a response that closes the connection we stop sending and keep reading (discarding) for
// up to this long, so a client still sending gets our response instead of a TCP reset.
constexpr std::chrono::seconds kLingerTime{2};
constexpr int64_t kNoDeadline = std::numeric_limits<int64_t>::max();
// After a keep-alive response the worker waits this long on the socket for the client's next
// request before handing the connection back to the io thread. A busy client's next request
// then costs one wake-up instead of two thread hand-offs (a fifth of the server's CPU on small
// GETs). Only while a quarter of the workers stay free for other connections.
constexpr int kStayMs = 5;
constexpr size_t kStayReadBytes = 16 << 10;
// An idle connection's first read of its next head: small, as most connections are idle.
constexpr size_t kFirstHeadBytes = 1 << 10;
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch())
      .count();
}

std::string ToString(beast::string_view s) {
  return std::string(s.data(), s.size());
}

// RFC 7231 IMF-fixdate, independent of the process locale.
std::string HttpDate() {
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const time_t now = time(nullptr);
  struct tm t;
  gmtime_r(&now, &t);
  char buf[40];
  snprintf(buf, sizeof(buf), "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[t.tm_wday], t.tm_mday,
           kMonths[t.tm_mon], t.tm_year + 1900, t.tm_hour, t.tm_min, t.tm_sec);
  return buf;
}

std::string EndpointString(const tcp::endpoint& e) {
  const std::string addr = e.address().to_string();
  return (e.address().is_v6() ? "[" + addr + "]" : addr) + ":" + std::to_string(e.port());
}

// Header names are tokens; values may not contain CR, LF or NUL (response splitting).
bool ValidHeader(const HttpHeader& h) {
  if (h.name.empty()) return false;
  for (char c : h.name) {
    if (c <= ' ' || c == ':' || c == 0x7f) return false;
  }
  return h.value.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos;
}

bool HasToken(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    const size_t comma = std::min(list.find(','), list.size());
    if (EqualsIgnoreCase(Trim(list.substr(0, comma)), token)) return true;
    list.remove_prefix(std::min(comma + 1, list.size()));
  }
  return false;
}

// Beast's HTTP/1 parser, producing an HttpRequest directly: fields in exact arrival order
// (beast::http::fields groups repeated names) and decoded chunked-body bytes copied into the
// span `out` a BodyReader supplies.
class RequestParser final : public http::basic_parser<true> {
 public:
  HttpRequest request;
  int version = 11;
  std::span<char> out;  // where body bytes go
  size_t out_used = 0;

 private:
  void on_request_impl(http::verb, beast::string_view method, beast::string_view target, int v,
                       error_code&) override {
    request.method = ToString(method);
    request.target = ToString(target);
    version = v;
  }
  void on_response_impl(int, beast::string_view, int, error_code&) override {}
  void on_field_impl(http::field, beast::string_view name, beast::string_view value,
                     error_code&) override {
    request.headers.push_back({ToString(name), ToString(value)});
  }
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<uint64_t>&, error_code&) override {}
  size_t on_body_impl(beast::string_view body, error_code& ec) override { return Put(body, ec); }
  void on_chunk_header_impl(uint64_t, beast::string_view, error_code&) override {}
  size_t on_chunk_body_impl(uint64_t, beast::string_view body, error_code& ec) override {
    return Put(body, ec);
  }
  void on_finish_impl(error_code&) override {}

  size_t Put(beast::string_view body, error_code& ec) {
    const size_t n = std::min(body.size(), out.size() - out_used);
    std::copy_n(body.data(), n, out.data() + out_used);
    out_used += n;
    if (n < body.size()) ec = http::error::need_buffer;
    return n;
  }
};

// Threads running tasks in submission order: `core` threads always, more while tasks wait and
// every thread is busy, up to `max`; those beyond `core` exit after kSpareWorkerIdle idle.
// A request blocked on a slow client then costs a thread, never the others' service.
// Thread-safe. Threads are detached; Stop waits until the last one has left the pool.
class WorkerPool {
 public:
  WorkerPool(size_t core, size_t max)
      : core_(std::max<size_t>(core, 1)), max_(std::max(max, core_)) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < core_; ++i) StartThreadLocked();
  }
  ~WorkerPool() { Stop(); }

  void Submit(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
    if (tasks_.size() > idle_ && live_ < max_) StartThreadLocked();
    cv_.notify_one();
  }

  // Runs the queued tasks, then waits for every thread to leave.
  void Stop() {
    std::unique_lock<std::mutex> lock(mu_);
    stop_ = true;
    cv_.notify_all();
    done_cv_.wait(lock, [this] { return live_ == 0; });
  }

 private:
  void StartThreadLocked() {
    const bool spare = live_ >= core_;
    try {
      std::thread([this, spare] { Run(spare); }).detach();
      ++live_;
    } catch (const std::system_error&) {  // out of threads: the running ones take the task
    }
  }

  void Run(bool spare) {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (tasks_.empty()) {
        if (stop_) break;
        ++idle_;
        auto ready = [this] { return stop_ || !tasks_.empty(); };
        bool woke = true;
        if (spare) {
          woke = cv_.wait_for(lock, kSpareWorkerIdle, ready);
        } else {
          cv_.wait(lock, ready);
        }
        --idle_;
        if (!woke) break;
        continue;
      }
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      try {
        task();
      } catch (...) {  // a throwing handler must not take the process down
      }
      task = nullptr;  // its captures (a connection) go before the lock is taken again
      lock.lock();
    }
    if (--live_ == 0) done_cv_.notify_all();
  }

  const size_t core_;
  const size_t max_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable done_cv_;          // signalled when live_ reaches 0
  std::deque<std::function<void()>> tasks_;  // GUARDED_BY(mu_)
  size_t live_ = 0;                          // threads in Run; GUARDED_BY(mu_)
  size_t idle_ = 0;                          // threads waiting for a task; GUARDED_BY(mu_)
  bool stop_ = false;                        // GUARDED_BY(mu_)
};

class Connection;

class ServerImpl final : public HttpServer {
 public:
  ServerImpl(const HttpServerOptions& options, HttpHandler* handler);
  ~ServerImpl() override { Shutdown(std::chrono::milliseconds(0)); }

  Status Listen();  // before Run: binds, loads TLS files
  void Run();       // starts the threads, the accept loop and the deadline sweeper

  uint16_t port() const override { return port_; }
  std::string url() const override;
  void Shutdown(std::chrono::milliseconds grace) override;

  // For Connection.
  const HttpServerOptions& options() const { return options_; }
  HttpHandler& handler() { return *handler_; }
  ssl::context* tls() { return tls_.get(); }
  bool stopping() const { return stopping_.load(); }
  int64_t idle_ns() const { return idle_ns_; }
  static int64_t Ns(std::chrono::seconds s) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(s).count();
  }
  void Dispatch(std::function<void()> task) { pool_->Submit(std::move(task)); }
  // A head has arrived: the connection becomes busy. False when shutting down (close it).
  bool BeginRequest(Connection* c);
  // The request is over; returns whether the connection may wait for another one.
  bool EndRequest(Connection* c, bool keep_alive);
  // Whether a worker may wait on its connection for the next request (kStayMs); EndStay after.
  bool BeginStay();
  void EndStay();
  void Unregister(Connection* c);

 private:
  void Accept();
  void OnAccept(const error_code& ec, tcp::socket socket);
  void RejectBusy(tcp::socket socket);
  void Sweep();

  const HttpServerOptions options_;
  HttpHandler* const handler_;
  const int64_t idle_ns_;
  asio::io_context io_;  // declared first: destroyed after every object using it
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  asio::strand<asio::io_context::executor_type> accept_strand_;
  tcp::acceptor acceptor_;           // used on accept_strand_ only
  asio::steady_timer accept_retry_;  // on accept_strand_
  asio::steady_timer sweep_timer_;   // used by its own handler chain only
  std::unique_ptr<ssl::context> tls_;
  std::unique_ptr<WorkerPool> pool_;
  std::vector<std::thread> io_threads_;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};

  std::mutex mu_;
  std::condition_variable cv_;                   // signalled when busy_ or connections_ shrink
  std::unordered_set<Connection*> connections_;  // GUARDED_BY(mu_)
  size_t busy_ = 0;                              // GUARDED_BY(mu_)
  size_t staying_ = 0;                           // workers in BeginStay; GUARDED_BY(mu_)

  std::mutex shutdown_mu_;  // serialises Shutdown
  bool running_ = false;    // GUARDED_BY(shutdown_mu_)
};

int64_t SendDeadline(const ServerImpl& server) {
  return NowNs() + ServerImpl::Ns(server.options().send_timeout);
}

// One client connection. Owned by shared_ptrs held by its pending async operation or worker
// task; exactly one of those exists at a time, so the socket is never used concurrently. The
// only cross-thread access is ShutdownSocket (under the server's mu_), which wakes whatever
// blocking or async I/O is pending with an error.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(ServerImpl& server, tcp::socket socket, std::string remote)
      : server_(server), fd_(socket.native_handle()), remote_(std::move(remote)) {
    if (server.tls() != nullptr) {
      tls_ = std::make_unique<ssl::stream<tcp::socket>>(std::move(socket), *server.tls());
    } else {
      plain_.emplace(std::move(socket));
    }
  }

  void Begin();  // io thread: TLS handshake if any, then wait for the first head

  // Called with the server's mu_ held; the fd is still open because Close unregisters first.
  void ShutdownSocket() { ::shutdown(fd_, SHUT_RDWR); }
  bool Expired(int64_t now) const { return deadline_.load(std::memory_order_relaxed) <= now; }
  bool busy = false;  // GUARDED_BY(server mu_)

  // Runs f(stream) -> error_code, a blocking operation the sweeper cuts short (closing the
  // socket) once the clock passes `deadline_ns`.
  template <class F>
  error_code Io(int64_t deadline_ns, F&& f) {
    deadline_.store(deadline_ns, std::memory_order_relaxed);
    const error_code ec = tls_ ? f(*tls_) : f(*plain_);
    deadline_.store(kNoDeadline, std::memory_order_relaxed);
    return ec;
  }
  // Inside Io: moves its deadline (a write that progresses gets more time).
  void Renew(int64_t deadline_ns) { deadline_.store(deadline_ns, std::memory_order_relaxed); }
  beast::flat_buffer& buffer() { return buffer_; }
  RequestParser& parser() { return *parser_; }
  ServerImpl& server() { return server_; }

 private:
  tcp::socket& socket() { return tls_ ? tls_->next_layer() : *plain_; }
  // How a head read ended: a request to serve (status 0), a malformed one to answer with
  // `status`, or a connection to close.
  struct Head {
    bool close = false;
    int status = 0;
    std::string_view code;
    std::string message;
  };
  void PrepareParser();
  // Asynchronously, on the io thread: waits up to the idle timeout for the head's first byte,
  // then up to the header timeout for the rest (ReadHeadNow).
  void ReadHead();
  void ReadHeadNow(int64_t deadline_ns);
  int64_t HeaderNs() const { return ServerImpl::Ns(server_.options().header_timeout); }
  void OnHead(const error_code& ec);
  Head Classify(const error_code& ec) const;
  // Worker thread: serves `head`'s request, then the connection's next ones while they come
  // soon enough (NextHeadArrived); then hands the connection back to the io thread.
  void Serve(Head head);
  // Whether a whole request head is buffered, after waiting up to kStayMs for bytes.
  bool NextHeadArrived();
  bool HeadBuffered() const;
  bool ServeRequest();  // returns whether the connection may stay open
  void ServeProtocolError(int status, std::string_view code, std::string_view message);
  void LingerClose();
  void LingerRead(std::shared_ptr<std::vector<char>> scratch);
  void Close();

  ServerImpl& server_;
  const int fd_;
  const std::string remote_;
  std::optional<tcp::socket> plain_;               // without TLS
  std::unique_ptr<ssl::stream<tcp::socket>> tls_;  // with TLS
  beast::flat_buffer buffer_;  // bytes read past the current head (body, pipelined requests)
  std::optional<RequestParser> parser_;
  std::atomic<int64_t> deadline_{kNoDeadline};  // the sweeper closes the socket after this
};

// The body of the request on `conn`. A Content-Length body is read straight into the caller's
// buffer once the bytes buffered with the head are used; a chunked one goes through Beast's
// parser, which decodes the chunks into the caller's buffer.
class BodyReaderImpl final : public BodyReader {
 public:
  BodyReaderImpl(Connection& conn, bool expect_continue)
      : conn_(conn),
        chunked_(conn.parser().chunked()),
        remaining_(conn.parser().content_length().value_or(0)),
        expect_continue_(expect_continue),
        start_ns_(NowNs()) {}

  Result<size_t> Read(std::span<char> out) override {
    if (error_) return *error_;
    if (out.empty() || done()) return size_t{0};
    if (expect_continue_ && !continue_sent_) {
      continue_sent_ = true;
      start_ns_ = NowNs();  // the client starts sending now
      const error_code ec = conn_.Io(SendDeadline(conn_.server()), [](auto& s) {
        error_code e;
        asio::write(s, asio::buffer(kContinue.data(), kContinue.size()), e);
        return e;
      });
      if (ec) return Fail("cannot send 100 Continue: " + ec.message());
    }
    Result<size_t> n = chunked_ ? ReadChunked(out) : ReadLength(out);
    if (n.ok()) bytes_read_ += *n;
    return n;
  }

  uint64_t bytes_read() const override { return bytes_read_; }
  bool done() const { return chunked_ ? conn_.parser().is_done() : remaining_ == 0; }
  // The client waits for "100 Continue" before sending the body we have not read.
  bool awaiting_continue() const { return expect_continue_ && !continue_sent_ && !done(); }
  // The client asked for 100 Continue and has not had it (its body may be empty).
  bool continue_owed() const { return expect_continue_ && !continue_sent_; }
  // Body bytes not yet read; nullopt when unknown (chunked).
  std::optional<uint64_t> remaining() const {
    if (done()) return 0;
    return chunked_ ? std::nullopt : std::optional<uint64_t>(remaining_);
  }

  // Reads and discards up to about `limit` bytes arriving within kDrainTime; true if the
  // body then ended.
  bool Drain(uint64_t limit) {
    if (awaiting_continue()) return false;
    cap_ns_ = NowNs() + ServerImpl::Ns(kDrainTime);
    std::vector<char> scratch(64 << 10);
    for (uint64_t drained = 0; !done() && drained <= limit;) {
      Result<size_t> n = Read(scratch);
      if (!n.ok()) return false;
      drained += *n;
    }
    return done();
  }

 private:
  Status Fail(std::string why) {
    error_ = InvalidArgument(Reason::kIncompleteBody, why);
    return *error_;
  }

  // When the next read must have returned: body_timeout from now, and no later than the
  // body's minimum average rate allows.
  int64_t ReadDeadline() const {
    const HttpServerOptions& o = conn_.server().options();
    const int64_t stall = ServerImpl::Ns(o.body_timeout);
    int64_t deadline = NowNs() + stall;
    if (o.min_body_rate > 0) {
      const uint64_t earned = bytes_read_ / o.min_body_rate;  // whole seconds of credit
      const int64_t by_rate =
          start_ns_ + stall +
          static_cast<int64_t>(std::min<uint64_t>(earned, uint64_t{1} << 32)) * 1'000'000'000;
      deadline = std::min(deadline, by_rate);
    }
    return std::min(deadline, cap_ns_);
  }

  Result<size_t> ReadLength(std::span<char> out) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(out.size(), remaining_));
    size_t n = 0;
    beast::flat_buffer& buffered = conn_.buffer();
    if (buffered.size() > 0) {
      n = asio::buffer_copy(asio::buffer(out.data(), want), buffered.data());
      buffered.consume(n);
    } else {
      const error_code ec = conn_.Io(ReadDeadline(), [&](auto& s) {
        error_code e;
        n = s.read_some(asio::buffer(out.data(), want), e);
        return e;
      });
      if (ec) {
        return Fail("the connection ended after " + std::to_string(bytes_read_) + " of " +
                    std::to_string(bytes_read_ + remaining_) + " body bytes (" + ec.message() +
                    ")");
      }
    }
    remaining_ -= n;
    return n;
  }

  Result<size_t> ReadChunked(std::span<char> out) {
    RequestParser& parser = conn_.parser();
    parser.out = out;
    parser.out_used = 0;
    parser.eager(true);  // decode every buffered chunk that fits, not one piece per call
    // Beast reads only into the buffer's spare capacity (at least 512 bytes): give it room.
    conn_.buffer().reserve(64 << 10);
    error_code ec;
    while (parser.out_used == 0 && !parser.is_done() && !ec) {
      ec = conn_.Io(ReadDeadline(), [&](auto& s) {
        error_code e;
        http::read_some(s, conn_.buffer(), parser, e);
        return e == http::error::need_buffer ? error_code() : e;
      });
    }
    const size_t n = parser.out_used;
    parser.out = {};
    if (ec) {
      return Fail("chunked body after " + std::to_string(bytes_read_) + " bytes: " + ec.message());
    }
    return n;
  }

  Connection& conn_;
  const bool chunked_;
  uint64_t remaining_;  // Content-Length bodies
  const bool expect_continue_;
  bool continue_sent_ = false;
  int64_t start_ns_;              // when the client could start sending the body
  int64_t cap_ns_ = kNoDeadline;  // Drain's limit
  uint64_t bytes_read_ = 0;
  std::optional<Status> error_;  // sticky: once the body failed, every Read fails
};

// Writes one response. The status line and headers are held until the first Write or Finish
// so that small responses go out in one system call; body bytes are written directly from the
// caller's buffer (gather write), never copied.
class ResponseWriterImpl final : public ResponseWriter {
 public:
  // `body` is null for protocol errors (always closing).
  ResponseWriterImpl(Connection& conn, const BodyReaderImpl* body, bool head_request, bool http10,
                     bool close)
      : conn_(conn), body_(body), head_request_(head_request), http10_(http10), close_(close) {}

  Status Start(int status, const std::vector<HttpHeader>& headers,
               std::optional<uint64_t> content_length) override {
    if (started_) return FailedPrecondition("the response was already started");
    if (status < 200 || status > 999) {
      return InvalidArgument("invalid response status " + std::to_string(status));
    }
    for (const HttpHeader& h : headers) {
      if (!ValidHeader(h)) return InvalidArgument("invalid response header '" + h.name + "'");
    }
    started_ = true;
    no_body_ = head_request_ || status == 204 || status == 304;
    length_ = content_length;

    std::string reason(http::obsolete_reason(http::int_to_status(status)));
    if (reason.starts_with('<')) reason = "Unknown";
    head_ = "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\n";
    bool has_date = false, has_server = false;
    for (const HttpHeader& h : headers) {
      // Framing is ours: it follows content_length and the connection's state.
      if (EqualsIgnoreCase(h.name, "Content-Length") ||
          EqualsIgnoreCase(h.name, "Transfer-Encoding"))
        continue;
      if (EqualsIgnoreCase(h.name, "Connection")) {
        close_ = close_ || HasToken(h.value, "close");
        continue;
      }
      has_date = has_date || EqualsIgnoreCase(h.name, "Date");
      has_server = has_server || EqualsIgnoreCase(h.name, "Server");
      head_ += h.name + ": " + h.value + "\r\n";
    }
    if (!has_date) head_ += "Date: " + HttpDate() + "\r\n";
    if (!has_server) head_ += "Server: weft\r\n";
    if (length_) {
      if (status != 204) head_ += "Content-Length: " + std::to_string(*length_) + "\r\n";
    } else if (!no_body_) {
      if (http10_) {
        close_ = true;  // an HTTP/1.0 client reads the body until the connection closes
      } else {
        chunked_ = true;
        head_ += "Transfer-Encoding: chunked\r\n";
      }
    }
    if (!close_ && body_ != nullptr && !body_->done()) {
      // A client waiting for 100 Continue may or may not send the body now; a large or unknown
      // remainder is not worth draining.
      // An error closes at once: the refused client may be one that never sends the rest.
      const std::optional<uint64_t> left = body_->remaining();
      close_ = status >= 400 || body_->awaiting_continue() || !left || *left > kDrainLimit;
    }
    close_ = close_ || conn_.server().stopping();
    if (close_) {
      head_ += "Connection: close\r\n";
    } else if (http10_) {
      head_ += "Connection: keep-alive\r\n";
    }
    head_ += "\r\n";
    // A final answer to "Expect: 100-continue" without a 100 first is allowed, but botocore
    // then keeps the answer's status line for the connection's next request and misreads its
    // response (a 60 s stall in `aws s3 sync` after every empty file): on a connection that
    // stays open, the 100 goes first.
    if (!close_ && body_ != nullptr && body_->continue_owed()) head_.insert(0, kContinue);
    return OkStatus();
  }

  using ResponseWriter::Write;
  Status Write(std::span<const std::string_view> pieces) override {
    if (!started_ || finished_) return FailedPrecondition("Write outside Start..Finish");
    if (error_) return *error_;
    size_t size = 0;
    for (std::string_view piece : pieces) size += piece.size();
    if (length_ && size > *length_ - written_) {
      return InvalidArgument("the response body is longer than its Content-Length " +
                             std::to_string(*length_));
    }
    written_ += size;
    if (no_body_ || size == 0) return OkStatus();  // an empty chunk would end the body
    std::vector<asio::const_buffer> buffers;
    buffers.reserve(pieces.size() + 3);
    char size_line[24];
    if (chunked_) {
      const int len = snprintf(size_line, sizeof(size_line), "%zx\r\n", size);
      buffers.push_back(asio::buffer(size_line, static_cast<size_t>(len)));
    }
    for (std::string_view piece : pieces) {
      if (!piece.empty()) buffers.push_back(asio::buffer(piece.data(), piece.size()));
    }
    if (chunked_) buffers.push_back(asio::buffer("\r\n", 2));
    return SendWithHead(std::move(buffers));
  }

  Status Finish() override {
    if (!started_) return FailedPrecondition("Finish before Start");
    if (finished_) return OkStatus();
    if (error_) return *error_;
    if (length_ && !no_body_ && written_ < *length_) {
      return FailedPrecondition("the response body has " + std::to_string(written_) + " of " +
                                std::to_string(*length_) + " bytes");
    }
    WEFT_RETURN_IF_ERROR(
        SendWithHead(chunked_ ? std::vector<asio::const_buffer>{asio::buffer("0\r\n\r\n", 5)}
                              : std::vector<asio::const_buffer>{}));
    finished_ = true;
    return OkStatus();
  }

  bool started() const override { return started_; }

  // After the handler: completes a response the handler did not Finish when that is safe
  // (a chunked body may have been cut short, so it is not). True if the response is whole.
  bool Complete() {
    if (started_ && !finished_ && !chunked_) (void)Finish();
    return finished_;
  }
  bool close() const { return close_; }

 private:
  Status SendWithHead(std::vector<asio::const_buffer> buffers) {
    if (!head_.empty()) buffers.insert(buffers.begin(), asio::buffer(head_));
    if (buffers.empty()) return OkStatus();
    // asio's default completion condition caps each system call at 64 KiB; a window of
    // chunks goes out in as few calls as the socket takes. It runs before each call: the
    // send deadline counts from the last progress, so a large response to a slow but
    // reading client is not cut off, and a client that stopped reading is.
    auto as_much_as_fits = [this](const error_code& e, size_t) -> size_t {
      if (e) return 0;
      conn_.Renew(SendDeadline(conn_.server()));
      return std::numeric_limits<size_t>::max();
    };
    const error_code ec = conn_.Io(SendDeadline(conn_.server()), [&](auto& s) {
      error_code e;
      asio::write(s, buffers, as_much_as_fits, e);
      return e;
    });
    if (ec) {
      error_ = Unavailable("writing the response: " + ec.message());
      return *error_;
    }
    head_.clear();
    return OkStatus();
  }

  Connection& conn_;
  const BodyReaderImpl* const body_;
  const bool head_request_;
  const bool http10_;
  bool close_;
  bool started_ = false;
  bool finished_ = false;
  bool no_body_ = false;  // HEAD, 204, 304: headers only
  bool chunked_ = false;
  std::optional<uint64_t> length_;
  uint64_t written_ = 0;
  std::string head_;  // status line and headers not yet sent
  std::optional<Status> error_;
};

void Connection::Begin() {
  error_code ec;
  socket().set_option(tcp::no_delay(true), ec);
  if (!tls_) return ReadHead();
  deadline_ = NowNs() + server_.idle_ns();
  tls_->async_handshake(ssl::stream_base::server, [self = shared_from_this()](error_code e) {
    self->deadline_ = kNoDeadline;
    if (e) return self->Close();
    self->ReadHead();
  });
}

void Connection::PrepareParser() {
  parser_.emplace();
  parser_->header_limit(static_cast<uint32_t>(
      std::min<size_t>(server_.options().max_header_bytes, std::numeric_limits<uint32_t>::max())));
  // Unlimited (the body is streamed). Not boost::none: Beast 1.74 compares the content length
  // against the optional and rejects every body when it is empty.
  parser_->body_limit(std::numeric_limits<uint64_t>::max());
}

void Connection::ReadHead() {
  PrepareParser();
  if (buffer_.size() == 0) buffer_.shrink_to_fit();  // idle connections hold no buffer
  // With TLS, the next request's bytes may already sit in the stream's own buffers, where
  // neither the socket nor OpenSSL shows them: the whole head gets the idle timeout.
  if (tls_) return ReadHeadNow(NowNs() + server_.idle_ns());
  if (buffer_.size() != 0) return ReadHeadNow(NowNs() + HeaderNs());
  deadline_ = NowNs() + server_.idle_ns();
  // A read, not async_wait: Asio's epoll reactor is edge-triggered and async_wait does not
  // look before it waits, so bytes that arrived while a worker owned the socket would never
  // wake it; a read takes what is there first.
  plain_->async_read_some(buffer_.prepare(kFirstHeadBytes),
                          [self = shared_from_this()](error_code ec, size_t n) {
                            if (ec) return self->Close();
                            self->buffer_.commit(n);
                            self->ReadHeadNow(NowNs() + self->HeaderNs());
                          });
}

void Connection::ReadHeadNow(int64_t deadline_ns) {
  deadline_ = deadline_ns;
  auto done = [self = shared_from_this()](error_code ec, size_t) { self->OnHead(ec); };
  if (tls_) {
    http::async_read_header(*tls_, buffer_, *parser_, std::move(done));
  } else {
    http::async_read_header(*plain_, buffer_, *parser_, std::move(done));
  }
}

Connection::Head Connection::Classify(const error_code& ec) const {
  Head head;
  if (ec == http::error::header_limit) {
    head.status = 400;
    head.code = "RequestHeaderSectionTooLarge";
    head.message = "the request head is larger than " +
                   std::to_string(server_.options().max_header_bytes) + " bytes";
  } else if (ec && ec.category() == http::make_error_code(http::error::bad_method).category() &&
             ec != http::error::end_of_stream && ec != http::error::partial_message) {
    head.status = 400;
    head.code = "BadRequest";
    head.message = "malformed request: " + ec.message();
  } else if (ec) {
    head.close = true;  // the peer went away, timed out, or shutdown closed us
  }
  return head;
}

void Connection::OnHead(const error_code& ec) {
  deadline_ = kNoDeadline;
  Head head = Classify(ec);
  if (head.close || !server_.BeginRequest(this)) return Close();
  server_.Dispatch([self = shared_from_this(), head = std::move(head)] { self->Serve(head); });
}

void Connection::Serve(Head head) {
  for (;;) {
    bool keep_alive = false;
    if (head.status != 0) {
      ServeProtocolError(head.status, head.code, head.message);
    } else {
      keep_alive = ServeRequest();
    }
    if (!server_.EndRequest(this, keep_alive)) return LingerClose();
    if (!NextHeadArrived()) return ReadHead();
    PrepareParser();
    error_code ec;
    Io(NowNs() + HeaderNs(), [&](auto& stream) {
      http::read_header(stream, buffer_, *parser_, ec);
      return ec;
    });
    head = Classify(ec);
    if (head.close || !server_.BeginRequest(this)) return Close();
  }
}

bool Connection::NextHeadArrived() {
  // With TLS, decrypted bytes may wait inside OpenSSL where poll cannot see them.
  if (tls_) return false;
  if (!HeadBuffered()) {
    if (!server_.BeginStay()) return false;
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, kStayMs);
    server_.EndStay();
    if (ready <= 0) return false;
    // Only what has arrived, without waiting: a head still incomplete goes back to the io
    // thread, so a client sending half of one cannot hold a worker.
    const auto space = buffer_.prepare(kStayReadBytes);
    const ssize_t n = ::recv(fd_, space.data(), space.size(), MSG_DONTWAIT);
    if (n <= 0) return false;  // closed, or nothing after all: the io thread's read tells
    buffer_.commit(static_cast<size_t>(n));
  }
  return HeadBuffered();
}

bool Connection::HeadBuffered() const {
  const std::string_view bytes(static_cast<const char*>(buffer_.data().data()), buffer_.size());
  return bytes.find("\r\n\r\n") != std::string_view::npos;
}

bool Connection::ServeRequest() {
  HttpRequest& request = parser_->request;
  const size_t q = request.target.find('?');
  request.path = request.target.substr(0, q);
  if (q != std::string::npos) request.query = request.target.substr(q + 1);
  if (const auto length = parser_->content_length()) request.content_length = *length;
  request.chunked = parser_->chunked();
  request.remote_address = remote_;
  request.tls = tls_ != nullptr;

  // Beast frames only "chunked" as the last coding; anything else we cannot decode.
  if (const auto te = request.Header("Transfer-Encoding");
      te && !(request.chunked && EqualsIgnoreCase(Trim(*te), "chunked"))) {
    ServeProtocolError(501, "NotImplemented",
                       "Transfer-Encoding '" + std::string(*te) + "' is not supported");
    return false;
  }
  const bool http10 = parser_->version < 11;
  const auto expect = request.Header("Expect");
  BodyReaderImpl body(*this, !http10 && expect && EqualsIgnoreCase(Trim(*expect), "100-continue"));
  ResponseWriterImpl response(*this, &body, request.method == "HEAD", http10,
                              !parser_->keep_alive());
  bool threw = false;
  try {
    server_.handler().Handle(request, body, response);
    if (!response.started()) {
      server_.handler().HandleProtocolError(500, "InternalError",
                                            "the request handler sent no response", response);
    }
  } catch (...) {  // Weft handlers do not throw; if one does, this request fails alone
    threw = true;
  }
  if (!response.started()) (void)response.Send(500, {}, "");
  bool keep_alive = !threw && response.Complete() && !response.close();
  if (keep_alive && !body.done()) keep_alive = body.Drain(kDrainLimit);
  return keep_alive;
}

void Connection::ServeProtocolError(int status, std::string_view code, std::string_view message) {
  ResponseWriterImpl response(*this, nullptr, false, false, /*close=*/true);
  try {
    server_.handler().HandleProtocolError(status, code, message, response);
  } catch (...) {
  }
  if (!response.started()) (void)response.Send(status, {{"Content-Type", "text/plain"}}, message);
  (void)response.Complete();
}

void Connection::LingerClose() {
  error_code ec;
  socket().shutdown(tcp::socket::shutdown_send, ec);
  if (ec) return Close();
  deadline_ =
      NowNs() + std::min<int64_t>(server_.idle_ns(), std::chrono::nanoseconds(kLingerTime).count());
  LingerRead(std::make_shared<std::vector<char>>(16 << 10));
}

void Connection::LingerRead(std::shared_ptr<std::vector<char>> scratch) {
  socket().async_read_some(asio::buffer(*scratch),
                           [self = shared_from_this(), scratch](error_code ec, size_t) {
                             if (ec) return self->Close();
                             self->LingerRead(scratch);
                           });
}

void Connection::Close() {
  server_.Unregister(this);
  error_code ec;
  socket().close(ec);
}

ServerImpl::ServerImpl(const HttpServerOptions& options, HttpHandler* handler)
    : options_(options),
      handler_(handler),
      idle_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(options.idle_timeout).count()),
      io_(static_cast<int>(std::max<size_t>(options.io_threads, 1))),
      work_(io_.get_executor()),
      accept_strand_(io_.get_executor()),
      acceptor_(accept_strand_),
      accept_retry_(accept_strand_),
      sweep_timer_(io_) {}

Status ServerImpl::Listen() {
  if (options_.tls_cert_file.empty() != options_.tls_key_file.empty()) {
    return InvalidArgument("TLS needs both tls_cert_file and tls_key_file");
  }
  error_code ec;
  if (!options_.tls_cert_file.empty()) {
    tls_ = std::make_unique<ssl::context>(ssl::context::tls_server);
    tls_->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                          ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                          ssl::context::no_tlsv1_1,
                      ec);
    if (!ec) tls_->use_certificate_chain_file(options_.tls_cert_file, ec);
    if (ec) {
      return InvalidArgument("cannot load TLS certificate " + options_.tls_cert_file + ": " +
                             ec.message());
    }
    tls_->use_private_key_file(options_.tls_key_file, ssl::context::pem, ec);
    if (ec) {
      return InvalidArgument("cannot load TLS key " + options_.tls_key_file + ": " + ec.message());
    }
  }
  const std::string where = options_.host + ":" + std::to_string(options_.port);
  tcp::endpoint endpoint;
  const asio::ip::address address = asio::ip::make_address(options_.host, ec);
  if (!ec) {
    endpoint = tcp::endpoint(address, options_.port);
  } else {
    tcp::resolver resolver(io_);
    const auto results =
        resolver.resolve(options_.host, std::to_string(options_.port), tcp::resolver::passive, ec);
    if (ec || results.empty()) {
      return Unavailable("cannot listen on " + where + ": cannot resolve host (" + ec.message() +
                         ")");
    }
    endpoint = results.begin()->endpoint();
  }
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) port_ = acceptor_.local_endpoint(ec).port();
  if (ec) return Unavailable("cannot listen on " + where + ": " + ec.message());
  return OkStatus();
}

void ServerImpl::Run() {
  pool_ = std::make_unique<WorkerPool>(options_.worker_threads, options_.max_worker_threads);
  asio::post(accept_strand_, [this] { Accept(); });
  Sweep();
  for (size_t i = 0; i < std::max<size_t>(options_.io_threads, 1); ++i) {
    io_threads_.emplace_back([this] {
      for (;;) {
        try {
          io_.run();
          return;
        } catch (...) {  // a completion handler threw (allocation): keep serving
        }
      }
    });
  }
  running_ = true;
}

std::string ServerImpl::url() const {
  const bool v6 = options_.host.find(':') != std::string::npos;
  return std::string(tls_ ? "https://" : "http://") + (v6 ? "[" : "") + options_.host +
         (v6 ? "]" : "") + ":" + std::to_string(port_);
}

void ServerImpl::Accept() {
  acceptor_.async_accept(
      io_, [this](const error_code& ec, tcp::socket socket) { OnAccept(ec, std::move(socket)); });
}

void ServerImpl::OnAccept(const error_code& ec, tcp::socket socket) {
  if (!acceptor_.is_open()) return;
  if (ec) {  // e.g. out of file descriptors: try again shortly rather than spin
    accept_retry_.expires_after(std::chrono::milliseconds(50));
    accept_retry_.async_wait([this](const error_code& e) {
      if (!e) Accept();
    });
    return;
  }
  Accept();
  error_code peer_ec;
  const tcp::endpoint peer = socket.remote_endpoint(peer_ec);
  std::shared_ptr<Connection> connection;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;  // the socket closes as it goes out of scope
    if (connections_.size() < options_.max_connections) {
      connection = std::make_shared<Connection>(*this, std::move(socket),
                                                peer_ec ? "unknown" : EndpointString(peer));
      connections_.insert(connection.get());
    }
  }
  if (connection) {
    connection->Begin();
  } else {
    RejectBusy(std::move(socket));
  }
}

// Over max_connections: a fixed 503 without reading the request; TLS peers are just closed.
void ServerImpl::RejectBusy(tcp::socket socket) {
  static constexpr std::string_view k503 =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
  if (tls_) return;
  auto s = std::make_shared<tcp::socket>(std::move(socket));
  asio::async_write(*s, asio::buffer(k503.data(), k503.size()), [s](const error_code&, size_t) {
    error_code ec;
    s->shutdown(tcp::socket::shutdown_send, ec);
    s->close(ec);
  });
}

void ServerImpl::Sweep() {
  const std::chrono::seconds shortest = std::min({options_.idle_timeout, options_.header_timeout,
                                                  options_.body_timeout, options_.send_timeout});
  sweep_timer_.expires_after(
      std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(shortest) / 4,
                 std::chrono::milliseconds(50), std::chrono::milliseconds(1000)));
  sweep_timer_.async_wait([this](const error_code& ec) {
    if (ec) return;
    const int64_t now = NowNs();
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (Connection* c : connections_) {
        if (c->Expired(now)) c->ShutdownSocket();
      }
    }
    Sweep();
  });
}

bool ServerImpl::BeginRequest(Connection* c) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return false;
  c->busy = true;
  ++busy_;
  return true;
}

bool ServerImpl::EndRequest(Connection* c, bool keep_alive) {
  std::lock_guard<std::mutex> lock(mu_);
  c->busy = false;
  --busy_;
  cv_.notify_all();
  return keep_alive && !stopping_;
}

bool ServerImpl::BeginStay() {
  std::lock_guard<std::mutex> lock(mu_);
  // A quarter of the pool stays free for requests arriving on other connections.
  const size_t reserve = std::max<size_t>(options_.worker_threads / 4, 1);
  if (stopping_ || busy_ + staying_ + 1 + reserve > options_.worker_threads) return false;
  ++staying_;
  return true;
}

void ServerImpl::EndStay() {
  std::lock_guard<std::mutex> lock(mu_);
  --staying_;
}

void ServerImpl::Unregister(Connection* c) {
  std::lock_guard<std::mutex> lock(mu_);
  if (connections_.erase(c) > 0) cv_.notify_all();
}

void ServerImpl::Shutdown(std::chrono::milliseconds grace) {
  std::lock_guard<std::mutex> once(shutdown_mu_);
  if (!running_) return;
  running_ = false;
  const auto deadline = SteadyClock::now() + grace;
  std::promise<void> closed;
  asio::post(accept_strand_, [this, &closed] {
    error_code ec;
    acceptor_.close(ec);
    accept_retry_.cancel();
    closed.set_value();
  });
  closed.get_future().wait();
  {
    std::unique_lock<std::mutex> lock(mu_);
    stopping_ = true;
    for (Connection* c : connections_) {
      if (!c->busy) c->ShutdownSocket();
    }
    cv_.wait_until(lock, deadline, [this] { return busy_ == 0; });
    for (Connection* c : connections_) c->ShutdownSocket();
    cv_.wait(lock, [this] { return connections_.empty(); });
  }
  pool_->Stop();
  work_.reset();
  io_.stop();
  for (std::thread& t : io_threads_) t.join();
  io_threads_.clear();
}

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options,
                                                      HttpHandler* handler) {
  if (handler == nullptr) return InvalidArgument("HttpServer needs a handler");
  try {
    auto server = std::make_unique<ServerImpl>(options, handler);
    WEFT_RETURN_IF_ERROR(server->Listen());
    server->Run();
    return std::unique_ptr<HttpServer>(std::move(server));
  } catch (const std::exception& e) {  // allocation, thread creation, ssl::context
    return Internal(std::string("starting the HTTP server: ") + e.what());
  }
}

}  // namespace weft::net
