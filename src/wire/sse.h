// Server-sent events as OpenAI-style servers use them (the WHATWG
// event-stream format), written (`stet serve`) and read (forensics, the
// proxy) by this one module. Reading: bytes arrive in arbitrary chunks; an
// event is complete only at a blank line, so a `data:` field split across
// network reads is never cut.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace stet::wire {

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

// "data: <data>\n\n" (chat and completions chunks: one line of JSON).
std::string SseData(std::string_view data);
// "event: <type>\ndata: <data>\n\n" (the Responses API's typed events).
std::string SseTyped(std::string_view type, std::string_view data);
// The end of a chat or completions stream.
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

}  // namespace stet::wire
