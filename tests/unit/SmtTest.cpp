// The Z3 wrapper: constant folding agrees with Z3, folded queries never reach
// the solver, and every solver answer (sat with a model, unsat, unknown on a
// timeout) arrives as the matching Result kind.

#include "smt/Solver.h"
#include "smt/Term.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace collc::smt;

namespace {

const std::vector<int64_t> edgeValues = {0,
                                         1,
                                         -1,
                                         2,
                                         -2,
                                         7,
                                         -7,
                                         63,
                                         64,
                                         65,
                                         -64,
                                         1000003,
                                         INT64_MIN,
                                         INT64_MAX,
                                         INT64_MIN + 1,
                                         INT64_MAX - 1,
                                         int64_t(1) << 32,
                                         -(int64_t(1) << 40)};

struct NamedOp {
  const char *name;
  std::function<Term(const Term &, const Term &)> apply;
};

const std::vector<NamedOp> binaryOps = {
    {"+", [](const Term &a, const Term &b) { return a + b; }},
    {"-", [](const Term &a, const Term &b) { return a - b; }},
    {"*", [](const Term &a, const Term &b) { return a * b; }},
    {"sdiv", [](const Term &a, const Term &b) { return sdiv(a, b); }},
    {"srem", [](const Term &a, const Term &b) { return srem(a, b); }},
    {"shl", [](const Term &a, const Term &b) { return shl(a, b); }},
    {"ashr", [](const Term &a, const Term &b) { return ashr(a, b); }},
    {"&", [](const Term &a, const Term &b) { return a & b; }},
    {"|", [](const Term &a, const Term &b) { return a | b; }},
    {"^", [](const Term &a, const Term &b) { return a ^ b; }},
    {"smin", [](const Term &a, const Term &b) { return smin(a, b); }},
    {"smax", [](const Term &a, const Term &b) { return smax(a, b); }},
    {"==", [](const Term &a, const Term &b) { return a == b; }},
    {"!=", [](const Term &a, const Term &b) { return a != b; }},
    {"slt", [](const Term &a, const Term &b) { return slt(a, b); }},
    {"sle", [](const Term &a, const Term &b) { return sle(a, b); }},
    {"sgt", [](const Term &a, const Term &b) { return sgt(a, b); }},
    {"sge", [](const Term &a, const Term &b) { return sge(a, b); }},
};

} // namespace

// Folding on constants must give exactly what Z3 computes for the same
// operator on variables fixed to those constants, including SMT-LIB's
// division by zero and shifts by the width or more, at 64 bits and at
// narrower widths (where the edge values wrap).
TEST(Smt, FoldingAgreesWithZ3OnEdgeValues) {
  Context ctx;
  Solver solver(ctx);
  for (unsigned width : {64u, 13u, 8u}) {
    Term x = ctx.bitVecVar("x", width);
    for (int64_t a : edgeValues) {
      // One query per left operand: y ranges over the right operands
      // through one variable per value.
      std::vector<Term> ys, facts = {x == a};
      for (int64_t b : edgeValues) {
        ys.push_back(ctx.bitVecVar("y", width));
        facts.push_back(ys.back() == b);
      }
      Result r = solver.check("fix", facts, 0);
      ASSERT_TRUE(r.isSat());
      EXPECT_EQ(r.value(x), signExtend(static_cast<uint64_t>(a), width));
      for (size_t j = 0; j < edgeValues.size(); ++j) {
        int64_t b = edgeValues[j];
        for (const NamedOp &op : binaryOps) {
          Term folded = op.apply(ctx.bitVec(a, width), ctx.bitVec(b, width));
          ASSERT_TRUE(folded.constant()) << op.name;
          Term symbolic = op.apply(x, ys[j]);
          ASSERT_FALSE(symbolic.constant()) << op.name;
          EXPECT_EQ(*folded.constant(), r.value(symbolic))
              << a << " " << op.name << " " << b << " at " << width << " bits";
        }
      }
      Term negated = -ctx.bitVec(a, width), inverted = ~ctx.bitVec(a, width);
      EXPECT_EQ(*negated.constant(), r.value(-x)) << "-" << a;
      EXPECT_EQ(*inverted.constant(), r.value(~x)) << "~" << a;
    }
  }
}

// Constants are held sign-extended from their width.
TEST(Smt, NarrowConstantsWrap) {
  Context ctx;
  EXPECT_EQ(ctx.bitVec(127, 8).constant(), 127);
  EXPECT_EQ(ctx.bitVec(128, 8).constant(), -128);
  EXPECT_EQ(ctx.bitVec(-129, 8).constant(), 127);
  EXPECT_EQ((ctx.bitVec(100, 8) + ctx.bitVec(100, 8)).constant(), -56);
  EXPECT_EQ(ctx.bitVecVar("x", 8).width(), 8u);
  EXPECT_TRUE(fitsSigned(-128, 8));
  EXPECT_FALSE(fitsSigned(128, 8));
  EXPECT_TRUE(fitsSigned(INT64_MIN, 64));
}

