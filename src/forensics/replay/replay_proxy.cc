// Replay of proxy exchanges. Answers are compared on what every
// OpenAI-compatible endpoint gives: the token texts and logprobs of
// logprobs.content (chat) or logprobs.tokens (completions) where both sides
// carry them, else the text byte by byte; then tool calls (name and
// arguments) and the finish reason. Sessions link a chat request to the
// latest earlier one whose messages are a strict prefix of its own, and a
// responses request to the one whose answer id it names (previous_response_id).
#include "forensics/replay/replay_proxy.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "forensics/client/answer_shaping.h"
#include "forensics/client/http_client.h"
#include "forensics/store/exchange.h"
#include "wire/answer.h"
#include "wire/json_read.h"
#include "wire/stream_fold.h"

namespace stet::forensics {

using wire::Str;

namespace {

using OJson = nlohmann::ordered_json;

std::string Dump(const OJson& j) { return j.dump(-1, ' ', false, OJson::error_handler_t::replace); }

struct Choice {
  std::string text;
  bool has_tokens = false;
  std::vector<std::string> tokens;
  std::vector<std::optional<double>> logprobs;
  std::string tool_calls;  // canonical [{name, arguments}], "" when none
  std::string finish;
};

// {name, arguments} of each call, canonical: what two answers' calls are compared on.
std::string CallsText(const std::vector<wire::ToolCall>& calls, bool responses) {
  if (calls.empty()) return "";
  std::string text;
  OJson arr = OJson::array();
  for (const wire::ToolCall& c : calls) {
    OJson one = OJson{{"name", c.name}, {"arguments", c.arguments}};
    if (responses) text += Dump(one);  // one object per function_call item
    arr.push_back(std::move(one));
  }
  return responses ? text : Dump(arr);
}

std::vector<Choice> ChoicesOf(const std::string& endpoint, const OJson& answer) {
  std::vector<Choice> out;
  if (!answer.is_object()) return out;
  const bool responses = endpoint == "/v1/responses";
  const wire::Answer a =
      wire::ReadAnswer(answer, responses ? wire::ApiKind::kResponses : wire::ApiKind::kChat);
  for (const wire::AnswerChoice& c : a.choices) {
    Choice ch;
    ch.text = c.text;
    ch.tool_calls = CallsText(c.tool_calls, responses);
    ch.finish = responses ? a.status : c.finish_reason;
    if (!responses && c.has_logprobs) {
      ch.has_tokens = true;
      for (const wire::AnswerToken& t : c.tokens) {
        ch.tokens.push_back(t.token);
        ch.logprobs.push_back(t.logprob);
      }
    }
    out.push_back(std::move(ch));
  }
  return out;
}

std::string Tail(const std::string& s, size_t end) {
  end = std::min(end, s.size());
  size_t from = end > 40 ? end - 40 : 0;
  while (from > 0 && from < s.size() && (static_cast<unsigned char>(s[from]) & 0xC0) == 0x80)
    --from;
  return s.substr(from, end - from);
}

// metadata.stet_clock = the recorded instant; with kRecordedNote also a note the
// model reads (chat: a first system message; responses: an instructions line).
void PinClock(ApiKind kind, const std::string& instant, ProxyReplayOptions::Clock clock,
              OJson& body) {
  if (!body.contains("metadata") || !body["metadata"].is_object())
    body["metadata"] = OJson::object();
  body["metadata"]["stet_clock"] = instant;
  if (clock != ProxyReplayOptions::Clock::kRecordedNote) return;
  const std::string note = "The current date and time is " + instant + ".";
  if (kind == ApiKind::kChat && body.contains("messages") && body["messages"].is_array()) {
    OJson msg = OJson::object();
    msg["role"] = "system";
    msg["content"] = note;
    body["messages"].insert(body["messages"].begin(), std::move(msg));
  } else if (kind == ApiKind::kResponses) {
    const OJson& old = body.contains("instructions") ? body["instructions"] : OJson();
    body["instructions"] = old.is_string() ? note + "\n" + old.get<std::string>() : note;
  }
}

bool Replayable(const OJson& r) {
  const std::string ep = Str(r, "endpoint");
  if (ep != "/v1/chat/completions" && ep != "/v1/completions" && ep != "/v1/responses")
    return false;
  const int status = r.value("status", 0);
  return r.contains("request") && r["request"].is_object() && status >= 200 && status < 300 &&
         Str(r, "outcome") == "ok";
}

}  // namespace

OJson ProxyReplayBody(const ExchangeJson& record, const ProxyReplayOptions& o) {
  if (!Replayable(record)) return nullptr;
  OJson body = record["request"];
  body.erase("stream");
  body.erase("stream_options");
  if (record.contains("injected") && record["injected"].is_object()) {
    for (auto it = record["injected"].begin(); it != record["injected"].end(); ++it)
      body[it.key()] = it.value();
  }
  if (!o.model.empty()) body["model"] = o.model;
  const ApiKind kind = ApiKindOfPath(Str(record, "endpoint"));
  if (o.logprobs) InjectLogprobs(kind, body, 5);
  if (o.clock != ProxyReplayOptions::Clock::kNone)
    PinClock(kind, Str(record, "received_at"), o.clock, body);
  return body;
}

std::optional<ExchangeDeparture> CompareAnswers(const std::string& endpoint, const OJson& recorded,
                                                const OJson& replayed, bool* compared_tokens) {
  const std::vector<Choice> a = ChoicesOf(endpoint, recorded);
  const std::vector<Choice> b = ChoicesOf(endpoint, replayed);
  ExchangeDeparture d;
  if (a.size() != b.size()) {
    d.kind = "choices";
    d.recorded = std::to_string(a.size()) + " choices";
    d.replayed = std::to_string(b.size()) + " choices";
    return d;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    d.choice = static_cast<int>(i);
    const Choice& x = a[i];
    const Choice& y = b[i];
    if (x.has_tokens && y.has_tokens) {
      *compared_tokens = true;
      size_t k = 0, offset = 0;
      while (k < x.tokens.size() && k < y.tokens.size() && x.tokens[k] == y.tokens[k])
        offset += x.tokens[k++].size();
      if (k < x.tokens.size() || k < y.tokens.size()) {
        d.kind = "token";
        d.position = static_cast<int>(k);
        d.recorded = k < x.tokens.size() ? x.tokens[k] : "(end: " + x.finish + ")";
        d.replayed = k < y.tokens.size() ? y.tokens[k] : "(end: " + y.finish + ")";
        if (k < x.logprobs.size()) d.recorded_logprob = x.logprobs[k];
        if (k < y.logprobs.size()) d.replayed_logprob = y.logprobs[k];
        d.context = Tail(x.text, offset);
        return d;
      }
    }
    if (x.text != y.text) {
      size_t k = 0;
      while (k < x.text.size() && k < y.text.size() && x.text[k] == y.text[k]) ++k;
      d.kind = "text";
      d.position = static_cast<int>(k);
      d.recorded = x.text.substr(k, 40);
      d.replayed = y.text.substr(k, 40);
      d.context = Tail(x.text, k);
      return d;
    }
    if (x.tool_calls != y.tool_calls) {
      d.kind = "tool_calls";
      d.recorded = x.tool_calls;
      d.replayed = y.tool_calls;
      return d;
    }
    if (x.finish != y.finish) {
      d.kind = "finish_reason";
      d.recorded = x.finish;
      d.replayed = y.finish;
      return d;
    }
  }
  return std::nullopt;
}

std::vector<int> SessionsOf(const std::vector<ExchangeJson>& records) {
  std::vector<int> session(records.size(), 0);
  std::map<std::string, int> by_response_id;
  int next = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    const OJson& r = records[i];
    const OJson req = r.value("request", OJson());
    int parent = -1;
    if (req.is_object() && req.contains("messages") && req["messages"].is_array()) {
      const OJson& m = req["messages"];
      size_t best = 0;
      for (size_t j = 0; j < i; ++j) {
        const OJson rj = records[j].value("request", OJson());
        if (!rj.is_object() || !rj.contains("messages") || !rj["messages"].is_array()) continue;
        const OJson& mj = rj["messages"];
        if (mj.empty() || mj.size() >= m.size() || mj.size() < best) continue;
        if (std::equal(mj.begin(), mj.end(), m.begin())) {
          parent = static_cast<int>(j);
          best = mj.size();
        }
      }
    }
    if (req.is_object() && req.contains("previous_response_id") &&
        req["previous_response_id"].is_string()) {
      auto it = by_response_id.find(req["previous_response_id"].get<std::string>());
      if (it != by_response_id.end()) parent = it->second;
    }
    session[i] = parent >= 0 ? session[parent] : ++next;
    const OJson resp = r.value("response", OJson());
    if (resp.is_object() && resp.contains("id") && resp["id"].is_string()) {
      by_response_id[resp["id"].get<std::string>()] = static_cast<int>(i);
    }
  }
  return session;
}

