// Chart geometry is computed here in plain pixels; the SVGs carry a viewBox so
// browsers scale them. Numbers are printed with a fixed format so that two runs
// over the same data give byte-identical reports.
#include "forensics/analysis/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/markup.h"

namespace stet::forensics {

std::string XmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (const char* ref = MarkupReference(c, "&quot;")) {
      out += ref;
    } else if (c < 0x20 && c != '\n' && c != '\t' && c != '\r') {
      // XML 1.0 forbids most control characters even as references.
      out += "\xEF\xBF\xBD";  // U+FFFD
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

std::string ShowToken(const std::string& s) {
  std::string t;
  for (char c : s) {
    if (c == '\n')
      t += "\xE2\x8F\x8E";  // ⏎
    else if (c == '\t')
      t += "\xE2\x87\xA5";  // ⇥
    else if (c == ' ')
      t += "\xE2\x90\xA3";  // ␣
    else
      t.push_back(c);
  }
  return XmlEscape(t);
}

std::string FormatDouble(double v, int significant) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", significant, v);
  return buf;
}

namespace {

std::string F(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string Text(double x, double y, const std::string& s, const char* anchor = "middle",
                 const char* extra = "") {
  return "<text x=\"" + F(x) + "\" y=\"" + F(y) + "\" text-anchor=\"" + anchor + "\"" + extra +
         ">" + XmlEscape(s) + "</text>";
}

std::string Line(double x1, double y1, double x2, double y2, const char* cls) {
  return "<line class=\"" + std::string(cls) + "\" x1=\"" + F(x1) + "\" y1=\"" + F(y1) +
         "\" x2=\"" + F(x2) + "\" y2=\"" + F(y2) + "\"/>";
}

std::string Open(double w, double h, const std::string& title) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + F(w) + " " + F(h) +
         "\" width=\"" + F(w) + "\" height=\"" + F(h) + "\" role=\"img\" class=\"chart\">" +
         "<title>" + XmlEscape(title) + "</title>" +
         "<style>text{font:12px sans-serif;fill:#222}.axis{stroke:#444;stroke-width:1}"
         ".grid{stroke:#ddd;stroke-width:1}.series{stroke:#1f5fa8;stroke-width:2;fill:none}"
         ".dot{fill:#1f5fa8}.bar{fill:#1f5fa8}.warn{fill:#c8501e}.whisker{stroke:#111;stroke-width:"
         "1.5}"
         "</style>" +
         Text(w / 2, 18, title, "middle", " font-weight=\"bold\"");
}

// A "nice" upper bound for an axis: 1, 2 or 5 times a power of ten.
double NiceMax(double v) {
  if (v <= 0) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= v) return m * p;
  }
  return 10 * p;
}

}  // namespace

std::string SvgLinePlot(const std::string& title, const std::string& x_label,
                        const std::string& y_label, const std::vector<Point>& points, double ymax) {
  const double w = 520, h = 300, l = 60, r = 20, t = 34, b = 50;
  const double pw = w - l - r, ph = h - t - b;
  for (const Point& p : points) ymax = std::max(ymax, p.y);
  ymax = NiceMax(ymax);
  std::string s = Open(w, h, title);
  for (int i = 0; i <= 4; ++i) {
    const double y = t + ph - ph * i / 4.0;
    s += Line(l, y, l + pw, y, "grid");
    s += Text(l - 6, y + 4, FormatDouble(ymax * i / 4.0), "end");
  }
  s += Line(l, t + ph, l + pw, t + ph, "axis") + Line(l, t, l, t + ph, "axis");
  const size_t n = points.size();
  auto px = [&](size_t i) { return n <= 1 ? l + pw / 2 : l + pw * (0.05 + 0.9 * i / (n - 1.0)); };
  auto py = [&](double y) { return t + ph - ph * y / ymax; };
  if (n > 1) {
    std::string pts;
    for (size_t i = 0; i < n; ++i) pts += (i ? " " : "") + F(px(i)) + "," + F(py(points[i].y));
    s += "<polyline class=\"series\" points=\"" + pts + "\"/>";
  }
  for (size_t i = 0; i < n; ++i) {
    s += "<circle class=\"dot\" cx=\"" + F(px(i)) + "\" cy=\"" + F(py(points[i].y)) +
         "\" r=\"4\">" + "<title>" + XmlEscape(points[i].label + ": " + FormatDouble(points[i].y)) +
         "</title></circle>";
    s += Text(px(i), t + ph + 16, points[i].label);
  }
  s += Text(l + pw / 2, h - 8, x_label);
  s += Text(14, t + ph / 2, y_label, "middle",
            (" transform=\"rotate(-90 14 " + F(t + ph / 2) + ")\"").c_str());
  return s + "</svg>";
}

