// Internal registry of Jinja's builtins as HF transformers configures them:
// filters, tests, globals (range, namespace, dict, cycler, joiner,
// raise_exception, strftime_now) and the Python methods templates call on
// str / dict / list values. Each lives in its own .cc; this header is the seam.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "template/interpreter.h"
#include "template/value.h"

namespace stet::tmpl {

// Python-style argument binding for a builtin with parameters `params`.
// TypeError for surplus positionals, unknown or duplicate keywords.
class Args {
 public:
  Args(const CallArgs& args, std::string_view fn, std::initializer_list<const char*> params);
  bool has(size_t i) const { return i < v_.size() && v_[i].has_value(); }
  const Value& get(size_t i) const;  // undefined when absent
  Value get_or(size_t i, Value fallback) const { return has(i) ? *v_[i] : std::move(fallback); }
  int64_t get_int(size_t i, int64_t fallback, std::string_view what) const;
  std::optional<std::string> get_str(size_t i) const;  // nullopt when absent or None

 private:
  std::vector<std::optional<Value>> v_;
};

// filters.cc / filters_seq.cc
Value ApplyFilter(Interpreter& in, std::string_view name, const Value& input, CallArgs& args);
// Sequence filters (filters_seq.cc); nullopt when `name` is not one of them.
std::optional<Value> ApplySeqFilter(Interpreter& in, std::string_view name, const Value& input,
                                    CallArgs& args);
// tests.cc
bool ApplyTest(Interpreter& in, std::string_view name, const Value& input, CallArgs& args);
// globals.cc
const Value* FindGlobal(std::string_view name);
std::string StrftimeFixed(std::string_view format, int64_t unix_seconds);
// methods.cc: attributes of builtin types. nullopt: no such attribute.
std::optional<Value> BuiltinAttr(const Value& self, std::string_view name);
Value CallMethod(Interpreter& in, const Value& self, std::string_view name, CallArgs& args);

// Shared helpers.
Value MakeStr(Interpreter& in, std::string s, bool markup = false);  // size-checked
std::string Escape(const Value& v);                                  // markupsafe.escape(v) text
int64_t ToInt64(const Value& v, std::string_view what);              // TypeError unless int-like
// Resolves "a.b.0" as Jinja's make_attrgetter does.
Value AttrPath(Interpreter& in, const Value& v, std::string_view path);

}  // namespace stet::tmpl
