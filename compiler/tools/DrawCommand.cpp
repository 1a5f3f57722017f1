// collc draw FILE -o OUT.svg: a schedule drawn as the textbook's figures
// draw one - a panel per step, the topology laid out as itself, each message
// an arrow along its route labelled with what it carries, the most loaded
// channel of a congested step in red. The messages, chunks and routes are
// those `collc show` prints (tools/StepTable.h); nothing is recomputed here.

#include "tools/Commands.h"
#include "tools/StepTable.h"
#include "tools/Svg.h"

#include "support/Diagnostics.h"
#include "ir/Verdict.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>

using namespace collc;
using namespace collc::tools;
namespace cl = llvm::cl;

namespace {

cl::SubCommand drawCommand("draw", "Draw a schedule as an SVG figure: a panel "
                                   "per step, each message an arrow along "
                                   "its route");
cl::opt<std::string> drawFile(cl::Positional, cl::Required,
                              cl::desc("<file.coll>"), cl::sub(drawCommand),
                              cl::cat(category()));
cl::opt<std::string>
    drawSchedule("schedule",
                 cl::desc("The schedule to draw (or the collective it "
                          "resolved to); needed when the file has several"),
                 cl::value_desc("NAME"), cl::sub(drawCommand),
                 cl::cat(category()));
MemberOptions drawMember(drawCommand);
cl::opt<bool> drawAllPort("all-port", cl::desc("All-port model"),
                          cl::sub(drawCommand), cl::cat(category()));
cl::opt<Format> drawFormat(
    "format", cl::desc("Output format (of what is printed; the figure is SVG)"),
    formatValues("nothing but errors",
                 "one JSON document: the schedule and member drawn, "
                 "the file written, and the diagnostics"),
    cl::init(Format::Text), cl::sub(drawCommand), cl::cat(category()));
cl::opt<std::string> drawOutput("o",
                                cl::desc("Write the SVG to FILE ('-': "
                                         "standard output)"),
                                cl::value_desc("FILE"), cl::sub(drawCommand),
                                cl::cat(category()));
cl::opt<unsigned> drawPanels(
    "panels",
    cl::desc("At most N step panels: a longer schedule shows its first N-1 "
             "steps and its last, and says how many it folded (default 8)"),
    cl::value_desc("N"), cl::init(8), cl::sub(drawCommand),
    cl::cat(category()));

/// Beyond this many ranks a figure is a blur; collc show still lists them.
constexpr int64_t maxDrawnRanks = 256;

struct Point {
  double x = 0, y = 0;
};
Point operator+(Point a, Point b) { return {a.x + b.x, a.y + b.y}; }
Point operator-(Point a, Point b) { return {a.x - b.x, a.y - b.y}; }
Point operator*(Point a, double k) { return {a.x * k, a.y * k}; }
double length(Point a) { return std::hypot(a.x, a.y); }
Point unit(Point a) {
  double l = length(a);
  return l > 0 ? a * (1 / l) : Point{};
}

/// Where every node of a topology sits in a panel, and how links bend.
struct Layout {
  std::vector<Point> pos; // per node (ranks, then a tree's switches)
  double width = 0, height = 0;
  double radius = 11;
  /// Mesh/torus: a wraparound link, and a link between grids side by side,
  /// is drawn as a curve, not through the nodes between its ends.
  bool bendsWraps = false;
  std::vector<std::vector<int64_t>> coords;
  /// What the figure's heading should say about the layout, if anything.
  std::string note;
};

constexpr double pad = 24;

Layout circleLayout(int64_t p) {
  Layout l;
  double r = std::max(80.0, static_cast<double>(p) * 32 / (2 * std::numbers::pi));
  l.width = l.height = 2 * r + 2 * pad + 20;
  double c = l.width / 2;
  for (int64_t k = 0; k < p; ++k) {
    double a = 2 * std::numbers::pi * static_cast<double>(k) /
               static_cast<double>(p);
    l.pos.push_back({c + r * std::sin(a), c - r * std::cos(a)});
  }
  return l;
}

Layout rowLayout(int64_t p) {
  Layout l;
  const double gap = 56;
  l.width = gap * static_cast<double>(p - 1) + 2 * pad + 20;
  l.height = 2 * pad + 60;
  for (int64_t k = 0; k < p; ++k)
    l.pos.push_back({pad + 10 + gap * static_cast<double>(k), l.height / 2});
  return l;
}

/// Rows and columns of the last two dimensions; the dimensions before them
/// pick one of several grids side by side.
Layout gridLayout(const Topology &t) {
  Layout l;
  const double gap = 60;
  llvm::ArrayRef<int64_t> dims = t.dims();
  size_t n = dims.size();
  int64_t cols = dims[n - 1], rows = n >= 2 ? dims[n - 2] : 1;
  int64_t tiles = 1;
  for (size_t i = 0; i + 2 < n; ++i)
    tiles *= dims[i];
  l.bendsWraps = t.kind() == TopologyKind::Torus || tiles > 1;
  double margin = pad + 10 + (l.bendsWraps ? 24 : 0);
  for (int64_t k = 0; k < t.numRanks(); ++k) {
    llvm::SmallVector<int64_t, 4> c = t.coordinates(k);
    int64_t tile = n >= 2 ? k / (rows * cols) : 0;
    int64_t row = n >= 2 ? c[n - 2] : 0;
    l.pos.push_back(
        {margin + gap * static_cast<double>(tile * (cols + 1) + c[n - 1]),
         margin + gap * static_cast<double>(row)});
    l.coords.emplace_back(c.begin(), c.end());
  }
  l.width = 2 * margin + gap * static_cast<double>(tiles * (cols + 1) - 2);
  l.height = 2 * margin + gap * static_cast<double>(rows - 1);
  if (tiles > 1)
    l.note = n == 3 ? "the first coordinate picks the grid, left to right; "
                      "its links arc above the rows"
                    : "the first " + std::to_string(n - 2) +
                          " coordinates pick the grid, left to right; their "
                          "links arc above the rows";
  return l;
}

/// Nested squares: bits 0 and 1 place a rank on a square, bit 2 picks the
/// outer or inner square, bit 3 the left or right copy; higher bits pick a
/// copy of that 4-cube, their links not drawn.
Layout cubeLayout(const Topology &t) {
  Layout l;
  int64_t dim = t.dims()[0];
  const double side = dim == 1 ? 90 : 150, inner = 0.42;
  int64_t copies = dim > 4 ? int64_t(1) << (dim - 4) : 1;
  int64_t perRow = static_cast<int64_t>(
      std::ceil(std::sqrt(static_cast<double>(copies))));
  double blockW = (dim >= 4 ? 2 * side + 70 : side) + 40;
  double blockH = (dim >= 2 ? side : 0) + (dim >= 4 ? side * 0.3 : 0) + 40;
  for (int64_t k = 0; k < t.numRanks(); ++k) {
    llvm::SmallVector<int64_t, 4> b = t.coordinates(k);
    auto bit = [&](size_t i) { return i < b.size() ? b[i] : 0; };
    double x = static_cast<double>(bit(0)) * side;
    double y = static_cast<double>(1 - bit(1)) * side;
    if (dim < 2)
      y = 0;
    if (bit(2)) {
      x = side / 2 + (x - side / 2) * inner;
      y = side / 2 + (y - side / 2) * inner;
    }
    // The second 3-cube sits lower as well as to the right, so that the
    // links between the two cubes do not run through the first's nodes.
    if (bit(3)) {
      x += side + 70;
      y += side * 0.3;
    }
    int64_t copy = 0;
    for (size_t i = 4; i < b.size(); ++i)
      copy |= b[i] << (i - 4);
    x += static_cast<double>(copy % perRow) * blockW;
    y += static_cast<double>(copy / perRow) * blockH;
    l.pos.push_back({pad + 20 + x, pad + 20 + y});
  }
  l.width = 2 * pad + blockW * static_cast<double>(perRow);
  l.height = 2 * pad + blockH *
                           static_cast<double>((copies + perRow - 1) / perRow);
  if (dim > 4)
    l.note = "hypercube drawn by its first 4 dimensions: bits 4 and up of a "
             "rank pick one of " +
             std::to_string(copies) +
             " 4-cubes, and the links between them are not drawn";
  return l;
}

/// Ranks in a row at the bottom, each switch above the middle of its
/// subtree, level by level.
Layout treeLayout(const Topology &t) {
  Layout l;
  int64_t p = t.numRanks();
  const double gap = 48, levelGap = 56;
  int levels = 0;
  while ((int64_t(1) << levels) < p)
    ++levels;
  l.width = 2 * pad + 20 + gap * static_cast<double>(p - 1);
  l.height = 2 * pad + 20 + levelGap * levels;
  auto at = [&](int64_t heap) {
    int level = 0;
    while ((heap >> (level + 1)) > 0)
      ++level;
    double index = static_cast<double>(heap - (int64_t(1) << level));
    double x = ((index + 0.5) / static_cast<double>(int64_t(1) << level) *
                    static_cast<double>(p) -
                0.5) *
               gap;
    return Point{pad + 10 + x, pad + 10 + levelGap * level};
  };
  for (int64_t k = 0; k < p; ++k)
    l.pos.push_back(at(p + k));
  for (int64_t h = 1; h < p; ++h)
    l.pos.push_back(at(h));
  return l;
}

Layout layoutOf(const Topology &t) {
  switch (t.kind()) {
  case TopologyKind::Ring:
  case TopologyKind::Full:
  case TopologyKind::Graph:
    return circleLayout(t.numRanks());
  case TopologyKind::Linear:
    return rowLayout(t.numRanks());
  case TopologyKind::Mesh:
  case TopologyKind::Torus:
    return gridLayout(t);
  case TopologyKind::Hypercube:
    return cubeLayout(t);
  case TopologyKind::Tree:
    return treeLayout(t);
  }
  return circleLayout(t.numRanks());
}

/// One hop drawn: a straight line, or a quadratic curve through `control`
/// (a torus's wraparound link, bent outside the grid).
struct Segment {
  Point a, b, control;
  bool curved = false;
};

Segment segmentOf(const Layout &l, int64_t from, int64_t to) {
  Segment s{l.pos[static_cast<size_t>(from)], l.pos[static_cast<size_t>(to)],
            {}, false};
  if (!l.bendsWraps)
    return s;
  const std::vector<int64_t> &cf = l.coords[static_cast<size_t>(from)],
                             &ct = l.coords[static_cast<size_t>(to)];
  Point mid = (s.a + s.b) * 0.5;
  for (size_t i = 0; i < cf.size(); ++i) {
    int64_t apart = std::abs(cf[i] - ct[i]);
    if (apart >= 1 && i + 2 < cf.size()) {
      // Between grids laid side by side: over the row, higher for a
      // wraparound link, which spans every grid.
      s.control = Point{mid.x, mid.y - (apart > 1 ? 96 : 48)};
      s.curved = true;
    } else if (apart > 1) {
      // Along a row the curve rises above it, along a column it goes left:
      // outside the grid for the first row and column, between rows else.
      bool alongRow = i + 1 == cf.size();
      s.control = alongRow ? Point{mid.x, mid.y - 48} : Point{mid.x - 48, mid.y};
      s.curved = true;
    }
  }
  return s;
}

/// `s` moved `offset` to the right of its direction, so that messages in
/// opposite directions over one link are told apart.
Segment shifted(Segment s, double offset) {
  Point d = unit(s.b - s.a);
  Point n{-d.y * offset, d.x * offset};
  s.a = s.a + n;
  s.b = s.b + n;
  s.control = s.control + n;
  return s;
}

std::string pathOf(llvm::ArrayRef<Segment> segments) {
  std::string d;
  for (size_t i = 0; i < segments.size(); ++i) {
    const Segment &s = segments[i];
    d += (i ? " L" : "M") + svg::num(s.a.x) + "," + svg::num(s.a.y);
    if (s.curved)
      d += " Q" + svg::num(s.control.x) + "," + svg::num(s.control.y) + " " +
           svg::num(s.b.x) + "," + svg::num(s.b.y);
    else
      d += " L" + svg::num(s.b.x) + "," + svg::num(s.b.y);
  }
  return d;
}

/// The point halfway along a segment (a curve's at t = 1/2).
Point middleOf(const Segment &s) {
  return s.curved ? (s.a * 0.25 + s.control * 0.5 + s.b * 0.25)
                  : (s.a + s.b) * 0.5;
}

/// A label as a box along its arrow: its centre, the arrow's direction,
/// and half its length; it is 9 px high (font-size 9).
struct LabelBox {
  Point centre, along;
  double halfLength;
};

/// Half a label's width at font-size 9 (about 5 px a character).
double labelHalfLength(llvm::StringRef text) {
  return 2.6 * static_cast<double>(text.size());
}

/// Whether two labels' boxes overlap: separated along no axis of either
/// (the separating axis test on the two rectangles).
bool overlaps(const LabelBox &a, const LabelBox &b) {
  constexpr double halfHeight = 5;
  const Point axes[] = {a.along, {-a.along.y, a.along.x}, b.along,
                        {-b.along.y, b.along.x}};
  auto extent = [&](const LabelBox &box, Point axis) {
    Point normal{-box.along.y, box.along.x};
    return box.halfLength *
               std::abs(box.along.x * axis.x + box.along.y * axis.y) +
           halfHeight * std::abs(normal.x * axis.x + normal.y * axis.y);
  };
  for (Point axis : axes) {
    Point gap = b.centre - a.centre;
    double distance = std::abs(gap.x * axis.x + gap.y * axis.y);
    if (distance > extent(a, axis) + extent(b, axis))
      return false;
  }
  return true;
}

/// Where a message's label goes, and what it says.
struct LabelPlace {
  std::string text;
  Point anchor, side; // side: from the arrow to the anchor, in 8 px units
  double halfLength;
};

/// The label runs along the arrow's middle link (`carrier`), upright, on
/// its right, its left, or a line further out on either side: the full
/// label where it fits the link and some place along it is clear of the
/// labels placed before, else the brief one (the size alone; the chunks
/// stay in the arrow's tooltip and data-chunks) at the first clear place,
/// or at the middle on the right.
LabelPlace placeLabel(const Segment &carrier, double radius,
                      const std::string &full, const std::string &brief,
                      llvm::ArrayRef<LabelBox> placed) {
  const Point d = unit(carrier.b - carrier.a), right{-d.y, d.x};
  const double span = length(carrier.b - carrier.a);
  for (const std::string *candidate : {&full, &brief}) {
    const double half = labelHalfLength(*candidate);
    // A label much longer than its link (centre to centre) would run over
    // the others' links: up to half as long again reads as its own.
    if (candidate == &full && 2 * half > 1.5 * (span + 2 * radius))
      continue;
    const double room = std::max(0.0, span / 2 - radius - half);
    for (double sign : {1.0, -1.0, 2.2, -2.2})
      for (double shift :
           {0.0, 0.25, -0.25, 0.5, -0.5, 0.75, -0.75, 1.0, -1.0}) {
        const Point side = right * sign;
        const Point anchor = middleOf(carrier) + d * (shift * room) + side * 8;
        const LabelBox box{anchor, d, half};
        if (llvm::none_of(placed,
                          [&](const LabelBox &o) { return overlaps(box, o); }))
          return {*candidate, anchor, side, half};
      }
  }
  return {brief, middleOf(carrier) + right * 8, right,
          labelHalfLength(brief)};
}

std::string messageLabel(const StepMessage &m) {
  return (m.reduce ? "reduce " : "") + m.chunks + ", " + m.size;
}

struct Figure {
  const StepTable &table;
  Layout layout;
  /// A counterexample drawn (collc verify --draw): its step alone, its
  /// channel or rank in red.
  const verify::Counterexample *failure = nullptr;
};

/// What a panel marks in red: the counterexample of its step, if any, and
/// the channel drawn in red with the messages it carries.
struct PanelAlarm {
  const verify::Counterexample *failure = nullptr;
  std::optional<Channel> red;
  int64_t load = 0;
};

PanelAlarm alarmOf(const Figure &f, const ir::InstanceStep &step) {
  const simulate::StepStats *stats = nullptr;
  for (const simulate::StepStats &s : f.table.result.steps)
    if (s.step == step.number)
      stats = &s;
  PanelAlarm alarm;
  alarm.failure =
      f.failure && f.failure->step == static_cast<int64_t>(step.number)
          ? f.failure
          : nullptr;
  // The channel drawn in red: a counterexample's, else the most loaded
  // one of a congested step.
  if (alarm.failure && alarm.failure->channel) {
    alarm.red =
        Channel{alarm.failure->channel->first, alarm.failure->channel->second};
    alarm.load = alarm.failure->load;
  } else if (stats && stats->maxLoad >= 2 && stats->worstChannel) {
    alarm.red = *stats->worstChannel;
    alarm.load = stats->maxLoad;
  }
  return alarm;
}

/// The panel's frame and heading; it leaves open the panel's group and,
/// inside it, the drawing's, shifted below the heading.
void openPanel(svg::Writer &w, const ir::InstanceStep &step,
               const PanelAlarm &alarm, double x, double y, double panelW,
               double panelH) {
  w.raw("<g class=\"step\" data-step=\"" + std::to_string(step.number) +
        "\" transform=\"translate(" + svg::num(x) + "," + svg::num(y) +
        ")\">\n");
  w.rect(0, 0, panelW, panelH, "fill=\"none\" stroke=\"#bbb\"");
  w.text(8, 18, stepHeading(step), "font-weight=\"bold\"");
  if (alarm.failure)
    w.text(8, 34, alarm.failure->message, "fill=\"#d00\" font-size=\"11\"");
  else if (alarm.red)
    w.text(8, 34,
           "congested: " + std::to_string(alarm.load) + " messages on " +
               std::to_string(alarm.red->from) + " -> " +
               std::to_string(alarm.red->to),
           "fill=\"#d00\" font-size=\"11\"");
  w.raw("<g transform=\"translate(0,40)\">\n");
}

void drawLinks(svg::Writer &w, const Topology &t, const Layout &l) {
  // Each link once, as the lower-numbered end sees it.
  for (const Channel &c : t.channels()) {
    if (c.from > c.to && t.hasChannel(c.to, c.from))
      continue;
    Segment s = segmentOf(l, c.from, c.to);
    w.path(pathOf(s), "fill=\"none\" stroke=\"#ccc\" stroke-width=\"1.5\"");
  }
}

/// The red channel `c` under its arrows, labelled with its `load`.
void drawCongestion(svg::Writer &w, const Layout &l,
                    const ir::InstanceStep &step, const Channel &c,
                    int64_t load) {
  Segment s = shifted(segmentOf(l, c.from, c.to), 3);
  // The load's text on the channel's other side, clear of the arrows.
  Point d = unit(s.b - s.a);
  Point mid = middleOf(s) + Point{d.y * 16, -d.x * 16} + Point{0, 8};
  w.raw("<g class=\"congestion\" data-step=\"" + std::to_string(step.number) +
        "\" data-from=\"" + std::to_string(c.from) + "\" data-to=\"" +
        std::to_string(c.to) + "\" data-load=\"" + std::to_string(load) +
        "\"><path d=\"" + pathOf(s) +
        "\" fill=\"none\" stroke=\"#d00\" stroke-width=\"6\" "
        "stroke-opacity=\"0.5\"/><text x=\"" +
        svg::num(mid.x) + "\" y=\"" + svg::num(mid.y - 8) +
        "\" fill=\"#d00\" font-weight=\"bold\" text-anchor=\"middle\">" +
        std::to_string(load) + " messages</text></g>\n");
}

/// How many messages of a step were drawn so far on each channel.
using ChannelUses = std::map<std::pair<int64_t, int64_t>, int>;

/// A message's hops, each moved aside by the messages drawn on its channel
/// before it (counted in `uses`).
std::vector<Segment> routeOf(const Layout &l, const StepMessage &m,
                             ChannelUses &uses) {
  std::vector<Segment> segments;
  for (size_t i = 0; i + 1 < m.via.size(); ++i) {
    int earlier = uses[{m.via[i], m.via[i + 1]}]++;
    segments.push_back(shifted(segmentOf(l, m.via[i], m.via[i + 1]),
                               3 + 3.5 * std::min(earlier, 4)));
  }
  return segments;
}

/// "0 8 2": the nodes a message passes, for data-via and its tooltip.
std::string viaOf(const StepMessage &m) {
  std::string via;
  for (size_t i = 0; i < m.via.size(); ++i)
    via += (i ? " " : "") + std::to_string(m.via[i]);
  return via;
}

/// A message's opening tag, the data a golden test reads.
std::string messageTag(const ir::InstanceStep &step, const StepMessage &m,
                       const std::string &via) {
  return "<g class=\"message\" data-step=\"" + std::to_string(step.number) +
         "\" data-from=\"" + std::to_string(m.src) + "\" data-to=\"" +
         std::to_string(m.dst) + "\" data-via=\"" + via + "\" data-chunks=\"" +
         svg::escape(m.chunks) + "\" data-size=\"" + svg::escape(m.size) +
         "\">";
}

/// The arrow leaves the sender's circle and stops at the receiver's.
void clipToNodes(std::vector<Segment> &segments, double radius) {
  Segment &first = segments.front(), &last = segments.back();
  first.a = first.a +
            unit((first.curved ? first.control : first.b) - first.a) * radius;
  last.b = last.b +
           unit((last.curved ? last.control : last.a) - last.b) * (radius + 1);
}

/// The rotation, in degrees, of a label along direction `d`, kept upright.
double uprightAngle(Point d) {
  double angle = std::atan2(d.y, d.x) * 180 / std::numbers::pi;
  if (angle > 90)
    angle -= 180;
  else if (angle <= -90)
    angle += 180;
  return angle;
}

/// Whether the label's own "down" (after the rotation) points away from
/// the arrow: then the text hangs below its anchor, else sits above it.
bool hangsBelow(double angle, Point side) {
  double rad = angle * std::numbers::pi / 180;
  return -std::sin(rad) * side.x + std::cos(rad) * side.y < 0;
}

/// One message: its arrow along its route, and its label placed clear of
/// the labels in `placed`, to which it is added.
void drawMessage(svg::Writer &w, const Layout &l, const ir::InstanceStep &step,
                 const StepMessage &m, ChannelUses &uses,
                 std::vector<LabelBox> &placed) {
  std::vector<Segment> segments = routeOf(l, m, uses);
  const std::string via = viaOf(m);
  const std::string head = messageTag(step, m, via);
  if (segments.empty()) {
    w.raw(head + "</g>\n");
    return;
  }
  clipToNodes(segments, l.radius);
  const Segment &carrier = segments[segments.size() / 2];
  Point d = unit(carrier.b - carrier.a);
  const LabelPlace place =
      placeLabel(carrier, l.radius, messageLabel(m),
                 (m.reduce ? "reduce " : "") + m.size, placed);
  const std::string &text = place.text;
  const Point label = place.anchor, side = place.side;
  placed.push_back({label, d, place.halfLength});
  double angle = uprightAngle(d);
  bool below = hangsBelow(angle, side);
  const char *color = m.reduce ? "#2a8a2a" : "#1f5fbf";
  w.raw(head + "<title>" +
        svg::escape(std::to_string(m.src) + " -> " + std::to_string(m.dst) +
                    " " + messageLabel(m) + " via " + via) +
        "</title><path d=\"" + pathOf(segments) + "\" fill=\"none\" stroke=\"" +
        color + "\" stroke-width=\"1.6\" marker-end=\"url(#" +
        (m.reduce ? "arrow-reduce" : "arrow") + ")\"/><text x=\"" +
        svg::num(label.x) + "\" y=\"" + svg::num(label.y) + "\" dy=\"" +
        (below ? "-0.3em" : "0.9em") + "\" transform=\"rotate(" +
        svg::num(angle) + " " + svg::num(label.x) + " " + svg::num(label.y) +
        ")\" text-anchor=\"middle\" font-size=\"9\" fill=\"" + color + "\">" +
        svg::escape(text) + "</text></g>\n");
}

void drawMessages(svg::Writer &w, const Layout &l, const ir::InstanceStep &step,
                  const std::vector<StepMessage> &messages) {
  // Messages sharing a channel are drawn side by side, as many as there
  // are, so that a congested channel shows its load.
  ChannelUses uses;
  // The labels placed so far, as boxes along their arrows, so that a label
  // slides along its own arrow until it clears them.
  std::vector<LabelBox> placed;
  for (const StepMessage &m : messages)
    drawMessage(w, l, step, m, uses, placed);
}

void drawNodes(svg::Writer &w, const Topology &t, const Layout &l) {
  for (int64_t node = 0; node < t.numNodes(); ++node) {
    Point at = l.pos[static_cast<size_t>(node)];
    if (node >= t.numRanks()) {
      // A tree's switch: a small square, not a rank.
      w.rect(at.x - 6, at.y - 6, 12, 12, "fill=\"#eee\" stroke=\"#888\"");
      continue;
    }
    w.circle(at.x, at.y, l.radius, "fill=\"#f4f4f4\" stroke=\"#444\"");
    w.text(at.x, at.y + 4, std::to_string(node),
           "text-anchor=\"middle\" font-size=\"11\"");
  }
}

/// A counterexample's rank (a contended port, an unmatched or early
/// message): ringed in red.
void ringFailedRank(svg::Writer &w, const Topology &t, const Layout &l,
                    const ir::InstanceStep &step,
                    const verify::Counterexample &failure) {
  if (!failure.rank || *failure.rank < 0 || *failure.rank >= t.numRanks())
    return;
  Point at = l.pos[static_cast<size_t>(*failure.rank)];
  w.raw("<g class=\"failure\" data-step=\"" + std::to_string(step.number) +
        "\" data-rank=\"" + std::to_string(*failure.rank) + "\"><circle cx=\"" +
        svg::num(at.x) + "\" cy=\"" + svg::num(at.y) + "\" r=\"" +
        svg::num(l.radius + 4) +
        "\" fill=\"none\" stroke=\"#d00\" stroke-width=\"3\"/></g>\n");
}

/// A panel's drawing at (x, y): its heading, the topology's links, the
/// congested channel, one line per message (a golden test reads them), then
/// the nodes.
void drawPanel(svg::Writer &w, const Figure &f, const ir::InstanceStep &step,
               double x, double y, double panelW, double panelH) {
  const Layout &l = f.layout;
  const Topology &t = f.table.topology;
  const PanelAlarm alarm = alarmOf(f, step);
  openPanel(w, step, alarm, x, y, panelW, panelH);
  drawLinks(w, t, l);
  if (alarm.red)
    drawCongestion(w, l, step, *alarm.red, alarm.load);
  drawMessages(w, l, step, f.table.messages[step.number - 1]);
  // The nodes last, over the arrows that pass through them.
  drawNodes(w, t, l);
  if (alarm.failure)
    ringFailedRank(w, t, l, step, *alarm.failure);
  w.raw("</g>\n</g>\n");
}

std::string drawFigure(const Figure &f, llvm::ArrayRef<std::string> heading) {
  const ir::Instance &instance = f.table.instance;
  size_t steps = instance.steps.size();
  size_t limit = std::max<unsigned>(drawPanels, 2);
  // The steps shown: all, or the first limit-1 and the last.
  std::vector<size_t> shown;
  size_t folded = 0;
  if (f.failure && f.failure->step >= 1 &&
      static_cast<size_t>(f.failure->step) <= steps) {
    shown.push_back(static_cast<size_t>(f.failure->step) - 1);
  } else if (steps <= limit) {
    for (size_t i = 0; i < steps; ++i)
      shown.push_back(i);
  } else {
    for (size_t i = 0; i + 1 < limit; ++i)
      shown.push_back(i);
    shown.push_back(steps - 1);
    folded = steps - limit;
  }
  size_t slots = shown.size() + (folded ? 1 : 0);
  double panelW = std::max(f.layout.width, 220.0);
  double panelH = f.layout.height + 40;
  size_t cols = std::clamp<size_t>(
      static_cast<size_t>(1300 / (panelW + 12)), 1, std::max<size_t>(slots, 1));
  size_t rows = (slots + cols - 1) / cols;
  double top = 14 + 18 * static_cast<double>(heading.size());
  double width = 12 + static_cast<double>(cols) * (panelW + 12);
  double height = top + static_cast<double>(rows) * (panelH + 12) + 4;
  // Wide enough for the heading, at about 7 px a character.
  for (const std::string &line : heading)
    width = std::max(width, 24 + 7.0 * static_cast<double>(line.size()));

  svg::Writer w(width, height);
  w.arrowMarker("arrow", "#1f5fbf");
  w.arrowMarker("arrow-reduce", "#2a8a2a");
  for (size_t i = 0; i < heading.size(); ++i)
    w.text(12, 22 + 18 * static_cast<double>(i), heading[i],
           i == 0 ? "font-size=\"14\" font-weight=\"bold\"" : "");
  size_t slot = 0;
  auto origin = [&](size_t s) {
    return Point{12 + static_cast<double>(s % cols) * (panelW + 12),
                 top + static_cast<double>(s / cols) * (panelH + 12)};
  };
  for (size_t i = 0; i < shown.size(); ++i) {
    if (folded && i + 1 == shown.size()) {
      Point o = origin(slot++);
      w.raw("<g class=\"folded\" data-steps=\"" + std::to_string(folded) +
            "\" data-first=\"" + std::to_string(limit) + "\" data-last=\"" +
            std::to_string(steps - 1) + "\" transform=\"translate(" +
            svg::num(o.x) + "," + svg::num(o.y) + ")\">\n");
      w.rect(0, 0, panelW, panelH,
             "fill=\"#fafafa\" stroke=\"#bbb\" stroke-dasharray=\"4 3\"");
      w.text(panelW / 2, panelH / 2 - 8,
             std::to_string(folded) + (folded == 1 ? " step" : " steps") +
                 " folded",
             "text-anchor=\"middle\" font-size=\"14\"");
      w.text(panelW / 2, panelH / 2 + 12,
             folded == 1 ? "(step " + std::to_string(limit) + ")"
                         : "(steps " + std::to_string(limit) + " to " +
                               std::to_string(steps - 1) + ")",
             "text-anchor=\"middle\"");
      w.raw("</g>\n");
    }
    Point o = origin(slot++);
    drawPanel(w, f, instance.steps[shown[i]], o.x, o.y, panelW, panelH);
  }
  return w.finish();
}

/// The figure of `schedule`'s member `params`: every step, or with a
/// `failure` (the counterexample of `property`) its step alone.
llvm::Expected<std::string> figureOf(const ir::Schedule &schedule,
                                     llvm::ArrayRef<int64_t> params,
                                     PortModel ports,
                                     const verify::Counterexample *failure,
                                     llvm::StringRef property) {
  llvm::Expected<StepTable> table = tabulate(schedule, params, ports);
  if (!table)
    return table.takeError();
  if (table->topology.numRanks() > maxDrawnRanks)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "it has " + std::to_string(table->topology.numRanks()) +
            " ranks: collc draws at most " + std::to_string(maxDrawnRanks) +
            " (collc show lists every step)");

