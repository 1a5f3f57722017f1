#pragma once
// Verdicts shared by the two checkers of a schedule: the simulator (exact
// chunk flow on instantiated schedules) and the prover (Z3 over symbolic
// ranks and sizes). Both fill the same structures, so the CLI prints one
// format and the tests can hold the two against each other. It lives with
// the IR, below both checkers; verify/ assembles their verdicts into a
// report.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace collc::verify {

enum class Property { Causality, Contention, Congestion, Matching, Correctness };
enum class Status { Proved, Counterexample, Unknown, Error };

inline const char *propertyName(Property p) {
  switch (p) {
  case Property::Causality:
    return "causality";
  case Property::Contention:
    return "contention";
  case Property::Congestion:
    return "congestion";
  case Property::Matching:
    return "matching";
  case Property::Correctness:
    return "correctness";
  }
  return "?";
}

inline const char *statusName(Status s) {
  switch (s) {
  case Status::Proved:
    return "proved";
  case Status::Counterexample:
    return "counterexample";
  case Status::Unknown:
    return "unknown";
  case Status::Error:
    return "error";
  }
  return "?";
}

/// The worse of two verdicts, for a whole made of parts: an error, then a
/// counterexample, then unknown, then proved.
inline Status worse(Status a, Status b) {
  auto rank = [](Status s) {
    return s == Status::Error            ? 3
           : s == Status::Counterexample ? 2
           : s == Status::Unknown        ? 1
                                         : 0;
  };
  return rank(a) >= rank(b) ? a : b;
}

struct TransferRef {
  int64_t src = 0;
  int64_t dst = 0;
  friend bool operator==(const TransferRef &, const TransferRef &) = default;
};

/// " (i = 0, j = 1)": a step's loop values as messages print them after its
/// number; empty when the step is in no loop.
inline std::string
loopValuesText(const std::vector<std::pair<std::string, int64_t>> &loopVars) {
  if (loopVars.empty())
    return "";
  std::string out = " (";
  for (size_t i = 0; i < loopVars.size(); ++i)
    out += (i ? ", " : "") + loopVars[i].first + " = " +
           std::to_string(loopVars[i].second);
  return out + ")";
}

/// A concrete instance that violates a property. Fields that do not apply to
/// the property are left empty.
struct Counterexample {
  std::vector<std::pair<std::string, int64_t>> params; // e.g. {"d", 3}
  int64_t p = 0;                // number of ranks
  int64_t step = 0;             // 1-based step number in the instantiated schedule
  std::vector<std::pair<std::string, int64_t>> loopVars; // values at that step
  std::optional<int64_t> rank;  // the offending rank (sender or receiver)
  std::optional<std::pair<int64_t, int64_t>> channel; // congestion: from -> to
  int64_t load = 0;             // congestion: messages on the channel
  std::vector<TransferRef> transfers; // the transfers involved
  std::string chunk;            // correctness/causality: the chunk, printed
  std::string expected;         // correctness: contributions expected
  std::string actual;           // correctness: contributions held
  std::string message;          // one line: what went wrong, e.g.
                                // "channel 3->4 carries 4 messages"

  /// "channel 3->4 carries 4 messages": a congestion's channel and load, as
  /// every checker and the report say it.
  std::string channelLoad() const {
    return channel ? "channel " + std::to_string(channel->first) + "->" +
                         std::to_string(channel->second) + " carries " +
                         std::to_string(load) + " messages"
                   : std::string();
  }
};

struct PropertyResult {
  Property property = Property::Correctness;
  Status status = Status::Unknown;
  std::string method;     // "z3", "simulation", ...
  std::string detail;     // for Unknown/Error: why (timeout, unsupported, ...)
  std::optional<Counterexample> counterexample;
  int64_t maxLoad = 1;    // congestion: the most loaded channel's load seen
};

} // namespace collc::verify
