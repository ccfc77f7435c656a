// Jinja2 3.1's sequence filters: map / select / reject / selectattr /
// rejectattr / unique / batch / slice / items return one-shot generators (as
// in Python, they are truthy, have no len() and are not JSON), sort and
// dictsort are stable like Python's sorted(), min / max keep the first winner.
#include <algorithm>

#include "template/python/builtins.h"
#include "template/python/unicode.h"

namespace stet::tmpl {
namespace {

Value Gen(std::vector<Value> items, const char* type = "generator") {
  return Value::Special(std::move(items), SeqKind::kIterator, type);
}

// Jinja's make_attrgetter; `attr` undefined/None means the item itself.
struct AttrGetter {
  AttrGetter(Interpreter& in, Value attr, bool lower = false, Value dflt = Value())
      : in(in), attr(std::move(attr)), lower(lower), dflt(std::move(dflt)) {}
  Interpreter& in;
  Value attr;
  bool lower;
  Value dflt;

  Value operator()(const Value& item) const {
    Value v = item;
    if (!attr.is_undefined() && !attr.is_none()) {
      if (attr.is_string()) {
        v = AttrPath(in, item, attr.str());
      } else {
        v = in.GetItem(item, attr);
      }
      if (!dflt.is_undefined() && !dflt.is_none() && v.is_undefined()) v = dflt;
    }
    if (lower && v.is_string()) v = Value::Str(PyStrLower(v.str()));
    return v;
  }
};

std::vector<Value> SortedBy(Interpreter& in, std::vector<Value> items,
                            const std::vector<Value>& keys, bool reverse) {
  in.CountIterations(static_cast<int64_t>(items.size()));
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return reverse ? LessThan(keys[b], keys[a]) : LessThan(keys[a], keys[b]);
  });
  std::vector<Value> out;
  out.reserve(items.size());
  for (size_t i : order) out.push_back(std::move(items[i]));
  return out;
}

// select / reject / selectattr / rejectattr.
Value SelectOrReject(Interpreter& in, const Value& input, CallArgs& args, bool select,
                     bool by_attr) {
  std::vector<Value> pos = args.positional;
  size_t off = 0;
  Value attr;
  if (by_attr) {
    if (pos.empty()) Throw(ErrorKind::kRuntime, "Missing parameter for attribute name");
    attr = pos[0];
    off = 1;
  }
  bool have_test = pos.size() > off;
  std::string test = have_test ? ToStr(pos[off]) : "";
  CallArgs test_args;
  if (have_test)
    test_args.positional.assign(pos.begin() + static_cast<std::ptrdiff_t>(off) + 1, pos.end());
  test_args.keyword = args.keyword;
  std::vector<Value> out;
  if (Truthy(input)) {
    AttrGetter get{in, attr};
    for (const Value& item : Iterate(input)) {
      in.CountIterations(1);
      Value x = get(item);
      CallArgs a = test_args;
      bool ok = have_test ? in.Test(test, x, a) : Truthy(x);
      if (ok == select) out.push_back(item);
    }
  }
  return Gen(std::move(out));
}

Value MapFilter(Interpreter& in, const Value& input, CallArgs& args) {
  std::vector<Value> out;
  bool by_attr = args.positional.empty();
  Value attr, dflt;
  if (by_attr) {
    bool found = false;
    for (auto& [k, v] : args.keyword) {
      if (k == "attribute")
        attr = v, found = true;
      else if (k == "default")
        dflt = v;
      else
        Throw(ErrorKind::kRuntime, "Unexpected keyword argument '" + k + "'");
    }
    if (!found) Throw(ErrorKind::kRuntime, "map requires a filter argument");
  }
  if (!Truthy(input)) return Gen({});
  AttrGetter get{in, attr, false, dflt};
  for (const Value& item : Iterate(input)) {
    in.CountIterations(1);
    if (by_attr) {
      out.push_back(get(item));
    } else {
      CallArgs fa;
      fa.positional.assign(args.positional.begin() + 1, args.positional.end());
      fa.keyword = args.keyword;
      out.push_back(in.Filter(ToStr(args.positional[0]), item, fa));
    }
  }
  return Gen(std::move(out));
}

