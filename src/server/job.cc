// Per-request event queue and result collector.
#include "server/job.h"

#include <algorithm>

namespace stet::server {

void Job::Push(int prompt, const RequestEvent& ev) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    q_.push_back({prompt, ev, Clock::now()});
  }
  cv_.notify_one();
}

bool Job::Pop(Item* out, std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, wait, [&] { return !q_.empty(); })) return false;
  *out = std::move(q_.front());
  q_.pop_front();
  return true;
}

Collector::Collector(int n_prompts, int n, std::vector<int> prompt_lengths, Clock::time_point start,
                     PieceFn raw_piece)
    : n_(n),
      prompt_lengths_(std::move(prompt_lengths)),
      raw_piece_(std::move(raw_piece)),
      start_(start),
      choices_(static_cast<size_t>(n_prompts) * n),
      last_token_(choices_.size()),
      has_token_(choices_.size(), false),
      completion_tokens_(choices_.size(), 0),
      cached_(n_prompts, 0),
      open_(static_cast<int>(choices_.size())) {}

int Collector::Apply(const Job::Item& item, bool* shown) {
  const RequestEvent& ev = item.ev;
  const int idx = item.prompt * n_ + ev.choice;
  ChoiceResult& c = choices_[idx];
  *shown = false;
  switch (ev.kind) {
    case RequestEvent::Kind::kPromptScored:
      c.prompt_tokens = ev.prompt_tokens;
      break;
    case RequestEvent::Kind::kToken: {
      const double since_start = std::chrono::duration<double>(item.t - start_).count();
      if (ttft_ < 0) ttft_ = since_start;
      if (has_token_[idx])
        itl_.push_back(std::chrono::duration<double>(item.t - last_token_[idx]).count());
      has_token_[idx] = true;
      last_token_[idx] = item.t;
      c.text += ev.text_delta;
      if (!ev.end_marker) {  // the engine says which token ended the choice
        c.tokens.push_back(ev.token);
        if (raw_piece_) c.raw += raw_piece_(ev.token.id);
        *shown = true;
      }
      break;
    }
    case RequestEvent::Kind::kFinished:
      if (c.finish == FinishReason::kNone) {
        c.text += ev.text_delta;
        c.finish = ev.finish;
        completion_tokens_[idx] = ev.completion_tokens;
        cached_[item.prompt] = std::max<int64_t>(cached_[item.prompt], ev.cached_prompt_tokens);
        if (ev.finish == FinishReason::kError && error_.empty()) error_ = ev.error;
        --open_;
      }
      break;
  }
  return idx;
}

UsageCounts Collector::usage() const {
  UsageCounts u;
  for (int len : prompt_lengths_) u.prompt_tokens += len;
  for (int64_t c : completion_tokens_) u.completion_tokens += c;
  for (int64_t c : cached_) u.cached_tokens += c;
  return u;
}

bool Collector::any(FinishReason r) const {
  return std::any_of(choices_.begin(), choices_.end(),
                     [&](const ChoiceResult& c) { return c.finish == r; });
}

}  // namespace stet::server