  Figure figure{*table, layoutOf(table->topology), failure};
  const ir::Instance &instance = table->instance;
  std::vector<std::string> heading;
  heading.push_back("schedule " + schedule.name + " : " +
                    verify::describeCollective(instance.collective) + " on " +
                    table->topology.describe() + ", p = " +
                    std::to_string(instance.p) +
                    (instance.chunks > 1
                         ? ", " + std::to_string(instance.chunks) +
                               " chunks per block"
                         : ""));
  if (failure) {
    heading.push_back("counterexample to " + property.str() + ": " +
                      failure->message);
    if (failure->step >= 1)
      heading.push_back("step " + std::to_string(failure->step) + " of " +
                        std::to_string(instance.steps.size()) +
                        "; in red: the channel or rank at fault");
  } else {
    std::string summary = plural(instance.steps.size(), "step");
    if (instance.steps.size() > std::max<unsigned>(drawPanels, 2))
      summary += ", " +
                 std::to_string(instance.steps.size() -
                                std::max<unsigned>(drawPanels, 2)) +
                 " folded";
    summary += "; arrows follow each message's route, labelled with the "
               "chunks it carries and its size";
    heading.push_back(summary);
  }
  if (!figure.layout.note.empty())
    heading.push_back(figure.layout.note);
  if (!failure && !table->result.allHold())
    heading.push_back("warning: the schedule does not simulate correctly; "
                      "run collc verify");
  return drawFigure(figure, heading);
}

