// Statement execution: output, if, for (with Jinja's loop object and
// per-iteration scope), set / set-block / namespace assignment, macros and
// call blocks, filter blocks, with. Expressions are in eval.cc.
#include "template/interpreter.h"

#include <algorithm>

#include "template/objects.h"
#include "template/python/builtins.h"

namespace stet::tmpl {
namespace {

class LoopObj : public Object {
 public:
  explicit LoopObj(std::shared_ptr<const std::vector<Value>> items) : items_(std::move(items)) {
    ChargeSteps(items_->size());
    uint32_t deepest = 0;
    for (const Value& v : *items_) deepest = std::max(deepest, v.nesting());
    nesting = CheckedNesting(deepest);
  }
  std::string TypeName() const override { return "LoopContext"; }
  std::string Repr() const override {
    return "<LoopContext " + std::to_string(index0_ + 1) + "/" + std::to_string(items_->size()) +
           ">";
  }
  void set_index(int64_t i) { index0_ = i; }

  std::optional<Value> GetAttr(std::string_view name) const override {
    int64_t n = static_cast<int64_t>(items_->size());
    if (name == "index") return Value::Int(index0_ + 1);
    if (name == "index0") return Value::Int(index0_);
    if (name == "revindex") return Value::Int(n - index0_);
    if (name == "revindex0") return Value::Int(n - index0_ - 1);
    if (name == "first") return Value::Bool(index0_ == 0);
    if (name == "last") return Value::Bool(index0_ == n - 1);
    if (name == "length") return Value::Int(n);
    if (name == "depth") return Value::Int(1);
    if (name == "depth0") return Value::Int(0);
    if (name == "previtem") {
      if (index0_ == 0) return Value::Undefined("there is no previous item");
      return (*items_)[index0_ - 1];
    }
    if (name == "nextitem") {
      if (index0_ + 1 >= n) return Value::Undefined("there is no next item");
      return (*items_)[index0_ + 1];
    }
    if (name == "cycle") {
      int64_t i = index0_;
      return Value::Obj(std::make_shared<NativeFunction>("cycle", [i](Interpreter&, CallArgs& a) {
        if (a.positional.empty()) Throw(ErrorKind::kType, "no items for cycling given");
        return a.positional[static_cast<size_t>(i) % a.positional.size()];
      }));
    }
    if (name == "changed") {
      auto self = std::static_pointer_cast<const LoopObj>(shared_from_this());
      auto fn = std::make_shared<NativeFunction>("changed", [self](Interpreter&, CallArgs& a) {
        Value now = Value::List(a.positional);
        if (self->has_last_ && Equals(now, self->last_changed_)) return Value::Bool(false);
        self->nesting = std::max(self->nesting, CheckedNesting(now.nesting()));
        self->last_changed_ = now;
        self->has_last_ = true;
        return Value::Bool(true);
      });
      fn->nesting = CheckedNesting(nesting);
      return Value::Obj(fn);
    }
    return std::nullopt;
  }

 private:
  std::shared_ptr<const std::vector<Value>> items_;
  int64_t index0_ = 0;
  mutable Value last_changed_;
  mutable bool has_last_ = false;
};

// A {% macro %} or the `caller` of a {% call %} block. Holds its defining
// scope weakly (a scope holding the macro would otherwise never be freed);
// a macro that outlives its scope resolves free names at the template root.
class MacroObj : public Object {
 public:
  MacroObj(const Node* def, std::string name, const ScopePtr& closure)
      : def_(def), name_(std::move(name)), closure_(closure) {}
  std::string TypeName() const override { return "Macro"; }
  std::string Repr() const override { return "<Macro '" + name_ + "'>"; }
  bool Callable() const override { return true; }

  std::optional<Value> GetAttr(std::string_view attr) const override {
    if (attr == "name") return Value::Str(name_);
    if (attr == "arguments") {
      std::vector<Value> names;
      for (const auto& n : def_->names) names.push_back(Value::Str(n));
      return Value::Tuple(std::move(names));
    }
    if (attr == "catch_kwargs") return Value::Bool(def_->flags & kUsesKwargs);
    if (attr == "catch_varargs") return Value::Bool(def_->flags & kUsesVarargs);
    if (attr == "caller") return Value::Bool(def_->flags & kUsesCaller);
    return std::nullopt;
  }

