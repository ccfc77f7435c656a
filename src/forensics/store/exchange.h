// The pieces of a `stet.exchange/1` record the proxy and the canary share: the
// seeded choice of which requests get logprobs, adding them to a request,
// redaction of configured JSON paths, the upstream headers worth keeping, the
// client's context, and the record's final assembly (snapshot hash included).
// Invariants: the sampling draw is a pure function of (seed, request index);
// no credential (Authorization, the upstream key) ever enters a record.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "forensics/client/answer_shaping.h"
#include "forensics/client/upstream.h"
#include "forensics/store/exchange_store.h"
#include "wire/stream_fold.h"

namespace stet::forensics {

using wire::ApiKind;
using wire::ApiKindOfPath;

// Whether request number `index` (0-based, in arrival order) gets logprobs:
// u = Philox4x32-10(key = seed; counter = index) as a double in [0, 1), sampled when u < rate.
struct SampleDraw {
  uint64_t index = 0;
  double u = 1;
  bool sampled = false;
};
SampleDraw DrawLogprobSample(double rate, uint64_t seed, uint64_t index);

// Adds logprobs to a request that did not ask for them (chat: logprobs true +
// top_logprobs; completions: logprobs = top). Returns the fields added, or
// null when the request already asked or the endpoint is not chat/completions.
WireJson InjectLogprobs(ApiKind kind, WireJson& body, int top_logprobs);

// A redaction path: dotted keys with [*] (every element) or [N], rooted at the
// record ("request.messages[*].content"); a leading "$." means "request.".
struct RedactPath {
  std::string text;
  std::vector<std::string> steps;  // keys; "[*]" and "[N]" for array steps
};
Result<RedactPath> ParseRedactPath(const std::string& text);
// Replaces every value the path reaches with "[redacted]"; returns how many.
int Redact(WireJson& record, const RedactPath& path);

// Upstream response headers kept in a record: request ids, rate limits,
// processing time, API version, Retry-After and Date. Names lower-cased.
WireJson KeptHeaders(const HeaderList& headers);

// The client's context: the header's JSON (a string when it is not JSON), and
// the request's `metadata` object; null when neither is present.
WireJson ClientContext(const std::string& header_value, const WireJson& request);

// Finishes a record: applies the redactions, then computes the snapshot of the
// (redacted) request and names it in the record; fills `row`.
void FinishExchangeRow(WireJson record, const std::vector<RedactPath>& redact, ExchangeRow* row);

}  // namespace stet::forensics
