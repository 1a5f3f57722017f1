// libFuzzer target for the front end: any byte string must parse and check
// without a crash, a hang or a sanitizer report.

#include "FuzzSpec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzSpec spec;
  spec.load(data, size);
  return 0;
}