/// Whether -o names somewhere the figure can go, with --format; false
/// after reporting why not.
bool outputUsable(const JsonDocument &json, DiagnosticEngine &diags) {
  if (drawOutput.empty()) {
    diags.error(llvm::SMLoc(),
                "draw needs -o OUT.svg ('-o -' for standard output)");
    return false;
  }
  if (json && drawOutput == "-") {
    diags.error(llvm::SMLoc(), "--format json prints on standard output: "
                               "draw to a file (-o OUT.svg)");
    return false;
  }
  return true;
}

/// The error for a choice of no schedule or of several: the names (the
/// first eight) to pick from.
void reportNotOne(llvm::ArrayRef<const ir::Schedule *> picked,
                  DiagnosticEngine &diags) {
  std::string list;
  for (size_t i = 0; i < picked.size() && i < 8; ++i)
    list += (i ? ", " : "") + picked[i]->name;
  if (picked.size() > 8)
    list += ", ...";
  diags.error(llvm::SMLoc(),
              picked.empty()
                  ? "'" + drawFile + "' has no schedule to draw"
                  : (drawSchedule.empty() ? "'" + drawFile + "'"
                                          : "'" + drawSchedule + "'") +
                        " has " + std::to_string(picked.size()) +
                        " schedules (" + list +
                        "); pick one with --schedule NAME");
}

