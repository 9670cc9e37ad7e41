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

std::string_view ReasonName(Reason reason) {
  switch (reason) {
    case Reason::kNone:
      return "";
    case Reason::kAccessDenied:
      return "AccessDenied";
    case Reason::kAccessForbidden:
      return "AccessForbidden";
    case Reason::kBadRequest:
      return "BadRequest";
    case Reason::kAuthorizationHeaderMalformed:
      return "AuthorizationHeaderMalformed";
    case Reason::kAuthorizationQueryParametersError:
      return "AuthorizationQueryParametersError";
    case Reason::kBadDigest:
      return "BadDigest";
    case Reason::kBucketAlreadyExists:
      return "BucketAlreadyExists";
    case Reason::kBucketAlreadyOwnedByYou:
      return "BucketAlreadyOwnedByYou";
    case Reason::kBucketNotEmpty:
      return "BucketNotEmpty";
    case Reason::kEntityTooLarge:
      return "EntityTooLarge";
    case Reason::kEntityTooSmall:
      return "EntityTooSmall";
    case Reason::kIncompleteBody:
      return "IncompleteBody";
    case Reason::kInsufficientStorage:
      return "InsufficientStorage";
    case Reason::kInternalError:
      return "InternalError";
    case Reason::kInvalidAccessKeyId:
      return "InvalidAccessKeyId";
    case Reason::kInvalidArgument:
      return "InvalidArgument";
    case Reason::kInvalidBucketName:
      return "InvalidBucketName";
    case Reason::kInvalidDigest:
      return "InvalidDigest";
    case Reason::kInvalidObjectState:
      return "InvalidObjectState";
    case Reason::kInvalidPart:
      return "InvalidPart";
    case Reason::kInvalidPartNumber:
      return "InvalidPartNumber";
    case Reason::kInvalidPartOrder:
      return "InvalidPartOrder";
    case Reason::kInvalidRange:
      return "InvalidRange";
    case Reason::kInvalidRequest:
      return "InvalidRequest";
    case Reason::kInvalidTag:
      return "InvalidTag";
    case Reason::kKeyTooLongError:
      return "KeyTooLongError";
    case Reason::kMalformedXML:
      return "MalformedXML";
    case Reason::kMetadataTooLarge:
      return "MetadataTooLarge";
    case Reason::kMethodNotAllowed:
      return "MethodNotAllowed";
    case Reason::kMissingContentLength:
      return "MissingContentLength";
    case Reason::kNoSuchBucket:
      return "NoSuchBucket";
    case Reason::kNoSuchCORSConfiguration:
      return "NoSuchCORSConfiguration";
    case Reason::kNoSuchKey:
      return "NoSuchKey";
    case Reason::kNoSuchTagSet:
      return "NoSuchTagSet";
    case Reason::kNoSuchUpload:
      return "NoSuchUpload";
    case Reason::kNoSuchVersion:
      return "NoSuchVersion";
    case Reason::kNotImplemented:
      return "NotImplemented";
    case Reason::kObjectConflict:
      return "ObjectConflict";
    case Reason::kOperationAborted:
      return "OperationAborted";
    case Reason::kPreconditionFailed:
      return "PreconditionFailed";
    case Reason::kRequestHeaderSectionTooLarge:
      return "RequestHeaderSectionTooLarge";
    case Reason::kRequestTimeTooSkewed:
      return "RequestTimeTooSkewed";
    case Reason::kServiceUnavailable:
      return "ServiceUnavailable";
    case Reason::kSignatureDoesNotMatch:
      return "SignatureDoesNotMatch";
    case Reason::kXAmzContentSHA256Mismatch:
      return "XAmzContentSHA256Mismatch";
    case Reason::kUnauthenticated:
      return "Unauthenticated";
    case Reason::kInvalidCredentials:
      return "InvalidCredentials";
    case Reason::kNoSuchEndpoint:
      return "NoSuchEndpoint";
    case Reason::kPayloadTooLarge:
      return "PayloadTooLarge";
    case Reason::kMalformedJSON:
      return "MalformedJSON";
    case Reason::kUnknownSpoke:
      return "UnknownSpoke";
    case Reason::kTooLarge:
      return "TooLarge";
  }
  return "";
}

Reason ReasonFromName(std::string_view name) {
  if (name.empty()) return Reason::kNone;
  for (int r = 1; r <= static_cast<int>(Reason::kTooLarge); ++r) {
    if (ReasonName(static_cast<Reason>(r)) == name) return static_cast<Reason>(r);
  }
  return Reason::kNone;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(code_));
  if (reason_ != Reason::kNone) {
    out += ": ";
    out += ReasonName(reason_);
  }
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
  return Status(code_, reason_, std::move(m));
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
