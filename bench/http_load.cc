// http_load: fixed-rate (open-loop) HTTP GET load for latency measurement, which wrk cannot do.
// C connections each send one request every C/rate seconds on a precomputed schedule and time
// each response from its scheduled send time (so a slow server cannot hide queueing delay).
//   http_load HOST PORT TARGET RATE CONNECTIONS SECONDS
// Prints one JSON line: requests, errors, mean/p50/p99/max latency in microseconds.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

int Connect(const char* host, int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, host, &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    perror("connect");
    exit(1);
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// Reads one response (headers + Content-Length body). False on error or close.
bool ReadResponse(int fd, std::string& buf) {
  buf.clear();
  char chunk[65536];
  size_t header_end = std::string::npos;
  size_t need = 0;
  while (true) {
    if (header_end == std::string::npos) {
      header_end = buf.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        std::string head = buf.substr(0, header_end);
        for (char& c : head) c = static_cast<char>(tolower(c));
        size_t at = head.find("content-length:");
        size_t length = at == std::string::npos ? 0 : strtoull(head.c_str() + at + 15, nullptr, 10);
        if (head.compare(9, 3, "200") != 0) return false;
        need = header_end + 4 + length;
      }
    }
    if (header_end != std::string::npos && buf.size() >= need) return true;
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n <= 0) return false;
    buf.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: http_load HOST PORT TARGET RATE CONNECTIONS SECONDS\n");
    return 2;
  }
  const char* host = argv[1];
  int port = atoi(argv[2]);
  std::string request =
      std::string("GET ") + argv[3] + " HTTP/1.1\r\nHost: " + host + ":" + argv[2] + "\r\n\r\n";
  double rate = atof(argv[4]);
  int connections = atoi(argv[5]);
  double seconds = atof(argv[6]);
  auto interval = std::chrono::duration<double>(connections / rate);
  int per_connection = static_cast<int>(seconds * rate / connections);

  std::mutex mu;
  std::vector<double> latencies;
  int errors = 0;
  auto start = Clock::now() + std::chrono::milliseconds(100);
  std::vector<std::thread> threads;
  for (int c = 0; c < connections; ++c) {
    threads.emplace_back([&, c] {
      int fd = Connect(host, port);
      std::string buf;
      std::vector<double> mine;
      int my_errors = 0;
      // Stagger connections evenly across one interval.
      auto offset = std::chrono::duration_cast<Clock::duration>(interval * c / connections);
      for (int i = 0; i < per_connection; ++i) {
        auto scheduled = start + offset + std::chrono::duration_cast<Clock::duration>(interval * i);
        std::this_thread::sleep_until(scheduled);
        if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size()) ||
            !ReadResponse(fd, buf)) {
          my_errors++;
          close(fd);
          fd = Connect(host, port);
          continue;
        }
        mine.push_back(std::chrono::duration<double, std::micro>(Clock::now() - scheduled).count());
      }
      close(fd);
      std::lock_guard<std::mutex> lock(mu);
      latencies.insert(latencies.end(), mine.begin(), mine.end());
      errors += my_errors;
    });
  }
  for (auto& t : threads) t.join();
  std::sort(latencies.begin(), latencies.end());
  double sum = 0;
  for (double l : latencies) sum += l;
  auto pct = [&](double p) {
    return latencies.empty() ? 0.0
                             : latencies[std::min(latencies.size() - 1,
                                                  static_cast<size_t>(p * latencies.size()))];
  };
  printf(
      "{\"requests\": %zu, \"errors\": %d, \"mean_us\": %.1f, \"p50_us\": %.1f, \"p99_us\": "
      "%.1f, \"max_us\": %.1f}\n",
      latencies.size(), errors, latencies.empty() ? 0.0 : sum / latencies.size(), pct(0.5),
      pct(0.99), latencies.empty() ? 0.0 : latencies.back());
  return errors == 0 ? 0 : 1;
}