Result<ProxyReplayReport> RunProxyReplay(ExchangeStore& store, const ExchangeQuery& query,
                                         const ProxyReplayOptions& o) {
  if (o.endpoint.empty()) return InvalidArgument("--endpoint is required: replay starts no server");
  if (o.concurrency < 1) return InvalidArgument("--concurrency must be at least 1");
  ExchangeQuery q = query;
  if (q.kind.empty()) q.kind = "traffic";
  std::vector<ExchangeJson> records;
  ProxyReplayReport rep;
  STET_RETURN_IF_ERROR(store.ForEach(q, [&](const ExchangeJson& r) -> Status {
    if (Replayable(r)) {
      records.push_back(r);
    } else {
      ++rep.skipped;
    }
    return Status::Ok();
  }));
  if (records.empty()) {
    rep.summary = "no replayable exchanges selected in " + store.Describe() + " (" +
                  std::to_string(rep.skipped) + " skipped: errors, failures or no JSON request)";
    return rep;
  }
  const std::vector<int> sessions = SessionsOf(records);
  rep.outcomes.resize(records.size());
  std::map<int, int> turns;
  for (size_t i = 0; i < records.size(); ++i) {
    ExchangeReplay& e = rep.outcomes[i];
    e.id = Str(records[i], "id");
    e.endpoint = Str(records[i], "endpoint");
    e.received_at = Str(records[i], "received_at");
    e.session = sessions[i];
    e.turn = ++turns[sessions[i]];
    e.recorded_model = Str(records[i], "model_answered");
    e.recorded_fingerprint = Str(records[i], "system_fingerprint");
  }
  rep.sessions = static_cast<int>(turns.size());
  HttpOptions http;
  http.api_key = o.api_key;
  http.timeout_ms = o.timeout_ms;
  std::mutex mu;
  {
    WorkerPool pool(std::min<int>(o.concurrency, static_cast<int>(records.size())), http);
    for (size_t i = 0; i < records.size(); ++i) {
      pool.Submit([&, i](HttpClient& client) {
        const ExchangeJson& rec = records[i];
        const std::string url = EndpointUrl(o.endpoint, Str(rec, "endpoint").substr(4));
        auto resp = client.PostJson(url, Dump(ProxyReplayBody(rec, o)));
        ExchangeReplay e;
        {
          std::lock_guard<std::mutex> lock(mu);
          e = rep.outcomes[i];
        }
        if (!resp.ok()) {
          e.verdict = "error";
          e.message = resp.status().ToString();
        } else {
          OJson answer = OJson::parse(resp->body, nullptr, false);
          if (resp->status < 200 || resp->status >= 300 || answer.is_discarded()) {
            e.verdict = "error";
            e.message = HttpStatusError(url, *resp).ToString();
          } else {
            e.replayed_model = Str(answer, "model");
            e.replayed_fingerprint = Str(answer, "system_fingerprint");
            e.departure = CompareAnswers(e.endpoint, rec["response"], answer, &e.compared_tokens);
            e.verdict = e.departure ? "diverged" : "identical";
          }
        }
        std::lock_guard<std::mutex> lock(mu);
        rep.outcomes[i] = std::move(e);
      });
    }
    pool.Wait();
  }
  for (const ExchangeReplay& e : rep.outcomes) {
    if (e.verdict == "identical") ++rep.identical;
    if (e.verdict == "diverged") ++rep.diverged;
    if (e.verdict == "error") ++rep.errors;
    if (e.verdict != "error") {
      rep.model_changed |= e.recorded_model != e.replayed_model;
      rep.fingerprint_changed |= e.recorded_fingerprint != e.replayed_fingerprint;
    }
  }
  rep.summary = std::to_string(rep.identical) + " of " + std::to_string(rep.outcomes.size()) +
                " identical, " + std::to_string(rep.diverged) + " diverged, " +
                std::to_string(rep.errors) + " failed";
  if (rep.skipped > 0)
    rep.summary += " (" + std::to_string(rep.skipped) + " not replayable, skipped)";
  rep.summary += "; " + std::to_string(rep.sessions) + " session(s); answered model " +
                 (rep.model_changed ? "CHANGED" : "unchanged") + ", system_fingerprint " +
                 (rep.fingerprint_changed ? "CHANGED" : "unchanged");
  rep.exit_code = rep.errors > 0 ? 2 : rep.diverged > 0 ? 1 : 0;
  return rep;
}

