// XmlWriter builds the small XML documents S3 answers with; XmlDocument parses request bodies
// (DeleteObjects, CompleteMultipartUpload, PutBucketVersioning) with pugixml, with a size cap.
// Value types, one thread at a time.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace weft::s3 {

inline constexpr std::string_view kS3Namespace = "http://s3.amazonaws.com/doc/2006-03-01/";

class XmlWriter {
 public:
  XmlWriter();
  // Opens <name> (with the S3 namespace when `with_namespace`).
  void Open(std::string_view name, bool with_namespace = false);
  void Close(std::string_view name);
  // <name>escaped text</name>
  void Element(std::string_view name, std::string_view text);
  std::string Finish() { return std::move(out_); }

 private:
  std::string out_;
};

// Escapes &, < and > for element text (Weft writes no attributes) and replaces characters
// XML 1.0 cannot carry.
std::string XmlEscape(std::string_view text);

// A parsed request body. Element names are matched without namespace prefixes.
class XmlElement {
 public:
  explicit XmlElement(const void* node) : node_(node) {}
  std::string_view name() const;
  std::string text() const;  // trimmed child text
  // The text exactly as sent (entities decoded): S3 keys are bytes, and " " or "a " are keys.
  std::string raw_text() const;
  std::vector<XmlElement> Children(std::string_view name) const;
  // The first child named `name`, if any.
  std::optional<XmlElement> Child(std::string_view name) const;

 private:
  const void* node_;  // pugi::xml_node's internal pointer
};

class XmlDocument {
 public:
  static constexpr size_t kMaxBytes = 2 << 20;
  // MalformedXML unless `body` is well-formed XML whose root element is `root`.
  static Result<std::unique_ptr<XmlDocument>> Parse(std::string_view body, std::string_view root);
  ~XmlDocument();
  XmlElement root() const;

 private:
  XmlDocument();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::s3
