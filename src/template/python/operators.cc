// Python's binary and unary operators, comparisons and `in` on Values,
// including CPython's float floor-division / modulo rules and markupsafe's
// Markup arithmetic (Markup + str escapes the str). Integers are int64: a
// result Python would promote to a big integer is a ValueError here.
#include <cmath>

#include "template/interpreter.h"
#include "template/python/builtins.h"
#include "template/python/pyformat.h"
#include "template/python/unicode.h"

namespace stet::tmpl {
namespace {

[[noreturn]] void Unsupported(std::string_view op, const Value& a, const Value& b) {
  Throw(ErrorKind::kType, "unsupported operand type(s) for " + std::string(op) + ": '" +
                              TypeName(a) + "' and '" + TypeName(b) + "'");
}

[[noreturn]] void Overflow() { Throw(ErrorKind::kValue, "integer result does not fit in 64 bits"); }

int64_t CheckedPow(int64_t base, int64_t exp) {
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) {
      if (__builtin_mul_overflow(result, base, &result)) Overflow();
    }
    exp >>= 1;
    if (exp > 0 && __builtin_mul_overflow(base, base, &base)) Overflow();
  }
  return result;
}

// CPython float_divmod.
void FloatDivmod(double vx, double wx, double& floordiv, double& mod) {
  if (wx == 0.0) Throw(ErrorKind::kValue, "float divmod()");
  mod = std::fmod(vx, wx);
  double div = (vx - mod) / wx;
  if (mod != 0.0) {
    if ((wx < 0) != (mod < 0)) {
      mod += wx;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, wx);
  }
  if (div != 0.0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, vx / wx);
  }
}

// a * b, saturating: a size check then refuses it.
uint64_t SizeTimes(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

// s * n and list * n. The result's size is checked before it is built, and
// an empty operand repeats to an empty result at once (not in n steps).
Value Repeat(Interpreter& in, const Value& seq, int64_t times) {
  const bool empty = seq.is_string() ? seq.str().empty() : seq.list().items.empty();
  if (times <= 0 || empty) {
    return seq.is_string() ? Value::Str("", seq.is_markup()) : Value::List({}, seq.list().kind);
  }
  if (seq.is_string()) {
    const std::string& s = seq.str();
    in.CheckSize(SizeTimes(s.size(), static_cast<uint64_t>(times)));
    if (s.size() == 1)
      return Value::Str(std::string(static_cast<size_t>(times), s[0]), seq.is_markup());
    std::string out;
    out.reserve(s.size() * times);
    for (int64_t i = 0; i < times; ++i) out += s;
    return Value::Str(std::move(out), seq.is_markup());
  }
  const auto& items = seq.list().items;
  in.CheckSize(SizeTimes(items.size() * sizeof(Value), static_cast<uint64_t>(times)));
  std::vector<Value> out;
  out.reserve(items.size() * times);
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::List(std::move(out), seq.list().kind);
}

bool IsSeq(const Value& v) {
  return v.is_list() && (v.list().kind == SeqKind::kList || v.list().kind == SeqKind::kTuple);
}

// a + b of two strings, copied once (the result is what the budget counts).
Value Concat(Interpreter& in, std::string_view a, std::string_view b, bool markup) {
  in.CheckSize(a.size() + b.size());
  std::string out;
  out.reserve(a.size() + b.size());
  out.append(a);
  out.append(b);
  return Value::Str(std::move(out), markup);
}

}  // namespace

