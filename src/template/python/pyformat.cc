// Python text renderings. Float digits come from std::to_chars (shortest
// round-trip, like Python's repr) and are laid out with CPython's rules;
// printf conversions of numbers go through snprintf, which glibc rounds
// correctly, as CPython does. Each rendering checks its output against the
// render budget as it grows (escapes, padding and JSON indents multiply it).
#include "template/python/pyformat.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "base/markup.h"
#include "template/budget.h"
#include "template/python/unicode.h"

namespace stet::tmpl {
namespace {

constexpr int kMaxJsonDepth = 200;
// How often (in input bytes) a growing escaped string is checked against the budget.
constexpr size_t kCheckEvery = 4096;

void AppendHex(std::string& out, char prefix, uint32_t v, int digits) {
  static const char* kHex = "0123456789abcdef";
  out += '\\';
  out += prefix;
  for (int i = digits - 1; i >= 0; --i) out += kHex[(v >> (4 * i)) & 0xF];
}

void JsonString(std::string_view s, bool ensure_ascii, std::string& out) {
  ChargeScan(s.size());
  out += '"';
  auto escape_ascii = [&out](unsigned char c) {
    switch (c) {
      case '"':
        out += "\\\"";
        return;
      case '\\':
        out += "\\\\";
        return;
      case '\n':
        out += "\\n";
        return;
      case '\r':
        out += "\\r";
        return;
      case '\t':
        out += "\\t";
        return;
      case '\b':
        out += "\\b";
        return;
      case '\f':
        out += "\\f";
        return;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7F) {
      AppendHex(out, 'u', c, 4);
    } else {
      out += static_cast<char>(c);
    }
  };
  if (!ensure_ascii) {
    for (size_t i = 0; i < s.size(); ++i) {
      if (i % kCheckEvery == 0) ReserveBytes(out.size());
      char ch = s[i];
      unsigned char c = static_cast<unsigned char>(ch);
      if (c == 0x7F) {
        out += ch;  // only ensure_ascii escapes DEL
      } else if (c < 0x80) {
        escape_ascii(c);
      } else {
        out += ch;
      }
    }
  } else {
    std::vector<char32_t> cps = DecodeUtf8(s);
    for (size_t i = 0; i < cps.size(); ++i) {
      if (i % kCheckEvery == 0) ReserveBytes(out.size());
      char32_t c = cps[i];
      if (c < 0x80) {
        escape_ascii(static_cast<unsigned char>(c));
      } else if (c < 0x10000) {
        AppendHex(out, 'u', c, 4);
      } else {
        uint32_t v = c - 0x10000;
        AppendHex(out, 'u', 0xD800 + (v >> 10), 4);
        AppendHex(out, 'u', 0xDC00 + (v & 0x3FF), 4);
      }
    }
  }
  out += '"';
}

[[noreturn]] void NotSerializable(const Value& v) {
  Throw(ErrorKind::kType, "Object of type " + TypeName(v) + " is not JSON serializable");
}

std::string JsonKey(const Value& k) {
  switch (k.kind()) {
    case Kind::kString:
      return k.str();
    case Kind::kBool:
      return k.bool_value() ? "true" : "false";
    case Kind::kNone:
      return "null";
    case Kind::kInt:
      return std::to_string(k.int_value());
    case Kind::kFloat: {
      double d = k.float_value();
      if (std::isnan(d)) return "NaN";
      if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
      return PyFloatRepr(d);
    }
    default:
      Throw(ErrorKind::kType, "keys must be str, int, float, bool or None, not " + TypeName(k));
  }
}

void JsonInto(const Value& v, const JsonOptions& o, int level, std::string& out) {
  if (level > kMaxJsonDepth)
    Throw(ErrorKind::kLimit, "tojson: value nested deeper than 200 levels");
  ChargeSteps(1);
  switch (v.kind()) {
    case Kind::kNone:
      out += "null";
      return;
    case Kind::kBool:
      out += v.bool_value() ? "true" : "false";
      return;
    case Kind::kInt:
      out += std::to_string(v.int_value());
      return;
    case Kind::kFloat: {
      double d = v.float_value();
      if (std::isnan(d))
        out += "NaN";
      else if (std::isinf(d))
        out += d > 0 ? "Infinity" : "-Infinity";
      else
        out += PyFloatRepr(d);
      return;
    }
    case Kind::kString:
      JsonString(v.str(), o.ensure_ascii, out);
      return;
    default:
      break;
  }
  bool is_list = v.is_list();
  if (is_list && (v.list().kind == SeqKind::kIterator || v.list().kind == SeqKind::kView))
    NotSerializable(v);
  if (!is_list && !v.is_dict()) NotSerializable(v);
  size_t n = is_list ? v.list().items.size() : v.dict().entries.size();
  char open = is_list ? '[' : '{', close = is_list ? ']' : '}';
  if (n == 0) {
    out += open;
    out += close;
    return;
  }
  std::string newline_indent;
  std::string separator = o.item_separator;
  if (o.indent) {
    // An indent string repeated `level` times per line: check before building it.
    ReserveBytes(out.size() + (level + 1) * o.indent->size());
    newline_indent = "\n";
    for (int i = 0; i <= level; ++i) newline_indent += *o.indent;
    separator += newline_indent;
  }
  out += open;
  out += newline_indent;
  if (is_list) {
    const auto& items = v.list().items;
    for (size_t i = 0; i < n; ++i) {
      ReserveBytes(out.size() + separator.size());
      ChargeCopy(separator.size());
      if (i) out += separator;
      JsonInto(items[i], o, level + 1, out);
    }
  } else {
    std::vector<const std::pair<Value, Value>*> entries;
    for (const auto& e : v.dict().entries) entries.push_back(&e);
    if (o.sort_keys) {
      std::stable_sort(entries.begin(), entries.end(),
                       [](const auto* a, const auto* b) { return LessThan(a->first, b->first); });
    }
    for (size_t i = 0; i < n; ++i) {
      ReserveBytes(out.size() + separator.size() + o.key_separator.size());
      ChargeCopy(separator.size() + o.key_separator.size());
      if (i) out += separator;
      JsonString(JsonKey(entries[i]->first), o.ensure_ascii, out);
      out += o.key_separator;
      JsonInto(entries[i]->second, o, level + 1, out);
    }
  }
  if (o.indent) {
    ReserveBytes(out.size() + 1 + level * o.indent->size());
    out += '\n';
    for (int i = 0; i < level; ++i) out += *o.indent;
  }
  out += close;
}

// ---- format mini-language -------------------------------------------------

struct Spec {
  char fill = ' ';
  std::string fill_utf8 = " ";
  char align = 0;  // < > ^ =
  char sign = '-';
  bool alt = false;
  bool zero = false;
  int width = -1;
  char grouping = 0;
  int precision = -1;
  char type = 0;
};

int ParseInt(std::string_view s, size_t& i) {
  int v = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    if (v > 100000) Throw(ErrorKind::kValue, "Too many decimal digits in format string");
    v = v * 10 + (s[i++] - '0');
  }
  return v;
}

Spec ParseSpec(std::string_view s) {
  Spec sp;
  size_t i = 0;
  // [[fill]align]: the fill may be a multi-byte character.
  std::vector<char32_t> head = DecodeUtf8(s.substr(0, std::min<size_t>(s.size(), 8)));
  auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (head.size() >= 2 && is_align(head[1])) {
    sp.fill_utf8.clear();
    AppendUtf8(sp.fill_utf8, head[0]);
    sp.align = static_cast<char>(head[1]);
    i = sp.fill_utf8.size() + 1;
  } else if (!head.empty() && is_align(head[0])) {
    sp.align = static_cast<char>(head[0]);
    i = 1;
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) sp.sign = s[i++];
  if (i < s.size() && s[i] == '#') sp.alt = true, ++i;
  if (i < s.size() && s[i] == '0') {
    sp.zero = true;
    if (!sp.align) sp.align = '=', sp.fill_utf8 = "0";
    ++i;
  }
  if (i < s.size() && s[i] >= '0' && s[i] <= '9') sp.width = ParseInt(s, i);
  if (i < s.size() && (s[i] == ',' || s[i] == '_')) sp.grouping = s[i++];
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (i >= s.size() || s[i] < '0' || s[i] > '9')
      Throw(ErrorKind::kValue, "Format specifier missing precision");
    sp.precision = ParseInt(s, i);
  }
  if (i < s.size()) sp.type = s[i++];
  if (i != s.size()) Throw(ErrorKind::kValue, "Invalid format specifier '" + std::string(s) + "'");
  return sp;
}

