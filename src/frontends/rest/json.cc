#include "frontends/rest/json.h"

#include "base/clock.h"

namespace weft::rest {

json UserJson(const auth::User& user) {
  return {
      {"name", user.name}, {"groups", user.groups}, {"created", FormatIso8601(user.created_ns)}};
}

json KeyJson(const auth::AccessKey& key) {
  json out = {{"access_key_id", key.access_key_id},
              {"user", key.user},
              {"created", FormatIso8601(key.created_ns)}};
  if (key.expires_ns != 0) out["expires"] = FormatIso8601(key.expires_ns);
  return out;
}

json RuleJson(const auth::Rule& rule) {
  return {{"id", rule.id},
          {"subject", rule.subject},
          {"prefix", rule.prefix},
          {"permissions", auth::PermissionsToString(rule.permissions)}};
}

json SnapshotJson(const SnapshotInfo& snap) {
  return {{"name", snap.name},
          {"path", snap.path},
          {"sequence", snap.sequence},
          {"created", FormatIso8601(snap.created_ns)}};
}

json FileInfoJson(const FileInfo& info) {
  json out = {{"path", info.path},         {"type", FileTypeName(info.type)},
              {"size", info.size},         {"mtime", FormatIso8601(info.mtime_ns)},
              {"mtime_ns", info.mtime_ns}, {"mode", info.mode},
              {"inode", info.inode}};
  if (info.type == FileType::kFile) {
    out["etag"] = info.etag;
    out["version_id"] = info.version_id;
    out["chunks"] = info.chunks;
  }
  if (info.type == FileType::kSymlink) out["target"] = info.symlink_target;
  if (!info.attributes.empty()) out["attributes"] = info.attributes;
  if (info.stale) out["stale"] = true;
  return out;
}

}  // namespace weft::rest