TEST(Smt, BooleanConnectivesFold) {
  Context ctx;
  Term t = ctx.boolean(true), f = ctx.boolean(false), b = ctx.boolVar("b");
  EXPECT_TRUE((t && t).isTrue());
  EXPECT_TRUE((t && f).isFalse());
  EXPECT_TRUE((b && f).isFalse());
  EXPECT_TRUE((b || t).isTrue());
  EXPECT_TRUE((!f).isTrue());
  EXPECT_TRUE(implies(f, b).isTrue());
  EXPECT_EQ(ite(t, ctx.bitVec(3), ctx.bitVec(4)).constant(), 3);
  EXPECT_EQ(ite(f, ctx.bitVec(3), ctx.bitVec(4)).constant(), 4);
  EXPECT_TRUE(ctx.all({}).isTrue());
  EXPECT_TRUE(ctx.any({}).isFalse());
  EXPECT_TRUE(ctx.all({t, f, b}).isFalse());
  EXPECT_TRUE(ctx.any({f, b, t}).isTrue());
  // Not constant: the variable survives.
  EXPECT_FALSE((b && t).constant());
  EXPECT_FALSE(ctx.any({f, b}).constant());
}

// Solvers that share a ProvedQueries set answer a query one of them proved
// unsat without Z3, from any context and whatever it built before. The same
// text at another width is another question: x > 127 has no 8-bit answer but a
// 16-bit one, and it must reach Z3 and come back sat. Sat answers are not
// remembered.
TEST(Smt, ProvedQueriesAnswerOnlyTheSameQuestion) {
  ProvedQueries proved;
  struct Asker {
    Context ctx;
    Solver solver{ctx};
    Term x, y;
    Result result;
    std::vector<Term> kept;
    // Terms built before the query (`history`: variables named as the
    // query's, so they are numbered otherwise, its variables made in the
    // other order, so Z3's ids order them otherwise, terms that use its
    // parts and stay alive, and a query solved before, after which Z3's
    // printing binds other terms with let) must not make it another
    // question.
    Asker(ProvedQueries &proved, unsigned width, int history = 0) {
      for (int i = 0; i < history; ++i)
        kept.push_back(ctx.bitVecVar("x", width) * ctx.bitVec(i + 3, width));
      if (history)
        y = ctx.bitVecVar("y", width);
      x = ctx.bitVecVar("x", width);
      if (!history)
        y = ctx.bitVecVar("y", width);
      Term twice = x + x;
      for (int i = 0; i < history; ++i)
        kept.push_back(twice * kept[static_cast<size_t>(i)]);
      if (history)
        (void)solver.check("before", {slt(twice * twice, kept.back())}, 10000);
      solver.rememberIn(&proved);
      result = solver.check("above_127",
                            {slt(ctx.bitVec(127, width), x),
                             slt(twice, twice * twice),
                             slt(history ? y * x : x * y, x)},
                            10000);
    }
  };
  Asker first(proved, 8);
  EXPECT_TRUE(first.result.isUnsat());
  EXPECT_FALSE(first.result.provedBefore());
  EXPECT_EQ(proved.size(), 1u);

  Asker again(proved, 8, /*history=*/5);
  EXPECT_TRUE(again.result.isUnsat());
  EXPECT_TRUE(again.result.provedBefore());
  EXPECT_EQ(again.result.seconds(), 0.0);
  EXPECT_EQ(again.solver.stats().find("above_127")->second.provedBefore, 1u);

  Asker wider(proved, 16);
  ASSERT_TRUE(wider.result.isSat());
  EXPECT_FALSE(wider.result.provedBefore());
  EXPECT_GT(wider.result.value(wider.x), 127);
  EXPECT_EQ(proved.size(), 1u);
}

// The set kept in a file: what one run saves the next loads, a save adds to
// what the file holds by then (two runs sharing it keep both), and a file
// that is not one is an error naming the line.
TEST(Smt, ProvedQueriesKeptInAFile) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("proved", dir));
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, "proved.txt");

  ProvedQueries fresh;
  ASSERT_FALSE(static_cast<bool>(fresh.load(path))); // none yet: empty
  EXPECT_EQ(fresh.size(), 0u);

  ProvedQueries first, second;
  first.insert("(assert false)");
  second.insert("(assert (= 1 2))");
  ASSERT_FALSE(static_cast<bool>(first.save(path)));
  ASSERT_FALSE(static_cast<bool>(second.save(path)));

  ProvedQueries loaded;
  ASSERT_FALSE(static_cast<bool>(loaded.load(path)));
  EXPECT_EQ(loaded.size(), 2u);
  EXPECT_TRUE(loaded.contains("(assert false)"));
  EXPECT_TRUE(loaded.contains("(assert (= 1 2))"));
  EXPECT_FALSE(loaded.contains("(assert (= 1 3))"));

  auto loadText = [&](llvm::StringRef text) {
    {
      std::error_code ec;
      llvm::raw_fd_ostream out(path, ec);
      EXPECT_FALSE(ec);
      out << text;
    }
    ProvedQueries q;
    return llvm::toString(q.load(path));
  };
  EXPECT_EQ(loadText(""), ""); // empty: no digests, no error
  EXPECT_NE(loadText("not this\n")
                .find("proved.txt:1: not a file of proved "
                      "queries"),
            std::string::npos);
  EXPECT_NE(
      loadText("collc proved queries 2\n" + std::string(64, 'a') + "\nabc\n")
          .find("proved.txt:3: not a digest"),
      std::string::npos);
  // Digests of Z3's own printing, which depended on the run: read as none.
  EXPECT_EQ(loadText("collc proved queries 1\n" + std::string(64, 'a') + "\n"),
            "");
  llvm::sys::fs::remove_directories(dir);
}

