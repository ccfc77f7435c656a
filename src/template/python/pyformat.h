// Python's text renderings that chat templates depend on byte for byte:
// float repr, str repr, json.dumps (as HF's tojson calls it), printf-style
// `%` formatting, str.format, and markupsafe's HTML escape.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "template/value.h"

namespace stet::tmpl {

std::string PyFloatRepr(double d);           // repr(float): 1.0, 1e+16, 1.5e-07, inf, nan
std::string PyStrRepr(std::string_view s);   // repr(str): 'a', "it's", '\n'
std::string HtmlEscape(std::string_view s);  // markupsafe.escape: & < > ' "

struct JsonOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // nullopt: one line
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};
// json.dumps(v, ...); TypeError for values JSON cannot hold (generators, undefined).
std::string JsonDumps(const Value& v, const JsonOptions& options);

// str % args. `escape_args`: the format string is Markup, so args are escaped.
std::string PercentFormat(std::string_view fmt, const Value& args, bool escape_args);
// str.format(*args, **kwargs).
std::string StrFormat(std::string_view fmt, const CallArgs& args, bool escape_args);
// format(v, spec), Python's format mini-language.
std::string FormatValue(const Value& v, std::string_view spec);

}  // namespace stet::tmpl
