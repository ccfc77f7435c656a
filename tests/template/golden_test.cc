// Renders every case of every golden file in tests/golden/chat_templates
// (made by scripts/golden/make_chat_template_goldens.py with Python's Jinja2
// configured as HF transformers does) and compares byte for byte. A case
// whose golden records a Python exception must fail to render here too.
// tests/golden/builtin_templates holds the same for stet's built-in
// templates, rendered here from the text embedded in the library.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/test_support.h"
#include "template/builtin_templates.h"
#include "template/chat_template.h"

namespace stet {
namespace {

using nlohmann::ordered_json;

std::string FirstDifference(const std::string& got, const std::string& want) {
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  size_t from = i > 40 ? i - 40 : 0;
  std::ostringstream os;
  os << "first difference at byte " << i << " (got " << got.size() << " bytes, want " << want.size()
     << ")\n"
     << "  got:  " << ordered_json(got.substr(from, 100)).dump() << "\n"
     << "  want: " << ordered_json(want.substr(from, 100)).dump();
  return os.str();
}

// The template a golden was made from, by its file name.
using SourceOf = std::function<std::string(const std::string& file_name)>;

// Returns an empty string when every case matches, else what went wrong.
std::string CheckTemplate(const std::filesystem::path& golden_path, const SourceOf& source_of,
                          int* cases) {
  std::ifstream in(golden_path);
  ordered_json golden = ordered_json::parse(in);
  const std::string source = source_of(golden.at("template").get<std::string>());
  Result<ChatTemplate> tmpl = ChatTemplate::Parse(source);
  std::string problems;
  for (const auto& c : golden.at("cases")) {
    ++*cases;
    std::string case_name = c.at("name").get<std::string>();
    bool want_error = c.value("error", false);
    Result<std::string> got =
        tmpl.ok() ? tmpl->Render(c.at("context")) : Result<std::string>(tmpl.status());
    if (want_error) {
      if (got.ok()) {
        problems += "  " + case_name + ": rendered, but Python raised " +
                    c.value("error_type", std::string()) + ": " +
                    c.value("error_message", std::string()) + "\n";
      }
      continue;
    }
    const std::string want = c.at("expected").get<std::string>();
    if (!got.ok()) {
      problems += "  " + case_name + ": " + got.status().ToString() + "\n";
    } else if (*got != want) {
      problems += "  " + case_name + ": " + FirstDifference(*got, want) + "\n";
    }
  }
  return problems;
}

std::vector<std::filesystem::path> GoldenFiles(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Checks every golden of `files`; returns how many templates matched, failures in `failures`.
int CheckAll(const std::vector<std::filesystem::path>& files, const SourceOf& source_of,
             std::string* failures) {
  int passed = 0, cases = 0;
  for (const auto& f : files) {
    std::string problems = CheckTemplate(f, source_of, &cases);
    if (problems.empty()) {
      ++passed;
    } else {
      *failures += f.stem().string() + ":\n" + problems;
    }
  }
  std::cout << passed << " of " << files.size() << " templates match byte for byte (" << cases
            << " cases)\n";
  if (!failures->empty()) std::cout << "templates that do not match:\n" << *failures;
  return passed;
}

TEST(ChatTemplateGolden, RendersLikeJinja2) {
  const std::string templates_dir = testing::SharedDir() + "/chat-templates";
  STET_REQUIRE_FILE(templates_dir);
  const auto files = GoldenFiles(testing::SourceDir() + "/tests/golden/chat_templates");
  ASSERT_GE(files.size(), 60u) << "golden files missing";
  std::string failures;
  const int passed = CheckAll(
      files,
      [&](const std::string& name) { return testing::ReadFileOrDie(templates_dir + "/" + name); },
      &failures);
  EXPECT_GE(passed, 60) << failures;
}

// The built-ins must match Jinja2 on every case, every one of them.
TEST(ChatTemplateGolden, BuiltinsRenderLikeJinja2) {
  const auto files = GoldenFiles(testing::SourceDir() + "/tests/golden/builtin_templates");
  ASSERT_EQ(files.size(), BuiltinTemplates().size());
  std::string failures;
  const int passed = CheckAll(
      files,
      [](const std::string& name) {
        const BuiltinTemplate* t = FindBuiltinTemplate(name.substr(0, name.find('.')));
        return t ? std::string(t->source)
                 : std::string("{{ raise_exception('no such built-in') }}");
      },
      &failures);
  EXPECT_EQ(passed, static_cast<int>(files.size())) << failures;
}

}  // namespace
}  // namespace stet
