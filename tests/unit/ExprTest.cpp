#include "ir/Expr.h"

#include <gtest/gtest.h>

using namespace collc::ir;

namespace {

ExprRef c(int64_t v) { return Expr::constant(v); }
ExprRef r() { return Expr::var("r", 0); }

TEST(Expr, EvaluatesWithCSemantics) {
  EXPECT_EQ(evaluate(*Expr::binary(ExprOp::Div, c(-7), c(2)), {}).value, -3);
  EXPECT_EQ(evaluate(*Expr::binary(ExprOp::Mod, c(-7), c(2)), {}).value, -1);
  EXPECT_EQ(evaluate(*Expr::binary(ExprOp::Shr, c(-8), c(1)), {}).value, -4);
  EXPECT_EQ(evaluate(*Expr::binary(ExprOp::Pow, c(2), c(10)), {}).value, 1024);
  EXPECT_EQ(evaluate(*Expr::binary(ExprOp::BitXor, r(), c(4)), {6}).value, 2);
}

TEST(Expr, ReportsUndefinedOperations) {
  EXPECT_EQ(evaluate(*Expr::binary(ExprOp::Div, r(), c(0)), {3}).error,
            EvalError::DivByZero);
  EXPECT_EQ(evaluate(*Expr::binary(ExprOp::Shl, c(1), c(64)), {}).error,
            EvalError::BadShift);
}

// 004 §4.4: bit reversal of the low n bits, the bits above dropped; the
// emitted code's collc_bitreverse (collc/Runtime.h) is spelled the same.
TEST(Expr, ReversesTheLowBits) {
  auto reversed = [](int64_t x, int64_t n) {
    return evaluate(*Expr::binary(ExprOp::BitReverse, c(x), c(n)), {});
  };
  EXPECT_EQ(reversed(0b0001, 4).value, 0b1000);
  EXPECT_EQ(reversed(0b0110, 4).value, 0b0110);
  EXPECT_EQ(reversed(0b1011, 3).value, 0b110); // bit 3 dropped
  EXPECT_EQ(reversed(5, 0).value, 0);
  EXPECT_EQ(reversed(1, 62).value, int64_t(1) << 61);
  EXPECT_EQ(reversed(-1, 62).value, (int64_t(1) << 62) - 1);
  EXPECT_EQ(reversed(1, 63).error, EvalError::BadBits);
  EXPECT_EQ(reversed(1, -1).error, EvalError::BadBits);
  ExprRef e = Expr::binary(ExprOp::BitReverse, r(), c(3));
  EXPECT_EQ(print(*e), "bitreverse(r, 3)");
  EXPECT_EQ(printCpp(*e), "collc_bitreverse(r, int64_t(3))");
}

// ceil_log2(x): the steps of a recursive doubling over x ranks; the
// emitted code's collc_ceil_log2 (collc/Runtime.h) is spelled the same.
TEST(Expr, CeilLog2CountsTheDoublings) {
  auto steps = [](int64_t x) {
    return evaluate(*Expr::unary(ExprOp::CeilLog2, c(x)), {}).value;
  };
  EXPECT_EQ(steps(-5), 0);
  EXPECT_EQ(steps(0), 0);
  EXPECT_EQ(steps(1), 0);
  EXPECT_EQ(steps(2), 1);
  EXPECT_EQ(steps(3), 2);
  EXPECT_EQ(steps(4), 2);
  EXPECT_EQ(steps(5), 3);
  EXPECT_EQ(steps(65536), 16);
  EXPECT_EQ(steps(65537), 17);
  EXPECT_EQ(steps(INT64_MAX), 63);
  ExprRef e =
      Expr::unary(ExprOp::CeilLog2, Expr::binary(ExprOp::Add, r(), c(1)));
  EXPECT_EQ(print(*e), "ceil_log2(r + 1)");
  EXPECT_EQ(printCpp(*e), "collc_ceil_log2(r + int64_t(1))");
}

TEST(Expr, PrintsSourceAndCpp) {
  // r ^ (1 << 2) == 0
  ExprRef e = Expr::binary(
      ExprOp::Eq,
      Expr::binary(ExprOp::BitXor, r(), Expr::binary(ExprOp::Shl, c(1), c(2))),
      c(0));
  EXPECT_EQ(print(*e), "r ^ 1 << 2 == 0");
  EXPECT_EQ(printCpp(*e), "(r ^ (int64_t(1) << int64_t(2))) == int64_t(0)");
  EXPECT_EQ(printCpp(*e, {"me"}), "(me ^ (int64_t(1) << int64_t(2))) == int64_t(0)");
}

TEST(Expr, FoldsConstants) {
  ExprRef e = Expr::binary(ExprOp::Add, r(), Expr::binary(ExprOp::Mul, c(3), c(4)));
  ExprRef f = fold(e);
  ASSERT_EQ(f->op, ExprOp::Add);
  EXPECT_TRUE(f->args[1]->isConst());
  EXPECT_EQ(f->args[1]->value, 12);
}

} // namespace
