// Expression evaluation and Jinja's sandboxed attribute / item / call
// protocol: `a.b` tries the Python attribute first, then the key; `a[b]` the
// key first, then the attribute; misses yield an undefined carrying the
// message Jinja would raise when it is used; mutating methods are refused.
#include <cmath>

#include "template/interpreter.h"
#include "template/objects.h"
#include "template/python/builtins.h"
#include "template/python/unicode.h"

namespace stet::tmpl {
namespace {

Value MissingAttr(const Value& obj, std::string_view name) {
  return Value::Undefined("'" + ObjectTypeRepr(obj) + "' has no attribute '" + std::string(name) +
                          "'");
}

Value MissingItem(const Value& obj, const Value& key) {
  if (key.is_string()) return MissingAttr(obj, key.str());
  return Value::Undefined(ObjectTypeRepr(obj) + " has no element " + Repr(key));
}

bool IsDunder(std::string_view name) {
  return name.size() > 4 && name.substr(0, 2) == "__" && name.substr(name.size() - 2) == "__";
}

// Python's slice.indices(): normalised start/stop/step for a sequence of `len`.
void SliceIndices(const Value& start_v, const Value& stop_v, const Value& step_v, int64_t len,
                  int64_t& start, int64_t& stop, int64_t& step) {
  auto as_index = [](const Value& v) {
    if (!v.is_int() && !v.is_bool()) {
      Throw(ErrorKind::kType, "slice indices must be integers or None or have an __index__ method");
    }
    return v.int_value();
  };
  step = step_v.is_none() || step_v.is_undefined() ? 1 : as_index(step_v);
  if (step == 0) Throw(ErrorKind::kValue, "slice step cannot be zero");
  auto adjust = [&](const Value& v, int64_t dflt) {
    if (v.is_none() || v.is_undefined()) return dflt;
    int64_t i = as_index(v);
    if (i < 0) {
      i += len;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= len) {
      i = step < 0 ? len - 1 : len;
    }
    return i;
  };
  start = adjust(start_v, step < 0 ? len - 1 : 0);
  stop = adjust(stop_v, step < 0 ? -1 : len);
}

// Calls f(i) for each index of the slice a:b:c of a sequence of `len`, without
// materialising the indices (a list of them would be 8 bytes per element).
template <typename F>
void ForEachSliceIndex(const Value& a, const Value& b, const Value& c, size_t len, F f) {
  int64_t start, stop, step;
  SliceIndices(a, b, c, static_cast<int64_t>(len), start, stop, step);
  // A step near INT64_MAX would overflow `i`: the next index is then past the end anyway.
  for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
    f(static_cast<size_t>(i));
    if (__builtin_add_overflow(i, step, &i)) break;
  }
}

Value ApplySlice(const Value& obj, const Value& a, const Value& b, const Value& c) {
  if (obj.is_undefined()) FailUndefined(obj);
  if (obj.is_string()) {
    std::vector<char32_t> cps = DecodeUtf8(obj.str());
    std::string out;
    ForEachSliceIndex(a, b, c, cps.size(), [&](size_t i) { AppendUtf8(out, cps[i]); });
    ChargeScan(out.size());
    return Value::Str(std::move(out), obj.is_markup());
  }
  if (obj.is_indexable()) {
    const auto& items = obj.list().items;
    std::vector<Value> out;
    ReserveScratch(items.size() * sizeof(Value));
    ForEachSliceIndex(a, b, c, items.size(), [&](size_t i) { out.push_back(items[i]); });
    ChargeSteps(out.size());
    return Value::List(std::move(out),
                       obj.list().kind == SeqKind::kTuple ? SeqKind::kTuple : SeqKind::kList);
  }
  return Value::Undefined(ObjectTypeRepr(obj) + " has no element slice(" + Repr(a) + ", " +
                          Repr(b) + ", " + Repr(c) + ")");
}

}  // namespace

Value BoundMethod::Call(Interpreter& in, CallArgs& args) const {
  return CallMethod(in, self_, name_, args);
}

