#include "net/http_client.h"

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <exception>
#include <optional>
#include <utility>

#include "base/ascii.h"

namespace weft::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// Bytes one socket read may take (Beast reads at most 64 KiB at a time anyway).
constexpr size_t kReadBytes = 64 << 10;

struct Origin {
  bool tls = false;
  std::string host;  // without brackets: what we resolve and verify
  uint16_t port = 0;
  std::string host_header;  // "[::1]:9000", the port left out when it is the default
  std::string url;          // "https://[::1]:9000"
};

Result<Origin> ParseOrigin(std::string_view url) {
  Origin o;
  std::string_view rest;
  if (url.starts_with("http://")) {
    rest = url.substr(7);
  } else if (url.starts_with("https://")) {
    o.tls = true;
    rest = url.substr(8);
  } else {
    return InvalidArgument("URL must start with http:// or https://: '" + std::string(url) + "'");
  }
  if (rest.ends_with('/')) rest.remove_suffix(1);
  const auto bad = [&](std::string_view why) {
    return InvalidArgument("bad URL '" + std::string(url) + "': " + std::string(why));
  };
  if (rest.find_first_of("/?#@") != std::string_view::npos) {
    return bad("only scheme://host[:port] is supported");
  }
  std::string_view host = rest, port;
  if (rest.starts_with('[')) {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) return bad("unclosed '['");
    host = rest.substr(1, close - 1);
    std::string_view after = rest.substr(close + 1);
    if (!after.empty() && !after.starts_with(':')) return bad("junk after ']'");
    if (!after.empty()) port = after.substr(1);
  } else if (const size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (port.empty()) return bad("empty port");
  }
  if (host.empty()) return bad("no host");
  o.host = std::string(host);
  o.port = o.tls ? 443 : 80;
  const bool default_port = port.empty();
  if (!default_port) {
    unsigned long p = 0;
    for (char c : port) {
      if (c < '0' || c > '9' || p > 65535) return bad("bad port");
      p = p * 10 + static_cast<unsigned long>(c - '0');
    }
    if (p == 0 || p > 65535) return bad("bad port");
    o.port = static_cast<uint16_t>(p);
  }
  const std::string bracketed = o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host;
  o.host_header = default_port ? bracketed : bracketed + ":" + std::to_string(o.port);
  o.url = (o.tls ? "https://" : "http://") + bracketed + ":" + std::to_string(o.port);
  return o;
}

class BeastHttpClient : public HttpClient {
 public:
  BeastHttpClient(Origin origin, HttpClientOptions options, std::unique_ptr<ssl::context> tls)
      : origin_(std::move(origin)), options_(std::move(options)), tls_context_(std::move(tls)) {}
  ~BeastHttpClient() override { Close(); }

  Result<HttpResponse> Send(std::string_view method, std::string_view target,
                            const std::vector<HttpHeader>& headers,
                            std::string_view body) override {
    try {
      http::request<http::string_body> request;
      request.method_string(beast::string_view(method.data(), method.size()));
      request.target(beast::string_view(target.data(), target.size()));
      request.version(11);
      request.set(http::field::host, origin_.host_header);
      request.set(http::field::user_agent, "weft");
      for (const HttpHeader& h : headers) request.insert(h.name, h.value);
      request.body() = std::string(body);
      request.prepare_payload();

      const Clock::time_point deadline = Clock::now() + options_.timeout;
      const bool reused = connected();
      if (!reused) WEFT_RETURN_IF_ERROR(Connect(deadline));
      bool retryable = false;
      Result<HttpResponse> response = Exchange(request, deadline, &retryable);
      // A server may close an idle keep-alive connection just as we reuse it: the request
      // then fails before any byte of a response. One retry on a fresh connection covers
      // that, as browsers and curl do.
      if (!response.ok() && reused && retryable) {
        WEFT_RETURN_IF_ERROR(Connect(deadline));
        response = Exchange(request, deadline, &retryable);
      }
      return response;
    } catch (const std::exception& e) {
      Close();
      return Unavailable("request to " + origin_.url + " failed: " + e.what());
    }
  }

