#pragma once
// Fusion adaptation of the AST, so X3 can fill the structs from rule
// attributes. Nothing else belongs here.

#include "syntax/AST.h"

#include <boost/fusion/include/adapt_struct.hpp>
#include <boost/fusion/include/std_pair.hpp>

BOOST_FUSION_ADAPT_STRUCT(collc::ast::Identifier, name)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::Number, digits)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::Operation, op, operand)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::Chain, first, rest)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::Unary, ops, operand)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::Call, function, args)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::Branch, value, next)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::Conditional, condition, branches)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::Argument, key, value)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::Edge, from, to)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::TopologyExpr, kind, args, edges)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::TopologyDecl, name, value)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::Quantity, number, unit)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::Field, key, value)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::ModelDecl, name, fields)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::CollectiveExpr, kind, args)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::CollectiveDecl, name, what, on, algorithm)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::Target, buffer, when)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::Transfer, src, dst, selector, from, into,
                          mode, guard)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::RuleLoop, var, lo, hi, transfers)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::Step, label, transfers)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::BufferDecl, names)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::ChunksDecl, count)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::StartsEmptyDecl, names)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::Invariant, buffer, holds)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::ForLoop, var, reverse, lo, hi, invariants,
                          body)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::ParamRange, name, lo, hi)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::Composition, first, rest)
BOOST_FUSION_ADAPT_STRUCT(collc::ast::ScheduleDecl, name, what, on, algorithm,
                          ranges, body)
