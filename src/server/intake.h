// What every generation endpoint does first, in one order, so that a refusal
// costs what it must and no more: the request's slot under --max-queue (taken
// before any work on the body), the body parsed in linear time (and released
// without allocating when the handler returns), the endpoint's own fields,
// stet's template clock, `return_token_ids`, and the seed (the engine's
// NewSeed when the client gave none). Shared by /v1/completions,
// /v1/chat/completions and /v1/responses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "base/utc_time.h"
#include "engine/request.h"
#include "http/json_fields.h"
#include "server/record_builder.h"
#include "server/server_internal.h"

namespace stet::server {

// `Parsed` is the endpoint's request type; it holds its CommonFields as `s`.
template <typename Parsed>
class Intake {
 public:
  // `parse(body)` -> ApiOr<Parsed>. On any refusal the error is sent and ok() is false.
  template <typename ParseFn>
  Intake(Server::Impl& impl, const httplib::Request& req, httplib::Response& res, ParseFn&& parse)
      : received_at(NowIso8601()), slot(impl.AdmitOrRefuse(res)) {
    if (!slot) return;  // 429, or 503 while draining: answered
    if (auto e = Take(req, parse)) {
      SendError(res, *e);
      return;
    }
    ok_ = true;
  }
  Intake(const Intake&) = delete;
  Intake& operator=(const Intake&) = delete;

  bool ok() const { return ok_; }

  const std::string received_at;
  Server::Impl::Slot slot;
  ApiOr<Json> body = Json();
  std::optional<Parsed> request;
  std::optional<int64_t> clock;   // stet's template clock, when the client sent one
  bool return_token_ids = false;  // stet's extension (what `stet replay` compares)
  bool seed_generated = false;
  uint64_t seed = 0;

 private:
  template <typename ParseFn>
  std::optional<ApiError> Take(const httplib::Request& req, ParseFn& parse) {
    body = ParseBody(req.body);
    if (!body.ok()) return body.error();
    auto parsed = parse(*body);
    if (!parsed.ok()) return parsed.error();
    request.emplace(std::move(*parsed));
    auto c = ReadStetClock(*body);
    if (!c.ok()) return c.error();
    clock = *c;
    if (auto e = ReadBool(*body, "return_token_ids", &return_token_ids)) return e;
    auto& sampling = request->s.params.sampling;
    seed_generated = !sampling.seed;
    if (seed_generated) sampling.seed = NewSeed();
    seed = *sampling.seed;
    return std::nullopt;
  }

  ReleaseOnExit release_{body};  // declared after body: runs before body's destructor
  bool ok_ = false;
};

}  // namespace stet::server
