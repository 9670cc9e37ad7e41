#include "frontends/s3/s3_error.h"

#include <array>
#include <utility>

#include "frontends/s3/xml.h"

namespace weft::s3 {
namespace {

struct KnownCode {
  Reason reason;
  int http_status;
};

// The S3 errors Weft answers, with the status AWS documents for each.
constexpr std::array kKnownCodes = {
    KnownCode{Reason::kAccessDenied, 403},
    KnownCode{Reason::kAccessForbidden, 403},
    KnownCode{Reason::kBadRequest, 400},
    KnownCode{Reason::kAuthorizationHeaderMalformed, 400},
    KnownCode{Reason::kAuthorizationQueryParametersError, 400},
    KnownCode{Reason::kBadDigest, 400},
    KnownCode{Reason::kBucketAlreadyExists, 409},
    KnownCode{Reason::kBucketAlreadyOwnedByYou, 409},
    KnownCode{Reason::kBucketNotEmpty, 409},
    KnownCode{Reason::kEntityTooLarge, 400},
    KnownCode{Reason::kEntityTooSmall, 400},
    KnownCode{Reason::kIncompleteBody, 400},
    KnownCode{Reason::kInsufficientStorage, 507},
    KnownCode{Reason::kInternalError, 500},
    KnownCode{Reason::kInvalidAccessKeyId, 403},
    KnownCode{Reason::kInvalidArgument, 400},
    KnownCode{Reason::kInvalidBucketName, 400},
    KnownCode{Reason::kInvalidDigest, 400},
    KnownCode{Reason::kInvalidObjectState, 403},
    KnownCode{Reason::kInvalidPart, 400},
    KnownCode{Reason::kInvalidPartNumber, 416},
    KnownCode{Reason::kInvalidPartOrder, 400},
    KnownCode{Reason::kInvalidRange, 416},
    KnownCode{Reason::kInvalidRequest, 400},
    KnownCode{Reason::kInvalidTag, 400},
    KnownCode{Reason::kKeyTooLongError, 400},
    KnownCode{Reason::kMalformedXML, 400},
    KnownCode{Reason::kMetadataTooLarge, 400},
    KnownCode{Reason::kMethodNotAllowed, 405},
    KnownCode{Reason::kMissingContentLength, 411},
    KnownCode{Reason::kNoSuchBucket, 404},
    KnownCode{Reason::kNoSuchCORSConfiguration, 404},
    KnownCode{Reason::kNoSuchKey, 404},
    KnownCode{Reason::kNoSuchTagSet, 404},
    KnownCode{Reason::kNoSuchUpload, 404},
    KnownCode{Reason::kNoSuchVersion, 404},
    KnownCode{Reason::kNotImplemented, 501},
    KnownCode{Reason::kObjectConflict, 409},
    KnownCode{Reason::kOperationAborted, 409},
    KnownCode{Reason::kPreconditionFailed, 412},
    KnownCode{Reason::kRequestHeaderSectionTooLarge, 400},
    KnownCode{Reason::kRequestTimeTooSkewed, 403},
    KnownCode{Reason::kServiceUnavailable, 503},
    KnownCode{Reason::kSignatureDoesNotMatch, 403},
    KnownCode{Reason::kXAmzContentSHA256Mismatch, 400},
};

const KnownCode* Find(Reason reason) {
  for (const KnownCode& known : kKnownCodes) {
    if (known.reason == reason) return &known;
  }
  return nullptr;
}

}  // namespace

S3Error MakeError(Reason reason, std::string message) {
  const KnownCode* known = Find(reason);
  return S3Error{known ? known->http_status : 400, std::string(ReasonName(reason)),
                 std::move(message)};
}

S3Error ErrorFromStatus(const Status& status, Missing missing) {
  const std::string& message = status.message();
  if (Find(status.reason()) != nullptr) return MakeError(status.reason(), message);
  switch (status.code()) {
    case StatusCode::kNotFound:
      switch (missing) {
        case Missing::kBucket:
          return MakeError(Reason::kNoSuchBucket, "The specified bucket does not exist");
        case Missing::kUpload:
          return MakeError(Reason::kNoSuchUpload, "The specified multipart upload does not exist");
        case Missing::kVersion:
          return MakeError(Reason::kNoSuchVersion, "The specified version does not exist");
        case Missing::kKey:
          return MakeError(Reason::kNoSuchKey, "The specified key does not exist");
      }
      break;
    case StatusCode::kInvalidArgument:
      return MakeError(Reason::kInvalidArgument, message);
    case StatusCode::kAlreadyExists:
    case StatusCode::kNotADirectory:
    case StatusCode::kIsADirectory:
      // An object "a" and a key "a/b" cannot both exist: Weft keys are paths.
      return MakeError(Reason::kObjectConflict, message);
    case StatusCode::kNotEmpty:
      return MakeError(Reason::kBucketNotEmpty, message);
    case StatusCode::kPermissionDenied:
      return MakeError(Reason::kAccessDenied, message);
    case StatusCode::kReadOnly:
      return MakeError(Reason::kAccessDenied, message + " (read-only)");
    case StatusCode::kFailedPrecondition:
      return MakeError(Reason::kPreconditionFailed, message);
    case StatusCode::kAborted:
      return MakeError(Reason::kOperationAborted, message);
    case StatusCode::kOutOfRange:
      return MakeError(Reason::kInvalidRange, message);
    case StatusCode::kResourceExhausted:
      return MakeError(Reason::kInsufficientStorage, message);
    case StatusCode::kUnavailable:
      return MakeError(Reason::kServiceUnavailable, message);
    case StatusCode::kUnimplemented:
      return MakeError(Reason::kNotImplemented, message);
    case StatusCode::kOk:
    case StatusCode::kCorruption:
    case StatusCode::kIoError:
    case StatusCode::kInternal:
      break;
  }
  return MakeError(Reason::kInternalError, status.ToString());
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