/// The one schedule of `file` that --schedule picks (an alltoallv pattern
/// kept in `patterns`), or null after reporting why there is not one.
const ir::Schedule *pickSchedule(const Selection &selection,
                                 const LoadedFile &file,
                                 std::vector<ir::Schedule> &patterns,
                                 DiagnosticEngine &diags) {
  llvm::Expected<std::vector<const ir::Schedule *>> schedules =
      schedulesOf(file, patterns);
  if (!schedules) {
    diags.error(llvm::SMLoc(), llvm::toString(schedules.takeError()));
    return nullptr;
  }
  std::vector<const ir::Schedule *> picked;
  for (const ir::Schedule *schedule : *schedules)
    if (selection.selects(file, *schedule))
      picked.push_back(schedule);
  if (picked.size() != 1) {
    // A figure is of one schedule: say which names there are.
    reportNotOne(picked, diags);
    return nullptr;
  }
  return picked.front();
}

/// --format json's account of the figure written.
void recordDrawn(JsonDocument &json, const ir::Schedule &schedule,
                 llvm::ArrayRef<int64_t> member) {
  json.members["written"] = true;
  json.members["output"] = drawOutput.getValue();
  json.members["schedule"] = schedule.name;
  llvm::json::Array values;
  for (int64_t v : member)
    values.push_back(v);
  json.members["params"] = std::move(values);
}

