// Per-choice output text: turns sampled tokens into text deltas that never
// split a UTF-8 character and never leak the start of a stop string. A stop
// string may span token boundaries; once matched, the text ends just before it.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/stream_decoder.h"

namespace stet {

class TextStream {
 public:
  // `stops` is the request's list, shared by all its choices (a stop string
  // may be kilobytes; n copies of it would not be); it must outlive the stream.
  TextStream(const Tokenizer& tok, const std::vector<std::string>* stops);

  // Adds a token; returns the text that may be released now. Sets *stopped
  // when a stop string completed (the returned text ends before it).
  std::string Push(int32_t id, bool* stopped);
  // At the end of generation (not after a stop): everything held back.
  std::string Finish();

 private:
  std::string Release(bool final, bool* stopped);

  StreamDecoder decoder_;
  const std::vector<std::string>* stops_;  // empty strings never match
  std::string held_;                       // decoded text not yet released
};

}  // namespace stet
