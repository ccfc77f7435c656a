// Renders every case of every golden file in tests/golden/chat_templates
// (made by scripts/golden/make_chat_template_goldens.py with Python's Jinja2
// configured as HF transformers does) and compares byte for byte. A case
// whose golden records a Python exception must fail to render here too.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/test_support.h"
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

// Returns an empty string when every case matches, else what went wrong.
std::string CheckTemplate(const std::filesystem::path& golden_path,
                          const std::string& templates_dir, int* cases) {
  std::ifstream in(golden_path);
  ordered_json golden = ordered_json::parse(in);
  std::string name = golden.at("template").get<std::string>();
  std::string source = testing::ReadFileOrDie(templates_dir + "/" + name);
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

TEST(ChatTemplateGolden, RendersLikeJinja2) {
  const std::string golden_dir = testing::SourceDir() + "/tests/golden/chat_templates";
  const std::string templates_dir = testing::SharedDir() + "/chat-templates";
  STET_REQUIRE_FILE(templates_dir);
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(golden_dir)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 60u) << "golden files missing in " << golden_dir;
  int passed = 0, cases = 0;
  std::string failures;
  for (const auto& f : files) {
    std::string problems = CheckTemplate(f, templates_dir, &cases);
    if (problems.empty()) {
      ++passed;
    } else {
      failures += f.stem().string() + ":\n" + problems;
    }
  }
  std::cout << passed << " of " << files.size() << " templates match byte for byte (" << cases
            << " cases)\n";
  if (!failures.empty()) std::cout << "templates that do not match:\n" << failures;
  EXPECT_GE(passed, 60) << failures;
}

}  // namespace
}  // namespace stet