std::string Pad(std::string body, const Spec& sp, char default_align, size_t sign_len = 0) {
  if (sp.width < 0) return body;
  size_t len = CodepointCount(body);
  if (len >= static_cast<size_t>(sp.width)) return body;
  size_t pad = sp.width - len;
  ReserveBytes(body.size() + pad * sp.fill_utf8.size());
  char align = sp.align ? sp.align : default_align;
  auto fill = [&sp](size_t n) {
    if (sp.fill_utf8.size() == 1) return std::string(n, sp.fill_utf8[0]);
    std::string f;
    f.reserve(n * sp.fill_utf8.size());
    for (size_t k = 0; k < n; ++k) f += sp.fill_utf8;
    return f;
  };
  switch (align) {
    case '<':
      return body + fill(pad);
    case '^':
      return fill(pad / 2) + body + fill(pad - pad / 2);
    case '=':
      return body.substr(0, sign_len) + fill(pad) + body.substr(sign_len);
    default:
      return fill(pad) + body;
  }
}

std::string Group(const std::string& digits, char sep) {
  if (!sep) return digits;
  std::string out;
  int n = static_cast<int>(digits.size());
  for (int i = 0; i < n; ++i) {
    if (i && (n - i) % 3 == 0) out += sep;
    out += digits[i];
  }
  return out;
}

