// Ranges as digit grammars. Integers: the classic split of [a, b] into runs of
// equal digit count, each written digit by digit. Decimals (no exponent): the
// integer part compared as an integer, the fraction compared digit by digit
// (0.d1d2... >= 0.g1g2... is a lexicographic comparison with zero padding).
// Exclusive bounds on numbers become inclusive ones at the next double
// (nextafter), so a value written beyond the bound never parses back onto it;
// bounds are then rounded inward to kMaxFracDigits fraction digits.
#include "server/structured/json_schema_numbers.h"

#include <cmath>
#include <vector>

namespace stet::server {
namespace {

constexpr int64_t kMaxInt = 9'999'999'999'999'999;  // kMaxIntDigits nines

std::string Alts(const std::vector<std::string>& parts) {
  if (parts.size() == 1) return parts[0];
  std::string out = "(";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? " | " : "") + parts[i];
  return out + ")";
}

std::string Digit(int d) { return std::string("\"") + static_cast<char>('0' + d) + "\""; }
std::string DigitClass(int lo, int hi) {
  if (lo == hi) return Digit(lo);
  return std::string("[") + static_cast<char>('0' + lo) + "-" + static_cast<char>('0' + hi) + "]";
}
std::string AnyDigits(int lo, int hi) {
  if (hi == 0) return "";
  if (lo == hi) return lo == 1 ? "[0-9]" : "[0-9]{" + std::to_string(lo) + "}";
  return "[0-9]{" + std::to_string(lo) + "," + std::to_string(hi) + "}";
}
std::string Cat(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + " " + b;
}

// Digit strings of x's length between x and y (equal lengths, x <= y).
std::string SameLength(const std::string& x, const std::string& y) {
  if (x.empty()) return "";
  if (x == y) return "\"" + x + "\"";
  const int x0 = x[0] - '0', y0 = y[0] - '0';
  const std::string xr = x.substr(1), yr = y.substr(1);
  if (x0 == y0) return Cat(Digit(x0), SameLength(xr, yr));
  const size_t m = xr.size();
  const bool x_low = xr.find_first_not_of('0') == std::string::npos;
  const bool y_high = yr.find_first_not_of('9') == std::string::npos;
  std::vector<std::string> alts;
  if (!x_low) alts.push_back(Cat(Digit(x0), SameLength(xr, std::string(m, '9'))));
  const int first = x_low ? x0 : x0 + 1, last = y_high ? y0 : y0 - 1;
  if (first <= last) alts.push_back(Cat(DigitClass(first, last), AnyDigits(m, m)));
  if (!y_high) alts.push_back(Cat(Digit(y0), SameLength(std::string(m, '0'), yr)));
  return Alts(alts);
}

int64_t Pow10(int n) {
  int64_t p = 1;
  while (n-- > 0) p *= 10;
  return p;
}

// Unsigned integers in [a, b] without leading zeros (0 <= a <= b <= kMaxInt).
std::string UintRange(int64_t a, int64_t b) {
  std::vector<std::string> alts;
  const int la = static_cast<int>(std::to_string(a).size());
  const int lb = static_cast<int>(std::to_string(b).size());
  for (int len = la; len <= lb; ++len) {
    const int64_t lo = std::max(a, len == 1 ? 0 : Pow10(len - 1));
    const int64_t hi = std::min(b, Pow10(len) - 1);
    alts.push_back(SameLength(std::to_string(lo), std::to_string(hi)));
  }
  return Alts(alts);
}

// A language of digit strings: its non-empty part (an expression, "" when
// none) and whether it holds the empty string.
struct Lang {
  std::string nonempty;
  bool eps = false;
  bool none() const { return nonempty.empty() && !eps; }
};

// `d` followed by `rest` (a non-empty language).
std::string Then(const std::string& d, const Lang& rest) {
  if (rest.nonempty.empty()) return d;
  return d + " (" + rest.nonempty + ")" + (rest.eps ? "?" : "");
}

// Digit strings of length <= k whose value 0.s lies in [0.g, 0.h] (h absent:
// below 1). g and h have no trailing zeros; g <= h.
Lang Fraction(const std::string& g, const std::optional<std::string>& h, int k) {
  const bool g_zero = g.empty();
  Lang out;
  out.eps = g_zero;
  if (k == 0) return out;
  if (g_zero && !h) return {AnyDigits(1, k), true};
  if (g_zero && h->empty()) return {k == 1 ? "\"0\"" : "\"0\"{1," + std::to_string(k) + "}", true};
  const int g0 = g_zero ? 0 : g[0] - '0';
  const int h0 = h ? (h->empty() ? 0 : (*h)[0] - '0') : 9;
  const std::string gr = g_zero ? "" : g.substr(1);
  const std::optional<std::string> hr =
      h ? std::optional<std::string>(h->empty() ? "" : h->substr(1)) : std::nullopt;
  std::vector<std::string> alts;
  const std::string tail = AnyDigits(0, k - 1);
  if (g0 == h0 && h) {
    const Lang rest = Fraction(gr, hr, k - 1);
    if (!rest.none()) alts.push_back(Then(Digit(g0), rest));
  } else {
    if (!g_zero) {
      const Lang rest = Fraction(gr, std::nullopt, k - 1);
      if (!rest.none()) alts.push_back(Then(Digit(g0), rest));
    }
    const int first = g_zero ? g0 : g0 + 1, last = h ? h0 - 1 : 9;
    if (first <= last) alts.push_back(Cat(DigitClass(first, last), tail));
    if (h) {
      const Lang rest = Fraction("", hr, k - 1);
      if (!rest.none()) alts.push_back(Then(Digit(h0), rest));
    }
  }
  if (!alts.empty()) out.nonempty = Alts(alts);
  return out;
}

// `[".", digits]` for a fraction language: "" allowed when it holds the empty string.
std::string FractionPart(const Lang& f) {
  if (f.nonempty.empty()) return "";
  return "(\".\" " + f.nonempty + ")" + (f.eps ? "?" : "");
}

// A non-negative decimal: integer digits (no leading zeros) and fraction digits
// (no trailing zeros).
struct Decimal {
  int64_t i = 0;
  std::string f;
};

// |v| as a decimal with at most kMaxFracDigits fraction digits: v's shortest
// round-trip text, rounded up (`up`) or down where it has more. Bounds are
// rounded toward the inside of the range, so the grammar stays within it.
Result<Decimal> ToDecimal(double v, bool up) {
  std::string text = Json(std::fabs(v)).dump();
  std::string digits;
  int point = -1, exp = 0;
  for (size_t p = 0; p < text.size(); ++p) {
    const char c = text[p];
    if (c == '.') {
      point = static_cast<int>(digits.size());
    } else if (c == 'e' || c == 'E') {
      exp = std::stoi(text.substr(p + 1));
      break;
    } else {
      digits += c;
    }
  }
  if (point < 0) point = static_cast<int>(digits.size());
  point += exp;
  while (point <= 0) {
    digits.insert(digits.begin(), '0');
    ++point;
  }
  while (static_cast<int>(digits.size()) < point) digits += '0';
  std::string ip = digits.substr(0, point), fp = digits.substr(point);
  if (fp.size() > static_cast<size_t>(kMaxFracDigits)) {
    const bool cut = fp.find_first_not_of('0', kMaxFracDigits) != std::string::npos;
    fp.resize(kMaxFracDigits);
    if (up && cut) {  // add one unit in the last place, carrying into ip
      std::string all = "0" + ip + fp;
      size_t i = all.size();
      while (i-- > 0 && all[i] == '9') all[i] = '0';
      ++all[i];
      ip = all.substr(0, all.size() - fp.size());
      fp = all.substr(all.size() - fp.size());
    }
  }
  while (!fp.empty() && fp.back() == '0') fp.pop_back();
  ip.erase(0, std::min(ip.find_first_not_of('0'), ip.size()));
  if (ip.size() > static_cast<size_t>(kMaxIntDigits)) {
    return InvalidArgument("a numeric bound beyond " + std::to_string(kMaxIntDigits) +
                           " integer digits cannot be enforced");
  }
  return Decimal{ip.empty() ? 0 : std::stoll(ip), fp};
}

// Non-negative decimals in [a, b] (b absent: up to kMaxIntDigits integer digits).
std::string DecimalRange(const Decimal& a, const std::optional<Decimal>& b) {
  const int k = kMaxFracDigits;
  if (b && (a.i > b->i || (a.i == b->i && a.f > b->f))) return "";  // empty after rounding
  const int64_t bi = b ? b->i : kMaxInt;
  const std::optional<std::string> bf = b ? std::optional<std::string>(b->f) : std::nullopt;
  const auto lit = [](int64_t v) { return "\"" + std::to_string(v) + "\""; };
  if (a.i == bi) return Cat(lit(a.i), FractionPart(Fraction(a.f, bf, k)));
  std::vector<std::string> alts;
  alts.push_back(Cat(lit(a.i), FractionPart(Fraction(a.f, std::nullopt, k))));
  if (a.i + 1 <= bi - 1) {
    alts.push_back(Cat(UintRange(a.i + 1, bi - 1), FractionPart(Fraction("", std::nullopt, k))));
  }
  alts.push_back(Cat(lit(bi), FractionPart(Fraction("", bf, k))));
  return Alts(alts);
}

// Magnitudes from |near| (the bound nearer zero; none: 0) up to |far| (none:
// unbounded), each bound rounded toward the inside; "" when none remains.
Result<std::string> MagnitudeRange(std::optional<double> near, std::optional<double> far) {
  Decimal a;
  if (near) {
    STET_ASSIGN_OR_RETURN(a, ToDecimal(*near, true));
  }
  std::optional<Decimal> b;
  if (far) {
    STET_ASSIGN_OR_RETURN(Decimal d, ToDecimal(*far, false));
    b = d;
  }
  return DecimalRange(a, b);
}

Result<int64_t> IntBound(const Json& v, bool lower, bool exclusive) {
  if (v.is_number_integer() || v.is_number_unsigned()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kMaxInt)) {
      return lower ? kMaxInt + 1 : kMaxInt;
    }
    int64_t x = v.get<int64_t>();
    if (exclusive) x += lower ? 1 : -1;
    return std::max(-kMaxInt - 1, std::min(kMaxInt + 1, x));
  }
  const double d = v.get<double>();
  double x = lower ? (exclusive ? std::floor(d) + 1 : std::ceil(d))
                   : (exclusive ? std::ceil(d) - 1 : std::floor(d));
  x = std::max(-1e16, std::min(1e16, x));
  return static_cast<int64_t>(x);
}

