#include "access/audit_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>

#include "base/bytes.h"
#include "base/hash.h"
#include "base/utf8.h"

namespace weft::access {
namespace {

using Json = nlohmann::ordered_json;

const std::string kGenesis(64, '0');

// A JSON string: quotes, backslashes and control characters escaped; text that is not UTF-8
// is written byte by byte as U+FFFD for each byte at or above 0x80, so the line stays JSON.
void AppendString(std::string* out, std::string_view s) {
  // Almost every value is plain ASCII with nothing to escape: one append.
  bool plain = true;
  for (unsigned char c : s) plain &= c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
  if (plain) {
    out->push_back('"');
    out->append(s);
    out->push_back('"');
    return;
  }
  const bool utf8 = IsValidUtf8(s);
  out->push_back('"');
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else if (c < 0x20) {
      char esc[8];
      snprintf(esc, sizeof esc, "\\u%04x", c);
      out->append(esc);
    } else if (c >= 0x80 && !utf8) {
      out->append("\\ufffd");
    } else {
      out->push_back(static_cast<char>(c));
    }
  }
  out->push_back('"');
}

void AppendInt(std::string* out, std::string_view key, int64_t value) {
  char digits[24];
  auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  out->append(key);
  out->append(digits, static_cast<size_t>(end - digits));
}

void AppendText(std::string* out, std::string_view key, std::string_view value) {
  out->append(key);
  AppendString(out, value);
}

// Every field but the hash, in a fixed order, as one JSON object without its closing brace,
// appended to `out`: what the hash covers. Written by hand (not through a JSON library): it
// runs for every request, and the verifier formats a parsed record the same way.
void AppendBody(std::string* out, const AuditRecord& r) {
  // One formatting per second (gmtime and strftime cost more than the rest of the line).
  thread_local int64_t cached_second = -1;
  thread_local std::string cached_time;
  const int64_t second = r.time_ns >= 0 ? r.time_ns / 1'000'000'000 : -1;
  if (second != cached_second || second < 0) {
    cached_time = FormatIso8601(r.time_ns);
    cached_second = second;
  }
  AppendInt(out, "{\"seq\":", static_cast<int64_t>(r.seq));
  AppendText(out, ",\"time\":", cached_time);
  AppendInt(out, ",\"time_ns\":", r.time_ns);
  AppendText(out, ",\"principal\":", r.principal);
  AppendText(out, ",\"protocol\":", r.protocol);
  AppendText(out, ",\"site\":", r.site);
  AppendText(out, ",\"operation\":", r.operation);
  AppendText(out, ",\"path\":", r.path);
  AppendInt(out, ",\"status\":", r.status);
  AppendInt(out, ",\"bytes_in\":", static_cast<int64_t>(r.bytes_in));
  AppendInt(out, ",\"bytes_out\":", static_cast<int64_t>(r.bytes_out));
  AppendText(out, ",\"request_id\":", r.request_id);
  AppendText(out, ",\"client\":", r.client);
  AppendText(out, ",\"prev\":", r.prev);
}

std::string BodyPrefix(const AuditRecord& r) {
  std::string out;
  AppendBody(&out, r);
  return out;
}

std::string HeadPath(const std::string& path) {
  return path + ".head";
}
std::string ReservePath(const std::string& path) {
  return path + ".reserve";
}
// Space kept for records on a full disk: about a thousand of them.
constexpr off_t kReserveBytes = 256 << 10;

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, "writing " + path);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return OkStatus();
}

// The whole file; lines without their final newline, and whether the last one had it.
Result<std::vector<std::string>> ReadLines(const std::string& path, bool* torn) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open");
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < data.size()) {
    const size_t nl = data.find('\n', start);
    if (nl == std::string::npos) break;
    lines.push_back(data.substr(start, nl - start));
    start = nl + 1;
  }
  if (torn != nullptr) *torn = start < data.size();
  return lines;
}

bool Matches(const AuditRecord& r, const AuditQuery& q) {
  if (r.seq <= q.after_seq) return false;
  if (q.principal && r.principal != *q.principal) return false;
  if (q.operation && r.operation != *q.operation) return false;
  if (q.protocol && r.protocol != *q.protocol) return false;
  if (q.path_prefix && !r.path.starts_with(*q.path_prefix)) return false;
  if (q.since_ns && r.time_ns < *q.since_ns) return false;
  if (q.until_ns && r.time_ns >= *q.until_ns) return false;
  if (q.denied && (r.status == 401 || r.status == 403) != *q.denied) return false;
  return true;
}

}  // namespace

