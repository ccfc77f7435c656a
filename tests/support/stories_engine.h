// stories260K from the shared material, and an engine on it (n_ctx 256) put
// together from its parts, as the in-process server and record tests attach
// one. Header-only: only the tests that include it link the engine.
#pragma once

#include <memory>
#include <string>

#include "engine/engine.h"
#include "model/model.h"
#include "support/test_support.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace stet::testing {

inline std::string StoriesPath() { return SharedDir() + "/models/stories260K/stories260K.gguf"; }

// nullptr when the model is missing or does not load.
inline std::unique_ptr<Engine> StoriesEngine() {
  auto m = Model::Load(StoriesPath());
  if (!m.ok()) return nullptr;
  auto v = VocabFromGguf((*m)->file());
  if (!v.ok()) return nullptr;
  auto t = Tokenizer::Create(std::move(*v));
  if (!t.ok()) return nullptr;
  EngineOptions o;
  o.n_ctx = 256;
  auto e = Engine::Create(std::move(*m), std::move(*t), o);
  return e.ok() ? std::move(*e) : nullptr;
}

}  // namespace stet::testing
