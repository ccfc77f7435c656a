// One exchange through `stet proxy`: the client's request is forwarded (its
// Authorization, or the upstream key in its place; logprobs added when the
// seeded draw picks it), the answer relayed, and the exchange recorded before
// the client can see it complete. A stream is relayed one complete SSE event
// at a time as the upstream's bytes arrive; only its final event ([DONE], or
// response.completed) waits for the record's commit. Failures of the upstream
// become 502 (unreachable, broken) or 504 (too slow), and are recorded too.
#include <cmath>

#include "base/random_id.h"
#include "base/utc_time.h"
#include "forensics/proxy/proxy_internal.h"
#include "forensics/proxy/proxy_path.h"
#include "http/json_fields.h"

namespace stet::forensics {

using httplib::DataSink;
using httplib::Request;
using httplib::Response;

namespace {

// How often a stream waiting on a silent upstream checks that its client is still there.
constexpr int64_t kLivenessSliceMs = 1000;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool HopByHop(const std::string& n) {
  return n == "connection" || n == "keep-alive" || n == "proxy-authenticate" ||
         n == "proxy-authorization" || n == "proxy-connection" || n == "te" || n == "trailer" ||
         n == "transfer-encoding" || n == "upgrade";
}

// Where the next complete SSE event of `s` (from `from`) ends, just past its
// blank line; npos when the event is still incomplete.
size_t EventEnd(const std::string& s, size_t from) {
  for (size_t i = s.find('\n', from); i != std::string::npos; i = s.find('\n', i + 1)) {
    const size_t next = i + 1;
    if (next < s.size() && s[next] == '\n') return next + 1;
    if (next + 1 < s.size() && s[next] == '\r' && s[next + 1] == '\n') return next + 2;
  }
  return std::string::npos;
}

std::string Dump(const WireJson& j) {
  return j.dump(-1, ' ', false, WireJson::error_handler_t::replace);
}

std::string ErrorEvent(const std::string& code, const std::string& message) {
  const WireJson e = {
      {"error",
       {{"message", message}, {"type", "proxy_error"}, {"param", nullptr}, {"code", code}}}};
  return "data: " + Dump(e) + "\n\n";
}

double MsSince(ProxyClock::time_point t) {
  return std::chrono::duration<double, std::milli>(ProxyClock::now() - t).count();
}

}  // namespace

namespace {

// The fields the proxy itself reads from a recorded request, checked as `stet
// serve` checks them: a wrong type is the client's 400, never the proxy's 500.
std::optional<server::ApiError> CheckReadFields(const WireJson& request, bool* stream) {
  if (!request.is_object()) return std::nullopt;
  if (auto e = server::ReadBool(request, "stream", stream)) return e;
  auto lp = request.find("logprobs");
  if (lp != request.end() && !lp->is_null() && !lp->is_boolean() && !lp->is_number_integer()) {
    return server::BadRequest(
        std::string("'logprobs' must be a boolean or an integer, not ") + server::TypeName(*lp),
        "logprobs");
  }
  int64_t top = 0;
  return server::ReadInt(request, "top_logprobs", 0, 20, &top);
}

}  // namespace

void Proxy::Impl::Prepare(const Request& req, const ProxyTarget& target, std::string body,
                          Relay& r) {
  r.id = "pxy-" + RandomHex(24);
  r.method = req.method;
  r.path = target.route;
  r.target = target.upstream;
  r.kind = ApiKindOfPath(r.path);
  r.recorded_path = r.kind != ApiKind::kOther && req.method == "POST";
  r.received_at = NowIso8601();
  r.start = ProxyClock::now();
  const std::string ctx_name = Lower(opts.context_header);
  for (const auto& [k, v] : req.headers) {
    const std::string n = Lower(k);
    if (n == ctx_name) {
      r.context_header = v;
      continue;
    }
    if (HopByHop(n) || n == "host" || n == "content-length" || n == "expect" ||
        n == "accept-encoding")
      continue;
    if (n == "authorization" && !opts.upstream_key.empty()) continue;
    r.forward_headers.emplace_back(k, v);
  }
  if (!opts.upstream_key.empty())
    r.forward_headers.emplace_back("Authorization", "Bearer " + opts.upstream_key);
  r.client_body = std::move(body);
  r.sent_body = r.client_body;
  if (!r.recorded_path) return;
  // Parsed in time linear in the body (nlohmann's own parser is quadratic in an
  // object's keys); a body that is not a JSON object is relayed and recorded as text.
  auto parsed = server::ParseBody(r.client_body);
  r.request = parsed.ok() ? std::move(*parsed) : WireJson();
  if (auto bad = CheckReadFields(r.request, &r.client_stream)) {
    r.refusal = std::move(*bad);
    return;
  }
  if (opts.logprob_sample > 0 && r.request.is_object() &&
      (r.kind == ApiKind::kChat || r.kind == ApiKind::kCompletions)) {
    WireJson with = r.request;
    WireJson added = InjectLogprobs(r.kind, with, opts.top_logprobs);
    if (!added.is_null()) {  // only requests that did not ask take part in the draw
      r.draw = DrawLogprobSample(opts.logprob_sample, opts.sample_seed, sample_index.fetch_add(1));
      if (r.draw->sampled) {
        r.injected = std::move(added);
        r.sent_body = Dump(with);
      }
    }
  }
}

bool Proxy::Impl::StartUpstream(Relay& r) {
  const std::string url = upstream_base + r.target;
  if (r.call->Start(r.method, url, r.forward_headers, r.sent_body, opts.limits)) {
    // An upstream that refuses logprobs must not fail a request that never asked for them.
    const long s = r.call->status();
    if (!r.injected.is_null() && (s == 400 || s == 422)) {
      std::string ignored;
      r.call->ReadAll(&ignored);
      r.sample_refused_status = s;
      r.injected = nullptr;
      r.sent_body = r.client_body;
      r.call = std::make_unique<UpstreamCall>();
      if (!r.call->Start(r.method, url, r.forward_headers, r.sent_body, opts.limits)) return false;
    }
    r.upstream_status = r.call->status();
    r.headers_ms = r.call->headers_seconds() * 1000;
    return true;
  }
  return false;
}

void Proxy::Impl::Handle(const Request& req, Response& res, std::string body) {
  auto target = NormalizeProxyTarget(req.target.empty() ? req.path : req.target);
  if (!target.ok()) {
    return SendError(res, 400, "invalid_request_error", "invalid_path", target.status().message());
  }
  auto r = std::make_shared<Relay>();
  ++in_flight;
  Prepare(req, *target, std::move(body), *r);
  res.set_header("X-Stet-Exchange-Id", r->id);
  if (r->refusal) {  // refused as `stet serve` would: nothing went upstream
    r->client_status = r->refusal->status;
    r->outcome = "invalid_request";
    res.status = r->refusal->status;
    res.set_content(server::ErrorBody(*r->refusal), "application/json");
    Log(*r);
    --in_flight;
    return;
  }
  if (!StartUpstream(*r)) {
    const bool slow = r->call->failure() == UpstreamCall::Failure::kTimeout;
    r->outcome = slow ? "upstream_timeout"
                 : r->call->failure() == UpstreamCall::Failure::kUnreachable
                     ? "upstream_unreachable"
                     : "upstream_broken";
    r->error = r->call->error();
    r->client_status = slow ? 504 : 502;
    Record(*r);
    SendError(res, r->client_status, "server_error", r->outcome, "stet proxy: " + r->error);
    Log(*r);
    --in_flight;
    return;
  }
  for (const auto& [k, v] : r->call->headers()) {
    const std::string n = Lower(k);
    if (HopByHop(n) || n == "content-length" || n == "content-encoding" || n == "content-type")
      continue;
    res.set_header(k, v);
  }
  const std::string type = r->call->Header("content-type");
  if (r->call->status() >= 200 && r->call->status() < 300 &&
      type.rfind("text/event-stream", 0) == 0) {
    return AnswerStream(r, res);  // in_flight drops when the stream ends
  }
  AnswerWhole(r, res);
  --in_flight;
}

void Proxy::Impl::AnswerWhole(std::shared_ptr<Relay> rp, Response& res) {
  Relay& r = *rp;
  std::string body;
  const bool complete = r.call->ReadAll(&body, opts.max_response_bytes);
  const std::string type = r.call->Header("content-type");
  if (!complete) {
    const auto f = r.call->failure();
    r.outcome = f == UpstreamCall::Failure::kTimeout    ? "upstream_timeout"
                : f == UpstreamCall::Failure::kTooLarge ? "upstream_too_large"
                                                        : "upstream_broken";
    r.truncated = f == UpstreamCall::Failure::kTooLarge;
    r.error = r.call->error() + (r.truncated ? " (--max-response-bytes)" : "");
    r.client_status = r.outcome == "upstream_timeout" ? 504 : 502;
    r.response_text = std::move(body);
    Record(r);
    SendError(res, r.client_status, "server_error", r.outcome, "stet proxy: " + r.error);
    return Log(r);
  }
  r.client_status = static_cast<int>(r.call->status());
  if (r.recorded_path) {
    WireJson parsed = WireJson::parse(body, nullptr, false);
    if (!parsed.is_discarded()) {
      r.response = parsed;
    } else {
      r.response_text = body;
    }
    if (r.client_status >= 300) r.outcome = "upstream_error";
    if (!r.injected.is_null() && r.response.is_object() && StripChoiceLogprobs(parsed))
      body = Dump(parsed);
    if (!Record(r)) {
      // An answer that could not be recorded is withheld: the client must not
      // take an unrecorded exchange for a recorded one.
      r.client_status = 500;
      SendError(res, 500, "server_error", "record_failed",
                "stet proxy: the exchange could not be recorded: " + r.error);
      return Log(r);
    }
  }
  res.status = r.client_status;
  res.set_content(body, type.empty() ? "application/octet-stream" : type);
  Log(r);
}

void Proxy::Impl::AnswerStream(std::shared_ptr<Relay> rp, Response& res) {
  Relay& r = *rp;
  r.streamed = true;
  r.client_status = static_cast<int>(r.call->status());
  r.fold.emplace(r.kind);
  res.status = r.client_status;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      r.call->Header("content-type"),
      [this, rp](size_t, DataSink& sink) -> bool {
        Relay& st = *rp;
        bool ok = true;
        for (;;) {
          const auto next = st.call->Read(&st.pending, kLivenessSliceMs);
          if (next == UpstreamCall::Next::kIdle) {
            if (sink.is_writable()) continue;
            ok =
                false;  // the client left while the upstream was silent: stop paying for the answer
            break;
          }
          if (next == UpstreamCall::Next::kData) {
            if (StreamTooLarge(st)) {
              const std::string ev = ErrorEvent(st.outcome, "stet proxy: " + st.error);
              sink.write(ev.data(), ev.size());
              ok = false;  // a cut stream must not look complete
              break;
            }
            if (!RelayEvents(st, sink, false)) {
              ok = false;
              break;
            }
            if (st.finished) break;  // the final event was relayed after its record committed
            continue;
          }
          if (next == UpstreamCall::Next::kEnd) {
            ok = RelayEvents(st, sink, true);
            if (ok && !st.finished) {  // the stream ended without a final event
              st.outcome = "no_final_event";
              ok = Record(st);
              if (!ok) {
                const std::string ev =
                    ErrorEvent("record_failed", "stet proxy: the exchange could not be recorded");
                sink.write(ev.data(), ev.size());
              }
            }
            break;
          }
          st.outcome = st.call->failure() == UpstreamCall::Failure::kTimeout
                           ? "upstream_timeout"
                           : "upstream_disconnected";
          st.error = st.call->error();
          Record(st);
          const std::string ev = ErrorEvent(st.outcome, "stet proxy: " + st.error);
          sink.write(ev.data(), ev.size());
          ok = false;  // a broken stream must not look complete
          break;
        }
        if (!st.finished && st.outcome == "ok") {  // the client went away
          st.call->Abort();
          st.outcome = "client_disconnected";
          Record(st);
        }
        Log(st);
        if (!ok) return false;
        sink.done();
        return true;
      },
      [this, rp](bool) {
        Relay& st = *rp;
        if (!st.finished) {  // the provider never ran to its end (client gone before the first
                             // write)
          st.call->Abort();
          st.outcome = "client_disconnected";
          Record(st);
          Log(st);
        }
        --in_flight;
      });
}

