// The server's endpoints, one row each. Every place that needs to know an
// endpoint reads this table: registration with httplib, the gate (key,
// method, 404 vs 405 and its Allow header), readiness, the metrics label, the
// log line, the request id's prefix, and docs/api.md (a test checks that the
// doc lists every row). Adding an endpoint is adding a row and its handler
// (docs/recipes.md).
#pragma once

#include <string>
#include <vector>

#include "server/server_internal.h"

namespace stet::server {

enum class RouteAccess {
  kKeyed,    // the API key, and refused while loading or draining (as every /v1/* path)
  kMetrics,  // the API key unless --metrics-public; served while loading
  kOpen,     // no key; served while loading (/health)
};

struct Route {
  using Handler = void (Server::Impl::*)(const httplib::Request&, httplib::Response&);
  const char* method;  // "POST" (a JSON body, read under the body limits) or "GET" (and HEAD)
  const char* path;    // exact, or ending in "{id}": the prefix and one or more characters
  RouteAccess access;
  bool generation;        // a generation: duration histogram, token fields in the log line
  const char* id_prefix;  // of the X-Request-Id (and the response's id)
  Handler handle;
  const char* doc;  // what the endpoint does, one line
};

const std::vector<Route>& RouteTable();
// The row serving `path` (any method), or null.
const Route* FindRoute(const std::string& path);
// The path's metrics and log label: the row's path, or "other".
std::string EndpointLabel(const std::string& path);

}  // namespace stet::server
