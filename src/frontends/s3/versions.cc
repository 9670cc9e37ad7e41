#include "frontends/s3/versions.h"

#include <charconv>

#include "frontends/s3/call.h"

namespace weft::s3 {
namespace {

char Letter(Versioning state) {
  switch (state) {
    case Versioning::kEnabled:
      return 'E';
    case Versioning::kSuspended:
      return 'S';
    case Versioning::kOff:
      break;
  }
  return 'O';
}

// A version written under Enabled keeps its own id; any other is a "null" write.
bool IsNullWrite(const VersionInfo& v, const VersioningLog& log) {
  return log.At(v.mtime_ns) != Versioning::kEnabled;
}

}  // namespace

VersioningLog VersioningLog::FromAttributes(const Attributes& attributes) {
  VersioningLog log;
  if (auto it = attributes.find(std::string(kAttrVersioningLog)); it != attributes.end()) {
    std::string_view text = it->second;
    while (!text.empty()) {
      size_t space = text.find(' ');
      std::string_view item = text.substr(0, space);
      text = space == std::string_view::npos ? "" : text.substr(space + 1);
      if (item.size() < 2) continue;
      int64_t since = 0;
      auto [end, ec] = std::from_chars(item.data() + 1, item.data() + item.size(), since);
      if (ec != std::errc() || end != item.data() + item.size()) continue;
      Versioning state = item[0] == 'E'   ? Versioning::kEnabled
                         : item[0] == 'S' ? Versioning::kSuspended
                                          : Versioning::kOff;
      log.entries_.push_back({state, since});
    }
    return log;
  }
  // A bucket configured before the log existed: its state, since the beginning.
  if (auto it = attributes.find(std::string(kAttrVersioning)); it != attributes.end()) {
    log.entries_.push_back(
        {it->second == "Enabled" ? Versioning::kEnabled : Versioning::kSuspended, 0});
  }
  return log;
}

Versioning VersioningLog::At(int64_t time_ns) const {
  Versioning state = Versioning::kOff;
  for (const Entry& e : entries_) {
    if (e.since_ns > time_ns) break;
    state = e.state;
  }
  return state;
}

void VersioningLog::Change(Versioning state, int64_t time_ns) {
  if (Now() == state) return;
  entries_.push_back({state, time_ns});
}

std::string VersioningLog::Encode() const {
  std::string out;
  for (const Entry& e : entries_) {
    if (!out.empty()) out += ' ';
    out += Letter(e.state);
    out += std::to_string(e.since_ns);
  }
  return out;
}

std::vector<S3Version> S3Versions(const std::vector<VersionInfo>& versions,
                                  const VersioningLog& log) {
  std::vector<S3Version> out;
  bool null_seen = false;
  for (size_t i = 0; i < versions.size(); ++i) {
    const VersionInfo& v = versions[i];
    S3Version s;
    s.weft_id = v.version_id;
    s.info = v;
    s.is_latest = i == 0;
    if (IsNullWrite(v, log)) {
      // Only the newest null write is S3's; a delete before versioning left no marker.
      const bool shown =
          !null_seen && !(v.is_delete_marker && log.At(v.mtime_ns) == Versioning::kOff);
      null_seen = true;
      if (!shown) continue;
      s.id = std::string(kNullVersion);
    } else {
      s.id = v.version_id;
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<VersionInfo> NullVersions(const std::vector<VersionInfo>& versions,
                                      const VersioningLog& log) {
  std::vector<VersionInfo> out;
  for (auto it = versions.rbegin(); it != versions.rend(); ++it) {
    if (IsNullWrite(*it, log)) out.push_back(*it);
  }
  return out;
}

std::optional<uint64_t> VersionIdSequence(std::string_view id) {
  std::string_view digits = id.starts_with("delete.") ? id.substr(7) : id.substr(0, id.find('.'));
  uint64_t seq = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), seq);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty()) {
    return std::nullopt;
  }
  return seq;
}

std::string S3VersionId(const FileInfo& info, const VersioningLog& log) {
  return log.At(info.mtime_ns) == Versioning::kEnabled ? info.version_id
                                                       : std::string(kNullVersion);
}

}  // namespace weft::s3