// A query whose assertions fold to false is unsat without calling Z3.
TEST(Smt, QueryFoldingToFalseSkipsTheSolver) {
  Context ctx;
  Solver solver(ctx);
  Term x = ctx.bitVecVar("x");
  Term never = slt(ctx.bitVec(5), ctx.bitVec(3)) && (x == 1);
  ASSERT_TRUE(never.isFalse());
  Result r = solver.check("folds_false", {x == 2, never}, 1000);
  EXPECT_TRUE(r.isUnsat());
  EXPECT_TRUE(r.folded());
  EXPECT_EQ(r.seconds(), 0.0);
  const QueryStats &stats = solver.stats().find("folds_false")->second;
  EXPECT_EQ(stats.queries, 1u);
  EXPECT_EQ(stats.folded, 1u);
  EXPECT_EQ(stats.unsat, 1u);

  // All true: sat, and terms over free variables still evaluate coherently.
  Result trivial = solver.check("folds_true", {ctx.boolean(true)}, 1000);
  EXPECT_TRUE(trivial.isSat());
  EXPECT_TRUE(trivial.folded());
  EXPECT_EQ(trivial.value(x + 5) - trivial.value(x), 5);
}

TEST(Smt, SatGivesAModel) {
  Context ctx;
  Solver solver(ctx);
  Term x = ctx.bitVecVar("x"), y = ctx.bitVecVar("y");
  Result r = solver.check("model",
                          {x * y == 391, sgt(x, 1), sgt(y, 1), slt(x, y),
                           slt(x, 1000), slt(y, 1000)},
                          10000);
  ASSERT_TRUE(r.isSat()) << r.reason();
  EXPECT_FALSE(r.folded());
  EXPECT_EQ(r.value(x), 17); // 391 = 17 * 23
  EXPECT_EQ(r.value(y), 23);
  EXPECT_EQ(r.value(x * y), 391);
  EXPECT_EQ(r.value(slt(x, y)), 1);
  EXPECT_EQ(r.value(x == y), 0);
}

TEST(Smt, UnsatIsUnsat) {
  Context ctx;
  Solver solver(ctx);
  Term x = ctx.bitVecVar("x");
  // Signed overflow is the only way x + 1 < x: excluded.
  Result r = solver.check("no_wrap", {slt(x + 1, x), x != INT64_MAX}, 10000);
  EXPECT_TRUE(r.isUnsat());
  EXPECT_FALSE(r.folded());
  // Without the exclusion it is sat, at INT64_MAX.
  Result w = solver.check("wraps", {slt(x + 1, x)}, 10000);
  ASSERT_TRUE(w.isSat());
  EXPECT_EQ(w.value(x), INT64_MAX);
}

// Factoring a product of two 31-bit primes is far beyond 1 ms: Z3's
// timeout must come back as Unknown with its reason, never as a verdict.
TEST(Smt, TimeoutIsUnknown) {
  Context ctx;
  Solver solver(ctx);
  Term x = ctx.bitVecVar("x"), y = ctx.bitVecVar("y");
  const int64_t n = int64_t(2147483629) * int64_t(2147483587);
  Result r = solver.check("factor",
                          {x * y == n, sgt(x, 1), sgt(y, 1),
                           slt(x, int64_t(1) << 32), slt(y, int64_t(1) << 32)},
                          1);
  EXPECT_TRUE(r.isUnknown()) << Result::kindName(r.kind()).str();
  EXPECT_EQ(r.reason(), "timeout");
  EXPECT_EQ(solver.stats().find("factor")->second.unknown, 1u);
  // The interrupt ends that query only: the next one on the context runs.
  Result next = solver.check("after", {x == 3, y == x + 1}, 1000);
  ASSERT_TRUE(next.isSat()) << next.reason();
  EXPECT_EQ(next.value(y), 4);
}

// A bound of work (Z3's resource count) ends a query as unknown at the same
// point on any machine, and a query's work is the same on every run: what
// such a bound decides (which strategy answers, whether a query is split,
// which receivers name their senders in emitted code) does not depend on
// the machine's load.
TEST(Smt, WorkLimitIsDeterministic) {
  // A fresh context each time; the result's kind, reason and work outlive it.
  struct Outcome {
    Result::Kind kind;
    std::string reason;
    uint64_t work;
  };
  auto factor = [](int64_t n, unsigned timeoutMs) {
    Context ctx;
    Solver solver(ctx);
    Term x = ctx.bitVecVar("x"), y = ctx.bitVecVar("y");
    Result r =
        solver.check("factor",
                     {x * y == n, sgt(x, 1), sgt(y, 1),
                      slt(x, int64_t(1) << 32), slt(y, int64_t(1) << 32)},
                     timeoutMs, 2000000);
    return Outcome{r.kind(), r.reason(), r.work()};
  };
  const int64_t hard = int64_t(2147483629) * int64_t(2147483587);
  Outcome first = factor(hard, 600000), second = factor(hard, 600000);
  EXPECT_EQ(first.kind, Result::Kind::Unknown);
  EXPECT_EQ(first.reason, "work limit");
  EXPECT_EQ(first.work, second.work);
  EXPECT_GE(first.work, 2000000u);
  // An easy query's work, counted the same each time.
  Outcome a = factor(391, 0), b = factor(391, 0);
  EXPECT_EQ(a.kind, Result::Kind::Sat) << a.reason;
  EXPECT_EQ(a.work, b.work);
}

