#pragma once
// Named satisfiability queries. Every query has a name, used for statistics
// and for verbose printing; its result separates Sat (with a model), Unsat,
// Unknown (timeout or incompleteness, with Z3's reason) and Error (a Z3
// exception, with its message). Z3 exceptions never leave this module.

#include "smt/Term.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace collc::smt {

namespace detail {
struct Model; // holds a z3::model
} // namespace detail

class Result {
public:
  enum class Kind { Sat, Unsat, Unknown, Error };

  Kind kind() const { return kindValue; }
  bool isSat() const { return kindValue == Kind::Sat; }
  bool isUnsat() const { return kindValue == Kind::Unsat; }
  bool isUnknown() const { return kindValue == Kind::Unknown; }
  bool isError() const { return kindValue == Kind::Error; }

  /// Unknown: Z3's reason ("timeout", "canceled", ...); Error: the message.
  const std::string &reason() const { return reasonValue; }
  /// The query's name.
  const std::string &name() const { return nameValue; }
  /// Solver time in seconds (0 when the query folded to a constant).
  double seconds() const { return secondsValue; }
  /// Z3's resource count over the query's attempts (its rlimit units):
  /// the machine-independent measure of what it cost.
  uint64_t work() const { return workValue; }
  /// Whether the assertions folded to a constant and Z3 was not called.
  bool folded() const { return foldedValue; }
  /// Unsat because the same query was proved before (ProvedQueries); Z3
  /// was not called.
  bool provedBefore() const { return provedBeforeValue; }
  /// Unsat by linear arithmetic over the integers, with no bit-blasting.
  bool overIntegers() const { return overIntegersValue; }

  /// Sat only: the value of `t` in the model (booleans as 0/1). Variables
  /// the model leaves free read as 0, consistently across terms.
  int64_t value(const Term &t) const;

  static llvm::StringRef kindName(Kind kind);

private:
  friend class Solver;
  Kind kindValue = Kind::Error;
  std::string reasonValue;
  std::string nameValue;
  double secondsValue = 0;
  uint64_t workValue = 0;
  bool foldedValue = false;
  bool provedBeforeValue = false;
  bool overIntegersValue = false;
  Context *ctx = nullptr;
  std::shared_ptr<detail::Model> model;
};

/// Per-name query counts and times.
struct QueryStats {
  unsigned queries = 0;
  unsigned sat = 0, unsat = 0, unknown = 0, error = 0;
  unsigned folded = 0;       // answered without calling Z3
  unsigned provedBefore = 0; // answered from ProvedQueries
  double seconds = 0;
};

/// Queries Z3 has answered unsat, remembered by the SHA-256 of their text
/// (Solver::queryTextOf: every node once, with its operator, parameters and
/// sort, numbered by the query alone), so equal text is the same question,
/// whichever context or schedule asked it.
/// Verifying schedules that share parts (a composition and its parts, two
/// compositions with a part in common) asks the same slow queries again;
/// solvers that share one set answer those at once.
///
/// A build keeps the set between runs in a file (load, save): one digest
/// per line under a header. A digest names a question, not the schedule
/// that asked it, so the file stays valid whatever the specs become;
/// deleting it only costs time.
/// Solvers on several threads may share one set.
class ProvedQueries {
public:
  /// A query's text (Solver::queryTextOf), kept as its SHA-256 digest.
  bool contains(llvm::StringRef queryText) const;
  void insert(llvm::StringRef queryText);
  size_t size() const;

  /// Adds the digests `path` holds (a file save() wrote); a file that does
  /// not exist, or is empty, adds none. Anything else there is an error
  /// naming the line.
  llvm::Error load(llvm::StringRef path);
  /// Writes the set, with what `path` holds by then (another run may have
  /// added to it), to `path`, replacing the file in one step.
  llvm::Error save(llvm::StringRef path);

private:
  mutable std::mutex lock;
  std::set<std::array<uint8_t, 32>> digests;
};

class Solver {
public:
  explicit Solver(Context &ctx) : ctx(ctx) {}

  /// Is the conjunction of `assertions` satisfiable? `timeoutMs` = 0 means
  /// no limit. `work`, when not 0, bounds each strategy's attempt in Z3's
  /// resource units (about 8 million a second here): unlike time, the same
  /// bound on any machine, for a question whose answer decides what is done
  /// next. Each call uses a fresh Z3 solver, so queries are independent.
  Result check(llvm::StringRef name, llvm::ArrayRef<Term> assertions,
               unsigned timeoutMs, unsigned work = 0);

  /// Print one line per query (name, result, time) to `os`; with
  /// `dumpSmt`, also the query in SMT-LIB form. Null turns printing off.
  void setVerbose(llvm::raw_ostream *os, bool dumpSmt = false) {
    verbose = os;
    dump = dumpSmt;
  }

  /// Answer queries in `proved` as unsat without calling Z3, and add those
  /// Z3 answers unsat to it. Null (the default) turns this off.
  void rememberIn(ProvedQueries *proved) { provedQueries = proved; }
  /// Adds `assertions` to those proved (rememberIn) where the caller has
  /// shown them unsat by parts that cover every case, each answered unsat:
  /// a later check of the whole asks Z3 nothing, however a limited
  /// attempt at it would have gone.
  void rememberProved(llvm::ArrayRef<Term> assertions);

  const llvm::StringMap<QueryStats> &stats() const { return statsByName; }
  void printStats(llvm::raw_ostream &os) const;

private:
  class Attempts; // one query's attempts at Z3 (Solver.cpp)
  void record(const Result &r);
  /// The query as text that depends on it alone, not on the context's
  /// history: what ProvedQueries keeps the digest of.
  std::string queryTextOf(llvm::ArrayRef<const Term *> live);

  Context &ctx;
  llvm::raw_ostream *verbose = nullptr;
  bool dump = false;
  ProvedQueries *provedQueries = nullptr;
  llvm::StringMap<QueryStats> statsByName;
  uint64_t contextWork = 0; // Z3's resource count when the last query ended
};

} // namespace collc::smt