Value Reverse(const Value& input) {
  if (input.is_string()) {
    std::vector<Value> chars = Iterate(input);
    std::string out;
    for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += it->str();
    return Value::Str(std::move(out), input.is_markup());
  }
  if (input.is_undefined()) return Gen({}, "reversed");
  if (!input.is_list() && !input.is_dict()) Throw(ErrorKind::kRuntime, "argument must be iterable");
  std::vector<Value> items = Iterate(input);
  std::reverse(items.begin(), items.end());
  if (input.is_iterator()) return Value::List(std::move(items));
  const char* type = "list_reverseiterator";
  if (input.is_dict())
    type = "dict_reversekeyiterator";
  else if (input.is_tuple())
    type = "reversed";
  else if (input.list().kind == SeqKind::kView) {
    const std::string& t = input.list().type_name;
    type = t == "range"         ? "range_iterator"
           : t == "dict_items"  ? "dict_reverseitemiterator"
           : t == "dict_values" ? "dict_reversevalueiterator"
                                : "dict_reversekeyiterator";
  }
  return Gen(std::move(items), type);
}

}  // namespace

std::optional<Value> ApplySeqFilter(Interpreter& in, std::string_view name, const Value& input,
                                    CallArgs& args) {
  if (name == "length" || name == "count") {
    Args a(args, name, {});
    return Value::Int(Length(input));
  }
  if (name == "list") {
    Args a(args, name, {});
    return Value::List(Iterate(input));
  }
  if (name == "first") {
    Args a(args, name, {});
    std::optional<Value> item = NextItem(input);
    if (!item) return Value::Undefined("No first item, sequence was empty.");
    return *item;
  }
  if (name == "last") {
    Args a(args, name, {});
    if (input.is_iterator())
      Throw(ErrorKind::kType, "'" + TypeName(input) + "' object is not reversible");
    std::vector<Value> items = Iterate(input);
    if (items.empty()) return Value::Undefined("No last item, sequence was empty.");
    return items.back();
  }
  if (name == "join") {
    Args a(args, name, {"d", "attribute"});
    std::string sep = ToStr(a.get_or(0, Value::Str("")));
    AttrGetter get{in, a.get(1)};
    std::string out;
    bool first = true;
    for (const Value& item : Iterate(input)) {
      if (!first) in.Append(out, sep);
      first = false;
      in.Append(out, ToStr(get(item)));
    }
    in.ReleaseBuffer(out);
    return Value::Str(std::move(out));
  }
  if (name == "items") {
    Args a(args, name, {});
    if (input.is_undefined()) return Gen({});
    if (!input.is_dict()) Throw(ErrorKind::kType, "Can only get item pairs from a mapping.");
    std::vector<Value> out;
    for (const auto& [k, v] : input.dict().entries) out.push_back(Value::Tuple({k, v}));
    return Gen(std::move(out));
  }
  if (name == "map") return MapFilter(in, input, args);
  if (name == "select" || name == "reject")
    return SelectOrReject(in, input, args, name == "select", false);
  if (name == "selectattr" || name == "rejectattr") {
    return SelectOrReject(in, input, args, name == "selectattr", true);
  }
  if (name == "reverse") {
    Args a(args, name, {});
    return Reverse(input);
  }
  if (name == "sort") {
    Args a(args, name, {"reverse", "case_sensitive", "attribute"});
    bool lower = !Truthy(a.get(1));
    std::vector<Value> items = Iterate(input);
    std::vector<Value> attrs;
    if (a.get(2).is_string()) {
      std::string spec = a.get(2).str();
      size_t start = 0;
      while (true) {
        size_t comma = spec.find(',', start);
        attrs.push_back(Value::Str(
            spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else {
      attrs.push_back(a.get(2));
    }
    std::vector<Value> keys;
    for (const Value& item : items) {
      std::vector<Value> key;
      for (const Value& attr : attrs) key.push_back(AttrGetter{in, attr, lower}(item));
      keys.push_back(Value::List(std::move(key)));
    }
    return Value::List(SortedBy(in, std::move(items), keys, Truthy(a.get(0))));
  }
  if (name == "dictsort") {
    Args a(args, name, {"case_sensitive", "by", "reverse"});
    std::string by = a.get_str(1).value_or("key");
    if (by != "key" && by != "value")
      Throw(ErrorKind::kRuntime, "You can only sort by either \"key\" or \"value\"");
    if (!input.is_dict())
      Throw(ErrorKind::kType, "'" + TypeName(input) + "' object has no attribute 'items'");
    std::vector<Value> items, keys;
    AttrGetter lower{in, Value(), !Truthy(a.get(0))};
    for (const auto& [k, v] : input.dict().entries) {
      items.push_back(Value::Tuple({k, v}));
      keys.push_back(lower(by == "key" ? k : v));
    }
    return Value::List(SortedBy(in, std::move(items), keys, Truthy(a.get(2))));
  }
  if (name == "unique") {
    Args a(args, name, {"case_sensitive", "attribute"});
    AttrGetter get{in, a.get(1), !Truthy(a.get(0))};
    std::vector<Value> out, seen;
    for (const Value& item : Iterate(input)) {
      Value key = get(item);
      if (key.is_dict() || (key.is_list() && !key.is_tuple())) {
        Throw(ErrorKind::kType, "unhashable type: '" + TypeName(key) + "'");
      }
      bool dup = false;
      in.CountIterations(static_cast<int64_t>(seen.size()) + 1);
      for (const Value& s : seen) dup = dup || Equals(s, key);
      if (dup) continue;
      seen.push_back(key);
      out.push_back(item);
    }
    return Gen(std::move(out));
  }
  if (name == "min" || name == "max") {
    Args a(args, name, {"case_sensitive", "attribute"});
    std::vector<Value> items = Iterate(input);
    if (items.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
    AttrGetter get{in, a.get(1), !Truthy(a.get(0))};
    size_t best = 0;
    Value best_key = get(items[0]);
    for (size_t i = 1; i < items.size(); ++i) {
      Value k = get(items[i]);
      if (name == "min" ? LessThan(k, best_key) : LessThan(best_key, k)) best = i, best_key = k;
    }
    return items[best];
  }
  if (name == "sum") {
    Args a(args, name, {"attribute", "start"});
    AttrGetter get{in, a.get(0)};
    Value total = a.get_or(1, Value::Int(0));
    for (const Value& item : Iterate(input)) total = BinaryOp(in, "+", total, get(item));
    return total;
  }
  if (name == "batch" || name == "slice") {
    Args a(args, name, {name == "batch" ? "linecount" : "slices", "fill_with"});
    int64_t n = ToInt64(a.get(0), name);
    Value fill = a.get(1);
    bool do_fill = !fill.is_undefined() && !fill.is_none();
    std::vector<Value> items = Iterate(input);
    std::vector<Value> out;
    if (name == "batch") {
      std::vector<Value> tmp;
      for (Value& item : items) {
        if (static_cast<int64_t>(tmp.size()) == n)
          out.push_back(Value::List(std::move(tmp))), tmp.clear();
        tmp.push_back(std::move(item));
      }
      if (!tmp.empty()) {
        if (do_fill && n > 0 && n <= (1 << 20)) {
          in.CheckSize((static_cast<size_t>(n) - tmp.size()) * sizeof(Value));
          while (static_cast<int64_t>(tmp.size()) < n) tmp.push_back(fill);
        }
        out.push_back(Value::List(std::move(tmp)));
      }
    } else {
      if (n <= 0) Throw(ErrorKind::kValue, "ZeroDivisionError: integer division or modulo by zero");
      in.CountIterations(n);
      int64_t len = static_cast<int64_t>(items.size());
      int64_t per = len / n, extra = len % n, offset = 0;
      for (int64_t k = 0; k < n; ++k) {
        int64_t start = offset + k * per;
        if (k < extra) ++offset;
        int64_t end = offset + (k + 1) * per;
        std::vector<Value> tmp(items.begin() + start, items.begin() + end);
        if (do_fill && k >= extra) tmp.push_back(fill);
        out.push_back(Value::List(std::move(tmp)));
      }
    }
    return Gen(std::move(out));
  }
  if (name == "groupby") {
    Args a(args, name, {"attribute", "default", "case_sensitive"});
    bool lower = !Truthy(a.get(2));
    std::vector<Value> items = Iterate(input);
    std::vector<Value> keys;
    for (const Value& item : items) keys.push_back(AttrGetter{in, a.get(0), lower, a.get(1)}(item));
    std::vector<size_t> order(items.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return LessThan(keys[x], keys[y]); });
    std::vector<Value> out;
    for (size_t i = 0; i < order.size();) {
      size_t j = i;
      std::vector<Value> group;
      while (j < order.size() && Equals(keys[order[j]], keys[order[i]]))
        group.push_back(items[order[j++]]);
      Value grouper = AttrGetter{in, a.get(0), false, a.get(1)}(group.front());
      out.push_back(Value::Tuple({grouper, Value::List(std::move(group))}));
      i = j;
    }
    return Value::List(std::move(out));
  }
  return std::nullopt;
}

}  // namespace stet::tmpl
