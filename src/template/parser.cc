// Recursive-descent parser mirroring jinja2/parser.py (same grammar, same
// precedence, same quirks: left-associative `**`, unary minus binding tighter
// than `**`, `is` tests taking one bare argument). A post-pass reproduces the
// compiler's "unknown filter/test" check, which only defers the error inside
// `if` statements and conditional expressions ("soft" frames).
#include "template/parser.h"

#include <algorithm>
#include <initializer_list>

#include "template/error.h"

namespace stet::tmpl {
namespace {

bool OneOf(std::string_view s, std::initializer_list<std::string_view> options) {
  return std::find(options.begin(), options.end(), s) != options.end();
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  std::vector<NodePtr> ParseTemplate() {
    std::vector<NodePtr> body = Subparse({});
    if (Cur().type != TokType::kEof) Fail(Cur(), "unexpected token");
    for (const NodePtr& n : body) Validate(*n, false);
    return body;
  }

 private:
  // ---- token stream ----
  const Token& Cur() const { return toks_[pos_]; }
  const Token& Look() const { return toks_[std::min(pos_ + 1, toks_.size() - 1)]; }
  const Token& Next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool IsOp(std::string_view op) const { return Cur().type == TokType::kOp && Cur().text == op; }
  bool IsName(std::string_view name) const {
    return Cur().type == TokType::kName && Cur().text == name;
  }
  bool SkipOp(std::string_view op) {
    if (!IsOp(op)) return false;
    Next();
    return true;
  }
  bool SkipName(std::string_view name) {
    if (!IsName(name)) return false;
    Next();
    return true;
  }

  static std::string Describe(const Token& t) {
    switch (t.type) {
      case TokType::kEof:
        return "end of template";
      case TokType::kBlockEnd:
        return "end of statement block";
      case TokType::kVarEnd:
        return "end of print statement";
      case TokType::kBlockBegin:
        return "begin of statement block";
      case TokType::kVarBegin:
        return "begin of print statement";
      case TokType::kData:
        return "template data";
      case TokType::kString:
        return "string";
      case TokType::kInt:
        return "integer";
      case TokType::kFloat:
        return "float";
      default:
        return t.text;
    }
  }

  [[noreturn]] void Fail(const Token& t, const std::string& message) {
    TemplateError e{ErrorKind::kSyntax, message};
    e.line = t.line;
    e.column = t.column;
    throw e;
  }

  void ExpectOp(std::string_view op) {
    if (!SkipOp(op)) {
      if (Cur().type == TokType::kEof)
        Fail(Cur(), "unexpected end of template, expected '" + std::string(op) + "'.");
      Fail(Cur(), "expected token '" + std::string(op) + "', got '" + Describe(Cur()) + "'");
    }
  }
  void Expect(TokType type, const char* what) {
    if (Cur().type != type) {
      if (Cur().type == TokType::kEof)
        Fail(Cur(), std::string("unexpected end of template, expected '") + what + "'.");
      Fail(Cur(), std::string("expected token '") + what + "', got '" + Describe(Cur()) + "'");
    }
    Next();
  }
  std::string ExpectName() {
    if (Cur().type != TokType::kName)
      Fail(Cur(), "expected token 'name', got '" + Describe(Cur()) + "'");
    return Next().text;
  }

  NodePtr Make(NodeKind kind, const Token& at) {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->line = at.line;
    n->column = at.column;
    return n;
  }

  // Every nesting level (and every link of an operator chain, which nests the
  // tree just as deeply) counts against kMaxParseDepth.
  struct DepthGuard {
    explicit DepthGuard(Parser* p, bool deeper = true) : p(p), saved(p->depth_) {
      if (deeper) p->Deeper();
    }
    ~DepthGuard() { p->depth_ = saved; }
    Parser* p;
    int saved;
  };
  void Deeper() {
    if (++depth_ > kMaxParseDepth) {
      TemplateError e{ErrorKind::kLimit, "template nested too deeply (more than " +
                                             std::to_string(kMaxParseDepth) + " levels)"};
      e.line = Cur().line;
      e.column = Cur().column;
      throw e;
    }
  }

  // ---- statements ----
  // Parses until a block tag named in `end_tags` (left as the current token).
  std::vector<NodePtr> Subparse(const std::vector<std::string_view>& end_tags) {
    DepthGuard guard(this);
    if (!end_tags.empty()) end_stack_.emplace_back(end_tags.begin(), end_tags.end());
    struct Pop {
      Parser* p;
      bool active;
      ~Pop() {
        if (active) p->end_stack_.pop_back();
      }
    } pop{this, !end_tags.empty()};
    std::vector<NodePtr> body;
    while (Cur().type != TokType::kEof) {
      const Token& t = Cur();
      if (t.type == TokType::kData) {
        NodePtr n = Make(NodeKind::kData, t);
        n->str = t.text;
        body.push_back(std::move(n));
        Next();
      } else if (t.type == TokType::kVarBegin) {
        NodePtr n = Make(NodeKind::kOutput, Next());
        n->a = ParseTuple(false, true, {}, false);
        Expect(TokType::kVarEnd, "end of print statement");
        body.push_back(std::move(n));
      } else if (t.type == TokType::kBlockBegin) {
        Next();
        if (Cur().type == TokType::kName &&
            std::find(end_tags.begin(), end_tags.end(), Cur().text) != end_tags.end()) {
          return body;
        }
        ParseStatement(body);
        Expect(TokType::kBlockEnd, "end of statement block");
      } else {
        Fail(t, "unexpected '" + Describe(t) + "'");
      }
    }
    return body;
  }

  // `%}` then the body up to one of end_tags; consumes the end tag's name if drop.
  std::vector<NodePtr> ParseStatements(const std::vector<std::string_view>& end_tags, bool drop) {
    SkipOp(":");
    Expect(TokType::kBlockEnd, "end of statement block");
    std::vector<NodePtr> body = Subparse(end_tags);
    if (Cur().type == TokType::kEof) {
      end_stack_.emplace_back(end_tags.begin(), end_tags.end());
      FailUnknownTag(nullptr, Cur());
    }
    if (drop) Next();
    return body;
  }

  // Jinja's _fail_ut_eof: an unknown tag (name) or the end of the template (null).
  [[noreturn]] void FailUnknownTag(const std::string* name, const Token& at) {
    std::string msg =
        name ? "Encountered unknown tag '" + *name + "'." : "Unexpected end of template.";
    if (!end_stack_.empty()) {
      std::string looking;
      for (const std::string& tag : end_stack_.back())
        looking += (looking.empty() ? "'" : " or '") + tag + "'";
      bool expected = false;
      for (const auto& tags : end_stack_) {
        expected = expected || (name && std::find(tags.begin(), tags.end(), *name) != tags.end());
      }
      if (expected) {
        msg +=
            " You probably made a nesting mistake. Jinja is expecting this tag, but currently "
            "looking for " +
            looking + ".";
      } else {
        msg += " Jinja was looking for the following tags: " + looking + ".";
      }
    }
    if (!tag_stack_.empty())
      msg += " The innermost block that needs to be closed is '" + tag_stack_.back() + "'.";
    Fail(at, msg);
  }

  void ParseStatement(std::vector<NodePtr>& out) {
    const Token& t = Cur();
    if (t.type != TokType::kName) Fail(t, "tag name expected");
    const std::string tag = t.text;
    tag_stack_.push_back(tag);
    if (tag == "for") {
      out.push_back(ParseFor());
    } else if (tag == "if") {
      out.push_back(ParseIf());
    } else if (tag == "set") {
      out.push_back(ParseSet());
    } else if (tag == "macro") {
      out.push_back(ParseMacro());
    } else if (tag == "call") {
      out.push_back(ParseCallBlock());
    } else if (tag == "filter") {
      NodePtr n = Make(NodeKind::kFilterBlock, Next());
      n->list.push_back(ParseFilterChain(nullptr, true));
      n->body = ParseStatements({"endfilter"}, true);
      out.push_back(std::move(n));
    } else if (tag == "with") {
      out.push_back(ParseWith());
    } else if (tag == "print") {
      Next();
      bool first = true;
      while (Cur().type != TokType::kBlockEnd) {
        if (!first) ExpectOp(",");
        first = false;
        NodePtr n = Make(NodeKind::kOutput, Cur());
        n->a = ParseExpression(true);
        out.push_back(std::move(n));
      }
    } else if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) Fail(t, "'" + tag + "' outside loop");
      out.push_back(Make(tag == "break" ? NodeKind::kBreak : NodeKind::kContinue, Next()));
    } else if (tag == "generation" || tag == "autoescape" || tag == "block") {
      NodePtr n = Make(NodeKind::kScope, Next());
      if (tag == "block") {
        ExpectName();
        while (IsName("scoped") || IsName("required")) Next();
      } else if (tag == "autoescape") {
        ParseExpression(true);
      }
      const std::string end_tag = "end" + tag;
      n->body = ParseStatements({end_tag}, true);
      if (tag == "block" && Cur().type == TokType::kName) Next();  // {% endblock name %}
      out.push_back(std::move(n));
    } else if (OneOf(tag, {"extends", "include", "import", "from"})) {
      Fail(t, "'" + tag + "' needs a template loader, which chat templates do not have");
    } else {
      tag_stack_.pop_back();
      FailUnknownTag(&tag, t);
    }
    tag_stack_.pop_back();
  }

