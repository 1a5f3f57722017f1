#pragma once
// A minimal SVG writer for collc draw's figures and collc bench's plots: the
// document's frame, escaped text and the few shapes they need. Attributes
// beyond the geometry are passed preformatted (`fill="red" class="x"`); text is
// escaped here.

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <utility>

namespace collc::tools::svg {

/// `text` with &, <, >, " and ' escaped, for element text and attributes.
std::string escape(llvm::StringRef text);
/// A coordinate as SVG takes it: one decimal, no trailing ".0".
std::string num(double v);

class Writer {
public:
  Writer(double width, double height);

  /// A filled triangle marker `id` for the end of a line or path.
  void arrowMarker(llvm::StringRef id, llvm::StringRef color);
  void line(double x1, double y1, double x2, double y2,
            llvm::StringRef attrs = "");
  /// A circle; with `title`, a tooltip a browser shows over it.
  void circle(double cx, double cy, double r, llvm::StringRef attrs = "",
              llvm::StringRef title = "");
  /// An open line through `points`.
  void polyline(llvm::ArrayRef<std::pair<double, double>> points,
                llvm::StringRef attrs = "");
  void rect(double x, double y, double w, double h, llvm::StringRef attrs = "");
  void text(double x, double y, llvm::StringRef text,
            llvm::StringRef attrs = "");
  void path(llvm::StringRef d, llvm::StringRef attrs = "");
  /// Markup written as it is (a group's tags); the caller escapes.
  void raw(llvm::StringRef markup) { out += markup; }
  /// The document, closed.
  std::string finish();

private:
  std::string out;
  std::string defs;
};

} // namespace collc::tools::svg
