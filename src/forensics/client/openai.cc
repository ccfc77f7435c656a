// Requests in both endpoint shapes, and answers read through the OpenAI wire
// module (wire/answer.h), which takes the variations real servers send: top
// logprobs as an object {token: lp} (legacy completions) or as a list of
// {token, logprob} (chat, newer servers), null entries, a missing fingerprint;
// here Python's non-JSON -Infinity/NaN for impossible tokens is read too.
#include "forensics/client/openai.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "wire/answer.h"

namespace stet::forensics {

using nlohmann::json;

namespace {

// Python's json module writes -Infinity / NaN, which strict parsers refuse.
// Used only after a strict parse failed.
std::string ReplaceNonFinite(std::string s) {
  auto replace_all = [&s](const std::string& from, const std::string& to) {
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) {
      s.replace(p, from.size(), to);
    }
  };
  replace_all("-Infinity", "-1e300");
  replace_all("Infinity", "1e300");
  replace_all("NaN", "null");
  return s;
}

Result<json> ParseJson(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) j = json::parse(ReplaceNonFinite(body), nullptr, false);
  if (j.is_discarded()) {
    return DataLoss("response is not JSON: " + body.substr(0, 200));
  }
  return j;
}

constexpr double kNoLogprob = -1e300;  // a logprob the server left out (or sent as non-finite)

void SortTop(std::vector<std::pair<std::string, double>>* top) {
  std::stable_sort(top->begin(), top->end(), [](const auto& a, const auto& b) {
    if (a.second != b.second) return a.second > b.second;
    return a.first < b.first;
  });
}

// The tokens of one choice as the wire reader read them, alternatives best first.
void AppendTokens(const wire::AnswerChoice& c, Completion* out) {
  if (!c.has_logprobs) return;
  out->has_logprobs = true;
  for (const wire::AnswerToken& t : c.tokens) {
    TokenLogprob tl;
    tl.token = t.token;
    tl.logprob = t.logprob.value_or(kNoLogprob);
    for (const auto& [token, lp] : t.top) tl.top.emplace_back(token, lp.value_or(kNoLogprob));
    SortTop(&tl.top);
    out->tokens.push_back(std::move(tl));
  }
}

Status ErrorFromAnswer(const wire::Answer& a) {
  if (a.error.is_null()) return Status::Ok();
  const std::string msg = a.error.is_object() ? wire::Str(a.error, "message") : a.error.dump();
  return InvalidArgument("server error: " + msg);
}

}  // namespace

// Defined below; they may throw json::exception, which the public wrappers catch.
Result<Completion> ParseCompletionImpl(const std::string& body);
Status AppendStreamChunkImpl(const std::string& data, Completion* acc);

json CompletionRequest::ToJson() const {
  json j;
  j["model"] = model;
  if (chat()) {
    j["messages"] = *messages;
  } else {
    j["prompt"] = prompt.value_or("");
  }
  j["max_tokens"] = max_tokens;
  j["temperature"] = temperature;
  if (seed) j["seed"] = *seed;
  if (top_logprobs > 0) {
    if (chat()) {
      j["logprobs"] = true;
      j["top_logprobs"] = top_logprobs;
    } else {
      j["logprobs"] = top_logprobs;
    }
  }
  if (stream) j["stream"] = true;
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
  return j;
}

Result<Completion> ParseCompletion(const std::string& body) {
  try {
    return ParseCompletionImpl(body);
  } catch (const json::exception& e) {
    return DataLoss(std::string("unexpected response shape: ") + e.what());
  }
}

Status AppendStreamChunk(const std::string& data, Completion* acc) {
  try {
    return AppendStreamChunkImpl(data, acc);
  } catch (const json::exception& e) {
    return DataLoss(std::string("unexpected stream chunk shape: ") + e.what());
  }
}

Result<Completion> ParseCompletionImpl(const std::string& body) {
  STET_ASSIGN_OR_RETURN(json j, ParseJson(body));
  const wire::Answer a = wire::ReadAnswer(wire::Json(j));
  STET_RETURN_IF_ERROR(ErrorFromAnswer(a));
  if (a.choices.empty() || !j.contains("choices")) {
    return DataLoss("response has no choices: " + body.substr(0, 200));
  }
  const wire::AnswerChoice& c = a.choices[0];
  Completion out;
  out.system_fingerprint = a.system_fingerprint;
  out.model = a.model;
  out.finish_reason = c.finish_reason;
  out.text = c.text;
  AppendTokens(c, &out);
  return out;
}

Status AppendStreamChunkImpl(const std::string& data, Completion* acc) {
  STET_ASSIGN_OR_RETURN(json j, ParseJson(data));
  if (!j.is_object()) return DataLoss("stream chunk is not a JSON object: " + data.substr(0, 200));
  // A streamed choice must say which choice it continues: an index of another
  // type cannot be folded (a non-streamed answer's order says it instead).
  if (j.contains("choices") && j["choices"].is_array()) {
    for (const json& c : j["choices"]) {
      if (c.is_object() && c.contains("index") && !c["index"].is_number_integer())
        return DataLoss("unexpected stream chunk shape: a choice's index is not an integer");
    }
  }
  const wire::Answer a = wire::ReadAnswer(wire::Json(j));
  STET_RETURN_IF_ERROR(ErrorFromAnswer(a));
  if (!a.system_fingerprint.empty()) acc->system_fingerprint = a.system_fingerprint;
  if (!a.model.empty()) acc->model = a.model;
  for (const wire::AnswerChoice& c : a.choices) {  // a usage chunk has none
    if (c.index != 0) continue;
    acc->text += c.text;
    if (!c.finish_reason.empty()) acc->finish_reason = c.finish_reason;
    AppendTokens(c, acc);
  }
  return Status::Ok();
}

Result<Completion> Complete(HttpClient& client, const std::string& base_url,
                            const CompletionRequest& req) {
  const std::string url = EndpointUrl(base_url, req.Path());
  const std::string body = req.ToJson().dump();
  if (req.stream) {
    Completion acc;
    Status chunk_status;
    HttpResponse meta;
    Status st = client.PostSse(
        url, body,
        [&](const std::string& data) {
          chunk_status = AppendStreamChunk(data, &acc);
          return chunk_status.ok();
        },
        &meta);
    STET_RETURN_IF_ERROR(st);
    STET_RETURN_IF_ERROR(chunk_status);
    acc.seconds = meta.seconds;
    return acc;
  }
  STET_ASSIGN_OR_RETURN(HttpResponse r, client.PostJson(url, body));
  if (r.status < 200 || r.status >= 300) return HttpStatusError(url, r);
  STET_ASSIGN_OR_RETURN(Completion c, ParseCompletion(r.body));
  c.seconds = r.seconds;
  return c;
}

Result<std::string> ReadTextFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return IoError("cannot read '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return IoError("cannot write '" + path + "'");
  f << text;
  f.close();
  if (!f) return IoError("write to '" + path + "' failed");
  return Status::Ok();
}

Result<json> LoadMessagesFile(const std::string& path) {
  STET_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return InvalidArgument("'" + path + "' is not JSON");
  if (j.is_object() && j.contains("messages")) j = j["messages"];
  if (!j.is_array() || j.empty()) {
    return InvalidArgument("'" + path +
                           "' must hold a non-empty JSON array of {role, content} messages");
  }
  for (const json& m : j) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      return InvalidArgument("'" + path + "': every message needs a string \"role\"");
    }
  }
  return j;
}

}  // namespace stet::forensics
