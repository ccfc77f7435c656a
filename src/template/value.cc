// Python semantics of Value: str(), repr(), truthiness, ==, <, iteration and
// len(). Recursive walks (repr, ==) stop at kMaxValueDepth so a cyclic
// namespace cannot overflow the stack, and charge the render budget per value
// visited: a list holding itself twice, 50 times over, is 2^50 values to walk.
// A value made during a render holds its bytes in the render's budget until
// it is freed (budget.h).
#include "template/value.h"

#include <algorithm>
#include <cmath>

#include "template/budget.h"
#include "template/python/pyformat.h"
#include "template/python/unicode.h"

namespace stet::tmpl {
namespace {

constexpr int kMaxValueDepth = 200;
// A dict entry: key and value slots plus its share of the string index.
constexpr uint64_t kDictEntryBytes = 2 * sizeof(Value) + 48;

// Makes `d` hold `payload` bytes (plus its overhead) in the running render's budget.
void Hold(HeapData& d, uint64_t payload) {
  if (Budget* b = t_active_budget) {
    b->Hold(payload + kValueOverhead);
    d.held = payload + kValueOverhead;
  }
}

void CheckDepth(int depth) {
  if (depth > kMaxValueDepth) Throw(ErrorKind::kLimit, "value nested deeper than 200 levels");
}

void ReprInto(const Value& v, std::string& out, int depth);

void ReprSeq(const ListData& l, std::string& out, int depth) {
  if (!l.repr.empty()) {
    out += l.repr;
    return;
  }
  if (l.kind == SeqKind::kIterator) {
    out += "<" + l.type_name + " object>";
    return;
  }
  if (l.kind == SeqKind::kView) out += l.type_name + "(";
  bool tuple = l.kind == SeqKind::kTuple;
  out += tuple ? '(' : '[';
  for (size_t i = 0; i < l.items.size(); ++i) {
    if (i) out += ", ";
    ReprInto(l.items[i], out, depth + 1);
    ReserveBytes(out.size());
  }
  if (tuple && l.items.size() == 1) out += ',';
  out += tuple ? ')' : ']';
  if (l.kind == SeqKind::kView) out += ')';
}

// Objects print through Repr() again (a namespace holding itself), so the
// depth of nested reprs is counted per thread, not per call.
thread_local int repr_depth = 0;

void ReprInto(const Value& v, std::string& out, int depth) {
  struct Guard {
    Guard() { ++repr_depth; }
    ~Guard() { --repr_depth; }
  } guard;
  CheckDepth(std::max(depth, repr_depth));
  ChargeSteps(1);
  switch (v.kind()) {
    case Kind::kString:
      if (v.is_markup()) {
        out += "Markup(" + PyStrRepr(v.str()) + ")";
      } else {
        out += PyStrRepr(v.str());
      }
      return;
    case Kind::kList:
      ReprSeq(v.list(), out, depth);
      return;
    case Kind::kDict: {
      out += '{';
      bool first = true;
      for (const auto& [k, val] : v.dict().entries) {
        if (!first) out += ", ";
        first = false;
        ReprInto(k, out, depth + 1);
        out += ": ";
        ReprInto(val, out, depth + 1);
        ReserveBytes(out.size());
      }
      out += '}';
      return;
    }
    case Kind::kUndefined:
      out += "Undefined";
      return;
    default:
      out += ToStr(v);
  }
}

bool EqualsAt(const Value& a, const Value& b, int depth) {
  CheckDepth(depth);
  ChargeSteps(1);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.float_value() == b.float_value();
    return a.int_value() == b.int_value();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      if (a.str().size() != b.str().size()) return false;
      ChargeCopy(a.str().size());
      return a.str() == b.str();
    case Kind::kList: {
      const ListData& x = a.list();
      const ListData& y = b.list();
      if (x.kind == SeqKind::kIterator || y.kind == SeqKind::kIterator) return &x == &y;
      if (x.type_name != y.type_name) return false;
      if (x.kind != y.kind || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i) {
        if (!EqualsAt(x.items[i], y.items[i], depth + 1)) return false;
      }
      return true;
    }
    case Kind::kDict: {
      const DictData& x = a.dict();
      const DictData& y = b.dict();
      if (x.entries.size() != y.entries.size()) return false;
      for (const auto& [k, v] : x.entries) {
        const Value* other = y.Find(k);
        if (other == nullptr || !EqualsAt(v, *other, depth + 1)) return false;
      }
      return true;
    }
    case Kind::kObject:
      return a.object() == b.object();
    default:
      return false;
  }
}

[[noreturn]] void NotOrderable(const Value& a, const Value& b) {
  Throw(ErrorKind::kType,
        "'<' not supported between instances of '" + TypeName(a) + "' and '" + TypeName(b) + "'");
}

bool LessAt(const Value& a, const Value& b, int depth) {
  CheckDepth(depth);
  ChargeSteps(1);
  if (a.is_undefined()) FailUndefined(a);
  if (b.is_undefined()) FailUndefined(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.float_value() < b.float_value();
    return a.int_value() < b.int_value();
  }
  if (a.is_string() && b.is_string()) {
    ChargeCopy(std::min(a.str().size(), b.str().size()));
    return a.str() < b.str();
  }
  if (a.is_list() && b.is_list() && a.list().kind == b.list().kind &&
      a.list().kind != SeqKind::kIterator) {
    const auto& x = a.list().items;
    const auto& y = b.list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!EqualsAt(x[i], y[i], depth + 1)) return LessAt(x[i], y[i], depth + 1);
    }
    return x.size() < y.size();
  }
  NotOrderable(a, b);
}

}  // namespace