// A stream is relayed with a bounded buffer: one event longer than the cap (an
// SSE line that never ends), or more streamed bytes in all than the cap, ends
// it with an error event; the record keeps what was folded, marked truncated.
bool Proxy::Impl::StreamTooLarge(Relay& r) {
  r.streamed_bytes += r.pending.size() - r.pending_counted;
  r.pending_counted = r.pending.size();
  if (r.pending.size() <= opts.max_response_bytes && r.streamed_bytes <= opts.max_response_bytes)
    return false;
  r.call->FailWith(UpstreamCall::Failure::kTooLarge, "");
  r.outcome = "upstream_too_large";
  r.truncated = true;
  r.error = "the upstream's stream is larger than the " + std::to_string(opts.max_response_bytes) +
            " bytes this proxy relays (--max-response-bytes)";
  if (r.pending.size() > opts.max_response_bytes) r.pending.clear();
  Record(r);
  return true;
}

bool Proxy::Impl::RelayEvents(Relay& r, DataSink& sink, bool final_read) {
  std::string out;
  size_t from = 0;
  for (;;) {
    // The bytes before scan_from hold no event end: a long event arriving in
    // small pieces is scanned once, not once per piece.
    size_t end = EventEnd(r.pending, std::max(from, r.scan_from));
    if (end == std::string::npos && final_read && from < r.pending.size()) end = r.pending.size();
    if (end == std::string::npos) break;
    const std::string block = r.pending.substr(from, end - from);
    SseParser parser;
    std::vector<SseEvent> events;
    parser.Feed(block, &events);
    parser.Finish(&events);
    bool terminal = false;
    std::string relayed = block;
    for (const SseEvent& e : events) {
      const bool had_content = r.fold->content_seen();
      r.fold->Add(e);
      if (!had_content && r.fold->content_seen()) r.ttft_ms = MsSince(r.start);
      terminal |= IsTerminalEvent(r.kind, e);
      if (!r.injected.is_null() && !IsDoneEvent(e)) {
        WireJson j = WireJson::parse(e.data, nullptr, false);
        if (!j.is_discarded() && StripChoiceLogprobs(j)) relayed = "data: " + Dump(j) + "\n\n";
      }
    }
    if (terminal) {
      // Everything before the final event goes now; the final event only once recorded.
      if (!out.empty() && !sink.write(out.data(), out.size())) return false;
      out.clear();
      r.response = r.fold->Result();
      if (!Record(r)) {
        const std::string ev =
            ErrorEvent("record_failed", "stet proxy: the exchange could not be recorded");
        sink.write(ev.data(), ev.size());
        return false;
      }
      const std::string rest = relayed + r.pending.substr(end);
      r.pending.clear();
      r.pending_counted = 0;
      r.scan_from = 0;
      return rest.empty() || sink.write(rest.data(), rest.size());
    }
    out += relayed;
    from = end;
  }
  r.pending.erase(0, from);
  r.pending_counted = r.pending.size();
  r.scan_from = r.pending.size() >= 2 ? r.pending.size() - 2 : 0;
  return out.empty() || sink.write(out.data(), out.size());
}

