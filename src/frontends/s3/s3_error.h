// S3Error: the one place a Weft Status becomes an S3 error (HTTP status, S3 code, message) and
// the XML body S3 clients parse. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace weft::s3 {

struct S3Error {
  int http_status = 500;
  std::string code;  // "NoSuchKey"
  std::string message;
};

// What a NotFound means depends on what was looked up.
enum class Missing { kKey, kBucket, kUpload, kVersion };

// Maps `status` (not OK) to an S3 error: by its Reason where S3 has that code (src/auth gives
// SignatureDoesNotMatch and the like), else by its StatusCode.
S3Error ErrorFromStatus(const Status& status, Missing missing = Missing::kKey);

// The S3 error `reason` names, with its standard HTTP status.
S3Error MakeError(Reason reason, std::string message);

// <Error><Code/><Message/><Resource/><RequestId/></Error>
std::string ErrorXml(const S3Error& error, std::string_view resource, std::string_view request_id);

}  // namespace weft::s3
