#pragma once
// One diagnostics path for the whole compiler: every message goes through
// llvm::SourceMgr so it prints as `file.coll:LINE:COL: error: ...` followed by
// the source line and a caret.

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace collc {

class DiagnosticEngine {
public:
  explicit DiagnosticEngine(llvm::SourceMgr &sourceMgr,
                            llvm::raw_ostream &os = llvm::errs(),
                            bool showColors = false)
      : sourceMgr(sourceMgr), os(os), showColors(showColors) {}

  void error(llvm::SMLoc loc, const llvm::Twine &message,
             llvm::ArrayRef<llvm::SMRange> ranges = {});
  void warning(llvm::SMLoc loc, const llvm::Twine &message,
               llvm::ArrayRef<llvm::SMRange> ranges = {});
  void note(llvm::SMLoc loc, const llvm::Twine &message,
            llvm::ArrayRef<llvm::SMRange> ranges = {});
  /// An error with no place in the source (a missing file, say).
  void error(const llvm::Twine &message);

  unsigned errorCount() const { return errors; }
  bool hasErrors() const { return errors != 0; }
  /// After this many errors the rest are suppressed: a file of junk must not
  /// print a million lines.
  static constexpr unsigned maxErrors = 50;
  bool tooManyErrors() const { return errors >= maxErrors; }

  llvm::SourceMgr &getSourceMgr() { return sourceMgr; }

  /// A diagnostic as printed, for `--format json` (no place: line 0).
  struct Record {
    std::string file;
    unsigned line = 0, column = 0;
    std::string severity, message;
    std::vector<Record> notes;
  };
  /// From now on, also keep every diagnostic printed; a note joins the
  /// error or warning before it.
  void keepRecords() { records.emplace(); }
  /// The diagnostics kept since keepRecords().
  std::vector<Record> takeRecords();

private:
  void print(llvm::SMLoc loc, llvm::SourceMgr::DiagKind kind,
             const llvm::Twine &message, llvm::ArrayRef<llvm::SMRange> ranges);
  void printNonAscii(const llvm::SMDiagnostic &d);

  llvm::SourceMgr &sourceMgr;
  llvm::raw_ostream &os;
  bool showColors;
  unsigned errors = 0;
  bool suppressedNoteShown = false;
  bool lastSuppressed = false;
  std::optional<std::vector<Record>> records;
};

} // namespace collc
