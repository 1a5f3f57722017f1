#include "support/Diagnostics.h"

using namespace collc;

void DiagnosticEngine::print(llvm::SMLoc loc, llvm::SourceMgr::DiagKind kind,
                             const llvm::Twine &message,
                             llvm::ArrayRef<llvm::SMRange> ranges) {
  if (kind == llvm::SourceMgr::DK_Error) {
    lastSuppressed = errors >= maxErrors;
    ++errors;
    if (lastSuppressed) {
      if (!suppressedNoteShown)
        os << "collc: too many errors; the rest are not shown\n";
      suppressedNoteShown = true;
      return;
    }
  } else if (kind == llvm::SourceMgr::DK_Note && lastSuppressed) {
    return; // a note belongs to the error before it
  } else {
    lastSuppressed = false;
  }
  if (!loc.isValid()) {
    // No place in a file (a file that cannot be read): say who speaks.
    const char *kindName = kind == llvm::SourceMgr::DK_Error     ? "error"
                           : kind == llvm::SourceMgr::DK_Warning ? "warning"
                                                                 : "note";
    os << "collc: " << kindName << ": " << message << "\n";
    return;
  }
  sourceMgr.PrintMessage(os, loc, kind, message, ranges, {}, showColors);
}

void DiagnosticEngine::error(llvm::SMLoc loc, const llvm::Twine &message,
                             llvm::ArrayRef<llvm::SMRange> ranges) {
  print(loc, llvm::SourceMgr::DK_Error, message, ranges);
}

void DiagnosticEngine::warning(llvm::SMLoc loc, const llvm::Twine &message,
                               llvm::ArrayRef<llvm::SMRange> ranges) {
  print(loc, llvm::SourceMgr::DK_Warning, message, ranges);
}

void DiagnosticEngine::note(llvm::SMLoc loc, const llvm::Twine &message,
                            llvm::ArrayRef<llvm::SMRange> ranges) {
  print(loc, llvm::SourceMgr::DK_Note, message, ranges);
}

void DiagnosticEngine::error(const llvm::Twine &message) {
  print(llvm::SMLoc(), llvm::SourceMgr::DK_Error, message, {});
}
