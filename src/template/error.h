// The template engine's internal error: thrown inside src/template only and
// turned into a stet::Status at the public API (chat_template.cc); it never
// leaves the layer. Kinds mirror the Python exceptions Jinja2 would raise.
#pragma once

#include <string>

namespace stet::tmpl {

enum class ErrorKind {
  kSyntax,     // TemplateSyntaxError / TemplateAssertionError
  kUndefined,  // UndefinedError
  kType,       // TypeError
  kValue,      // ValueError, ZeroDivisionError, OverflowError
  kRuntime,    // TemplateRuntimeError (unknown filter at run time, bad assignment)
  kSecurity,   // SecurityError from the immutable sandbox
  kRaised,     // raise_exception(msg) from the template itself
  kLimit,      // a resource cap of stet's (TemplateLimits, nesting depth)
  kCancelled,  // the caller's cancel callback asked the render to stop
};

const char* ErrorKindName(ErrorKind kind);

struct TemplateError {
  ErrorKind kind;
  std::string message;
  int line = 0;    // 1-based; 0 until the innermost node that saw it fills it in
  int column = 0;  // 1-based byte column

  // The position of the node it passes through, unless a deeper one gave it one.
  void PlaceAt(int at_line, int at_column) {
    if (line != 0) return;
    line = at_line;
    column = at_column;
  }
};

[[noreturn]] inline void Throw(ErrorKind kind, std::string message) {
  throw TemplateError{kind, std::move(message)};
}

}  // namespace stet::tmpl
