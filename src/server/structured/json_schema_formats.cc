// The format grammars. Each is the strictest common ground of the validators
// people run: dates are real calendar dates (leap years included, year 0001
// on), times carry an offset (RFC 3339's full-time, which jsonschema checks),
// addresses and URLs use lowercase host names whose top-level label is not
// one email-validator refuses as special-use, IPv6 is written uncompressed.
// pydantic's own formats (ipvanyaddress, ip*interface, ip*network,
// name-email) are the values its types parse.
#include "server/structured/json_schema_formats.h"

#include <map>
#include <set>
#include <vector>

namespace stet::server {
namespace {

// Lowercase words of length [lo, hi] other than those in `except`: a trie
// walk, one alternative per letter that starts an excluded suffix. nullopt:
// no word at all; "": only the empty word.
std::optional<std::string> LettersExcept(const std::set<std::string>& except, int lo, int hi) {
  auto any = [](int a, int b) -> std::string {
    if (b == 0) return "";
    return " [a-z]{" + std::to_string(a) + "," + std::to_string(b) + "}";
  };
  const bool empty_ok = lo == 0 && !except.count("");
  std::vector<std::string> alts;
  if (hi > 0) {
    std::map<char, std::set<std::string>> by_first;
    for (const std::string& w : except) {
      if (!w.empty()) by_first[w[0]].insert(w.substr(1));
    }
    std::string others;
    for (char c = 'a'; c <= 'z'; ++c) {
      if (!by_first.count(c)) others += c;
    }
    const int next_lo = std::max(lo - 1, 0);
    if (!others.empty()) alts.push_back("[" + others + "]" + any(next_lo, hi - 1));
    for (const auto& [c, rest] : by_first) {
      const auto tail = LettersExcept(rest, next_lo, hi - 1);
      if (tail) alts.push_back(std::string("\"") + c + "\"" + (tail->empty() ? "" : " " + *tail));
    }
  }
  if (alts.empty()) return empty_ok ? std::optional<std::string>("") : std::nullopt;
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  out += ")";
  return empty_ok ? out + "?" : out;
}

const std::string& Date() {
  static const std::string year =
      R"(("000" [1-9] | "00" [1-9] [0-9] | "0" [1-9] [0-9]{2} | [1-9] [0-9]{3}))";
  static const std::string by4 = R"(("0" [48] | [2468] [048] | [13579] [26]))";
  static const std::string month_day =
      R"((("0" [13578] | "1" [02]) "-" ("0" [1-9] | [12] [0-9] | "3" [01]) | ("0" [469] | "11") "-" ("0" [1-9] | [12] [0-9] | "30") | "02-" ("0" [1-9] | "1" [0-9] | "2" [0-8])))";
  static const std::string s = "(" + year + " \"-\" " + month_day + " | ([0-9]{2} " + by4 + " | " +
                               by4 + " \"00\") \"-02-29\")";
  return s;
}

const std::string& Time() {
  static const std::string hh = R"(([01] [0-9] | "2" [0-3]))", mm = "[0-5] [0-9]";
  static const std::string s = "(" + hh + " \":\" " + mm + " \":\" " + mm +
                               R"( ("." [0-9]{1,6})? ("Z" | [+-] )" + hh + " \":\" " + mm + "))";
  return s;
}

const std::string& Duration() {
  static const std::string n = R"(("0" | [1-9] [0-9]{0,3}))";
  static const std::string t = "(" + n + " \"H\" (" + n + " \"M\")? (" + n + " \"S\")? | " + n +
                               " \"M\" (" + n + " \"S\")? | " + n + " \"S\")";
  static const std::string s =
      "(\"P\" (" + n + " \"D\" (\"T\" " + t + ")? | \"T\" " + t + " | " + n + " \"W\"))";
  return s;
}

std::string Uuid(char version) {
  const std::string h = "[0-9a-f]";
  if (version == 0) {
    return "(" + h + "{8} \"-\" " + h + "{4} \"-\" " + h + "{4} \"-\" " + h + "{4} \"-\" " + h +
           "{12})";
  }
  return "(" + h + "{8} \"-\" " + h + "{4} \"-" + version + "\" " + h + "{3} \"-\" [89ab] " + h +
         "{3} \"-\" " + h + "{12})";
}

// Lowercase host names: up to three labels of letters, digits and inner
// hyphens, then a top-level label of letters (at most 114 characters).
const std::string& Domain() {
  static const std::string label = R"(([a-z0-9]{1,16} ("-" [a-z0-9]{1,16})?))";
  static const std::string tld =
      *LettersExcept({"arpa", "invalid", "local", "localhost", "onion", "test"}, 2, 12);
  static const std::string s = "(" + label + " (\".\" " + label + "){0,2} \".\" " + tld + ")";
  return s;
}

const std::string& Email() {
  static const std::string word = "[A-Za-z0-9_+-]{1,15}";
  static const std::string s = "(" + word + " (\".\" " + word + "){0,3} \"@\" " + Domain() + ")";
  return s;
}

const std::string& Ipv4() {
  static const std::string octet =
      R"(("25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9] [0-9] | [0-9]))";
  static const std::string s = "(" + octet + " (\".\" " + octet + "){3})";
  return s;
}

