// Status and Result<T>: the error values every Weft module returns instead of throwing.
// A Status is a code plus a human-readable message; Result<T> holds a T or a non-OK Status,
// shaped like std::expected (absent from g++ 12 in C++20). Both are plain values: thread-safe
// to copy, not to mutate concurrently.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace weft {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // the caller's input is malformed (bad path, bad range)
  kNotFound,            // the named thing does not exist
  kAlreadyExists,       // create of something that exists
  kNotADirectory,       // a path component is a file
  kIsADirectory,        // file operation on a directory
  kNotEmpty,            // rmdir of a non-empty directory
  kPermissionDenied,    // authorisation refused
  kFailedPrecondition,  // a condition (if-match, version check) does not hold
  kReadOnly,            // a mutation of something immutable (a snapshot)
  kAborted,             // a conflicting concurrent change won; retry may succeed
  kOutOfRange,          // read past end, bad offset
  kResourceExhausted,   // disk full, quota
  kCorruption,          // stored bytes fail verification
  kIoError,             // the operating system refused an I/O call
  kUnavailable,         // a peer or service cannot be reached now
  kInternal,            // a bug: an invariant did not hold
  kUnimplemented,
};

std::string_view StatusCodeName(StatusCode code);

// What exactly went wrong, where the StatusCode alone does not tell a front end which of its
// own errors to answer: S3's NoSuchBucket against NoSuchKey, HTTP 401 against 403, a spoke the
// hub no longer knows. Named after the S3 error codes where S3 has one. Each front end maps
// reasons in one table (S3: s3_error.cc; REST: rest_frontend.cc); kNone leaves it to the
// StatusCode. Reasons travel with a Status over the fabric's wire, by name.
enum class Reason : uint8_t {
  kNone = 0,
  kAccessDenied,
  kAccessForbidden,
  kBadRequest,
  kAuthorizationHeaderMalformed,
  kAuthorizationQueryParametersError,
  kBadDigest,
  kBucketAlreadyExists,
  kBucketAlreadyOwnedByYou,
  kBucketNotEmpty,
  kEntityTooLarge,
  kEntityTooSmall,
  kIncompleteBody,
  kInsufficientStorage,
  kInternalError,
  kInvalidAccessKeyId,
  kInvalidArgument,
  kInvalidBucketName,
  kInvalidDigest,
  kInvalidObjectState,
  kInvalidPart,
  kInvalidPartNumber,
  kInvalidPartOrder,
  kInvalidRange,
  kInvalidRequest,
  kInvalidTag,
  kKeyTooLongError,
  kMalformedXML,
  kMetadataTooLarge,
  kMethodNotAllowed,
  kMissingContentLength,
  kNoSuchBucket,
  kNoSuchCORSConfiguration,
  kNoSuchKey,
  kNoSuchTagSet,
  kNoSuchUpload,
  kNoSuchVersion,
  kNotImplemented,
  kObjectConflict,
  kOperationAborted,
  kPreconditionFailed,
  kRequestHeaderSectionTooLarge,
  kRequestTimeTooSkewed,
  kServiceUnavailable,
  kSignatureDoesNotMatch,
  kXAmzContentSHA256Mismatch,
  kUnauthenticated,
  kInvalidCredentials,
  kNoSuchEndpoint,
  kPayloadTooLarge,
  kMalformedJSON,
  kUnknownSpoke,
  kTooLarge,
};

std::string_view ReasonName(Reason reason);    // "NoSuchBucket"; "" for kNone
Reason ReasonFromName(std::string_view name);  // kNone for a name it does not know

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  Status(StatusCode code, Reason reason, std::string message)
      : code_(code), reason_(reason), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  Reason reason() const { return reason_; }
  const std::string& message() const { return message_; }

  // "NotFound: /a/b does not exist" — the form printed to users and logs (with the reason's
  // name after the code when there is one: "NotFound: NoSuchBucket: ...").
  std::string ToString() const;

  // Returns a copy whose message is prefixed with `context` ("reading pack 7: ...").
  Status WithContext(std::string_view context) const;

  bool operator==(const Status& other) const = default;

 private:
  StatusCode code_ = StatusCode::kOk;
  Reason reason_ = Reason::kNone;
  std::string message_;
};

