// stories260K from the shared material, and an engine on it (n_ctx 256), as
// the in-process server and record tests attach one. Header-only: only the tests that include it
// link the engine.
#pragma once

#include <memory>
#include <string>

#include "engine/engine.h"
#include "support/test_support.h"

namespace stet::testing {

inline std::string StoriesPath() { return SharedDir() + "/models/stories260K/stories260K.gguf"; }

// nullptr when the model is missing or does not load.
inline std::unique_ptr<Engine> StoriesEngine() {
  EngineOptions o;
  o.n_ctx = 256;
  auto e = Engine::Open(StoriesPath(), o);
  return e.ok() ? std::move(*e) : nullptr;
}

}  // namespace stet::testing