  NodePtr ParseFor() {
    NodePtr n = Make(NodeKind::kFor, Next());
    n->a = ParseAssignTarget({"in"}, false);
    if (!SkipName("in")) Fail(Cur(), "expected token 'in', got '" + Describe(Cur()) + "'");
    n->b = ParseTuple(false, false, {"recursive"}, false);
    if (SkipName("if")) n->c = ParseExpression(true);
    if (IsName("recursive")) Fail(Cur(), "recursive for loops are not supported");
    ++loop_depth_;
    n->body = ParseStatements({"endfor", "else"}, false);
    --loop_depth_;
    if (Next().text != "endfor") n->else_body = ParseStatements({"endfor"}, true);
    return n;
  }

  NodePtr ParseIf() {
    NodePtr root = Make(NodeKind::kIf, Next());
    Node* node = root.get();
    DepthGuard restore(this, false);
    while (true) {
      node->a = ParseTuple(false, false, {}, false);
      node->body = ParseStatements({"elif", "else", "endif"}, false);
      const Token& t = Next();
      if (t.text == "elif") {
        Deeper();  // each elif nests one If deeper
        NodePtr elif = Make(NodeKind::kIf, t);
        Node* next = elif.get();
        node->else_body.push_back(std::move(elif));
        node = next;
        continue;
      }
      if (t.text == "else") node->else_body = ParseStatements({"endif"}, true);
      break;
    }
    return root;
  }

