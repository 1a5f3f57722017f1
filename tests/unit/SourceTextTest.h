#pragma once
// A test fixture that loads .coll text as `collc check` reads a file (parse
// and sema), with the diagnostics kept for the failure messages.

#include "sema/Sema.h"
#include "support/Diagnostics.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <string>

namespace collc::test {

class SourceTextTest : public ::testing::Test {
protected:
  /// The declarations of `text`, checked; empty (with a failed
  /// expectation) when it does not load.
  Program load(const std::string &text) {
    auto buffer = llvm::MemoryBuffer::getMemBufferCopy(text, "test.coll");
    llvm::Expected<Program> program = loadSource(std::move(buffer), diags);
    EXPECT_TRUE(static_cast<bool>(program)) << errors;
    if (!program) {
      llvm::consumeError(program.takeError());
      return {};
    }
    return std::move(*program);
  }

  std::string errors;
  llvm::raw_string_ostream errorStream{errors};
  llvm::SourceMgr sourceMgr;
  DiagnosticEngine diags{sourceMgr, errorStream, false};
};

} // namespace collc::test