std::string FormatFloat(double d, const Spec& sp) {
  char type = sp.type ? sp.type : 'g';
  int prec = sp.precision < 0 ? 6 : sp.precision;
  std::string body;
  bool neg = std::signbit(d) && !std::isnan(d);
  double a = std::fabs(d);
  if (!sp.type && sp.precision < 0) {
    body = PyFloatRepr(a);
  } else if (std::isinf(a) || std::isnan(a)) {
    body = std::isnan(a) ? "nan" : "inf";
    if (type == 'E' || type == 'F' || type == 'G') body = std::isnan(a) ? "NAN" : "INF";
  } else {
    double x = a;
    std::string suffix;
    if (type == '%') {
      x *= 100;
      type = 'f';
      suffix = "%";
    }
    if (type == 'n') type = 'g';
    char fmt[16];
    std::snprintf(fmt, sizeof fmt, "%%%s.%d%c", sp.alt ? "#" : "", prec, type);
    char buf[512];
    int n = std::snprintf(buf, sizeof buf, fmt, x);
    body.assign(buf, std::max(0, std::min(n, static_cast<int>(sizeof buf) - 1)));
    if (!sp.type && body.find_first_of(".e") == std::string::npos) body += ".0";
    body += suffix;
  }
  if (sp.grouping) {
    size_t end = body.find_first_not_of("0123456789");
    if (end == std::string::npos) end = body.size();
    body = Group(body.substr(0, end), sp.grouping) + body.substr(end);
  }
  std::string sign = neg ? "-" : (sp.sign == '+' ? "+" : (sp.sign == ' ' ? " " : ""));
  return Pad(sign + body, sp, '>', sign.size());
}

