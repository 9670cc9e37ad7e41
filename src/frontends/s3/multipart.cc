// Multipart uploads. An upload is a directory under /<bucket>/.weft-uploads whose attributes
// say which bucket and key it is for; each part is a file in it. Completing concatenates the parts'
// chunk lists into the final object (no bytes are copied) with S3's multipart ETag.
#include <openssl/rand.h>

#include <charconv>
#include <cstdio>

#include "base/bytes.h"
#include "base/clock.h"
#include "base/hash.h"
#include "frontends/s3/call.h"
#include "frontends/s3/xml.h"

namespace weft::s3 {
namespace {

constexpr std::string_view kAttrUploadBucket = "upload.bucket";
constexpr std::string_view kAttrUploadKey = "upload.key";
constexpr std::string_view kAttrUploadInitiator = "upload.initiator";
// A completed upload's object records the upload it came from (so that completing it again
// succeeds) and its parts' sizes (GET ?partNumber=).
constexpr std::string_view kAttrUploadId = "s3.upload-id";
constexpr size_t kMaxPartLayoutBytes = 2048;
constexpr uint64_t kMinPartBytes = 5 << 20;
constexpr uint64_t kMaxPartBytes = uint64_t{5} << 30;

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
    return NotFound(Reason::kNoSuchUpload,
                    "The specified upload does not exist. The upload ID may be invalid, or "
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
    return SendError(MakeError(Reason::kInvalidRequest, "cannot upload to this key"));
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
      return SendError(
          MakeError(Reason::kMissingContentLength, "You must provide the Content-Length"));
    }
    auto payload = Payload();
    if (!payload.ok()) return SendStatus(payload.status());
    if ((*payload)->declared_length() && *(*payload)->declared_length() > kMaxPartBytes) {
      return SendError(MakeError(Reason::kEntityTooLarge, "a part may be at most 5 GiB"));
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
    if (sscanf(std::string(*range).c_str(), "bytes=%llu-%llu%c", &a, &b, &tail) != 2 || a > b) {
      return SendError(
          MakeError(Reason::kInvalidArgument, "x-amz-copy-source-range must be bytes=first-last"));
    }
    if (b >= size) {
      return SendError(MakeError(Reason::kInvalidRange,
                                 "The x-amz-copy-source-range is past the end "
                                 "of the source object (" +
                                     std::to_string(size) + " bytes)"));
    }
    first = a;
    end = b + 1;
  }
  if (end - first > kMaxPartBytes) {
    return SendError(MakeError(Reason::kEntityTooLarge, "a part may be at most 5 GiB"));
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

namespace {

// A CompleteMultipartUpload body: part numbers and ETags, and the object's S3 ETag.
struct PartList {
  std::vector<int64_t> numbers;
  std::vector<std::string> etags;
  std::string etag;  // MD5 of the concatenated binary part MD5s, then "-<parts>"
};

Result<PartList> ParsePartList(const XmlDocument& doc) {
  std::vector<XmlElement> parts = doc.root().Children("Part");
  if (parts.empty())
    return InvalidArgument(Reason::kMalformedXML, "You must specify at least one part");
  // The list's shape first (S3 reports a misordered list as such, whatever the parts hold).
  PartList list;
  std::string md5s;
  for (const XmlElement& part : parts) {
    auto number_element = part.Child("PartNumber");
    if (!number_element || !part.Child("ETag")) {
      return InvalidArgument(Reason::kMalformedXML, "each Part needs PartNumber and ETag");
    }
    auto number = ParseIntParam("PartNumber", number_element->text(), 1, kMaxParts);
    if (!number.ok()) return InvalidArgument(Reason::kInvalidPart, number.status().message());
    if (!list.numbers.empty() && *number <= list.numbers.back()) {
      return InvalidArgument(Reason::kInvalidPartOrder,
                             "The list of parts was not in ascending order.");
    }
    list.numbers.push_back(*number);
    list.etags.push_back(UnquoteEtag(part.Child("ETag")->text()));
    auto raw = FromHex(list.etags.back());
    if (!raw || raw->size() != 16) {
      return InvalidArgument(Reason::kInvalidPart,
                             "part " + std::to_string(*number) + " has no MD5 ETag");
    }
    md5s += *raw;
  }
  list.etag = ::weft::Md5Hex(AsBytes(md5s)) + "-" + std::to_string(parts.size());
  return list;
}

}  // namespace

void S3Frontend::Call::CompleteMultipartUpload() {
  std::string upload_id = request_.Query("uploadId").value_or("");
  auto upload = FindUpload(upload_id);
  auto doc = ReadXmlBody("CompleteMultipartUpload");
  if (!upload.ok()) {
    // Completing again with the same parts succeeds, as in S3, while the object it made is
    // still the key's current version.
    if (upload.status().code() == StatusCode::kNotFound && doc.ok()) {
      auto list = ParsePartList(**doc);
      auto done = volume().Stat(ctx_, request_.VolumePath());
      if (list.ok() && done.ok() && done->etag == list->etag &&
          Attr(done->attributes, kAttrUploadId) == upload_id) {
        return SendCompleted(*done);
      }
    }
    return SendStatus(upload.status(), Missing::kUpload);
  }
  if (!doc.ok()) return SendStatus(doc.status());
  auto parsed = ParsePartList(**doc);
  if (!parsed.ok()) return SendStatus(parsed.status());
  const std::vector<int64_t>& numbers = parsed->numbers;
  const std::vector<std::string>& etags = parsed->etags;
  const std::string& etag = parsed->etag;
  const size_t parts = numbers.size();
  std::string dir = UploadDir(upload_id);
  std::vector<std::unique_ptr<FileReader>> readers;
  std::vector<uint64_t> sizes;
  for (size_t i = 0; i < parts; ++i) {
    const int64_t number = numbers[i];
    auto reader = volume().OpenReader(ctx_, dir + "/" + PartName(number));
    if (!reader.ok() || (*reader)->info().etag != etags[i]) {
      return SendError(
          MakeError(Reason::kInvalidPart,
                    "part " + std::to_string(number) + " was not uploaded or its ETag differs"));
    }
    if (i + 1 < parts && (*reader)->info().size < kMinPartBytes) {
      return SendError(MakeError(Reason::kEntityTooSmall,
                                 "Your proposed upload is smaller than the minimum allowed "
                                 "size: every part but the last must be at least 5 MiB"));
    }
    sizes.push_back((*reader)->info().size);
    readers.push_back(std::move(reader).value());
  }

  WriteOptions opts;
  opts.create_parents = true;
  opts.etag = etag;
  for (const auto& [name, value] : upload->attributes) {
    if (!name.starts_with("upload.")) opts.attributes[name] = value;
  }
  opts.attributes[std::string(kAttrUploadId)] = upload_id;
  if (std::string layout = EncodePartSizes(sizes); layout.size() <= kMaxPartLayoutBytes) {
    opts.attributes[std::string(kAttrParts)] = std::move(layout);
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
  SendCompleted(*info);
}

void S3Frontend::Call::SendCompleted(const FileInfo& info) {
  XmlWriter xml;
  xml.Open("CompleteMultipartUploadResult", true);
  xml.Element("Location", "/" + request_.bucket + "/" + request_.key);
  xml.Element("Bucket", request_.bucket);
  xml.Element("Key", request_.key);
  xml.Element("ETag", QuoteEtag(info.etag));
  xml.Close("CompleteMultipartUploadResult");
  std::vector<net::HttpHeader> headers;
  if (auto bucket = StatBucket(request_.bucket);
      bucket.ok() &&
      VersioningLog::FromAttributes(bucket->attributes).Now() == Versioning::kEnabled) {
    headers.push_back({"x-amz-version-id", info.version_id});
  }
  SendXml(200, xml.Finish(), false, std::move(headers));
}

std::string EncodePartSizes(const std::vector<uint64_t>& sizes) {
  std::string out;
  for (size_t i = 0; i < sizes.size();) {
    size_t run = 1;
    while (i + run < sizes.size() && sizes[i + run] == sizes[i]) ++run;
    if (!out.empty()) out += ',';
    out += std::to_string(sizes[i]) + "*" + std::to_string(run);
    i += run;
  }
  return out;
}

std::optional<std::vector<uint64_t>> DecodePartSizes(std::string_view text) {
  std::vector<uint64_t> sizes;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view run = text.substr(0, comma);
    text = comma == std::string_view::npos ? "" : text.substr(comma + 1);
    size_t star = run.find('*');
    if (star == std::string_view::npos) return std::nullopt;
    uint64_t size = 0, count = 0;
    auto [e1, c1] = std::from_chars(run.data(), run.data() + star, size);
    auto [e2, c2] = std::from_chars(run.data() + star + 1, run.data() + run.size(), count);
    if (c1 != std::errc() || c2 != std::errc() || e1 != run.data() + star ||
        e2 != run.data() + run.size() || count == 0 || sizes.size() + count > kMaxParts) {
      return std::nullopt;
    }
    sizes.insert(sizes.end(), count, size);
  }
  return sizes;
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
  int64_t max_uploads = 1000;
  if (auto m = request_.Query("max-uploads")) {
    auto parsed = ParseIntParam("max-uploads", *m, 0, 1 << 30);
    if (!parsed.ok()) return SendStatus(parsed.status());
    max_uploads = std::min<int64_t>(*parsed, 1000);
  }
  // Pages start after (key-marker, upload-id-marker); a key marker alone skips that key.
  const std::string key_marker = request_.Query("key-marker").value_or("");
  const std::string id_marker = request_.Query("upload-id-marker").value_or("");
  std::erase_if(uploads, [&](const Upload& u) {
    if (key_marker.empty()) return false;
    return id_marker.empty() ? u.key <= key_marker
                             : std::tie(u.key, u.id) <= std::tie(key_marker, id_marker);
  });
  const bool truncated = static_cast<int64_t>(uploads.size()) > max_uploads;
  if (truncated) uploads.resize(max_uploads);
  XmlWriter xml;
  xml.Open("ListMultipartUploadsResult", true);
  xml.Element("Bucket", request_.bucket);
  xml.Element("KeyMarker", key_marker);
  xml.Element("UploadIdMarker", id_marker);
  if (truncated && !uploads.empty()) {
    xml.Element("NextKeyMarker", uploads.back().key);
    xml.Element("NextUploadIdMarker", uploads.back().id);
  }
  xml.Element("Prefix", prefix);
  xml.Element("MaxUploads", std::to_string(max_uploads));
  xml.Element("IsTruncated", truncated ? "true" : "false");
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
