// WanEmulator: a TCP proxy that makes a loopback link behave like a WAN link. The kernels Weft is
// tested on have no `tc netem`, so tests and benchmarks of hub/spoke traffic send it through this
// proxy instead. Model: each direction is a delay line (bytes read at t are delivered no earlier
// than t + one_way_delay, with many reads in flight at once, like a long pipe) followed by a
// token bucket that every connection in that direction shares, as they share a real link.
// Thread-safe; the proxy runs on its own io_context thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"

namespace weft::net {

struct WanOptions {
  std::string listen_host = "127.0.0.1";
  uint16_t listen_port = 0;  // 0 = any free port (see WanEmulator::port())
  std::string target_host;
  uint16_t target_port = 0;
  std::chrono::microseconds one_way_delay{0};
  uint64_t rate_bytes_per_second = 0;  // per direction, shared by all connections; 0 = unlimited
  size_t burst_bytes = 64 << 10;       // token bucket depth; must be > 0 when rate is set
  // Bytes one direction of one connection holds in its delay line before it stops reading from
  // the sender (backpressure, so memory stays bounded). Throughput per connection cannot exceed
  // max_in_flight_bytes / one_way_delay, as with a TCP window: 8 MiB over 50 ms is 160 MiB/s.
  size_t max_in_flight_bytes = 8 << 20;
};

// Listens on listen_host:listen_port; for each accepted connection, connects to the target and
// forwards bytes both ways. Bytes are forwarded in order, each direction independently; the
// target connection is made without delay (connection setup costs no round trip). EOF from one
// side is passed on (shutdown of sending) once the bytes read before it have been delivered, also
// after one_way_delay; an error on either side resets both.
class WanEmulator {
 public:
  // Captures keep at most this many bytes per direction; see capture_overflowed().
  static constexpr size_t kMaxCaptureBytes = size_t{256} << 20;

  // Binds and starts; returns once the port accepts connections. The target is resolved here
  // but first connected to when a client connects.
  static Result<std::unique_ptr<WanEmulator>> Start(const WanOptions& options);
  ~WanEmulator();  // Stop()

  WanEmulator(const WanEmulator&) = delete;
  WanEmulator& operator=(const WanEmulator&) = delete;

  uint16_t port() const;

  // Stops accepting, resets every connection and joins the thread. Idempotent.
  void Stop();

  // Link failure. SetLinkUp(false) resets (TCP RST) both sides of every proxied connection,
  // dropping the bytes in its delay lines, before it returns; while down, new connections are
  // accepted and reset at once, never reaching the target. SetLinkUp(true) restores normal
  // service for new connections; reset ones stay closed.
  void SetLinkUp(bool up);

  // Counters of bytes delivered (handed to the receiving side's socket) since Start:
  // upstream is client -> target, downstream target -> client. connections() counts the client
  // connections proxied (those accepted while the link was up).
  uint64_t bytes_upstream() const;
  uint64_t bytes_downstream() const;
  uint64_t connections() const;

  // SetCapture(true) discards what was captured and records every byte delivered from then on,
  // in delivery order (connections interleaved), until SetCapture(false); the captured bytes
  // stay readable after that. Lets a test check that some bytes did or did not cross the link.
  void SetCapture(bool on);
  std::string captured_upstream() const;
  std::string captured_downstream() const;
  // True if a direction delivered more than kMaxCaptureBytes during the capture, so its capture
  // lacks the bytes after the first kMaxCaptureBytes: "not captured" then proves nothing.
  bool capture_overflowed() const;

 private:
  class Impl;
  explicit WanEmulator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::net