Value Interpreter::GetAttr(const Value& obj, std::string_view name) {
  if (obj.is_undefined()) FailUndefined(obj);
  if (IsDunder(name)) {
    return Value::Undefined("access to attribute '" + std::string(name) + "' of '" + TypeName(obj) +
                                "' object is unsafe.",
                            true);
  }
  if (obj.is_object()) {
    if (auto v = obj.object()->GetAttr(name)) return *v;
    return MissingAttr(obj, name);
  }
  if (auto v = BuiltinAttr(obj, name)) return *v;
  if (obj.is_dict()) {
    if (const Value* v = obj.dict().FindStr(name)) return *v;
  }
  return MissingAttr(obj, name);
}

Value Interpreter::GetItem(const Value& obj, const Value& key) {
  switch (obj.kind()) {
    case Kind::kUndefined:
      FailUndefined(obj);
    case Kind::kDict:
      if (const Value* v = obj.dict().Find(key)) return *v;
      break;
    case Kind::kList:
      if (obj.is_indexable() && (key.is_int() || key.is_bool())) {
        const auto& items = obj.list().items;
        int64_t i = key.int_value();
        if (i < 0) i += static_cast<int64_t>(items.size());
        if (i >= 0 && i < static_cast<int64_t>(items.size())) return items[static_cast<size_t>(i)];
        return MissingItem(obj, key);
      }
      break;
    case Kind::kString:
      if (key.is_int() || key.is_bool()) {
        std::vector<char32_t> cps = DecodeUtf8(obj.str());
        int64_t i = key.int_value();
        if (i < 0) i += static_cast<int64_t>(cps.size());
        if (i >= 0 && i < static_cast<int64_t>(cps.size())) {
          std::string ch;
          AppendUtf8(ch, cps[static_cast<size_t>(i)]);
          return Value::Str(std::move(ch), obj.is_markup());
        }
        return MissingItem(obj, key);
      }
      break;
    default:
      break;
  }
  if (key.is_string()) {
    if (IsDunder(key.str())) return GetAttr(obj, key.str());
    if (obj.is_object()) {
      if (auto v = obj.object()->GetAttr(key.str())) return *v;
    } else if (auto v = BuiltinAttr(obj, key.str())) {
      return *v;
    }
  }
  return MissingItem(obj, key);
}

Value Interpreter::Call(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) FailUndefined(callee);
  if (callee.is_object() && callee.object()->Callable()) return callee.object()->Call(*this, args);
  Throw(ErrorKind::kType, "'" + TypeName(callee) + "' object is not callable");
}

void Interpreter::EvalArgs(const Node& n, const ScopePtr& scope, CallArgs& args) {
  for (const NodePtr& a : n.list) args.positional.push_back(Eval(*a, scope));
  for (size_t i = 0; i < n.kw.size(); ++i)
    args.keyword.emplace_back(n.names[i], Eval(*n.kw[i], scope));
  if (n.c) {
    for (Value& v : Iterate(Eval(*n.c, scope))) args.positional.push_back(std::move(v));
  }
  if (n.d) {
    Value d = Eval(*n.d, scope);
    if (!d.is_dict())
      Throw(ErrorKind::kType, "argument after ** must be a mapping, not " + TypeName(d));
    for (const auto& [k, v] : d.dict().entries) {
      if (!k.is_string()) Throw(ErrorKind::kType, "keywords must be strings");
      args.keyword.emplace_back(k.str(), v);
    }
  }
}

Value Interpreter::EvalCall(const Node& n, const ScopePtr& scope, const Value* input,
                            const Value* caller) {
  if (n.kind == NodeKind::kFilter || n.kind == NodeKind::kTest) {
    Value in_v = input ? *input : Eval(*n.a, scope);
    bool is_filter = n.kind == NodeKind::kFilter;
    if (n.unknown) {
      Throw(ErrorKind::kRuntime,
            std::string("No ") + (is_filter ? "filter" : "test") + " named '" + n.str + "' found.");
    }
    CallArgs args;
    EvalArgs(n, scope, args);
    if (is_filter) return Filter(n.str, in_v, args);
    return Value::Bool(Test(n.str, in_v, args));
  }
  Value callee = Eval(*n.a, scope);
  CallArgs args;
  EvalArgs(n, scope, args);
  if (caller) args.keyword.emplace_back("caller", *caller);
  return Call(callee, args);
}

