// The registry of tool-call formats, one row each, in detection order: the
// first format whose Detects() holds on a template is the template's. The
// generic format detects any template, so it comes last.
#include "server/structured/tool_formats.h"

namespace stet::server {

const std::vector<const ToolCallFormat*>& ToolCallFormats() {
  static const std::vector<const ToolCallFormat*> rows = {
      &HermesToolFormat(),
      &MistralToolFormat(),
      &Llama3ToolFormat(),
      &GenericToolFormat(),
  };
  return rows;
}

}  // namespace stet::server
