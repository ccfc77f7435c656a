// Self-contained reports: inline SVG charts (no JavaScript, no external files)
// and an HTML page around them. Invariant: every string from data is escaped,
// and the output is well-formed XML (polyglot XHTML), so any XML parser reads it.
#pragma once

#include <string>
#include <vector>

namespace stet::forensics {

std::string XmlEscape(const std::string& s);
// Makes a token visible: "\n" -> "⏎", leading/trailing spaces -> "␣", then escapes.
std::string ShowToken(const std::string& s);
std::string FormatDouble(double v, int significant = 4);

struct Point {
  std::string label;  // x label (categorical axis)
  double y = 0;
};

// Line + dots over categorical x, y from 0 to max(ymax, data).
std::string SvgLinePlot(const std::string& title, const std::string& x_label,
                        const std::string& y_label, const std::vector<Point>& points, double ymax);

// Histogram of non-negative integer positions in `bins` equal-width bins.
std::string SvgHistogram(const std::string& title, const std::string& x_label,
                         const std::vector<int>& values, int bins);

struct Bar {
  std::string label;
  double value = 0;         // in [0, 1]
  double lo = -1, hi = -1;  // optional whisker (both >= 0 to draw)
  bool highlight = false;   // drawn in the warning colour (e.g. flaky items)
};

// Horizontal bars on a [0, 1] axis, one row per bar, with optional whiskers.
std::string SvgBars(const std::string& title, const std::string& x_label,
                    const std::vector<Bar>& bars);

// A complete HTML document: <title>, inline CSS, the given body markup.
std::string HtmlPage(const std::string& title, const std::string& body);

}  // namespace stet::forensics
