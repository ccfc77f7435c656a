// Server-sent events parsing (the WHATWG event-stream format as OpenAI-style
// servers use it): bytes arrive in arbitrary chunks; an event is complete only
// at a blank line, so a `data:` field split across network reads is never cut.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace stet::forensics {

struct SseEvent {
  std::string event;  // the `event:` field; empty for the default "message"
  std::string data;   // `data:` lines joined with '\n'
  std::string id;
};

class SseParser {
 public:
  // Feeds the next chunk of the stream; appends every event it completes.
  void Feed(std::string_view chunk, std::vector<SseEvent>* out);
  // End of stream: a final event not followed by a blank line is still delivered
  // (some servers close right after the last `data:` line).
  void Finish(std::vector<SseEvent>* out);

 private:
  void Line(std::string_view line, std::vector<SseEvent>* out);
  void Dispatch(std::vector<SseEvent>* out);

  std::string buffer_;   // bytes of an incomplete line
  bool saw_cr_ = false;  // the previous chunk ended in '\r' (a "\r\n" split in two)
  bool bom_checked_ = false;
  SseEvent pending_;
  bool has_data_ = false;
};

// True for the OpenAI end-of-stream sentinel `data: [DONE]`.
inline bool IsDoneEvent(const SseEvent& e) { return e.data == "[DONE]"; }

}  // namespace stet::forensics
