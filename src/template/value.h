// Value: the dynamically typed value of the template engine, modelled on the
// Python objects Jinja2 sees when HF transformers renders a chat template
// (undefined, None, bool, int, float, str, list/tuple/iterator, dict, objects).
// Invariant: lists and dicts are immutable once wrapped in a Value (the sandbox
// forbids mutation), so copies share storage; only Object subclasses
// (namespace, loop) carry mutable state.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "template/error.h"

namespace stet::tmpl {

class Value;
class Interpreter;

enum class Kind : uint8_t {
  kUndefined,
  kNone,
  kBool,
  kInt,
  kFloat,
  kString,
  kList,  // list, tuple or one-shot iterator (see SeqKind)
  kDict,
  kObject,
};

enum class SeqKind : uint8_t {
  kList,
  kTuple,
  kIterator,  // a Python generator/iterator: always truthy, no len(), not JSON
  kView,      // dict_items / dict_keys / dict_values / range: len() and truthiness, not JSON
};

struct HeapData {
  virtual ~HeapData();  // gives `held` back to the running render's budget
  // Containers: 1 + the deepest nested container. Capped (kMaxNesting) so that
  // freeing a value can never recurse deep enough to exhaust the stack.
  mutable uint32_t nesting = 1;
  // Bytes this value holds in the budget of the render that made it (0 when
  // made outside a render: parsed literals, the context).
  uint64_t held = 0;
};

inline constexpr uint32_t kMaxNesting = 1000;
// 1 + deepest_child, or a kLimit error beyond kMaxNesting.
uint32_t CheckedNesting(uint32_t deepest_child);

struct StringData : HeapData {
  explicit StringData(std::string v) : s(std::move(v)) {}
  std::string s;
};

struct UndefinedData : HeapData {
  std::string message;    // what UndefinedError says when this value is used
  bool security = false;  // an attribute the sandbox refused (SecurityError on use)
};

// Destructors are out of line: Value is incomplete here.
struct ListData : HeapData {
  ~ListData() override;
  std::vector<Value> items;
  SeqKind kind = SeqKind::kList;
  std::string type_name;  // kIterator / kView: "generator", "dict_items", "range", ...
  std::string repr;       // overrides the computed repr (range(0, 3))
  // kIterator: items before `next` were consumed (a Python iterator runs once).
  mutable size_t next = 0;
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// An insertion-ordered dict. Keys compare with Python equality (1 == 1.0 == True).
struct DictData : HeapData {
  DictData() = default;
  DictData(const DictData&);
  ~DictData() override;
  std::vector<std::pair<Value, Value>> entries;
  const Value* Find(const Value& key) const;
  const Value* FindStr(std::string_view key) const;
  void Set(Value key, Value value);  // overwrites in place, as Python does

 private:
  void Grow();  // a new entry: held in the budget once the dict is a value
  std::unordered_map<std::string, size_t, StringHash, std::equal_to<>> str_index_;
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// Namespaces, loop contexts, macros, builtins and bound methods. Always
// created by make_shared, so methods can hand out owning references to self.
class Object : public HeapData, public std::enable_shared_from_this<Object> {
 public:
  virtual std::string TypeName() const = 0;
  virtual std::string Repr() const { return "<" + TypeName() + " object>"; }
  virtual bool Callable() const { return false; }
  virtual Value Call(Interpreter& interp, CallArgs& args) const;
  // nullopt: no such attribute (Jinja then yields an undefined).
  virtual std::optional<Value> GetAttr(std::string_view name) const;
};

class Value {
 public:
  Value() = default;  // undefined
  static Value Undefined(std::string message, bool security = false);
  static Value None() { return Value(Kind::kNone); }
  static Value Bool(bool b) {
    Value v(Kind::kBool);
    v.b_ = b;
    return v;
  }
  static Value Int(int64_t i) {
    Value v(Kind::kInt);
    v.i_ = i;
    return v;
  }
  static Value Float(double f) {
    Value v(Kind::kFloat);
    v.f_ = f;
    return v;
  }
  static Value Str(std::string s, bool markup = false);
  static Value List(std::vector<Value> items, SeqKind kind = SeqKind::kList);
  // A generator / iterator (kIterator) or view (kView) of Python type `type_name`.
  static Value Special(std::vector<Value> items, SeqKind kind, std::string type_name,
                       std::string repr = {});
  static Value Tuple(std::vector<Value> items) { return List(std::move(items), SeqKind::kTuple); }
  static Value Dict(std::shared_ptr<DictData> d);
  static Value Obj(std::shared_ptr<Object> o);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const {
    return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool;
  }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_markup() const { return kind_ == Kind::kString && markup_; }
  bool is_iterator() const { return is_list() && list().kind == SeqKind::kIterator; }
  bool is_tuple() const { return is_list() && list().kind == SeqKind::kTuple; }
  // list, tuple or range: supports [index] and [a:b].
  bool is_indexable() const {
    return is_list() && (list().kind == SeqKind::kList || list().kind == SeqKind::kTuple ||
                         (list().kind == SeqKind::kView && list().type_name == "range"));
  }

