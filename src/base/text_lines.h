// The lines of a text file as the line-oriented inputs (JSONL datasets, prompt
// sets, record cassettes) read them: numbered from 1, a Windows "\r\n" ending
// taken as "\n", blank lines skipped but counted, so an error can name the
// line an editor shows; and the trimming of a line or field.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace stet {

// Calls fn(line, lineno) for every line of `text` (one trailing '\r' cut) that
// holds a character outside `blank`; stops at fn's first error and returns it.
Status ForEachLine(std::string_view text,
                   const std::function<Status(const std::string& line, int lineno)>& fn,
                   const char* blank = " \t");

// `s` without the leading and trailing characters in `chars`.
std::string Trim(std::string_view s, const char* chars = " \t\r\n");

}  // namespace stet
