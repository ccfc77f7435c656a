// Replay: each record is sent non-streamed (stet's streamed text concatenates
// to the non-streamed text; the non-streamed answer carries the token ids)
// with return_token_ids, its recorded seed and its recorded clock, then
// compared choice by choice: prompt token ids, generated token ids (token
// texts when the endpoint gives no ids), each logprob as a double bit for bit
// (stet sends floats widened exactly), top alternatives, text, finish reason.
#include "forensics/replay/replay.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "base/progress.h"
#include "forensics/client/http_client.h"
#include "wire/answer.h"

namespace stet::forensics {

using OJson = nlohmann::ordered_json;

namespace {

using wire::Flag;
using wire::Ids;
using wire::IntOr;
using wire::Num;
using wire::Str;

constexpr size_t kSnippetBytes = 40;

// One choice, from a record or from a replayed answer.
struct Side {
  std::string text;
  std::optional<std::vector<int64_t>> token_ids, prompt_ids;
  bool has_tokens = false;  // token texts known (record, or an answer with logprobs)
  std::vector<std::string> tokens;
  bool has_logprobs = false;
  std::vector<std::optional<double>> logprobs;
  std::vector<std::vector<std::optional<double>>> tops;  // alternatives' logprobs, best first
  bool has_tops = false;
  std::string finish;
};

bool SameBits(const std::optional<double>& a, const std::optional<double>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  uint64_t x, y;
  std::memcpy(&x, &*a, sizeof x);
  std::memcpy(&y, &*b, sizeof y);
  return x == y;
}

int RecordN(const RecordJson& r) {
  auto p = r.find("params");
  if (p != r.end() && p->is_array() && !p->empty() && (*p)[0].contains("n") &&
      (*p)[0]["n"].is_number_integer()) {
    return std::max(1, (*p)[0]["n"].get<int>());
  }
  return 1;
}

std::vector<Side> RecordSides(const RecordJson& r) {
  std::vector<Side> out;
  const int n = RecordN(r);
  const auto prompts = r.find("prompt_token_ids");
  const auto& choices = r["choices"];
  for (size_t i = 0; i < choices.size(); ++i) {
    const OJson& c = choices[i];
    Side s;
    s.text = Str(c, "text");
    s.token_ids = Ids(c, "token_ids");
    if (prompts != r.end() && prompts->is_array() && i / n < prompts->size()) {
      std::vector<int64_t> p;
      for (const auto& e : (*prompts)[i / n])
        p.push_back(e.is_number_integer() ? e.get<int64_t>() : -1);
      s.prompt_ids = std::move(p);
    }
    if (c.contains("tokens") && c["tokens"].is_array()) {
      s.has_tokens = true;
      for (const auto& t : c["tokens"])
        s.tokens.push_back(t.is_string() ? t.get<std::string>() : "");
    }
    if (c.contains("logprobs") && c["logprobs"].is_array()) {
      s.has_logprobs = true;
      for (const auto& v : c["logprobs"]) s.logprobs.push_back(Num(v));
    }
    if (c.contains("top_logprobs") && c["top_logprobs"].is_array()) {
      s.has_tops = true;
      for (const auto& t : c["top_logprobs"]) {
        std::vector<std::optional<double>> vals;
        if (t.is_array()) {
          for (const auto& pair : t)
            vals.push_back(pair.is_array() && pair.size() == 2 ? Num(pair[1]) : std::nullopt);
        }
        s.tops.push_back(std::move(vals));
      }
    }
    s.finish = Str(c, "finish_reason");
    out.push_back(std::move(s));
  }
  return out;
}

// The echoed prompt text of choice `i`, when the request gave the prompt as text.
std::optional<std::string> EchoPrefix(const OJson& request, size_t prompt_index) {
  auto p = request.find("prompt");
  if (p == request.end()) return std::nullopt;
  if (p->is_string()) return p->get<std::string>();
  if (p->is_array() && prompt_index < p->size() && (*p)[prompt_index].is_string()) {
    return (*p)[prompt_index].get<std::string>();
  }
  return std::nullopt;
}

bool IsResponses(const RecordJson& record) { return Str(record, "endpoint") == "/v1/responses"; }

// Templated endpoints: the request's clock is pinned and the answer is a chat message.
bool IsChatLike(const RecordJson& record) {
  return Str(record, "endpoint") == "/v1/chat/completions" || IsResponses(record);
}

// One choice of an answer as a Side. Prompt positions at the head of echoed
// completions logprobs (`skip`) are not generated tokens.
Side AnswerSide(const wire::AnswerChoice& c, size_t skip) {
  Side s;
  s.text = c.text;
  s.token_ids = c.token_ids;
  s.prompt_ids = c.prompt_token_ids;
  s.finish = c.finish_reason;
  s.has_tokens = s.has_logprobs = c.has_logprobs;
  for (size_t k = skip; k < c.tokens.size(); ++k) {
    const wire::AnswerToken& t = c.tokens[k];
    s.tokens.push_back(t.bytes.value_or(t.token));
    s.logprobs.push_back(t.logprob);
    std::vector<std::optional<double>> vals;
    for (const auto& alt : t.top) vals.push_back(alt.second);
    s.has_tops |= !vals.empty();
    s.tops.push_back(std::move(vals));
  }
  return s;
}

// A /v1/responses answer (with stet's return_token_ids) as one chat-like
// choice. A function-call answer has no text of its own to compare: its
// token ids (which the text is a function of, under the same fingerprint)
// stand for it, so it takes the recorded text when it carries token ids, and a
// text that cannot match when it does not.
Side ResponsesSide(const wire::Answer& a, const std::vector<Side>& rec) {
  wire::AnswerChoice c = a.choices.empty() ? wire::AnswerChoice() : a.choices[0];
  const bool calls = !c.tool_calls.empty();
  if (calls) {
    c.text = c.token_ids && !rec.empty() ? rec[0].text : "(function calls)";
    c.has_logprobs = false;
    c.tokens.clear();
  }
  c.finish_reason = a.status == "incomplete" ? "length" : "stop";
  c.prompt_token_ids = a.prompt_token_ids;
  return AnswerSide(c, 0);
}

std::vector<Side> AnswerSides(const RecordJson& record, const OJson& resp,
                              const std::vector<Side>& rec) {
  if (IsResponses(record))
    return {ResponsesSide(wire::ReadAnswer(resp, wire::ApiKind::kResponses), rec)};
  const bool chat = IsChatLike(record);
  const wire::Answer a =
      wire::ReadAnswer(resp, chat ? wire::ApiKind::kChat : wire::ApiKind::kCompletions);
  const OJson& request = record["request"];  // an object: ValidateRecord
  const bool echo = !chat && Flag(request, "echo");
  const int n = RecordN(record);
  std::vector<Side> out;
  for (size_t i = 0; i < a.choices.size(); ++i) {
    size_t skip = 0;
    if (echo && i < rec.size() && rec[i].prompt_ids) skip = rec[i].prompt_ids->size();
    Side s = AnswerSide(a.choices[i], skip);
    if (chat) s.prompt_ids = a.prompt_token_ids;
    if (echo) {
      auto prefix = EchoPrefix(request, i / n);
      if (prefix && s.text.compare(0, prefix->size(), *prefix) == 0) {
        s.text.erase(0, prefix->size());
      } else if (i < rec.size() && s.text.size() >= rec[i].text.size()) {
        s.text.erase(0, s.text.size() - rec[i].text.size());  // token-id prompt: compare the tail
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

// Backs `pos` up to a UTF-8 character boundary of `s`.
size_t Boundary(const std::string& s, size_t pos) {
  pos = std::min(pos, s.size());
  while (pos > 0 && pos < s.size() && (static_cast<unsigned char>(s[pos]) & 0xC0) == 0x80) --pos;
  return pos;
}

void FillSnippet(const std::string& rec, const std::string& rep, size_t offset,
                 ReplayDivergence* d) {
  offset = Boundary(rec, std::min(offset, std::min(rec.size(), rep.size())));
  const size_t from = Boundary(rec, offset > kSnippetBytes ? offset - kSnippetBytes : 0);
  d->context = rec.substr(from, offset - from);
  d->recorded_continuation = rec.substr(offset, Boundary(rec, offset + kSnippetBytes) - offset);
  const size_t rep_end = Boundary(rep, offset + kSnippetBytes);
  d->replayed_continuation = offset <= rep.size() ? rep.substr(offset, rep_end - offset) : "";
}

size_t FirstDifferentByte(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

// Byte offset of token k in the recorded text (sum of the token texts before it).
size_t TokenOffset(const Side& s, size_t k) {
  size_t off = 0;
  for (size_t i = 0; i < k && i < s.tokens.size(); ++i) off += s.tokens[i].size();
  return off;
}

std::optional<ReplayDivergence> CompareChoice(int index, const Side& rec, const Side& rep,
                                              ReplayOutcome* o) {
  ReplayDivergence d;
  d.choice = index;
  // Prompt token ids: a different template, clock or tokenizer shows here first.
  if (rec.prompt_ids && rep.prompt_ids && *rec.prompt_ids != *rep.prompt_ids) {
    const auto& a = *rec.prompt_ids;
    const auto& b = *rep.prompt_ids;
    size_t k = 0;
    while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
    d.kind = "prompt";
    d.position = static_cast<int>(k);
    if (k < a.size()) d.recorded_id = a[k];
    if (k < b.size()) d.replayed_id = b[k];
    d.recorded_value = std::to_string(a.size()) + " prompt tokens";
    d.replayed_value = std::to_string(b.size()) + " prompt tokens";
    return d;
  }
  // Generated tokens: by id when both sides have ids, else by token text.
  const bool by_id = rec.token_ids && rep.token_ids;
  const bool by_text = !by_id && rec.has_tokens && rep.has_tokens;
  if (by_id) o->token_ids_compared = true;
  if (by_id || by_text) {
    const size_t na = by_id ? rec.token_ids->size() : rec.tokens.size();
    const size_t nb = by_id ? rep.token_ids->size() : rep.tokens.size();
    size_t k = 0;
    while (k < na && k < nb &&
           (by_id ? (*rec.token_ids)[k] == (*rep.token_ids)[k] : rec.tokens[k] == rep.tokens[k])) {
      ++k;
    }
    if (k < na || k < nb) {
      d.kind = "token";
      d.position = static_cast<int>(k);
      if (by_id && k < na) d.recorded_id = (*rec.token_ids)[k];
      if (by_id && k < nb) d.replayed_id = (*rep.token_ids)[k];
      if (k < rec.tokens.size()) d.recorded_token = rec.tokens[k];
      if (k < rep.tokens.size()) d.replayed_token = rep.tokens[k];
      if (k < rec.logprobs.size()) d.recorded_logprob = rec.logprobs[k];
      if (k < rep.logprobs.size()) d.replayed_logprob = rep.logprobs[k];
      if (k >= na) d.recorded_value = "(recorded answer ended: " + rec.finish + ")";
      if (k >= nb) d.replayed_value = "(replayed answer ended: " + rep.finish + ")";
      const size_t off =
          rec.text != rep.text ? FirstDifferentByte(rec.text, rep.text) : TokenOffset(rec, k);
      FillSnippet(rec.text, rep.text, off, &d);
      return d;
    }
  }
  // Logprobs, bit for bit, where the answer carries them.
  if (rec.has_logprobs && rep.has_logprobs) {
    o->logprobs_compared = true;
    const size_t n = std::min(rec.logprobs.size(), rep.logprobs.size());
    for (size_t k = 0; k < n; ++k) {
      if (!SameBits(rec.logprobs[k], rep.logprobs[k])) {
        d.kind = "logprob";
        d.position = static_cast<int>(k);
        if (rec.token_ids && k < rec.token_ids->size())
          d.recorded_id = d.replayed_id = (*rec.token_ids)[k];
        if (k < rec.tokens.size()) d.recorded_token = d.replayed_token = rec.tokens[k];
        d.recorded_logprob = rec.logprobs[k];
        d.replayed_logprob = rep.logprobs[k];
        FillSnippet(rec.text, rep.text, TokenOffset(rec, k), &d);
        return d;
      }
    }
    if (rec.has_tops && rep.has_tops) {
      for (size_t k = 0; k < n && k < rec.tops.size() && k < rep.tops.size(); ++k) {
        const auto& a = rec.tops[k];
        const auto& b = rep.tops[k];
        // Completions' top_logprobs is keyed by token text, so equal texts merge: compare when
        // sizes agree.
        if (a.size() != b.size()) continue;
        for (size_t t = 0; t < a.size(); ++t) {
          if (!SameBits(a[t], b[t])) {
            d.kind = "top_logprobs";
            d.position = static_cast<int>(k);
            d.recorded_logprob = a[t];
            d.replayed_logprob = b[t];
            d.recorded_value = "alternative #" + std::to_string(t + 1);
            d.replayed_value = d.recorded_value;
            FillSnippet(rec.text, rep.text, TokenOffset(rec, k), &d);
            return d;
          }
        }
      }
    }
  }
  if (rec.text != rep.text) {
    d.kind = "text";
    const size_t off = FirstDifferentByte(rec.text, rep.text);
    d.position = -1;
    d.recorded_value = "byte " + std::to_string(off);
    FillSnippet(rec.text, rep.text, off, &d);
    return d;
  }
  if (rec.finish != rep.finish) {
    d.kind = "finish_reason";
    d.recorded_value = rec.finish;
    d.replayed_value = rep.finish;
    return d;
  }
  return std::nullopt;
}

std::string Quote(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string Lp(const std::optional<double>& v) {
  if (!v) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g (%a)", *v, *v);
  return buf;
}

std::string TokenDesc(const std::optional<int64_t>& id, const std::string& text,
                      const std::optional<double>& lp, const std::string& fallback) {
  if (!id && text.empty() && !lp) return fallback.empty() ? "(none)" : fallback;
  std::string s;
  if (id) s += "id " + std::to_string(*id);
  if (!text.empty() || !id) s += (s.empty() ? "" : " ") + Quote(text);
  if (lp) s += " logprob " + Lp(lp);
  return s;
}

}  // namespace

namespace {

// The outcome of one replayed request from the endpoint's answer.
ReplayOutcome Answer(const RecordJson& rec, const std::string& url,
                     const Result<HttpResponse>& resp, const ReplayOptions& options) {
  ReplayOutcome o;
  if (!resp.ok() || resp->status < 200 || resp->status >= 300) {
    o.id = Str(rec, "id");
    o.endpoint = Str(rec, "endpoint");
    o.received_at = Str(rec, "received_at");
    o.recorded_fingerprint = Str(rec, "system_fingerprint");
    o.verdict = ReplayVerdict::kError;
    o.message = resp.ok() ? HttpStatusError(url, *resp).ToString() : resp.status().ToString();
    if (resp.ok() && resp->status == 404 && options.model.empty()) {
      o.message += " (if the endpoint serves the model under another name, pass --model NAME)";
    }
    return o;
  }
  OJson body = OJson::parse(resp->body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    o.id = Str(rec, "id");
    o.endpoint = Str(rec, "endpoint");
    o.verdict = ReplayVerdict::kError;
    o.message = "the answer is not a JSON object: " + resp->body.substr(0, 200);
    return o;
  }
  o = CompareReplay(rec, body);
  if (o.replayed_fingerprint != o.recorded_fingerprint && !options.allow_fingerprint_change) {
    o.verdict = ReplayVerdict::kRefused;
    o.divergence.reset();
    o.message = "the answer's system_fingerprint is '" + o.replayed_fingerprint + "', recorded '" +
                o.recorded_fingerprint + "': not compared (--allow-fingerprint-change to compare)";
  }
  return o;
}

}  // namespace

const char* ReplayVerdictName(ReplayVerdict v) {
  switch (v) {
    case ReplayVerdict::kIdentical:
      return "identical";
    case ReplayVerdict::kDiverged:
      return "diverged";
    case ReplayVerdict::kRefused:
      return "refused";
    case ReplayVerdict::kError:
      return "error";
  }
  return "?";
}

OJson ReplayRequestBody(const RecordJson& record, const ReplayOptions& options) {
  OJson body = record["request"];
  body["seed"] = record["seed"];
  body.erase("stream");
  body.erase("stream_options");
  body["return_token_ids"] = true;
  if (!options.model.empty()) body["model"] = options.model;
  const bool chat = IsChatLike(record);
  auto clock = record.find("clock");
  if (chat && clock != record.end() && clock->is_object() && clock->contains("utc")) {
    if (!body.contains("metadata") || !body["metadata"].is_object())
      body["metadata"] = OJson::object();
    body["metadata"]["stet_clock"] = (*clock)["utc"];
  }
  if (options.force_logprobs && IsResponses(record)) {
    body["include"] = OJson::array({"message.output_text.logprobs"});
  } else if (options.force_logprobs) {
    if (chat && !Flag(body, "logprobs")) body["logprobs"] = true;
    if (!chat && (!body.contains("logprobs") || body["logprobs"].is_null())) body["logprobs"] = 0;
  }
  return body;
}

ReplayOutcome CompareReplay(const RecordJson& record, const OJson& response) {
  ReplayOutcome o;
  o.id = Str(record, "id");
  o.endpoint = Str(record, "endpoint");
  o.received_at = Str(record, "received_at");
  o.recorded_fingerprint = Str(record, "system_fingerprint");
  o.replayed_fingerprint = Str(response, "system_fingerprint");
  const std::vector<Side> rec = RecordSides(record);
  const std::vector<Side> rep = AnswerSides(record, response, rec);
  o.choices = static_cast<int>(rec.size());
  for (const Side& s : rec) o.tokens += s.token_ids ? static_cast<int64_t>(s.token_ids->size()) : 0;
  if (rec.size() != rep.size()) {
    ReplayDivergence d;
    d.kind = "choices";
    d.recorded_value = std::to_string(rec.size()) + " choices";
    d.replayed_value = std::to_string(rep.size()) + " choices";
    o.divergence = d;
    o.verdict = ReplayVerdict::kDiverged;
    return o;
  }
  for (size_t i = 0; i < rec.size(); ++i) {
    auto d = CompareChoice(static_cast<int>(i), rec[i], rep[i], &o);
    if (d) {
      o.divergence = std::move(d);
      o.verdict = ReplayVerdict::kDiverged;
      return o;
    }
  }
  o.verdict = ReplayVerdict::kIdentical;
  return o;
}

Result<ReplayReport> RunReplay(RecordStore& store, const RecordQuery& query,
                               const ReplayOptions& options) {
  if (options.endpoint.empty())
    return InvalidArgument("--endpoint is required: replay starts no server");
  if (options.concurrency < 1) return InvalidArgument("--concurrency must be at least 1");
  std::vector<RecordJson> records;
  STET_RETURN_IF_ERROR(store.ForEach(query, [&](const std::string& text) -> Status {
    RecordJson r = RecordJson::parse(text, nullptr, false);
    if (r.is_discarded()) return DataLoss("a stored record is not JSON");
    STET_RETURN_IF_ERROR(ValidateRecord(r));
    records.push_back(std::move(r));
    return Status::Ok();
  }));
  ReplayReport report;
  report.endpoint = options.endpoint;
  if (records.empty()) {
    report.summary = !query.id.empty()
                         ? "no record with id '" + query.id + "' in " + store.path()
                         : "no records selected in " + store.path() + " (nothing to replay)";
    return report;
  }

  HttpOptions http;
  http.api_key = options.api_key;
  http.timeout_ms = options.timeout_ms;
  // The endpoint's fingerprint, when it names one up front (stet's /v1/models does).
  {
    HttpClient client(http);
    const std::string url = EndpointUrl(options.endpoint, "models");
    auto r = client.Get(url);
    if (!r.ok()) return r.status();
    if (r->status < 200 || r->status >= 300) return HttpStatusError(url, *r);
    OJson models = OJson::parse(r->body, nullptr, false);
    if (!models.is_discarded() && models.contains("data") && models["data"].is_array()) {
      for (const auto& m : models["data"]) {
        if (m.is_object() && !Str(m, "system_fingerprint").empty()) {
          report.endpoint_fingerprint = Str(m, "system_fingerprint");
          break;
        }
      }
    }
  }
  if (!report.endpoint_fingerprint.empty() && !options.allow_fingerprint_change) {
    std::set<std::string> differing;
    int n_differing = 0;
    for (const RecordJson& r : records) {
      const std::string fp = Str(r, "system_fingerprint");
      if (fp != report.endpoint_fingerprint) {
        differing.insert(fp);
        ++n_differing;
      }
    }
    if (n_differing > 0) {
      std::string list;
      for (const auto& f : differing) list += (list.empty() ? "" : ", ") + f;
      report.refused = n_differing;
      report.summary =
          "refused: the endpoint's system_fingerprint is " + report.endpoint_fingerprint + " but " +
          std::to_string(n_differing) + " of " + std::to_string(records.size()) +
          " selected record(s) were recorded under " + list +
          " (a different model file, numerics or KV type), so their answers are not expected to "
          "match; nothing was sent. Pass --allow-fingerprint-change to replay anyway and see where "
          "they diverge.";
      return report;
    }
  }

  report.outcomes.resize(records.size());
  ProgressBar bar("replay", static_cast<int64_t>(records.size()));
  std::mutex mu;
  int64_t finished = 0;
  {
    WorkerPool pool(std::min<int>(options.concurrency, static_cast<int>(records.size())), http);
    for (size_t i = 0; i < records.size(); ++i) {
      pool.Submit([&, i](HttpClient& client) {
        const RecordJson& rec = records[i];
        const std::string ep = Str(rec, "endpoint");
        const std::string url =
            EndpointUrl(options.endpoint, ep == "/v1/chat/completions" ? "chat/completions"
                                          : ep == "/v1/responses"      ? "responses"
                                                                       : "completions");
        const auto t0 = std::chrono::steady_clock::now();
        ReplayOutcome o;
        try {  // a record no check foresaw ends as its own error, never as an abort
          auto resp =
              client.PostJson(url, ReplayRequestBody(rec, options)
                                       .dump(-1, ' ', false, OJson::error_handler_t::replace));
          o = Answer(rec, url, resp, options);
        } catch (const std::exception& e) {
          o = ReplayOutcome();
          o.id = Str(rec, "id");
          o.endpoint = Str(rec, "endpoint");
          o.verdict = ReplayVerdict::kError;
          o.message = std::string("the record could not be replayed: ") + e.what();
        }
        o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::lock_guard<std::mutex> lock(mu);
        report.outcomes[i] = std::move(o);
        if (options.progress) bar.Update(++finished);
      });
    }
    pool.Wait();
  }
  if (options.progress) bar.Finish();
  for (const ReplayOutcome& o : report.outcomes) {
    switch (o.verdict) {
      case ReplayVerdict::kIdentical:
        ++report.identical;
        break;
      case ReplayVerdict::kDiverged:
        ++report.diverged;
        break;
      case ReplayVerdict::kRefused:
        ++report.refused;
        break;
      case ReplayVerdict::kError:
        ++report.errors;
        break;
    }
  }
  const int total = static_cast<int>(report.outcomes.size());
  report.summary = std::to_string(report.identical) + " of " + std::to_string(total) +
                   " identical, " + std::to_string(report.diverged) + " diverged, " +
                   std::to_string(report.refused) + " refused, " + std::to_string(report.errors) +
                   " failed";
  report.exit_code = report.refused + report.errors > 0 ? 2 : report.diverged > 0 ? 1 : 0;
  return report;
}

std::string ReplayOutcomeText(const ReplayOutcome& o) {
  std::string s = o.id + "  " + ReplayVerdictName(o.verdict);
  if (o.verdict == ReplayVerdict::kIdentical) {
    s += "  (" + o.endpoint + ", " + std::to_string(o.choices) + " choice" +
         (o.choices == 1 ? "" : "s") + ", " + std::to_string(o.tokens) + " tokens; " +
         (o.token_ids_compared ? "token ids" : "token texts") +
         (o.logprobs_compared ? ", logprobs bit for bit" : ", no logprobs in the answer") + ")";
  }
  if (o.recorded_fingerprint != o.replayed_fingerprint && !o.replayed_fingerprint.empty() &&
      o.verdict != ReplayVerdict::kRefused) {
    s += "  [fingerprint " + o.recorded_fingerprint + " -> " + o.replayed_fingerprint + "]";
  }
  if (!o.message.empty()) s += ": " + o.message;
  if (o.divergence) {
    const ReplayDivergence& d = *o.divergence;
    s += "  choice " + std::to_string(d.choice) + ", ";
    if (d.kind == "choices" || d.kind == "finish_reason") {
      s += d.kind + ": recorded " + d.recorded_value + ", replayed " + d.replayed_value;
    } else if (d.kind == "prompt") {
      s += "prompt token " + std::to_string(d.position) + ": recorded " +
           (d.recorded_id ? "id " + std::to_string(*d.recorded_id) : std::string("(end)")) +
           ", replayed " +
           (d.replayed_id ? "id " + std::to_string(*d.replayed_id) : std::string("(end)")) + " (" +
           d.recorded_value + " vs " + d.replayed_value + "; template, clock or tokenizer changed)";
    } else if (d.kind == "token") {
      s += "token " + std::to_string(d.position) + ": recorded " +
           TokenDesc(d.recorded_id, d.recorded_token, d.recorded_logprob, d.recorded_value) +
           ", replayed " +
           TokenDesc(d.replayed_id, d.replayed_token, d.replayed_logprob, d.replayed_value);
    } else if (d.kind == "logprob") {
      s += "token " + std::to_string(d.position) + " is the same (" +
           TokenDesc(d.recorded_id, d.recorded_token, std::nullopt, "") +
           ") but its logprob differs: recorded " + Lp(d.recorded_logprob) + ", replayed " +
           Lp(d.replayed_logprob);
    } else if (d.kind == "top_logprobs") {
      s += "token " + std::to_string(d.position) + ": " + d.recorded_value +
           "'s logprob differs: recorded " + Lp(d.recorded_logprob) + ", replayed " +
           Lp(d.replayed_logprob);
    } else {
      s += "text differs at " + d.recorded_value;
    }
    if (d.kind != "choices" && d.kind != "finish_reason" && d.kind != "prompt") {
      s += "\n    ..." + Quote(d.context) + "\n      recorded: " + Quote(d.recorded_continuation) +
           "\n      replayed: " + Quote(d.replayed_continuation);
    }
  }
  return s + "\n";
}

std::string ReplaySummaryText(const ReplayReport& r) {
  std::string s;
  for (const ReplayOutcome& o : r.outcomes) s += ReplayOutcomeText(o);
  s += "replay: " + r.summary + "\n";
  return s;
}

nlohmann::json ReplayToJson(const ReplayReport& r) {
  using J = nlohmann::json;
  J j;
  j["endpoint"] = r.endpoint;
  j["endpoint_fingerprint"] = r.endpoint_fingerprint.empty() ? J() : J(r.endpoint_fingerprint);
  j["identical"] = r.identical;
  j["diverged"] = r.diverged;
  j["refused"] = r.refused;
  j["errors"] = r.errors;
  j["exit_code"] = r.exit_code;
  j["summary"] = r.summary;
  J arr = J::array();
  for (const ReplayOutcome& o : r.outcomes) {
    J e;
    e["id"] = o.id;
    e["endpoint"] = o.endpoint;
    e["received_at"] = o.received_at;
    e["verdict"] = ReplayVerdictName(o.verdict);
    e["recorded_fingerprint"] = o.recorded_fingerprint;
    e["replayed_fingerprint"] = o.replayed_fingerprint;
    e["choices"] = o.choices;
    e["tokens"] = o.tokens;
    e["token_ids_compared"] = o.token_ids_compared;
    e["logprobs_compared"] = o.logprobs_compared;
    e["seconds"] = o.seconds;
    if (!o.message.empty()) e["message"] = o.message;
    if (o.divergence) {
      const ReplayDivergence& d = *o.divergence;
      J dj;
      dj["choice"] = d.choice;
      dj["kind"] = d.kind;
      dj["position"] = d.position >= 0 ? J(d.position) : J();
      dj["recorded_id"] = d.recorded_id ? J(*d.recorded_id) : J();
      dj["replayed_id"] = d.replayed_id ? J(*d.replayed_id) : J();
      dj["recorded_token"] = d.recorded_token;
      dj["replayed_token"] = d.replayed_token;
      dj["recorded_logprob"] = d.recorded_logprob ? J(*d.recorded_logprob) : J();
      dj["replayed_logprob"] = d.replayed_logprob ? J(*d.replayed_logprob) : J();
      dj["recorded_value"] = d.recorded_value;
      dj["replayed_value"] = d.replayed_value;
      dj["context"] = d.context;
      dj["recorded_continuation"] = d.recorded_continuation;
      dj["replayed_continuation"] = d.replayed_continuation;
      e["divergence"] = std::move(dj);
    }
    arr.push_back(std::move(e));
  }
  j["records"] = std::move(arr);
  return j;
}

}  // namespace stet::forensics
