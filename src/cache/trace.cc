#include "cache/trace.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <unordered_set>

namespace weft::cache {

namespace {

const char* OpName(Op op) {
  switch (op) {
    case Op::kRead:
      return "r";
    case Op::kValRead:
      return "v";
    case Op::kWrite:
      return "w";
  }
  return "?";
}

void AppendNum(std::string* out, uint64_t v) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, res.ptr);
}
void AppendNum(std::string* out, int64_t v) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, res.ptr);
}

// Splits a line into at most `max` space-separated fields; the last takes the rest of the line
// (a path may contain spaces).
size_t SplitFields(std::string_view line, std::string_view* fields, size_t max) {
  size_t n = 0;
  size_t i = 0;
  while (n < max) {
    while (i < line.size() && line[i] == ' ') ++i;
    if (i >= line.size()) break;
    if (n == max - 1) {
      fields[n++] = line.substr(i);
      break;
    }
    size_t j = line.find(' ', i);
    if (j == std::string_view::npos) j = line.size();
    fields[n++] = line.substr(i, j - i);
    i = j;
  }
  return n;
}

template <typename T>
bool ParseNum(std::string_view s, T* v) {
  if (s.empty()) return false;
  auto res = std::from_chars(s.data(), s.data() + s.size(), *v);
  return res.ec == std::errc() && res.ptr == s.data() + s.size();
}

// Walks the text line by line, skipping blank lines and '#' comments, and names the line in
// errors.
class LineReader {
 public:
  LineReader(std::string_view text, std::string_view name) : text_(text), name_(name) {}

  // The next meaningful line, or false at the end.
  bool Next(std::string_view* line) {
    while (pos_ < text_.size()) {
      size_t end = text_.find('\n', pos_);
      if (end == std::string_view::npos) end = text_.size();
      std::string_view l = text_.substr(pos_, end - pos_);
      pos_ = end + 1;
      ++line_no_;
      if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
      if (l.empty() || l.front() == '#') continue;
      *line = l;
      return true;
    }
    return false;
  }

  Status Error(const std::string& what) const {
    return InvalidArgument(std::string(name_) + " line " + std::to_string(line_no_) + ": " + what);
  }
  Status EndError(const std::string& what) const {
    return InvalidArgument(std::string(name_) + ": unexpected end of input: " + what);
  }

 private:
  std::string_view text_;
  std::string_view name_;
  size_t pos_ = 0;
  size_t line_no_ = 0;
};

// "<keyword> <count>"
Status ReadSection(LineReader& in, std::string_view keyword, uint64_t* count) {
  std::string_view line;
  if (!in.Next(&line)) return in.EndError("expected '" + std::string(keyword) + " <count>'");
  std::string_view f[3];
  if (SplitFields(line, f, 3) != 2 || f[0] != keyword || !ParseNum(f[1], count)) {
    return in.Error("expected '" + std::string(keyword) + " <count>', got '" +
                    std::string(line.substr(0, 60)) + "'");
  }
  return OkStatus();
}

}  // namespace

void Trace::Index() {
  file_index.clear();
  file_index.reserve(files.size());
  for (size_t i = 0; i < files.size(); ++i) file_index.emplace(files[i].id, i);
}

const TraceFile* Trace::File(uint64_t id) const {
  auto it = file_index.find(id);
  return it == file_index.end() ? nullptr : &files[it->second];
}

