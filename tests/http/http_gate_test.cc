// The header checks made before a body is read (http/http_gate.h): Host
// names and the policy built from --host and --allowed-hosts, body framing
// (lengths, chunked, encodings, a body on GET), and the JSON Content-Type.
#include "http/http_gate.h"

#include <gtest/gtest.h>

namespace stet::server {
namespace {

httplib::Request Req(std::string method, std::vector<std::pair<std::string, std::string>> headers) {
  httplib::Request r;
  r.method = std::move(method);
  r.path = "/v1/completions";
  for (auto& [k, v] : headers) r.headers.emplace(k, v);
  return r;
}

int StatusOf(const std::optional<ApiError>& e) { return e ? e->status : 0; }

TEST(HttpGate, HostNames) {
  EXPECT_EQ(HostName("localhost"), "localhost");
  EXPECT_EQ(HostName("LocalHost:8080"), "localhost");
  EXPECT_EQ(HostName("localhost.:80"), "localhost");
  EXPECT_EQ(HostName("127.0.0.1:1"), "127.0.0.1");
  EXPECT_EQ(HostName("[::1]"), "[::1]");
  EXPECT_EQ(HostName("[::1]:8080"), "[::1]");
  EXPECT_EQ(HostName(" example.com "), "example.com");
  for (const char* bad : {"", ":80", "a:b", "a:", "[::1", "[::1]x", "[::1]:", "a b", "a/b", "a@b",
                          "[zz]", "a:123456"}) {
    EXPECT_EQ(HostName(bad), "") << bad;
  }
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.1.2.3"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_TRUE(IsLoopbackHost("[::1]"));
  EXPECT_TRUE(IsLoopbackHost("LOCALHOST"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackHost("::"));
  EXPECT_FALSE(IsLoopbackHost("192.168.1.5"));
  EXPECT_FALSE(IsLoopbackHost("localhost.example.com"));
}

TEST(HttpGate, LoopbackServerAcceptsLoopbackNamesOnly) {
  auto p = MakeHostPolicy("127.0.0.1", {});
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->any);
  for (const char* ok : {"localhost", "localhost:8080", "127.0.0.1:9", "[::1]:8080", "LOCALHOST"}) {
    EXPECT_EQ(StatusOf(CheckHost(Req("GET", {{"Host", ok}}), *p)), 0) << ok;
  }
  for (const char* bad : {"evil.example", "evil.example:8080", "127.0.0.1.nip.io",
                          "localhost.evil.example", "", "192.168.1.5", "a b"}) {
    auto e = CheckHost(Req("GET", {{"Host", bad}}), *p);
    ASSERT_TRUE(e) << bad;
    EXPECT_EQ(e->status, 403);
    EXPECT_EQ(e->code, "host_not_allowed");
    EXPECT_NE(e->message.find("--allowed-hosts"), std::string::npos);
  }
  EXPECT_EQ(StatusOf(CheckHost(Req("GET", {}), *p)), 0);  // no Host: not a browser
  EXPECT_EQ(StatusOf(CheckHost(Req("GET", {{"Host", "localhost"}, {"Host", "evil.example"}}), *p)),
            400);
  // A loopback address other than 127.0.0.1 is accepted when it is the bound one.
  auto q = MakeHostPolicy("127.0.0.2", {});
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(StatusOf(CheckHost(Req("GET", {{"Host", "127.0.0.2:80"}}), *q)), 0);
}

TEST(HttpGate, AllowedHostsAndExposedServers) {
  auto p = MakeHostPolicy("127.0.0.1", {"llm.example.com", "10.0.0.7:8080", "fe80::1"});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(StatusOf(CheckHost(Req("GET", {{"Host", "llm.example.com"}}), *p)), 0);
  EXPECT_EQ(StatusOf(CheckHost(Req("GET", {{"Host", "LLM.example.com:443"}}), *p)), 0);
  EXPECT_EQ(StatusOf(CheckHost(Req("GET", {{"Host", "10.0.0.7"}}), *p)), 0);
  EXPECT_EQ(StatusOf(CheckHost(Req("GET", {{"Host", "[fe80::1]:80"}}), *p)), 0);
  EXPECT_EQ(StatusOf(CheckHost(Req("GET", {{"Host", "localhost"}}), *p)), 0);
  EXPECT_EQ(StatusOf(CheckHost(Req("GET", {{"Host", "other.example.com"}}), *p)), 403);

  auto star = MakeHostPolicy("127.0.0.1", {"*"});
  ASSERT_TRUE(star.ok());
  EXPECT_TRUE(star->any);
  EXPECT_EQ(StatusOf(CheckHost(Req("GET", {{"Host", "anything.example"}}), *star)), 0);

  // Bound to every interface without --allowed-hosts: any Host (documented).
  for (const char* bind : {"0.0.0.0", "::", "192.168.1.5"}) {
    auto open = MakeHostPolicy(bind, {});
    ASSERT_TRUE(open.ok());
    EXPECT_TRUE(open->any) << bind;
  }
  // ... and with --allowed-hosts, the list holds there too.
  auto listed = MakeHostPolicy("0.0.0.0", {"llm.example.com"});
  ASSERT_TRUE(listed.ok());
  EXPECT_FALSE(listed->any);
  EXPECT_EQ(StatusOf(CheckHost(Req("GET", {{"Host", "evil.example"}}), *listed)), 403);

  for (const char* bad : {"", "a b", "http://x", "x/y"}) {
    EXPECT_FALSE(MakeHostPolicy("127.0.0.1", {bad}).ok()) << bad;
  }
}

TEST(HttpGate, Framing) {
  const size_t max = 1024;
  EXPECT_EQ(StatusOf(CheckFraming(Req("POST", {{"Content-Length", "10"}}), max)), 0);
  EXPECT_EQ(StatusOf(CheckFraming(Req("POST", {{"Content-Length", "1024"}}), max)), 0);
  EXPECT_EQ(StatusOf(CheckFraming(Req("POST", {{"Transfer-Encoding", "chunked"}}), max)), 0);
  EXPECT_EQ(StatusOf(CheckFraming(Req("POST", {{"Transfer-Encoding", "Chunked"}}), max)), 0);
  EXPECT_EQ(StatusOf(CheckFraming(Req("POST", {{"Content-Length", "1025"}}), max)), 413);
  EXPECT_EQ(StatusOf(CheckFraming(Req("POST", {{"Content-Length", "999999999999"}}), max)), 413);
  EXPECT_EQ(StatusOf(CheckFraming(Req("POST", {}), max)), 411);
  for (const char* bad : {"-1", "abc", "10abc", "", "1 0", "99999999999999999999999"}) {
    EXPECT_EQ(StatusOf(CheckFraming(Req("POST", {{"Content-Length", bad}}), max)), 400) << bad;
  }
  EXPECT_EQ(
      StatusOf(CheckFraming(Req("POST", {{"Content-Length", "5"}, {"Content-Length", "5"}}), max)),
      400);
  EXPECT_EQ(StatusOf(CheckFraming(
                Req("POST", {{"Content-Length", "5"}, {"Transfer-Encoding", "chunked"}}), max)),
            400);
  EXPECT_EQ(StatusOf(CheckFraming(Req("POST", {{"Transfer-Encoding", "gzip, chunked"}}), max)),
            400);
  EXPECT_EQ(StatusOf(CheckFraming(Req("POST", {{"Transfer-Encoding", "identity"}}), max)), 400);
  for (const char* enc : {"gzip", "deflate", "br", "x-gzip", "gzip, identity"}) {
    auto e = CheckFraming(Req("POST", {{"Content-Length", "10"}, {"Content-Encoding", enc}}), max);
    ASSERT_TRUE(e) << enc;
    EXPECT_EQ(e->status, 415);
    EXPECT_EQ(e->code, "unsupported_content_encoding");
  }
  EXPECT_EQ(StatusOf(CheckFraming(
                Req("POST", {{"Content-Length", "10"}, {"Content-Encoding", "identity"}}), max)),
            0);
  EXPECT_EQ(StatusOf(CheckFraming(Req("GET", {}), max)), 0);
  EXPECT_EQ(StatusOf(CheckFraming(Req("GET", {{"Content-Length", "0"}}), max)), 0);
  EXPECT_EQ(StatusOf(CheckFraming(Req("GET", {{"Content-Length", "5"}}), max)), 400);
  EXPECT_EQ(StatusOf(CheckFraming(Req("HEAD", {{"Transfer-Encoding", "chunked"}}), max)), 400);
}

TEST(HttpGate, JsonContentType) {
  for (const char* ok : {"application/json", "Application/JSON", "application/json; charset=utf-8",
                         "application/json;charset=UTF-8", "application/json; charset=\"utf-8\"",
                         "application/json; charset=utf8"}) {
    EXPECT_EQ(StatusOf(CheckJsonContentType(Req("POST", {{"Content-Type", ok}}))), 0) << ok;
  }
  // The three CORS "simple" types (and none at all) are what a web page can send without a
  // preflight.
  for (const char* bad :
       {"text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x", "", "application/json; charset=latin-1",
        "application/jsonx", "text/json"}) {
    auto e = CheckJsonContentType(Req("POST", {{"Content-Type", bad}}));
    ASSERT_TRUE(e) << bad;
    EXPECT_EQ(e->status, 415);
    EXPECT_EQ(e->code, "unsupported_media_type");
  }
  EXPECT_EQ(StatusOf(CheckJsonContentType(Req("POST", {}))), 415);
  EXPECT_EQ(StatusOf(CheckJsonContentType(Req(
                "POST", {{"Content-Type", "application/json"}, {"Content-Type", "text/plain"}}))),
            415);
}

// RFC 9112 5.1: no whitespace between a field name and its colon (a proxy in
// front may read "Transfer-Encoding :" as another header: request smuggling);
// 5.2: obs-fold is refused too.
TEST(HttpGate, HeaderLinesWellFormed) {
  const auto block = [](const std::string& headers) {
    return "POST /v1/completions HTTP/1.1\r\n" + headers + "\r\n";
  };
  EXPECT_TRUE(HeaderLinesWellFormed(block("Host: x\r\nContent-Length: 2\r\n")));
  EXPECT_TRUE(HeaderLinesWellFormed(block("X-Empty:\r\nA:b\r\n")));
  for (const char* bad :
       {"Transfer-Encoding : chunked\r\n", "Transfer-Encoding\t: chunked\r\n",
        "Host: x\r\n folded: y\r\n", "Host: x\r\n\tfolded\r\n", "no colon here\r\n",
        ": empty name\r\n", "Bad Name: x\r\n", "Bad\"Name: x\r\n"}) {
    EXPECT_FALSE(HeaderLinesWellFormed(block(bad))) << bad;
  }
  // Only the header block counts: a body after the blank line may hold anything.
  EXPECT_TRUE(HeaderLinesWellFormed(block("Content-Length: 9\r\n") + "a b : c\r\n"));
}

TEST(HttpGate, AuthorizationSchemeAnyCaseAndOneHeaderOnly) {
  for (const char* h : {"Bearer k1", "bearer k1", "BEARER k1", "BeArEr   k1 "}) {
    EXPECT_EQ(BearerKey(Req("POST", {{"Authorization", h}})), "k1") << h;
  }
  for (const char* h : {"Basic k1", "Bearerk1", "Bearer", "Bearer ", "k1"}) {
    EXPECT_EQ(BearerKey(Req("POST", {{"Authorization", h}})), "") << h;
  }
  EXPECT_EQ(StatusOf(CheckAuthorizationHeader(Req("POST", {{"Authorization", "Bearer a"}}))), 0);
  EXPECT_EQ(StatusOf(CheckAuthorizationHeader(
                Req("POST", {{"Authorization", "Bearer a"}, {"authorization", "Bearer b"}}))),
            400);
}

TEST(HttpGate, ApiKeysMatchByDigest) {
  const ApiKeyDigests keys({"sk-first", "sk-second"});
  EXPECT_EQ(keys.Find("sk-first"), 0);
  EXPECT_EQ(keys.Find("sk-second"), 1);
  for (const char* wrong : {"", "sk-firs", "sk-first ", "sk-second\n", "SK-FIRST"}) {
    EXPECT_EQ(keys.Find(wrong), -1) << wrong;
  }
  EXPECT_TRUE(ApiKeyDigests().empty());
}

}  // namespace
}  // namespace stet::server
