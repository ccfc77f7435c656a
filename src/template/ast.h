// The template syntax tree: one Node type whose fields are used per kind (the
// table below). Invariant: a parsed tree is immutable and owned by the
// compiled template; the interpreter only reads it, so one template renders
// from many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "template/value.h"

namespace stet::tmpl {

enum class NodeKind : uint8_t {
  // Expressions.
  kLiteral,   // value
  kName,      // str
  kList,      // list = items
  kTuple,     // list = items
  kDict,      // list = keys, kw = values
  kGetAttr,   // a = object, str = attribute
  kGetItem,   // a = object, b = index (may be a kSlice)
  kSlice,     // a, b, c = start, stop, step (each may be null)
  kCall,      // a = callee, list = args, names + kw = keyword args, c = *args, d = **kwargs
  kFilter,    // a = input (null in a filter chain), str = name, args as kCall; unknown: fail at run
              // time
  kTest,      // a = input, str = name, args as kCall; unknown: fail at run time
  kNot,       // a
  kNeg,       // a
  kPos,       // a
  kBinary,    // str = operator (+ - * / // % ** ~), a, b
  kAnd,       // a, b
  kOr,        // a, b
  kCompare,   // a = first, names = operators (== != < <= > >= in notin), list = operands
  kCondExpr,  // a = test, b = value if true, c = value if false (null: undefined)
  kNsRef,     // assignment target `ns.attr`: str = name, str2 = attribute
  // Statements.
  kData,         // str = literal text
  kOutput,       // a = expression
  kIf,           // a = test, body, else_body (an elif is a nested kIf)
  kFor,          // a = target, b = iterable, c = filter (may be null), body, else_body
  kSet,          // a = target, b = value
  kSetBlock,     // a = target, body, list = filter chain (kFilter nodes with null input)
  kMacro,        // str = name, names = parameters, list = defaults (null: none), body
  kCallBlock,    // a = the kCall, names + list = caller parameters and defaults, body
  kFilterBlock,  // list = filter chain, body
  kWith,         // list = targets, kw = values, body
  kBreak,
  kContinue,
  kScope,  // body rendered in place: {% generation %}, {% block %}, {% autoescape %}
};

// Macro flags: which implicit names its body uses (Jinja only accepts extra
// arguments when the body reads varargs / kwargs).
inline constexpr uint8_t kUsesVarargs = 1;
inline constexpr uint8_t kUsesKwargs = 2;
inline constexpr uint8_t kUsesCaller = 4;

struct Node;
using NodePtr = std::unique_ptr<Node>;

struct Node {
  NodeKind kind;
  int line = 0;
  int column = 0;
  bool unknown = false;  // kFilter / kTest whose name is not registered
  uint8_t flags = 0;     // kMacro / kCallBlock: kUses*
  std::string str;
  std::string str2;
  Value value;
  NodePtr a, b, c, d;
  std::vector<NodePtr> list;
  std::vector<std::string> names;
  std::vector<NodePtr> kw;
  std::vector<NodePtr> body;
  std::vector<NodePtr> else_body;
};

}  // namespace stet::tmpl