std::string FormatInt(int64_t v, const Spec& sp) {
  char type = sp.type ? sp.type : 'd';
  if (type == 'e' || type == 'E' || type == 'f' || type == 'F' || type == 'g' || type == 'G' ||
      type == '%') {
    return FormatFloat(static_cast<double>(v), sp);
  }
  if (sp.precision >= 0)
    Throw(ErrorKind::kValue, "Precision not allowed in integer format specifier");
  uint64_t mag = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  std::string digits, prefix;
  char buf[80];
  switch (type) {
    case 'd':
    case 'n':
      std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(mag));
      break;
    case 'x':
      std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(mag));
      prefix = "0x";
      break;
    case 'X':
      std::snprintf(buf, sizeof buf, "%llX", static_cast<unsigned long long>(mag));
      prefix = "0X";
      break;
    case 'o':
      std::snprintf(buf, sizeof buf, "%llo", static_cast<unsigned long long>(mag));
      prefix = "0o";
      break;
    case 'b': {
      std::string b;
      do {
        b.insert(b.begin(), static_cast<char>('0' + (mag & 1)));
        mag >>= 1;
      } while (mag);
      std::snprintf(buf, sizeof buf, "%s", b.c_str());
      prefix = "0b";
      break;
    }
    case 'c': {
      std::string ch;
      AppendUtf8(ch, static_cast<char32_t>(std::min<uint64_t>(mag, 0x10FFFF)));
      return Pad(ch, sp, '<');
    }
    default:
      Throw(ErrorKind::kValue,
            std::string("Unknown format code '") + type + "' for object of type 'int'");
  }
  digits = Group(buf, sp.grouping);
  std::string sign = v < 0 ? "-" : (sp.sign == '+' ? "+" : (sp.sign == ' ' ? " " : ""));
  std::string head = sign + (sp.alt ? prefix : "");
  return Pad(head + digits, sp, '>', head.size());
}

std::string FormatStr(const std::string& s, const Spec& sp) {
  if (sp.type && sp.type != 's') {
    Throw(ErrorKind::kValue,
          std::string("Unknown format code '") + sp.type + "' for object of type 'str'");
  }
  std::string body = s;
  if (sp.precision >= 0) {
    std::vector<char32_t> cps = DecodeUtf8(s);
    if (cps.size() > static_cast<size_t>(sp.precision)) body = EncodeUtf8(cps, 0, sp.precision);
  }
  return Pad(body, sp, '<');
}

// Looks up "0", "name", "0.attr", "name[key]" in str.format's arguments.
Value FieldValue(std::string_view field, const CallArgs& args, size_t& auto_index) {
  size_t end = field.find_first_of(".[");
  std::string_view head = field.substr(0, end);
  Value v;
  if (head.empty()) {
    if (auto_index >= args.positional.size())
      Throw(ErrorKind::kValue, "Replacement index " + std::to_string(auto_index) +
                                   " out of range for positional args tuple");
    v = args.positional[auto_index++];
  } else if (std::all_of(head.begin(), head.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    size_t idx = std::strtoull(std::string(head).c_str(), nullptr, 10);
    if (idx >= args.positional.size())
      Throw(ErrorKind::kValue,
            "Replacement index " + std::string(head) + " out of range for positional args tuple");
    v = args.positional[idx];
  } else {
    bool found = false;
    for (const auto& [k, val] : args.keyword) {
      if (k == head) v = val, found = true;
    }
    if (!found) Throw(ErrorKind::kValue, "KeyError: '" + std::string(head) + "'");
  }
  size_t i = end == std::string_view::npos ? field.size() : end;
  while (i < field.size()) {
    if (field[i] == '.') {
      size_t j = field.find_first_of(".[", i + 1);
      std::string name(
          field.substr(i + 1, (j == std::string_view::npos ? field.size() : j) - i - 1));
      const Value* hit = v.is_dict() ? v.dict().FindStr(name) : nullptr;
      if (!hit)
        Throw(ErrorKind::kValue,
              "AttributeError: '" + TypeName(v) + "' object has no attribute '" + name + "'");
      v = *hit;
      i = j == std::string_view::npos ? field.size() : j;
    } else {
      size_t j = field.find(']', i);
      if (j == std::string_view::npos) Throw(ErrorKind::kValue, "Missing ']' in format string");
      std::string key(field.substr(i + 1, j - i - 1));
      bool numeric = !key.empty() && std::all_of(key.begin(), key.end(),
                                                 [](char c) { return c >= '0' && c <= '9'; });
      const Value* hit = nullptr;
      if (v.is_list() && numeric) {
        size_t idx = std::strtoull(key.c_str(), nullptr, 10);
        if (idx < v.list().items.size()) hit = &v.list().items[idx];
      } else if (v.is_dict()) {
        hit = numeric ? v.dict().Find(Value::Int(std::strtoll(key.c_str(), nullptr, 10)))
                      : v.dict().FindStr(key);
      }
      if (!hit) Throw(ErrorKind::kValue, "format: no item " + key + " in " + TypeName(v));
      v = *hit;
      i = j + 1;
    }
  }
  return v;
}

std::string MaybeEscape(std::string s, const Value& v, bool escape) {
  if (!escape || v.is_markup()) return s;
  return HtmlEscape(s);
}

}  // namespace

