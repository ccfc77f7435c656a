// Jinja2 3.1's builtin filters on scalars and strings, plus the dispatcher.
// `tojson` is HF transformers' override: json.dumps(x, ensure_ascii=False,
// indent=None, separators=None, sort_keys=False), without HTML escaping.
// Sequence filters (map, select, sort, ...) are in filters_seq.cc.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "template/budget.h"
#include "template/parser.h"
#include "template/python/builtins.h"
#include "template/python/pyformat.h"
#include "template/python/unicode.h"

namespace stet::tmpl {
namespace {

constexpr std::string_view kFilterNames[] = {
    "abs",       "attr",       "batch",       "capitalize", "center",  "count",
    "d",         "default",    "dictsort",    "e",          "escape",  "filesizeformat",
    "first",     "float",      "forceescape", "format",     "groupby", "indent",
    "int",       "join",       "last",        "length",     "list",    "lower",
    "items",     "map",        "min",         "max",        "pprint",  "random",
    "reject",    "rejectattr", "replace",     "reverse",    "round",   "safe",
    "select",    "selectattr", "slice",       "sort",       "string",  "striptags",
    "sum",       "title",      "trim",        "truncate",   "unique",  "upper",
    "urlencode", "urlize",     "wordcount",   "wordwrap",   "xmlattr", "tojson"};

// soft_str: str(v), keeping Markup as Markup.
Value SoftStr(const Value& v) {
  if (v.is_string()) return v;
  return Value::Str(ToStr(v));
}

std::string HtmlUnescape(std::string_view s) {
  ChargeScan(s.size());
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    // Only a ';' within 10 bytes ends an entity: look no further (a search
    // to the end from every '&' would be quadratic).
    size_t near = s.substr(i, 11).find(';');
    size_t semi = near == std::string_view::npos ? near : i + near;
    if (semi == std::string_view::npos) {
      out += s[i];
      continue;
    }
    std::string_view ent = s.substr(i + 1, semi - i - 1);
    std::string rep;
    if (ent == "amp")
      rep = "&";
    else if (ent == "lt")
      rep = "<";
    else if (ent == "gt")
      rep = ">";
    else if (ent == "quot")
      rep = "\"";
    else if (ent == "apos")
      rep = "'";
    else if (ent == "nbsp")
      AppendUtf8(rep, 0xA0);
    else if (ent.size() > 1 && ent[0] == '#') {
      bool hex = ent[1] == 'x' || ent[1] == 'X';
      std::string digits(ent.substr(hex ? 2 : 1));
      char* end = nullptr;
      unsigned long cp = std::strtoul(digits.c_str(), &end, hex ? 16 : 10);
      if (!digits.empty() && end && *end == 0 && cp <= 0x10FFFF)
        AppendUtf8(rep, static_cast<char32_t>(cp));
    }
    if (rep.empty()) {
      out += s[i];
      continue;
    }
    out += rep;
    i = semi;
  }
  return out;
}

// The first occurrence of `what` at or after `from`, remembered between calls
// with growing `from`, so scanning a text for each of many openers stays
// linear (a fresh search from each unclosed "<!--" would be quadratic).
class NextOccurrence {
 public:
  NextOccurrence(const std::string& s, std::string_view what) : s_(s), what_(what) {}
  size_t From(size_t from) {
    if (!valid_ || (at_ != std::string::npos && at_ < from)) {
      at_ = FindBytes(s_, what_, from);
      valid_ = true;
    }
    return at_;
  }

