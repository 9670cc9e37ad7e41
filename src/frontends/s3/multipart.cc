// Multipart uploads. An upload is a directory under /<bucket>/.weft-uploads whose attributes
// say which bucket and key it is for; each part is a file in it. Completing concatenates the parts'
// chunk lists into the final object (no bytes are copied) with S3's multipart ETag.
#include <openssl/rand.h>

#include <cstdio>

#include "base/bytes.h"
#include "base/clock.h"
#include "chunk/chunk_id.h"
#include "frontends/s3/call.h"
#include "frontends/s3/xml.h"

namespace weft::s3 {
namespace {

constexpr std::string_view kAttrUploadBucket = "upload.bucket";
constexpr std::string_view kAttrUploadKey = "upload.key";
constexpr std::string_view kAttrUploadInitiator = "upload.initiator";
constexpr uint64_t kMinPartBytes = 5 << 20;
constexpr uint64_t kMaxPartBytes = uint64_t{5} << 30;
constexpr int64_t kMaxParts = 10000;

std::string PartName(int64_t part) {
  char name[32];
  snprintf(name, sizeof name, "%05lld", static_cast<long long>(part));
  return name;
}

std::string NewUploadId() {
  uint8_t raw[16];
  RAND_bytes(raw, sizeof raw);
  return ToHex(ByteSpan(raw, sizeof raw));
}

bool IsUploadId(std::string_view id) {
  if (id.size() != 32) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string Attr(const Attributes& attributes, std::string_view name) {
  auto it = attributes.find(std::string(name));
  return it == attributes.end() ? "" : it->second;
}

}  // namespace

std::string S3Frontend::Call::UploadsDir() const {
  return "/" + request_.bucket + "/" + std::string(kUploadsDirName);
}

std::string S3Frontend::Call::UploadDir(const std::string& upload_id) const {
  return UploadsDir() + "/" + upload_id;
}

Result<FileInfo> S3Frontend::Call::FindUpload(const std::string& upload_id) {
  auto missing = [] {
    return NotFound(
        "NoSuchUpload: The specified upload does not exist. The upload ID may be invalid, or "
        "the upload may have been aborted or completed.");
  };
  if (!IsUploadId(upload_id)) return missing();
  auto info = volume().Stat(ctx_, UploadDir(upload_id));
  if (!info.ok()) {
    if (info.status().code() == StatusCode::kNotFound) return missing();
    return info.status();
  }
  if (info->type != FileType::kDirectory ||
      Attr(info->attributes, kAttrUploadBucket) != request_.bucket ||
      Attr(info->attributes, kAttrUploadKey) != request_.key) {
    return missing();
  }
  return info;
}

void S3Frontend::Call::CreateMultipartUpload() {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  if (request_.key.starts_with(".weft/") || request_.key.ends_with('/')) {
    return SendError(MakeError("InvalidRequest", "cannot upload to this key"));
  }
  auto attributes = AttributesFromHeaders();
  if (!attributes.ok()) return SendStatus(attributes.status());
  attributes->emplace(kAttrUploadBucket, request_.bucket);
  attributes->emplace(kAttrUploadKey, request_.key);
  attributes->emplace(kAttrUploadInitiator, ctx_.principal);
  std::string upload_id = NewUploadId();
  auto made = volume().Mkdir(ctx_, UploadDir(upload_id), 0700, /*parents=*/true);
  if (!made.ok()) return SendStatus(made.status());
  SetAttrRequest set;
  set.attributes = std::move(attributes).value();
  auto tagged = volume().SetAttr(ctx_, UploadDir(upload_id), set);
  if (!tagged.ok()) {
    (void)volume().Rmdir(ctx_, UploadDir(upload_id));
    return SendStatus(tagged.status());
  }
  XmlWriter xml;
  xml.Open("InitiateMultipartUploadResult", true);
  xml.Element("Bucket", request_.bucket);
  xml.Element("Key", request_.key);
  xml.Element("UploadId", upload_id);
  xml.Close("InitiateMultipartUploadResult");
  SendXml(200, xml.Finish());
}

void S3Frontend::Call::UploadPart(const std::optional<CopySource>& copy_source) {
  std::string upload_id = request_.Query("uploadId").value_or("");
  auto part = ParseIntParam("partNumber", request_.Query("partNumber").value_or(""), 1, kMaxParts);
  if (!part.ok()) return SendStatus(part.status());
  auto upload = FindUpload(upload_id);
  if (!upload.ok()) return SendStatus(upload.status(), Missing::kUpload);
  std::string part_path = UploadDir(upload_id) + "/" + PartName(*part);
  if (!copy_source) {
    if (!request_.http->content_length && !request_.http->chunked) {
      return SendError(MakeError("MissingContentLength", "You must provide the Content-Length"));
    }
    auto payload = Payload();
    if (!payload.ok()) return SendStatus(payload.status());
    if ((*payload)->declared_length() && *(*payload)->declared_length() > kMaxPartBytes) {
      return SendError(MakeError("EntityTooLarge", "a part may be at most 5 GiB"));
    }
    WriteOptions opts;
    opts.etag = (*payload)->declared_md5_hex();  // checked against the bytes before commit
    auto writer = volume().OpenWriter(ctx_, part_path, opts);
    if (!writer.ok()) return SendStatus(writer.status());
    Status copied = CopyPayloadInto(**writer, **payload);
    if (!copied.ok()) return SendStatus(copied);
    auto info = (*writer)->Commit();
    if (!info.ok()) return SendStatus(info.status());
    return SendEmpty(200, {{"ETag", QuoteEtag(info->etag)}});
  }

  // UploadPartCopy: the bytes of a range of another object (copied, so the part's MD5 is
  // known for the final ETag).
  auto opened = OpenSource(*copy_source);
  if (!opened.ok()) return SendStatus(opened.status());
  FileReader& reader = *opened->reader;
  uint64_t size = reader.info().size;
  uint64_t first = 0;
  uint64_t end = size;
  if (auto range = request_.Header("x-amz-copy-source-range")) {
    unsigned long long a = 0, b = 0;
    char tail = 0;
    if (sscanf(std::string(*range).c_str(), "bytes=%llu-%llu%c", &a, &b, &tail) != 2 || a > b ||
        b >= size) {
      return SendError(MakeError("InvalidArgument",
                                 "x-amz-copy-source-range must be bytes=first-last within the "
                                 "source object"));
    }
    first = a;
    end = b + 1;
  }
  if (end - first > kMaxPartBytes) {
    return SendError(MakeError("EntityTooLarge", "a part may be at most 5 GiB"));
  }
  auto writer = volume().OpenWriter(ctx_, part_path, WriteOptions{});
  if (!writer.ok()) return SendStatus(writer.status());
  for (uint64_t offset = first; offset < end;) {
    auto data = reader.ReadAt(offset, std::min<uint64_t>(1 << 20, end - offset));
    if (!data.ok()) return SendStatus(data.status());
    if (data->empty()) break;
    Status written = (*writer)->Write(AsBytes(*data));
    if (!written.ok()) return SendStatus(written);
    offset += data->size();
  }
  auto info = (*writer)->Commit();
  if (!info.ok()) return SendStatus(info.status());
  XmlWriter xml;
  xml.Open("CopyPartResult", true);
  xml.Element("LastModified", FormatIso8601(info->mtime_ns, /*millis=*/true));
  xml.Element("ETag", QuoteEtag(info->etag));
  xml.Close("CopyPartResult");
  SendXml(200, xml.Finish());
}

void S3Frontend::Call::CompleteMultipartUpload() {
  std::string upload_id = request_.Query("uploadId").value_or("");
  auto upload = FindUpload(upload_id);
  if (!upload.ok()) return SendStatus(upload.status(), Missing::kUpload);
  auto doc = ReadXmlBody("CompleteMultipartUpload");
  if (!doc.ok()) return SendStatus(doc.status());
  std::vector<XmlElement> parts = (*doc)->root().Children("Part");
  if (parts.empty()) {
    return SendError(MakeError("MalformedXML", "You must specify at least one part"));
  }
  std::string dir = UploadDir(upload_id);
  // The list's shape first (S3 reports a misordered list as such, whatever the parts hold).
  std::vector<int64_t> numbers;
  for (const XmlElement& part : parts) {
    auto number_element = part.Child("PartNumber");
    if (!number_element || !part.Child("ETag")) {
      return SendError(MakeError("MalformedXML", "each Part needs PartNumber and ETag"));
    }
    auto number = ParseIntParam("PartNumber", number_element->text(), 1, kMaxParts);
    if (!number.ok()) return SendError(MakeError("InvalidPart", number.status().message()));
    if (!numbers.empty() && *number <= numbers.back()) {
      return SendError(
          MakeError("InvalidPartOrder", "The list of parts was not in ascending order."));
    }
    numbers.push_back(*number);
  }
  std::vector<std::unique_ptr<FileReader>> readers;
  std::string md5s;
  for (size_t i = 0; i < parts.size(); ++i) {
    const int64_t number = numbers[i];
    auto reader = volume().OpenReader(ctx_, dir + "/" + PartName(number));
    std::string etag = UnquoteEtag(parts[i].Child("ETag")->text());
    if (!reader.ok() || (*reader)->info().etag != etag) {
      return SendError(MakeError("InvalidPart", "part " + std::to_string(number) +
                                                    " was not uploaded or its ETag differs"));
    }
    if (i + 1 < parts.size() && (*reader)->info().size < kMinPartBytes) {
      return SendError(MakeError("EntityTooSmall",
                                 "Your proposed upload is smaller than the minimum allowed "
                                 "size: every part but the last must be at least 5 MiB"));
    }
    auto raw = FromHex(etag);
    if (!raw || raw->size() != 16) {
      return SendError(
          MakeError("InvalidPart", "part " + std::to_string(number) + " has no MD5 ETag"));
    }
    md5s += *raw;
    readers.push_back(std::move(reader).value());
  }
  // S3's multipart ETag: MD5 of the concatenated binary part MD5s, then "-<parts>".
  std::string etag = ::weft::Md5Hex(AsBytes(md5s)) + "-" + std::to_string(parts.size());

  WriteOptions opts;
  opts.create_parents = true;
  opts.etag = etag;
  for (const auto& [name, value] : upload->attributes) {
    if (!name.starts_with("upload.")) opts.attributes[name] = value;
  }
  auto writer = volume().OpenWriter(ctx_, request_.VolumePath(), opts);
  if (!writer.ok()) return SendStatus(writer.status());
  for (auto& reader : readers) {
    Status appended = (*writer)->AppendFrom(*reader);
    if (!appended.ok()) {
      (*writer)->Abort();
      return SendStatus(appended);
    }
  }
  auto info = (*writer)->Commit();
  if (!info.ok()) return SendStatus(info.status());
  readers.clear();
  RemoveUpload(upload_id);
  XmlWriter xml;
  xml.Open("CompleteMultipartUploadResult", true);
  xml.Element("Location", "/" + request_.bucket + "/" + request_.key);
  xml.Element("Bucket", request_.bucket);
  xml.Element("Key", request_.key);
  xml.Element("ETag", QuoteEtag(info->etag));
  xml.Close("CompleteMultipartUploadResult");
  std::vector<net::HttpHeader> headers;
  if (auto bucket = StatBucket(request_.bucket);
      bucket.ok() &&
      VersioningLog::FromAttributes(bucket->attributes).Now() == Versioning::kEnabled) {
    headers.push_back({"x-amz-version-id", info->version_id});
  }
  SendXml(200, xml.Finish(), false, std::move(headers));
}

void S3Frontend::Call::AbortMultipartUpload() {
  std::string upload_id = request_.Query("uploadId").value_or("");
  auto upload = FindUpload(upload_id);
  if (!upload.ok()) return SendStatus(upload.status(), Missing::kUpload);
  RemoveUpload(upload_id);
  SendEmpty(204);
}

bool S3Frontend::Call::AbortAllUploadsIfOnlyThem() {
  ReadDirOptions two;
  two.limit = 2;
  auto top = volume().ReadDir(ctx_, "/" + request_.bucket, two);
  if (!top.ok() || top->entries.size() != 1 || top->entries[0].name != kUploadsDirName) {
    return false;
  }
  for (;;) {
    auto page = volume().ReadDir(ctx_, UploadsDir(), ReadDirOptions{});
    if (!page.ok() || page->entries.empty()) break;
    for (const DirEntry& e : page->entries) RemoveUpload(e.name);
    if (volume().Stat(ctx_, UploadDir(page->entries[0].name)).ok()) return false;  // stuck
  }
  (void)volume().Rmdir(ctx_, UploadsDir());
  return true;
}

void S3Frontend::Call::RemoveUpload(const std::string& upload_id) {
  // Best effort: what a crash leaves behind is found by ListMultipartUploads and aborted again.
  std::string dir = UploadDir(upload_id);
  while (true) {
    auto page = volume().ReadDir(ctx_, dir, ReadDirOptions{});
    if (!page.ok() || page->entries.empty()) break;
    bool progress = false;
    for (const DirEntry& e : page->entries) {
      progress |= volume().Unlink(ctx_, dir + "/" + e.name).ok();
    }
    if (!progress) break;
  }
  (void)volume().Rmdir(ctx_, dir);
  // The last upload takes the staging directory with it (fails harmlessly while others run).
  (void)volume().Rmdir(ctx_, UploadsDir());
}

void S3Frontend::Call::ListParts() {
  std::string upload_id = request_.Query("uploadId").value_or("");
  auto upload = FindUpload(upload_id);
  if (!upload.ok()) return SendStatus(upload.status(), Missing::kUpload);
  int64_t max_parts = 1000;
  if (auto m = request_.Query("max-parts")) {
    auto parsed = ParseIntParam("max-parts", *m, 0, 1 << 30);
    if (!parsed.ok()) return SendStatus(parsed.status());
    max_parts = std::min<int64_t>(*parsed, 1000);
  }
  int64_t marker = 0;
  if (auto m = request_.Query("part-number-marker")) {
    auto parsed = ParseIntParam("part-number-marker", *m, 0, kMaxParts);
    if (!parsed.ok()) return SendStatus(parsed.status());
    marker = *parsed;
  }
  ReadDirOptions opts;
  opts.with_info = true;
  opts.start_after = marker > 0 ? PartName(marker) : "";
  opts.limit = static_cast<uint32_t>(max_parts + 1);
  auto page = volume().ReadDir(ctx_, UploadDir(upload_id), opts);
  if (!page.ok()) return SendStatus(page.status(), Missing::kUpload);
  bool truncated = page->entries.size() > static_cast<size_t>(max_parts);
  if (truncated) page->entries.resize(static_cast<size_t>(max_parts));
  XmlWriter xml;
  xml.Open("ListPartsResult", true);
  xml.Element("Bucket", request_.bucket);
  xml.Element("Key", request_.key);
  xml.Element("UploadId", upload_id);
  xml.Element("PartNumberMarker", std::to_string(marker));
  std::string last = "0";
  for (const DirEntry& e : page->entries) last = std::to_string(std::stoll(e.name));
  xml.Element("NextPartNumberMarker", last);
  xml.Element("MaxParts", std::to_string(max_parts));
  xml.Element("IsTruncated", truncated ? "true" : "false");
  xml.Element("StorageClass", "STANDARD");
  for (const DirEntry& e : page->entries) {
    if (!e.info) continue;
    xml.Open("Part");
    xml.Element("PartNumber", std::to_string(std::stoll(e.name)));
    xml.Element("LastModified", FormatIso8601(e.info->mtime_ns, /*millis=*/true));
    xml.Element("ETag", QuoteEtag(e.info->etag));
    xml.Element("Size", std::to_string(e.info->size));
    xml.Close("Part");
  }
  xml.Close("ListPartsResult");
  SendXml(200, xml.Finish());
}

void S3Frontend::Call::ListMultipartUploads() {
  auto bucket = StatBucket(request_.bucket);
  if (!bucket.ok()) return SendStatus(bucket.status(), Missing::kBucket);
  std::string prefix = request_.Query("prefix").value_or("");
  struct Upload {
    std::string key;
    std::string id;
    int64_t initiated_ns;
    std::string initiator;
  };
  std::vector<Upload> uploads;
  ReadDirOptions opts;
  opts.with_info = true;
  while (true) {
    auto page = volume().ReadDir(ctx_, UploadsDir(), opts);
    if (!page.ok()) break;  // no uploads yet
    for (const DirEntry& e : page->entries) {
      opts.start_after = e.name;
      if (!e.info) continue;
      const Attributes& a = e.info->attributes;
      std::string key = Attr(a, kAttrUploadKey);
      if (Attr(a, kAttrUploadBucket) != request_.bucket || !key.starts_with(prefix)) continue;
      uploads.push_back({key, e.name, e.info->ctime_ns, Attr(a, kAttrUploadInitiator)});
    }
    if (!page->truncated) break;
  }
  std::sort(uploads.begin(), uploads.end(), [](const Upload& x, const Upload& y) {
    return std::tie(x.key, x.id) < std::tie(y.key, y.id);
  });
  XmlWriter xml;
  xml.Open("ListMultipartUploadsResult", true);
  xml.Element("Bucket", request_.bucket);
  xml.Element("KeyMarker", "");
  xml.Element("UploadIdMarker", "");
  xml.Element("Prefix", prefix);
  xml.Element("MaxUploads", "1000");
  xml.Element("IsTruncated", "false");
  for (const Upload& u : uploads) {
    xml.Open("Upload");
    xml.Element("Key", u.key);
    xml.Element("UploadId", u.id);
    xml.Open("Initiator");
    xml.Element("ID", u.initiator);
    xml.Element("DisplayName", u.initiator);
    xml.Close("Initiator");
    xml.Open("Owner");
    xml.Element("ID", u.initiator);
    xml.Element("DisplayName", u.initiator);
    xml.Close("Owner");
    xml.Element("StorageClass", "STANDARD");
    xml.Element("Initiated", FormatIso8601(u.initiated_ns, /*millis=*/true));
    xml.Close("Upload");
  }
  xml.Close("ListMultipartUploadsResult");
  SendXml(200, xml.Finish());
}

}  // namespace weft::s3
