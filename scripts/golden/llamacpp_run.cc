// A golden-data helper, not part of stet: runs llama.cpp (linked statically from
// the llama-cpp-python 0.3.36 build in ~/.cache/stet/llama.cpp-0.3.36) so the
// scripts in scripts/golden/ can record what llama.cpp computes without the
// Python bindings. make_gemma3_goldens.py compiles and drives it.
//
//   llamacpp_run tokenize MODEL ADD_SPECIAL PARSE_SPECIAL
//       stdin: one hex-encoded UTF-8 text per line; stdout: its ids, space-separated
//   llamacpp_run detokenize MODEL
//       stdin: one id list (space-separated) per line; stdout: its text, hex-encoded
//       (llama_detokenize, special tokens kept and not rendered)
//   llamacpp_run greedy MODEL N_STEPS N_CTX N_THREADS LOGITS_OUT
//       stdin: one prompt (space-separated ids) per line; per prompt a fresh
//       context evaluates it, then N_STEPS greedy steps (argmax of the float32
//       logits, ties to the lower id, no stop on EOS); stdout: the chosen ids;
//       LOGITS_OUT: the float32 logits of every step, prompt after prompt.
//       K/V cache f16, no flash attention (llama-cpp-python's defaults).
//   llamacpp_run score MODEL N_CTX N_THREADS LOGITS_OUT
//       stdin: one sequence (space-separated ids) per line; per sequence a fresh
//       context evaluates it in one batch with logits for every position;
//       LOGITS_OUT: those float32 logits, position after position (bench/fidelity).
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"

namespace {

void Quiet(ggml_log_level level, const char* text, void*) {
  if (level >= GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

std::string FromHex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
  }
  return out;
}

int Tokenize(const llama_vocab* vocab, bool add_special, bool parse_special) {
  std::string line;
  while (std::getline(std::cin, line)) {
    const std::string text = FromHex(line);
    std::vector<llama_token> ids(text.size() + 16);
    int n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), ids.data(),
                           static_cast<int32_t>(ids.size()), add_special, parse_special);
    if (n < 0) {
      ids.resize(-n);
      n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), ids.data(),
                         static_cast<int32_t>(ids.size()), add_special, parse_special);
    }
    for (int i = 0; i < n; ++i) std::printf(i ? " %d" : "%d", ids[i]);
    std::printf("\n");
  }
  return 0;
}

int Detokenize(const llama_vocab* vocab) {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::vector<llama_token> ids;
    std::istringstream in(line);
    for (int id; in >> id;) ids.push_back(id);
    std::string text(ids.size() * 64 + 16, '\0');
    const int n = llama_detokenize(vocab, ids.data(), static_cast<int32_t>(ids.size()), text.data(),
                                   static_cast<int32_t>(text.size()), false, false);
    if (n < 0) return 5;
    for (int i = 0; i < n; ++i) std::printf("%02x", static_cast<unsigned char>(text[i]));
    std::printf("\n");
  }
  return 0;
}

int Greedy(llama_model* model, int n_steps, int n_ctx, int n_threads, const char* logits_path) {
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  FILE* out = std::fopen(logits_path, "wb");
  if (!out) return 1;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::vector<llama_token> prompt;
    std::istringstream in(line);
    for (int id; in >> id;) prompt.push_back(id);
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch = 512;
    cp.n_ubatch = 512;
    cp.n_threads = n_threads;
    cp.n_threads_batch = n_threads;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    llama_context* ctx = llama_init_from_model(model, cp);
    if (!ctx) return 2;
    if (llama_decode(ctx, llama_batch_get_one(prompt.data(), static_cast<int32_t>(prompt.size()))))
      return 3;
    for (int step = 0; step < n_steps; ++step) {
      const float* logits = llama_get_logits_ith(ctx, -1);
      std::fwrite(logits, sizeof(float), n_vocab, out);
      llama_token best = 0;
      for (int t = 1; t < n_vocab; ++t) {
        if (logits[t] > logits[best]) best = t;
      }
      std::printf(step ? " %d" : "%d", best);
      if (step + 1 < n_steps && llama_decode(ctx, llama_batch_get_one(&best, 1))) return 4;
    }
    std::printf("\n");
    std::fflush(stdout);
    llama_free(ctx);
  }
  std::fclose(out);
  return 0;
}

llama_context* NewContext(llama_model* model, int n_ctx, int n_threads) {
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = n_ctx;
  cp.n_batch = n_ctx;
  cp.n_ubatch = 512;
  cp.n_threads = n_threads;
  cp.n_threads_batch = n_threads;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  return llama_init_from_model(model, cp);
}

int Score(llama_model* model, int n_ctx, int n_threads, const char* logits_path) {
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  FILE* out = std::fopen(logits_path, "wb");
  if (!out) return 1;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::vector<llama_token> ids;
    std::istringstream in(line);
    for (int id; in >> id;) ids.push_back(id);
    if (ids.empty()) continue;
    llama_context* ctx = NewContext(model, n_ctx, n_threads);
    if (!ctx) return 2;
    llama_batch batch = llama_batch_init(static_cast<int32_t>(ids.size()), 0, 1);
    for (size_t i = 0; i < ids.size(); ++i) {
      batch.token[i] = ids[i];
      batch.pos[i] = static_cast<llama_pos>(i);
      batch.n_seq_id[i] = 1;
      batch.seq_id[i][0] = 0;
      batch.logits[i] = 1;
    }
    batch.n_tokens = static_cast<int32_t>(ids.size());
    if (llama_decode(ctx, batch)) return 3;
    for (size_t i = 0; i < ids.size(); ++i)
      std::fwrite(llama_get_logits_ith(ctx, static_cast<int32_t>(i)), sizeof(float), n_vocab, out);
    llama_batch_free(batch);
    llama_free(ctx);
  }
  std::fclose(out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: llamacpp_run tokenize|detokenize|greedy|score MODEL ...\n");
    return 64;
  }
  const std::string mode = argv[1];
  llama_log_set(Quiet, nullptr);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  llama_model* model = llama_model_load_from_file(argv[2], mp);
  if (!model) {
    std::fprintf(stderr, "cannot load %s\n", argv[2]);
    return 1;
  }
  int rc = 64;
  if (mode == "tokenize" && argc == 5) {
    rc = Tokenize(llama_model_get_vocab(model), std::atoi(argv[3]) != 0, std::atoi(argv[4]) != 0);
  } else if (mode == "detokenize" && argc == 3) {
    rc = Detokenize(llama_model_get_vocab(model));
  } else if (mode == "greedy" && argc == 7) {
    rc = Greedy(model, std::atoi(argv[3]), std::atoi(argv[4]), std::atoi(argv[5]), argv[6]);
  } else if (mode == "score" && argc == 6) {
    rc = Score(model, std::atoi(argv[3]), std::atoi(argv[4]), argv[5]);
  }
  llama_model_free(model);
  return rc;
}