  NodePtr ParseSet() {
    NodePtr n = Make(NodeKind::kSet, Next());
    n->a = ParseAssignTarget({}, true);
    if (SkipOp("=")) {
      n->b = ParseTuple(false, true, {}, false);
      return n;
    }
    n->kind = NodeKind::kSetBlock;
    if (IsOp("|")) n->list.push_back(ParseFilterChain(nullptr, false));
    n->body = ParseStatements({"endset"}, true);
    return n;
  }

  void ParseSignature(Node& n) {
    ExpectOp("(");
    bool any_default = false;
    while (!IsOp(")")) {
      if (!n.names.empty()) ExpectOp(",");
      n.names.push_back(ExpectName());
      if (SkipOp("=")) {
        n.list.push_back(ParseExpression(true));
        any_default = true;
      } else {
        if (any_default) Fail(Cur(), "non-default argument follows default argument");
        n.list.push_back(nullptr);
      }
    }
    ExpectOp(")");
  }

  NodePtr ParseMacro() {
    NodePtr n = Make(NodeKind::kMacro, Next());
    n->str = ExpectName();
    ParseSignature(*n);
    int saved_loops = loop_depth_;
    loop_depth_ = 0;
    n->body = ParseStatements({"endmacro"}, true);
    loop_depth_ = saved_loops;
    n->flags = ImplicitNames(n->body);
    return n;
  }

  NodePtr ParseCallBlock() {
    NodePtr n = Make(NodeKind::kCallBlock, Next());
    if (IsOp("(")) ParseSignature(*n);
    const Token& at = Cur();
    n->a = ParseExpression(true);
    if (n->a->kind != NodeKind::kCall) Fail(at, "expected call");
    int saved_loops = loop_depth_;
    loop_depth_ = 0;
    n->body = ParseStatements({"endcall"}, true);
    loop_depth_ = saved_loops;
    n->flags = ImplicitNames(n->body);
    return n;
  }

  NodePtr ParseWith() {
    NodePtr n = Make(NodeKind::kWith, Next());
    while (Cur().type != TokType::kBlockEnd) {
      if (!n->list.empty()) ExpectOp(",");
      n->list.push_back(ParseAssignTarget({}, false));
      ExpectOp("=");
      n->kw.push_back(ParseExpression(true));
    }
    n->body = ParseStatements({"endwith"}, true);
    return n;
  }

