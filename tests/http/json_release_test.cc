// ReleaseJson empties a parsed body without allocating (issue 25): nlohmann's
// own destructor moves a container's children onto a heap stack as large as
// the container, so a big DOM destroyed under memory pressure threw bad_alloc
// inside a noexcept destructor and ended the process. Allocations are counted
// by a replaced global operator new, armed only around the code measured.
#include <gtest/gtest.h>

#include <cstdlib>
#include <new>
#include <nlohmann/json.hpp>
#include <string>

#include "http/json_fields.h"

namespace {
thread_local bool g_counting = false;
thread_local size_t g_allocations = 0;
}  // namespace

// The replacements below pair malloc with free; GCC cannot see they are one pair.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t n) {
  if (g_counting) ++g_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace stet::server {
namespace {

std::string NestedBody() {
  std::string b = R"({"model": "m", "tokens": [)";
  for (int i = 0; i < 10000; ++i) b += (i ? "," : "") + std::to_string(i);
  b += R"(], "messages": [)";
  for (int i = 0; i < 100; ++i)
    b += std::string(i ? "," : "") +
         R"({"role": "user", "content": [{"type": "text", "text": "x"}]})";
  b += "]}";
  return b;
}

size_t AllocationsOf(void (*fn)(Json&), Json& j) {
  g_allocations = 0;
  g_counting = true;
  fn(j);
  g_counting = false;
  return g_allocations;
}

TEST(ReleaseJson, EmptiesABodyWithoutAllocating) {
  auto body = ParseBody(NestedBody());
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(AllocationsOf([](Json& j) { ReleaseJson(j); }, *body), 0u);
  EXPECT_TRUE(body->empty());
}

TEST(ReleaseJson, NlohmannsDestructorAllocatesWhereItDoesNot) {
  // The reason ReleaseJson exists: if this ever allocates nothing, it may go.
  auto body = ParseBody(NestedBody());
  ASSERT_TRUE(body.ok());
  EXPECT_GT(AllocationsOf([](Json& j) { Json gone = std::move(j); }, *body), 0u);
}

TEST(ReleaseJson, ReleaseOnExitReleasesAParsedBody) {
  auto body = ParseBody(NestedBody());
  ASSERT_TRUE(body.ok());
  Json* j = &*body;
  { const ReleaseOnExit release(body); }
  EXPECT_TRUE(j->empty());
  auto bad = ParseBody("{");
  { const ReleaseOnExit release(bad); }  // an error: nothing to release
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace stet::server