int runDraw() {
  llvm::SourceMgr sourceMgr;
  DiagnosticEngine diags(sourceMgr, llvm::errs(), llvm::errs().has_colors());
  JsonDocument json(diags, drawFormat == Format::Json);
  json.members["written"] = false;
  if (!outputUsable(json, diags))
    return ExitInputError;
  std::vector<std::string> names;
  if (!drawSchedule.empty())
    names.push_back(drawSchedule);
  std::optional<Selection> selection =
      loadSelection({drawFile.getValue()}, names, diags);
  if (!selection)
    return ExitInputError;
  if (selection->failed)
    return ExitInputError;
  const LoadedFile &file = selection->files.front();
  std::vector<ir::Schedule> patterns;
  const ir::Schedule *picked = pickSchedule(*selection, file, patterns, diags);
  if (!picked)
    return ExitInputError;
  const ir::Schedule &schedule = *picked;
  llvm::Expected<std::vector<int64_t>> member = drawMember.choose(schedule);
  if (!member) {
    diags.error(schedule.loc, "cannot draw '" + schedule.name + "': " +
                                  llvm::toString(member.takeError()));
    return ExitInputError;
  }
  llvm::Expected<std::string> svg = figureOf(
      schedule, *member, portsFor(file.program, drawAllPort), nullptr, "");
  if (!svg) {
    reportFailure(diags, svg.takeError(), "draw", schedule.name, schedule.loc);
    return ExitInputError;
  }
  if (!writeFile(drawOutput, *svg, diags))
    return ExitInputError;
  if (json)
    recordDrawn(json, schedule, *member);
  return ExitOk;
}

CommandRegistration registration(drawCommand, runDraw,
                                 "collc draw FILE -o OUT.svg  draw a "
                                 "schedule's steps as an SVG figure");

} // namespace

llvm::Expected<std::string>
collc::tools::drawCounterexample(const ir::Schedule &schedule,
                                 const verify::Counterexample &failure,
                                 llvm::StringRef property, PortModel ports) {
  // The member it holds at: its parameters by name, else its rank count.
  std::vector<int64_t> params;
  for (const ir::Parameter &q : schedule.params) {
    auto it = llvm::find_if(failure.params,
                            [&](const auto &v) { return v.first == q.name; });
    if (it == failure.params.end()) {
      params.clear();
      break;
    }
    params.push_back(it->second);
  }
  if (params.size() != schedule.params.size()) {
    llvm::Expected<std::vector<int64_t>> member =
        chooseMember(schedule, failure.p, {});
    if (!member)
      return member.takeError();
    params = std::move(*member);
  }
  return figureOf(schedule, params, ports, &failure, property);
}
