// The server's Prometheus metrics and their text exposition (format 0.0.4):
// request counts by endpoint and status, token counters, latency histograms,
// and engine gauges sampled at scrape time. Thread-safe; recording is a short
// critical section, never a call into the engine.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace stet {
struct EngineStats;
}

namespace stet::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);  // upper bounds, ascending; +Inf implied
  void Observe(double v);
  // Appends `name_bucket{le=...}`, `name_sum`, `name_count` lines.
  void Write(const std::string& name, std::string* out) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative); last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

struct ServerGauges {
  bool ready = false;
  bool draining = false;
  int requests_in_flight = 0;  // admitted generation requests (the --max-queue count)
  std::string model_id, fingerprint;
};

class Metrics {
 public:
  Metrics();
  void CountRequest(const std::string& endpoint, int status);
  void AddTokens(int64_t prompt, int64_t generated, int64_t cached);
  void ObserveTtft(double seconds);
  void ObserveInterToken(double seconds);
  void ObserveRequestDuration(double seconds);
  void CountCancelled();

  // The exposition; `stats` null while the model loads.
  std::string Render(const ServerGauges& g, const EngineStats* stats) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  int64_t prompt_tokens_ = 0, generated_tokens_ = 0, cached_tokens_ = 0, cancelled_ = 0;
  Histogram ttft_, itl_, duration_;
};

// Prometheus label-value escaping (backslash, quote, newline).
std::string EscapeLabel(const std::string& v);

}  // namespace stet::server
