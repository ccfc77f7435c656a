// libFuzzer target for the server's JSON request reader: arbitrary bytes go
// through ParseBody (UTF-8, depth, the linear-time DOM builder), then both
// endpoints' parsers. Any outcome is fine except a crash, a sanitizer report,
// an exception escaping, a slow unit (the reader must be linear in the body),
// or a broken invariant: a parsed body dumps and re-parses to itself, and a
// request the parsers accept respects the documented bounds.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "http/json_fields.h"
#include "server/openai/request_parse.h"

namespace {

void Require(bool cond, const char* what) {
  if (!cond) {
    std::fprintf(stderr, "request_fuzz: invariant failed: %s\n", what);
    std::abort();
  }
}

void CheckCommon(const stet::server::CommonFields& s) {
  using namespace stet::server;
  Require(s.params.stop.size() <= static_cast<size_t>(kMaxStop), "stop count");
  for (const auto& stop : s.params.stop) Require(stop.size() <= kMaxStopBytes, "stop length");
  Require(s.params.sampling.logit_bias.size() <= static_cast<size_t>(kMaxLogitBias),
          "logit_bias count");
  Require(s.cache_salt.size() <= kMaxCacheSaltBytes, "cache_salt length");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stet::server;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto body = ParseBody(text);
  if (!body.ok()) {
    Require(body.error().status == 400, "a refused body is a 400");
    return 0;
  }
  // The builder keeps one value per key, in first-seen order: the dump reads back the same.
  const std::string dumped = Dump(*body);
  auto again = ParseBody(dumped);
  Require(again.ok() && *again == *body, "dump and re-parse give the same body");

  ServedModel model;
  model.id = "m";
  model.file_name = "m.gguf";
  model.file_stem = "m";
  auto c = ParseCompletionRequest(*body, model);
  if (c.ok()) {
    CheckCommon(c->s);
    Require(!c->prompts.empty() && c->prompts.size() <= static_cast<size_t>(kMaxPrompts),
            "prompt count");
  } else {
    Require(c.error().status >= 400 && c.error().status < 500, "a refused completion is a 4xx");
  }
  auto chat = ParseChatRequest(*body, model);
  if (chat.ok()) {
    CheckCommon(chat->s);
    Require(chat->messages.is_array() && !chat->messages.empty(), "messages");
  } else {
    Require(chat.error().status >= 400 && chat.error().status < 500, "a refused chat is a 4xx");
  }
  return 0;
}
