#include "smt/Solver.h"
#include "smt/Integers.h"
#include "smt/Z3Detail.h"
#include "support/Files.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SHA256.h"

#include <cassert>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

using namespace collc::smt;
using collc::smt::detail::Access;

llvm::StringRef Result::kindName(Kind kind) {
  switch (kind) {
  case Kind::Sat:
    return "sat";
  case Kind::Unsat:
    return "unsat";
  case Kind::Unknown:
    return "unknown";
  case Kind::Error:
    return "error";
  }
  return "?";
}

int64_t Result::value(const Term &t) const {
  assert(isSat() && "value() of a query that is not sat");
  if (t.constant())
    return *t.constant();
  if (!isSat() || !ctx)
    return 0;
  try {
    // A query that folded to true has no model from Z3: an empty model with
    // completion gives every free variable 0, consistently across terms.
    z3::model empty(Access::z3Of(*ctx));
    const z3::model &m = model ? model->model : empty;
    z3::expr v = m.eval(Access::toZ3(t), /*model_completion=*/true);
    if (t.isBool())
      return v.is_true() ? 1 : 0;
    uint64_t bits = 0;
    if (!v.is_numeral_u64(bits))
      return 0;
    return signExtend(bits, t.width());
  } catch (const z3::exception &) {
    return 0;
  }
}

namespace {

std::array<uint8_t, 32> digestOf(llvm::StringRef text) {
  std::array<uint8_t, 32> digest;
  llvm::SHA256 sha;
  sha.update(text);
  llvm::StringRef bytes = sha.final();
  std::copy(bytes.begin(), bytes.end(), digest.begin());
  return digest;
}

} // namespace

bool ProvedQueries::contains(llvm::StringRef queryText) const {
  const std::array<uint8_t, 32> digest = digestOf(queryText);
  std::lock_guard<std::mutex> held(lock);
  return digests.count(digest) != 0;
}

void ProvedQueries::insert(llvm::StringRef queryText) {
  const std::array<uint8_t, 32> digest = digestOf(queryText);
  std::lock_guard<std::mutex> held(lock);
  digests.insert(digest);
}

size_t ProvedQueries::size() const {
  std::lock_guard<std::mutex> held(lock);
  return digests.size();
}

namespace {
constexpr llvm::StringLiteral provedQueriesHeader = "collc proved queries 2";
// Digests of Z3's own printing of each query, which depends on the run:
// read as none.
constexpr llvm::StringLiteral provedQueriesHeaderBefore =
    "collc proved queries 1";

/// Parameter k of `d` (extract's bits, zero_extend's count, ...), whole.
std::string parameterText(z3::context &z, const z3::func_decl &d, unsigned k) {
  switch (Z3_get_decl_parameter_kind(z, d, k)) {
  case Z3_PARAMETER_INT:
    return std::to_string(Z3_get_decl_int_parameter(z, d, k));
  case Z3_PARAMETER_DOUBLE:
    return std::to_string(Z3_get_decl_double_parameter(z, d, k));
  case Z3_PARAMETER_RATIONAL:
    return Z3_get_decl_rational_parameter(z, d, k);
  case Z3_PARAMETER_SYMBOL:
    return z3::symbol(z, Z3_get_decl_symbol_parameter(z, d, k)).str();
  case Z3_PARAMETER_SORT:
    return Z3_sort_to_string(z, Z3_get_decl_sort_parameter(z, d, k));
  case Z3_PARAMETER_AST:
    return Z3_ast_to_string(z, Z3_get_decl_ast_parameter(z, d, k));
  case Z3_PARAMETER_FUNC_DECL:
    return Z3_func_decl_to_string(z, Z3_get_decl_func_decl_parameter(z, d, k));
  }
  return "?";
}

/// The query written out node by node, each node once (a node the query
/// reaches twice is referred to by number), numbered in the order a walk of
/// the assertions first reaches them. Z3's own printing depends on the
/// context's history: fresh names count every fresh name the context made
/// ("d!27"), and which terms it binds with let depends on what else the
/// context holds. This text depends on the query alone, so the same query
/// has the same digest in any run; renaming what the query declares, one
/// to one, keeps its answer, so each is written by its order of appearance.
std::string canonicalText(z3::context &z, llvm::ArrayRef<z3::expr> assertions) {
  std::string out;
  std::unordered_map<unsigned, unsigned> numberOf; // by Z3's AST id
  std::unordered_map<unsigned, unsigned> declared; // by its declaration's
  std::function<unsigned(const z3::expr &)> visit =
      [&](const z3::expr &e) -> unsigned {
    const unsigned id = Z3_get_ast_id(z, e);
    if (auto it = numberOf.find(id); it != numberOf.end())
      return it->second;
    std::string line;
    if (e.is_numeral() || !e.is_app()) {
      line = e.to_string(); // numerals; nothing else we make is not an app
    } else {
      z3::func_decl d = e.decl();
      std::vector<unsigned> args;
      for (unsigned i = 0; i < e.num_args(); ++i)
        args.push_back(visit(e.arg(i)));
      if (d.decl_kind() == Z3_OP_UNINTERPRETED) {
        const unsigned n =
            declared
                .try_emplace(Z3_get_func_decl_id(z, d),
                             static_cast<unsigned>(declared.size()))
                .first->second;
        line = "declared " + std::to_string(n) + " " + e.get_sort().to_string();
      } else
        line = d.name().str();
      for (unsigned k = 0, n = Z3_get_decl_num_parameters(z, d); k < n; ++k)
        line += " " + parameterText(z, d, k);
      for (unsigned a : args)
        line += " #" + std::to_string(a);
    }
    const unsigned number = static_cast<unsigned>(numberOf.size());
    numberOf.emplace(id, number);
    out += std::to_string(number) + " " + line + "\n";
    return number;
  };
  for (const z3::expr &a : assertions)
    out += "assert #" + std::to_string(visit(a)) + "\n";
  return out;
}
} // namespace

