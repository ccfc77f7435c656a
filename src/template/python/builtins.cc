// Helpers shared by the builtin filters, tests, globals and methods: Python
// argument binding and the small conversions they all need.
#include "template/python/builtins.h"

#include <algorithm>

#include "template/python/pyformat.h"

namespace stet::tmpl {

Args::Args(const CallArgs& args, std::string_view fn, std::initializer_list<const char*> params)
    : v_(params.size()) {
  std::vector<std::string_view> names(params.begin(), params.end());
  if (args.positional.size() > names.size()) {
    Throw(ErrorKind::kType, std::string(fn) + "() takes at most " + std::to_string(names.size()) +
                                " argument(s) (" + std::to_string(args.positional.size()) +
                                " given)");
  }
  for (size_t i = 0; i < args.positional.size(); ++i) v_[i] = args.positional[i];
  for (const auto& [k, v] : args.keyword) {
    auto it = std::find(names.begin(), names.end(), k);
    if (it == names.end()) {
      Throw(ErrorKind::kType,
            std::string(fn) + "() got an unexpected keyword argument '" + k + "'");
    }
    size_t i = static_cast<size_t>(it - names.begin());
    if (v_[i])
      Throw(ErrorKind::kType, std::string(fn) + "() got multiple values for argument '" + k + "'");
    v_[i] = v;
  }
}

const Value& Args::get(size_t i) const {
  static const Value kUndefined{};
  return has(i) ? *v_[i] : kUndefined;
}

int64_t Args::get_int(size_t i, int64_t fallback, std::string_view what) const {
  if (!has(i)) return fallback;
  return ToInt64(*v_[i], what);
}

std::optional<std::string> Args::get_str(size_t i) const {
  if (!has(i) || v_[i]->is_none()) return std::nullopt;
  if (!v_[i]->is_string()) {
    Throw(ErrorKind::kType, "expected a string argument, got " + TypeName(*v_[i]));
  }
  return v_[i]->str();
}

Value MakeStr(Interpreter& in, std::string s, bool markup) {
  in.CheckSize(s.size());
  return Value::Str(std::move(s), markup);
}

std::string Escape(const Value& v) {
  if (v.is_markup()) return v.str();
  return HtmlEscape(ToStr(v));
}

int64_t ToInt64(const Value& v, std::string_view what) {
  if (v.is_int() || v.is_bool()) return v.int_value();
  if (v.is_undefined()) FailUndefined(v);
  Throw(ErrorKind::kType,
        std::string(what) + ": '" + TypeName(v) + "' object cannot be interpreted as an integer");
}

Value AttrPath(Interpreter& in, const Value& v, std::string_view path) {
  Value cur = v;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string_view part =
        path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(),
                                               [](char c) { return c >= '0' && c <= '9'; });
    if (digits && part.size() < 18) {
      cur = in.GetItem(cur, Value::Int(std::stoll(std::string(part))));
    } else {
      cur = in.GetItem(cur, Value::Str(std::string(part)));
    }
    if (dot == std::string_view::npos) return cur;
    start = dot + 1;
  }
}

}  // namespace stet::tmpl