namespace {

std::string Quote(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string Where(const ExchangeDeparture& d) {
  std::string s = "choice " + std::to_string(d.choice) + ", ";
  const auto lp = [](const std::optional<double>& v) {
    if (!v) return std::string();
    char buf[40];
    std::snprintf(buf, sizeof buf, " (logprob %.6g)", *v);
    return std::string(buf);
  };
  if (d.kind == "token") {
    s += "token " + std::to_string(d.position) + ": recorded " + Quote(d.recorded) +
         lp(d.recorded_logprob) + ", replayed " + Quote(d.replayed) + lp(d.replayed_logprob);
  } else if (d.kind == "text") {
    s += "text byte " + std::to_string(d.position) + ": recorded " + Quote(d.recorded) +
         ", replayed " + Quote(d.replayed);
  } else {
    s += d.kind + ": recorded " + Quote(d.recorded) + ", replayed " + Quote(d.replayed);
  }
  return s;
}

}  // namespace

std::string ProxyReplayText(const ProxyReplayReport& r) {
  std::string s;
  std::map<int, const ExchangeReplay*> first_departure;
  std::map<int, int> session_size;
  for (const ExchangeReplay& e : r.outcomes) {
    ++session_size[e.session];
    s += e.id + "  " + e.verdict + "  (" + e.endpoint + ", session " + std::to_string(e.session) +
         " turn " + std::to_string(e.turn) + (e.compared_tokens ? "; token by token" : "; text") +
         ")";
    if (e.verdict != "error" && e.recorded_model != e.replayed_model) {
      s += "  [model " + e.recorded_model + " -> " + e.replayed_model + "]";
    }
    if (e.verdict != "error" && e.recorded_fingerprint != e.replayed_fingerprint) {
      s += "  [fingerprint " +
           (e.recorded_fingerprint.empty() ? "(none)" : e.recorded_fingerprint) + " -> " +
           (e.replayed_fingerprint.empty() ? "(none)" : e.replayed_fingerprint) + "]";
    }
    if (!e.message.empty()) s += ": " + e.message;
    if (e.departure) {
      s += "  " + Where(*e.departure) + "\n    after ..." + Quote(e.departure->context);
      if (!first_departure.count(e.session)) first_departure[e.session] = &e;
    }
    s += "\n";
  }
  for (const auto& [session, n] : session_size) {
    if (n < 2 && !first_departure.count(session)) continue;
    s += "session " + std::to_string(session) + " (" + std::to_string(n) + " request" +
         (n == 1 ? "" : "s") + "): ";
    auto it = first_departure.find(session);
    if (it == first_departure.end()) {
      s += "replays as recorded\n";
    } else {
      s += "departs first at turn " + std::to_string(it->second->turn) + " (" + it->second->id +
           "), " + Where(*it->second->departure) + "\n";
    }
  }
  return s + "replay: " + r.summary + "\n";
}

nlohmann::json ProxyReplayJson(const ProxyReplayReport& r) {
  using J = nlohmann::json;
  J j = {{"identical", r.identical},
         {"diverged", r.diverged},
         {"errors", r.errors},
         {"skipped", r.skipped},
         {"sessions", r.sessions},
         {"model_changed", r.model_changed},
         {"fingerprint_changed", r.fingerprint_changed},
         {"exit_code", r.exit_code},
         {"summary", r.summary}};
  J arr = J::array();
  for (const ExchangeReplay& e : r.outcomes) {
    J o = {{"id", e.id},
           {"endpoint", e.endpoint},
           {"received_at", e.received_at},
           {"session", e.session},
           {"turn", e.turn},
           {"verdict", e.verdict},
           {"recorded_model", e.recorded_model},
           {"replayed_model", e.replayed_model},
           {"recorded_fingerprint", e.recorded_fingerprint},
           {"replayed_fingerprint", e.replayed_fingerprint},
           {"compared_tokens", e.compared_tokens}};
    if (!e.message.empty()) o["message"] = e.message;
    if (e.departure) {
      const ExchangeDeparture& d = *e.departure;
      o["departure"] = {{"choice", d.choice},
                        {"kind", d.kind},
                        {"position", d.position},
                        {"recorded", d.recorded},
                        {"replayed", d.replayed},
                        {"recorded_logprob", d.recorded_logprob ? J(*d.recorded_logprob) : J()},
                        {"replayed_logprob", d.replayed_logprob ? J(*d.replayed_logprob) : J()},
                        {"context", d.context}};
    }
    arr.push_back(std::move(o));
  }
  j["exchanges"] = std::move(arr);
  return j;
}

}  // namespace stet::forensics