llvm::Error ProvedQueries::load(llvm::StringRef path) {
  if (std::string why = notAFileToRead(path); !why.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cannot read '%s': %s", path.str().c_str(),
                                   why.c_str());
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!file) {
    if (file.getError() == std::errc::no_such_file_or_directory)
      return llvm::Error::success();
    return llvm::createStringError(file.getError(), "cannot read '%s': %s",
                                   path.str().c_str(),
                                   file.getError().message().c_str());
  }
  llvm::SmallVector<llvm::StringRef, 0> lines;
  (*file)->getBuffer().split(lines, '\n', -1, /*KeepEmpty=*/false);
  auto bad = [&](size_t line, const char *why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s:%zu: %s",
                                   path.str().c_str(), line, why);
  };
  if (lines.empty())
    return llvm::Error::success(); // an empty file, made for the purpose
  if (lines.front().rtrim() == provedQueriesHeaderBefore)
    return llvm::Error::success();
  if (lines.front().rtrim() != provedQueriesHeader)
    return bad(1, "not a file of proved queries (its first line is not "
                  "'collc proved queries 2')");
  std::vector<std::array<uint8_t, 32>> read;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string bytes;
    llvm::StringRef hex = lines[i].rtrim();
    if (hex.size() != 64 || !llvm::tryGetFromHex(hex, bytes))
      return bad(i + 1, "not a digest (64 hexadecimal digits)");
    read.emplace_back();
    std::copy(bytes.begin(), bytes.end(), read.back().begin());
  }
  std::lock_guard<std::mutex> held(lock);
  digests.insert(read.begin(), read.end());
  return llvm::Error::success();
}

llvm::Error ProvedQueries::save(llvm::StringRef path) {
  if (llvm::Error e = load(path))
    return e;
  std::string text = provedQueriesHeader.str() + "\n";
  {
    std::lock_guard<std::mutex> held(lock);
    for (const std::array<uint8_t, 32> &d : digests)
      text += llvm::toHex(d, /*LowerCase=*/true) + "\n";
  }
  // A file beside it, renamed over it: a reader sees the old set or the
  // new one, never part of either.
  llvm::SmallString<128> temporary;
  int fd = -1;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueFile(path + ".%%%%%%.tmp", fd, temporary))
    return llvm::createStringError(ec, "cannot write beside '%s': %s",
                                   path.str().c_str(), ec.message().c_str());
  {
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    out << text;
    out.close();
    if (out.has_error()) {
      std::error_code ec = out.error();
      out.clear_error();
      llvm::sys::fs::remove(temporary);
      return llvm::createStringError(ec, "cannot write '%s': %s",
                                     temporary.c_str(), ec.message().c_str());
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(temporary, path)) {
    llvm::sys::fs::remove(temporary);
    return llvm::createStringError(ec, "cannot replace '%s': %s",
                                   path.str().c_str(), ec.message().c_str());
  }
  return llvm::Error::success();
}

