#include "frontends/s3/s3_error.h"

#include <array>
#include <utility>

#include "frontends/s3/xml.h"

namespace weft::s3 {
namespace {

struct KnownCode {
  std::string_view code;
  int http_status;
};

// The S3 codes Weft produces, with the status AWS documents for each.
constexpr std::array kKnownCodes = {
    KnownCode{"AccessDenied", 403},
    KnownCode{"AuthorizationHeaderMalformed", 400},
    KnownCode{"AuthorizationQueryParametersError", 400},
    KnownCode{"BadDigest", 400},
    KnownCode{"BucketAlreadyExists", 409},
    KnownCode{"BucketAlreadyOwnedByYou", 409},
    KnownCode{"BucketNotEmpty", 409},
    KnownCode{"EntityTooLarge", 400},
    KnownCode{"EntityTooSmall", 400},
    KnownCode{"IncompleteBody", 400},
    KnownCode{"InsufficientStorage", 507},
    KnownCode{"InternalError", 500},
    KnownCode{"InvalidAccessKeyId", 403},
    KnownCode{"InvalidArgument", 400},
    KnownCode{"InvalidBucketName", 400},
    KnownCode{"InvalidDigest", 400},
    KnownCode{"InvalidObjectState", 403},
    KnownCode{"InvalidPart", 400},
    KnownCode{"InvalidPartNumber", 416},
    KnownCode{"InvalidPartOrder", 400},
    KnownCode{"InvalidRange", 416},
    KnownCode{"InvalidRequest", 400},
    KnownCode{"KeyTooLongError", 400},
    KnownCode{"MalformedXML", 400},
    KnownCode{"MetadataTooLarge", 400},
    KnownCode{"MethodNotAllowed", 405},
    KnownCode{"MissingContentLength", 411},
    KnownCode{"NoSuchBucket", 404},
    KnownCode{"NoSuchKey", 404},
    KnownCode{"NoSuchUpload", 404},
    KnownCode{"NoSuchVersion", 404},
    KnownCode{"NotImplemented", 501},
    KnownCode{"ObjectConflict", 409},
    KnownCode{"OperationAborted", 409},
    KnownCode{"PreconditionFailed", 412},
    KnownCode{"RequestHeaderSectionTooLarge", 400},
    KnownCode{"RequestTimeTooSkewed", 403},
    KnownCode{"ServiceUnavailable", 503},
    KnownCode{"SignatureDoesNotMatch", 403},
    KnownCode{"XAmzContentSHA256Mismatch", 400},
};

std::optional<int> StatusOfCode(std::string_view code) {
  for (const KnownCode& known : kKnownCodes) {
    if (known.code == code) return known.http_status;
  }
  return std::nullopt;
}

// "Code: rest" -> ("Code", "rest") when Code is a known S3 code.
std::optional<std::pair<std::string_view, std::string_view>> SplitCodePrefix(
    std::string_view message) {
  size_t colon = message.find(": ");
  if (colon == std::string_view::npos || colon == 0 || colon > 40) return std::nullopt;
  std::string_view code = message.substr(0, colon);
  if (!StatusOfCode(code)) return std::nullopt;
  return std::make_pair(code, message.substr(colon + 2));
}

}  // namespace

S3Error MakeError(std::string_view code, std::string message) {
  return S3Error{StatusOfCode(code).value_or(400), std::string(code), std::move(message)};
}

S3Error ErrorFromStatus(const Status& status, Missing missing) {
  if (auto split = SplitCodePrefix(status.message())) {
    return MakeError(split->first, std::string(split->second));
  }
  const std::string& message = status.message();
  switch (status.code()) {
    case StatusCode::kNotFound:
      switch (missing) {
        case Missing::kBucket:
          return MakeError("NoSuchBucket", "The specified bucket does not exist");
        case Missing::kUpload:
          return MakeError("NoSuchUpload", "The specified multipart upload does not exist");
        case Missing::kVersion:
          return MakeError("NoSuchVersion", "The specified version does not exist");
        case Missing::kKey:
          return MakeError("NoSuchKey", "The specified key does not exist");
      }
      break;
    case StatusCode::kInvalidArgument:
      return MakeError("InvalidArgument", message);
    case StatusCode::kAlreadyExists:
    case StatusCode::kNotADirectory:
    case StatusCode::kIsADirectory:
      // An object "a" and a key "a/b" cannot both exist: Weft keys are paths.
      return MakeError("ObjectConflict", message);
    case StatusCode::kNotEmpty:
      return MakeError("BucketNotEmpty", message);
    case StatusCode::kPermissionDenied:
      return MakeError("AccessDenied", message);
    case StatusCode::kReadOnly:
      return MakeError("AccessDenied", message + " (read-only)");
    case StatusCode::kFailedPrecondition:
      return MakeError("PreconditionFailed", message);
    case StatusCode::kAborted:
      return MakeError("OperationAborted", message);
    case StatusCode::kOutOfRange:
      return MakeError("InvalidRange", message);
    case StatusCode::kResourceExhausted:
      return MakeError("InsufficientStorage", message);
    case StatusCode::kUnavailable:
      return MakeError("ServiceUnavailable", message);
    case StatusCode::kUnimplemented:
      return MakeError("NotImplemented", message);
    case StatusCode::kOk:
    case StatusCode::kCorruption:
    case StatusCode::kIoError:
    case StatusCode::kInternal:
      break;
  }
  return MakeError("InternalError", status.ToString());
}

std::string ErrorXml(const S3Error& error, std::string_view resource, std::string_view request_id) {
  XmlWriter xml;
  xml.Open("Error");
  xml.Element("Code", error.code);
  xml.Element("Message", error.message);
  xml.Element("Resource", resource);
  xml.Element("RequestId", request_id);
  xml.Close("Error");
  return xml.Finish();
}

}  // namespace weft::s3
