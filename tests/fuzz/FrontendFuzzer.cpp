// libFuzzer target for the front end: any byte string must parse and check
// without a crash, a hang or a sanitizer report.

#include "sema/Sema.h"
#include "support/Diagnostics.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::SourceMgr sourceMgr;
  llvm::raw_null_ostream sink;
  collc::DiagnosticEngine diags(sourceMgr, sink);
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), "fuzz.coll");
  llvm::Expected<collc::Program> program =
      collc::loadSource(std::move(buffer), diags);
  if (!program)
    llvm::consumeError(program.takeError());
  return 0;
}
