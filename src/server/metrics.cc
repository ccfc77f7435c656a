// Prometheus text exposition. Every family has HELP and TYPE lines, counters
// end in _total, histogram buckets are cumulative and end with le="+Inf".
#include "server/metrics.h"

#include <cstdio>
#include <cstdlib>

#include "engine/engine.h"

namespace stet::server {

namespace {

// The shortest of %.15g / %.16g / %.17g that reads back as the same double.
std::string Num(double v) {
  char buf[64];
  for (int prec = 15; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

void Family(std::string* out, const char* name, const char* type, const char* help) {
  *out += "# HELP ";
  *out += name;
  *out += ' ';
  *out += help;
  *out += "\n# TYPE ";
  *out += name;
  *out += ' ';
  *out += type;
  *out += '\n';
}

void Sample(std::string* out, const std::string& name, const std::string& labels, double v) {
  *out += name;
  if (!labels.empty()) *out += "{" + labels + "}";
  *out += ' ';
  *out += Num(v);
  *out += '\n';
}

// A family of one unlabelled sample: its HELP and TYPE lines, then the sample.
void Single(std::string* out, const char* name, const char* type, const char* help, double v) {
  Family(out, name, type, help);
  Sample(out, name, "", v);
}

}  // namespace

std::string EscapeLabel(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

void Histogram::Write(const std::string& name, std::string* out) const {
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    Sample(out, name + "_bucket", "le=\"" + Num(bounds_[i]) + "\"", static_cast<double>(cum));
  }
  cum += counts_.back();
  Sample(out, name + "_bucket", "le=\"+Inf\"", static_cast<double>(cum));
  Sample(out, name + "_sum", "", sum_);
  Sample(out, name + "_count", "", static_cast<double>(count_));
}

Metrics::Metrics()
    : ttft_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
      itl_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}),
      duration_({0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}) {}

void Metrics::CountRequest(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{endpoint, status}];
}

void Metrics::AddTokens(int64_t prompt, int64_t generated, int64_t cached) {
  std::lock_guard<std::mutex> lock(mu_);
  prompt_tokens_ += prompt;
  generated_tokens_ += generated;
  cached_tokens_ += cached;
}

void Metrics::ObserveTtft(double s) {
  std::lock_guard<std::mutex> lock(mu_);
  ttft_.Observe(s);
}

void Metrics::ObserveInterToken(double s) {
  std::lock_guard<std::mutex> lock(mu_);
  itl_.Observe(s);
}

void Metrics::ObserveRequestDuration(double s) {
  std::lock_guard<std::mutex> lock(mu_);
  duration_.Observe(s);
}

void Metrics::CountCancelled() {
  std::lock_guard<std::mutex> lock(mu_);
  ++cancelled_;
}

