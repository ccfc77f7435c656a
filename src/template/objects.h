// Object kinds shared across the interpreter's files: Jinja's Namespace (the
// only value a sandboxed template may mutate), native functions and bound
// methods of builtin types.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "template/value.h"

namespace stet::tmpl {

class NamespaceObj : public Object {
 public:
  NamespaceObj() : attrs_(std::make_shared<DictData>()) {}
  std::string TypeName() const override { return "Namespace"; }
  std::string Repr() const override {
    return "<Namespace " + stet::tmpl::Repr(Value::Dict(attrs_)) + ">";
  }
  std::optional<Value> GetAttr(std::string_view name) const override {
    const Value* v = attrs_->FindStr(name);
    if (v == nullptr) return std::nullopt;
    return *v;
  }
  void Set(std::string_view name, Value v) {
    attrs_->Set(Value::Str(std::string(name)), std::move(v));
  }
  void Clear() { attrs_->entries.clear(); }
  DictData& attrs() { return *attrs_; }

 private:
  std::shared_ptr<DictData> attrs_;
};

class NativeFunction : public Object {
 public:
  using Fn = std::function<Value(Interpreter&, CallArgs&)>;
  NativeFunction(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  std::string TypeName() const override { return "function"; }
  std::string Repr() const override { return "<function " + name_ + ">"; }
  bool Callable() const override { return true; }
  Value Call(Interpreter& in, CallArgs& args) const override { return fn_(in, args); }

 private:
  std::string name_;
  Fn fn_;
};

// `"a,b".split` before it is called.
class BoundMethod : public Object {
 public:
  BoundMethod(Value self, std::string name) : self_(std::move(self)), name_(std::move(name)) {
    nesting = CheckedNesting(self_.nesting());
  }
  std::string TypeName() const override { return "builtin_function_or_method"; }
  std::string Repr() const override {
    return "<built-in method " + name_ + " of " + stet::tmpl::TypeName(self_) + " object>";
  }
  bool Callable() const override { return true; }
  Value Call(Interpreter& in, CallArgs& args) const override;

 private:
  Value self_;
  std::string name_;
};

}  // namespace stet::tmpl
