// Jinja2 3.1's builtin tests (`x is defined`, `x is mapping`, ...), with the
// Python type checks they perform: bool counts as a number but not as an
// integer, an undefined is iterable and a sequence, a generator is neither a
// sequence nor a mapping.
#include <algorithm>

#include "template/parser.h"
#include "template/python/builtins.h"
#include "template/python/unicode.h"

namespace stet::tmpl {
namespace {

constexpr std::string_view kTestNames[] = {
    "odd",     "even",   "divisibleby", "defined",  "undefined", "filter", "test",    "none",
    "boolean", "false",  "true",        "integer",  "float",     "lower",  "upper",   "string",
    "mapping", "number", "sequence",    "iterable", "callable",  "sameas", "escaped", "in",
    "==",      "eq",     "equalto",     "!=",       "ne",        ">",      "gt",      "greaterthan",
    ">=",      "ge",     "<",           "lt",       "lessthan",  "<=",     "le"};

bool Compare2(std::string_view name, const Value& a, const Value& b) {
  if (name == "==" || name == "eq" || name == "equalto") return CompareOp("==", a, b);
  if (name == "!=" || name == "ne") return CompareOp("!=", a, b);
  if (name == ">" || name == "gt" || name == "greaterthan") return CompareOp(">", a, b);
  if (name == ">=" || name == "ge") return CompareOp(">=", a, b);
  if (name == "<" || name == "lt" || name == "lessthan") return CompareOp("<", a, b);
  return CompareOp("<=", a, b);
}

// Rejects arguments to a test that takes none; always true.
bool NoArgs(const CallArgs& args, std::string_view name) {
  Args a(args, name, {});
  return true;
}

}  // namespace

bool IsKnownTest(std::string_view name) {
  return std::find(std::begin(kTestNames), std::end(kTestNames), name) != std::end(kTestNames);
}

bool ApplyTest(Interpreter& in, std::string_view name, const Value& v, CallArgs& args) {
  if (name == "defined" || name == "undefined") {
    Args a(args, name, {});
    return v.is_undefined() == (name == "undefined");
  }
  if (name == "none") return NoArgs(args, name) && v.is_none();
  if (name == "boolean") return NoArgs(args, name) && v.is_bool();
  if (name == "true") return NoArgs(args, name) && v.is_bool() && v.bool_value();
  if (name == "false") return NoArgs(args, name) && v.is_bool() && !v.bool_value();
  if (name == "integer") return NoArgs(args, name) && v.is_int();
  if (name == "float") return NoArgs(args, name) && v.is_float();
  if (name == "number") return NoArgs(args, name) && v.is_number();
  if (name == "string") return NoArgs(args, name) && v.is_string();
  if (name == "mapping") return NoArgs(args, name) && v.is_dict();
  if (name == "escaped") return NoArgs(args, name) && v.is_markup();
  if (name == "sequence") {
    Args a(args, name, {});
    return v.is_undefined() || v.is_string() || v.is_dict() || v.is_indexable();
  }
  if (name == "iterable") {
    Args a(args, name, {});
    return v.is_undefined() || v.is_string() || v.is_dict() || v.is_list() ||
           (v.is_object() && v.object()->TypeName() == "LoopContext");
  }
  if (name == "callable") {
    Args a(args, name, {});
    return v.is_undefined() || (v.is_object() && v.object()->Callable());
  }
  if (name == "lower" || name == "upper") {
    Args a(args, name, {});
    std::string s = ToStr(v);
    bool cased = false;
    for (char32_t c : DecodeUtf8(s)) {
      if (name == "lower" ? PyIsUpper(c) : PyIsLower(c)) return false;
      cased = cased || PyIsUpper(c) || PyIsLower(c);
    }
    return cased;
  }
  if (name == "odd" || name == "even") {
    Args a(args, name, {});
    Value r = BinaryOp(in, "%", v, Value::Int(2));
    return Equals(r, Value::Int(name == "odd" ? 1 : 0));
  }
  if (name == "divisibleby") {
    Args a(args, name, {"num"});
    return Equals(BinaryOp(in, "%", v, a.get(0)), Value::Int(0));
  }
  if (name == "filter" || name == "test") {
    Args a(args, name, {});
    if (!v.is_string()) return false;
    return name == "filter" ? IsKnownFilter(v.str()) : IsKnownTest(v.str());
  }
  if (name == "sameas") {
    Args a(args, name, {"other"});
    const Value& o = a.get(0);
    if (v.kind() != o.kind()) return false;
    switch (v.kind()) {
      case Kind::kNone:
      case Kind::kUndefined:
        return true;
      case Kind::kBool:
        return v.bool_value() == o.bool_value();
      case Kind::kInt:
        return v.int_value() == o.int_value() && v.int_value() >= -5 && v.int_value() <= 256;
      case Kind::kObject:
        return v.object() == o.object();
      default:
        return v.identity() == o.identity();
    }
  }
  if (name == "in") {
    Args a(args, name, {"seq"});
    return Contains(a.get(0), v);
  }
  if (IsKnownTest(name)) {
    Args a(args, name, {"other"});
    return Compare2(name, v, a.get(0));
  }
  Throw(ErrorKind::kRuntime, "No test named '" + std::string(name) + "' found.");
}

}  // namespace stet::tmpl
