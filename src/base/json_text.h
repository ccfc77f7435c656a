// Scanning raw JSON text byte by byte: which bytes belong to string literals.
// The scanners that look at JSON before (or instead of) parsing it -- the body's
// nesting bound, a tool call's argument pieces, a JSON value inside prose -- share
// this one state machine, so they agree on where every string ends.
#pragma once

namespace stet {

class JsonStringTracker {
 public:
  // Feeds the next byte; true when it belongs to a string literal, its quotes
  // included (a backslash escapes the byte after it).
  bool InString(char c) {
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      return true;
    }
    in_string_ = c == '"';
    return in_string_;
  }

 private:
  bool in_string_ = false;
  bool escaped_ = false;
};

}  // namespace stet
