// Prices every schedule of a spec the front end accepts, by simulation and
// from its rules, on its members of 2 to 8 ranks: whatever the spec, each
// stage answers with a price or an error, never a crash, undefined
// behaviour (ASan, UBSan) or a hang (the fuzzer's time limit).

#include "FuzzSpec.h"
#include "cost/Cost.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzSpec spec;
  std::optional<collc::Program> program = spec.load(data, size);
  if (!program)
    return 0;
  for (const collc::ir::Schedule &s : program->schedules)
    for (int64_t p = 2; p <= 8; ++p) {
      llvm::Expected<std::vector<int64_t>> params =
          collc::cost::paramsForRanks(s, p);
      if (!params) {
        llvm::consumeError(params.takeError());
        continue;
      }
      for (collc::PortModel ports :
           {collc::PortModel::Single, collc::PortModel::All}) {
        if (auto c = collc::cost::costOf(s, *params, ports); !c)
          llvm::consumeError(c.takeError());
        if (auto c = collc::cost::costFromRules(s, *params, ports); !c)
          llvm::consumeError(c.takeError());
      }
    }
  return 0;
}
