// Python methods and attributes of builtin values as the immutable sandbox
// exposes them: str (with Markup's escaping variants), dict, list, tuple and
// numbers. Mutating methods (list.append, dict.update, ...) resolve to an
// undefined that raises SecurityError when called, exactly as Jinja does.
#include <algorithm>
#include <cmath>

#include "template/budget.h"
#include "template/objects.h"
#include "template/python/builtins.h"
#include "template/python/pyformat.h"
#include "template/python/unicode.h"

namespace stet::tmpl {
namespace {

bool In(std::string_view name, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

const std::initializer_list<std::string_view> kStrMethods = {
    "capitalize",   "casefold",     "center",      "count",     "endswith",   "find",
    "format",       "index",        "isalnum",     "isalpha",   "isascii",    "isdecimal",
    "isdigit",      "isidentifier", "islower",     "isnumeric", "isspace",    "istitle",
    "isupper",      "join",         "ljust",       "lower",     "lstrip",     "partition",
    "removeprefix", "removesuffix", "replace",     "rfind",     "rindex",     "rjust",
    "rpartition",   "rsplit",       "rstrip",      "split",     "splitlines", "startswith",
    "strip",        "swapcase",     "title",       "upper",     "zfill",      "format_map",
    "expandtabs",   "encode",       "isprintable", "maketrans", "translate"};
const std::initializer_list<std::string_view> kDictMethods = {"copy", "get",    "items",
                                                              "keys", "values", "fromkeys"};
const std::initializer_list<std::string_view> kDictUnsafe = {"clear", "pop", "popitem",
                                                             "setdefault", "update"};
const std::initializer_list<std::string_view> kListMethods = {"copy", "count", "index"};
const std::initializer_list<std::string_view> kListUnsafe = {
    "append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"};

Value Unsafe(const Value& self, std::string_view name) {
  return Value::Undefined("access to attribute '" + std::string(name) + "' of '" + TypeName(self) +
                              "' object is unsafe.",
                          true);
}

// Code point index of byte offset `byte` in s.
int64_t CpIndex(const std::string& s, size_t byte) {
  return static_cast<int64_t>(CodepointCount(std::string_view(s).substr(0, byte)));
}

// Byte range of the code point slice [start:end] (Python-normalised).
void ByteRange(const std::string& s, const Args& a, size_t first, size_t& b, size_t& e) {
  std::vector<char32_t> cps = DecodeUtf8(s);
  int64_t n = static_cast<int64_t>(cps.size());
  auto norm = [n](int64_t i) { return i < 0 ? std::max<int64_t>(0, i + n) : std::min(i, n); };
  int64_t start =
      a.has(first) && !a.get(first).is_none() ? norm(ToInt64(a.get(first), "slice")) : 0;
  int64_t end = a.has(first + 1) && !a.get(first + 1).is_none()
                    ? norm(ToInt64(a.get(first + 1), "slice"))
                    : n;
  b = EncodeUtf8(cps, 0, static_cast<size_t>(start)).size();
  e = end < start ? b : EncodeUtf8(cps, 0, static_cast<size_t>(end)).size();
}

const std::string& ArgStr(const Value& v, std::string_view method) {
  if (!v.is_string()) {
    Throw(ErrorKind::kType, std::string(method) + "() argument must be str, not " + TypeName(v));
  }
  return v.str();
}

// For Markup methods: string arguments are escaped, results are Markup.
std::string EscArg(const Value& v, bool markup, std::string_view method) {
  std::string s = ArgStr(v, method);
  return markup && !v.is_markup() ? HtmlEscape(s) : s;
}

Value Pad(Interpreter& in, const std::string& s, const Args& a, char how, bool markup) {
  int64_t width = ToInt64(a.get(0), "width");
  std::string fill = a.has(1) ? ArgStr(a.get(1), "pad") : " ";
  if (CodepointCount(fill) != 1)
    Throw(ErrorKind::kType, "The fill character must be exactly one character long");
  int64_t len = static_cast<int64_t>(CodepointCount(s));
  if (width <= len) return Value::Str(s, markup);
  size_t bytes;
  if (__builtin_mul_overflow(static_cast<size_t>(width), fill.size(), &bytes)) bytes = SIZE_MAX;
  in.CheckSize(bytes);
  int64_t pad = width - len;
  auto rep = [&fill](int64_t n) {
    if (fill.size() == 1) return std::string(static_cast<size_t>(n), fill[0]);
    std::string r;
    r.reserve(static_cast<size_t>(n) * fill.size());
    for (int64_t i = 0; i < n; ++i) r += fill;
    return r;
  };
  if (how == '<') return Value::Str(s + rep(pad), markup);
  if (how == '>') return Value::Str(rep(pad) + s, markup);
  // str.center: the extra space goes left when the padding and width are both odd.
  int64_t left = pad / 2 + (pad & width & 1);
  return Value::Str(rep(left) + s + rep(pad - left), markup);
}

bool AllCps(const std::string& s, bool (*pred)(char32_t)) {
  if (s.empty()) return false;
  for (char32_t c : DecodeUtf8(s)) {
    if (!pred(c)) return false;
  }
  return true;
}

Value StrMethod(Interpreter& in, const Value& self, std::string_view name, CallArgs& args) {
  const std::string& s = self.str();
  bool mk = self.is_markup();
  // Most methods read the whole string byte by byte; the few that do not are
  // charged as if they did.
  ChargeScan(s.size());
  if (In(name, {"strip", "lstrip", "rstrip"})) {
    Args a(args, name, {"chars"});
    std::optional<std::string> chars;
    if (a.has(0) && !a.get(0).is_none()) chars = EscArg(a.get(0), mk, name);
    return Value::Str(PyStrip(s, chars ? &*chars : nullptr, name != "rstrip", name != "lstrip"),
                      mk);
  }
  if (name == "split" || name == "rsplit") {
    Args a(args, name, {"sep", "maxsplit"});
    std::optional<std::string> sep;
    if (a.has(0) && !a.get(0).is_none()) sep = EscArg(a.get(0), mk, name);
    if (sep && sep->empty()) Throw(ErrorKind::kValue, "empty separator");
    std::vector<Value> parts;
    for (auto& p :
         PySplit(s, sep ? &*sep : nullptr, a.get_int(1, -1, "maxsplit"), name == "rsplit")) {
      parts.push_back(Value::Str(std::move(p), mk));
    }
    return Value::List(std::move(parts));
  }
  if (name == "splitlines") {
    Args a(args, name, {"keepends"});
    std::vector<Value> parts;
    for (auto& p : PySplitLines(s, Truthy(a.get(0)))) parts.push_back(Value::Str(std::move(p), mk));
    return Value::List(std::move(parts));
  }
  if (name == "startswith" || name == "endswith") {
    Args a(args, name, {"prefix", "start", "end"});
    size_t b, e;
    ByteRange(s, a, 1, b, e);
    std::string_view hay = std::string_view(s).substr(b, e - b);
    std::vector<Value> options =
        a.get(0).is_tuple() ? a.get(0).list().items : std::vector<Value>{a.get(0)};
    for (const Value& o : options) {
      const std::string& p = ArgStr(o, name);
      ChargeCopy(p.size());
      bool hit = name == "startswith"
                     ? hay.substr(0, p.size()) == p
                     : hay.size() >= p.size() && hay.substr(hay.size() - p.size()) == p;
      if (hit) return Value::Bool(true);
    }
    return Value::Bool(false);
  }
  if (name == "upper") return MakeStr(in, PyStrUpper(s), mk);
  if (name == "lower" || name == "casefold") return MakeStr(in, PyStrLower(s), mk);
  if (name == "title") return MakeStr(in, PyStrTitle(s), mk);
  if (name == "capitalize") return MakeStr(in, PyStrCapitalize(s), mk);
  if (name == "swapcase") {
    std::string out;
    for (char32_t c : DecodeUtf8(s)) AppendUtf8(out, PyIsUpper(c) ? PyLower(c) : PyUpper(c));
    return MakeStr(in, std::move(out), mk);
  }
  if (name == "replace") {
    Args a(args, name, {"old", "new", "count"});
    std::string from = EscArg(a.get(0), mk, name), to = EscArg(a.get(1), mk, name);
    int64_t count = a.get_int(2, -1, "count");
    std::string out;
    if (from.empty()) {
      std::vector<char32_t> cps = DecodeUtf8(s);
      int64_t done = 0;
      for (size_t i = 0; i <= cps.size(); ++i) {
        if (count < 0 || done < count) {
          in.CheckSize(out.size() + to.size());
          ChargeCopy(to.size());
          out += to;
          ++done;
        }
        if (i < cps.size()) AppendUtf8(out, cps[i]);
      }
      return Value::Str(std::move(out), mk);
    }
    size_t pos = 0;
    int64_t done = 0;
    while (count < 0 || done < count) {
      size_t hit = FindBytes(s, from, pos);
      if (hit == std::string::npos) break;
      in.CheckSize(out.size() + (hit - pos) + to.size());
      ChargeCopy(hit - pos + to.size());
      out.append(s, pos, hit - pos);
      out += to;
      pos = hit + from.size();
      ++done;
    }
    out.append(s, pos, std::string::npos);
    return MakeStr(in, std::move(out), mk);
  }
  if (In(name, {"find", "rfind", "index", "rindex", "count"})) {
    Args a(args, name, {"sub", "start", "end"});
    const std::string& sub = ArgStr(a.get(0), name);
    size_t b, e;
    ByteRange(s, a, 1, b, e);
    std::string_view hay = std::string_view(s).substr(b, e - b);
    if (name == "count") {
      if (sub.empty()) return Value::Int(static_cast<int64_t>(CodepointCount(hay)) + 1);
      int64_t n = 0;
      for (size_t p = FindBytes(hay, sub); p != std::string_view::npos;
           p = FindBytes(hay, sub, p + sub.size()))
        ++n;
      return Value::Int(n);
    }
    size_t hit = (name == "find" || name == "index") ? FindBytes(hay, sub) : RFindBytes(hay, sub);
    if (hit == std::string_view::npos) {
      if (name == "index" || name == "rindex") Throw(ErrorKind::kValue, "substring not found");
      return Value::Int(-1);
    }
    return Value::Int(CpIndex(s, b + hit));
  }
  if (name == "join") {
    Args a(args, name, {"iterable"});
    std::string out;
    size_t i = 0;
    for (const Value& v : Iterate(a.get(0))) {
      if (!v.is_string()) {
        Throw(ErrorKind::kType, "sequence item " + std::to_string(i) + ": expected str instance, " +
                                    TypeName(v) + " found");
      }
      std::string item = mk && !v.is_markup() ? HtmlEscape(v.str()) : v.str();
      in.CheckSize(out.size() + (i ? s.size() : 0) + item.size());
      if (i++) out += s;
      out += item;
    }
    return Value::Str(std::move(out), mk);
  }
  if (name == "format") return MakeStr(in, StrFormat(s, args, mk), mk);
  if (name == "format_map") {
    Args a(args, name, {"mapping"});
    CallArgs kw;
    if (a.get(0).is_dict()) {
      for (const auto& [k, v] : a.get(0).dict().entries) kw.keyword.emplace_back(ToStr(k), v);
    }
    return MakeStr(in, StrFormat(s, kw, mk), mk);
  }
  if (name == "center" || name == "ljust" || name == "rjust") {
    Args a(args, name, {"width", "fillchar"});
    return Pad(in, s, a, name == "center" ? '^' : name == "ljust" ? '<' : '>', mk);
  }
  if (name == "zfill") {
    Args a(args, name, {"width"});
    int64_t width = ToInt64(a.get(0), "width");
    int64_t len = static_cast<int64_t>(CodepointCount(s));
    if (width <= len) return Value::Str(s, mk);
    in.CheckSize(static_cast<size_t>(width));
    size_t sign = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
    return Value::Str(s.substr(0, sign) + std::string(width - len, '0') + s.substr(sign), mk);
  }
  if (name == "partition" || name == "rpartition") {
    Args a(args, name, {"sep"});
    const std::string& sep = ArgStr(a.get(0), name);
    if (sep.empty()) Throw(ErrorKind::kValue, "empty separator");
    size_t hit = name == "partition" ? FindBytes(s, sep) : RFindBytes(s, sep);
    if (hit == std::string::npos) {
      if (name == "partition")
        return Value::Tuple({Value::Str(s, mk), Value::Str("", mk), Value::Str("", mk)});
      return Value::Tuple({Value::Str("", mk), Value::Str("", mk), Value::Str(s, mk)});
    }
    return Value::Tuple({Value::Str(s.substr(0, hit), mk), Value::Str(sep, mk),
                         Value::Str(s.substr(hit + sep.size()), mk)});
  }
  if (name == "removeprefix" || name == "removesuffix") {
    Args a(args, name, {"affix"});
    const std::string& x = ArgStr(a.get(0), name);
    ChargeCopy(x.size());
    if (name == "removeprefix" && s.compare(0, x.size(), x) == 0)
      return Value::Str(s.substr(x.size()), mk);
    if (name == "removesuffix" && !x.empty() && s.size() >= x.size() &&
        s.compare(s.size() - x.size(), x.size(), x) == 0) {
      return Value::Str(s.substr(0, s.size() - x.size()), mk);
    }
    return Value::Str(s, mk);
  }
  if (name == "isspace") return Value::Bool(AllCps(s, PyIsSpace));
  if (name == "isalpha") return Value::Bool(AllCps(s, PyIsAlpha));
  if (name == "isalnum") return Value::Bool(AllCps(s, PyIsAlnum));
  if (name == "isdigit" || name == "isdecimal" || name == "isnumeric") {
    return Value::Bool(AllCps(
        s, +[](char32_t c) { return c >= '0' && c <= '9'; }));
  }
  if (name == "isascii") return Value::Bool(IsAscii(s));
  if (name == "isprintable") {
    for (char32_t c : DecodeUtf8(s)) {
      if (!PyIsPrintable(c)) return Value::Bool(false);
    }
    return Value::Bool(true);
  }
  if (name == "isupper" || name == "islower") {
    bool cased = false;
    for (char32_t c : DecodeUtf8(s)) {
      if (name == "isupper" ? PyIsLower(c) : PyIsUpper(c)) return Value::Bool(false);
      cased = cased || PyIsUpper(c) || PyIsLower(c);
    }
    return Value::Bool(cased);
  }
  if (name == "istitle") return Value::Bool(!s.empty() && PyStrTitle(s) == s && PyStrLower(s) != s);
  if (name == "isidentifier") {
    bool ok = !s.empty() && !(s[0] >= '0' && s[0] <= '9');
    for (char c : s)
      ok = ok &&
           ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_');
    return Value::Bool(ok);
  }
  Throw(ErrorKind::kType,
        "str." + std::string(name) + "() is not supported by stet's template engine");
}

Value DictMethod(const Value& self, std::string_view name, CallArgs& args) {
  const DictData& d = self.dict();
  if (name == "get") {
    Args a(args, name, {"key", "default"});
    if (const Value* v = d.Find(a.get(0))) return *v;
    return a.get_or(1, Value::None());
  }
  if (name == "items" || name == "keys" || name == "values") {
    Args a(args, name, {});
    std::vector<Value> out;
    out.reserve(d.entries.size());
    for (const auto& [k, v] : d.entries) {
      out.push_back(name == "items" ? Value::Tuple({k, v}) : name == "keys" ? k : v);
    }
    return Value::Special(std::move(out), SeqKind::kView, "dict_" + std::string(name));
  }
  if (name == "copy") {
    Args a(args, name, {});
    auto c = std::make_shared<DictData>(d);
    return Value::Dict(std::move(c));
  }
  Throw(ErrorKind::kType,
        "dict." + std::string(name) + "() is not supported by stet's template engine");
}

Value ListMethod(const Value& self, std::string_view name, CallArgs& args) {
  const auto& items = self.list().items;
  if (name == "count") {
    Args a(args, name, {"value"});
    return Value::Int(std::count_if(items.begin(), items.end(),
                                    [&](const Value& v) { return Equals(v, a.get(0)); }));
  }
  if (name == "index") {
    Args a(args, name, {"value"});
    for (size_t i = 0; i < items.size(); ++i) {
      if (Equals(items[i], a.get(0))) return Value::Int(static_cast<int64_t>(i));
    }
    Throw(ErrorKind::kValue, Repr(a.get(0)) + " is not in list");
  }
  if (name == "copy") return Value::List(items);
  Throw(ErrorKind::kType, TypeName(self) + "." + std::string(name) + "() is not supported");
}

}  // namespace

std::optional<Value> BuiltinAttr(const Value& self, std::string_view name) {
  auto bound = [&]() { return Value::Obj(std::make_shared<BoundMethod>(self, std::string(name))); };
  switch (self.kind()) {
    case Kind::kString:
      if (In(name, kStrMethods)) return bound();
      if (self.is_markup() && In(name, {"escape", "striptags", "unescape"})) return bound();
      return std::nullopt;
    case Kind::kDict:
      if (In(name, kDictMethods)) return bound();
      if (In(name, kDictUnsafe)) return Unsafe(self, name);
      return std::nullopt;
    case Kind::kList:
      if (self.list().kind == SeqKind::kList) {
        if (In(name, kListMethods)) return bound();
        if (In(name, kListUnsafe)) return Unsafe(self, name);
      } else if (self.list().kind == SeqKind::kTuple && In(name, {"count", "index"})) {
        return bound();
      }
      return std::nullopt;
    case Kind::kInt:
    case Kind::kBool:
      if (name == "real" || name == "numerator") return Value::Int(self.int_value());
      if (name == "imag") return Value::Int(0);
      if (name == "denominator") return Value::Int(1);
      return std::nullopt;
    case Kind::kFloat:
      if (name == "real") return self;
      if (name == "imag") return Value::Float(0.0);
      if (name == "is_integer") return bound();
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

Value CallMethod(Interpreter& in, const Value& self, std::string_view name, CallArgs& args) {
  switch (self.kind()) {
    case Kind::kString:
      if (self.is_markup() && name == "striptags") return in.Filter("striptags", self, args);
      if (self.is_markup() && name == "escape") return self;
      if (self.is_markup() && name == "unescape") return in.Filter("striptags", self, args);
      return StrMethod(in, self, name, args);
    case Kind::kDict:
      return DictMethod(self, name, args);
    case Kind::kList:
      return ListMethod(self, name, args);
    case Kind::kFloat:
      if (name == "is_integer")
        return Value::Bool(std::floor(self.float_value()) == self.float_value());
      break;
    default:
      break;
  }
  Throw(ErrorKind::kType,
        "'" + TypeName(self) + "' object has no method '" + std::string(name) + "'");
}

}  // namespace stet::tmpl