  Value Call(Interpreter& in, CallArgs& args) const override {
    in.EnterCall();
    struct Leave {
      Interpreter& in;
      ~Leave() { in.LeaveCall(); }
    } leave{in};
    ScopePtr parent = closure_.lock();
    auto scope = std::make_shared<Scope>(parent ? parent : in.root());
    const auto& params = def_->names;
    std::vector<bool> bound(params.size(), false);
    std::vector<Value> extra;
    for (size_t i = 0; i < args.positional.size(); ++i) {
      if (i < params.size()) {
        scope->Set(params[i], args.positional[i]);
        bound[i] = true;
      } else {
        extra.push_back(args.positional[i]);
      }
    }
    if (!extra.empty() && !(def_->flags & kUsesVarargs)) {
      Throw(ErrorKind::kType, "macro '" + name_ + "' takes not more than " +
                                  std::to_string(params.size()) + " argument(s)");
    }
    auto kwargs = std::make_shared<DictData>();
    Value caller;
    bool have_caller = false;
    for (auto& [k, v] : args.keyword) {
      // As in Jinja, a keyword naming a parameter already filled by position
      // is a leftover keyword argument.
      auto it = std::find(params.begin(), params.end(), k);
      size_t i = static_cast<size_t>(it - params.begin());
      if (it != params.end() && !bound[i]) {
        scope->Set(k, v);
        bound[i] = true;
      } else if (k == "caller" && (def_->flags & kUsesCaller)) {
        caller = v;
        have_caller = true;
      } else if (def_->flags & kUsesKwargs) {
        kwargs->Set(Value::Str(k), v);
      } else {
        Throw(ErrorKind::kType, "macro '" + name_ + "' takes no keyword argument '" + k + "'");
      }
    }
    for (size_t i = 0; i < params.size(); ++i) {
      if (bound[i]) continue;
      const NodePtr& dflt = def_->list[i];
      scope->Set(params[i],
                 dflt ? in.Eval(*dflt, scope)
                      : Value::Undefined("parameter '" + params[i] + "' was not provided"));
    }
    if (def_->flags & kUsesVarargs) scope->Set("varargs", Value::Tuple(std::move(extra)));
    if (def_->flags & kUsesKwargs) scope->Set("kwargs", Value::Dict(std::move(kwargs)));
    if (def_->flags & kUsesCaller) {
      scope->Set("caller", have_caller ? caller : Value::Undefined("No caller defined"));
    }
    std::string out;
    in.ExecBody(def_->body, scope, out);
    in.ReleaseBuffer(out);
    return Value::Str(std::move(out));
  }

 private:
  const Node* def_;
  std::string name_;
  std::weak_ptr<Scope> closure_;
};

}  // namespace

const Value* Scope::Find(std::string_view name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent_.get()) {
    for (auto it = s->vars_.rbegin(); it != s->vars_.rend(); ++it) {
      if (it->first == name) return &it->second;
    }
  }
  return nullptr;
}

void Scope::Set(std::string_view name, Value v) {
  for (auto& [k, val] : vars_) {
    if (k == name) {
      val = std::move(v);
      return;
    }
  }
  vars_.emplace_back(std::string(name), std::move(v));
}

Interpreter::Interpreter(const TemplateLimits& limits, int64_t now_unix, Value context,
                         std::function<bool()> cancelled)
    : budget_(limits, std::move(cancelled)),
      now_unix_(now_unix),
      context_(std::move(context)),
      root_(std::make_shared<Scope>(nullptr)) {}

Interpreter::~Interpreter() {
  for (auto& o : tracked_) static_cast<NamespaceObj&>(*o).Clear();
}