 private:
  const std::string& s_;
  std::string_view what_;
  size_t at_ = 0;
  bool valid_ = false;
};

std::string StripTags(const std::string& s) {
  ChargeScan(4 * s.size());  // a comparison and an append per byte
  std::string no_tags;
  NextOccurrence comment_end(s, "-->"), tag_end(s, ">");
  size_t i = 0;
  while (i < s.size()) {
    if (s.compare(i, 4, "<!--") == 0) {
      size_t end = comment_end.From(i + 4);
      if (end != std::string::npos) {
        i = end + 3;
        continue;
      }
    }
    if (s[i] == '<') {
      size_t end = tag_end.From(i + 1);
      if (end != std::string::npos) {
        i = end + 1;
        continue;
      }
    }
    no_tags += s[i++];
  }
  std::string joined;
  for (const std::string& w : PySplit(no_tags, nullptr, -1, false)) {
    if (!joined.empty()) joined += ' ';
    joined += w;
  }
  return HtmlUnescape(joined);
}

// Jinja's do_title: capitalise each piece after a run of [-\s({\[<].
std::string JinjaTitle(const std::string& s) {
  std::string out;
  bool at_start = true;
  for (char32_t c : DecodeUtf8(s)) {
    bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || PyIsSpace(c);
    if (sep) {
      AppendUtf8(out, c);
      at_start = true;
    } else if (at_start) {
      if (c == 0xDF)
        out += "SS";
      else
        AppendUtf8(out, PyUpper(c));
      at_start = false;
    } else {
      AppendUtf8(out, PyLower(c));
    }
  }
  return out;
}

Value ToJsonFilter(const Value& input, CallArgs& args) {
  Args a(args, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonOptions o;
  o.ensure_ascii = a.has(0) && Truthy(a.get(0));
  const Value& indent = a.get(1);
  if (indent.is_int() || indent.is_bool()) {
    o.indent =
        std::string(static_cast<size_t>(std::clamp<int64_t>(indent.int_value(), 0, 1000)), ' ');
  } else if (indent.is_string()) {
    o.indent = indent.str();
  } else if (!indent.is_none() && !indent.is_undefined()) {
    Throw(ErrorKind::kType, "tojson: indent must be an int or a string");
  }
  if (o.indent) o.item_separator = ",";
  const Value& seps = a.get(2);
  if (seps.is_list() && !seps.is_iterator()) {
    const auto& items = seps.list().items;
    if (items.size() != 2 || !items[0].is_string() || !items[1].is_string()) {
      Throw(ErrorKind::kValue, "tojson: separators must be a pair of strings");
    }
    o.item_separator = items[0].str();
    o.key_separator = items[1].str();
  } else if (!seps.is_none() && !seps.is_undefined()) {
    Throw(ErrorKind::kType, "tojson: separators must be a pair of strings");
  }
  o.sort_keys = a.has(3) && Truthy(a.get(3));
  return Value::Str(JsonDumps(input, o));
}

Value IntFilter(const Value& input, CallArgs& args) {
  Args a(args, "int", {"default", "base"});
  Value dflt = a.get_or(0, Value::Int(0));
  int64_t base = a.get_int(1, 10, "base");
  if (input.is_undefined()) FailUndefined(input);  // int(Undefined) raises
  if (input.is_int() || input.is_bool()) return Value::Int(input.int_value());
  auto from_double = [&](double d) {
    if (std::isnan(d) || std::isinf(d) || std::fabs(d) >= 9.2e18) return dflt;
    return Value::Int(static_cast<int64_t>(std::trunc(d)));
  };
  if (input.is_float()) return from_double(input.float_value());
  if (!input.is_string()) return dflt;
  ChargeScan(input.str().size());
  std::string s = PyStrip(input.str(), nullptr, true, true);
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  if (!s.empty()) {
    char* end = nullptr;
    const char* p = s.c_str();
    int b = static_cast<int>(base);
    if (b == 16 || b == 8 || b == 2) {
      size_t off = (s[0] == '-' || s[0] == '+') ? 1 : 0;
      if (s.size() > off + 1 && s[off] == '0' &&
          (s[off + 1] | 0x20) == (b == 16  ? 'x'
                                  : b == 8 ? 'o'
                                           : 'b')) {
        s.erase(off, 2);
        p = s.c_str();
      }
    }
    if (b >= 2 && b <= 36) {
      errno = 0;
      long long v = std::strtoll(p, &end, b);
      if (end && *end == 0 && errno == 0) return Value::Int(v);
    }
    end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (end && *end == 0 && s.find_first_of("xXpP") == std::string::npos) return from_double(d);
  }
  return dflt;
}

Value FloatFilter(const Value& input, CallArgs& args) {
  Args a(args, "float", {"default"});
  if (input.is_undefined()) FailUndefined(input);  // float(Undefined) raises
  if (input.is_number()) return Value::Float(input.float_value());
  if (input.is_string()) {
    ChargeScan(input.str().size());
    std::string s = PyStrip(input.str(), nullptr, true, true);
    s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end && *end == 0 && s.find_first_of("xXpP") == std::string::npos)
      return Value::Float(d);
  }
  return a.get_or(0, Value::Float(0.0));
}

Value RoundFilter(const Value& input, CallArgs& args) {
  Args a(args, "round", {"precision", "method"});
  int64_t precision = a.get_int(0, 0, "precision");
  std::string method = a.get_str(1).value_or("common");
  if (method != "common" && method != "ceil" && method != "floor") {
    Throw(ErrorKind::kValue, "method must be common, ceil or floor");
  }
  if (!input.is_number())
    Throw(ErrorKind::kType, "type " + TypeName(input) + " doesn't define __round__ method");
  if (method == "common" && !input.is_float()) {
    int64_t v = input.int_value();
    if (precision >= 0) return Value::Int(v);
    if (precision < -18) return Value::Int(0);
    int64_t unit = 1;
    for (int64_t k = 0; k < -precision; ++k) unit *= 10;
    // Python rounds integers half to even.
    int64_t q = v / unit, r = v % unit;
    if (r < 0) r += unit, q -= 1;
    if (2 * r > unit || (2 * r == unit && (q & 1))) q += 1;
    int64_t out;
    if (__builtin_mul_overflow(q, unit, &out))
      Throw(ErrorKind::kValue, "integer result does not fit in 64 bits");
    return Value::Int(out);
  }
  double x = input.float_value();
  double scale = std::pow(10.0, static_cast<double>(precision));
  if (method == "ceil") return Value::Float(std::ceil(x * scale) / scale);
  if (method == "floor") return Value::Float(std::floor(x * scale) / scale);
  if (std::isnan(x) || std::isinf(x)) return Value::Float(x);
  // Python's round(x, n): correctly rounded, ties to even, via the decimal string.
  char buf[512];
  int p = static_cast<int>(std::clamp<int64_t>(precision, -308, 300));
  if (p >= 0) {
    std::snprintf(buf, sizeof buf, "%.*f", p, x);
    return Value::Float(std::strtod(buf, nullptr));
  }
  double r = std::nearbyint(x / std::pow(10.0, -p)) * std::pow(10.0, -p);
  return Value::Float(r);
}

Value IndentFilter(Interpreter& in, const Value& input, CallArgs& args) {
  Args a(args, "indent", {"width", "first", "blank"});
  std::string indention;
  const Value& w = a.get(0);
  if (w.is_string()) {
    indention = w.str();
  } else {
    int64_t width = a.get_int(0, 4, "width");
    in.CheckSize(static_cast<size_t>(std::max<int64_t>(width, 0)));
    indention = std::string(static_cast<size_t>(std::max<int64_t>(width, 0)), ' ');
  }
  bool first = Truthy(a.get(1)), blank = Truthy(a.get(2));
  if (input.is_undefined()) FailUndefined(input);
  if (!input.is_string()) {
    // Python's `s += "\n"` fails (or, on a list, succeeds and splitlines fails).
    if (input.is_list() && input.list().kind == SeqKind::kList) {
      Throw(ErrorKind::kType, "'list' object has no attribute 'splitlines'");
    }
    Throw(ErrorKind::kType,
          "unsupported operand type(s) for +=: '" + TypeName(input) + "' and 'str'");
  }
  Value sv = SoftStr(input);
  std::string s = sv.str() + "\n";
  std::vector<std::string> lines = PySplitLines(s, false);
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      in.CheckSize(rv.size() + 1 + indention.size() + lines[i].size());
      if (i) rv += "\n" + indention;
      rv += lines[i];
    }
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      in.CheckSize(rv.size() + 1 + indention.size() + lines[i].size());
      rv += "\n";
      if (!lines[i].empty()) rv += indention;
      rv += lines[i];
    }
  }
  in.CheckSize(rv.size() + indention.size());
  if (first) rv = indention + rv;
  return MakeStr(in, std::move(rv), sv.is_markup());
}

