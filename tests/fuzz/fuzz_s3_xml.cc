// Fuzzes XmlDocument::Parse (src/frontends/s3/xml.h) for every request body S3 parses, walking
// the result the way the handlers do, and checks that XmlEscape makes any text, including the
// input itself, safe to embed: the document S3 answers with must always parse back.
//
// Input: an XML body, tried against each root in turn.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "frontends/s3/xml.h"
#include "fuzz_check.h"

namespace weft::s3 {
namespace {

// Touches every field a handler reads, as DeleteObjects, CompleteMultipartUpload,
// PutBucketVersioning and CreateBucket do (s3_frontend.cc, multipart.cc).
size_t Walk(const XmlElement& root) {
  size_t touched = root.name().size() + root.text().size();
  for (std::string_view field : {"Quiet", "Status", "MfaDelete", "LocationConstraint"}) {
    if (auto child = root.Child(field)) touched += child->text().size();
  }
  for (std::string_view list : {"Object", "Part"}) {
    for (const XmlElement& item : root.Children(list)) {
      for (std::string_view field : {"Key", "VersionId", "PartNumber", "ETag", "ChecksumCRC32"}) {
        if (auto child = item.Child(field)) touched += child->name().size() + child->text().size();
      }
    }
  }
  return touched;
}

// The text XmlElement::text() returns for an element whose content was XmlEscape(s): pugixml
// normalises line ends, XmlEscape replaces control characters, and text() trims whitespace.
std::string ExpectedText(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\r') {
      out += '\n';
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else if (c < 0x20 && c != '\t' && c != '\n') {
      out += "\xEF\xBF\xBD";  // U+FFFD
    } else {
      out += static_cast<char>(c);
    }
  }
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n'; };
  size_t begin = 0, end = out.size();
  while (begin < end && space(out[begin])) ++begin;
  while (end > begin && space(out[end - 1])) --end;
  return out.substr(begin, end - begin);
}

void FuzzOne(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  for (std::string_view root : {"Delete", "CompleteMultipartUpload", "VersioningConfiguration",
                                "CreateBucketConfiguration"}) {
    auto doc = XmlDocument::Parse(input, root);
    if (!doc.ok()) {
      FUZZ_CHECK(doc.status().reason() == Reason::kMalformedXML,
                 "a bad body is not MalformedXML: %s", doc.status().ToString().c_str());
      continue;
    }
    FUZZ_CHECK((*doc)->root().name() == root, "parsed with the wrong root");
    (void)Walk((*doc)->root());
  }

  // What S3 sends back for a key that is the input (ListObjects, DeleteObjects results).
  XmlWriter writer;
  writer.Open("Delete", /*with_namespace=*/true);
  writer.Open("Object");
  writer.Element("Key", input);
  writer.Close("Object");
  writer.Close("Delete");
  const std::string xml = writer.Finish();
  if (xml.size() > XmlDocument::kMaxBytes) return;
  auto doc = XmlDocument::Parse(xml, "Delete");
  FUZZ_CHECK(doc.ok(), "an escaped key does not parse: %s", doc.status().ToString().c_str());
  auto object = (*doc)->root().Child("Object");
  FUZZ_CHECK(object && object->Child("Key"), "the escaped document lost its Key element");
  FUZZ_CHECK(object->Child("Key")->text() == ExpectedText(input),
             "an escaped key does not read back as itself");
}

}  // namespace
}  // namespace weft::s3

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  weft::s3::FuzzOne(data, size);
  return 0;
}