Status ReadOne(const Json& s, const char* key, std::optional<Json>* out) {
  auto it = s.find(key);
  if (it == s.end() || it->is_boolean()) return Status::Ok();
  if (!it->is_number()) return InvalidArgument(std::string("'") + key + "' must be a number");
  *out = *it;
  return Status::Ok();
}

// The stricter of two lower (or upper) bounds; `b_exclusive` says how b binds.
void Tighten(std::optional<Json>* bound, bool* exclusive, const std::optional<Json>& b,
             bool b_exclusive, bool lower) {
  if (!b) return;
  if (!*bound) {
    *bound = b;
    *exclusive = b_exclusive;
    return;
  }
  const double x = (*bound)->get<double>(), y = b->get<double>();
  if ((lower && y > x) || (!lower && y < x) || (y == x && b_exclusive)) {
    *bound = b;
    *exclusive = b_exclusive;
  }
}

}  // namespace

Result<NumberBounds> ReadNumberBounds(const Json& s) {
  NumberBounds out;
  std::optional<Json> min, max, xmin, xmax;
  STET_RETURN_IF_ERROR(ReadOne(s, "minimum", &min));
  STET_RETURN_IF_ERROR(ReadOne(s, "maximum", &max));
  STET_RETURN_IF_ERROR(ReadOne(s, "exclusiveMinimum", &xmin));
  STET_RETURN_IF_ERROR(ReadOne(s, "exclusiveMaximum", &xmax));
  // Draft 4: "exclusiveMinimum": true makes "minimum" exclusive.
  const bool min_x =
      s.value("exclusiveMinimum", Json()).is_boolean() && s["exclusiveMinimum"].get<bool>();
  const bool max_x =
      s.value("exclusiveMaximum", Json()).is_boolean() && s["exclusiveMaximum"].get<bool>();
  Tighten(&out.lo, &out.lo_exclusive, min, min_x, true);
  Tighten(&out.lo, &out.lo_exclusive, xmin, true, true);
  Tighten(&out.hi, &out.hi_exclusive, max, max_x, false);
  Tighten(&out.hi, &out.hi_exclusive, xmax, true, false);
  return out;
}