TEST(Smt, ManyShortTimeoutsNeverHang) {
  // Z3's own timers deadlock now and then when they expire; the solver's
  // limits use its own watchdog, so a hundred expiries all return.
  Context ctx;
  Solver solver(ctx);
  Term x = ctx.bitVecVar("x"), y = ctx.bitVecVar("y");
  const int64_t n = int64_t(2147483629) * int64_t(2147483587);
  for (int i = 0; i < 100; ++i) {
    Result r = solver.check("factor", {x * y == n, sgt(x, 1), sgt(y, 1),
                                       slt(x, int64_t(1) << 32),
                                       slt(y, int64_t(1) << 32)},
                            1 + i % 3);
    ASSERT_TRUE(r.isUnknown()) << i;
  }
}

TEST(Smt, VerboseNamesEveryQuery) {
  Context ctx;
  Solver solver(ctx);
  std::string text;
  llvm::raw_string_ostream os(text);
  solver.setVerbose(&os);
  Term x = ctx.bitVecVar("x");
  solver.check("first_query", {x == 3}, 1000);
  solver.check("second_query", {ctx.boolean(false)}, 1000);
  os.flush();
  EXPECT_NE(text.find("query first_query: sat"), std::string::npos) << text;
  EXPECT_NE(text.find("query second_query: unsat (folded)"), std::string::npos)
      << text;
  std::string stats;
  llvm::raw_string_ostream so(stats);
  solver.printStats(so);
  so.flush();
  EXPECT_NE(stats.find("first_query"), std::string::npos);
  EXPECT_NE(stats.find("second_query"), std::string::npos);
}

TEST(Smt, PrintShowsConstantsAndTerms) {
  Context ctx;
  EXPECT_EQ(ctx.bitVec(-5).print(), "-5");
  EXPECT_EQ(ctx.boolean(true).print(), "true");
  Term x = ctx.bitVecVar("rank");
  EXPECT_NE((x + 1).print().find("bvadd"), std::string::npos);
  EXPECT_NE(x.print().find("rank"), std::string::npos);
}

/// For each number, whether its quotient and remainder by `radix` are
/// Z3's own (bvsdiv, bvsrem) under `range`: a variable equal to the number
/// divides through Z3's circuit; a model is printed with `shown`'s values.
void expectDivisionAgrees(Context &ctx, Solver &solver, const Term &radix,
                          llvm::ArrayRef<std::pair<std::string, Term>> numbers,
                          llvm::ArrayRef<Term> range,
                          llvm::ArrayRef<std::pair<std::string, Term>> shown) {
  for (const auto &[text, y] : numbers) {
    SCOPED_TRACE(text);
    Term same = ctx.bitVecVar("same", y.width());
    std::vector<Term> query(range.begin(), range.end());
    query.push_back(same == y);
    query.push_back(sdiv(same, radix) != sdiv(y, radix) ||
                    srem(same, radix) != srem(y, radix));
    Result r = solver.check("digits", query, 0);
    std::string model;
    for (const auto &[name, t] : shown)
      model += name + " = " + std::to_string(r.isSat() ? r.value(t) : 0) + " ";
    EXPECT_TRUE(r.isUnsat()) << (r.isSat() ? model : r.reason());
  }
}

// Context::knowDigits: sdiv and srem of a number built from its digits,
// and of that number plus or minus 1 or its radix (a mesh rank's
// neighbours), are the digits operator+ and operator- carry; Z3's own
// bvsdiv and bvsrem of the same value must agree for every radix 1..32,
// including sums that fall below zero. A wrong carry would let the prover
// accept a schedule on a mesh that is wrong.
TEST(Smt, DigitsAgreeWithDivision) {
  Context ctx;
  Solver solver(ctx);
  const unsigned w = 12;
  Term radix = ctx.bitVecVar("b", w), h = ctx.bitVecVar("h", w),
       l0 = ctx.bitVecVar("l", w);
  Term low = ite(sge(l0, 0) && slt(l0, radix), l0, ctx.bitVec(0, w));
  Term x = h * radix + low;
  ctx.knowDigits(x, radix, h, low, true);
  Term one = ctx.bitVec(1, w);
  std::vector<std::pair<std::string, Term>> numbers = {
      {"x", x},
      {"x + 1", x + one},
      {"1 + x", one + x},
      {"x - 1", x - one},
      {"x + -1", x + ctx.bitVec(-1, w)},
      {"x + b", x + radix},
      {"b + x", radix + x},
      {"x - b", x - radix},
      {"x + 1 + 1", (x + one) + one},
      {"x + 1 - b", (x + one) - radix},
      {"x + b + 1", (x + radix) + one},
      {"x + 1 - 1", (x + one) - one},
      {"x - 1 + 1", (x - one) + one},
      {"x - b + b", (x - radix) + radix},
      {"x - 1 - 1", (x - one) - one},
      {"x - 1 + b", (x - one) + radix},
      {"x - 1 - b", (x - one) - radix},
      {"x - b - b", (x - radix) - radix},
      {"x - b - 1 + b", ((x - radix) - one) + radix},
      {"x - b + 1", (x - radix) + one},
      {"x - b + 1 + 1", ((x - radix) + one) + one},
      {"x - b - 1", (x - radix) - one},
      {"x - b - b + 1", ((x - radix) - radix) + one},
      {"x - b - b - 1", ((x - radix) - radix) - one},
      {"x - 1 - 1 - 1", ((x - one) - one) - one},
  };
  expectDivisionAgrees(ctx, solver, radix, numbers,
                       {sge(radix, 1), sle(radix, 32), sge(h, 0), sle(h, 31)},
                       {{"b", radix}, {"h", h}, {"l", l0}});
  // The digits are used: x / b is h itself, with no division in it.
  EXPECT_EQ(sdiv(x, radix).print(), h.print());
  EXPECT_EQ(srem(x + radix, radix).print(), low.print());
  // And asked for: the induction makes a sender from coordinates only
  // where its digits are not carried (a step by one or by the radix is
  // carried from digits of either sign: the sender x - b + 1 of a torus
  // row's wrap needs no multiplier).
  EXPECT_TRUE(ctx.digitsKnown(x));
  EXPECT_TRUE(ctx.digitsKnown(x - one));
  EXPECT_TRUE(ctx.digitsKnown(x - radix));
  EXPECT_TRUE(ctx.digitsKnown((x - one) + radix));
  EXPECT_TRUE(ctx.digitsKnown((x - one) - one));
  EXPECT_TRUE(ctx.digitsKnown((x - radix) + one));
  EXPECT_FALSE(ctx.digitsKnown(l0));
  // (x - y) + y and (x + y) - y are x itself.
  EXPECT_EQ(((x - radix) + radix).print(), x.print());
  EXPECT_EQ(((x + one) - one).print(), x.print());
}