  const std::string& url() const override { return origin_.url; }

 private:
  bool connected() const { return plain_.has_value() || secure_.has_value(); }

  tcp::socket& lowest() { return secure_ ? secure_->next_layer() : *plain_; }

  // Runs one asynchronous operation on io_ to completion; at `deadline` the socket is
  // cancelled and the result is beast::error::timeout. Blocking Beast calls take no deadline,
  // hence asynchronous calls run one at a time. One timer per call: Beast's tcp_stream armed
  // and cancelled its timer for every read of a response, a sixth of a spoke's CPU while it
  // fetched chunks.
  template <class Initiate>
  beast::error_code RunOne(Clock::time_point deadline, Initiate&& initiate) {
    beast::error_code result = asio::error::would_block;
    bool timed_out = false;
    asio::steady_timer timer(io_, deadline);
    timer.async_wait([this, &timed_out](beast::error_code ec) {
      if (ec) return;  // cancelled: the operation finished first
      timed_out = true;
      beast::error_code ignored;
      lowest().cancel(ignored);
    });
    initiate([&result, &timer](beast::error_code ec, auto&&...) {
      result = ec;
      timer.cancel();
    });
    io_.restart();
    io_.run();
    return timed_out ? beast::error_code(beast::error::timeout) : result;
  }

  // Calls `fn` with whichever stream is open: the code after connecting is the same for both.
  template <class Fn>
  auto WithStream(Fn&& fn) {
    return secure_ ? fn(*secure_) : fn(*plain_);
  }

  void Close() {
    if (connected()) {
      beast::error_code ignored;
      lowest().close(ignored);
    }
    secure_.reset();
    plain_.reset();
    buffer_.clear();
  }

