#pragma once
// What a thread keeps of a call's memory for the next call (the engine's
// scratch, the irregular all-to-all's messages, packed copies).

#include <cstddef>

namespace collc::rt::detail {

/// A thread keeps up to this many bytes of a call's buffers for the next
/// call, and more only while calls keep needing more: repeated calls then
/// allocate nothing (a large buffer taken afresh costs its page faults at
/// every call, 2-5 times the call itself at 128 MiB a block on 4 ranks), and
/// one large call's memory is not held for the life of the thread.
inline constexpr size_t keptAcrossCalls = size_t{64} << 20;

/// Says when buffers holding more than keptAcrossCalls are to be freed: once
/// `idleCalls` calls in a row have needed no more than that.
class KeptBytes {
public:
  static constexpr unsigned idleCalls = 8;
  /// After a call that used `used` bytes of buffers now holding `held`.
  bool release(size_t used, size_t held) {
    smallCalls = used > keptAcrossCalls ? 0 : smallCalls + 1;
    return held > keptAcrossCalls && smallCalls >= idleCalls;
  }

private:
  unsigned smallCalls = 0;
};

} // namespace collc::rt::detail
