// The one path every generation endpoint takes (Server::Impl::Serve): intake
// (slot, body, the wire shape's parser, clock, seed), the model-side steps of
// server/pipeline.h (render, tokenize, engine parameters, record), submission
// to the engine, then the answer in the request's wire shape
// (server/openai/wire_format.h), whole or streamed. Invariants: the record is
// committed before the answer (or a stream's final events) is written; a
// client that goes away has its requests cancelled in the engine.
#include <nlohmann/json.hpp>

#include "server/intake.h"
#include "server/pipeline.h"
#include "server/server_internal.h"

namespace stet::server {

using httplib::DataSink;
using httplib::Request;
using httplib::Response;

namespace {

// A choice that ended in error: a grammar that outgrew its limits while
// generating is the request's fault (400, as at parse time); anything else is ours (500).
ApiError GenerationError(const std::string& error) {
  if (error.rfind("grammar:", 0) == 0) return BadRequest(error, "grammar");
  return MakeError(500, "server_error", "internal_error", "generation failed: " + error);
}

ApiError FromStatus(const Status& s, const char* prompt_param) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
      return BadRequest(s.message());
    case StatusCode::kResourceExhausted:
      return ContextLengthExceeded(s.message(), prompt_param);
    case StatusCode::kCancelled:
      return MakeError(503, "server_error", "shutting_down", s.message());
    default:
      return MakeError(500, "server_error", "internal_error", s.ToString());
  }
}

}  // namespace

Intake::Intake(Server::Impl& impl, const Request& req, Response& res, const RequestParser& parse)
    : received_at(NowIso8601()), slot(impl.AdmitOrRefuse(res)) {
  if (!slot) return;  // 429, or 503 while draining: answered
  if (auto e = Take(req, parse)) {
    SendError(res, *e);
    return;
  }
  ok_ = true;
}

std::optional<ApiError> Intake::Take(const Request& req, const RequestParser& parse) {
  body = ParseBody(req.body);
  if (!body.ok()) return body.error();
  auto parsed = parse(*body);
  if (!parsed.ok()) return parsed.error();
  request.emplace(std::move(*parsed));
  auto c = ReadStetClock(*body);
  if (!c.ok()) return c.error();
  request->clock = *c;
  if (auto e = ReadBool(*body, "return_token_ids", &request->out.return_token_ids)) return e;
  auto& sampling = request->s.params.sampling;
  request->seed_generated = !sampling.seed;
  if (request->seed_generated) sampling.seed = NewSeed();
  seed = *sampling.seed;
  return std::nullopt;
}

ResponseMeta Server::Impl::Meta(uint64_t seed) const {
  ResponseMeta m;
  m.id = CurrentRecord().id;
  m.created = static_cast<int64_t>(std::time(nullptr));
  m.model = info.names.id;
  m.fingerprint = engine->fingerprint();
  m.seed = seed;
  return m;
}

void Server::Impl::Serve(const Request& req, Response& res, const RequestParser& parse) {
  Intake in(*this, req, res, parse);
  if (!in.ok()) return;
  GenerationRequest& g = *in.request;
  if (!g.messages
           .is_null()) {  // chat_template_kwargs, add_generation_prompt, continue_final_message
    auto how = ReadChatPromptOptions(*in.body, 0);
    if (!how.ok()) return SendError(res, how.error());
    g.template_options = std::move(*how);
  }
  g.s.params.cache_salt = CacheSalt(req, g.s.cache_salt);  // the tenant's prefix-cache scope
  RequestRecord& rec = CurrentRecord();
  rec.stream = g.s.stream;
  rec.seed = in.seed;
  auto prepared = Prepare(model, g, opts.recorder != nullptr);
  if (!prepared.ok()) return SendError(res, prepared.error());
  RecordFn record;
  if (opts.recorder) record = MakeRecordFn(model, g, *prepared, {*in.body, rec.id, in.received_at});
  auto answer = std::make_shared<Answer>();
  answer->format = MakeWireFormat(g, *prepared, Meta(in.seed), Piece(model),
                                  ToolParser(model, g, *prepared), SafeParser(model, g, *prepared));
  answer->record = std::move(record);
  answer->job = in.slot.Take();  // released when the answer is done
  if (auto e = Submit(std::move(prepared->params), RawPiece(model, g), g.prompt_param, *answer))
    return SendError(res, *e);
  if (!g.s.stream) return AnswerWhole(*answer, res);
  AnswerStream(std::move(answer), res);
}