// The same for a number plus or minus a multiple of its radix, m * b of
// either sign and in either order (a mesh's rank 2^i rows away, r - 2^i * b),
// at a width where Z3's own multiplier and divider stay small.
TEST(Smt, DigitsOfMultiplesOfTheRadixAgreeWithDivision) {
  Context ctx;
  Solver solver(ctx);
  const unsigned w = 8;
  Term radix = ctx.bitVecVar("b", w), h = ctx.bitVecVar("h", w),
       l0 = ctx.bitVecVar("l", w), m = ctx.bitVecVar("m", w);
  Term low = ite(sge(l0, 0) && slt(l0, radix), l0, ctx.bitVec(0, w));
  Term x = h * radix + low;
  ctx.knowDigits(x, radix, h, low, true);
  std::vector<std::pair<std::string, Term>> numbers = {
      {"x + m * b", x + m * radix},
      {"x - m * b", x - m * radix},
      {"x - b * m", x - radix * m},
      {"m * b + x", m * radix + x},
      {"x - 1 + m * b", (x - ctx.bitVec(1, w)) + m * radix},
      {"x - b - m * b", (x - radix) - m * radix},
  };
  // The digits are used: no divider in the remainder.
  for (const auto &[text, y] : numbers)
    EXPECT_EQ(srem(y, radix).print().find("bvsrem"), std::string::npos) << text;
  expectDivisionAgrees(ctx, solver, radix, numbers,
                       {sge(radix, 1), sle(radix, 8), sge(h, 0), sle(h, 7),
                        sge(m, -7), sle(m, 7)},
                       {{"b", radix}, {"h", h}, {"m", m}, {"l", l0}});
}

// A 3-D mesh's step across its planes, r + 2^i * (b * c), moves r by
// 2^i * b in radix c and by 2^i in radix b * c, however the product is
// bracketed: the digits carry, with no divider.
TEST(Smt, DigitsOfMultiplesOfAProductRadixAgreeWithDivision) {
  Context ctx;
  Solver solver(ctx);
  const unsigned w = 10;
  Term b = ctx.bitVecVar("b", w), c = ctx.bitVecVar("c", w),
       h = ctx.bitVecVar("h", w), l0 = ctx.bitVecVar("l", w),
       m = ctx.bitVecVar("m", w);
  Term low = ite(sge(l0, 0) && slt(l0, c), l0, ctx.bitVec(0, w));
  Term x = h * c + low;
  ctx.knowDigits(x, c, h, low, true);
  Term plane = b * c;
  std::vector<std::pair<std::string, Term>> numbers = {
      {"x + m * (b * c)", x + m * plane},
      {"x + (m * b) * c", x + (m * b) * c},
      {"x - m * (c * b)", x - m * (c * b)},
      {"x + c * (m * b)", x + c * (m * b)},
  };
  for (const auto &[text, y] : numbers)
    EXPECT_EQ(srem(y, c).print().find("bvsrem"), std::string::npos) << text;
  // A product that is not a multiple of c keeps the divider.
  EXPECT_NE(srem(x + m * b, c).print().find("bvsrem"), std::string::npos);
  expectDivisionAgrees(ctx, solver, c, numbers,
                       {sge(b, 1), sle(b, 4), sge(c, 1), sle(c, 6), sge(h, 0),
                        sle(h, 7), sge(m, -3), sle(m, 3)},
                       {{"b", b}, {"c", c}, {"h", h}, {"m", m}, {"l", l0}});
}