inline Status OkStatus() {
  return Status();
}
inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status InvalidArgument(Reason r, std::string m) {
  return {StatusCode::kInvalidArgument, r, std::move(m)};
}
inline Status NotFound(std::string m) {
  return {StatusCode::kNotFound, std::move(m)};
}
inline Status NotFound(Reason r, std::string m) {
  return {StatusCode::kNotFound, r, std::move(m)};
}
inline Status AlreadyExists(std::string m) {
  return {StatusCode::kAlreadyExists, std::move(m)};
}
inline Status AlreadyExists(Reason r, std::string m) {
  return {StatusCode::kAlreadyExists, r, std::move(m)};
}
inline Status NotADirectory(std::string m) {
  return {StatusCode::kNotADirectory, std::move(m)};
}
inline Status NotADirectory(Reason r, std::string m) {
  return {StatusCode::kNotADirectory, r, std::move(m)};
}
inline Status IsADirectory(std::string m) {
  return {StatusCode::kIsADirectory, std::move(m)};
}
inline Status IsADirectory(Reason r, std::string m) {
  return {StatusCode::kIsADirectory, r, std::move(m)};
}
inline Status NotEmpty(std::string m) {
  return {StatusCode::kNotEmpty, std::move(m)};
}
inline Status NotEmpty(Reason r, std::string m) {
  return {StatusCode::kNotEmpty, r, std::move(m)};
}
inline Status PermissionDenied(std::string m) {
  return {StatusCode::kPermissionDenied, std::move(m)};
}
inline Status PermissionDenied(Reason r, std::string m) {
  return {StatusCode::kPermissionDenied, r, std::move(m)};
}
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status FailedPrecondition(Reason r, std::string m) {
  return {StatusCode::kFailedPrecondition, r, std::move(m)};
}
inline Status ReadOnly(std::string m) {
  return {StatusCode::kReadOnly, std::move(m)};
}
inline Status ReadOnly(Reason r, std::string m) {
  return {StatusCode::kReadOnly, r, std::move(m)};
}
inline Status Aborted(std::string m) {
  return {StatusCode::kAborted, std::move(m)};
}
inline Status Aborted(Reason r, std::string m) {
  return {StatusCode::kAborted, r, std::move(m)};
}
inline Status OutOfRange(std::string m) {
  return {StatusCode::kOutOfRange, std::move(m)};
}
inline Status OutOfRange(Reason r, std::string m) {
  return {StatusCode::kOutOfRange, r, std::move(m)};
}
inline Status ResourceExhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status ResourceExhausted(Reason r, std::string m) {
  return {StatusCode::kResourceExhausted, r, std::move(m)};
}
inline Status Corruption(std::string m) {
  return {StatusCode::kCorruption, std::move(m)};
}
inline Status Corruption(Reason r, std::string m) {
  return {StatusCode::kCorruption, r, std::move(m)};
}
inline Status IoError(std::string m) {
  return {StatusCode::kIoError, std::move(m)};
}
inline Status IoError(Reason r, std::string m) {
  return {StatusCode::kIoError, r, std::move(m)};
}
inline Status Unavailable(std::string m) {
  return {StatusCode::kUnavailable, std::move(m)};
}
inline Status Unavailable(Reason r, std::string m) {
  return {StatusCode::kUnavailable, r, std::move(m)};
}
inline Status Internal(std::string m) {
  return {StatusCode::kInternal, std::move(m)};
}
inline Status Internal(Reason r, std::string m) {
  return {StatusCode::kInternal, r, std::move(m)};
}
inline Status Unimplemented(std::string m) {
  return {StatusCode::kUnimplemented, std::move(m)};
}
inline Status Unimplemented(Reason r, std::string m) {
  return {StatusCode::kUnimplemented, r, std::move(m)};
}

// Maps an errno value from a failed system call to a Status (ENOSPC -> ResourceExhausted, ...).
Status ErrnoToStatus(int err, std::string_view context);

// Result<T>: either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::in_place_index<1>, std::move(status)) {  // NOLINT
    assert(!std::get<1>(v_).ok() && "Result constructed from an OK Status");
  }

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<1>(v_);
  }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  T value_or(T fallback) const& { return ok() ? value() : std::move(fallback); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace weft

#define WEFT_CONCAT_INNER_(a, b) a##b
#define WEFT_CONCAT_(a, b) WEFT_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function if `expr` is not OK.
#define WEFT_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::weft::Status weft_status_ = (expr);        \
    if (!weft_status_.ok()) return weft_status_; \
  } while (0)

// `lhs` = value of the Result `rexpr`, or return its Status.
#define WEFT_ASSIGN_OR_RETURN(lhs, rexpr) \
  WEFT_ASSIGN_OR_RETURN_IMPL_(WEFT_CONCAT_(weft_result_, __LINE__), lhs, rexpr)
#define WEFT_ASSIGN_OR_RETURN_IMPL_(result, lhs, rexpr) \
  auto result = (rexpr);                                \
  if (!result.ok()) return result.status();             \
  lhs = std::move(result).value()
