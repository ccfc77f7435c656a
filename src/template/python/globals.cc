// Jinja's global functions as HF transformers' sandbox provides them: range
// (capped at MAX_RANGE = 100000 like the sandbox), dict, namespace, cycler,
// joiner, plus transformers' raise_exception and strftime_now. strftime_now
// formats the render's fixed instant (Limits::now_unix, UTC) in the "C"
// locale, never the wall clock, so a rendered prompt is reproducible.
#include <locale.h>
#include <time.h>

#include <algorithm>
#include <map>

#include "template/budget.h"
#include "template/objects.h"
#include "template/python/builtins.h"

namespace stet::tmpl {
namespace {

constexpr int64_t kMaxRange = 100000;

Value Range(Interpreter&, CallArgs& args) {
  if (!args.keyword.empty()) Throw(ErrorKind::kType, "range() takes no keyword arguments");
  const auto& p = args.positional;
  if (p.empty() || p.size() > 3)
    Throw(ErrorKind::kType, "range expected 1 to 3 arguments, got " + std::to_string(p.size()));
  int64_t start = 0, stop, step = 1;
  if (p.size() == 1) {
    stop = ToInt64(p[0], "range");
  } else {
    start = ToInt64(p[0], "range");
    stop = ToInt64(p[1], "range");
    if (p.size() == 3) step = ToInt64(p[2], "range");
  }
  if (step == 0) Throw(ErrorKind::kValue, "range() arg 3 must not be zero");
  __int128 span =
      step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
  __int128 abs_step = step > 0 ? step : -static_cast<__int128>(step);
  __int128 count = span <= 0 ? 0 : (span + abs_step - 1) / abs_step;
  if (count > kMaxRange) {
    Throw(
        ErrorKind::kValue,
        "OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  }
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(count));
  for (__int128 i = 0; i < count; ++i)
    items.push_back(Value::Int(static_cast<int64_t>(start + i * step)));
  std::string repr = "range(" + std::to_string(start) + ", " + std::to_string(stop) +
                     (step != 1 ? ", " + std::to_string(step) : "") + ")";
  return Value::Special(std::move(items), SeqKind::kView, "range", std::move(repr));
}

// dict(*args, **kwargs) into `d`.
void FillDict(DictData& d, const CallArgs& args, const char* fn) {
  if (args.positional.size() > 1)
    Throw(ErrorKind::kType, std::string(fn) + " expected at most 1 argument");
  if (!args.positional.empty()) {
    const Value& src = args.positional[0];
    if (src.is_dict()) {
      for (const auto& [k, v] : src.dict().entries) d.Set(k, v);
    } else {
      for (const Value& pair : Iterate(src)) {
        std::vector<Value> kv = Iterate(pair);
        if (kv.size() != 2)
          Throw(ErrorKind::kValue, "dictionary update sequence element has length " +
                                       std::to_string(kv.size()) + "; 2 is required");
        d.Set(kv[0], kv[1]);
      }
    }
  }
  for (const auto& [k, v] : args.keyword) d.Set(Value::Str(k), v);
}

class CyclerObj : public Object {
 public:
  explicit CyclerObj(std::vector<Value> items) : items_(std::move(items)) {
    uint32_t deepest = 0;
    for (const Value& v : items_) deepest = std::max(deepest, v.nesting());
    nesting = CheckedNesting(deepest);
  }
  std::string TypeName() const override { return "Cycler"; }
  std::optional<Value> GetAttr(std::string_view name) const override {
    if (name == "current") return items_[pos_];
    if (name == "next" || name == "reset") {
      auto self = std::static_pointer_cast<const CyclerObj>(shared_from_this());
      bool next = name == "next";
      auto fn = std::make_shared<NativeFunction>(
          std::string(name), [self, next](Interpreter&, CallArgs&) {
            if (!next) {
              self->pos_ = 0;
              return Value::None();
            }
            Value v = self->items_[self->pos_];
            self->pos_ = (self->pos_ + 1) % self->items_.size();
            return v;
          });
      fn->nesting = CheckedNesting(nesting);
      return Value::Obj(fn);
    }
    return std::nullopt;
  }

 private:
  std::vector<Value> items_;
  mutable size_t pos_ = 0;
};

class JoinerObj : public Object {
 public:
  explicit JoinerObj(std::string sep) : sep_(std::move(sep)) {}
  std::string TypeName() const override { return "Joiner"; }
  bool Callable() const override { return true; }
  Value Call(Interpreter&, CallArgs&) const override {
    if (!used_) {
      used_ = true;
      return Value::Str("");
    }
    return Value::Str(sep_);
  }

 private:
  std::string sep_;
  mutable bool used_ = false;
};

std::map<std::string, Value, std::less<>> MakeGlobals() {
  std::map<std::string, Value, std::less<>> g;
  auto add = [&g](const char* name, NativeFunction::Fn fn) {
    g.emplace(name, Value::Obj(std::make_shared<NativeFunction>(name, std::move(fn))));
  };
  add("range", Range);
  add("dict", [](Interpreter&, CallArgs& args) {
    auto d = std::make_shared<DictData>();
    FillDict(*d, args, "dict");
    return Value::Dict(std::move(d));
  });
  add("namespace", [](Interpreter& in, CallArgs& args) {
    auto ns = std::make_shared<NamespaceObj>();
    FillDict(ns->attrs(), args, "namespace");
    in.Track(ns);
    return Value::Obj(ns);
  });
  add("cycler", [](Interpreter&, CallArgs& args) {
    if (args.positional.empty()) Throw(ErrorKind::kRuntime, "at least one item has to be provided");
    return Value::Obj(std::make_shared<CyclerObj>(args.positional));
  });
  add("joiner", [](Interpreter&, CallArgs& args) {
    Args a(args, "joiner", {"sep"});
    return Value::Obj(std::make_shared<JoinerObj>(ToStr(a.get_or(0, Value::Str(", ")))));
  });
  add("lipsum", [](Interpreter&, CallArgs&) -> Value {
    Throw(ErrorKind::kRuntime, "lipsum() is random; stet's template engine does not provide it");
  });
  add("raise_exception", [](Interpreter&, CallArgs& args) -> Value {
    Args a(args, "raise_exception", {"message"});
    Throw(ErrorKind::kRaised, ToStr(a.get(0)));
  });
  add("strftime_now", [](Interpreter& in, CallArgs& args) {
    Args a(args, "strftime_now", {"format"});
    if (!a.get(0).is_string())
      Throw(ErrorKind::kType, "strftime() argument 1 must be str, not " + TypeName(a.get(0)));
    return Value::Str(StrftimeFixed(a.get(0).str(), in.now_unix()));
  });
  return g;
}

}  // namespace

const Value* FindGlobal(std::string_view name) {
  static const auto* globals = [] {
    // Made once per process, by whichever render needs them first: charged to
    // none, or that render's count would differ from every later one's.
    ActiveBudgetScope outside_any_render(nullptr);
    return new std::map<std::string, Value, std::less<>>(MakeGlobals());
  }();
  auto it = globals->find(name);
  return it == globals->end() ? nullptr : &it->second;
}

std::string StrftimeFixed(std::string_view format, int64_t unix_seconds) {
  static locale_t c_locale = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(nullptr));
  time_t t = static_cast<time_t>(unix_seconds);
  struct tm tm_utc {};
  gmtime_r(&t, &tm_utc);
  ChargeScan(format.size());
  std::string out;
  // strftime_l costs ~1 us: each distinct conversion is formatted once ("%c" * 1000000 is one
  // call).
  std::map<std::string, std::string, std::less<>> done;
  size_t i = 0;
  while (i < format.size()) {
    // One conversion writes up to 256 bytes: "%c%c%c..." grows 12-fold.
    ReserveBytes(out.size() + 256);
    if (format[i] != '%' || i + 1 >= format.size()) {
      out += format[i++];
      continue;
    }
    size_t j = i + 1;
    while (j < format.size() && std::string_view("-_0^#").find(format[j]) != std::string_view::npos)
      ++j;
    while (j < format.size() && format[j] >= '0' && format[j] <= '9' && j - i < 6) ++j;
    while (j < format.size() && (format[j] == 'E' || format[j] == 'O')) ++j;
    if (j >= format.size()) {
      out.append(format.substr(i));
      break;
    }
    ChargeSteps(2);
    char conv = format[j];
    std::string spec(format.substr(i, j - i + 1));
    i = j + 1;
    if (conv == 'f') {
      out += "000000";
    } else if (conv == 'z' || conv == 'Z') {
      // A naive datetime has no zone: Python renders these as empty.
    } else if (conv == '%') {
      out += '%';
    } else {
      auto it = done.find(spec);
      if (it == done.end()) {
        char buf[256];
        size_t n = c_locale ? strftime_l(buf, sizeof buf, spec.c_str(), &tm_utc, c_locale) : 0;
        it = done.emplace(spec, std::string(buf, n)).first;
      }
      out += it->second;
    }
  }
  return out;
}

}  // namespace stet::tmpl