// A remainder that a mesh's coordinates bound needs no divider: a
// coordinate's neighbour round its extent, (c + 1) % b, a distance round a
// row, (c - d + b) % b, and a rank one row on round a torus, (x + b) % (a *
// b), which is its row plus one round the column and its column. Each must
// agree with Z3's own bvsrem for every extent 1..16, and none may keep one:
// the dead branch of a divider was what made a torus's steps slow to prove.
TEST(Smt, RemaindersOfCoordinatesNeedNoDivider) {
  Context ctx;
  Solver solver(ctx);
  const unsigned w = 10;
  Term rows = ctx.bitVecVar("a", w), cols = ctx.bitVecVar("b", w);
  auto coordinate = [&](const char *name, const Term &extent) {
    Term x = ctx.bitVecVar(name, w);
    Term c = ite(sge(x, 0) && slt(x, extent), x, ctx.bitVec(0, w));
    ctx.knowBelow(c, extent);
    return c;
  };
  Term row = coordinate("row", rows), col = coordinate("col", cols),
       other = coordinate("other", cols);
  Term rank = row * cols + col, size = rows * cols;
  ctx.knowDigits(rank, cols, row, col, true);
  ctx.knowDigits(size, cols, rows, ctx.bitVec(0, w), true);
  Term one = ctx.bitVec(1, w);
  Term choice = ctx.boolVar("choice");
  struct Case {
    std::string text;
    Term number, divisor;
    bool dividerFree = true;
  };
  std::vector<Case> cases = {
      {"(c + 1) % b", col + one, cols},
      {"(1 + c) % b", one + col, cols},
      {"(c - d + b) % b", (col - other) + cols, cols},
      {"(b + c - d) % b", cols + (col - other), cols},
      {"(c + d) % b", col + other, cols},
      {"(c - d) % b", col - other, cols},
      {"c % b", col, cols},
      {"(choice ? c + 1 : d) % b", ite(choice, col + one, other), cols},
      {"(row + 1) % a", row + one, rows},
      {"(x + b) % (a * b)", rank + cols, size},
      {"x % (a * b)", rank, size},
      // A step up a column round the torus, from digits that are not
      // canonical (x - b falls below 0 on row 0): exact, if not always
      // without a divider.
      {"(x - b + a * b) % (a * b)", (rank - cols) + size, size, false},
      {"(x - b) % (a * b)", rank - cols, size, false},
      {"(x - 1) % (a * b)", rank - one, size, false},
      {"(c + 1 + 1) % b", (col + one) + one, cols, false},
  };
  std::vector<Term> range = {sge(rows, 1), sle(rows, 16), sge(cols, 1),
                             sle(cols, 16)};
  for (const Case &c : cases) {
    SCOPED_TRACE(c.text);
    Term r = srem(c.number, c.divisor);
    if (c.dividerFree) {
      EXPECT_EQ(r.print().find("bvsrem"), std::string::npos);
    }
    Term same = ctx.bitVecVar("same", w), divisor = ctx.bitVecVar("div", w);
    std::vector<Term> query = range;
    query.push_back(same == c.number);
    query.push_back(divisor == c.divisor);
    query.push_back(srem(same, divisor) != r);
    Result result = solver.check("remainder", query, 0);
    EXPECT_TRUE(result.isUnsat())
        << (result.isSat() ? "a = " + std::to_string(result.value(rows)) +
                                 ", b = " + std::to_string(result.value(cols))
                           : result.reason());
  }
  // Bounds hold for divisors of at least 1: a divisor that no coordinate
  // vouches for, of any sign, keeps Z3's own remainder.
  Term any = ctx.bitVecVar("any", w), same = ctx.bitVecVar("same", w);
  Term small = ite(choice, one, ctx.bitVec(0, w));
  Result anySign = solver.check(
      "any sign", {same == small, srem(same, any) != srem(small, any)}, 0);
  EXPECT_TRUE(anySign.isUnsat());
  // A sum the coordinates do not bound keeps Z3's own remainder.
  EXPECT_NE(srem(col + cols + cols, cols).print().find("bvsrem"),
            std::string::npos);
}

// umulFits is Z3's own no-overflow test for unsigned products, folded on
// constants: at 8 bits 15 * 17 = 255 fits, 16 * 16 does not, and -1 is 255.
TEST(Smt, UmulFitsSaysWhetherAProductWraps) {
  Context ctx;
  Solver solver(ctx);
  const unsigned w = 8;
  Term x = ctx.bitVecVar("x", w), y = ctx.bitVecVar("y", w);
  for (int64_t a : {0, 1, 3, 15, 16, 17, 100, 127, -128, -1})
    for (int64_t b : {0, 1, 2, 3, 15, 16, 17, 127, -1}) {
      const uint64_t product = uint64_t(a & 0xff) * uint64_t(b & 0xff);
      const bool fits = product <= 0xff;
      EXPECT_EQ(umulFits(ctx.bitVec(a, w), ctx.bitVec(b, w)).isTrue(), fits)
          << a << " * " << b;
      Term test = umulFits(x, y);
      Result r = solver.check(
          "fits",
          {x == ctx.bitVec(a, w), y == ctx.bitVec(b, w), fits ? !test : test},
          0);
      EXPECT_TRUE(r.isUnsat()) << a << " * " << b;
    }
}

