// StreamDecoder: holds back only a valid-but-unfinished UTF-8 prefix at the
// end of the buffer; everything before it is emitted, invalid subparts as
// U+FFFD (the WHATWG / Unicode "maximal subpart" substitution).
#include "tokenizer/stream_decoder.h"

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace stet {

namespace {
constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD
}

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool render_special)
    : tokenizer_(tokenizer), render_special_(render_special) {}

std::string StreamDecoder::Push(int32_t id) {
  pending_ += tokenizer_.TokenToPiece(id, render_special_);
  return Drain(false);
}

std::string StreamDecoder::Flush() { return Drain(true); }

std::string StreamDecoder::Drain(bool final) {
  std::string out;
  size_t pos = 0;
  while (pos < pending_.size()) {
    size_t len = 0;
    const tok::Utf8Scan scan = tok::ScanUtf8(pending_, pos, &len);
    if (scan == tok::Utf8Scan::kComplete) {
      out.append(pending_, pos, len);
    } else if (scan == tok::Utf8Scan::kInvalid || final) {
      out += kReplacement;
    } else {
      break;  // incomplete: wait for more bytes
    }
    pos += len;
  }
  pending_.erase(0, pos);
  return out;
}

}  // namespace stet
