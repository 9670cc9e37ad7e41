#include "io/internal/path.h"

namespace weft::io_internal {

std::string NormalizePath(std::string_view path) {
  if (path.empty()) return {};
  const bool absolute = path.front() == '/';
  std::string out;
  if (absolute) out = "/";
  size_t pos = 0;
  while (pos < path.size()) {
    size_t end = path.find('/', pos);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(pos, end - pos);
    if (!part.empty() && part != ".") {
      if (!out.empty() && out.back() != '/') out += '/';
      out += part;
    }
    pos = end + 1;
  }
  if (out.empty()) out = ".";
  return out;
}

std::string Dirname(std::string_view path) {
  std::string normal = NormalizePath(path);
  if (normal == "/") return normal;
  size_t slash = normal.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  normal.resize(slash);
  return normal;
}

}  // namespace weft::io_internal