Value TruncateFilter(const Value& input, CallArgs& args) {
  Args a(args, "truncate", {"length", "killwords", "end", "leeway"});
  int64_t length = a.get_int(0, 255, "length");
  bool killwords = Truthy(a.get(1));
  std::string end = a.get_str(2).value_or("...");
  int64_t leeway = a.has(3) && !a.get(3).is_none() ? ToInt64(a.get(3), "leeway") : 5;
  std::vector<char32_t> end_cps = DecodeUtf8(end);
  if (!input.is_string()) {
    // Python measures len(s) first: short sequences come back unchanged.
    if (Length(input) <= length + leeway) return input;
    Throw(ErrorKind::kType, "truncate: expected a string, got '" + TypeName(input) + "'");
  }
  if (length < static_cast<int64_t>(end_cps.size()))
    Throw(ErrorKind::kValue, "expected length >= len(end)");
  if (leeway < 0) Throw(ErrorKind::kValue, "expected leeway >= 0");
  std::vector<char32_t> cps = DecodeUtf8(ToStr(input));
  if (static_cast<int64_t>(cps.size()) <= length + leeway) return Value::Str(ToStr(input));
  std::string head = EncodeUtf8(cps, 0, static_cast<size_t>(length) - end_cps.size());
  if (killwords) return Value::Str(head + end);
  size_t sp = head.rfind(' ');
  return Value::Str((sp == std::string::npos ? head : head.substr(0, sp)) + end);
}

