// Helpers shared by tests: where the shared material and model cache are, and
// how to skip a test that needs material this machine lacks (in CI — CI=true —
// missing material is a failure, never a silent skip).
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace stet::testing {

std::string SharedDir();      // ../shared, or $STET_SHARED_DIR
std::string ModelCacheDir();  // ~/.cache/stet/models, or $STET_MODEL_CACHE
std::string SourceDir();      // the repository root
bool InCi();
bool FileExists(const std::string& path);
std::string ReadFileOrDie(const std::string& path);

// A shell command line's stdout and exit status (-1 when it could not be run
// or did not exit normally).
struct CommandResult {
  int exit_code = -1;
  std::string out;
};
CommandResult RunCommand(const std::string& command_line);

}  // namespace stet::testing

// Skips (outside CI) or fails (in CI) when `path` does not exist.
#define STET_REQUIRE_FILE(path)                                                            \
  do {                                                                                     \
    if (!::stet::testing::FileExists(path)) {                                              \
      if (::stet::testing::InCi()) FAIL() << "required test material missing: " << (path); \
      GTEST_SKIP() << "test material not present: " << (path);                             \
    }                                                                                      \
  } while (0)
