// POST /v1/responses, OpenAI's Responses API over the chat template: the
// request side (input as a string or message items, instructions,
// max_output_tokens, sampling, include message.output_text.logprobs, text.format,
// function tools) parsed into the GenerationRequest every generation endpoint
// shares; the answer's shapes are responses_format.h's, the tools'
// responses_tools.h's. Stateless: what needs stored responses is a 400; text.format
// json_object / json_schema constrain the output (server/structured/structured_output.h);
// other fields stet cannot honour are a 400 naming the field.
#pragma once

#include "http/api_error.h"
#include "server/generation.h"
#include "server/openai/request_parse.h"

namespace stet::server {

// The request; `echo` holds what the response object repeats of it:
// "instructions", "max_output_tokens", "metadata", "tool_choice", "tools",
// "text_format", "temperature", "top_p", "top_logprobs", as given (or their defaults).
ApiOr<GenerationRequest> ParseResponsesRequest(const Json& body, const ServedModel& model);

}  // namespace stet::server
