// libFuzzer target for the record reader behind `stet replay` and `stet record
// import`: the input is a record's JSON text, then (after a NUL byte) an
// endpoint's answer. A record ValidateRecord accepts goes through everything
// replay does with it offline — the request body it sends (with and without
// --logprobs), the comparison with the answer (or with an empty one), the
// report line. Any outcome is fine except a crash, a sanitizer report or an
// exception escaping: one odd record must never abort a replay.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "forensics/replay/replay.h"
#include "forensics/store/record_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stet::forensics;
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const size_t nul = all.find('\0');
  const std::string_view record_text = all.substr(0, nul);
  const std::string_view answer_text =
      nul == std::string_view::npos ? std::string_view() : all.substr(nul + 1);
  RecordJson record = RecordJson::parse(record_text, nullptr, /*allow_exceptions=*/false);
  if (record.is_discarded() || !ValidateRecord(record).ok()) return 0;
  for (bool force : {false, true}) {
    ReplayOptions o;
    o.force_logprobs = force;
    o.model = force ? "other" : "";
    const auto body = ReplayRequestBody(record, o);
    if (!body.is_object()) std::abort();  // replay posts it as the request
    (void)body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  }
  nlohmann::ordered_json answer =
      nlohmann::ordered_json::parse(answer_text, nullptr, /*allow_exceptions=*/false);
  if (answer.is_discarded() || !answer.is_object()) answer = nlohmann::ordered_json::object();
  const ReplayOutcome outcome = CompareReplay(record, answer);
  (void)ReplayOutcomeText(outcome);
  // Replaying the record against its own recorded choices, as an endpoint would answer.
  nlohmann::ordered_json self = nlohmann::ordered_json::object();
  self["choices"] = record["choices"];
  self["system_fingerprint"] = record["system_fingerprint"];
  (void)ReplayOutcomeText(CompareReplay(record, self));
  return 0;
}