WireJson Proxy::Impl::BuildRecord(const Relay& r) const {
  WireJson rec = WireJson::object();
  rec["schema"] = kExchangeSchema;
  rec["id"] = r.id;
  rec["kind"] = "traffic";
  rec["endpoint"] = r.path;
  rec["method"] = r.method;
  rec["upstream"] = upstream_shown;
  rec["received_at"] = r.received_at;
  rec["completed_at"] = NowIso8601();
  rec["latency_ms"] = std::round(MsSince(r.start) * 1000) / 1000;
  rec["upstream_headers_ms"] =
      r.headers_ms >= 0 ? WireJson(std::round(r.headers_ms * 1000) / 1000) : WireJson();
  rec["ttft_ms"] = r.ttft_ms >= 0 ? WireJson(std::round(r.ttft_ms * 1000) / 1000) : WireJson();
  rec["status"] = r.client_status;
  rec["upstream_status"] = r.upstream_status > 0 ? WireJson(r.upstream_status) : WireJson();
  rec["outcome"] = r.outcome;
  rec["stream"] = r.client_stream;
  rec["request"] = r.request;
  if (r.request.is_null()) rec["request_text"] = r.client_body;
  rec["injected"] = r.injected;
  if (r.draw) {
    WireJson s = {{"rate", opts.logprob_sample},
                  {"seed", opts.sample_seed},
                  {"index", r.draw->index},
                  {"u", r.draw->u},
                  {"sampled", r.draw->sampled}};
    if (r.sample_refused_status) s["refused_status"] = *r.sample_refused_status;
    rec["logprob_sample"] = std::move(s);
  } else {
    rec["logprob_sample"] = nullptr;
  }
  WireJson resp = r.response;
  if (resp.is_null() && r.fold) resp = r.fold->Result();
  rec["response"] = resp;
  if (!r.response_text.empty()) rec["response_text"] = r.response_text;
  if (r.truncated) rec["truncated"] = true;  // the answer passed --max-response-bytes
  rec["model_requested"] =
      r.request.is_object() && r.request.contains("model") ? r.request["model"] : WireJson();
  rec["model_answered"] = resp.is_object() && resp.contains("model") ? resp["model"] : WireJson();
  rec["system_fingerprint"] = resp.is_object() && resp.contains("system_fingerprint")
                                  ? resp["system_fingerprint"]
                                  : WireJson();
  const std::string rid = r.call->Header("x-request-id").empty() ? r.call->Header("request-id")
                                                                 : r.call->Header("x-request-id");
  rec["upstream_request_id"] = !rid.empty()                              ? WireJson(rid)
                               : resp.is_object() && resp.contains("id") ? resp["id"]
                                                                         : WireJson();
  rec["headers"] = KeptHeaders(r.call->headers());
  rec["context"] = ClientContext(r.context_header, r.request);
  rec["error"] = r.error.empty() ? WireJson() : WireJson(r.error);
  return rec;
}

bool Proxy::Impl::Record(Relay& r) {
  if (r.finished) return r.record_ok;
  r.finished = true;
  if (!r.recorded_path || !opts.store) return true;
  ExchangeRow row;
  FinishExchangeRow(BuildRecord(r), opts.redact, &row);
  Status st = opts.store->Insert(row);
  if (!st.ok()) {
    r.record_ok = false;
    r.error = st.ToString();
    return false;
  }
  ++recorded;
  return true;
}

}  // namespace stet::forensics
