// The default TemplateLimits leave every real template a wide margin: each
// template of ../shared/chat-templates (and each of stet's built-ins) renders a 100-message
// conversation with tools within 5% of every limit, and ten 100 KiB messages within 15% (the
// quadratic Reka-Edge template uses 8.5% of the steps there, the others < 2%).
// The usage table it prints is the measurement behind the defaults in
// src/template/chat_template.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/test_support.h"
#include "template/builtin_templates.h"
#include "template/chat_template.h"

namespace stet {
namespace {

using nlohmann::ordered_json;

// Deterministic prose of about `len` bytes: ASCII, accents, CJK, an emoji,
// quotes, braces and newlines, as real chats hold.
std::string Text(int seed, size_t len) {
  static const char* kWords[] = {"the",
                                 "model",
                                 "answers",
                                 "quickly",
                                 "über",
                                 "naïve",
                                 "日本語",
                                 "テキスト",
                                 "\"quoted\"",
                                 "{braces}",
                                 "a<b>c",
                                 "tab\there",
                                 "emoji 😀",
                                 "line\nbreak",
                                 "it's",
                                 "JSON: {\"k\": [1, 2]}",
                                 "path/to/file.txt",
                                 "x = y + 1;"};
  constexpr int kN = sizeof(kWords) / sizeof(kWords[0]);
  std::string out;
  for (int i = 0; out.size() < len; ++i) {
    if (!out.empty()) out += ' ';
    out += kWords[(seed * 7 + i * 13 + i / kN) % kN];
  }
  return out;
}

ordered_json Tools() {
  ordered_json tools = ordered_json::array();
  for (int t = 0; t < 8; ++t) {
    ordered_json props = ordered_json::object();
    for (int p = 0; p < 5; ++p) {
      props["arg" + std::to_string(p)] = {{"type", p % 2 ? "integer" : "string"},
                                          {"description", Text(t * 5 + p, 60)}};
    }
    props["unit"] = {
        {"type", "string"}, {"description", "The unit."}, {"enum", {"celsius", "fahrenheit"}}};
    tools.push_back(
        {{"type", "function"},
         {"function",
          {{"name", "tool_" + std::to_string(t)},
           {"description", Text(t, 200)},
           {"parameters", {{"type", "object"}, {"properties", props}, {"required", {"arg0"}}}}}}});
  }
  return tools;
}

struct Shape {
  const char* name;
  bool system;
  bool tool_turns;  // assistant tool calls (two in parallel) and tool results
  bool tools;       // a tools list
  bool functions;   // firefunction-v2's own variables: `functions` (the tools as JSON text) and
                    // `datetime`
};

// About 100 messages ending with a user turn; each text message ~1 KB.
ordered_json Conversation(const Shape& shape, size_t content_bytes = 1000, int n_messages = 100) {
  ordered_json m = ordered_json::array();
  if (shape.system) m.push_back({{"role", "system"}, {"content", Text(0, content_bytes)}});
  for (int turn = 0; static_cast<int>(m.size()) < n_messages - 1; ++turn) {
    m.push_back({{"role", "user"}, {"content", Text(turn * 2 + 1, content_bytes)}});
    if (shape.tool_turns && turn % 3 == 1) {
      ordered_json calls = ordered_json::array();
      for (int c = 0; c < 2; ++c) {
        char id[16];
        std::snprintf(id, sizeof id, "call%01d%c%01d%c%01d", c, 'A' + turn % 26, turn % 10, 'b' + c,
                      c);
        calls.push_back({{"id", id},
                         {"type", "function"},
                         {"function",
                          {{"name", "tool_" + std::to_string(c)},
                           {"arguments", {{"arg0", Text(turn, 40)}, {"arg1", turn}}}}}});
      }
      m.push_back({{"role", "assistant"}, {"content", ""}, {"tool_calls", calls}});
      for (int c = 0; c < 2; ++c) {
        m.push_back({{"role", "tool"},
                     {"tool_call_id", calls[c]["id"]},
                     {"name", calls[c]["function"]["name"]},
                     {"content", "{\"result\": \"" + Text(turn + c, 80) + "\"}"}});
      }
    }
    m.push_back({{"role", "assistant"}, {"content", Text(turn * 2 + 2, content_bytes)}});
  }
  m.push_back({{"role", "user"}, {"content", Text(999, content_bytes)}});
  return m;
}

ordered_json Context(const Shape& shape, const ordered_json& messages) {
  ordered_json c = {
      {"messages", messages}, {"tools", shape.tools ? Tools() : ordered_json(nullptr)},
      {"documents", nullptr}, {"add_generation_prompt", true},
      {"bos_token", "<s>"},   {"eos_token", "</s>"}};
  if (shape.functions) {
    c["functions"] = Tools().dump(2);
    c["datetime"] = "26 Jul 2024";
  }
  return c;
}

constexpr Shape kShapes[] = {
    {"system+tool turns+tools", true, true, true, false},
    {"tool turns+tools", false, true, true, false},
    {"system+tools", true, false, true, false},
    {"tools", false, false, true, false},
    {"system", true, false, false, false},
    {"plain", false, false, false, false},
    {"system+tool turns+functions", true, true, true, true},
};

struct Measured {
  std::string name;
  std::string shape;
  TemplateUsage usage;
};

// Renders the richest conversation shape the template accepts (templates
// raise_exception on roles or tools they do not support). A limit error is a
// failure: the defaults must let every real template through.
bool RenderBig(const ChatTemplate& t, const std::string& name, size_t content_bytes, int n_messages,
               Measured* m, std::string* why) {
  for (const Shape& shape : kShapes) {
    ChatTemplateOptions o;
    TemplateUsage u;
    o.usage = &u;
    Result<std::string> out =
        t.Render(Context(shape, Conversation(shape, content_bytes, n_messages)), o);
    if (out.ok()) {
      *m = {name, shape.name, u};
      return true;
    }
    *why += std::string(shape.name) + ": " + out.status().ToString() + "\n";
    if (out.status().code() == StatusCode::kResourceExhausted) return false;
  }
  return false;
}

// {name, source}: the corpus's templates, then the built-ins ("builtin:gemma").
std::vector<std::pair<std::string, std::string>> Templates() {
  std::vector<std::filesystem::path> files;
  for (const auto& e :
       std::filesystem::directory_iterator(testing::SharedDir() + "/chat-templates")) {
    if (e.path().extension() == ".jinja") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& f : files)
    out.emplace_back(f.stem().string(), testing::ReadFileOrDie(f.string()));
  for (const BuiltinTemplate& b : BuiltinTemplates())
    out.emplace_back("builtin:" + std::string(b.name), std::string(b.source));
  return out;
}

double Fraction(uint64_t used, uint64_t limit) {
  return static_cast<double>(used) / static_cast<double>(limit);
}

void CheckMargins(size_t content_bytes, int n_messages, double max_fraction) {
  const std::string dir = testing::SharedDir() + "/chat-templates";
  STET_REQUIRE_FILE(dir);
  const TemplateLimits limits;
  std::vector<Measured> all;
  for (const auto& [name, source] : Templates()) {
    Result<ChatTemplate> t = ChatTemplate::Parse(source);
    ASSERT_TRUE(t.ok()) << name << ": " << t.status().ToString();
    Measured m;
    std::string why;
    EXPECT_TRUE(RenderBig(*t, name, content_bytes, n_messages, &m, &why))
        << name << " rendered no shape:\n"
        << why;
    if (!m.name.empty()) all.push_back(m);
  }
  EXPECT_GE(all.size(), 60u);
  double worst[4] = {0, 0, 0, 0};
  std::string worst_name[4];
  std::printf("%-46s %-28s %9s %11s %11s %9s %7s\n", "template", "shape", "steps", "peak mem",
              "created", "output", "ms");
  for (const Measured& m : all) {
    const TemplateUsage& u = m.usage;
    std::printf("%-46s %-28s %9llu %11llu %11llu %9llu %7.1f\n", m.name.c_str(), m.shape.c_str(),
                static_cast<unsigned long long>(u.steps),
                static_cast<unsigned long long>(u.peak_memory_bytes),
                static_cast<unsigned long long>(u.created_bytes),
                static_cast<unsigned long long>(u.output_bytes), u.seconds * 1e3);
    const double f[4] = {Fraction(u.steps, limits.max_steps),
                         Fraction(u.peak_memory_bytes, limits.max_memory_bytes),
                         Fraction(u.output_bytes, limits.max_output_bytes),
                         u.seconds * 1e3 / static_cast<double>(limits.max_wall_ms)};
    for (int k = 0; k < 4; ++k) {
      if (f[k] > worst[k]) worst[k] = f[k], worst_name[k] = m.name;
    }
  }
  const char* what[4] = {"steps", "memory_bytes", "output_bytes", "wall_ms"};
  for (int k = 0; k < 4; ++k) {
    std::printf("largest share of max_%s: %.3f%% (%s)\n", what[k], worst[k] * 100,
                worst_name[k].c_str());
#if defined(__SANITIZE_ADDRESS__)
    if (k == 3) {
      std::printf(
          "  (wall time not asserted under AddressSanitizer, which runs several times slower)\n");
      continue;
    }
#endif
    EXPECT_LT(worst[k], max_fraction) << what[k] << " of " << worst_name[k];
  }
}

TEST(TemplateBudgetMargin, EveryRealTemplateRendersAHundredMessagesWithTools) {
  CheckMargins(/*content_bytes=*/1000, /*n_messages=*/100, /*max_fraction=*/0.05);
}

TEST(TemplateBudgetMargin, EveryRealTemplateRendersAOneMegabyteConversation) {
  // 10 messages of 100 KiB: the size a long-context prompt reaches.
  CheckMargins(/*content_bytes=*/100 << 10, /*n_messages=*/10, /*max_fraction=*/0.15);
}

}  // namespace
}  // namespace stet
