// UTF-8 validation for names that travel in XML and JSON (S3 keys, listing parameters):
// RFC 3629's well-formed sequences only, so overlong forms, surrogates and code points past
// U+10FFFF are refused. Pure; thread-safe.
#pragma once

#include <string_view>

namespace weft {

bool IsValidUtf8(std::string_view s);

}  // namespace weft
