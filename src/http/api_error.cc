// OpenAI-style error bodies and a JSON dump that cannot throw on bad UTF-8.
#include "http/api_error.h"

#include <nlohmann/json.hpp>

namespace stet::server {

ApiError BadRequest(std::string message, std::string param, std::string code) {
  ApiError e;
  e.status = 400;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

ApiError ModelNotFound(const std::string& model) {
  ApiError e;
  e.status = 404;
  e.message = "The model '" + model + "' does not exist";
  e.param = "model";
  e.code = "model_not_found";
  return e;
}

ApiError ContextLengthExceeded(std::string message, std::string param) {
  return BadRequest(std::move(message), std::move(param), "context_length_exceeded");
}

Json ErrorJson(const ApiError& e) {
  Json inner = Json::object();
  inner["message"] = e.message;
  inner["type"] = e.type;
  inner["param"] = e.param.empty() ? Json(nullptr) : Json(e.param);
  inner["code"] = e.code.empty() ? Json(nullptr) : Json(e.code);
  Json out = Json::object();
  out["error"] = std::move(inner);
  return out;
}

std::string ErrorBody(const ApiError& e) { return Dump(ErrorJson(e)); }

std::string Dump(const Json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace stet::server