Value FileSizeFilter(const Value& input, CallArgs& args) {
  Args a(args, "filesizeformat", {"binary"});
  bool binary = Truthy(a.get(0));
  double bytes =
      input.is_number() ? input.float_value() : std::strtod(ToStr(input).c_str(), nullptr);
  double base = binary ? 1024 : 1000;
  static const char* kBin[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  static const char* kDec[] = {"kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
  char buf[64];
  if (bytes == 1) return Value::Str("1 Byte");
  if (bytes < base) {
    std::snprintf(buf, sizeof buf, "%lld Bytes", static_cast<long long>(bytes));
    return Value::Str(buf);
  }
  int i = 0;
  double unit = base * base;
  while (i < 7 && bytes >= unit) unit *= base, ++i;
  std::snprintf(buf, sizeof buf, "%.1f %s", base * bytes / unit, binary ? kBin[i] : kDec[i]);
  return Value::Str(buf);
}

Value UrlEncode(const Value& input) {
  auto quote = [&input](const std::string& s) {
    ChargeScan(s.size());
    bool for_qs = input.is_dict();
    std::string out;
    for (unsigned char c : s) {
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '.' || c == '-' || c == '~' || (c == '/' && !for_qs)) {
        out += static_cast<char>(c);
      } else if (c == ' ' && for_qs) {
        out += '+';
      } else {
        static const char kHex[] = "0123456789ABCDEF";
        out += '%';
        out += kHex[c >> 4];
        out += kHex[c & 0xF];
        ReserveBytes(out.size());
      }
    }
    return out;
  };
  if (input.is_dict()) {
    std::string out;
    for (const auto& [k, v] : input.dict().entries) {
      if (!out.empty()) out += '&';
      out += quote(ToStr(k)) + "=" + quote(ToStr(v));
      ReserveBytes(out.size());
    }
    return Value::Str(out);
  }
  return Value::Str(quote(ToStr(input)));
}

}  // namespace

bool IsKnownFilter(std::string_view name) {
  return std::find(std::begin(kFilterNames), std::end(kFilterNames), name) !=
         std::end(kFilterNames);
}