namespace {

/// Word-level simplification, then elimination of variables that are
/// defined by an equation or unconstrained.
z3::tactic preprocessing(z3::context &z) {
  return z3::tactic(z, "simplify") & z3::tactic(z, "propagate-values") &
         z3::tactic(z, "solve-eqs") & z3::tactic(z, "elim-uncnstr") &
         z3::tactic(z, "simplify");
}

/// First Z3's CDCL(T) core for up to quickWork of Z3's resource units, then
/// bit-blasting to the SAT solver. Small queries (concrete topologies) cost
/// about 1 ms in the core, where the SAT back end's set-up alone takes 3;
/// hard ones (remainders by a symbolic size: ring congestion for p in
/// 2..64) take the SAT solver about half the time of either the core or
/// Z3's QF_BV strategy (0.9 s against 1.6 to 2 s). The limit is Z3's
/// resource count (rlimit), not time, so which strategy answers is the
/// same on any machine under any load; time only ever ends a query as
/// unknown.
constexpr unsigned quickWork = 1000000;
/// Linear arithmetic's share: the most any library query needs is 2.8 M
/// (ring_shift's invariant step), and what runs out of it is spent before
/// the bit-vectors start. The core's simplex takes it, not Z3's QF_LIA
/// strategy, whose fallbacks past the resource limit run on uncounted (the
/// same step: 60 s at 1.7 M units), so that the limit, not the clock,
/// decides when the bit-vectors start.
constexpr unsigned integerWork = 4000000;
z3::solver coreSolver(z3::context &z) {
  return (preprocessing(z) & z3::tactic(z, "smt")).mk_solver();
}
/// The query over the integers, where each assertion has a reading.
std::optional<z3::expr_vector> readAll(detail::IntegerReading &reading,
                                       const z3::expr_vector &query) {
  for (const z3::expr &e : query)
    if (!reading.readable(e))
      return std::nullopt; // before making any term
  z3::expr_vector integers(query.ctx());
  for (const z3::expr &e : query) {
    std::optional<z3::expr> read = reading.read(e);
    if (!read)
      return std::nullopt;
    integers.push_back(*read);
  }
  for (const z3::expr &fact : reading.facts())
    integers.push_back(fact);
  return integers;
}
z3::solver satSolver(z3::context &z) {
  return (preprocessing(z) & z3::tactic(z, "bit-blast") & z3::tactic(z, "sat"))
      .mk_solver();
}

/// Interrupts the context's running check once a time limit has passed.
/// Z3's own timers (the solver's "timeout", try_for) can deadlock in
/// 4.8.10 to 4.8.12 when one expires, in the thread pool behind
/// scoped_timer (Z3Prover/z3#5371), so no query uses them.
class Watchdog {
public:
  Watchdog(z3::context &z, std::chrono::milliseconds limit) : z(z) {
    thread = std::thread([this, limit] {
      std::unique_lock<std::mutex> lock(mutex);
      if (woken.wait_for(lock, limit, [this] { return done; }))
        return;
      expired = true;
      // An interrupt reaches only a check under way: repeat it until the
      // check has returned, in case the first came before it started.
      do
        this->z.interrupt();
      while (!woken.wait_for(lock, std::chrono::milliseconds(10),
                             [this] { return done; }));
    });
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      done = true;
    }
    woken.notify_all();
    thread.join();
  }
  bool fired() {
    std::lock_guard<std::mutex> lock(mutex);
    return expired;
  }

private:
  z3::context &z;
  std::mutex mutex;
  std::condition_variable woken;
  bool done = false, expired = false;
  std::thread thread;
};

} // namespace

std::string Solver::queryTextOf(llvm::ArrayRef<const Term *> live) {
  std::vector<z3::expr> exprs;
  for (const Term *t : live)
    exprs.push_back(Access::toZ3(*t));
  return canonicalText(Access::z3Of(ctx), exprs);
}

void Solver::rememberProved(llvm::ArrayRef<Term> assertions) {
  if (!provedQueries)
    return;
  std::vector<const Term *> live;
  for (const Term &t : assertions) {
    if (t.isFalse())
      return; // check() folds it: nothing to remember
    if (!t.isTrue())
      live.push_back(&t);
  }
  if (!live.empty())
    provedQueries->insert(queryTextOf(live));
}

/// One query's attempts at Z3 (Solver::check): each strategy on a fresh
/// solver, in turn, within the query's time limit and work bound; each
/// attempt leaves its answer in the query's Result.
class Solver::Attempts {
public:
  Attempts(Solver &solver, Result &r, z3::context &z, llvm::StringRef name,
           std::chrono::steady_clock::time_point start, unsigned timeoutMs,
           unsigned work)
      : solver(solver), r(r), z(z), name(name), start(start),
        timeoutMs(timeoutMs), work(work),
        coreWork(work ? std::min(work, quickWork) : quickWork), reading(z) {}

