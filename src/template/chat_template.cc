// The public face of the template engine: turns the internal TemplateError
// (and allocation failures) into stet::Status, so no exception leaves the
// layer, and builds the render context the way transformers does.
#include "template/chat_template.h"

#include <chrono>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/enum_names.h"
#include "template/interpreter.h"
#include "template/parser.h"
#include "template/python/builtins.h"
#include "template/python/unicode.h"

namespace stet {

struct ChatTemplate::Compiled {
  std::string source;
  std::vector<tmpl::NodePtr> body;
};

namespace {

Status ToStatus(const tmpl::TemplateError& e) {
  std::string where = e.line > 0 ? "chat template line " + std::to_string(e.line) + ", column " +
                                       std::to_string(e.column) + ": "
                                 : "chat template: ";
  std::string msg = where + tmpl::ErrorKindName(e.kind) + ": " + e.message;
  if (e.kind == tmpl::ErrorKind::kLimit) return ResourceExhausted(std::move(msg));
  if (e.kind == tmpl::ErrorKind::kCancelled) return Cancelled(std::move(msg));
  return InvalidArgument(std::move(msg));
}

}  // namespace

Result<ChatTemplate> ChatTemplate::Parse(std::string_view source, const TemplateLimits& limits) {
  if (source.size() > limits.max_source_bytes) {
    return ResourceExhausted("chat template is " + std::to_string(source.size()) +
                             " bytes, over its size limit (" +
                             std::to_string(limits.max_source_bytes) + " bytes)");
  }
  try {
    auto compiled = std::make_shared<Compiled>();
    compiled->source = std::string(source);
    compiled->body = tmpl::Parse(source, tmpl::LexerOptions{});
    return ChatTemplate(std::move(compiled));
  } catch (const tmpl::TemplateError& e) {
    return ToStatus(e);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("chat template: out of memory while parsing");
  }
}

const std::string& ChatTemplate::source() const { return compiled_->source; }

template <typename Json>
Result<std::string> ChatTemplate::RenderImpl(const Json& context,
                                             const ChatTemplateOptions& options) const {
  if (!context.is_object()) {
    return InvalidArgument(std::string("chat template context must be a JSON object, got ") +
                           context.type_name());
  }
  const auto start = std::chrono::steady_clock::now();
  std::optional<tmpl::Interpreter> interp;
  auto run = [&]() -> Result<std::string> {
    try {
      interp.emplace(options.limits, options.now_unix, tmpl::FromJson(context), options.cancelled);
      return interp->Run(compiled_->body);
    } catch (const tmpl::TemplateError& e) {
      return ToStatus(e);
    } catch (const std::bad_alloc&) {
      return ResourceExhausted("chat template: out of memory while rendering");
    } catch (const std::length_error&) {
      return ResourceExhausted("chat template: a value grew too large while rendering");
    }
  };
  Result<std::string> out = run();
  if (options.usage != nullptr) {
    TemplateUsage& u = *options.usage;
    u = TemplateUsage{};
    if (interp) {
      u.steps = interp->budget().steps();
      u.peak_memory_bytes = interp->budget().peak_bytes();
      u.created_bytes = interp->budget().created_bytes();
      u.loop_iterations = interp->iterations();
    }
    u.output_bytes = out.ok() ? out->size() : 0;
    u.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return out;
}

Result<std::string> ChatTemplate::Render(const nlohmann::json& context,
                                         const ChatTemplateOptions& options) const {
  return RenderImpl(context, options);
}

Result<std::string> ChatTemplate::Render(const nlohmann::ordered_json& context,
                                         const ChatTemplateOptions& options) const {
  return RenderImpl(context, options);
}

namespace {

template <typename Json>
Json Context(const Json& messages, const Json& tools, bool add_generation_prompt,
             const std::string& bos_token, const std::string& eos_token) {
  Json context = Json::object();
  context["messages"] = messages;
  context["tools"] = tools;
  context["documents"] = nullptr;
  context["add_generation_prompt"] = add_generation_prompt;
  context["bos_token"] = bos_token;
  context["eos_token"] = eos_token;
  return context;
}

template <typename Json>
Result<std::string> Apply(std::string_view tmpl, const Json& messages, const Json& tools,
                          bool add_generation_prompt, const std::string& bos_token,
                          const std::string& eos_token, const Json& extra,
                          const ChatTemplateOptions& options) {
  if (!extra.is_null() && !extra.is_object()) {
    return InvalidArgument(std::string("chat template extra kwargs must be an object, got ") +
                           extra.type_name());
  }
  Json context = Context(messages, tools, add_generation_prompt, bos_token, eos_token);
  if (extra.is_object()) {
    for (auto it = extra.begin(); it != extra.end(); ++it) context[it.key()] = it.value();
  }
  STET_ASSIGN_OR_RETURN(ChatTemplate t, ChatTemplate::Parse(tmpl, options.limits));
  return t.Render(context, options);
}

}  // namespace

nlohmann::ordered_json ChatTemplateContext(const nlohmann::ordered_json& messages,
                                           const nlohmann::ordered_json& tools,
                                           bool add_generation_prompt, const std::string& bos_token,
                                           const std::string& eos_token) {
  return Context(messages, tools, add_generation_prompt, bos_token, eos_token);
}

Result<std::string> ApplyChatTemplate(std::string_view tmpl, const nlohmann::ordered_json& messages,
                                      const nlohmann::ordered_json& tools,
                                      bool add_generation_prompt, const std::string& bos_token,
                                      const std::string& eos_token,
                                      const nlohmann::ordered_json& extra,
                                      const ChatTemplateOptions& options) {
  return Apply(tmpl, messages, tools, add_generation_prompt, bos_token, eos_token, extra, options);
}

Result<std::string> ApplyChatTemplate(std::string_view tmpl, const nlohmann::json& messages,
                                      const nlohmann::json& tools, bool add_generation_prompt,
                                      const std::string& bos_token, const std::string& eos_token,
                                      const nlohmann::json& extra) {
  return Apply(tmpl, messages, tools, add_generation_prompt, bos_token, eos_token, extra,
               ChatTemplateOptions{});
}

Result<std::string> ApplyChatTemplate(std::string_view tmpl, const nlohmann::json& messages,
                                      const nlohmann::json& tools, bool add_generation_prompt,
                                      const std::string& bos_token, const std::string& eos_token) {
  return ApplyChatTemplate(tmpl, messages, tools, add_generation_prompt, bos_token, eos_token,
                           nlohmann::json());
}

Result<std::string> ContinueFinalMessage(std::string rendered, std::string_view final_text) {
  // transformers' steps, in its words: find the stripped message, then keep
  // its trailing spacing only where the template kept the message intact.
  const std::string stripped = tmpl::PyStrip(final_text, nullptr, true, true);
  const std::string lstripped = tmpl::PyStrip(final_text, nullptr, true, false);
  if (stripped.empty()) {
    return InvalidArgument(
        "continue_final_message needs a final message with text to continue; the last message's "
        "content is empty");
  }
  const size_t at = tmpl::RFindBytes(rendered, stripped);
  if (at == std::string::npos) {
    return InvalidArgument(
        "continue_final_message is set but the final message does not appear in the chat after "
        "applying the chat template (the template changes the message's text)");
  }
  const bool intact = rendered.compare(at, lstripped.size(), final_text) == 0 &&
                      lstripped.size() == final_text.size();
  rendered.resize(at + (intact ? lstripped.size() : stripped.size()));
  return rendered;
}

std::string StrftimeUtc(std::string_view format, int64_t unix_seconds) {
  return tmpl::StrftimeFixed(format, unix_seconds);
}

}  // namespace stet

namespace stet::tmpl {

namespace {

constexpr EnumName<ErrorKind> kErrorKindNames[] = {{ErrorKind::kSyntax, "TemplateSyntaxError"},
                                                   {ErrorKind::kUndefined, "UndefinedError"},
                                                   {ErrorKind::kType, "TypeError"},
                                                   {ErrorKind::kValue, "ValueError"},
                                                   {ErrorKind::kRuntime, "TemplateRuntimeError"},
                                                   {ErrorKind::kSecurity, "SecurityError"},
                                                   {ErrorKind::kRaised, "raise_exception"},
                                                   {ErrorKind::kLimit, "LimitExceeded"},
                                                   {ErrorKind::kCancelled, "Cancelled"}};

}  // namespace

const char* ErrorKindName(ErrorKind kind) { return NameOf(kErrorKindNames, kind, "TemplateError"); }

}  // namespace stet::tmpl
