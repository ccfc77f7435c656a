// The character references HTML and XML escaping share, so the template engine's
// `escape` filter and the forensics reports (SVG/HTML) cannot drift apart on them.
#pragma once

namespace stet {

// The reference for a character markup gives meaning (& < > ' "), or nullptr for any other.
// `quote` is the one for '"': "&#34;" (Jinja's markupsafe) or "&quot;" (XML).
inline const char* MarkupReference(unsigned char c, const char* quote) {
  switch (c) {
    case '&':
      return "&amp;";
    case '<':
      return "&lt;";
    case '>':
      return "&gt;";
    case '\'':
      return "&#39;";
    case '"':
      return quote;
    default:
      return nullptr;
  }
}

}  // namespace stet