// Two numbers with digits in one radix compare as their digits do (a
// mesh's ranks by their coordinates), and a choice between two such
// numbers has digits too; Z3's own comparison of the same values must
// agree, for numbers below zero, 0 and -1 (no sender) included.
TEST(Smt, NumbersWithDigitsCompareAsZ3Does) {
  Context ctx;
  Solver solver(ctx);
  const unsigned w = 10;
  Term radix = ctx.bitVecVar("b", w), c = ctx.boolVar("c");
  auto number = [&](const char *high, const char *low) {
    Term h = ctx.bitVecVar(high, w), l0 = ctx.bitVecVar(low, w);
    Term l = ite(sge(l0, 0) && slt(l0, radix), l0, ctx.bitVec(0, w));
    Term x = h * radix + l;
    ctx.knowDigits(x, radix, h, l, true);
    return std::pair(x, sge(h, 0) && sle(h, 15));
  };
  auto [x, xRange] = number("h", "l");
  auto [y, yRange] = number("g", "k");
  Term one = ctx.bitVec(1, w), zero = ctx.bitVec(0, w);
  std::vector<std::pair<std::string, Term>> numbers = {
      {"x", x},
      {"y", y},
      {"x - 1", x - one},
      {"y - b", y - radix},
      {"x + b", x + radix},
      {"c ? x + 1 : y - b", ite(c, x + one, y - radix)},
      {"c ? x : -1", ite(c, x, ctx.bitVec(-1, w))},
      {"0", zero},
      {"-1", ctx.bitVec(-1, w)},
  };
  std::vector<Term> range = {sge(radix, 1), sle(radix, 16), xRange, yRange};
  for (const auto &[textA, a] : numbers)
    for (const auto &[textB, b] : numbers) {
      if (a.constant() && b.constant())
        continue;
      SCOPED_TRACE(textA + " vs " + textB);
      Term sameA = ctx.bitVecVar("sameA", w), sameB = ctx.bitVecVar("sameB", w);
      std::vector<Term> query = range;
      query.push_back(sameA == a);
      query.push_back(sameB == b);
      query.push_back(slt(a, b) != slt(sameA, sameB) ||
                      sle(a, b) != sle(sameA, sameB) ||
                      (a == b) != (sameA == sameB));
      Result r = solver.check("compare", query, 0);
      EXPECT_TRUE(r.isUnsat())
          << (r.isSat() ? "b = " + std::to_string(r.value(radix)) : r.reason());
    }
  // The comparisons are of digits: no product is left in them.
  EXPECT_EQ(slt(x, y).print().find("bvmul"), std::string::npos);
  EXPECT_EQ((x == ite(c, y, zero)).print().find("bvmul"), std::string::npos);
}

// A remainder by 1 << x (a hypercube's p) is a mask, and agrees with Z3's
// bvsrem for every dividend and every shift, 0 and the sign bit included.
TEST(Smt, RemainderByAPowerOfTwoIsAMask) {
  Context ctx;
  Solver solver(ctx);
  const unsigned w = 8;
  Term a = ctx.bitVecVar("a", w), x = ctx.bitVecVar("x", w);
  // 1 << x, and a binomial tree's 2 << i and 4 << i: each a power of two,
  // the sign bit or 0 for some x, whose remainder is a mask of |a|.
  for (int64_t base : {1, 2, 4}) {
    SCOPED_TRACE(std::to_string(base) + " << x");
    Term power = shl(ctx.bitVec(base, w), x);
    // A variable equal to it divides through Z3's own circuit.
    Term same = ctx.bitVecVar("same", w);
    Result r = solver.check(
        "mask", {same == power, srem(a, same) != srem(a, power)}, 0);
    EXPECT_TRUE(r.isUnsat())
        << (r.isSat() ? "a = " + std::to_string(r.value(a)) +
                            ", x = " + std::to_string(r.value(x))
                      : r.reason());
    EXPECT_EQ(srem(a, power).print().find("bvsrem"), std::string::npos);
  }
  // 3 << x is no power of two: Z3's divider stays.
  EXPECT_NE(srem(a, shl(ctx.bitVec(3, w), x)).print().find("bvsrem"),
            std::string::npos);
}

// A linear query is decided over the integers, with every sum wrapping as its
// bit-vector does: 8-bit x + 1 < x holds at x = 127 alone. Division by a
// constant keeps SMT-LIB's truncation. A ring's distance, the shape of the
// library's invariants, is proved at 19 bits without bit-blasting.
TEST(Smt, LinearQueriesAreDecidedOverTheIntegers) {
  Context ctx;
  Solver solver(ctx);
  Term x = ctx.bitVecVar("x", 8);
  Result wraps = solver.check("wraps", {slt(x + 1, x)}, 10000);
  ASSERT_TRUE(wraps.isSat());
  EXPECT_EQ(wraps.value(x), 127);
  Result onlyThere = solver.check("only_there", {slt(x + 1, x), x != 127}, 0);
  EXPECT_TRUE(onlyThere.isUnsat());
  EXPECT_TRUE(onlyThere.overIntegers());
  Result truncates =
      solver.check("truncates",
                   {slt(x, ctx.bitVec(0, 8)),
                    sgt(srem(x, ctx.bitVec(3, 8)), ctx.bitVec(0, 8))},
                   0);
  EXPECT_TRUE(truncates.isUnsat());
  EXPECT_TRUE(truncates.overIntegers());
  Term three = ctx.bitVec(3, 8);
  Result divides = solver.check(
      "divides", {sdiv(x, three) * three + srem(x, three) != x}, 0);
  EXPECT_TRUE(divides.isUnsat());
  EXPECT_TRUE(divides.overIntegers());

  const unsigned w = 19;
  Term p = ctx.bitVecVar("p", w), r = ctx.bitVecVar("r", w),
       t = ctx.bitVecVar("t", w), zero = ctx.bitVec(0, w);
  auto distance = [&](const Term &from, const Term &to) {
    return ite(sgt(from, to), from - to, from - to + p);
  };
  Result ring =
      solver.check("ring",
                   {sle(ctx.bitVec(2, w), p), sle(p, ctx.bitVec(65536, w)),
                    sle(zero, r), slt(r, p), sle(zero, t), slt(t, p), r != t,
                    distance(r, t) + distance(t, r) != p},
                   0);
  EXPECT_TRUE(ring.isUnsat());
  EXPECT_TRUE(ring.overIntegers());
}