  /// The integers first, then the bit-vectors until one answers.
  void run(const z3::expr_vector &query) {
    overIntegers(query);
    if (r.kindValue != Result::Kind::Sat && r.kindValue != Result::Kind::Unsat)
      overBitVectors(query);
  }

private:
  /// One attempt, until it answers or `limitMs` passes (0: no limit).
  void attempt(z3::solver s, unsigned limitMs, unsigned attemptWork,
               const z3::expr_vector &assertions);
  void overIntegers(const z3::expr_vector &query);
  void overBitVectors(const z3::expr_vector &query);

  /// What is left of the query's time limit (0: no limit).
  unsigned left() const {
    if (timeoutMs == 0)
      return 0;
    auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count();
    return spent >= timeoutMs ? 1 : timeoutMs - static_cast<unsigned>(spent);
  }
  /// Out of time, or of the work the caller allows: nothing more is tried.
  bool spent() const {
    return r.reasonValue.find("timeout") != std::string::npos ||
           r.reasonValue.find("canceled") != std::string::npos ||
           r.reasonValue == "work limit";
  }

  Solver &solver;
  Result &r;
  z3::context &z;
  llvm::StringRef name;
  std::chrono::steady_clock::time_point start;
  unsigned timeoutMs;
  unsigned work;
  unsigned coreWork;
  // Lives until the last attempt: its terms, freed earlier, would give
  // their ids to the bit-vector attempts' and change Z3's search.
  detail::IntegerReading reading;
};

void Solver::Attempts::attempt(z3::solver s, unsigned limitMs,
                               unsigned attemptWork,
                               const z3::expr_vector &assertions) {
  if (attemptWork != 0)
    s.set("rlimit", attemptWork);
  s.add(assertions);
  if (solver.dump && solver.verbose)
    *solver.verbose << "; query " << name << "\n" << s.to_smt2() << "\n";
  r.model.reset();
  r.reasonValue.clear();
  std::optional<Watchdog> watchdog;
  if (limitMs != 0)
    watchdog.emplace(z, std::chrono::milliseconds(limitMs));
  z3::check_result answer = z3::unknown;
  try {
    answer = s.check();
  } catch (const z3::exception &) {
    // Z3 may throw where an interrupt stops it.
    if (!watchdog || !watchdog->fired())
      throw;
  }
  bool expired = watchdog && watchdog->fired();
  watchdog.reset();
  // Z3 counts the context's resources since it began.
  const z3::stats stats = s.statistics();
  for (unsigned i = 0; i < stats.size(); ++i)
    if (stats.key(i) == "rlimit count") {
      const uint64_t count = static_cast<uint64_t>(
          stats.is_uint(i) ? stats.uint_value(i) : stats.double_value(i));
      r.workValue +=
          count > solver.contextWork ? count - solver.contextWork : 0;
      solver.contextWork = std::max(solver.contextWork, count);
    }
  switch (answer) {
  case z3::sat:
    r.kindValue = Result::Kind::Sat;
    r.model = std::make_shared<detail::Model>(detail::Model{s.get_model()});
    break;
  case z3::unsat:
    r.kindValue = Result::Kind::Unsat;
    break;
  case z3::unknown:
    r.kindValue = Result::Kind::Unknown;
    r.reasonValue = expired ? std::string("timeout") : s.reason_unknown();
    // Z3 says "canceled" when it reaches the resource limit too.
    if (!expired && attemptWork != 0 && r.reasonValue == "canceled")
      r.reasonValue = "work limit";
    break;
  }
}

/// A linear query first over the integers (Integers.h). Its unsat is the
/// query's; its model, pinned on the bit-vector query, is a counterexample
/// at once where it is one there.
void Solver::Attempts::overIntegers(const z3::expr_vector &query) {
  try {
    if (std::optional<z3::expr_vector> integers = readAll(reading, query)) {
      attempt(coreSolver(z), left(),
              work ? std::min(work, integerWork) : integerWork, *integers);
      if (r.kindValue == Result::Kind::Sat) {
        z3::expr_vector pinned(z); // not a copy: z3++ would share the vector
        for (const z3::expr &e : query)
          pinned.push_back(e);
        for (const auto &[bitVec, integer] : reading.variables()) {
          int64_t value = 0;
          if (r.model->model.eval(integer, true).is_numeral_i64(value))
            pinned.push_back(bitVec ==
                             z.bv_val(value, bitVec.get_sort().bv_size()));
        }
        attempt(coreSolver(z), left(), coreWork, pinned);
        // Unsat here says only that this model was not one.
        if (r.kindValue == Result::Kind::Unsat)
          r.kindValue = Result::Kind::Unknown;
      } else if (r.kindValue == Result::Kind::Unsat) {
        r.overIntegersValue = true;
      }
    }
  } catch (const z3::exception &) {
    // Whatever stopped the reading, the bit-vectors still answer.
    r.kindValue = Result::Kind::Unknown;
    r.model.reset();
  }
}

