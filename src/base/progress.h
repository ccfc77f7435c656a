// A stderr progress bar for long work (model load, eval runs). Draws only when
// stderr is a terminal, so logs and CI output stay clean.
#pragma once

#include <cstdint>
#include <string>

namespace stet {

class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total);
  ~ProgressBar();
  void Update(int64_t done);
  void Finish();

 private:
  std::string label_;
  int64_t total_;
  int last_permille_ = -1;
  bool tty_;
  bool finished_ = false;
};

}  // namespace stet