namespace {

// The hash of a record whose body (BodyPrefix) is `body`.
std::string HashOf(std::string_view prev, std::string_view body) {
  thread_local std::string input;
  input.assign(prev);
  input.push_back('\n');
  input.append(body);
  input.push_back('}');
  uint8_t digest[32];
  Sha256(AsBytes(input), digest);
  return ToHex(ByteSpan(digest, sizeof digest));
}

// `body` (BodyPrefix) completed into the record's line, without a newline.
void AppendLine(std::string* out, std::string_view body, std::string_view hash) {
  out->append(body);
  out->append(",\"hash\":\"");
  out->append(hash);
  out->append("\"}");
}

}  // namespace

std::string AuditHash(const AuditRecord& record) {
  return HashOf(record.prev, BodyPrefix(record));
}

std::string FormatAuditRecord(const AuditRecord& record) {
  std::string line;
  AppendLine(&line, BodyPrefix(record), record.hash);
  return line;
}

Result<AuditRecord> ParseAuditRecord(std::string_view line) {
  Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("not a JSON object");
  AuditRecord r;
  try {
    r.seq = j.at("seq").get<uint64_t>();
    r.time_ns = j.at("time_ns").get<int64_t>();
    r.principal = j.at("principal").get<std::string>();
    r.protocol = j.at("protocol").get<std::string>();
    r.site = j.at("site").get<std::string>();
    r.operation = j.at("operation").get<std::string>();
    r.path = j.at("path").get<std::string>();
    r.status = j.at("status").get<int>();
    r.bytes_in = j.at("bytes_in").get<uint64_t>();
    r.bytes_out = j.at("bytes_out").get<uint64_t>();
    r.request_id = j.at("request_id").get<std::string>();
    r.client = j.at("client").get<std::string>();
    r.prev = j.at("prev").get<std::string>();
    r.hash = j.at("hash").get<std::string>();
  } catch (const Json::exception& e) {
    return InvalidArgument(std::string("a field is missing or of the wrong type: ") + e.what());
  }
  return r;
}

AuditLog::AuditLog(std::string path, int fd, AuditLogOptions options, uint64_t seq,
                   std::string hash)
    : path_(std::move(path)),
      fd_(fd),
      options_(options),
      seq_(seq),
      hash_(std::move(hash)),
      writer_([this] { WriterLoop(); }) {}

Result<std::unique_ptr<AuditLog>> AuditLog::Open(const std::string& path, AuditLogOptions options) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) return ErrnoToStatus(errno, "opening the audit log " + path);
  auto fail = [&](Status s) {
    ::close(fd);
    return s;
  };
  // Only the end is read: a log of millions of records opens as fast as a new one.
  struct stat st;
  if (::fstat(fd, &st) != 0) return fail(ErrnoToStatus(errno, "reading " + path));
  std::string tail;
  off_t end = 0;                         // just past the last whole line
  std::optional<std::string> last_line;  // that line, if any
  for (off_t window = 64 << 10;; window *= 2) {
    const off_t from = std::max<off_t>(0, st.st_size - window);
    tail.resize(static_cast<size_t>(st.st_size - from));
    const ssize_t n = ::pread(fd, tail.data(), tail.size(), from);
    if (n != static_cast<ssize_t>(tail.size())) return fail(Internal("short read of " + path));
    const size_t last_nl = tail.rfind('\n');
    if (last_nl != std::string::npos) {
      const size_t prev_nl = last_nl == 0 ? std::string::npos : tail.rfind('\n', last_nl - 1);
      if (prev_nl != std::string::npos || from == 0) {
        const size_t start = prev_nl == std::string::npos ? 0 : prev_nl + 1;
        last_line = tail.substr(start, last_nl - start);
        end = from + static_cast<off_t>(last_nl) + 1;
        break;
      }
    } else if (from == 0) {
      break;  // no whole line at all
    }
  }
  const bool torn = end < st.st_size;
  uint64_t seq = 0;
  std::string hash = kGenesis;
  if (last_line) {
    Result<AuditRecord> last = ParseAuditRecord(*last_line);
    if (!last.ok() || AuditHash(*last) != last->hash) {
      return fail(Corruption(path + ": the last record does not verify; run weft audit verify"));
    }
    seq = last->seq;
    hash = last->hash;
  }
  // A torn tail was never acknowledged: cut it so the next record starts a whole line.
  if (torn && ::ftruncate(fd, end) != 0) {
    return fail(ErrnoToStatus(errno, "cutting the torn tail of " + path));
  }
  if (::lseek(fd, 0, SEEK_END) < 0) return fail(ErrnoToStatus(errno, "seeking in " + path));
  // Best effort: a disk already full starts without a reserve.
  if (const int reserve = ::open(ReservePath(path).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
      reserve >= 0) {
    if (::posix_fallocate(reserve, 0, kReserveBytes) != 0)
      (void)::unlink(ReservePath(path).c_str());
    ::close(reserve);
  }
  return std::unique_ptr<AuditLog>(new AuditLog(path, fd, options, seq, std::move(hash)));
}

