// The route table (src/server/routes.h) is the one place an endpoint is named:
// these tests fail when a row is malformed, when lookups disagree with it, or
// when docs/api.md's endpoint table does not list exactly its rows.
#include "server/routes.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>

#include "support/test_support.h"

namespace stet::server {
namespace {

TEST(RouteTable, RowsAreWellFormedAndUnique) {
  std::set<std::pair<std::string, std::string>> seen;
  for (const Route& r : RouteTable()) {
    const std::string method = r.method;
    EXPECT_TRUE(method == "GET" || method == "POST") << r.path;
    EXPECT_EQ(r.path[0], '/') << r.path;
    EXPECT_NE(r.handle, nullptr) << r.path;
    EXPECT_NE(std::string(r.doc), "") << r.path;
    EXPECT_TRUE(seen.insert({method, r.path}).second) << "twice: " << method << " " << r.path;
    // A generation is POSTed and its ids say which API answered (chatcmpl-, cmpl-, resp_).
    if (r.generation) {
      EXPECT_EQ(method, "POST") << r.path;
      EXPECT_NE(std::string(r.id_prefix), "req-") << r.path;
    }
  }
}

TEST(RouteTable, FindRouteMatchesExactPathsAndIds) {
  for (const Route& r : RouteTable()) {
    std::string path = r.path;
    const size_t id = path.find("{id}");
    if (id != std::string::npos) path.replace(id, 4, "some-model.gguf");
    EXPECT_EQ(FindRoute(path), &r) << path;
    EXPECT_EQ(EndpointLabel(path), r.path);
  }
  EXPECT_EQ(FindRoute("/v1/models/"), nullptr);  // an id is at least one character
  EXPECT_EQ(FindRoute("/v1/chat/completions/"), nullptr);
  EXPECT_EQ(FindRoute("/v1/embeddings"), nullptr);
  // Every /v1 route answers without the prefix too (llama.cpp's habit); the others do not.
  EXPECT_EQ(FindRoute("/chat/completions"), FindRoute("/v1/chat/completions"));
  EXPECT_EQ(FindRoute("/models/x"), FindRoute("/v1/models/{id}"));
  EXPECT_EQ(FindRoute("/v1/tokenize"), nullptr);
  EXPECT_EQ(FindRoute("/embeddings"), nullptr);
  EXPECT_EQ(FindRoute("chat/completions"), nullptr);
  EXPECT_EQ(EndpointLabel("/v2/anything"), "other");
  EXPECT_EQ(EndpointLabel(""), "other");
}

// docs/api.md's "## Endpoints" table is the route table, row for row.
TEST(RouteTable, DocsListEveryRouteInOrder) {
  const std::string api = testing::ReadFileOrDie(testing::SourceDir() + "/docs/api.md");
  const std::string head = "| endpoint | |\n|---|---|\n";
  const size_t start = api.find(head);
  ASSERT_NE(start, std::string::npos) << "docs/api.md has no endpoint table";
  const size_t end = api.find("\n\n", start);
  const std::string documented = api.substr(start + head.size(), end - start - head.size());
  std::string expected;
  for (const Route& r : RouteTable()) {
    if (!expected.empty()) expected += "\n";
    expected += std::string("| `") + r.method + " " + r.path + "` | " + r.doc + " |";
  }
  EXPECT_EQ(documented, expected) << "update docs/api.md's endpoint table from RouteTable()";
}

}  // namespace
}  // namespace stet::server