std::string PyFloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, std::fabs(d), std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  size_t e_pos = sci.find('e');
  std::string digits = sci.substr(0, e_pos);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  int exp = std::atoi(sci.c_str() + e_pos + 1);
  int decpt = exp + 1;
  std::string out = d < 0 ? "-" : "";
  int nd = static_cast<int>(digits.size());
  if (decpt <= -4 || decpt > 16) {
    out += digits[0];
    if (nd > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  } else if (decpt <= 0) {
    out += "0." + std::string(-decpt, '0') + digits;
  } else if (decpt >= nd) {
    out += digits + std::string(decpt - nd, '0') + ".0";
  } else {
    out += digits.substr(0, decpt) + "." + digits.substr(decpt);
  }
  return out;
}

std::string PyStrRepr(std::string_view s) {
  ChargeScan(s.size());
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  std::vector<char32_t> cps = DecodeUtf8(s);
  for (size_t i = 0; i < cps.size(); ++i) {
    if (i % kCheckEvery == 0) ReserveBytes(out.size());
    char32_t c = cps[i];
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (PyIsPrintable(c)) {
      AppendUtf8(out, c);
    } else if (c < 0x100) {
      AppendHex(out, 'x', c, 2);
    } else if (c < 0x10000) {
      AppendHex(out, 'u', c, 4);
    } else {
      AppendHex(out, 'U', c, 8);
    }
  }
  out += quote;
  return out;
}

std::string HtmlEscape(std::string_view s) {
  ChargeScan(s.size());
  ReserveBytes(s.size());
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (i % kCheckEvery == 0) ReserveBytes(out.size());
    const char* ref = MarkupReference(static_cast<unsigned char>(s[i]), "&#34;");
    if (ref != nullptr) {
      out += ref;
    } else {
      out += s[i];
    }
  }
  ReserveBytes(out.size());
  return out;
}

std::string JsonDumps(const Value& v, const JsonOptions& options) {
  std::string out;
  JsonInto(v, options, 0, out);
  return out;
}

std::string FormatValue(const Value& v, std::string_view spec) {
  if (spec.empty()) return ToStr(v);
  Spec sp = ParseSpec(spec);
  switch (v.kind()) {
    case Kind::kString:
      return FormatStr(v.str(), sp);
    case Kind::kBool:
      if (sp.type == 's') return FormatStr(ToStr(v), sp);
      return FormatInt(v.int_value(), sp);
    case Kind::kInt:
      return FormatInt(v.int_value(), sp);
    case Kind::kFloat:
      return FormatFloat(v.float_value(), sp);
    default:
      Throw(ErrorKind::kType, "unsupported format string passed to " + TypeName(v) + ".__format__");
  }
}