void Solver::Attempts::overBitVectors(const z3::expr_vector &query) {
  attempt(coreSolver(z), left(), coreWork, query);
  // The core out of its own share of the work goes on to bit-blasting.
  const bool coreShareSpent =
      r.reasonValue == "work limit" && (work == 0 || work > quickWork);
  if (r.kindValue == Result::Kind::Unknown && (coreShareSpent || !spent()))
    attempt(satSolver(z), left(), work, query);
  // Should the pipeline give up other than by running out, Z3's own QF_BV
  // strategy has its turn.
  if (r.kindValue == Result::Kind::Unknown && !spent())
    attempt(z3::solver(z, "QF_BV"), left(), work, query);
}

Result Solver::check(llvm::StringRef name, llvm::ArrayRef<Term> assertions,
                     unsigned timeoutMs, unsigned work) {
  Result r;
  r.nameValue = name.str();
  r.ctx = &ctx;

  // Fold first: a false conjunct answers unsat and a fully true conjunction
  // answers sat, both without calling Z3.
  std::vector<const Term *> live;
  bool foldedFalse = false;
  for (const Term &t : assertions) {
    assert(t.isBool() && "asserting a bit-vector");
    if (t.isFalse())
      foldedFalse = true;
    else if (!t.isTrue())
      live.push_back(&t);
  }
  if (foldedFalse || live.empty()) {
    r.kindValue = foldedFalse ? Result::Kind::Unsat : Result::Kind::Sat;
    r.foldedValue = true;
    record(r);
    return r;
  }

  auto start = std::chrono::steady_clock::now();
  std::string queryText;
  try {
    z3::context &z = Access::z3Of(ctx);
    if (provedQueries) {
      queryText = queryTextOf(live);
      if (provedQueries->contains(queryText)) {
        r.kindValue = Result::Kind::Unsat;
        r.provedBeforeValue = true;
        record(r);
        return r;
      }
    }
    // A fresh solver per attempt keeps queries independent.
    z3::expr_vector query(z);
    for (const Term *t : live)
      query.push_back(Access::toZ3(*t));
    Attempts(*this, r, z, name, start, timeoutMs, work).run(query);
  } catch (const z3::exception &e) {
    r.kindValue = Result::Kind::Error;
    r.reasonValue = e.msg();
    r.model.reset();
  } catch (const std::exception &e) {
    r.kindValue = Result::Kind::Error;
    r.reasonValue = e.what();
    r.model.reset();
  }
  r.secondsValue =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (provedQueries && r.isUnsat())
    provedQueries->insert(queryText);
  record(r);
  return r;
}

void Solver::record(const Result &r) {
  QueryStats &s = statsByName[r.name()];
  ++s.queries;
  s.seconds += r.seconds();
  s.folded += r.folded();
  s.provedBefore += r.provedBefore();
  switch (r.kind()) {
  case Result::Kind::Sat:
    ++s.sat;
    break;
  case Result::Kind::Unsat:
    ++s.unsat;
    break;
  case Result::Kind::Unknown:
    ++s.unknown;
    break;
  case Result::Kind::Error:
    ++s.error;
    break;
  }
  if (verbose) {
    *verbose << "query " << r.name() << ": " << Result::kindName(r.kind());
    if (r.folded())
      *verbose << " (folded)";
    else if (r.provedBefore())
      *verbose << " (proved before)";
    else
      *verbose << llvm::format(" (%.3f s, work %llu%s)", r.seconds(),
                               static_cast<unsigned long long>(r.work()),
                               r.overIntegers() ? ", over the integers" : "");
    if (!r.reason().empty())
      *verbose << ": " << r.reason();
    *verbose << "\n";
  }
}

void Solver::printStats(llvm::raw_ostream &os) const {
  std::vector<llvm::StringRef> names;
  for (const auto &entry : statsByName)
    names.push_back(entry.getKey());
  llvm::sort(names);
  for (llvm::StringRef n : names) {
    const QueryStats &s = statsByName.find(n)->second;
    os << llvm::format("%-24s %5u queries %5u sat %5u unsat %3u unknown "
                       "%3u error %5u folded %8.3f s\n",
                       n.str().c_str(), s.queries, s.sat, s.unsat, s.unknown,
                       s.error, s.folded, s.seconds);
  }
}
