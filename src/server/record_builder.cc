// Record building for `stet serve --record`, and the frozen-clock metadata.
// Logprobs are stored as the engine's floats widened to double (exact), so a
// replay can compare them bit for bit after narrowing back.
#include "server/record_builder.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace stet::server {

namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool Digits(std::string_view s, size_t pos, size_t n, int64_t* out) {
  if (pos + n > s.size()) return false;
  int64_t v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

Json FloatOrNull(float v) { return v == v && v - v == 0 ? Json(v) : Json(nullptr); }  // finite only

// The schema's keys (stet.record/1) are flat: the sampling fields sit beside n and stop.
Json ParamsJson(const RequestParams& p) {
  const SamplingParams& sp = p.sampling;
  Json j = Json::object();
  j["max_tokens"] = p.max_tokens;
  j["n"] = p.n;
  j["temperature"] = sp.temperature;
  j["top_k"] = sp.top_k;
  j["top_p"] = sp.top_p;
  j["min_p"] = sp.min_p;
  j["repetition_penalty"] = sp.repetition_penalty;
  j["presence_penalty"] = sp.presence_penalty;
  j["frequency_penalty"] = sp.frequency_penalty;
  Json bias = Json::object();
  for (const auto& [id, b] : sp.logit_bias) bias[std::to_string(id)] = b;
  j["logit_bias"] = std::move(bias);
  j["seed"] = sp.seed ? Json(*sp.seed) : Json(nullptr);
  j["stop"] = p.stop;
  j["stop_ids"] = p.stop_ids;
  j["ignore_eos"] = p.ignore_eos;
  j["top_logprobs"] = p.top_logprobs;
  j["prompt_logprobs"] = p.prompt_logprobs;
  return j;
}

// `with_prompt`: the prompt's scores, stored once per prompt (its first
// choice) rather than n times: every choice of a prompt has the same ones.
Json ChoiceJson(size_t index, const ChoiceResult& c, bool with_prompt) {
  Json j = Json::object();
  j["index"] = index;
  j["text"] = c.text;
  Json ids = Json::array(), texts = Json::array(), lps = Json::array(), tops = Json::array();
  bool any_top = false;
  for (const TokenOut& t : c.tokens) {
    ids.push_back(t.id);
    texts.push_back(t.text);  // raw bytes; a partial UTF-8 character is stored as U+FFFD
    lps.push_back(FloatOrNull(t.logprob));
    Json top = Json::array();
    for (const TokenLogprob& a : t.top) top.push_back(Json::array({a.id, FloatOrNull(a.logprob)}));
    any_top |= !t.top.empty();
    tops.push_back(std::move(top));
  }
  j["token_ids"] = std::move(ids);
  j["tokens"] = std::move(texts);
  j["logprobs"] = std::move(lps);
  if (any_top) j["top_logprobs"] = std::move(tops);  // [[id, logprob], ...] per token
  if (with_prompt && !c.prompt_tokens.empty()) {
    Json plp = Json::array();
    for (const TokenOut& t : c.prompt_tokens) plp.push_back(FloatOrNull(t.logprob));
    j["prompt_logprobs"] = std::move(plp);
  }
  j["finish_reason"] = FinishReasonText(c.finish);
  return j;
}

}  // namespace