namespace {

// CPython's build_string: a replacement field's spec may itself hold fields,
// one level deep ("{:{width}}"), numbered on from the outer ones; deeper is
// "Max string recursion exceeded".
std::string StrFormatAt(std::string_view fmt, const CallArgs& args, bool escape_args,
                        int recursion_depth, size_t& auto_index) {
  if (recursion_depth <= 0) Throw(ErrorKind::kValue, "Max string recursion exceeded");
  ChargeScan(fmt.size());
  std::string out;
  size_t i = 0;
  while (i < fmt.size()) {
    char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}';
        i += 2;
        continue;
      }
      Throw(ErrorKind::kValue, "Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      ++i;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      i += 2;
      continue;
    }
    // Find the matching '}', allowing one level of nesting in the spec.
    size_t j = i + 1;
    int depth = 1;
    while (j < fmt.size() && depth > 0) {
      if (fmt[j] == '{')
        ++depth;
      else if (fmt[j] == '}')
        --depth;
      if (depth > 0) ++j;
    }
    if (j >= fmt.size()) Throw(ErrorKind::kValue, "Single '{' encountered in format string");
    std::string_view inner = fmt.substr(i + 1, j - i - 1);
    std::string_view field = inner, spec;
    char conv = 0;
    size_t colon = inner.find(':');
    size_t bang = inner.find('!');
    if (bang != std::string_view::npos && (colon == std::string_view::npos || bang < colon)) {
      field = inner.substr(0, bang);
      if (bang + 1 >= inner.size())
        Throw(ErrorKind::kValue, "end of string while looking for conversion specifier");
      conv = inner[bang + 1];
      if (colon != std::string_view::npos) spec = inner.substr(colon + 1);
    } else if (colon != std::string_view::npos) {
      field = inner.substr(0, colon);
      spec = inner.substr(colon + 1);
    }
    Value v = FieldValue(field, args, auto_index);
    std::string nested_spec;
    if (spec.find('{') != std::string_view::npos) {
      nested_spec = StrFormatAt(spec, args, false, recursion_depth - 1, auto_index);
      spec = nested_spec;
    }
    std::string text;
    if (conv == 'r' || conv == 'a') {
      text = FormatValue(Value::Str(Repr(v)), spec);
    } else if (conv == 's') {
      text = FormatValue(Value::Str(ToStr(v)), spec);
    } else if (conv) {
      Throw(ErrorKind::kValue, std::string("Unknown conversion specifier ") + conv);
    } else {
      text = FormatValue(v, spec);
    }
    text = MaybeEscape(std::move(text), v, escape_args);
    ReserveBytes(out.size() + text.size());
    out += text;
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string StrFormat(std::string_view fmt, const CallArgs& args, bool escape_args) {
  size_t auto_index = 0;
  return StrFormatAt(fmt, args, escape_args, 2, auto_index);
}

std::string PercentFormat(std::string_view fmt, const Value& args, bool escape_args) {
  ChargeScan(fmt.size());
  std::vector<Value> positional;
  const DictData* mapping = nullptr;
  if (args.is_tuple()) {
    positional = args.list().items;
  } else {
    positional.push_back(args);
    if (args.is_dict()) mapping = &args.dict();
  }
  size_t next = 0;
  bool used_mapping = false;
  std::string out;
  size_t i = 0;
  auto take = [&]() -> Value {
    if (next >= positional.size())
      Throw(ErrorKind::kType, "not enough arguments for format string");
    return positional[next++];
  };
  while (i < fmt.size()) {
    if (fmt[i] != '%') {
      out += fmt[i++];
      continue;
    }
    if (++i >= fmt.size()) Throw(ErrorKind::kValue, "incomplete format");
    Value v;
    bool have_value = false;
    if (fmt[i] == '(') {
      size_t close = fmt.find(')', i);
      if (close == std::string_view::npos) Throw(ErrorKind::kValue, "incomplete format key");
      if (!mapping) Throw(ErrorKind::kType, "format requires a mapping");
      const Value* hit = mapping->FindStr(fmt.substr(i + 1, close - i - 1));
      if (!hit)
        Throw(ErrorKind::kValue,
              "KeyError: '" + std::string(fmt.substr(i + 1, close - i - 1)) + "'");
      v = *hit;
      have_value = used_mapping = true;
      i = close + 1;
    }
    std::string flags;
    while (i < fmt.size() && std::strchr("-+ #0", fmt[i])) flags += fmt[i++];
    int64_t width = -1;
    int prec = -1;
    if (i < fmt.size() && fmt[i] == '*') {
      width = take().int_value();
      ++i;
    } else if (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') {
      width = ParseInt(fmt, i);
    }
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      prec = (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') ? ParseInt(fmt, i) : 0;
    }
    while (i < fmt.size() && (fmt[i] == 'l' || fmt[i] == 'h' || fmt[i] == 'L')) ++i;
    if (i >= fmt.size()) Throw(ErrorKind::kValue, "incomplete format");
    char type = fmt[i++];
    if (type == '%') {
      out += '%';
      continue;
    }
    if (!have_value) v = take();
    std::string body;
    bool left = flags.find('-') != std::string::npos;
    switch (type) {
      case 's':
      case 'r':
      case 'a': {
        body = type == 's' ? ToStr(v) : Repr(v);
        if (prec >= 0) {
          std::vector<char32_t> cps = DecodeUtf8(body);
          if (cps.size() > static_cast<size_t>(prec)) body = EncodeUtf8(cps, 0, prec);
        }
        body = MaybeEscape(std::move(body), v, escape_args);
        break;
      }
      case 'd':
      case 'i':
      case 'u':
      case 'x':
      case 'X':
      case 'o':
      case 'c':
      case 'e':
      case 'E':
      case 'f':
      case 'F':
      case 'g':
      case 'G': {
        if (type == 'c' && v.is_string() && CodepointCount(v.str()) == 1) {
          body = v.str();
          break;
        }
        if (!v.is_number()) {
          Throw(ErrorKind::kType,
                std::string("%") + type + " format: a real number is required, not " + TypeName(v));
        }
        char spec[32];
        char buf[512];
        int n;
        if (type == 'c') {
          AppendUtf8(body, static_cast<char32_t>(std::clamp<int64_t>(v.int_value(), 0, 0x10FFFF)));
          break;
        }
        if (std::strchr("diuxXo", type)) {
          int64_t iv =
              v.is_float()
                  ? static_cast<int64_t>(std::trunc(std::clamp(v.float_value(), -9.2e18, 9.2e18)))
                  : v.int_value();
          char t = type == 'i' || type == 'u' ? 'd' : type;
          std::snprintf(spec, sizeof spec, "%%%s.%dll%c", flags.c_str(), prec < 0 ? 1 : prec, t);
          n = std::snprintf(buf, sizeof buf, spec, static_cast<long long>(iv));
        } else {
          std::snprintf(spec, sizeof spec, "%%%s.%d%c", flags.c_str(),
                        prec < 0 ? 6 : std::min(prec, 300), type);
          n = std::snprintf(buf, sizeof buf, spec, v.float_value());
        }
        body.assign(buf, std::max(0, std::min(n, static_cast<int>(sizeof buf) - 1)));
        break;
      }
      default:
        Throw(ErrorKind::kValue, std::string("unsupported format character '") + type + "'");
    }
    const size_t len = width > 0 ? CodepointCount(body) : 0;
    const size_t pad =
        width > 0 && len < static_cast<size_t>(width) ? static_cast<size_t>(width) - len : 0;
    ReserveBytes(out.size() + body.size() + pad);  // '%*s' % (2000000000, '') stops here
    // The padding goes straight into `out`: one pass over it, not three.
    if (pad == 0 || left) {
      out += body;
      out.append(pad, ' ');
    } else if (flags.find('0') != std::string::npos && type != 's' && type != 'r') {
      size_t sign = (!body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) ? 1 : 0;
      out.append(body, 0, sign);
      out.append(pad, '0');
      out.append(body, sign, std::string::npos);
    } else {
      out.append(pad, ' ');
      out += body;
    }
  }
  // Python treats any non-tuple, non-str argument with __getitem__ (a dict, a
  // list) as a mapping, which silences "not all arguments converted".
  bool mapping_like =
      !args.is_tuple() && (args.is_dict() || args.is_indexable() || args.is_undefined());
  if (!used_mapping && next < positional.size() && !(mapping_like && positional.size() == 1)) {
    Throw(ErrorKind::kType, "not all arguments converted during string formatting");
  }
  return out;
}

}  // namespace stet::tmpl
