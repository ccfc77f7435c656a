#include "tools/cmd_tokenize.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>

#include "tools/common.h"
#include "tools/model_catalog.h"

namespace stet::tools {

namespace {
struct TokenizeArgs {
  std::string model;
  std::string text;
  bool ids = false;
  bool stdin_text = false;
  bool no_bos = false;
  bool no_parse_special = false;
};

void TokenizeOptions(CLI::App* cmd, TokenizeArgs* args) {
  cmd->description("Print the tokens of TEXT under a model's tokenizer");
  AddModelOption(cmd, &args->model, "GGUF model (its tokenizer is used)");
  cmd->add_option("text", args->text, "Text to tokenize");
  cmd->add_flag("--ids", args->ids, "Print only the token ids, space-separated");
  cmd->add_flag("--stdin", args->stdin_text, "Read the text from standard input");
  cmd->add_flag("--no-bos", args->no_bos, "Do not add BOS/EOS even if the vocabulary asks for it");
  cmd->add_flag("--no-parse-special", args->no_parse_special,
                "Treat special-token text (e.g. <|im_start|>) as plain text");
}

std::string Printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\'')
      out += "\\'";
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else
      out += static_cast<char>(c);
  }
  return out;
}

int RunTokenize(const TokenizeArgs& a) {
  std::string text = a.text;
  if (a.stdin_text) text.assign(std::istreambuf_iterator<char>(std::cin), {});
  auto tok = LoadTokenizerOnly(a.model);
  if (!tok.ok()) return ReportError(tok.status());
  const Tokenizer& t = **tok;
  const auto ids = t.Encode(text, /*add_special=*/!a.no_bos, /*parse_special=*/!a.no_parse_special);
  if (a.ids) {
    for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? " " : "", ids[i]);
    std::printf("\n");
  } else {
    for (int32_t id : ids) {
      std::printf("%6d -> '%s'\n", id, Printable(t.TokenToPiece(id, true)).c_str());
    }
  }
  return kExitOk;
}
}  // namespace

CLI::App* AddTokenizeCommand(CLI::App& app, int* exit_code) {
  return AddCommand(app, exit_code, "tokenize", TokenizeOptions, WithModels(RunTokenize));
}

}  // namespace stet::tools