Status ValidateTrace(const Trace& trace) {
  std::unordered_map<uint32_t, const TraceJob*> jobs;
  for (const TraceJob& j : trace.jobs) {
    if (!jobs.emplace(j.id, &j).second) {
      return InvalidArgument("job " + std::to_string(j.id) + " is listed twice");
    }
    if (j.world == 0 || j.batch == 0 || j.compute_ns < 0) {
      return InvalidArgument("job " + std::to_string(j.id) + ": world and batch must be > 0");
    }
  }
  if (trace.file_index.size() != trace.files.size()) {
    return InvalidArgument("file ids are not unique (or the trace is not indexed)");
  }
  int64_t last_t = std::numeric_limits<int64_t>::min();
  for (size_t i = 0; i < trace.accesses.size(); ++i) {
    const Access& a = trace.accesses[i];
    auto where = [&] { return "access " + std::to_string(i) + ": "; };
    auto jt = jobs.find(a.job);
    if (jt == jobs.end()) return InvalidArgument(where() + "unknown job " + std::to_string(a.job));
    if (jt->second->run != a.run) return InvalidArgument(where() + "run differs from its job's");
    if (a.rank >= jt->second->world) return InvalidArgument(where() + "rank >= the job's world");
    const TraceFile* f = trace.File(a.file);
    if (f == nullptr) {
      return InvalidArgument(where() + "file " + std::to_string(a.file) + " is not in the table");
    }
    if (a.len == 0) return InvalidArgument(where() + "zero length");
    if (a.offset > f->size || a.len > f->size - a.offset) {
      return InvalidArgument(where() + "range [" + std::to_string(a.offset) + ", +" +
                             std::to_string(a.len) + ") is outside file " + std::to_string(a.file) +
                             " of " + std::to_string(f->size) + " bytes");
    }
    if (a.t_ns < last_t) return InvalidArgument(where() + "time goes backwards");
    last_t = a.t_ns;
  }
  return OkStatus();
}

std::string FormatTrace(const Trace& trace) {
  std::string out;
  out.reserve(128 + trace.files.size() * 64 + trace.accesses.size() * 48);
  out += "weft-trace " + std::to_string(kTraceVersion) + "\n";
  out += "# job id run seed sampler world batch compute_ns workload\n";
  out += "jobs " + std::to_string(trace.jobs.size()) + "\n";
  for (const TraceJob& j : trace.jobs) {
    out += "job ";
    AppendNum(&out, uint64_t{j.id});
    out += ' ';
    AppendNum(&out, uint64_t{j.run});
    out += ' ';
    AppendNum(&out, j.seed);
    out += ' ' + j.sampler + ' ';
    AppendNum(&out, uint64_t{j.world});
    out += ' ';
    AppendNum(&out, uint64_t{j.batch});
    out += ' ';
    AppendNum(&out, j.compute_ns);
    out += ' ' + (j.workload.empty() ? std::string("-") : j.workload) + '\n';
  }
  out += "# file id size dir path\n";
  out += "files " + std::to_string(trace.files.size()) + "\n";
  for (const TraceFile& f : trace.files) {
    out += "file ";
    AppendNum(&out, f.id);
    out += ' ';
    AppendNum(&out, f.size);
    out += ' ';
    AppendNum(&out, f.dir);
    out += ' ' + f.path + '\n';
  }
  out += "# t_ns job run node rank op file offset len epoch\n";
  out += "accesses " + std::to_string(trace.accesses.size()) + "\n";
  for (const Access& a : trace.accesses) {
    AppendNum(&out, a.t_ns);
    out += ' ';
    AppendNum(&out, uint64_t{a.job});
    out += ' ';
    AppendNum(&out, uint64_t{a.run});
    out += ' ';
    AppendNum(&out, uint64_t{a.node});
    out += ' ';
    AppendNum(&out, uint64_t{a.rank});
    out += ' ';
    out += OpName(a.op);
    out += ' ';
    AppendNum(&out, a.file);
    out += ' ';
    AppendNum(&out, a.offset);
    out += ' ';
    AppendNum(&out, a.len);
    out += ' ';
    AppendNum(&out, uint64_t{a.epoch});
    out += '\n';
  }
  return out;
}

