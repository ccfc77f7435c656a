// One HTTP generation request in flight: the queue the engine's callback
// fills (never blocking the engine thread: a short lock and a push) and the
// collector that folds those events into per-choice results, usage and
// latency numbers — the only fold: answers, streams and records read its
// choices. Choice index = prompt_index * n + choice, as OpenAI numbers
// the choices of a multi-prompt completion.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "engine/request.h"
#include "server/openai/response.h"
#include "tokenizer/tokenizer.h"

namespace stet::server {

using Clock = std::chrono::steady_clock;

class Job {
 public:
  struct Item {
    int prompt = 0;
    RequestEvent ev;
    Clock::time_point t;
  };

  // Called on the engine thread.
  void Push(int prompt, const RequestEvent& ev);
  // Waits up to `wait` for an event; false on timeout.
  bool Pop(Item* out, std::chrono::milliseconds wait);

  std::vector<uint64_t> engine_ids;  // one per submitted prompt

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> q_;
};

class Collector {
 public:
  // `raw_piece` (requests that read tool calls): each shown token's piece with
  // special tokens written out is folded into its choice's `raw`.
  Collector(int n_prompts, int n, std::vector<int> prompt_lengths, Clock::time_point start,
            PieceFn raw_piece = nullptr);

  // Folds one event in. Returns the choice index; *shown says whether a
  // kToken event's token belongs in logprobs (end markers do not).
  int Apply(const Job::Item& item, bool* shown);
  bool done() const { return open_ == 0; }

  std::vector<ChoiceResult>& choices() { return choices_; }
  UsageCounts usage() const;
  // Seconds from the start to the first generated token; < 0 before it.
  double ttft() const { return ttft_; }
  const std::vector<double>& inter_token() const { return itl_; }
  bool any(FinishReason r) const;
  std::string first_error() const { return error_; }

 private:
  int n_;
  std::vector<int> prompt_lengths_;
  PieceFn raw_piece_;
  Clock::time_point start_;
  std::vector<ChoiceResult> choices_;
  std::vector<Clock::time_point> last_token_;
  std::vector<bool> has_token_;
  std::vector<int64_t> completion_tokens_;
  std::vector<int64_t> cached_;  // per prompt (max over its choices)
  int open_;
  double ttft_ = -1;
  std::vector<double> itl_;
  std::string error_;
};

}  // namespace stet::server
