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
