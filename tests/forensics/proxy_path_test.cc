// The proxy's upstream path: every spelling of a route normalizes to the one
// path that is relayed and recorded, and no target can name another host or
// climb above the configured base (RFC 3986 5.2.4 dot segments, %2e/%2f decoded
// first).
#include "forensics/proxy/proxy_path.h"

#include <gtest/gtest.h>

namespace stet::forensics {
namespace {

std::string Route(const std::string& target) {
  auto t = NormalizeProxyTarget(target);
  EXPECT_TRUE(t.ok()) << target << ": " << t.status().ToString();
  return t.ok() ? t->route : "<refused>";
}

TEST(ProxyPath, EverySpellingOfARouteIsTheSameRoute) {
  for (const char* spelled :
       {"/v1/chat/completions", "/v1/./chat/completions", "/v1//chat/completions",
        "/v1/chat/completions/", "/v1/x/../chat/completions", "/v1/%2e/chat/completions",
        "/v1/%2E%2E/v1/chat/completions", "/v1%2fchat%2Fcompletions", "//v1/chat/./completions/.",
        "/v1/chat/completions?x=1", "/%76%31/chat/completions"}) {
    EXPECT_EQ(Route(spelled), "/v1/chat/completions") << spelled;
  }
}

TEST(ProxyPath, NoTargetNamesAnotherHost) {
  // Appended to "http://upstream:8080", each of these would make the base a
  // userinfo, a port prefix or a relative reference.
  for (const char* hostile : {"@evil.example:9999/v1/models", "evil.example/x", ":9999/x",
                              "http://evil.example/v1/models", "*", ""}) {
    auto t = NormalizeProxyTarget(hostile);
    EXPECT_FALSE(t.ok()) << hostile << " -> " << (t.ok() ? t->upstream : "");
  }
  // A leading "//" is a path here, never an authority: the upstream gets one slash.
  auto t = NormalizeProxyTarget("//evil.example/v1/models");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->upstream, "/evil.example/v1/models");
  t = NormalizeProxyTarget("/x/%40evil.example");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->upstream.find("//"), std::string::npos);
}

TEST(ProxyPath, ClimbingAboveTheBaseIsRefused) {
  for (const char* climb : {"/../v1/models", "/v1/../../x", "/%2e%2e/x",
                            "/v1/%2E%2e%2f%2e%2e/admin", "/a/b/../../../c", "/.%2e/x"}) {
    auto t = NormalizeProxyTarget(climb);
    ASSERT_FALSE(t.ok()) << climb << " -> " << t->route;
    EXPECT_NE(t.status().message().find("climbs above"), std::string::npos)
        << t.status().ToString();
  }
  EXPECT_EQ(Route("/v1/../x"), "/x");  // within the base: fine
}

TEST(ProxyPath, MalformedEscapesAndControlBytesAreRefused) {
  for (const char* bad : {"/v1/%", "/v1/%2", "/v1/%zz", "/v1/%00x", "/v1/%0d%0aHost:%20evil",
                          "/v1\\..\\x", "/v1/%5c..%5cx", "/v1/x#frag", "/v1/x?a=b c"}) {
    EXPECT_FALSE(NormalizeProxyTarget(bad).ok()) << bad;
  }
  EXPECT_FALSE(NormalizeProxyTarget("/" + std::string(9000, 'a')).ok());
}

TEST(ProxyPath, DecodedBytesAreReencodedForTheUpstream) {
  auto t = NormalizeProxyTarget("/v1/models/a%20b%3Fc?limit=2&x=%2F");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->route, "/v1/models/a b?c");
  EXPECT_EQ(t->upstream, "/v1/models/a%20b%3Fc?limit=2&x=%2F");
  // Double encoding stays one level encoded: %252e is the text "%2e", not a dot.
  t = NormalizeProxyTarget("/v1/%252e%252e/x");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->route, "/v1/%2e%2e/x");
  EXPECT_EQ(t->upstream, "/v1/%252e%252e/x");
  EXPECT_EQ(Route("/"), "/");
}

}  // namespace
}  // namespace stet::forensics