const std::string& Uri() {
  static const std::string pchar = R"(([A-Za-z0-9._~!$&'()*+,;=:@-] | "%" [0-9A-F] [0-9A-F]))";
  static const std::string qchar = "(" + pchar + " | [/?])";
  static const std::string s =
      "(\"http\" \"s\"? \"://\" " + Domain() + " (\":\" [1-9] [0-9]{0,3})? (\"/\" " + pchar +
      "{0,32}){0,8} (\"?\" " + qchar + "{0,64})? (\"#\" " + qchar + "{0,64})?)";
  return s;
}

const std::string& JsonPointer() {
  static const std::string s = R"((("/" ([A-Za-z0-9_.-] | "~" [01]){0,16}){0,8}))";
  return s;
}

const std::string& Ipv6() {
  static const std::string s = R"(([0-9a-f]{1,4} (":" [0-9a-f]{1,4}){7}))";
  return s;
}

// pydantic's IP types (ipaddress's strict parsing): an interface is any
// address with a prefix length; a network's host bits must be zero, so its
// grammar writes the networks whose prefix ends on a group boundary (/8, /16,
// /24, /32; /64, /128) — a subset, but every one valid.
const std::map<std::string, std::string>& IpForms() {
  static const std::map<std::string, std::string> m = [] {
    const std::string octet =
        R"(("25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9] [0-9] | [0-9]))";
    const std::string v4if = "(" + Ipv4() + R"( "/" ("3" [0-2] | [12] [0-9] | [0-9])))";
    const std::string v6if =
        "(" + Ipv6() + R"( "/" ("12" [0-8] | "1" [01] [0-9] | [1-9] [0-9] | [0-9])))";
    const std::string v4net = "(" + octet + " \".0.0.0/8\" | " + octet + " \".\" " + octet +
                              " \".0.0/16\" | " + octet + " (\".\" " + octet + "){2} \".0/24\" | " +
                              Ipv4() + " \"/32\")";
    const std::string v6net =
        "(" + Ipv6() + R"( "/128" | [0-9a-f]{1,4} (":" [0-9a-f]{1,4}){3} ":0:0:0:0/64"))";
    std::map<std::string, std::string> f;
    f["ipvanyaddress"] = "(" + Ipv4() + " | " + Ipv6() + ")";
    f["ipv4interface"] = v4if;
    f["ipv6interface"] = v6if;
    f["ipvanyinterface"] = "(" + v4if + " | " + v6if + ")";
    f["ipv4network"] = v4net;
    f["ipv6network"] = v6net;
    f["ipvanynetwork"] = "(" + v4net + " | " + v6net + ")";
    return f;
  }();
  return m;
}

// pydantic's NameEmail: an address, or "Name <address>" (capitalized words).
const std::string& NameEmail() {
  static const std::string word = "[A-Z] [a-z]{1,15}";
  static const std::string s =
      "(" + Email() + " | " + word + " (\" \" " + word + "){0,2} \" <\" " + Email() + " \">\")";
  return s;
}

struct Format {
  std::string body;
  int64_t min_len, max_len;
};

const std::map<std::string, Format>& Formats() {
  static const std::map<std::string, Format> m = [] {
    std::map<std::string, Format> f;
    f["date"] = {Date(), 10, 10};
    f["time"] = {Time(), 9, 21};
    f["date-time"] = {"(" + Date() + " \"T\" " + Time() + ")", 20, 32};
    f["duration"] = {Duration(), 3, 22};
    f["uuid"] = {Uuid(0), 36, 36};
    for (char v = '1'; v <= '5'; ++v) f[std::string("uuid") + v] = {Uuid(v), 36, 36};
    f["email"] = f["idn-email"] = {Email(), 6, 178};
    f["hostname"] = f["idn-hostname"] = {Domain(), 4, 114};
    f["ipv4"] = {Ipv4(), 7, 15};
    f["ipv6"] = {Ipv6(), 15, 39};
    for (const auto& [name, body] : IpForms()) f[name] = {body, 7, 43};
    f["name-email"] = {NameEmail(), 6, 232};
    for (const char* u : {"uri", "uri-reference", "iri", "iri-reference"}) f[u] = {Uri(), 11, 1289};
    f["json-pointer"] = {JsonPointer(), 0, 264};
    f["relative-json-pointer"] = {R"(("0" | [1-9] [0-9]{0,3}) ("#" | )" + JsonPointer() + ")", 1,
                                  268};
    f["regex"] = {"[A-Za-z0-9 _]{0,32}", 0, 32};
    f["uri-template"] = {"[A-Za-z0-9/:._-]{0,64}", 0, 64};
    f["color"] = {"\"#\" [0-9a-f]{6}", 7, 7};
    return f;
  }();
  return m;
}

}  // namespace

std::optional<StringGrammar> FormatGbnf(const std::string& format) {
  auto it = Formats().find(format);
  if (it == Formats().end()) return std::nullopt;
  StringGrammar g;
  g.body = it->second.body;
  g.min_len = it->second.min_len;
  g.max_len = it->second.max_len;
  return g;
}

const char* const* ConstrainedFormats() {
  static const std::vector<const char*> names = [] {
    std::vector<const char*> v;
    for (const auto& [name, f] : Formats()) v.push_back(name.c_str());
    v.push_back(nullptr);
    return v;
  }();
  return names.data();
}

}  // namespace stet::server