HeapData::~HeapData() {
  if (held != 0) {
    if (Budget* b = t_active_budget) b->Release(held);
  }
}

void DictData::Grow() {
  if (held == 0) return;  // not yet a value: Value::Dict holds all its entries
  if (Budget* b = t_active_budget) {
    b->Hold(kDictEntryBytes);
    held += kDictEntryBytes;
  }
}

Value Object::Call(Interpreter&, CallArgs&) const {
  Throw(ErrorKind::kType, "'" + TypeName() + "' object is not callable");
}

std::optional<Value> Object::GetAttr(std::string_view) const { return std::nullopt; }

ListData::~ListData() = default;
DictData::~DictData() = default;
DictData::DictData(const DictData& other)
    : HeapData(other), entries(other.entries), str_index_(other.str_index_) {}

const Value* DictData::FindStr(std::string_view key) const {
  ChargeScan(key.size());  // hashing it
  auto it = str_index_.find(key);
  return it == str_index_.end() ? nullptr : &entries[it->second].second;
}

const Value* DictData::Find(const Value& key) const {
  if (key.is_string()) return FindStr(key.str());
  ChargeSteps(entries.size());
  for (const auto& [k, v] : entries) {
    if (!k.is_string() && Equals(k, key)) return &v;
  }
  return nullptr;
}

void DictData::Set(Value key, Value value) {
  if (key.is_string()) {
    ChargeScan(key.str().size());
    auto it = str_index_.find(key.str());
    if (it != str_index_.end()) {
      entries[it->second].second = std::move(value);
      return;
    }
    Grow();
    str_index_.emplace(key.str(), entries.size());
    entries.emplace_back(std::move(key), std::move(value));
    return;
  }
  ChargeSteps(entries.size());
  for (auto& [k, v] : entries) {
    if (!k.is_string() && Equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  Grow();
  entries.emplace_back(std::move(key), std::move(value));
}

Value Value::Undefined(std::string message, bool security) {
  Value v(Kind::kUndefined);
  auto d = std::make_shared<UndefinedData>();
  Hold(*d, message.size());
  d->message = std::move(message);
  d->security = security;
  v.heap_ = std::move(d);
  return v;
}

Value Value::Str(std::string s, bool markup) {
  Value v(Kind::kString);
  v.markup_ = markup;
  auto d = std::make_shared<StringData>(std::move(s));
  Hold(*d, d->s.size());
  v.heap_ = std::move(d);
  return v;
}

uint32_t CheckedNesting(uint32_t deepest_child) {
  if (deepest_child + 1 > kMaxNesting) {
    Throw(ErrorKind::kLimit, "value nested deeper than " + std::to_string(kMaxNesting) + " levels");
  }
  return deepest_child + 1;
}

Value Value::List(std::vector<Value> items, SeqKind kind) {
  Value v(Kind::kList);
  uint32_t deepest = 0;
  for (const Value& item : items) deepest = std::max(deepest, item.nesting());
  auto d = std::make_shared<ListData>();
  Hold(*d, items.size() * sizeof(Value));
  d->nesting = CheckedNesting(deepest);
  d->items = std::move(items);
  d->kind = kind;
  v.heap_ = std::move(d);
  return v;
}

Value Value::Special(std::vector<Value> items, SeqKind kind, std::string type_name,
                     std::string repr) {
  Value v = List(std::move(items), kind);
  auto& d = static_cast<ListData&>(*v.heap_);
  d.type_name = std::move(type_name);
  d.repr = std::move(repr);
  return v;
}

Value Value::Dict(std::shared_ptr<DictData> d) {
  if (d->held == 0) Hold(*d, d->entries.size() * kDictEntryBytes);
  uint32_t deepest = 0;
  for (const auto& [k, val] : d->entries) deepest = std::max({deepest, k.nesting(), val.nesting()});
  d->nesting = CheckedNesting(deepest);
  Value v(Kind::kDict);
  v.heap_ = std::move(d);
  return v;
}

Value Value::Obj(std::shared_ptr<Object> o) {
  if (o->held == 0) Hold(*o, kValueOverhead);
  Value v(Kind::kObject);
  v.heap_ = std::move(o);
  return v;
}

std::string Value::undefined_message() const {
  if (heap_ == nullptr) return "value is undefined";
  return static_cast<const UndefinedData&>(*heap_).message;
}

bool Value::undefined_security() const {
  return heap_ != nullptr && static_cast<const UndefinedData&>(*heap_).security;
}

void FailUndefined(const Value& v) {
  Throw(v.undefined_security() ? ErrorKind::kSecurity : ErrorKind::kUndefined,
        v.undefined_message());
}

std::string TypeName(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return v.is_markup() ? "Markup" : "str";
    case Kind::kList: {
      const ListData& l = v.list();
      if (l.kind == SeqKind::kTuple) return "tuple";
      if (l.kind == SeqKind::kList) return "list";
      return l.type_name;
    }
    case Kind::kDict:
      return "dict";
    case Kind::kObject:
      return v.object()->TypeName();
  }
  return "object";
}

std::string ObjectTypeRepr(const Value& v) {
  if (v.is_none()) return "None";
  return TypeName(v) + " object";
}

bool Truthy(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return v.bool_value();
    case Kind::kInt:
      return v.int_value() != 0;
    case Kind::kFloat:
      return v.float_value() != 0.0;
    case Kind::kString:
      return !v.str().empty();
    case Kind::kList:
      return v.list().kind == SeqKind::kIterator || !v.list().items.empty();
    case Kind::kDict:
      return !v.dict().entries.empty();
    case Kind::kObject:
      return true;
  }
  return false;
}

