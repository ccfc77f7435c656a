// Response parsing is tolerant of the variations real servers send: top
// logprobs as an object {token: lp} (legacy completions) or as a list of
// {token, logprob} (chat, newer servers), null entries, a missing fingerprint,
// and Python's non-JSON -Infinity/NaN for impossible tokens.
#include "forensics/client/openai.h"

#include <algorithm>
#include <fstream>
#include <sstream>

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

double Num(const json& v, double fallback) { return v.is_number() ? v.get<double>() : fallback; }

std::string Str(const json& v) { return v.is_string() ? v.get<std::string>() : std::string(); }

void SortTop(std::vector<std::pair<std::string, double>>* top) {
  std::stable_sort(top->begin(), top->end(), [](const auto& a, const auto& b) {
    if (a.second != b.second) return a.second > b.second;
    return a.first < b.first;
  });
}

std::vector<std::pair<std::string, double>> ReadTop(const json& t) {
  std::vector<std::pair<std::string, double>> top;
  if (t.is_object()) {
    for (auto it = t.begin(); it != t.end(); ++it)
      top.emplace_back(it.key(), Num(it.value(), -1e300));
  } else if (t.is_array()) {
    for (const json& e : t) {
      if (e.is_object())
        top.emplace_back(Str(e.value("token", json())), Num(e.value("logprob", json()), -1e300));
    }
  }
  SortTop(&top);
  return top;
}

// Appends the tokens of a choice's "logprobs" member, either shape.
void ReadLogprobs(const json& lp, Completion* out) {
  if (!lp.is_object()) return;
  if (lp.contains("content") && lp["content"].is_array()) {  // chat shape
    out->has_logprobs = true;
    for (const json& e : lp["content"]) {
      if (!e.is_object()) continue;
      TokenLogprob t;
      t.token = Str(e.value("token", json()));
      t.logprob = Num(e.value("logprob", json()), -1e300);
      if (e.contains("top_logprobs")) t.top = ReadTop(e["top_logprobs"]);
      out->tokens.push_back(std::move(t));
    }
    return;
  }
  if (lp.contains("tokens") && lp["tokens"].is_array()) {  // completions shape
    out->has_logprobs = true;
    const json& toks = lp["tokens"];
    const json empty_array = json::array();
    const json& lps = lp.contains("token_logprobs") && lp["token_logprobs"].is_array()
                          ? lp["token_logprobs"]
                          : empty_array;
    const json& tops = lp.contains("top_logprobs") && lp["top_logprobs"].is_array()
                           ? lp["top_logprobs"]
                           : empty_array;
    for (size_t i = 0; i < toks.size(); ++i) {
      TokenLogprob t;
      t.token = Str(toks[i]);
      t.logprob = i < lps.size() ? Num(lps[i], -1e300) : -1e300;
      if (i < tops.size()) t.top = ReadTop(tops[i]);
      out->tokens.push_back(std::move(t));
    }
  }
}

Status ErrorFromBody(const json& j) {
  if (j.is_object() && j.contains("error")) {
    const json& e = j["error"];
    std::string msg = e.is_object() ? Str(e.value("message", json())) : e.dump();
    return InvalidArgument("server error: " + msg);
  }
  return Status::Ok();
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
  STET_RETURN_IF_ERROR(ErrorFromBody(j));
  if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() ||
      j["choices"].empty()) {
    return DataLoss("response has no choices: " + body.substr(0, 200));
  }
  const json& c = j["choices"][0];
  Completion out;
  out.system_fingerprint = Str(j.value("system_fingerprint", json()));
  out.model = Str(j.value("model", json()));
  out.finish_reason = Str(c.value("finish_reason", json()));
  if (c.contains("message") && c["message"].is_object()) {
    out.text = Str(c["message"].value("content", json()));
  } else {
    out.text = Str(c.value("text", json()));
  }
  if (c.contains("logprobs")) ReadLogprobs(c["logprobs"], &out);
  return out;
}

Status AppendStreamChunkImpl(const std::string& data, Completion* acc) {
  STET_ASSIGN_OR_RETURN(json j, ParseJson(data));
  STET_RETURN_IF_ERROR(ErrorFromBody(j));
  if (!j.is_object()) return DataLoss("stream chunk is not a JSON object: " + data.substr(0, 200));
  const std::string fp = Str(j.value("system_fingerprint", json()));
  if (!fp.empty()) acc->system_fingerprint = fp;
  const std::string model = Str(j.value("model", json()));
  if (!model.empty()) acc->model = model;
  if (!j.contains("choices") || !j["choices"].is_array())
    return Status::Ok();  // e.g. a usage chunk
  for (const json& c : j["choices"]) {
    if (!c.is_object() || c.value("index", 0) != 0) continue;
    if (c.contains("delta") && c["delta"].is_object()) {
      acc->text += Str(c["delta"].value("content", json()));
    } else {
      acc->text += Str(c.value("text", json()));
    }
    const std::string fr = Str(c.value("finish_reason", json()));
    if (!fr.empty()) acc->finish_reason = fr;
    if (c.contains("logprobs")) ReadLogprobs(c["logprobs"], acc);
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
