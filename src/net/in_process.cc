#include "net/in_process.h"

#include <algorithm>
#include <cstring>

namespace weft::net {

Result<size_t> StringBodyReader::Read(std::span<char> out) {
  const size_t n = std::min(out.size(), data_.size() - pos_);
  std::memcpy(out.data(), data_.data() + pos_, n);
  pos_ += n;
  return n;
}

namespace {

// Keeps the response as the client will see it: headers in order, the body whole.
class BufferedResponse final : public ResponseWriter {
 public:
  Status Start(int status, const std::vector<HttpHeader>& headers,
               std::optional<uint64_t> content_length) override {
    if (started_) return Internal("response started twice");
    started_ = true;
    response_.status = status;
    response_.headers = headers;
    declared_ = content_length;
    return OkStatus();
  }
  using ResponseWriter::Write;
  Status Write(std::span<const std::string_view> pieces) override {
    if (!started_) return Internal("response body written before its head");
    for (std::string_view piece : pieces) response_.body += piece;
    return OkStatus();
  }
  Status Finish() override {
    // A server would have broken the connection: the client sees a truncated answer.
    if (declared_ && *declared_ != response_.body.size()) {
      return Internal("response body of " + std::to_string(response_.body.size()) +
                      " bytes, declared " + std::to_string(*declared_));
    }
    return OkStatus();
  }
  bool started() const override { return started_; }

  HttpResponse Take() { return std::move(response_); }
  bool complete() const { return !declared_ || *declared_ == response_.body.size(); }

 private:
  HttpResponse response_;
  std::optional<uint64_t> declared_;
  bool started_ = false;
};

}  // namespace

class InProcessClient final : public HttpClient {
 public:
  explicit InProcessClient(InProcessLink* link) : link_(link) {}

  Result<HttpResponse> Send(std::string_view method, std::string_view target,
                            const std::vector<HttpHeader>& headers,
                            std::string_view body) override {
    if (link_->cut_) return Unavailable("cannot connect to " + link_->url_ + ": link cut");
    ++link_->requests_;
    link_->bytes_sent_ += body.size();
    HttpRequest request;
    request.method = std::string(method);
    request.target = std::string(target);
    const size_t q = target.find('?');
    request.path = std::string(target.substr(0, q));
    if (q != std::string_view::npos) request.query = std::string(target.substr(q + 1));
    request.headers = headers;
    request.content_length = body.size();
    request.remote_address = "in-process";
    StringBodyReader reader(body);
    BufferedResponse response;
    link_->handler_->Handle(request, reader, response);
    if (!response.started()) {
      return HttpResponse{500, {}, ""};  // as the server answers a handler that did not
    }
    if (!response.complete()) return Unavailable(link_->url_ + ": connection broken mid-answer");
    HttpResponse r = response.Take();
    link_->bytes_received_ += r.body.size();
    return r;
  }

  const std::string& url() const override { return link_->url_; }

 private:
  InProcessLink* link_;
};

std::unique_ptr<HttpClient> InProcessLink::Connect() {
  return std::make_unique<InProcessClient>(this);
}

}  // namespace weft::net