std::string ToStr(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return "";
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return v.bool_value() ? "True" : "False";
    case Kind::kInt:
      return std::to_string(v.int_value());
    case Kind::kFloat:
      return PyFloatRepr(v.float_value());
    case Kind::kString:
      ChargeCopy(v.str().size());
      return v.str();
    case Kind::kObject:
      return v.object()->Repr();
    default:
      return Repr(v);
  }
}

std::string Repr(const Value& v) {
  std::string out;
  ReprInto(v, out, 0);
  return out;
}

bool Equals(const Value& a, const Value& b) { return EqualsAt(a, b, 0); }
bool LessThan(const Value& a, const Value& b) { return LessAt(a, b, 0); }

std::vector<Value> Iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return {};
    case Kind::kList: {
      const ListData& l = v.list();
      ReserveScratch(l.items.size() * sizeof(Value));
      ChargeSteps(l.items.size());
      if (l.kind != SeqKind::kIterator) return l.items;
      std::vector<Value> rest(
          l.items.begin() + static_cast<std::ptrdiff_t>(std::min(l.next, l.items.size())),
          l.items.end());
      l.next = l.items.size();
      return rest;
    }
    case Kind::kDict: {
      ReserveScratch(v.dict().entries.size() * sizeof(Value));
      ChargeSteps(v.dict().entries.size());
      std::vector<Value> keys;
      keys.reserve(v.dict().entries.size());
      for (const auto& e : v.dict().entries) keys.push_back(e.first);
      return keys;
    }
    case Kind::kString: {
      // Iterating a Markup yields plain str characters (str.__iter__).
      std::vector<Value> chars;
      const std::string& s = v.str();
      ReserveScratch(s.size() * sizeof(Value));
      chars.reserve(s.size());
      if (IsAscii(s)) {
        for (char c : s) chars.push_back(Value::Str(std::string(1, c)));
      } else {
        for (char32_t c : DecodeUtf8(s)) {
          std::string one;
          AppendUtf8(one, c);
          chars.push_back(Value::Str(std::move(one)));
        }
      }
      return chars;
    }
    default:
      Throw(ErrorKind::kType, "'" + TypeName(v) + "' object is not iterable");
  }
}

std::optional<Value> NextItem(const Value& v) {
  if (v.is_list()) {
    const ListData& l = v.list();
    size_t i = l.kind == SeqKind::kIterator ? l.next : 0;
    if (i >= l.items.size()) return std::nullopt;
    if (l.kind == SeqKind::kIterator) ++l.next;
    return l.items[i];
  }
  if (v.is_dict()) {
    if (v.dict().entries.empty()) return std::nullopt;
    return v.dict().entries.front().first;
  }
  std::vector<Value> items = Iterate(v);
  if (items.empty()) return std::nullopt;
  return items.front();
}

int64_t Length(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return 0;
    case Kind::kString:
      return static_cast<int64_t>(CodepointCount(v.str()));
    case Kind::kList:
      if (v.list().kind == SeqKind::kIterator) break;
      return static_cast<int64_t>(v.list().items.size());
    case Kind::kDict:
      return static_cast<int64_t>(v.dict().entries.size());
    default:
      break;
  }
  Throw(ErrorKind::kType, "object of type '" + TypeName(v) + "' has no len()");
}

}  // namespace stet::tmpl
