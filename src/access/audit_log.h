// AuditLog: every request a server answers — allowed or refused, from every protocol and site —
// as one JSON line in an append-only file, chained by SHA-256 so that editing, deleting or
// reordering a line is found by VerifyAuditLog (`weft audit verify`). Format:
// docs/formats/audit.md.
//
// Records are chained and written by a writer thread in batches, off the request's path: a
// request only queues its record. One that changes something waits until its record is in the
// file (a crash of the process cannot lose it) before its answer starts; a read does not wait,
// so a crash of the process can lose the last millisecond of read records. The file is synced
// to disk every sync_interval and at destruction, and a small head file (PATH.head: the last
// sequence number and hash) is replaced with each sync, so a cut-off tail shows too.
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/status.h"

namespace weft::access {

// One request as the audit log keeps it.
struct AuditRecord {
  int64_t time_ns = 0;     // when it arrived
  std::string principal;   // "" when it never authenticated
  std::string protocol;    // "s3", "rest", "fabric", "weft"
  std::string site;        // "local", or the spoke's site for a fabric call
  std::string operation;   // "GetObject", "lookup", "POST"
  std::string path;        // as requested
  int status = 0;          // the answer's HTTP status
  uint64_t bytes_in = 0;   // request body bytes read
  uint64_t bytes_out = 0;  // response body bytes announced
  std::string request_id;
  std::string client;  // remote address
  // Set by the log: the record's place in the chain.
  uint64_t seq = 0;
  std::string prev;  // the previous record's hash (64 '0's for the first)
  std::string hash;  // SHA-256 hex of prev + "\n" + the line without its "hash" field
};

struct AuditLogOptions {
  std::chrono::milliseconds sync_interval{1000};
  Clock* clock = SystemClock::Default();
};

// What a query selects (every field optional; all given must match).
struct AuditQuery {
  std::optional<std::string> principal;
  std::optional<std::string> operation;
  std::optional<std::string> path_prefix;
  std::optional<std::string> protocol;
  std::optional<int64_t> since_ns;  // time_ns >= since
  std::optional<int64_t> until_ns;  // time_ns < until
  std::optional<bool> denied;       // status 401/403 (or not)
  uint64_t after_seq = 0;           // only records after this one (paging)
  size_t limit = 1000;
};

class AuditLog {
 public:
  // Opens (or creates, mode 0640) the log at `path`: the chain continues from its last line.
  // A torn last line (a crash in the middle of a write, never acknowledged) is cut off; a last
  // line that does not verify is Corruption, so a tampered log is not extended.
  static Result<std::unique_ptr<AuditLog>> Open(const std::string& path,
                                                AuditLogOptions options = {});
  ~AuditLog();  // syncs

  // Queues `record` to be chained (seq, prev and hash are set then) and written; with
  // `wait`, returns once it is in the file (or the write failed).
  Status Append(AuditRecord record, bool wait);
  // Syncs the file and replaces the head file.
  Status Sync();
  // Records that match, oldest first (reads the file).
  Result<std::vector<AuditRecord>> Query(const AuditQuery& query);

  const std::string& path() const { return path_; }

 private:
  AuditLog(std::string path, int fd, AuditLogOptions options, uint64_t seq, std::string hash);
  void WriterLoop();
  // Writes what is queued (the writer thread every millisecond; a waiting Append at once).
  void Drain();
  // Chains and writes `batch`; the status of the write.
  Status WriteBatch(std::vector<AuditRecord>& batch);
  Status WriteBatchOnce(std::vector<AuditRecord>& batch);

  const std::string path_;
  const int fd_;
  const AuditLogOptions options_;
  // The chain: only the writer thread touches it (and Sync, which reads it under mu_).
  uint64_t seq_;         // GUARDED_BY(mu_): the last record written
  std::string hash_;     // GUARDED_BY(mu_)
  std::mutex drain_mu_;  // held by whoever writes a batch
  std::mutex mu_;
  std::vector<AuditRecord> queue_;  // GUARDED_BY(mu_)
  uint64_t queued_ = 0;             // GUARDED_BY(mu_): records ever queued
  uint64_t written_ = 0;            // GUARDED_BY(mu_): of those, written (or failed)
  // Tickets (first, last) of recent batches whose write failed, and the failure.
  std::vector<std::pair<uint64_t, uint64_t>> failed_;  // GUARDED_BY(mu_)
  Status failure_;                                     // GUARDED_BY(mu_)
  bool dirty_ = false;            // GUARDED_BY(mu_): written since the last sync
  bool stopping_ = false;         // GUARDED_BY(mu_)
  std::condition_variable wake_;  // the writer thread: stop
  std::thread writer_;
};

// The line Append writes for `record` (seq, prev and hash included; no newline).
std::string FormatAuditRecord(const AuditRecord& record);
// The hash a record with these fields must carry.
std::string AuditHash(const AuditRecord& record);
Result<AuditRecord> ParseAuditRecord(std::string_view line);

struct AuditVerifyReport {
  uint64_t records = 0;
  uint64_t first_seq = 0;
  uint64_t last_seq = 0;
  // Empty when the chain holds; otherwise what is wrong, naming the line.
  std::string problem;
};
// Reads the log at `path` (and PATH.head when present) and checks every line's hash, that each
// line chains to the one before, that sequence numbers count up by one, and that nothing the
// head file records is missing from the end.
Result<AuditVerifyReport> VerifyAuditLog(const std::string& path);

}  // namespace weft::access