// Where the reading over the integers is wider than the query (a remainder by
// a variable) or has none (a product of variables, a bitwise operator), the
// answer is the bit-vectors': a model of the reading that is no model of the
// query is not reported.
TEST(Smt, QueriesTheIntegersCannotDecideAreBitBlasted) {
  Context ctx;
  Solver solver(ctx);
  Term x = ctx.bitVecVar("x", 8), y = ctx.bitVecVar("y", 8);
  Result byVariable =
      solver.check("by_variable", {y == 5, x == 12, srem(x, y) != 2}, 0);
  EXPECT_TRUE(byVariable.isUnsat());
  EXPECT_FALSE(byVariable.overIntegers());
  Result model = solver.check(
      "model", {y == 5, srem(x, y) == 3, sgt(x, ctx.bitVec(10, 8))}, 0);
  ASSERT_TRUE(model.isSat());
  EXPECT_EQ(model.value(y), 5);
  EXPECT_TRUE(model.value(x) > 10 && model.value(x) % 5 == 3);
  Result product =
      solver.check("product",
                   {x * y == 6, slt(x, y), sgt(x, ctx.bitVec(1, 8)),
                    slt(y, ctx.bitVec(4, 8))},
                   0);
  ASSERT_TRUE(product.isSat());
  EXPECT_EQ(product.value(x) * product.value(y), 6);
  Result bitwise = solver.check(
      "bitwise", {(x & ctx.bitVec(1, 8)) == 1, srem(x, ctx.bitVec(2, 8)) == 0},
      0);
  EXPECT_TRUE(bitwise.isUnsat());
  EXPECT_FALSE(bitwise.overIntegers());
}

namespace {

/// A random expression over two 5-bit variables, from the operators the
/// integers read (and a remainder by a variable, which they widen).
struct RandomLinear {
  std::mt19937 random;
  Context &ctx;
  Term pick(const Term &x, const Term &y, int depth) {
    const unsigned w = x.width();
    if (depth == 0 || random() % 4 == 0) {
      switch (random() % 3) {
      case 0:
        return x;
      case 1:
        return y;
      default:
        return ctx.bitVec(static_cast<int64_t>(random() % 32) - 16, w);
      }
    }
    Term a = pick(x, y, depth - 1), b = pick(x, y, depth - 1);
    const Term c = ctx.bitVec(static_cast<int64_t>(random() % 7) + 1, w);
    switch (random() % 8) {
    case 0:
      return a + b;
    case 1:
      return a - b;
    case 2:
      return -a;
    case 3:
      return a * c;
    case 4:
      return sdiv(a, c);
    case 5:
      return srem(a, c);
    case 6:
      return srem(a, b);
    default:
      return ite(slt(a, b), a, b);
    }
  }
  Term condition(const Term &x, const Term &y) {
    Term a = pick(x, y, 3), b = pick(x, y, 3);
    switch (random() % 3) {
    case 0:
      return a == b;
    case 1:
      return slt(a, b);
    default:
      return sle(a, b) && a != b + 1;
    }
  }
};

} // namespace

// Random linear queries at 5 bits, each decided by the solver and by trying
// all 1,024 values: the same answer, and a model that satisfies the query.
TEST(Smt, IntegersAgreeWithEveryValueOnRandomQueries) {
  Context ctx;
  Solver solver(ctx);
  const unsigned w = 5;
  Term x = ctx.bitVecVar("x", w), y = ctx.bitVecVar("y", w);
  RandomLinear gen{std::mt19937(2026), ctx};
  unsigned overIntegers = 0, sat = 0;
  for (int i = 0; i < 300; ++i) {
    const uint32_t seed = gen.random();
    auto build = [&](const Term &a, const Term &b) {
      RandomLinear again{std::mt19937(seed), ctx};
      Term first = again.condition(a, b);
      return first && again.condition(a, b);
    };
    Term query = build(x, y);
    bool exists = false;
    for (int64_t a = -16; a < 16 && !exists; ++a)
      for (int64_t b = -16; b < 16 && !exists; ++b)
        exists = build(ctx.bitVec(a, w), ctx.bitVec(b, w)).isTrue();
    Result r = solver.check("random", {query}, 0);
    ASSERT_EQ(r.isSat(), exists) << query.print();
    ASSERT_EQ(r.isUnsat(), !exists) << query.print();
    if (r.isSat()) {
      ++sat;
      EXPECT_TRUE(
          build(ctx.bitVec(r.value(x), w), ctx.bitVec(r.value(y), w)).isTrue())
          << query.print();
    }
    overIntegers += r.overIntegers();
  }
  // Both answers, and most unsat ones over the integers, are exercised.
  EXPECT_GT(sat, 30u);
  EXPECT_LT(sat, 270u);
  EXPECT_GT(overIntegers, 20u);
}