Interpreter::DepthGuard::DepthGuard(Interpreter* in) : in(in) {
  if (++in->eval_depth_ > in->limits().max_eval_depth) {
    --in->eval_depth_;
    Throw(ErrorKind::kLimit, "template evaluation nested deeper than " +
                                 std::to_string(in->limits().max_eval_depth) + " levels");
  }
  in->budget_.Steps(1);
}

void Interpreter::Append(std::string& out, std::string_view s) {
  budget_.CheckSize(out.size() + s.size());
  budget_.Hold(s.size());
  out.append(s);
}

void Interpreter::CountIterations(int64_t n) {
  n = std::max<int64_t>(n, 0);
  if (n > limits().max_loop_iterations - iterations_) {
    Throw(ErrorKind::kLimit, "the render exceeded its loop iteration limit (" +
                                 std::to_string(limits().max_loop_iterations) + " iterations)");
  }
  iterations_ += n;
  budget_.Steps(static_cast<uint64_t>(n));
}

void Interpreter::EnterCall() {
  if (++call_depth_ > limits().max_call_depth) {
    --call_depth_;
    Throw(ErrorKind::kLimit, "the render exceeded its macro call depth limit (" +
                                 std::to_string(limits().max_call_depth) + " nested calls)");
  }
}

Value Interpreter::Lookup(std::string_view name, const ScopePtr& scope) const {
  if (const Value* v = scope->Find(name)) return *v;
  if (context_.is_dict()) {
    if (const Value* v = context_.dict().FindStr(name)) return *v;
  }
  if (const Value* v = FindGlobal(name)) return *v;
  return Value::Undefined("'" + std::string(name) + "' is undefined");
}

std::string Interpreter::Run(const std::vector<NodePtr>& body) {
  ActiveBudgetScope active(&budget_);
  std::string out;
  ExecBody(body, root_, out);
  return out;
}

