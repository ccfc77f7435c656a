// The tree-walking interpreter behind ChatTemplate::Render (internal to
// src/template). It owns one render: the scopes, the render budget and the
// loop / depth / call counters that keep hostile templates finite.
// Invariant: every Eval/Exec passes through a depth guard and is charged a
// step, and every loop iteration and output byte is counted, so a render
// ends (ok, kLimit or kCancelled).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "template/ast.h"
#include "template/budget.h"
#include "template/value.h"

namespace stet::tmpl {

// One frame of variables. Lookups walk the parent chain; for loops get a
// fresh scope per iteration, macros one per call, `if` none (as in Jinja).
class Scope {
 public:
  explicit Scope(std::shared_ptr<Scope> parent) : parent_(std::move(parent)) {}
  const Value* Find(std::string_view name) const;
  void Set(std::string_view name, Value v);

 private:
  std::shared_ptr<Scope> parent_;
  std::vector<std::pair<std::string, Value>> vars_;
};
using ScopePtr = std::shared_ptr<Scope>;

enum class Flow { kNormal, kBreak, kContinue };

class Interpreter {
 public:
  // `now_unix`: strftime_now's fixed instant (UTC).
  Interpreter(const TemplateLimits& limits, int64_t now_unix, Value context,
              std::function<bool()> cancelled = {});
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  std::string Run(const std::vector<NodePtr>& body);

  Value Eval(const Node& n, const ScopePtr& scope);
  Flow ExecBody(const std::vector<NodePtr>& body, const ScopePtr& scope, std::string& out);

  // Jinja's sandboxed environment.getattr / getitem / call.
  Value GetAttr(const Value& obj, std::string_view name);
  Value GetItem(const Value& obj, const Value& key);
  Value Call(const Value& callee, CallArgs& args);
  Value Filter(std::string_view name, const Value& input, CallArgs& args);
  bool Test(std::string_view name, const Value& input, CallArgs& args);

  // Budgets.
  // A string or list about to be this large (size limit and memory budget).
  void CheckSize(size_t bytes) const { budget_.Reserve(bytes); }
  // Appends to an output buffer, whose bytes are held until ReleaseBuffer.
  void Append(std::string& out, std::string_view s);
  // A buffer filled by Append is freed or becomes a value (which holds its own bytes).
  void ReleaseBuffer(const std::string& buf) { budget_.Release(buf.size()); }
  Budget& budget() { return budget_; }
  void CountIterations(int64_t n);
  void EnterCall();
  void LeaveCall() { --call_depth_; }
  void Track(std::shared_ptr<Object> o) { tracked_.push_back(std::move(o)); }

  const TemplateLimits& limits() const { return budget_.limits(); }
  int64_t now_unix() const { return now_unix_; }
  int64_t iterations() const { return iterations_; }
  const ScopePtr& root() const { return root_; }
  Value Lookup(std::string_view name, const ScopePtr& scope) const;

 private:
  Flow Exec(const Node& n, const ScopePtr& scope, std::string& out);
  Flow ExecFor(const Node& n, const ScopePtr& scope, std::string& out);
  void Assign(const Node& target, const Value& v, const ScopePtr& scope);
  Value EvalCall(const Node& n, const ScopePtr& scope, const Value* input, const Value* caller);
  void EvalArgs(const Node& n, const ScopePtr& scope, CallArgs& args);
  Value EvalCompare(const Node& n, const ScopePtr& scope);
  Value ApplyFilterChain(const std::vector<NodePtr>& chain, Value v, const ScopePtr& scope);

  struct DepthGuard {
    explicit DepthGuard(Interpreter* in);
    ~DepthGuard() { --in->eval_depth_; }
    Interpreter* in;
  };

  Budget budget_;
  int64_t now_unix_;
  Value context_;
  ScopePtr root_;
  int eval_depth_ = 0;
  int call_depth_ = 0;
  int64_t iterations_ = 0;
  std::vector<std::shared_ptr<Object>> tracked_;  // namespaces: cleared at the end (cycles)
};

// Python operators on values (operators.cc).
Value BinaryOp(Interpreter& in, std::string_view op, const Value& a, const Value& b);
Value Negate(const Value& v, bool minus);
bool Contains(const Value& container, const Value& item);
bool CompareOp(std::string_view op, const Value& a, const Value& b);

}  // namespace stet::tmpl