Value Interpreter::EvalCompare(const Node& n, const ScopePtr& scope) {
  Value left = Eval(*n.a, scope);
  for (size_t i = 0; i < n.list.size(); ++i) {
    Value right = Eval(*n.list[i], scope);
    if (!CompareOp(n.names[i], left, right)) return Value::Bool(false);
    left = std::move(right);
  }
  return Value::Bool(true);
}

Value Interpreter::Eval(const Node& n, const ScopePtr& scope) {
  DepthGuard guard(this);
  try {
    switch (n.kind) {
      case NodeKind::kLiteral:
        return n.value;
      case NodeKind::kName:
        return Lookup(n.str, scope);
      case NodeKind::kList:
      case NodeKind::kTuple: {
        std::vector<Value> items;
        items.reserve(n.list.size());
        for (const NodePtr& c : n.list) items.push_back(Eval(*c, scope));
        return Value::List(std::move(items),
                           n.kind == NodeKind::kTuple ? SeqKind::kTuple : SeqKind::kList);
      }
      case NodeKind::kDict: {
        auto d = std::make_shared<DictData>();
        for (size_t i = 0; i < n.list.size(); ++i) {
          Value k = Eval(*n.list[i], scope);
          if (k.is_list() && !k.is_tuple()) Throw(ErrorKind::kType, "unhashable type: 'list'");
          if (k.is_dict()) Throw(ErrorKind::kType, "unhashable type: 'dict'");
          d->Set(std::move(k), Eval(*n.kw[i], scope));
        }
        return Value::Dict(std::move(d));
      }
      case NodeKind::kGetAttr:
        return GetAttr(Eval(*n.a, scope), n.str);
      case NodeKind::kGetItem: {
        Value obj = Eval(*n.a, scope);
        if (n.b->kind == NodeKind::kSlice) {
          const Node& s = *n.b;
          Value a = s.a ? Eval(*s.a, scope) : Value::None();
          Value b = s.b ? Eval(*s.b, scope) : Value::None();
          Value c = s.c ? Eval(*s.c, scope) : Value::None();
          return ApplySlice(obj, a, b, c);
        }
        return GetItem(obj, Eval(*n.b, scope));
      }
      case NodeKind::kCall:
      case NodeKind::kFilter:
      case NodeKind::kTest:
        return EvalCall(n, scope, nullptr, nullptr);
      case NodeKind::kNot:
        return Value::Bool(!Truthy(Eval(*n.a, scope)));
      case NodeKind::kNeg:
      case NodeKind::kPos:
        return Negate(Eval(*n.a, scope), n.kind == NodeKind::kNeg);
      case NodeKind::kAnd: {
        Value a = Eval(*n.a, scope);
        return Truthy(a) ? Eval(*n.b, scope) : a;
      }
      case NodeKind::kOr: {
        Value a = Eval(*n.a, scope);
        return Truthy(a) ? a : Eval(*n.b, scope);
      }
      case NodeKind::kBinary: {
        Value a = Eval(*n.a, scope);
        Value b = Eval(*n.b, scope);
        return BinaryOp(*this, n.str, a, b);
      }
      case NodeKind::kCompare:
        return EvalCompare(n, scope);
      case NodeKind::kCondExpr:
        if (Truthy(Eval(*n.a, scope))) return Eval(*n.b, scope);
        if (n.c) return Eval(*n.c, scope);
        return Value::Undefined("the inline if-expression on line " + std::to_string(n.line) +
                                " evaluated to false and no else section was defined.");
      case NodeKind::kSlice:
        Throw(ErrorKind::kSyntax, "slice outside a subscript");
      default:
        Throw(ErrorKind::kSyntax, "statement used as an expression");
    }
  } catch (TemplateError& e) {
    e.PlaceAt(n.line, n.column);
    throw;
  }
}

}  // namespace stet::tmpl
