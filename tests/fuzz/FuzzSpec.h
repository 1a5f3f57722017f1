#pragma once
// A fuzzer's input as a spec: parsed and checked by the front end, its
// diagnostics dropped.

#include "sema/Sema.h"
#include "support/Diagnostics.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <optional>

struct FuzzSpec {
  llvm::SourceMgr sourceMgr;
  llvm::raw_null_ostream sink;
  collc::DiagnosticEngine diags{sourceMgr, sink};

  /// The program, or none where the front end refuses the input.
  std::optional<collc::Program> load(const uint8_t *data, size_t size) {
    auto buffer = llvm::MemoryBuffer::getMemBufferCopy(
        llvm::StringRef(reinterpret_cast<const char *>(data), size),
        "fuzz.coll");
    llvm::Expected<collc::Program> program =
        collc::loadSource(std::move(buffer), diags);
    if (!program) {
      llvm::consumeError(program.takeError());
      return std::nullopt;
    }
    return std::move(*program);
  }
};
