#include "base/progress.h"

#include <unistd.h>

#include <cstdio>

namespace stet {

ProgressBar::ProgressBar(std::string label, int64_t total)
    : label_(std::move(label)), total_(total > 0 ? total : 1), tty_(isatty(2) == 1) {}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Update(int64_t done) {
  if (!tty_ || finished_) return;
  const int permille = static_cast<int>(1000 * done / total_);
  if (permille == last_permille_) return;
  last_permille_ = permille;
  constexpr int kWidth = 30;
  const int filled = permille * kWidth / 1000;
  std::fprintf(stderr, "\r%s [", label_.c_str());
  for (int i = 0; i < kWidth; ++i) std::fputc(i < filled ? '#' : ' ', stderr);
  std::fprintf(stderr, "] %3d%%", permille / 10);
  std::fflush(stderr);
}

void ProgressBar::Finish() {
  if (finished_) return;
  finished_ = true;
  if (tty_ && last_permille_ >= 0) std::fprintf(stderr, "\r\033[K");
}

}  // namespace stet
