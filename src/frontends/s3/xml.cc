#include "frontends/s3/xml.h"

#include <cctype>
#include <pugixml.hpp>

namespace weft::s3 {

XmlWriter::XmlWriter() : out_(R"(<?xml version="1.0" encoding="UTF-8"?>)") {}

void XmlWriter::Open(std::string_view name, bool with_namespace) {
  out_ += '<';
  out_ += name;
  if (with_namespace) {
    out_ += R"( xmlns=")";
    out_ += kS3Namespace;
    out_ += '"';
  }
  out_ += '>';
}

void XmlWriter::Close(std::string_view name) {
  out_ += "</";
  out_ += name;
  out_ += '>';
}

void XmlWriter::Element(std::string_view name, std::string_view text) {
  Open(name);
  out_ += XmlEscape(text);
  Close(name);
}

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      default: {
        auto u = static_cast<unsigned char>(c);
        // XML 1.0 allows only tab, LF and CR below 0x20; S3 keys may hold others, which
        // clients must request with encoding-type=url.
        if (u < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          out += "&#xFFFD;";
        } else {
          out += c;
        }
      }
    }
  }
  return out;
}

namespace {
const pugi::xml_node Node(const void* p) {
  return pugi::xml_node(static_cast<pugi::xml_node_struct*>(const_cast<void*>(p)));
}
std::string_view LocalName(const char* name) {
  std::string_view n(name);
  size_t colon = n.find(':');
  return colon == std::string_view::npos ? n : n.substr(colon + 1);
}
}  // namespace

std::string_view XmlElement::name() const {
  return LocalName(Node(node_).name());
}

std::string XmlElement::text() const {
  std::string_view t = Node(node_).child_value();
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  return std::string(t);
}

std::string XmlElement::raw_text() const {
  return Node(node_).child_value();
}

std::vector<XmlElement> XmlElement::Children(std::string_view name) const {
  std::vector<XmlElement> out;
  for (pugi::xml_node child : Node(node_).children()) {
    if (child.type() == pugi::node_element && LocalName(child.name()) == name) {
      out.emplace_back(child.internal_object());
    }
  }
  return out;
}

std::optional<XmlElement> XmlElement::Child(std::string_view name) const {
  for (pugi::xml_node child : Node(node_).children()) {
    if (child.type() == pugi::node_element && LocalName(child.name()) == name) {
      return XmlElement(child.internal_object());
    }
  }
  return std::nullopt;
}

struct XmlDocument::Impl {
  pugi::xml_document doc;
};

XmlDocument::XmlDocument() : impl_(std::make_unique<Impl>()) {}
XmlDocument::~XmlDocument() = default;

Result<std::unique_ptr<XmlDocument>> XmlDocument::Parse(std::string_view body,
                                                        std::string_view root) {
  if (body.size() > kMaxBytes) {
    return InvalidArgument(Reason::kMalformedXML, "the XML body is larger than 2 MiB");
  }
  std::unique_ptr<XmlDocument> doc(new XmlDocument());
  // No DOCTYPE or entity expansion: parse_default does not load external entities.
  // parse_ws_pcdata keeps text of only whitespace, which a key may be.
  pugi::xml_parse_result parsed = doc->impl_->doc.load_buffer(
      body.data(), body.size(), pugi::parse_default | pugi::parse_ws_pcdata);
  if (!parsed) {
    return InvalidArgument(Reason::kMalformedXML, parsed.description());
  }
  pugi::xml_node first = doc->impl_->doc.document_element();
  if (!first || LocalName(first.name()) != root) {
    return InvalidArgument(Reason::kMalformedXML,
                           "expected a <" + std::string(root) + "> document");
  }
  return doc;
}

XmlElement XmlDocument::root() const {
  return XmlElement(impl_->doc.document_element().internal_object());
}

}  // namespace weft::s3
