// Object and bucket tags. An object's tags describe one version: they are stored with it (the
// attribute kAttrTagging), set by x-amz-tagging on PUT, copy and multipart uploads, and
// replaced in place by PutObjectTagging (the version keeps its id). A bucket's tags are a
// bucket attribute. Limits and characters as S3 documents them.

#include <string>
#include <utility>
#include <vector>

#include "base/utf8.h"
#include "frontends/s3/call.h"

namespace weft::s3 {
namespace {

constexpr size_t kMaxObjectTags = 10;
constexpr size_t kMaxBucketTags = 50;
constexpr size_t kMaxTagKeyChars = 128;
constexpr size_t kMaxTagValueChars = 256;
// Stored form: key US value RS key US value ... (validated tags hold no control characters).
constexpr char kKeyValue = '\x1f';
constexpr char kBetweenTags = '\x1e';

size_t CodePoints(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// S3 allows letters, digits, white space and + - = . _ : / @ (letters of any script).
bool AllowedTagText(std::string_view s) {
  if (!IsValidUtf8(s)) return false;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x80 || std::isalnum(u)) continue;
    if (std::string_view(" +-=._:/@").find(c) == std::string_view::npos) return false;
  }
  return true;
}

Status InvalidTag(std::string why) {
  return InvalidArgument(Reason::kInvalidTag, std::move(why));
}

}  // namespace

Status ValidateTags(const Tags& tags, bool bucket) {
  const size_t limit = bucket ? kMaxBucketTags : kMaxObjectTags;
  if (tags.size() > limit) {
    return InvalidArgument(Reason::kBadRequest,
                           "Object tags cannot be greater than " + std::to_string(limit));
  }
  for (size_t i = 0; i < tags.size(); ++i) {
    const auto& [key, value] = tags[i];
    if (key.empty() || CodePoints(key) > kMaxTagKeyChars) {
      return InvalidTag("The TagKey you have provided is invalid (1 to 128 characters)");
    }
    if (CodePoints(value) > kMaxTagValueChars) {
      return InvalidTag("The TagValue you have provided is invalid (at most 256 characters)");
    }
    if (!AllowedTagText(key) || !AllowedTagText(value)) {
      return InvalidTag("Tags hold letters, digits, white space and + - = . _ : / @ only");
    }
    if (key.starts_with("aws:")) return InvalidTag("Tag keys starting with aws: are reserved");
    for (size_t j = 0; j < i; ++j) {
      if (tags[j].first == key) return InvalidTag("Cannot provide multiple Tags with the same key");
    }
  }
  return OkStatus();
}

Result<Tags> ParseTaggingHeader(std::string_view header) {
  WEFT_ASSIGN_OR_RETURN(std::vector<sigv4::QueryParam> params, sigv4::ParseQueryString(header));
  Tags tags;
  for (sigv4::QueryParam& p : params) tags.emplace_back(std::move(p.name), std::move(p.value));
  WEFT_RETURN_IF_ERROR(ValidateTags(tags, /*bucket=*/false));
  return tags;
}

Result<Tags> ParseTaggingXml(const XmlDocument& doc, bool bucket) {
  auto set = doc.root().Child("TagSet");
  if (!set) return InvalidArgument(Reason::kMalformedXML, "a Tagging document needs a TagSet");
  Tags tags;
  for (const XmlElement& tag : set->Children("Tag")) {
    auto key = tag.Child("Key");
    auto value = tag.Child("Value");
    if (!key || !value) {
      return InvalidArgument(Reason::kMalformedXML, "each Tag needs a Key and a Value");
    }
    tags.emplace_back(key->raw_text(), value->raw_text());
  }
  WEFT_RETURN_IF_ERROR(ValidateTags(tags, bucket));
  return tags;
}

std::string EncodeTags(const Tags& tags) {
  std::string out;
  for (const auto& [key, value] : tags) {
    if (!out.empty()) out += kBetweenTags;
    out += key + kKeyValue + value;
  }
  return out;
}

Tags DecodeTags(std::string_view stored) {
  Tags tags;
  while (!stored.empty()) {
    size_t end = stored.find(kBetweenTags);
    std::string_view one = stored.substr(0, end);
    stored = end == std::string_view::npos ? "" : stored.substr(end + 1);
    size_t split = one.find(kKeyValue);
    if (split == std::string_view::npos) continue;
    tags.emplace_back(std::string(one.substr(0, split)), std::string(one.substr(split + 1)));
  }
  return tags;
}