AuditLog::~AuditLog() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  writer_.join();  // writes what is queued first
  (void)Sync();
  ::close(fd_);
}

Status AuditLog::Append(AuditRecord record, bool wait) {
  uint64_t ticket;
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(record));
    ticket = ++queued_;
  }
  if (!wait) return OkStatus();
  // No hand-over to the writer thread: whoever needs a record in the file writes the queue
  // itself (theirs and everyone's before it), as a group commit does.
  Drain();
  std::lock_guard lock(mu_);
  for (const auto& [first, last] : failed_) {
    if (ticket >= first && ticket <= last) return failure_;
  }
  return OkStatus();
}

void AuditLog::Drain() {
  std::lock_guard drain(drain_mu_);  // one batch at a time, in queue order
  std::vector<AuditRecord> batch;
  uint64_t first, last;
  {
    std::lock_guard lock(mu_);
    batch.swap(queue_);
    first = written_ + 1;
    last = queued_;
  }
  if (batch.empty()) return;
  Status written = WriteBatch(batch);
  std::lock_guard lock(mu_);
  written_ = last;
  if (!written.ok()) {
    // The chain stays where it was; these records are lost and those waiting for them are
    // told (the server answers them 503).
    failure_ = written;
    failed_.push_back({first, last});
    if (failed_.size() > 64) failed_.erase(failed_.begin());
  }
}

Status AuditLog::WriteBatch(std::vector<AuditRecord>& batch) {
  Status written = WriteBatchOnce(batch);
  // A full disk: the reserve file gives its space back so that records keep being written
  // while the engine's own reserve lets deletes through.
  if (written.code() == StatusCode::kResourceExhausted &&
      ::unlink(ReservePath(path_).c_str()) == 0) {
    written = WriteBatchOnce(batch);
  }
  return written;
}

Status AuditLog::WriteBatchOnce(std::vector<AuditRecord>& batch) {
  std::string out;
  out.reserve(batch.size() * 400);
  uint64_t seq;
  std::string hash;
  {
    std::lock_guard lock(mu_);
    seq = seq_;
    hash = hash_;
  }
  for (AuditRecord& r : batch) {
    r.seq = ++seq;
    r.prev = std::move(hash);
    // The body goes straight into the batch; the hash follows it there.
    const size_t start = out.size();
    AppendBody(&out, r);
    hash = HashOf(r.prev, std::string_view(out).substr(start));
    out.append(",\"hash\":\"");
    out.append(hash);
    out.append("\"}");
    out.push_back('\n');
  }
  const off_t before = ::lseek(fd_, 0, SEEK_CUR);
  if (Status written = WriteAll(fd_, out, path_); !written.ok()) {
    // No part of the batch stays: the next write must start a whole line.
    if (before >= 0 && ::ftruncate(fd_, before) == 0) (void)::lseek(fd_, before, SEEK_SET);
    return written;
  }
  std::lock_guard lock(mu_);
  seq_ = seq;
  hash_ = std::move(hash);
  dirty_ = true;
  return OkStatus();
}