std::string Metrics::Render(const ServerGauges& g, const EngineStats* st) const {
  std::string o;
  std::lock_guard<std::mutex> lock(mu_);
  Family(&o, "stet_info", "gauge", "Served model and system fingerprint (value is always 1).");
  Sample(&o, "stet_info",
         "model=\"" + EscapeLabel(g.model_id) + "\",fingerprint=\"" + EscapeLabel(g.fingerprint) +
             "\"",
         1);
  Single(&o, "stet_ready", "gauge", "1 when the model is loaded and requests are accepted.",
         g.ready && !g.draining ? 1 : 0);
  Family(&o, "stet_http_requests_total", "counter", "HTTP requests by endpoint and status code.");
  for (const auto& [key, n] : requests_) {
    Sample(
        &o, "stet_http_requests_total",
        "endpoint=\"" + EscapeLabel(key.first) + "\",status=\"" + std::to_string(key.second) + "\"",
        static_cast<double>(n));
  }
  Single(&o, "stet_requests_cancelled_total", "counter",
         "Generation requests cancelled because the client went away.",
         static_cast<double>(cancelled_));
  Single(&o, "stet_prompt_tokens_total", "counter",
         "Prompt tokens of answered requests (usage.prompt_tokens).",
         static_cast<double>(prompt_tokens_));
  Single(&o, "stet_generation_tokens_total", "counter",
         "Generated tokens of answered requests (usage.completion_tokens).",
         static_cast<double>(generated_tokens_));
  Single(&o, "stet_cached_prompt_tokens_total", "counter",
         "Prompt tokens served from the prefix cache.", static_cast<double>(cached_tokens_));
  Single(&o, "stet_requests_in_flight", "gauge",
         "Generation requests admitted and not yet answered (bounded by --max-queue).",
         g.requests_in_flight);

  const EngineStats zero;
  const EngineStats& s = st ? *st : zero;
  Single(&o, "stet_queue_depth", "gauge", "Sequences waiting for a KV slot in the engine.",
         s.waiting);
  Single(&o, "stet_running_sequences", "gauge", "Sequences holding KV cache in the engine.",
         s.running);
  Single(&o, "stet_queue_depth_max", "gauge",
         "Most sequences waiting at once since start (sampled every engine step).", s.max_waiting);
  Single(&o, "stet_running_sequences_max", "gauge",
         "Most sequences running at once since start (sampled every engine step).", s.max_running);
  Single(&o, "stet_kv_blocks_used", "gauge",
         "KV cache blocks referenced by sequences (cached but unreferenced prefix blocks count as "
         "free).",
         s.kv_blocks_used);
  Single(&o, "stet_kv_blocks_capacity", "gauge", "KV cache blocks in the pool.", s.kv_blocks_total);
  Family(&o, "stet_prefix_cache_lookup_tokens_total", "counter",
         "Prompt tokens looked up in the prefix cache.");
  Sample(&o, "stet_prefix_cache_lookup_tokens_total", "",
         static_cast<double>(s.prefix_lookup_tokens));
  Single(&o, "stet_prefix_cache_hit_tokens_total", "counter",
         "Prompt tokens found in the prefix cache.", static_cast<double>(s.prefix_hit_tokens));
  Family(&o, "stet_prefix_cache_hit_rate", "gauge",
         "Prefix cache hits / lookups, in tokens, since start.");
  Sample(&o, "stet_prefix_cache_hit_rate", "",
         s.prefix_lookup_tokens > 0
             ? static_cast<double>(s.prefix_hit_tokens) / s.prefix_lookup_tokens
             : 0.0);
  Single(&o, "stet_engine_prompt_tokens_total", "counter",
         "Prompt positions computed by the engine (cache hits excluded).",
         static_cast<double>(s.prompt_tokens));
  Single(&o, "stet_engine_generated_tokens_total", "counter", "Tokens sampled by the engine.",
         static_cast<double>(s.generated_tokens));
  Single(&o, "stet_engine_steps_total", "counter", "Forward steps run by the engine.",
         static_cast<double>(s.steps));
  Single(&o, "stet_engine_preemptions_total", "counter",
         "Sequences preempted (recomputed later) for lack of KV blocks.",
         static_cast<double>(s.preemptions));
  Single(&o, "stet_spec_draft_tokens_total", "counter",
         "Speculative draft tokens verified by the target model.",
         static_cast<double>(s.spec_draft_tokens));
  Single(&o, "stet_spec_accepted_tokens_total", "counter",
         "Speculative draft tokens equal to the sampled token (kept).",
         static_cast<double>(s.spec_accepted_tokens));
  Family(&o, "stet_spec_acceptance_rate", "gauge",
         "Accepted / verified draft tokens since start (0 before any draft).");
  Sample(&o, "stet_spec_acceptance_rate", "",
         s.spec_draft_tokens > 0 ? static_cast<double>(s.spec_accepted_tokens) / s.spec_draft_tokens
                                 : 0.0);

  Family(&o, "stet_time_to_first_token_seconds", "histogram",
         "From request arrival to the first generated token.");
  ttft_.Write("stet_time_to_first_token_seconds", &o);
  Family(&o, "stet_inter_token_latency_seconds", "histogram",
         "Between consecutive generated tokens of one choice.");
  itl_.Write("stet_inter_token_latency_seconds", &o);
  Family(&o, "stet_request_duration_seconds", "histogram",
         "From request arrival to the last byte of the answer.");
  duration_.Write("stet_request_duration_seconds", &o);
  return o;
}

}  // namespace stet::server