Result<Trace> ParseTrace(std::string_view text, std::string_view name) {
  LineReader in(text, name);
  Trace trace;
  std::string_view line;
  std::string_view f[10];
  if (!in.Next(&line)) return in.EndError("expected 'weft-trace 1'");
  if (SplitFields(line, f, 3) != 2 || f[0] != "weft-trace") {
    return in.Error("not a weft trace (expected 'weft-trace 1')");
  }
  int version = 0;
  if (!ParseNum(f[1], &version) || version != kTraceVersion) {
    return in.Error("unsupported trace version '" + std::string(f[1]) + "' (this build reads " +
                    std::to_string(kTraceVersion) + ")");
  }

  uint64_t count = 0;
  WEFT_RETURN_IF_ERROR(ReadSection(in, "jobs", &count));
  std::unordered_set<uint32_t> job_ids;
  for (uint64_t i = 0; i < count; ++i) {
    if (!in.Next(&line)) return in.EndError("fewer job lines than 'jobs' announced");
    TraceJob j;
    if (SplitFields(line, f, 9) != 9 || f[0] != "job" || !ParseNum(f[1], &j.id) ||
        !ParseNum(f[2], &j.run) || !ParseNum(f[3], &j.seed) || !ParseNum(f[5], &j.world) ||
        !ParseNum(f[6], &j.batch) || !ParseNum(f[7], &j.compute_ns)) {
      return in.Error(
          "expected 'job <id> <run> <seed> <sampler> <world> <batch> <compute_ns> <workload>'");
    }
    j.sampler = std::string(f[4]);
    j.workload = std::string(f[8]);
    if (j.world == 0 || j.batch == 0 || j.compute_ns < 0) {
      return in.Error("job " + std::to_string(j.id) + ": world and batch must be > 0");
    }
    if (!job_ids.insert(j.id).second) {
      return in.Error("job " + std::to_string(j.id) + " is listed twice");
    }
    trace.jobs.push_back(std::move(j));
  }

  WEFT_RETURN_IF_ERROR(ReadSection(in, "files", &count));
  // Cap the reservations by what the text can hold (a file line takes at least 12 bytes): the
  // counts are untrusted.
  trace.files.reserve(std::min<uint64_t>(count, text.size() / 12 + 1));
  for (uint64_t i = 0; i < count; ++i) {
    if (!in.Next(&line)) return in.EndError("fewer file lines than 'files' announced");
    TraceFile file;
    if (SplitFields(line, f, 5) != 5 || f[0] != "file" || !ParseNum(f[1], &file.id) ||
        !ParseNum(f[2], &file.size) || !ParseNum(f[3], &file.dir)) {
      return in.Error("expected 'file <id> <size> <dir> <path>'");
    }
    file.path = std::string(f[4]);
    if (!trace.file_index.emplace(file.id, trace.files.size()).second) {
      return in.Error("file " + std::to_string(file.id) + " is listed twice");
    }
    trace.files.push_back(std::move(file));
  }

  std::unordered_map<uint32_t, const TraceJob*> jobs;
  for (const TraceJob& j : trace.jobs) jobs.emplace(j.id, &j);
  WEFT_RETURN_IF_ERROR(ReadSection(in, "accesses", &count));
  trace.accesses.reserve(std::min<uint64_t>(count, text.size() / 20 + 1));
  int64_t last_t = std::numeric_limits<int64_t>::min();
  for (uint64_t i = 0; i < count; ++i) {
    if (!in.Next(&line)) return in.EndError("fewer access lines than 'accesses' announced");
    Access a;
    if (SplitFields(line, f, 10) != 10 || !ParseNum(f[0], &a.t_ns) || !ParseNum(f[1], &a.job) ||
        !ParseNum(f[2], &a.run) || !ParseNum(f[3], &a.node) || !ParseNum(f[4], &a.rank) ||
        !ParseNum(f[6], &a.file) || !ParseNum(f[7], &a.offset) || !ParseNum(f[8], &a.len) ||
        !ParseNum(f[9], &a.epoch)) {
      return in.Error(
          "expected '<t_ns> <job> <run> <node> <rank> <op> <file> <offset> <len> <epoch>'");
    }
    if (f[5] == "r") {
      a.op = Op::kRead;
    } else if (f[5] == "v") {
      a.op = Op::kValRead;
    } else if (f[5] == "w") {
      a.op = Op::kWrite;
    } else {
      return in.Error("op must be r, v or w, not '" + std::string(f[5]) + "'");
    }
    auto jt = jobs.find(a.job);
    if (jt == jobs.end()) return in.Error("job " + std::to_string(a.job) + " is not in the table");
    if (jt->second->run != a.run) {
      return in.Error("run " + std::to_string(a.run) + " differs from job " +
                      std::to_string(a.job) + "'s run");
    }
    if (a.rank >= jt->second->world) return in.Error("rank is not below the job's world size");
    const TraceFile* file = trace.File(a.file);
    if (file == nullptr) {
      return in.Error("file " + std::to_string(a.file) + " is not in the file table");
    }
    if (a.len == 0) return in.Error("zero-length access");
    if (a.offset > file->size || a.len > file->size - a.offset) {
      return in.Error("range is outside file " + std::to_string(a.file) + " (" +
                      std::to_string(file->size) + " bytes)");
    }
    if (a.t_ns < last_t) return in.Error("time goes backwards");
    last_t = a.t_ns;
    trace.accesses.push_back(a);
  }
  if (in.Next(&line)) return in.Error("unexpected line after the last access");
  return trace;
}

