#pragma once
// What a thread keeps of a call's memory for the next call (the engine's
// scratch and step bytes, the irregular all-to-all's messages, packed copies
// of an all-to-all-v's sides), each by its own KeptBytes.

#include <cstddef>

namespace collc::rt::detail {

/// A thread keeps up to this many bytes of each kind of buffer for the next
/// call, and more only while calls keep needing more: repeated calls then
/// allocate nothing (a large buffer taken afresh costs its page faults at
/// every call, 10 times the call itself at 128 MiB a block on 4 ranks), and
/// one large call's memory is not held for the life of the thread.
inline constexpr size_t keptAcrossCalls = size_t{64} << 20;

/// Says when buffers holding more than keptAcrossCalls are to be freed (a
/// pool of them down to keptAcrossCalls, largest first; one buffer whole):
/// once `idleCalls` calls in a row of their kind have each used at most half
/// of it. A call of more than half counts as needing the memory, so calls
/// that alternate between sizes near the limit keep what they take.
class KeptBytes {
public:
  static constexpr unsigned idleCalls = 64;
  /// After a call that used `used` bytes of buffers now holding `held`.
  bool release(size_t used, size_t held) {
    smallCalls = used > keptAcrossCalls / 2 ? 0 : smallCalls + 1;
    if (held <= keptAcrossCalls || smallCalls < idleCalls)
      return false;
    smallCalls = 0;
    return true;
  }

private:
  unsigned smallCalls = 0;
};

} // namespace collc::rt::detail
