// Residency tags: the values of the kResidencyAttribute directory attribute (volume.h) and of
// a spoke's --tags. A tag is 1..32 of [a-z0-9._-], starting with a letter or digit. Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace weft {

inline Status ValidateSiteTag(std::string_view tag) {
  bool ok = !tag.empty() && tag.size() <= 32;
  for (size_t i = 0; ok && i < tag.size(); ++i) {
    char c = tag[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    ok = alnum || (i > 0 && (c == '.' || c == '_' || c == '-'));
  }
  if (ok) return OkStatus();
  return InvalidArgument("tag '" + std::string(tag.substr(0, 40)) +
                         "' must be 1..32 of a-z 0-9 . _ - starting with a letter or digit");
}

// "eu,gpu" -> {"eu", "gpu"}; empty pieces are skipped.
inline std::vector<std::string> SplitSiteTags(std::string_view text) {
  std::vector<std::string> tags;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view piece = text.substr(0, comma);
    if (!piece.empty()) tags.emplace_back(piece);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return tags;
}

// Whether a site with `site_tags` may hold data restricted to `required` (any one suffices).
inline bool SiteMayHold(const std::vector<std::string>& site_tags,
                        const std::vector<std::string>& required) {
  for (const std::string& r : required) {
    for (const std::string& t : site_tags) {
      if (r == t) return true;
    }
  }
  return false;
}

}  // namespace weft
