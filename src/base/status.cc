#include "base/status.h"

#include <cerrno>
#include <cstring>

namespace weft {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case StatusCode::kNotADirectory:
      return "NotADirectory";
    case StatusCode::kIsADirectory:
      return "IsADirectory";
    case StatusCode::kNotEmpty:
      return "NotEmpty";
    case StatusCode::kPermissionDenied:
      return "PermissionDenied";
    case StatusCode::kFailedPrecondition:
      return "FailedPrecondition";
    case StatusCode::kReadOnly:
      return "ReadOnly";
    case StatusCode::kAborted:
      return "Aborted";
    case StatusCode::kOutOfRange:
      return "OutOfRange";
    case StatusCode::kResourceExhausted:
      return "ResourceExhausted";
    case StatusCode::kCorruption:
      return "Corruption";
    case StatusCode::kIoError:
      return "IoError";
    case StatusCode::kUnavailable:
      return "Unavailable";
    case StatusCode::kInternal:
      return "Internal";
    case StatusCode::kUnimplemented:
      return "Unimplemented";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(code_));
  if (!message_.empty()) {
    out += ": ";
    out += message_;
  }
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  return Status(code_, std::move(m));
}

Status ErrnoToStatus(int err, std::string_view context) {
  std::string m(context);
  m += ": ";
  m += std::strerror(err);
  switch (err) {
    case ENOENT:
      return NotFound(std::move(m));
    case EEXIST:
      return AlreadyExists(std::move(m));
    case ENOTDIR:
      return NotADirectory(std::move(m));
    case EISDIR:
      return IsADirectory(std::move(m));
    case ENOTEMPTY:
      return NotEmpty(std::move(m));
    case EACCES:
    case EPERM:
      return PermissionDenied(std::move(m));
    case ENOSPC:
    case EDQUOT:
    case EMFILE:
    case ENFILE:
      return ResourceExhausted(std::move(m));
    case EROFS:
      return ReadOnly(std::move(m));
    case EINVAL:
    case ENAMETOOLONG:
      return InvalidArgument(std::move(m));
    default:
      return IoError(std::move(m));
  }
}

}  // namespace weft
