#include "vfs/path.h"

namespace weft {

static std::string Printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 64)) {
    if (c == '\0') {
      out += "\\0";
    } else {
      out += c;
    }
  }
  if (s.size() > 64) out += "...";
  return out;
}

Status ValidateName(std::string_view name) {
  if (name.empty()) return InvalidArgument("empty path segment");
  if (name == "." || name == "..") {
    return InvalidArgument("path segment '" + std::string(name) + "' is not allowed");
  }
  if (name.size() > kMaxNameBytes) {
    return InvalidArgument("path segment '" + Printable(name) + "' is longer than 255 bytes");
  }
  if (name.find('\0') != std::string_view::npos) {
    return InvalidArgument("path segment '" + Printable(name) + "' contains a NUL byte");
  }
  if (name.find('/') != std::string_view::npos) {
    return InvalidArgument("name '" + Printable(name) + "' contains '/'");
  }
  return OkStatus();
}

Result<std::vector<std::string>> SplitPath(std::string_view path) {
  if (path.size() > kMaxPathBytes) {
    return InvalidArgument("path is longer than " + std::to_string(kMaxPathBytes) + " bytes");
  }
  if (path.empty() || path[0] != '/') {
    return InvalidArgument("path '" + Printable(path) + "' is not absolute");
  }
  std::vector<std::string> segments;
  std::string_view rest = path.substr(1);
  if (rest.size() > 1 && rest.back() == '/') rest.remove_suffix(1);  // "//" stays invalid
  if (rest.empty()) return segments;
  while (true) {
    size_t slash = rest.find('/');
    std::string_view seg = rest.substr(0, slash);
    Status s = ValidateName(seg);
    if (!s.ok()) return s.WithContext("path '" + Printable(path) + "'");
    segments.emplace_back(seg);
    if (slash == std::string_view::npos) break;
    rest = rest.substr(slash + 1);
  }
  return segments;
}

std::string ChildPath(std::string_view dir, std::string_view name) {
  std::string out(dir);
  if (out.empty() || out.back() != '/') out += '/';
  out += name;
  return out;
}

std::string JoinPath(const std::vector<std::string>& segments) {
  if (segments.empty()) return "/";
  std::string out;
  for (const auto& s : segments) {
    out += '/';
    out += s;
  }
  return out;
}

Result<ParentAndName> SplitParent(std::string_view path) {
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> segments, SplitPath(path));
  if (segments.empty()) return InvalidArgument("the root directory has no parent");
  ParentAndName out;
  out.name = std::move(segments.back());
  segments.pop_back();
  out.parent = std::move(segments);
  return out;
}

}  // namespace weft