std::string SvgHistogram(const std::string& title, const std::string& x_label,
                         const std::vector<int>& values, int bins) {
  const double w = 520, h = 300, l = 60, r = 20, t = 34, b = 50;
  const double pw = w - l - r, ph = h - t - b;
  std::string s = Open(w, h, title);
  if (values.empty()) {
    s += Text(w / 2, h / 2, "no divergence: nothing to plot");
    return s + "</svg>";
  }
  const int vmax = *std::max_element(values.begin(), values.end());
  bins = std::max(1, std::min(bins, vmax + 1));
  const double width = static_cast<double>(vmax + 1) / bins;  // positions per bin
  std::vector<int> counts(bins, 0);
  for (int v : values) counts[std::min(bins - 1, static_cast<int>(std::max(0, v) / width))]++;
  const double cmax = NiceMax(*std::max_element(counts.begin(), counts.end()));
  for (int i = 0; i <= 4; ++i) {
    const double y = t + ph - ph * i / 4.0;
    s += Line(l, y, l + pw, y, "grid");
    s += Text(l - 6, y + 4, FormatDouble(cmax * i / 4.0), "end");
  }
  const double bw = pw / bins;
  for (int i = 0; i < bins; ++i) {
    const double bh = ph * counts[i] / cmax;
    const int lo = static_cast<int>(std::ceil(i * width));
    const int hi = static_cast<int>(std::ceil((i + 1) * width)) - 1;
    const std::string range =
        lo >= hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
    s += "<rect class=\"bar\" x=\"" + F(l + i * bw + 1) + "\" y=\"" + F(t + ph - bh) +
         "\" width=\"" + F(std::max(1.0, bw - 2)) + "\" height=\"" + F(bh) + "\"><title>" +
         XmlEscape(range + ": " + std::to_string(counts[i])) + "</title></rect>";
    if (bins <= 12 || i % ((bins + 11) / 12) == 0)
      s += Text(l + i * bw + bw / 2, t + ph + 16, range);
  }
  s += Line(l, t + ph, l + pw, t + ph, "axis") + Line(l, t, l, t + ph, "axis");
  s += Text(l + pw / 2, h - 8, x_label);
  s += Text(14, t + ph / 2, "runs", "middle",
            (" transform=\"rotate(-90 14 " + F(t + ph / 2) + ")\"").c_str());
  return s + "</svg>";
}

std::string SvgBars(const std::string& title, const std::string& x_label,
                    const std::vector<Bar>& bars) {
  const double row = 22, l = 180, r = 30, t = 34, b = 44, w = 640;
  const double h = t + b + row * std::max<size_t>(1, bars.size());
  const double pw = w - l - r, ph = h - t - b;
  std::string s = Open(w, h, title);
  for (int i = 0; i <= 4; ++i) {
    const double x = l + pw * i / 4.0;
    s += Line(x, t, x, t + ph, "grid");
    s += Text(x, t + ph + 16, FormatDouble(i / 4.0));
  }
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& bar = bars[i];
    const double y = t + row * i;
    const double v = std::clamp(bar.value, 0.0, 1.0);
    std::string label =
        bar.label.size() > 28 ? bar.label.substr(0, 27) + "\xE2\x80\xA6" : bar.label;
    s += Text(l - 6, y + row * 0.7, label, "end");
    s += "<rect class=\"" + std::string(bar.highlight ? "warn" : "bar") + "\" x=\"" + F(l) +
         "\" y=\"" + F(y + 3) + "\" width=\"" + F(pw * v) + "\" height=\"" + F(row - 6) +
         "\"><title>" + XmlEscape(bar.label + ": " + FormatDouble(bar.value)) + "</title></rect>";
    if (bar.lo >= 0 && bar.hi >= 0) {
      const double x1 = l + pw * std::clamp(bar.lo, 0.0, 1.0),
                   x2 = l + pw * std::clamp(bar.hi, 0.0, 1.0);
      const double ym = y + row / 2;
      s += Line(x1, ym, x2, ym, "whisker") + Line(x1, ym - 6, x1, ym + 6, "whisker") +
           Line(x2, ym - 6, x2, ym + 6, "whisker");
    }
  }
  s += Line(l, t, l, t + ph, "axis") + Line(l, t + ph, l + pw, t + ph, "axis");
  s += Text(l + pw / 2, h - 8, x_label);
  return s + "</svg>";
}

std::string HtmlPage(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\"><head>"
         "<meta charset=\"utf-8\"/><title>" +
         XmlEscape(title) +
         "</title><style>"
         "body{font:14px/1.45 sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
         "table{border-collapse:collapse;margin:0.5em 0 1.5em}"
         "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}"
         "th{background:#f3f3f3}code,pre{font-family:monospace;background:#f6f6f6}"
         "pre{white-space:pre-wrap;padding:6px;margin:0}"
         ".verdict{font-size:1.15em;padding:0.6em 1em;border-left:6px solid "
         "#2a7a2a;background:#eef7ee}"
         ".verdict.bad{border-color:#c8501e;background:#fbefe9}"
         ".note{color:#8a4b00}.fork{background:#ffd9c7}svg.chart{margin:0.5em 1em 0.5em 0}"
         "</style></head><body>" +
         body + "</body></html>\n";
}

}  // namespace stet::forensics
