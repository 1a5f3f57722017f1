#include "tools/Svg.h"

#include <cmath>
#include <cstdio>

using namespace collc::tools::svg;

std::string collc::tools::svg::escape(llvm::StringRef text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&apos;"; break;
    default: out += c;
    }
  }
  return out;
}

std::string collc::tools::svg::num(double v) {
  char buf[32];
  // Round first so that -0.04 prints as 0, not -0.
  double r = std::round(v * 10) / 10;
  if (r == 0)
    r = 0;
  std::snprintf(buf, sizeof buf, "%.1f", r);
  std::string s = buf;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0)
    s.resize(s.size() - 2);
  return s;
}

static std::string withAttrs(llvm::StringRef attrs) {
  return attrs.empty() ? "" : " " + attrs.str();
}

Writer::Writer(double width, double height) {
  out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) +
        "\" height=\"" + num(height) + "\" viewBox=\"0 0 " + num(width) +
        " " + num(height) +
        "\" font-family=\"sans-serif\" font-size=\"12\">\n"
        "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
}

void Writer::arrowMarker(llvm::StringRef id, llvm::StringRef color) {
  defs += "<marker id=\"" + escape(id) +
          "\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"6\" "
          "markerHeight=\"6\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" "
          "fill=\"" +
          escape(color) + "\"/></marker>\n";
}

void Writer::line(double x1, double y1, double x2, double y2,
                  llvm::StringRef attrs) {
  out += "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" +
         num(x2) + "\" y2=\"" + num(y2) + "\"" + withAttrs(attrs) + "/>\n";
}

void Writer::circle(double cx, double cy, double r, llvm::StringRef attrs,
                    llvm::StringRef title) {
  out += "<circle cx=\"" + num(cx) + "\" cy=\"" + num(cy) + "\" r=\"" +
         num(r) + "\"" + withAttrs(attrs) +
         (title.empty() ? "/>\n"
                        : "><title>" + escape(title) + "</title></circle>\n");
}

void Writer::polyline(llvm::ArrayRef<std::pair<double, double>> points,
                      llvm::StringRef attrs) {
  out += "<polyline points=\"";
  for (const auto &[x, y] : points)
    out += num(x) + "," + num(y) + " ";
  out += "\"" + withAttrs(attrs) + "/>\n";
}

void Writer::rect(double x, double y, double w, double h,
                  llvm::StringRef attrs) {
  out += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) +
         "\" height=\"" + num(h) + "\"" + withAttrs(attrs) + "/>\n";
}

void Writer::text(double x, double y, llvm::StringRef text,
                  llvm::StringRef attrs) {
  out += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\"" +
         withAttrs(attrs) + ">" + escape(text) + "</text>\n";
}

void Writer::path(llvm::StringRef d, llvm::StringRef attrs) {
  out += "<path d=\"" + escape(d) + "\"" + withAttrs(attrs) + "/>\n";
}

std::string Writer::finish() {
  std::string doc = std::move(out);
  if (!defs.empty()) {
    // The markers go first, where a reader of the file looks for them.
    size_t afterHeader = doc.find('\n', doc.find('\n') + 1) + 1;
    doc.insert(afterHeader, "<defs>\n" + defs + "</defs>\n");
  }
  return doc + "</svg>\n";
}