std::optional<ApiError> Server::Impl::Submit(std::vector<RequestParams> params, PieceFn raw_piece,
                                             const char* prompt_param, Answer& a) {
  std::vector<int> lengths;
  const int n = params.empty() ? 1 : params[0].n;
  for (size_t i = 0; i < params.size(); ++i) {
    lengths.push_back(static_cast<int>(params[i].prompt.size()));
    const int prompt = static_cast<int>(i);
    auto sub = engine->Submit(std::move(params[i]), [job = a.job, prompt](const RequestEvent& ev) {
      job->Push(prompt, ev);
    });
    if (!sub.ok()) {
      for (uint64_t id : a.job->engine_ids) engine->Cancel(id);
      Release(a.job);
      return FromStatus(sub.status(), prompt_param);
    }
    a.job->engine_ids.push_back(sub->id);
  }
  a.coll = std::make_shared<Collector>(static_cast<int>(lengths.size()), n, lengths,
                                       CurrentRecord().start, std::move(raw_piece));
  return std::nullopt;
}

std::optional<ApiError> Server::Impl::Commit(const Answer& a) {
  if (!a.record || !opts.recorder || a.coll->any(FinishReason::kError) ||
      a.coll->any(FinishReason::kCancelled)) {
    return std::nullopt;
  }
  return CommitRecord(*opts.recorder, a.record, a.coll->choices(), a.coll->usage());
}

void Server::Impl::AnswerWhole(Answer& a, Response& res) {
  Collector& coll = *a.coll;
  Job::Item it;
  bool shown;
  auto checked = Clock::now();
  while (!coll.done()) {
    if (a.job->Pop(&it, kPollInterval)) coll.Apply(it, &shown);
    if (Clock::now() - checked < kPollInterval) continue;
    checked = Clock::now();
    if (CurrentClientGone()) {  // nobody awaits the answer: free the engine
      EndJob(a.job, coll);
      CloseAfter(res);
      return SendError(res, MakeError(499, "invalid_request_error", "client_closed_request",
                                      "the client closed the connection; the request was "
                                      "cancelled"));
    }
  }
  Account(coll);
  // Recorded before the answer is written (and before the drain sees it done).
  const std::optional<ApiError> record_error = Commit(a);
  Release(a.job);
  if (coll.any(FinishReason::kError)) return SendError(res, GenerationError(coll.first_error()));
  if (coll.any(FinishReason::kCancelled)) {
    return SendError(res, MakeError(503, "server_error", "shutting_down",
                                    "the request was cancelled by a shutdown"));
  }
  if (record_error) return SendError(res, *record_error);
  SendJson(res, 200, a.format->Body(coll.choices(), coll.usage()));
}

bool Server::Impl::StreamEvents(Answer& a, DataSink& sink) {
  WireFormat& f = *a.format;
  Collector& coll = *a.coll;
  auto write = [&](const std::string& s) { return s.empty() || sink.write(s.data(), s.size()); };
  bool alive = write(f.Begin());
  Job::Item it;
  bool shown;
  while (alive && !coll.done()) {
    if (!a.job->Pop(&it, kPollInterval)) {
      alive = sink.is_writable();
      continue;
    }
    const int idx = coll.Apply(it, &shown);
    alive =
        write(f.Step({idx, it.prompt, it.ev, shown ? &it.ev.token : nullptr, coll.choices()[idx]}));
  }
  if (alive && coll.any(FinishReason::kError)) {
    alive = write(SseEvent(ErrorJson(GenerationError(coll.first_error()))));
  } else if (alive) {
    // The record is committed before the final events: a client that saw them was recorded.
    if (auto e = Commit(a)) {
      CurrentRecord().error = e->message;
      write(SseEvent(ErrorJson(*e)));
      alive = false;  // no final events: an unrecorded answer must not look complete
    }
  }
  return alive && write(f.End(coll.choices(), coll.usage())) &&
         (!f.done_marker() || write(SseDone()));
}

void Server::Impl::AnswerStream(std::shared_ptr<Answer> a, Response& res) {
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, a](size_t, DataSink& sink) -> bool {
        const bool alive = StreamEvents(*a, sink);
        FinishAnswer(*a);  // cancels in the engine when the client went away
        if (!alive) return false;
        sink.done();
        return true;
      },
      [this, a](bool) { FinishAnswer(*a); });
}

}  // namespace stet::server
