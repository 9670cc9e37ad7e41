// S3Frontend::Call: the state of one authenticated, authorised S3 request and its handlers.
// Private to the S3 front end (s3_frontend.cc has dispatch, buckets and objects; multipart.cc
// the multipart upload operations). Used by the request's thread only.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "frontends/s3/request.h"
#include "frontends/s3/s3_error.h"
#include "frontends/s3/s3_frontend.h"
#include "frontends/s3/versions.h"
#include "frontends/s3/xml.h"

namespace weft::s3 {

// Attribute names under which S3 object and bucket settings are stored in the engine.
inline constexpr std::string_view kAttrMetaPrefix = "s3.meta.";
inline constexpr std::string_view kAttrVersioning = "s3.versioning";
// A multipart object's part sizes, as runs "size*count,..." (GET ?partNumber=).
inline constexpr std::string_view kAttrParts = "s3.parts";
inline constexpr int64_t kMaxParts = 10000;
// Tags, in order as sent: an object version's (x-amz-tagging, PutObjectTagging) and a bucket's.
using Tags = std::vector<std::pair<std::string, std::string>>;
inline constexpr std::string_view kAttrTagging = "s3.tagging";
inline constexpr std::string_view kAttrBucketTagging = "s3.bucket-tagging";
// A bucket's CORS rules, as cors.h's canonical XML.
inline constexpr std::string_view kAttrCors = "s3.cors";
// When each versioning state began (versions.h).
inline constexpr std::string_view kAttrVersioningLog = "s3.versioning-log";
// The principal that created the bucket.
inline constexpr std::string_view kAttrOwner = "s3.owner";
inline constexpr std::string_view kAttrKeepVersions = "weft.keep-versions";

// A copy source ("/bucket/key?versionId=..."), validated and authorised at the edge.
struct CopySource {
  std::string bucket;
  std::string key;
  std::optional<std::string> version_id;
  std::string VolumePath() const { return "/" + bucket + "/" + key; }
};

// Where an object's bytes are read from: the live namespace, or a snapshot when the key is
// ".weft/snapshots/<name>/<key>".
struct ObjectRef {
  std::string path;
  ReadOptions read;
  bool in_snapshot = false;
};

class S3Frontend::Call {
 public:
  // `ctx` names the caller and the resource its route was authorised on.
  Call(S3Frontend& frontend, S3Request request, Identity identity, RequestContext ctx,
       net::BodyReader& body, net::ResponseWriter& response, std::string request_id);

  // Buckets and service.
  void ListBuckets();
  void CreateBucket();
  void HeadBucket();
  void DeleteBucket();
  void GetBucketLocation();
  void GetBucketVersioning();
  void PutBucketVersioning();
  void ListObjects(bool v2);
  void ListObjectVersions();
  void DeleteObjects();
  // CORS rules (cors.cc).
  void GetBucketCors();
  void PutBucketCors();
  void DeleteBucketCors();
  // Tags (tagging.cc).
  void GetObjectTagging();
  void PutObjectTagging();
  void DeleteObjectTagging();
  void GetBucketTagging();
  void PutBucketTagging();
  void DeleteBucketTagging();
  // Objects.
  void PutObject();
  void GetObject(bool head);
  void GetObjectAttributes();
  void DeleteObject();
  void CopyObject(const CopySource& source);
  // Multipart (multipart.cc).
  void CreateMultipartUpload();
  void UploadPart(const std::optional<CopySource>& copy_source);
  void CompleteMultipartUpload();
  void AbortMultipartUpload();
  void ListParts();
  void ListMultipartUploads();

  void SendError(const S3Error& error, std::vector<net::HttpHeader> headers = {});
  void SendStatus(const Status& status, Missing missing = Missing::kKey) {
    SendError(ErrorFromStatus(status, missing));
  }
  // With `stale`, RFC 7234's "Warning: 110" (a --stale-ok spoke answered from old metadata).
  void SendXml(int http_status, const std::string& xml, bool stale = false,
               std::vector<net::HttpHeader> headers = {});
  void SendEmpty(int http_status, std::vector<net::HttpHeader> headers = {});

  S3Request& request() { return request_; }
  const Identity& identity() const { return identity_; }
  const RequestContext& ctx() const { return ctx_; }