  Status Connect(Clock::time_point deadline) {
    Close();
    tcp::resolver resolver(io_);
    beast::error_code ec;
    const tcp::resolver::results_type endpoints =
        resolver.resolve(origin_.host, std::to_string(origin_.port), ec);
    if (ec) return Unavailable("cannot connect to " + origin_.url + ": " + ec.message());
    if (origin_.tls) {
      secure_.emplace(io_, *tls_context_);
    } else {
      plain_.emplace(io_);
    }
    ec = RunOne(deadline, [&](auto handler) {
      asio::async_connect(lowest(), endpoints, std::move(handler));
    });
    if (ec) {
      Close();
      if (ec == beast::error::timeout) return TimedOut("connecting");
      return Unavailable("cannot connect to " + origin_.url + ": " + ec.message());
    }
    if (!origin_.tls) return OkStatus();

    SSL* ssl = secure_->native_handle();
    beast::error_code parse_error;
    asio::ip::make_address(origin_.host, parse_error);
    const bool is_ip = !parse_error;
    // Host-name checking is part of OpenSSL's chain verification, so a mismatch fails the
    // handshake with a verify result that names it; IP hosts match IP subjectAltNames.
    if (!options_.insecure) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
      const int set = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, origin_.host.c_str())
                            : X509_VERIFY_PARAM_set1_host(param, origin_.host.c_str(), 0);
      if (set != 1) {
        Close();
        return InvalidArgument("cannot verify TLS for host '" + origin_.host + "'");
      }
    }
    if (!is_ip) SSL_set_tlsext_host_name(ssl, origin_.host.c_str());  // SNI takes names only
    ec = RunOne(deadline, [&](auto handler) {
      secure_->async_handshake(ssl::stream_base::client, std::move(handler));
    });
    if (ec) {
      const long verify = SSL_get_verify_result(ssl);
      Close();
      if (ec == beast::error::timeout) return TimedOut("in the TLS handshake");
      if (verify != X509_V_OK) {
        return Unavailable("TLS certificate of " + origin_.url +
                           " not trusted: " + X509_verify_cert_error_string(verify));
      }
      return Unavailable("TLS handshake with " + origin_.url + " failed: " + ec.message());
    }
    return OkStatus();
  }

  // Writes `request` and reads the response on the open connection. `retryable` is set when
  // the connection failed before any byte of a response: the mark of a stale connection.
  Result<HttpResponse> Exchange(const http::request<http::string_body>& request,
                                Clock::time_point deadline, bool* retryable) {
    *retryable = false;
    beast::error_code ec = WithStream([&](auto& stream) {
      return RunOne(deadline,
                    [&](auto handler) { http::async_write(stream, request, std::move(handler)); });
    });
    http::response_parser<http::string_body> parser;
    parser.body_limit(options_.max_body_bytes);
    parser.skip(request.method() == http::verb::head);
    if (!ec) {
      // Beast reads at most the buffer's spare capacity (at least 512 bytes) per call: without
      // room, a 4 MiB chunk batch took ~8,000 recv and epoll_wait calls.
      buffer_.reserve(kReadBytes);
      ec = WithStream([&](auto& stream) {
        return RunOne(deadline, [&](auto handler) {
          http::async_read(stream, buffer_, parser, std::move(handler));
        });
      });
      *retryable = !parser.got_some() &&
                   (ec == http::error::end_of_stream || ec == asio::error::eof ||
                    ec == asio::error::connection_reset || ec == ssl::error::stream_truncated);
    } else {
      *retryable = ec != beast::error::timeout;
    }
    if (ec) {
      Close();
      if (ec == beast::error::timeout) return TimedOut("waiting for the response");
      if (ec == http::error::body_limit) {
        return Unavailable("response from " + origin_.url + " is larger than " +
                           std::to_string(options_.max_body_bytes) + " bytes");
      }
      return Unavailable("request to " + origin_.url + " failed: " + ec.message());
    }
    http::response<http::string_body> message = parser.release();
    HttpResponse response;
    response.status = static_cast<int>(message.result_int());
    for (const auto& field : message) {
      response.headers.push_back({std::string(field.name_string()), std::string(field.value())});
    }
    response.body = std::move(message.body());
    if (!message.keep_alive()) Close();
    return response;
  }

  Status TimedOut(std::string_view when) const {
    return Unavailable("timed out after " + std::to_string(options_.timeout.count()) + " ms " +
                       std::string(when) + " (" + origin_.url + ")");
  }

  const Origin origin_;
  const HttpClientOptions options_;
  std::unique_ptr<ssl::context> tls_context_;  // null for http://
  asio::io_context io_;
  std::optional<tcp::socket> plain_;  // at most one of the two is open
  std::optional<ssl::stream<tcp::socket>> secure_;
  beast::flat_buffer buffer_;  // bytes read past the last response
};

}  // namespace

std::optional<std::string_view> HttpResponse::Header(std::string_view name) const {
  for (const HttpHeader& h : headers) {
    if (EqualsIgnoreCase(h.name, name)) return std::string_view(h.value);
  }
  return std::nullopt;
}

Result<std::unique_ptr<HttpClient>> HttpClient::Open(std::string_view url,
                                                     const HttpClientOptions& options) {
  WEFT_ASSIGN_OR_RETURN(Origin origin, ParseOrigin(url));
  std::unique_ptr<ssl::context> tls;
  if (origin.tls) {
    try {
      tls = std::make_unique<ssl::context>(ssl::context::tls_client);
    } catch (const std::exception& e) {
      return Internal(std::string("cannot set up TLS: ") + e.what());
    }
    SSL_CTX_set_min_proto_version(tls->native_handle(), TLS1_2_VERSION);
    beast::error_code ec;
    if (options.insecure) {
      tls->set_verify_mode(ssl::verify_none, ec);
    } else {
      tls->set_verify_mode(ssl::verify_peer, ec);
      if (!ec && !options.ca_file.empty()) {
        tls->load_verify_file(options.ca_file, ec);
        if (ec) {
          return InvalidArgument("cannot load CA certificates from " + options.ca_file + ": " +
                                 ec.message());
        }
      } else if (!ec) {
        tls->set_default_verify_paths(ec);
      }
    }
    if (ec) return Internal("cannot set up TLS: " + ec.message());
  }
  return std::unique_ptr<HttpClient>(
      std::make_unique<BeastHttpClient>(std::move(origin), options, std::move(tls)));
}

}  // namespace weft::net