Tags TagsOf(const Attributes& attributes, std::string_view name) {
  auto it = attributes.find(std::string(name));
  return it == attributes.end() ? Tags{} : DecodeTags(it->second);
}

namespace {

std::string TaggingXml(const Tags& tags) {
  XmlWriter xml;
  xml.Open("Tagging", true);
  xml.Open("TagSet");
  for (const auto& [key, value] : tags) {
    xml.Open("Tag");
    xml.Element("Key", key);
    xml.Element("Value", value);
    xml.Close("Tag");
  }
  xml.Close("TagSet");
  xml.Close("Tagging");
  return xml.Finish();
}

}  // namespace

void S3Frontend::Call::GetObjectTagging() {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  CopySource self{request_.bucket, request_.key, request_.Query("versionId")};
  auto opened = OpenSource(self, /*copy=*/false);
  if (!opened.ok()) return SendStatus(opened.status());
  std::vector<net::HttpHeader> headers;
  if (opened->version_id) headers.push_back({"x-amz-version-id", *opened->version_id});
  SendXml(200, TaggingXml(TagsOf(opened->reader->info().attributes, kAttrTagging)), false,
          std::move(headers));
}

void S3Frontend::Call::SetObjectTags(const std::optional<Tags>& tags) {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  const std::string path = request_.VolumePath();
  auto current = volume().Stat(ctx_, path);
  if (!current.ok() || current->type != FileType::kFile) {
    return SendError(MakeError(Reason::kNoSuchKey, "The specified key does not exist"));
  }
  const VersioningLog log = VersioningLog::FromAttributes(bucket->attributes);
  const std::string current_id = S3VersionId(*current, log);
  if (auto version = request_.Query("versionId"); version && *version != current_id) {
    // Weft describes a version anew only while it is current.
    return SendError(
        MakeError(Reason::kNotImplemented, "tags can be changed on the current version only"));
  }
  SetAttrRequest set;
  set.attributes = current->attributes;
  if (tags && !tags->empty()) {
    (*set.attributes)[std::string(kAttrTagging)] = EncodeTags(*tags);
  } else {
    set.attributes->erase(std::string(kAttrTagging));
  }
  set.if_version = current->version_id;
  auto done = volume().SetAttr(ctx_, path, set);
  if (!done.ok()) {
    if (done.status().code() == StatusCode::kFailedPrecondition) {
      return SendError(MakeError(Reason::kOperationAborted,
                                 "the object changed while its tags were set; try again"));
    }
    return SendStatus(done.status());
  }
  std::vector<net::HttpHeader> headers;
  if (VersioningOn(*bucket)) headers.push_back({"x-amz-version-id", current_id});
  SendEmpty(tags ? 200 : 204, std::move(headers));
}

void S3Frontend::Call::PutObjectTagging() {
  auto doc = ReadXmlBody("Tagging");
  if (!doc.ok()) return SendStatus(doc.status());
  auto tags = ParseTaggingXml(**doc, /*bucket=*/false);
  if (!tags.ok()) return SendStatus(tags.status());
  SetObjectTags(*tags);
}

void S3Frontend::Call::DeleteObjectTagging() {
  SetObjectTags(std::nullopt);
}

void S3Frontend::Call::GetBucketTagging() {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  if (!bucket->attributes.count(std::string(kAttrBucketTagging))) {
    return SendError(MakeError(Reason::kNoSuchTagSet, "The TagSet does not exist"));
  }
  SendXml(200, TaggingXml(TagsOf(bucket->attributes, kAttrBucketTagging)));
}

void S3Frontend::Call::PutBucketTagging() {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  auto doc = ReadXmlBody("Tagging");
  if (!doc.ok()) return SendStatus(doc.status());
  auto tags = ParseTaggingXml(**doc, /*bucket=*/true);
  if (!tags.ok()) return SendStatus(tags.status());
  Status done = SetBucketSetting(*bucket, kAttrBucketTagging, EncodeTags(*tags));
  if (!done.ok()) return SendStatus(done, Missing::kBucket);
  SendEmpty(204);
}

void S3Frontend::Call::DeleteBucketTagging() {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  Status done = SetBucketSetting(*bucket, kAttrBucketTagging, std::nullopt);
  if (!done.ok()) return SendStatus(done, Missing::kBucket);
  SendEmpty(204);
}

}  // namespace weft::s3