  bool bool_value() const { return b_; }
  int64_t int_value() const { return kind_ == Kind::kBool ? (b_ ? 1 : 0) : i_; }
  double float_value() const {
    return kind_ == Kind::kFloat ? f_ : static_cast<double>(int_value());
  }
  const std::string& str() const { return static_cast<const StringData&>(*heap_).s; }
  const ListData& list() const { return static_cast<const ListData&>(*heap_); }
  const DictData& dict() const { return static_cast<const DictData&>(*heap_); }
  Object* object() const { return static_cast<Object*>(heap_.get()); }
  // Python's `is` for heap values: the same object.
  const void* identity() const { return heap_.get(); }
  uint32_t nesting() const { return (is_list() || is_dict() || is_object()) ? heap_->nesting : 0; }
  // The message an UndefinedError would carry.
  std::string undefined_message() const;
  bool undefined_security() const;

 private:
  explicit Value(Kind k) : kind_(k) {}
  Kind kind_ = Kind::kUndefined;
  bool markup_ = false;
  union {
    bool b_;
    int64_t i_ = 0;
    double f_;
  };
  std::shared_ptr<HeapData> heap_;
};

// Python semantics.
std::string TypeName(const Value& v);  // type(v).__name__
bool Truthy(const Value& v);
std::string ToStr(const Value& v);  // str(v); undefined renders as ""
std::string Repr(const Value& v);
bool Equals(const Value& a, const Value& b);
bool LessThan(const Value& a, const Value& b);  // a < b, TypeError when unordered
// The items a Python `for` loop over v yields (dict: keys, str: characters).
// TypeError for non-iterables; an undefined yields nothing. Consumes an
// iterator: a second pass over it yields nothing, as in Python.
std::vector<Value> Iterate(const Value& v);
// next(iter(v)): nullopt when exhausted; advances an iterator by one.
std::optional<Value> NextItem(const Value& v);
// len(v), TypeError when v has none.
int64_t Length(const Value& v);
// Raises the UndefinedError an undefined value carries.
[[noreturn]] void FailUndefined(const Value& v);
// object_type_repr: "dict object", "None", ...
std::string ObjectTypeRepr(const Value& v);

// Conversion from nlohmann::json / ordered_json (any basic_json). Nesting
// deeper than kMaxJsonDepth is a kLimit error.
inline constexpr int kMaxJsonDepth = 256;
template <typename Json>
Value FromJson(const Json& j, int depth = 0) {
  if (depth > kMaxJsonDepth) Throw(ErrorKind::kLimit, "context nested deeper than 256 levels");
  switch (j.type()) {
    case Json::value_t::null:
      return Value::None();
    case Json::value_t::boolean:
      return Value::Bool(j.template get<bool>());
    case Json::value_t::number_integer:
      return Value::Int(j.template get<int64_t>());
    case Json::value_t::number_unsigned: {
      uint64_t u = j.template get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value::Int(static_cast<int64_t>(u));
      return Value::Float(static_cast<double>(u));
    }
    case Json::value_t::number_float:
      return Value::Float(j.template get<double>());
    case Json::value_t::string:
      return Value::Str(j.template get<std::string>());
    case Json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(FromJson(e, depth + 1));
      return Value::List(std::move(items));
    }
    case Json::value_t::object: {
      auto d = std::make_shared<DictData>();
      for (auto it = j.begin(); it != j.end(); ++it)
        d->Set(Value::Str(it.key()), FromJson(it.value(), depth + 1));
      return Value::Dict(std::move(d));
    }
    default:
      return Value::None();
  }
}

}  // namespace stet::tmpl