Status AuditLog::Sync() {
  uint64_t seq;
  std::string hash;
  {
    std::lock_guard lock(mu_);
    if (!dirty_) return OkStatus();
    dirty_ = false;
    seq = seq_;
    hash = hash_;
  }
  if (::fdatasync(fd_) != 0) return ErrnoToStatus(errno, "syncing " + path_);
  // The head names the last record synced; a log that ends before it lost its tail.
  const std::string head = HeadPath(path_);
  const std::string tmp = head + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) return ErrnoToStatus(errno, "writing " + tmp);
  Status written = WriteAll(fd, std::to_string(seq) + " " + hash + "\n", tmp);
  if (written.ok() && ::fdatasync(fd) != 0) written = ErrnoToStatus(errno, "syncing " + tmp);
  ::close(fd);
  WEFT_RETURN_IF_ERROR(written);
  if (::rename(tmp.c_str(), head.c_str()) != 0) return ErrnoToStatus(errno, "renaming " + tmp);
  return OkStatus();
}

void AuditLog::WriterLoop() {
  // Reads do not wake the writer: it writes their records every millisecond, in one batch.
  constexpr auto kBatchInterval = std::chrono::milliseconds(1);
  auto next_sync = std::chrono::steady_clock::now() + options_.sync_interval;
  while (true) {
    bool stop;
    {
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, kBatchInterval, [&] { return stopping_; });
      stop = stopping_;
    }
    Drain();
    if (stop) return;
    if (std::chrono::steady_clock::now() >= next_sync) {
      (void)Sync();
      next_sync = std::chrono::steady_clock::now() + options_.sync_interval;
    }
  }
}

Result<std::vector<AuditRecord>> AuditLog::Query(const AuditQuery& query) {
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> lines, ReadLines(path_, nullptr));
  std::vector<AuditRecord> out;
  for (const std::string& line : lines) {
    Result<AuditRecord> r = ParseAuditRecord(line);
    if (!r.ok()) continue;  // VerifyAuditLog reports it; a query shows what parses
    if (Matches(*r, query)) out.push_back(std::move(*r));
    if (out.size() >= query.limit) break;
  }
  return out;
}

Result<AuditVerifyReport> VerifyAuditLog(const std::string& path) {
  bool torn = false;
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> lines, ReadLines(path, &torn));
  AuditVerifyReport report;
  auto problem = [&](size_t index, const std::string& what) {
    report.problem = "line " + std::to_string(index + 1) + ": " + what;
    return report;
  };
  std::string prev;
  for (size_t i = 0; i < lines.size(); ++i) {
    Result<AuditRecord> r = ParseAuditRecord(lines[i]);
    if (!r.ok()) return problem(i, "not a record (" + r.status().message() + ")");
    if (AuditHash(*r) != r->hash) return problem(i, "its hash does not match its contents");
    if (i == 0) {
      report.first_seq = r->seq;
      if (r->seq != 1 || r->prev != kGenesis) {
        return problem(i, "the log starts at record " + std::to_string(r->seq) +
                              ": the records before it were removed");
      }
    } else {
      if (r->seq != report.last_seq + 1) {
        return problem(i, "sequence " + std::to_string(r->seq) + " follows " +
                              std::to_string(report.last_seq) + " (a record was removed or moved)");
      }
      if (r->prev != prev) return problem(i, "it does not chain to the line before");
    }
    report.last_seq = r->seq;
    prev = r->hash;
    ++report.records;
  }
  if (torn) return problem(lines.size(), "a torn last line (written by a crash, never answered)");
  std::ifstream head(HeadPath(path));
  uint64_t head_seq = 0;
  std::string head_hash;
  if (head >> head_seq >> head_hash) {
    if (head_seq > report.last_seq) {
      report.problem = "the log ends at record " + std::to_string(report.last_seq) +
                       " but record " + std::to_string(head_seq) + " was written: its tail was cut";
      return report;
    }
    if (head_seq >= report.first_seq && head_seq > 0) {
      Result<AuditRecord> at = ParseAuditRecord(lines[head_seq - report.first_seq]);
      if (!at.ok() || at->hash != head_hash) {
        report.problem = "record " + std::to_string(head_seq) + " is not the one the head names";
        return report;
      }
    }
  }
  return report;
}

}  // namespace weft::access
