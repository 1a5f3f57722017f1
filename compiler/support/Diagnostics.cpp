#include "support/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"

#include <tuple>

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
  const char *kindName = kind == llvm::SourceMgr::DK_Error     ? "error"
                         : kind == llvm::SourceMgr::DK_Warning ? "warning"
                                                               : "note";
  if (records) {
    Record d{"", 0, 0, kindName, message.str(), {}};
    if (unsigned id = loc.isValid() ? sourceMgr.FindBufferContainingLoc(loc)
                                    : 0) {
      std::tie(d.line, d.column) = sourceMgr.getLineAndColumn(loc, id);
      d.file = sourceMgr.getMemoryBuffer(id)->getBufferIdentifier().str();
    }
    if (kind == llvm::SourceMgr::DK_Note && !records->empty())
      records->back().notes.push_back(std::move(d));
    else
      records->push_back(std::move(d));
  }
  if (!loc.isValid()) {
    // No place in a file (a file that cannot be read): say who speaks.
    os << "collc: " << kindName << ": " << message << "\n";
    return;
  }
  llvm::SMDiagnostic d = sourceMgr.GetMessage(loc, kind, message, ranges);
  if (llvm::any_of(d.getLineContents(), [](char c) { return c & 0x80; })) {
    printNonAscii(d);
    return;
  }
  sourceMgr.PrintMessage(os, d, showColors);
}

// LLVM prints no caret under a line with UTF-8 in it (its columns count
// bytes). A terminal shows a UTF-8 character in one column, so the caret
// line has one blank per character before the place, a tab for a tab.
void DiagnosticEngine::printNonAscii(const llvm::SMDiagnostic &d) {
  const char *kindName = d.getKind() == llvm::SourceMgr::DK_Error ? "error"
                         : d.getKind() == llvm::SourceMgr::DK_Warning
                             ? "warning"
                             : "note";
  os << d.getFilename() << ":" << d.getLineNo() << ":" << d.getColumnNo() + 1
     << ": " << kindName << ": " << d.getMessage() << "\n"
     << d.getLineContents() << "\n";
  llvm::StringRef before = d.getLineContents().take_front(d.getColumnNo());
  for (char c : before)
    if ((c & 0xC0) != 0x80) // not a UTF-8 continuation byte
      os << (c == '\t' ? '\t' : ' ');
  os << "^\n";
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

std::vector<DiagnosticEngine::Record> DiagnosticEngine::takeRecords() {
  std::vector<Record> out;
  if (records)
    out.swap(*records);
  return out;
}