 private:
  Volume& volume() { return frontend_.volume_; }
  int64_t now_ns() { return frontend_.options_.clock->NowNanos(); }
  // The bucket must exist (NoSuchBucket otherwise); returns its directory info.
  Result<FileInfo> StatBucket(const std::string& bucket);
  // Whether versioning was ever configured (Enabled or Suspended) on the bucket.
  bool VersioningOn(const FileInfo& bucket) const;
  // A key's versions as S3 shows them, newest first.
  Result<std::vector<S3Version>> S3VersionsOf(const FileInfo& bucket, const std::string& path);
  // The Weft version S3's `id` names ("null" included); NoSuchVersion when none.
  Result<S3Version> FindS3Version(const FileInfo& bucket, const std::string& path,
                                  const std::string& id);
  struct Deleted {
    bool delete_marker = false;     // a delete marker was made or removed
    std::optional<std::string> id;  // S3's id of the version made or removed
  };
  // DeleteObject and each key of DeleteObjects: the key, or one of its versions.
  Result<Deleted> DeleteKey(const FileInfo& bucket, const std::string& key,
                            const std::optional<std::string>& version);
  Result<ObjectRef> ResolveObject(const std::string& bucket, const std::string& key);
  // A copy source opened for reading: its bucket, where it lives, and a reader of the
  // version it names (S3's "null" included). Errors carry their S3 code; a delete marker is
  // InvalidRequest for a copy and MethodNotAllowed (405) for a read of its tags or attributes.
  struct Source {
    FileInfo bucket;
    ObjectRef ref;
    std::unique_ptr<FileReader> reader;
    std::optional<std::string> version_id;  // S3's id, when the source bucket is versioned
  };
  Result<Source> OpenSource(const CopySource& source, bool copy = true);
  // Object attributes from request headers (Content-Type, x-amz-meta-*, ...).
  Result<Attributes> AttributesFromHeaders();
  // Streams the request payload into `writer`; aborts it on any error.
  Status CopyPayloadInto(FileWriter& writer, PayloadReader& payload);
  Result<std::unique_ptr<PayloadReader>> Payload();
  // The request body as an XML document whose root is `root` (MalformedXML otherwise); with
  // `optional` an empty body gives a null document.
  Result<std::unique_ptr<XmlDocument>> ReadXmlBody(std::string_view root, bool optional = false);
  // Sets (or, without a value, removes) one setting of the request's bucket, whose current
  // attributes are `bucket`'s.
  Status SetBucketSetting(const FileInfo& bucket, std::string_view name,
                          std::optional<std::string> value);
  // Whether a key of the bucket still has a version or delete marker S3 shows.
  Result<bool> AnyVersionLeft(const FileInfo& bucket);
  // Removes the directories below `dir` that hold no object, deepest first (not uploads).
  void RemoveEmptyDirectories(const std::string& dir);
  // Removes now-empty directories from `path`'s parent up to (not including) the bucket.
  void PruneEmptyParents(const FileInfo& bucket, const std::string& path);
  // Multipart helpers.
  std::string UploadsDir() const;  // of the request's bucket
  // When uploads in progress are all the bucket holds, aborts them (DeleteBucket does not
  // count them as objects); returns whether it did.
  bool AbortAllUploadsIfOnlyThem();
  std::string UploadDir(const std::string& upload_id) const;
  Result<FileInfo> FindUpload(const std::string& upload_id);
  void RemoveUpload(const std::string& upload_id);
  // Replaces the current version's tags (none: removes them) and answers.
  void SetObjectTags(const std::optional<Tags>& tags);
  // CompleteMultipartUpload's answer for the object `info` it made.
  void SendCompleted(const FileInfo& info);

  S3Frontend& frontend_;
  S3Request request_;
  Identity identity_;
  RequestContext ctx_;
  net::BodyReader& body_;
  net::ResponseWriter& response_;
  std::string request_id_;
};

// Helpers shared by the handler files.
std::string QuoteEtag(std::string_view etag);
std::string UnquoteEtag(std::string_view etag);
// Response headers describing an object: ETag, Last-Modified, Content-Type, x-amz-meta-*, ...
std::vector<net::HttpHeader> ObjectHeaders(const FileInfo& info);
// Tags (tagging.cc): validated against S3's limits (InvalidTag, BadRequest), parsed from an
// x-amz-tagging header or a Tagging document, and stored in an attribute.
Status ValidateTags(const Tags& tags, bool bucket);
Result<Tags> ParseTaggingHeader(std::string_view header);
Result<Tags> ParseTaggingXml(const XmlDocument& doc, bool bucket);
std::string EncodeTags(const Tags& tags);
Tags DecodeTags(std::string_view stored);
Tags TagsOf(const Attributes& attributes, std::string_view name);
// The kAttrParts form of part sizes, and back (nullopt if malformed).
std::string EncodePartSizes(const std::vector<uint64_t>& sizes);
std::optional<std::vector<uint64_t>> DecodePartSizes(std::string_view text);
// A multipart object's part sizes, when it records ones that add up to its size.
std::optional<std::vector<uint64_t>> PartSizesOf(const FileInfo& info);
// A client-chosen integer query value in [lo, hi].
Result<int64_t> ParseIntParam(std::string_view name, std::string_view value, int64_t lo,
                              int64_t hi);

}  // namespace weft::s3