namespace {

Status WriteWhole(const std::string& bytes, const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return ErrnoToStatus(errno, "open " + path);
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const int err = errno;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) return ErrnoToStatus(err != 0 ? err : EIO, "write " + path);
  return OkStatus();
}

}  // namespace

Status WriteTraceFile(const Trace& trace, const std::string& path) {
  return WriteWhole(FormatTrace(trace), path);
}

Result<Trace> ReadTraceFile(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return ErrnoToStatus(errno, "open " + path);
  std::string text;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return IoError("read " + path);
  return ParseTrace(text, path);
}

std::vector<ItemRead> ItemReads(const Trace& trace) {
  std::vector<ItemRead> reads;
  reads.reserve(trace.accesses.size());
  for (size_t i = 0; i < trace.accesses.size(); ++i) {
    const Access& a = trace.accesses[i];
    if (a.op == Op::kWrite) continue;
    const TraceFile* f = trace.File(a.file);
    if (f == nullptr || a.len == 0) continue;
    const uint64_t end = a.offset + a.len;  // exclusive
    for (uint64_t b = a.offset / kBlockBytes; b <= (end - 1) / kBlockBytes; ++b) {
      ItemRead r;
      r.access = i;
      r.item.file = f->id;
      r.item.block = static_cast<uint32_t>(b);
      r.item.key = ItemKey(f->id, r.item.block);
      r.item.dir = f->dir;
      const uint64_t start = b * kBlockBytes;
      r.item.size = std::min(kBlockBytes, f->size - start);
      r.bytes = std::min(end, start + r.item.size) - std::max(a.offset, start);
      reads.push_back(r);
    }
  }
  return reads;
}

std::vector<int64_t> NextUses(const std::vector<ItemRead>& reads) {
  std::vector<int64_t> next(reads.size(), kNever);
  std::unordered_map<Key, int64_t> seen;
  seen.reserve(reads.size() / 2 + 1);
  for (size_t i = reads.size(); i-- > 0;) {
    auto [it, inserted] = seen.try_emplace(reads[i].item.key, static_cast<int64_t>(i));
    if (!inserted) {
      next[i] = it->second;
      it->second = static_cast<int64_t>(i);
    }
  }
  return next;
}

std::string FormatOracleGeneral(const Trace& trace) {
  const std::vector<ItemRead> reads = ItemReads(trace);
  const std::vector<int64_t> next = NextUses(reads);
  std::string out(reads.size() * 24, '\0');
  auto put = [&](size_t at, uint64_t v, int bytes) {
    for (int b = 0; b < bytes; ++b) out[at + b] = static_cast<char>((v >> (8 * b)) & 0xff);
  };
  for (size_t i = 0; i < reads.size(); ++i) {
    const size_t at = i * 24;
    const int64_t t_ns = trace.accesses[reads[i].access].t_ns;
    put(at, static_cast<uint32_t>(std::max<int64_t>(0, t_ns) / 1000000000), 4);
    put(at + 4, reads[i].item.key, 8);
    put(at + 12, static_cast<uint32_t>(reads[i].item.size), 4);
    put(at + 16, static_cast<uint64_t>(next[i] == kNever ? int64_t{-1} : next[i]), 8);
  }
  return out;
}

Status WriteOracleGeneralFile(const Trace& trace, const std::string& path) {
  return WriteWhole(FormatOracleGeneral(trace), path);
}

}  // namespace weft::cache