Value BinaryOp(Interpreter& in, std::string_view op, const Value& a, const Value& b) {
  if (op == "~") {
    if (a.is_string() && b.is_string()) return Concat(in, a.str(), b.str(), false);
    return Concat(in, ToStr(a), ToStr(b), false);
  }
  if (op == "%" && a.is_string()) {
    // str % x: an undefined x acts as an empty mapping (it has __getitem__).
    return Value::Str(PercentFormat(a.str(), b, a.is_markup()), a.is_markup());
  }
  if (a.is_undefined()) FailUndefined(a);
  if (b.is_undefined()) FailUndefined(b);
  bool nums = a.is_number() && b.is_number();
  bool any_float = a.is_float() || b.is_float();
  if (op == "+") {
    if (nums) {
      if (any_float) return Value::Float(a.float_value() + b.float_value());
      int64_t r;
      if (__builtin_add_overflow(a.int_value(), b.int_value(), &r)) Overflow();
      return Value::Int(r);
    }
    if (a.is_string() && b.is_string()) {
      bool markup = a.is_markup() || b.is_markup();
      if (!markup) return Concat(in, a.str(), b.str(), false);
      return Concat(in, a.is_markup() ? a.str() : HtmlEscape(a.str()),
                    b.is_markup() ? b.str() : HtmlEscape(b.str()), true);
    }
    if (IsSeq(a) && IsSeq(b) && a.list().kind == b.list().kind) {
      in.CheckSize((a.list().items.size() + b.list().items.size()) * sizeof(Value));
      std::vector<Value> items = a.list().items;
      items.insert(items.end(), b.list().items.begin(), b.list().items.end());
      return Value::List(std::move(items), a.list().kind);
    }
    if (a.is_string() && !a.is_markup()) {
      Throw(ErrorKind::kType, "can only concatenate str (not \"" + TypeName(b) + "\") to str");
    }
    if (IsSeq(a)) {
      Throw(ErrorKind::kType, "can only concatenate " + TypeName(a) + " (not \"" + TypeName(b) +
                                  "\") to " + TypeName(a));
    }
    Unsupported("+", a, b);
  }
  if (op == "-") {
    if (!nums) Unsupported("-", a, b);
    if (any_float) return Value::Float(a.float_value() - b.float_value());
    int64_t r;
    if (__builtin_sub_overflow(a.int_value(), b.int_value(), &r)) Overflow();
    return Value::Int(r);
  }
  if (op == "*") {
    if (nums) {
      if (any_float) return Value::Float(a.float_value() * b.float_value());
      int64_t r;
      if (__builtin_mul_overflow(a.int_value(), b.int_value(), &r)) Overflow();
      return Value::Int(r);
    }
    if ((a.is_string() || IsSeq(a)) && (b.is_int() || b.is_bool()))
      return Repeat(in, a, b.int_value());
    if ((b.is_string() || IsSeq(b)) && (a.is_int() || a.is_bool()))
      return Repeat(in, b, a.int_value());
    Unsupported("*", a, b);
  }
  if (op == "/") {
    if (!nums) Unsupported("/", a, b);
    if (b.float_value() == 0.0) Throw(ErrorKind::kValue, "ZeroDivisionError: division by zero");
    return Value::Float(a.float_value() / b.float_value());
  }
  if (op == "//" || op == "%") {
    if (op == "%" && a.is_string())
      return Value::Str(PercentFormat(a.str(), b, a.is_markup()), a.is_markup());
    if (!nums) Unsupported(op, a, b);
    if (!any_float) {
      int64_t x = a.int_value(), y = b.int_value();
      if (y == 0) Throw(ErrorKind::kValue, "ZeroDivisionError: integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) {
        if (op == "%") return Value::Int(0);
        Overflow();
      }
      int64_t q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) {
        q -= 1;
        r += y;
      }
      return Value::Int(op == "//" ? q : r);
    }
    if (b.float_value() == 0.0) {
      Throw(ErrorKind::kValue, op == "//" ? "ZeroDivisionError: float floor division by zero"
                                          : "ZeroDivisionError: float modulo");
    }
    double div, mod;
    FloatDivmod(a.float_value(), b.float_value(), div, mod);
    return Value::Float(op == "//" ? div : mod);
  }
  if (op == "**") {
    if (!nums) Unsupported("** or pow()", a, b);
    if (!any_float && b.int_value() >= 0)
      return Value::Int(CheckedPow(a.int_value(), b.int_value()));
    if (a.float_value() == 0.0 && b.float_value() < 0) {
      Throw(ErrorKind::kValue, "ZeroDivisionError: 0.0 cannot be raised to a negative power");
    }
    return Value::Float(std::pow(a.float_value(), b.float_value()));
  }
  Throw(ErrorKind::kSyntax, "unknown operator " + std::string(op));
}

Value Negate(const Value& v, bool minus) {
  if (v.is_undefined()) FailUndefined(v);
  if (v.is_float()) return Value::Float(minus ? -v.float_value() : v.float_value());
  if (v.is_int() || v.is_bool()) {
    if (!minus) return Value::Int(v.int_value());
    if (v.int_value() == INT64_MIN) Overflow();
    return Value::Int(-v.int_value());
  }
  Throw(ErrorKind::kType, std::string("bad operand type for unary ") + (minus ? "-" : "+") + ": '" +
                              TypeName(v) + "'");
}

bool Contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::kUndefined:
      return false;
    case Kind::kString:
      if (!item.is_string()) {
        Throw(ErrorKind::kType,
              "'in <string>' requires string as left operand, not " + TypeName(item));
      }
      return FindBytes(container.str(), item.str()) != std::string::npos;
    case Kind::kList: {
      const ListData& l = container.list();
      if (l.kind == SeqKind::kIterator) {
        while (l.next < l.items.size()) {
          if (Equals(l.items[l.next++], item)) return true;
        }
        return false;
      }
      for (const Value& v : l.items) {
        if (Equals(v, item)) return true;
      }
      return false;
    }
    case Kind::kDict:
      if (item.is_dict() || (item.is_list() && !item.is_tuple())) {
        Throw(ErrorKind::kType, "unhashable type: '" + TypeName(item) + "'");
      }
      return container.dict().Find(item) != nullptr;
    default:
      Throw(ErrorKind::kType, "argument of type '" + TypeName(container) + "' is not iterable");
  }
}

bool CompareOp(std::string_view op, const Value& a, const Value& b) {
  if (op == "==") return Equals(a, b);
  if (op == "!=") return !Equals(a, b);
  if (op == "<") return LessThan(a, b);
  if (op == ">") return LessThan(b, a);
  if (op == "<=") return Equals(a, b) ? (LessThan(a, b), true) : LessThan(a, b);
  if (op == ">=") return Equals(a, b) ? (LessThan(b, a), true) : LessThan(b, a);
  if (op == "in") return Contains(b, a);
  if (op == "notin") return !Contains(b, a);
  Throw(ErrorKind::kSyntax, "unknown comparison " + std::string(op));
}

}  // namespace stet::tmpl