Flow Interpreter::ExecBody(const std::vector<NodePtr>& body, const ScopePtr& scope,
                           std::string& out) {
  DepthGuard guard(this);
  for (const NodePtr& n : body) {
    Flow f = Exec(*n, scope, out);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Value Interpreter::ApplyFilterChain(const std::vector<NodePtr>& chain, Value v,
                                    const ScopePtr& scope) {
  // A chain is nested kFilter nodes whose innermost input is null: apply inside out.
  std::vector<const Node*> filters;
  for (const Node* f = chain.empty() ? nullptr : chain[0].get(); f != nullptr; f = f->a.get()) {
    filters.push_back(f);
  }
  for (auto it = filters.rbegin(); it != filters.rend(); ++it)
    v = EvalCall(**it, scope, &v, nullptr);
  return v;
}

void Interpreter::Assign(const Node& target, const Value& v, const ScopePtr& scope) {
  switch (target.kind) {
    case NodeKind::kName:
      scope->Set(target.str, v);
      return;
    case NodeKind::kNsRef: {
      Value ns = Lookup(target.str, scope);
      if (!ns.is_object() || ns.object()->TypeName() != "Namespace") {
        Throw(ErrorKind::kRuntime, "cannot assign attribute on non-namespace object");
      }
      static_cast<NamespaceObj*>(ns.object())->Set(target.str2, v);
      return;
    }
    case NodeKind::kTuple: {
      std::vector<Value> items = Iterate(v);
      size_t want = target.list.size();
      if (items.size() < want) {
        Throw(ErrorKind::kValue, "not enough values to unpack (expected " + std::to_string(want) +
                                     ", got " + std::to_string(items.size()) + ")");
      }
      if (items.size() > want) {
        Throw(ErrorKind::kValue,
              "too many values to unpack (expected " + std::to_string(want) + ")");
      }
      for (size_t i = 0; i < want; ++i) Assign(*target.list[i], items[i], scope);
      return;
    }
    default:
      Throw(ErrorKind::kSyntax, "can't assign to expression");
  }
}

Flow Interpreter::ExecFor(const Node& n, const ScopePtr& scope, std::string& out) {
  Value iterable = Eval(*n.b, scope);
  std::vector<Value> all = Iterate(iterable);
  auto items = std::make_shared<std::vector<Value>>();
  if (n.c) {
    for (Value& item : all) {
      CountIterations(1);
      auto test_scope = std::make_shared<Scope>(scope);
      Assign(*n.a, item, test_scope);
      if (Truthy(Eval(*n.c, test_scope))) items->push_back(std::move(item));
    }
  } else {
    *items = std::move(all);
  }
  if (items->empty()) {
    if (!n.else_body.empty()) ExecBody(n.else_body, std::make_shared<Scope>(scope), out);
    return Flow::kNormal;
  }
  auto loop = std::make_shared<LoopObj>(items);
  Value loop_value = Value::Obj(loop);
  for (size_t i = 0; i < items->size(); ++i) {
    CountIterations(1);
    auto iter_scope = std::make_shared<Scope>(scope);
    loop->set_index(static_cast<int64_t>(i));
    iter_scope->Set("loop", loop_value);
    Assign(*n.a, (*items)[i], iter_scope);
    if (ExecBody(n.body, iter_scope, out) == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

Flow Interpreter::Exec(const Node& n, const ScopePtr& scope, std::string& out) {
  try {
    budget_.Steps(1);
    switch (n.kind) {
      case NodeKind::kData:
        Append(out, n.str);
        return Flow::kNormal;
      case NodeKind::kOutput: {
        Value v = Eval(*n.a, scope);
        if (v.is_string()) {
          Append(out, v.str());
        } else {
          Append(out, ToStr(v));
        }
        return Flow::kNormal;
      }
      case NodeKind::kIf:
        if (Truthy(Eval(*n.a, scope))) return ExecBody(n.body, scope, out);
        return ExecBody(n.else_body, scope, out);
      case NodeKind::kFor:
        return ExecFor(n, scope, out);
      case NodeKind::kSet:
        Assign(*n.a, Eval(*n.b, scope), scope);
        return Flow::kNormal;
      case NodeKind::kSetBlock: {
        std::string buf;
        ExecBody(n.body, std::make_shared<Scope>(scope), buf);
        ReleaseBuffer(buf);
        Assign(*n.a, ApplyFilterChain(n.list, Value::Str(std::move(buf)), scope), scope);
        return Flow::kNormal;
      }
      case NodeKind::kMacro:
        scope->Set(n.str, Value::Obj(std::make_shared<MacroObj>(&n, n.str, scope)));
        return Flow::kNormal;
      case NodeKind::kCallBlock: {
        Value caller = Value::Obj(std::make_shared<MacroObj>(&n, "caller", scope));
        Value v = EvalCall(*n.a, scope, nullptr, &caller);
        Append(out, ToStr(v));
        return Flow::kNormal;
      }
      case NodeKind::kFilterBlock: {
        std::string buf;
        ExecBody(n.body, std::make_shared<Scope>(scope), buf);
        ReleaseBuffer(buf);
        Append(out, ToStr(ApplyFilterChain(n.list, Value::Str(std::move(buf)), scope)));
        return Flow::kNormal;
      }
      case NodeKind::kWith: {
        auto inner = std::make_shared<Scope>(scope);
        for (size_t i = 0; i < n.list.size(); ++i) Assign(*n.list[i], Eval(*n.kw[i], scope), inner);
        return ExecBody(n.body, inner, out);
      }
      case NodeKind::kScope:
        return ExecBody(n.body, scope, out);
      case NodeKind::kBreak:
        return Flow::kBreak;
      case NodeKind::kContinue:
        return Flow::kContinue;
      default:
        Throw(ErrorKind::kSyntax, "expression used as a statement");
    }
  } catch (TemplateError& e) {
    e.PlaceAt(n.line, n.column);
    throw;
  }
}

Value Interpreter::Filter(std::string_view name, const Value& input, CallArgs& args) {
  return ApplyFilter(*this, name, input, args);
}

bool Interpreter::Test(std::string_view name, const Value& input, CallArgs& args) {
  return ApplyTest(*this, name, input, args);
}

}  // namespace stet::tmpl