std::optional<int64_t> ParseUtcTime(std::string_view s) {
  int64_t y, mo, d, h, mi, se;
  if (s.size() < 20 || !Digits(s, 0, 4, &y) || s[4] != '-' || !Digits(s, 5, 2, &mo) ||
      s[7] != '-' || !Digits(s, 8, 2, &d) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
      !Digits(s, 11, 2, &h) || s[13] != ':' || !Digits(s, 14, 2, &mi) || s[16] != ':' ||
      !Digits(s, 17, 2, &se)) {
    return std::nullopt;
  }
  size_t pos = 19;
  if (pos < s.size() && s[pos] == '.') {
    size_t digits = 0;
    for (++pos; pos < s.size() && s[pos] >= '0' && s[pos] <= '9'; ++pos) ++digits;
    if (digits == 0 || digits > 9) return std::nullopt;
  }
  int64_t offset_s = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int64_t oh, om;
    if (!Digits(s, pos + 1, 2, &oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !Digits(s, pos + 4, 2, &om) || oh > 23 || om > 59) {
      return std::nullopt;
    }
    offset_s = (oh * 3600 + om * 60) * (s[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return std::nullopt;  // a time without a zone is ambiguous
  }
  if (pos != s.size()) return std::nullopt;
  static const int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > kDays[mo - 1] ||
      (mo == 2 && d == 29 && !leap) || h > 23 || mi > 59 || se > 60) {
    return std::nullopt;
  }
  if (se == 60) se = 59;  // a leap second names the last second of its minute
  const int64_t t = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - offset_s;
  if (t < 0) return std::nullopt;
  return t;
}

std::string FormatUtcTime(int64_t unix_s) {
  const std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

ApiOr<std::optional<int64_t>> ReadStetClock(const Json& body) {
  auto md = body.find("metadata");
  if (md == body.end() || !md->is_object()) return std::optional<int64_t>();
  auto c = md->find("stet_clock");
  if (c == md->end() || c->is_null()) return std::optional<int64_t>();
  const char* kParam = "metadata.stet_clock";
  if (!c->is_string()) {
    return BadRequest(
        std::string(
            "'metadata.stet_clock' must be a string such as \"2024-07-26T12:00:00Z\", not ") +
            c->type_name(),
        kParam);
  }
  const std::string v = c->get<std::string>();
  auto t = ParseUtcTime(v);
  if (!t) {
    return BadRequest(
        "'metadata.stet_clock' must be an ISO 8601 time with a zone, such as "
        "\"2024-07-26T12:00:00Z\" (years 1970-9999); got '" +
            v.substr(0, 64) + "'",
        kParam);
  }
  return std::optional<int64_t>(*t);
}

Json BuildRecord(const RecordContext& c, const std::vector<ChoiceResult>& choices,
                 const UsageCounts& usage) {
  Json r = Json::object();
  r["schema"] = kRecordSchema;
  r["id"] = c.id;
  r["endpoint"] = c.endpoint;
  r["received_at"] = c.received_at;
  r["completed_at"] = NowIso8601();
  r["model"] = c.model;
  r["system_fingerprint"] = c.fingerprint;
  r["fingerprint_descriptor"] = c.fingerprint_descriptor;
  r["model_sha256"] = c.model_sha256;
  r["seed"] = c.seed;
  r["seed_generated"] = c.seed_generated;
  if (c.chat) {
    r["chat_template_sha256"] = c.template_sha256;
    r["chat_template_fallback"] = c.template_fallback;
    Json clock = Json::object();
    clock["unix"] = c.clock_unix;
    clock["utc"] = FormatUtcTime(c.clock_unix);
    clock["source"] = c.clock_from_client ? "metadata.stet_clock" : "server clock";
    r["clock"] = std::move(clock);
    r["rendered_prompt"] = c.rendered_prompt;
  }
  r["request"] = c.request;
  // Request-wide parameters once (issue 25: 128 prompts repeated 16 KiB of stop
  // strings 128 times): params[0] is the first prompt's; where a later prompt's
  // differ (max_tokens clamped to what its prompt leaves), params[i] holds only
  // the fields that differ for prompt i; when none differ, params has one entry.
  Json params = Json::array(), prompts = Json::array();
  bool all_same = true;
  for (const RequestParams& p : c.params) {
    Json one = ParamsJson(p);
    if (!params.empty()) {
      Json delta = Json::object();
      for (auto it = one.begin(); it != one.end(); ++it) {
        if (params[0][it.key()] != it.value()) delta[it.key()] = std::move(it.value());
      }
      all_same = all_same && delta.empty();
      one = std::move(delta);
    }
    params.push_back(std::move(one));
    prompts.push_back(p.prompt);
  }
  if (all_same && params.size() > 1) params.erase(params.begin() + 1, params.end());
  r["params"] = std::move(params);
  r["prompt_token_ids"] = std::move(prompts);
  Json ch = Json::array();
  const size_t n = c.params.empty() ? 1 : static_cast<size_t>(std::max(1, c.params[0].n));
  for (size_t i = 0; i < choices.size(); ++i) ch.push_back(ChoiceJson(i, choices[i], i % n == 0));
  r["choices"] = std::move(ch);
  r["usage"] = UsageJson(usage);
  return r;
}

std::optional<ApiError> CommitRecord(RequestRecorder& recorder, const RecordFn& build,
                                     const std::vector<ChoiceResult>& choices,
                                     const UsageCounts& usage) {
  Status st = recorder.Record(build(choices, usage));
  if (st.ok()) return std::nullopt;
  ApiError e;
  e.status = 500;
  e.type = "server_error";
  e.code = "record_failed";
  e.message =
      "the request could not be recorded (--record), so its answer is withheld: " + st.ToString();
  return e;
}

}  // namespace stet::server
