#pragma once
// Every operator of ir::Expr by arity, for the tests that hold two readings
// of an expression against each other on random trees (evaluate against Z3
// in ProveTest, against interval evaluation in SimulateTest): an operator
// added to the IR is added here, and both tests exercise it.

#include "ir/Expr.h"

namespace collc::test {

inline constexpr ir::ExprOp binaryExprOps[] = {
    ir::ExprOp::Add,       ir::ExprOp::Sub,    ir::ExprOp::Mul,
    ir::ExprOp::Div,       ir::ExprOp::Mod,    ir::ExprOp::Pow,
    ir::ExprOp::Shl,       ir::ExprOp::Shr,    ir::ExprOp::BitAnd,
    ir::ExprOp::BitOr,     ir::ExprOp::BitXor, ir::ExprOp::Min,
    ir::ExprOp::Max,       ir::ExprOp::Eq,     ir::ExprOp::Ne,
    ir::ExprOp::Lt,        ir::ExprOp::Le,     ir::ExprOp::Gt,
    ir::ExprOp::Ge,        ir::ExprOp::And,    ir::ExprOp::Or,
    ir::ExprOp::BitReverse};
inline constexpr ir::ExprOp unaryExprOps[] = {
    ir::ExprOp::Neg, ir::ExprOp::BitNot, ir::ExprOp::Not, ir::ExprOp::CeilLog2};

} // namespace collc::test
