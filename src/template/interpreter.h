// The tree-walking interpreter behind ChatTemplate::Render (internal to
// src/template). It owns one render: the scopes, the output budget and the
// loop / depth / call counters that keep hostile templates finite.
// Invariant: every Eval/Exec passes through a depth guard and every loop
// iteration and output byte is counted, so a render ends (ok or kLimit).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "template/ast.h"
#include "template/value.h"

namespace stet::tmpl {

struct Limits {
  int64_t now_unix = 1721995200;  // strftime_now's fixed instant (UTC)
  size_t max_output_bytes = 64u << 20;
  size_t max_work_bytes = 1u << 30;  // all bytes appended to any buffer, summed
  int64_t max_loop_iterations = 1'000'000;
  int max_call_depth = 100;
  int max_eval_depth = 1000;
};

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
  Interpreter(const Limits& limits, Value context);
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
  void CheckSize(size_t bytes) const;  // a string or list about to be this large
  void Append(std::string& out, std::string_view s);
  void CountIterations(int64_t n);
  void EnterCall();
  void LeaveCall() { --call_depth_; }
  void Track(std::shared_ptr<Object> o) { tracked_.push_back(std::move(o)); }

  const Limits& limits() const { return limits_; }
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

  Limits limits_;
  Value context_;
  ScopePtr root_;
  int eval_depth_ = 0;
  int call_depth_ = 0;
  int64_t iterations_ = 0;
  size_t work_bytes_ = 0;
  std::vector<std::shared_ptr<Object>> tracked_;  // namespaces: cleared at the end (cycles)
};

// Python operators on values (operators.cc).
Value BinaryOp(Interpreter& in, std::string_view op, const Value& a, const Value& b);
Value Negate(const Value& v, bool minus);
bool Contains(const Value& container, const Value& item);
bool CompareOp(std::string_view op, const Value& a, const Value& b);

}  // namespace stet::tmpl
