// Streaming detokenization: token pieces can end inside a multi-byte UTF-8
// character (byte tokens, byte-level BPE), so text is released only up to the
// last complete character. Invariant: the concatenation of every Push and the
// final Flush equals Decode of all ids (without the SentencePiece first-space
// strip) whenever that is valid UTF-8; invalid bytes become U+FFFD, each
// maximal invalid subpart once, as soon as no continuation could complete it.
#pragma once

#include <cstdint>
#include <string>

namespace stet {

class Tokenizer;

class StreamDecoder {
 public:
  // `tokenizer` must outlive the decoder.
  explicit StreamDecoder(const Tokenizer& tokenizer, bool render_special = false);

  // The text that became complete with this token (possibly empty).
  std::string Push(int32_t id);
  // Everything still held back (an unfinished sequence becomes U+FFFD).
  std::string Flush();
  // Bytes held back waiting for the rest of a character.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  std::string Drain(bool final);

  const Tokenizer& tokenizer_;
  bool render_special_;
  std::string pending_;
};

}  // namespace stet
