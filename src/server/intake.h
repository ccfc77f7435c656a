// What every generation endpoint does first, in one order, so that a refusal
// costs what it must and no more: the request's slot under --max-queue (taken
// before any work on the body), the body parsed in linear time (and released
// without allocating when the request is done), the endpoint's own fields
// into a GenerationRequest, stet's template clock, `return_token_ids`, and the
// seed (the engine's NewSeed when the client gave none).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "base/utc_time.h"
#include "http/json_fields.h"
#include "server/generation.h"
#include "server/server_internal.h"

namespace stet::server {

// A wire shape's body parser (ParseChatRequest, ...).
using RequestParser = std::function<ApiOr<GenerationRequest>(const Json& body)>;

class Intake {
 public:
  // On any refusal the error is sent and ok() is false.
  Intake(Server::Impl& impl, const httplib::Request& req, httplib::Response& res,
         const RequestParser& parse);
  Intake(const Intake&) = delete;
  Intake& operator=(const Intake&) = delete;

  bool ok() const { return ok_; }

  const std::string received_at;
  Server::Impl::Slot slot;
  ApiOr<Json> body = Json();
  std::optional<GenerationRequest> request;
  uint64_t seed = 0;

 private:
  std::optional<ApiError> Take(const httplib::Request& req, const RequestParser& parse);

  ReleaseOnExit release_{body};  // declared after body: runs before body's destructor
  bool ok_ = false;
};

}  // namespace stet::server