  static uint8_t ImplicitNames(const std::vector<NodePtr>& body) {
    uint8_t flags = 0;
    std::vector<const Node*> stack;
    for (const NodePtr& n : body) stack.push_back(n.get());
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      if (n->kind == NodeKind::kName) {
        if (n->str == "varargs") flags |= kUsesVarargs;
        if (n->str == "kwargs") flags |= kUsesKwargs;
        if (n->str == "caller") flags |= kUsesCaller;
      }
      for (const Node* c : {n->a.get(), n->b.get(), n->c.get(), n->d.get()}) {
        if (c) stack.push_back(c);
      }
      for (const auto* v : {&n->list, &n->kw, &n->body, &n->else_body}) {
        for (const NodePtr& c : *v) {
          if (c) stack.push_back(c.get());
        }
      }
    }
    return flags;
  }

  // ---- assignment targets ----
  NodePtr ParseAssignTarget(std::initializer_list<std::string_view> extra_end,
                            bool with_namespace) {
    const Token& at = Cur();
    NodePtr target = ParseTuple(true, true, extra_end, false, with_namespace);
    CheckAssignable(*target, at);
    return target;
  }

  void CheckAssignable(const Node& n, const Token& at) {
    if (n.kind == NodeKind::kName || n.kind == NodeKind::kNsRef) return;
    if (n.kind == NodeKind::kTuple) {
      for (const NodePtr& c : n.list) CheckAssignable(*c, at);
      return;
    }
    Fail(at,
         n.kind == NodeKind::kLiteral ? "can't assign to 'const'" : "can't assign to expression");
  }

  // ---- expressions ----
  bool IsTupleEnd(std::initializer_list<std::string_view> extra_end) const {
    const Token& t = Cur();
    if (t.type == TokType::kVarEnd || t.type == TokType::kBlockEnd || t.type == TokType::kEof)
      return true;
    if (t.type == TokType::kOp && t.text == ")") return true;
    return t.type == TokType::kName &&
           std::find(extra_end.begin(), extra_end.end(), t.text) != extra_end.end();
  }

  NodePtr ParseTuple(bool simplified, bool with_condexpr,
                     std::initializer_list<std::string_view> extra_end, bool explicit_parens,
                     bool with_namespace = false) {
    const Token& at = Cur();
    std::vector<NodePtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) ExpectOp(",");
      if (IsTupleEnd(extra_end)) break;
      items.push_back(simplified ? ParsePrimary(with_namespace) : ParseExpression(with_condexpr));
      if (IsOp(",")) {
        is_tuple = true;
      } else {
        break;
      }
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parens) Fail(Cur(), "Expected an expression, got '" + Describe(Cur()) + "'");
    }
    NodePtr t = Make(NodeKind::kTuple, at);
    t->list = std::move(items);
    return t;
  }

  NodePtr ParseExpression(bool with_condexpr) {
    DepthGuard guard(this);
    return with_condexpr ? ParseCondExpr() : ParseOr();
  }

  NodePtr ParseCondExpr() {
    DepthGuard restore(this, false);
    const Token& at = Cur();
    NodePtr expr = ParseOr();
    while (SkipName("if")) {
      Deeper();
      NodePtr n = Make(NodeKind::kCondExpr, at);
      n->b = std::move(expr);
      n->a = ParseOr();
      if (SkipName("else")) n->c = ParseCondExpr();
      expr = std::move(n);
    }
    return expr;
  }

  NodePtr Binary(NodeKind kind, std::string op, NodePtr a, NodePtr b, const Token& at) {
    NodePtr n = Make(kind, at);
    n->str = std::move(op);
    n->a = std::move(a);
    n->b = std::move(b);
    return n;
  }

  NodePtr ParseOr() {
    DepthGuard restore(this, false);
    const Token& at = Cur();
    NodePtr left = ParseAnd();
    while (SkipName("or")) {
      Deeper();
      left = Binary(NodeKind::kOr, "or", std::move(left), ParseAnd(), at);
    }
    return left;
  }

  NodePtr ParseAnd() {
    DepthGuard restore(this, false);
    const Token& at = Cur();
    NodePtr left = ParseNot();
    while (SkipName("and")) {
      Deeper();
      left = Binary(NodeKind::kAnd, "and", std::move(left), ParseNot(), at);
    }
    return left;
  }

  NodePtr ParseNot() {
    if (IsName("not")) {
      DepthGuard guard(this);
      NodePtr n = Make(NodeKind::kNot, Next());
      n->a = ParseNot();
      return n;
    }
    return ParseCompare();
  }

  NodePtr ParseCompare() {
    DepthGuard restore(this, false);
    const Token& at = Cur();
    NodePtr first = ParseMath1();
    NodePtr cmp;
    while (true) {
      std::string op;
      if (Cur().type == TokType::kOp && OneOf(Cur().text, {"==", "!=", "<", "<=", ">", ">="})) {
        op = Next().text;
      } else if (SkipName("in")) {
        op = "in";
      } else if (IsName("not") && Look().type == TokType::kName && Look().text == "in") {
        Next();
        Next();
        op = "notin";
      } else {
        break;
      }
      Deeper();
      if (!cmp) {
        cmp = Make(NodeKind::kCompare, at);
        cmp->a = std::move(first);
      }
      cmp->names.push_back(op);
      cmp->list.push_back(ParseMath1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  NodePtr ParseMath1() {
    DepthGuard restore(this, false);
    const Token& at = Cur();
    NodePtr left = ParseConcat();
    while (IsOp("+") || IsOp("-")) {
      Deeper();
      std::string op = Next().text;
      left = Binary(NodeKind::kBinary, op, std::move(left), ParseConcat(), at);
    }
    return left;
  }

  NodePtr ParseConcat() {
    DepthGuard restore(this, false);
    const Token& at = Cur();
    NodePtr left = ParseMath2();
    while (SkipOp("~")) {
      Deeper();
      left = Binary(NodeKind::kBinary, "~", std::move(left), ParseMath2(), at);
    }
    return left;
  }

  NodePtr ParseMath2() {
    DepthGuard restore(this, false);
    const Token& at = Cur();
    NodePtr left = ParsePow();
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      Deeper();
      std::string op = Next().text;
      left = Binary(NodeKind::kBinary, op, std::move(left), ParsePow(), at);
    }
    return left;
  }

  NodePtr ParsePow() {
    DepthGuard restore(this, false);
    const Token& at = Cur();
    NodePtr left = ParseUnary(true);
    while (SkipOp("**")) {
      Deeper();
      left = Binary(NodeKind::kBinary, "**", std::move(left), ParseUnary(true), at);
    }
    return left;
  }

  NodePtr ParseUnary(bool with_filter) {
    DepthGuard guard(this);
    const Token& at = Cur();
    NodePtr node;
    if (IsOp("-") || IsOp("+")) {
      NodeKind kind = Next().text == "-" ? NodeKind::kNeg : NodeKind::kPos;
      node = Make(kind, at);
      node->a = ParseUnary(false);
    } else {
      node = ParsePrimary(false);
    }
    node = ParsePostfix(std::move(node));
    if (with_filter) node = ParseFilterExpr(std::move(node));
    return node;
  }

  NodePtr ParsePrimary(bool with_namespace) {
    const Token& t = Cur();
    switch (t.type) {
      case TokType::kName: {
        NodePtr n;
        if (OneOf(t.text, {"true", "false", "True", "False"})) {
          n = Make(NodeKind::kLiteral, t);
          n->value = Value::Bool(t.text == "true" || t.text == "True");
        } else if (OneOf(t.text, {"none", "None"})) {
          n = Make(NodeKind::kLiteral, t);
          n->value = Value::None();
        } else if (with_namespace && Look().type == TokType::kOp && Look().text == ".") {
          n = Make(NodeKind::kNsRef, t);
          n->str = t.text;
          Next();
          Next();
          n->str2 = ExpectName();
          return n;
        } else {
          n = Make(NodeKind::kName, t);
          n->str = t.text;
        }
        Next();
        return n;
      }
      case TokType::kString: {
        NodePtr n = Make(NodeKind::kLiteral, t);
        std::string s;
        while (Cur().type == TokType::kString) s += Next().text;
        n->value = Value::Str(std::move(s));
        return n;
      }
      case TokType::kInt:
      case TokType::kFloat: {
        NodePtr n = Make(NodeKind::kLiteral, t);
        n->value = t.type == TokType::kInt ? Value::Int(t.int_value) : Value::Float(t.float_value);
        Next();
        return n;
      }
      case TokType::kOp:
        if (t.text == "(") {
          Next();
          NodePtr n = ParseTuple(false, true, {}, true);
          ExpectOp(")");
          return n;
        }
        if (t.text == "[" || t.text == "{") {
          bool is_list = t.text == "[";
          NodePtr n = Make(is_list ? NodeKind::kList : NodeKind::kDict, t);
          Next();
          const char* close = is_list ? "]" : "}";
          while (!IsOp(close)) {
            if (!n->list.empty()) ExpectOp(",");
            if (IsOp(close)) break;
            n->list.push_back(ParseExpression(true));
            if (!is_list) {
              ExpectOp(":");
              n->kw.push_back(ParseExpression(true));
            }
          }
          ExpectOp(close);
          return n;
        }
        break;
      default:
        break;
    }
    if (t.type == TokType::kEof) Fail(t, "unexpected end of template");
    Fail(t, "unexpected '" + Describe(t) + "'");
  }

  NodePtr ParsePostfix(NodePtr node) {
    DepthGuard restore(this, false);
    while (true) {
      if (IsOp(".") || IsOp("[")) {
        Deeper();
        node = ParseSubscript(std::move(node));
      } else if (IsOp("(")) {
        Deeper();
        node = ParseCall(std::move(node));
      } else {
        return node;
      }
    }
  }

  NodePtr ParseFilterExpr(NodePtr node) {
    DepthGuard restore(this, false);
    while (true) {
      if (IsOp("|")) {
        node = ParseFilterChain(std::move(node), false);
      } else if (IsName("is")) {
        Deeper();
        node = ParseTest(std::move(node));
      } else if (IsOp("(")) {
        Deeper();
        node = ParseCall(std::move(node));
      } else {
        return node;
      }
    }
  }

  NodePtr ParseSubscript(NodePtr obj) {
    const Token& t = Next();
    if (t.text == ".") {
      const Token& attr = Cur();
      if (attr.type == TokType::kName) {
        NodePtr n = Make(NodeKind::kGetAttr, t);
        n->a = std::move(obj);
        n->str = Next().text;
        return n;
      }
      if (attr.type != TokType::kInt) Fail(attr, "expected name or number");
      NodePtr n = Make(NodeKind::kGetItem, t);
      n->a = std::move(obj);
      n->b = Make(NodeKind::kLiteral, attr);
      n->b->value = Value::Int(attr.int_value);
      Next();
      return n;
    }
    std::vector<NodePtr> args;
    while (!IsOp("]")) {
      if (!args.empty()) ExpectOp(",");
      args.push_back(ParseSubscribed());
    }
    ExpectOp("]");
    NodePtr n = Make(NodeKind::kGetItem, t);
    n->a = std::move(obj);
    if (args.size() == 1) {
      n->b = std::move(args[0]);
    } else {
      n->b = Make(NodeKind::kTuple, t);
      n->b->list = std::move(args);
    }
    return n;
  }

  NodePtr ParseSubscribed() {
    const Token& at = Cur();
    NodePtr start;
    if (!SkipOp(":")) {
      NodePtr e = ParseExpression(true);
      if (!IsOp(":")) return e;
      Next();
      start = std::move(e);
    }
    NodePtr n = Make(NodeKind::kSlice, at);
    n->a = std::move(start);
    if (!IsOp(":") && !IsOp("]") && !IsOp(",")) n->b = ParseExpression(true);
    if (SkipOp(":")) {
      if (!IsOp("]") && !IsOp(",")) n->c = ParseExpression(true);
    }
    return n;
  }

  void ParseCallArgs(Node& n) {
    const Token& open = Cur();
    ExpectOp("(");
    bool require_comma = false;
    auto ensure = [&](bool ok) {
      if (!ok) Fail(open, "invalid syntax for function call expression");
    };
    while (!IsOp(")")) {
      if (require_comma) {
        ExpectOp(",");
        if (IsOp(")")) break;
      }
      if (IsOp("*")) {
        ensure(!n.c && !n.d);
        Next();
        n.c = ParseExpression(true);
      } else if (IsOp("**")) {
        ensure(!n.d);
        Next();
        n.d = ParseExpression(true);
      } else if (Cur().type == TokType::kName && Look().type == TokType::kOp &&
                 Look().text == "=") {
        ensure(!n.d);
        n.names.push_back(Next().text);
        Next();
        n.kw.push_back(ParseExpression(true));
      } else {
        ensure(!n.c && !n.d && n.kw.empty());
        n.list.push_back(ParseExpression(true));
      }
      require_comma = true;
    }
    ExpectOp(")");
  }

  NodePtr ParseCall(NodePtr callee) {
    NodePtr n = Make(NodeKind::kCall, Cur());
    n->line = callee->line;  // report calls where the callee is written
    n->column = callee->column;
    n->a = std::move(callee);
    ParseCallArgs(*n);
    return n;
  }

  std::string DottedName() {
    std::string name = ExpectName();
    while (SkipOp(".")) name += "." + ExpectName();
    return name;
  }

  NodePtr ParseFilterChain(NodePtr node, bool start_inline) {
    DepthGuard restore(this, false);
    while (IsOp("|") || start_inline) {
      Deeper();
      if (!start_inline) Next();
      start_inline = false;
      const Token& at = Cur();
      NodePtr f = Make(NodeKind::kFilter, at);
      f->str = DottedName();
      f->unknown = !IsKnownFilter(f->str);
      f->a = std::move(node);
      if (IsOp("(")) ParseCallArgs(*f);
      node = std::move(f);
    }
    return node;
  }

  NodePtr ParseTest(NodePtr node) {
    const Token& at = Next();  // "is"
    bool negated = SkipName("not");
    NodePtr t = Make(NodeKind::kTest, at);
    t->str = DottedName();
    t->unknown = !IsKnownTest(t->str);
    t->a = std::move(node);
    const Token& c = Cur();
    bool bare_arg = (c.type == TokType::kName || c.type == TokType::kString ||
                     c.type == TokType::kInt || c.type == TokType::kFloat ||
                     (c.type == TokType::kOp && (c.text == "[" || c.text == "{"))) &&
                    !(c.type == TokType::kName && OneOf(c.text, {"else", "or", "and"}));
    if (IsOp("(")) {
      ParseCallArgs(*t);
    } else if (bare_arg) {
      if (IsName("is")) Fail(c, "You cannot chain multiple tests with is");
      t->list.push_back(ParsePostfix(ParsePrimary(false)));
    }
    if (!negated) return t;
    NodePtr n = Make(NodeKind::kNot, at);
    n->a = std::move(t);
    return n;
  }

  // ---- compile-time checks ----
  void Validate(const Node& n, bool soft) {
    if ((n.kind == NodeKind::kFilter || n.kind == NodeKind::kTest) && n.unknown && !soft) {
      TemplateError e{ErrorKind::kSyntax, std::string("No ") +
                                              (n.kind == NodeKind::kFilter ? "filter" : "test") +
                                              " named '" + n.str + "'."};
      e.line = n.line;
      e.column = n.column;
      throw e;
    }
    bool inner_soft = soft;
    switch (n.kind) {
      case NodeKind::kIf:
      case NodeKind::kCondExpr:
        inner_soft = true;
        break;
      case NodeKind::kFor:
        if (n.b) Validate(*n.b, soft);
        inner_soft = false;
        for (const Node* c : {n.a.get(), n.c.get()}) {
          if (c) Validate(*c, false);
        }
        for (const NodePtr& c : n.body) Validate(*c, false);
        for (const NodePtr& c : n.else_body) Validate(*c, false);
        return;
      case NodeKind::kCallBlock:
        if (n.a) Validate(*n.a, soft);
        for (const NodePtr& c : n.list) {
          if (c) Validate(*c, false);
        }
        for (const NodePtr& c : n.body) Validate(*c, false);
        return;
      case NodeKind::kWith:
        for (const NodePtr& c : n.kw) Validate(*c, soft);
        for (const NodePtr& c : n.body) Validate(*c, false);
        return;
      case NodeKind::kMacro:
      case NodeKind::kSetBlock:
      case NodeKind::kFilterBlock:
        inner_soft = false;
        break;
      default:
        break;
    }
    for (const Node* c : {n.a.get(), n.b.get(), n.c.get(), n.d.get()}) {
      if (c) Validate(*c, inner_soft);
    }
    for (const auto* v : {&n.list, &n.kw, &n.body, &n.else_body}) {
      for (const NodePtr& c : *v) {
        if (c) Validate(*c, inner_soft);
      }
    }
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  std::vector<std::string> tag_stack_;
  std::vector<std::vector<std::string>> end_stack_;
};

}  // namespace

std::vector<NodePtr> Parse(std::string_view source, const LexerOptions& options) {
  return Parser(Tokenize(source, options)).ParseTemplate();
}

}  // namespace stet::tmpl