Result<std::string> IntegerRangeGbnf(const NumberBounds& b) {
  int64_t lo = -kMaxInt, hi = kMaxInt;
  if (b.lo) {
    STET_ASSIGN_OR_RETURN(lo, IntBound(*b.lo, true, b.lo_exclusive));
  }
  if (b.hi) {
    STET_ASSIGN_OR_RETURN(hi, IntBound(*b.hi, false, b.hi_exclusive));
  }
  if (lo > kMaxInt || hi < -kMaxInt) {
    return InvalidArgument("an integer bound beyond " + std::to_string(kMaxIntDigits) +
                           " digits cannot be enforced");
  }
  lo = std::max(lo, -kMaxInt);
  hi = std::min(hi, kMaxInt);
  if (lo > hi) return InvalidArgument("no integer lies within the schema's bounds");
  std::vector<std::string> alts;
  if (lo < 0) alts.push_back("\"-\" " + UintRange(std::max<int64_t>(1, -hi), -lo));
  if (hi >= 0) alts.push_back(UintRange(std::max<int64_t>(0, lo), hi));
  return Alts(alts);
}

Result<std::string> NumberRangeGbnf(const NumberBounds& b) {
  std::optional<double> lo, hi;
  if (b.lo) {
    const double v = b.lo->get<double>();
    lo = b.lo_exclusive ? std::nextafter(v, INFINITY) : v;
  }
  if (b.hi) {
    const double v = b.hi->get<double>();
    hi = b.hi_exclusive ? std::nextafter(v, -INFINITY) : v;
  }
  if ((lo && *lo >= 1e16) || (hi && *hi <= -1e16)) {
    return InvalidArgument("a number bound beyond " + std::to_string(kMaxIntDigits) +
                           " integer digits cannot be enforced");
  }
  if (lo && *lo <= -1e16) lo.reset();  // beyond every number the grammar writes
  if (hi && *hi >= 1e16) hi.reset();
  if (lo && hi && *lo > *hi) return InvalidArgument("no number lies within the schema's bounds");
  std::vector<std::string> alts;
  // Negative values: "-" and a magnitude in [max(-hi, 0), -lo].
  if (!lo || *lo < 0) {
    STET_ASSIGN_OR_RETURN(std::string r, MagnitudeRange(hi && *hi < 0 ? hi : std::nullopt, lo));
    if (!r.empty()) alts.push_back("\"-\" " + r);
  }
  if (!hi || *hi >= 0) {
    STET_ASSIGN_OR_RETURN(std::string r, MagnitudeRange(lo && *lo > 0 ? lo : std::nullopt, hi));
    if (!r.empty()) alts.push_back(r);
  }
  if (alts.empty()) {
    return InvalidArgument("no number with at most " + std::to_string(kMaxFracDigits) +
                           " fraction digits lies within the schema's bounds");
  }
  return Alts(alts);
}

}  // namespace stet::server