Value ApplyFilter(Interpreter& in, std::string_view name, const Value& input, CallArgs& args) {
  if (auto v = ApplySeqFilter(in, name, input, args)) return *v;
  if (name == "tojson") return ToJsonFilter(input, args);
  if (name == "default" || name == "d") {
    Args a(args, name, {"default_value", "boolean"});
    if (input.is_undefined() || (Truthy(a.get(1)) && !Truthy(input)))
      return a.get_or(0, Value::Str(""));
    return input;
  }
  if (name == "string") {
    Args a(args, name, {});
    return SoftStr(input);
  }
  if (name == "safe") {
    Args a(args, name, {});
    return Value::Str(ToStr(input), true);
  }
  if (name == "escape" || name == "e" || name == "forceescape") {
    Args a(args, name, {});
    if (name == "forceescape" || !input.is_markup())
      return MakeStr(in, HtmlEscape(ToStr(input)), true);
    return input;
  }
  if (name == "upper" || name == "lower" || name == "capitalize") {
    Args a(args, name, {});
    Value s = SoftStr(input);
    std::string r = name == "upper"   ? PyStrUpper(s.str())
                    : name == "lower" ? PyStrLower(s.str())
                                      : PyStrCapitalize(s.str());
    return MakeStr(in, std::move(r), s.is_markup());
  }
  if (name == "title") {
    Args a(args, name, {});
    return MakeStr(in, JinjaTitle(ToStr(input)));
  }
  if (name == "trim") {
    Args a(args, name, {"chars"});
    Value s = SoftStr(input);
    std::optional<std::string> chars = a.get_str(0);
    return Value::Str(PyStrip(s.str(), chars ? &*chars : nullptr, true, true), s.is_markup());
  }
  if (name == "replace") {
    Args a(args, name, {"old", "new", "count"});
    CallArgs m;
    m.positional = {Value::Str(ToStr(a.get(0))), Value::Str(ToStr(a.get(1)))};
    if (a.has(2) && !a.get(2).is_none()) m.positional.push_back(a.get(2));
    return CallMethod(in, Value::Str(ToStr(input)), "replace", m);
  }
  if (name == "center") {
    Args a(args, name, {"width"});
    CallArgs m;
    m.positional = {a.get_or(0, Value::Int(80))};
    return CallMethod(in, SoftStr(input), "center", m);
  }
  if (name == "format") {
    if (!args.positional.empty() && !args.keyword.empty()) {
      Throw(ErrorKind::kRuntime, "can't handle positional and keyword arguments at the same time");
    }
    Value fmt_args;
    if (!args.keyword.empty()) {
      auto d = std::make_shared<DictData>();
      for (auto& [k, v] : args.keyword) d->Set(Value::Str(k), v);
      fmt_args = Value::Dict(std::move(d));
    } else {
      fmt_args = Value::Tuple(args.positional);
    }
    Value s = SoftStr(input);
    return MakeStr(in, PercentFormat(s.str(), fmt_args, s.is_markup()), s.is_markup());
  }
  if (name == "striptags") {
    Args a(args, name, {});
    return Value::Str(StripTags(ToStr(input)));
  }
  if (name == "wordcount") {
    Args a(args, name, {});
    int64_t words = 0;
    bool in_word = false;
    for (char32_t c : DecodeUtf8(ToStr(input))) {
      bool w = c == '_' || PyIsAlnum(c);
      if (w && !in_word) ++words;
      in_word = w;
    }
    return Value::Int(words);
  }
  if (name == "indent") return IndentFilter(in, input, args);
  if (name == "truncate") return TruncateFilter(input, args);
  if (name == "int") return IntFilter(input, args);
  if (name == "float") return FloatFilter(input, args);
  if (name == "round") return RoundFilter(input, args);
  if (name == "abs") {
    Args a(args, name, {});
    if (input.is_float()) return Value::Float(std::fabs(input.float_value()));
    if (input.is_int() || input.is_bool()) {
      if (input.int_value() == INT64_MIN)
        Throw(ErrorKind::kValue, "integer result does not fit in 64 bits");
      return Value::Int(std::llabs(input.int_value()));
    }
    if (input.is_undefined()) FailUndefined(input);
    Throw(ErrorKind::kType, "bad operand type for abs(): '" + TypeName(input) + "'");
  }
  if (name == "attr") {
    Args a(args, name, {"name"});
    std::string attr = ToStr(a.get(0));
    if (input.is_undefined()) FailUndefined(input);
    if (input.is_object()) {
      if (auto v = input.object()->GetAttr(attr)) return *v;
    } else if (auto v = BuiltinAttr(input, attr)) {
      return *v;
    }
    return Value::Undefined("'" + ObjectTypeRepr(input) + "' has no attribute '" + attr + "'");
  }
  if (name == "pprint") {
    Args a(args, name, {});
    return MakeStr(in, Repr(input));
  }
  if (name == "filesizeformat") return FileSizeFilter(input, args);
  if (name == "urlencode") return UrlEncode(input);
  if (IsKnownFilter(name)) {
    Throw(ErrorKind::kRuntime,
          "filter '" + std::string(name) + "' is not supported by stet's template engine");
  }
  Throw(ErrorKind::kRuntime, "No filter named '" + std::string(name) + "' found.");
}

}  // namespace stet::tmpl
