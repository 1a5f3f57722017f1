// The .coll grammar (Boost.Spirit X3). Every rule's doc comment is its
// grammar; `>` after a keyword commits the parse so errors point at the place
// where the input stops making sense.

#include "syntax/ASTAdapted.h"
#include "syntax/Parser.h"

#include <boost/spirit/home/x3.hpp>

#include "llvm/Support/ConvertUTF.h"
#include "llvm/ADT/StringExtras.h"

#include <string>

namespace collc::grammar {

namespace x3 = boost::spirit::x3;
using x3::alnum;
using x3::alpha;
using x3::char_;
using x3::digit;
using x3::eoi;
using x3::eol;
using x3::lexeme;
using x3::lit;
using x3::string;

/// Skips blanks and `# comments` up to the end of the line.
inline const char *skipBlanks(const char *it, const char *end) {
  while (it != end) {
    if (*it == ' ' || *it == '\t' || *it == '\n' || *it == '\r' ||
        *it == '\f' || *it == '\v') {
      ++it;
    } else if (*it == '#') {
      while (it != end && *it != '\n')
        ++it;
    } else {
      break;
    }
  }
  return it;
}

/// Where the last token before `found` ends, scanning from `begin`.
inline const char *endOfLastToken(const char *begin, const char *found) {
  const char *lastEnd = begin;
  for (const char *it = begin; it < found;) {
    const char *blank = skipBlanks(it, found);
    if (blank != it) {
      it = blank;
      continue;
    }
    lastEnd = ++it;
  }
  return lastEnd;
}

/// Records the source range of every AST node a rule produces.
struct annotate {
  template <typename Iterator, typename Node, typename Context>
  void on_success(const Iterator &first, const Iterator &last, Node &node,
                  const Context &) const {
    if constexpr (std::is_base_of_v<ast::Located, Node>) {
      node.begin = skipBlanks(first, last);
      node.end = last;
    }
  }
};

const auto skipper = x3::space | lexeme['#' >> *(char_ - eol) >> (eol | eoi)];
const auto idchar = alnum | char_('_');

/// keyword ::= the word, not followed by a letter, digit or '_'
#define COLLC_KEYWORD(name, text)                                              \
  const x3::rule<struct name##_kw> name = "'" text "'";                        \
  const auto name##_def = lexeme[lit(text) >> !idchar];                        \
  BOOST_SPIRIT_DEFINE(name)

COLLC_KEYWORD(kw_topology, "topology")
COLLC_KEYWORD(kw_model, "model")
COLLC_KEYWORD(kw_collective, "collective")
COLLC_KEYWORD(kw_schedule, "schedule")
COLLC_KEYWORD(kw_on, "on")
COLLC_KEYWORD(kw_using, "using")
COLLC_KEYWORD(kw_step, "step")
COLLC_KEYWORD(kw_for, "for")
COLLC_KEYWORD(kw_in, "in")
COLLC_KEYWORD(kw_reverse, "reverse")
COLLC_KEYWORD(kw_buffer, "buffer")
COLLC_KEYWORD(kw_chunks, "chunks")
COLLC_KEYWORD(kw_from, "from")
COLLC_KEYWORD(kw_into, "into")
COLLC_KEYWORD(kw_when, "when")
COLLC_KEYWORD(kw_where, "where")
COLLC_KEYWORD(kw_if, "if")
COLLC_KEYWORD(kw_then, "then")
COLLC_KEYWORD(kw_invariant, "invariant")
COLLC_KEYWORD(kw_starts, "starts")
COLLC_KEYWORD(kw_empty, "empty")
#undef COLLC_KEYWORD

// Multi-character punctuation, named so errors read "expected '->'".
const x3::rule<struct arrow_tag> arrow = "'->'";
const auto arrow_def = lit("->");
const x3::rule<struct dots_tag> dots = "'..'";
const auto dots_def = lit("..");
BOOST_SPIRIT_DEFINE(arrow, dots)

/// Words that cannot name anything.
const auto reserved =
    lexeme[(lit("and") | "or" | "not" | "when" | "where" | "from" | "into" |
            "copy" | "reduce" | "using" | "on" | "in" | "reverse" | "if" |
            "then" | "invariant" |
            "step" | "for" | "buffer" | "chunks" | "topology" | "model" |
            "collective" | "schedule") >>
           !idchar];

struct identifier_class : annotate {};
struct kind_name_class : annotate {};
struct number_class : annotate {};
struct expr_class : annotate {};
struct conditional_class : annotate {};
struct edge_list_class : annotate {};
struct or_expr_class : annotate {};
struct or_op_class : annotate {};
struct and_expr_class : annotate {};
struct and_op_class : annotate {};
struct not_expr_class : annotate {};
struct cmp_expr_class : annotate {};
struct cmp_op_class : annotate {};
struct bor_expr_class : annotate {};
struct bor_op_class : annotate {};
struct bxor_expr_class : annotate {};
struct bxor_op_class : annotate {};
struct band_expr_class : annotate {};
struct band_op_class : annotate {};
struct shift_expr_class : annotate {};
struct shift_op_class : annotate {};
struct add_expr_class : annotate {};
struct add_op_class : annotate {};
struct mul_expr_class : annotate {};
struct mul_op_class : annotate {};
struct neg_expr_class : annotate {};
struct pow_expr_class : annotate {};
struct pow_op_class : annotate {};
struct pow_operand_class : annotate {};
struct primary_class : annotate {};
struct call_class : annotate {};
struct branch_class : annotate {};
struct argument_class : annotate {};
struct edge_class : annotate {};
struct topology_expr_class : annotate {};
struct topology_ref_class : annotate {};
struct topology_decl_class : annotate {};
struct quantity_class : annotate {};
struct field_class : annotate {};
struct model_decl_class : annotate {};
struct collective_expr_class : annotate {};
struct collective_decl_class : annotate {};
struct target_class : annotate {};
struct mode_class : annotate {};
struct transfer_class : annotate {};
struct rule_loop_class : annotate {};
struct step_item_class : annotate {};
struct step_class : annotate {};
struct invariant_class : annotate {};
struct for_loop_class : annotate {};
struct buffer_decl_class : annotate {};
struct chunks_decl_class : annotate {};
struct starts_empty_decl_class : annotate {};
struct body_item_class : annotate {};
struct param_range_class : annotate {};
struct then_part_class : annotate {};
struct then_parts_class {};
struct composition_class : annotate {};
struct schedule_body_class : annotate {};
struct schedule_decl_class : annotate {};
struct declaration_class : annotate {};

const x3::rule<identifier_class, ast::Identifier> identifier = "a name";
const x3::rule<kind_name_class, ast::Identifier> kind_name = "a name";
const x3::rule<number_class, ast::Number> number = "a number";
const x3::rule<expr_class, ast::Operand> expr = "an expression";
const x3::rule<conditional_class, ast::Conditional> conditional =
    "an expression";
const x3::rule<edge_list_class, std::vector<ast::Edge>> edge_list =
    "a list of edges";
const x3::rule<or_expr_class, ast::Chain> or_expr = "an expression";
const x3::rule<or_op_class, ast::Operation> or_op = "'or'";
const x3::rule<and_expr_class, ast::Chain> and_expr = "an expression";
const x3::rule<and_op_class, ast::Operation> and_op = "'and'";
const x3::rule<not_expr_class, ast::Unary> not_expr = "an expression";
const x3::rule<cmp_expr_class, ast::Chain> cmp_expr = "an expression";
const x3::rule<cmp_op_class, ast::Operation> cmp_op = "a comparison";
const x3::rule<bor_expr_class, ast::Chain> bor_expr = "an expression";
const x3::rule<bor_op_class, ast::Operation> bor_op = "'|'";
const x3::rule<bxor_expr_class, ast::Chain> bxor_expr = "an expression";
const x3::rule<bxor_op_class, ast::Operation> bxor_op = "'^'";
const x3::rule<band_expr_class, ast::Chain> band_expr = "an expression";
const x3::rule<band_op_class, ast::Operation> band_op = "'&'";
const x3::rule<shift_expr_class, ast::Chain> shift_expr = "an expression";
const x3::rule<shift_op_class, ast::Operation> shift_op = "a shift";
const x3::rule<add_expr_class, ast::Chain> add_expr = "an expression";
const x3::rule<add_op_class, ast::Operation> add_op = "'+' or '-'";
const x3::rule<mul_expr_class, ast::Chain> mul_expr = "an expression";
const x3::rule<mul_op_class, ast::Operation> mul_op = "'*', '/' or '%'";
const x3::rule<neg_expr_class, ast::Unary> neg_expr = "an expression";
const x3::rule<pow_expr_class, ast::Chain> pow_expr = "an expression";
const x3::rule<pow_op_class, ast::Operation> pow_op = "'**'";
const x3::rule<pow_operand_class, ast::Unary> pow_operand = "an expression";
const x3::rule<primary_class, ast::Operand> primary = "an expression";
const x3::rule<call_class, ast::Call> call = "a call";
const x3::rule<branch_class, ast::Branch> branch = "'?'";
const x3::rule<argument_class, ast::Argument> argument = "an argument";
const x3::rule<edge_class, ast::Edge> edge = "an edge like 0-1";
const x3::rule<topology_expr_class, ast::TopologyExpr> topology_expr =
    "a topology like ring(8)";
const x3::rule<topology_ref_class, ast::TopologyRef> topology_ref =
    "a topology";
const x3::rule<topology_decl_class, ast::TopologyDecl> topology_decl =
    "a topology declaration";
const x3::rule<quantity_class, ast::Quantity> quantity =
    "a quantity like 10us";
const x3::rule<field_class, ast::Field> field = "a field like ts: 10us";
const x3::rule<model_decl_class, ast::ModelDecl> model_decl =
    "a model declaration";
const x3::rule<collective_expr_class, ast::CollectiveExpr> collective_expr =
    "a collective like broadcast(root: 0)";
const x3::rule<collective_decl_class, ast::CollectiveDecl> collective_decl =
    "a collective declaration";
const x3::rule<target_class, ast::Target> target = "a buffer name";
const x3::rule<mode_class, ast::Identifier> mode = "'copy' or 'reduce'";
const x3::rule<transfer_class, ast::Transfer> transfer =
    "a transfer like 0 -> 1";
const x3::rule<rule_loop_class, ast::RuleLoop> rule_loop =
    "a loop of transfers";
const x3::rule<step_item_class, ast::StepItem> step_item =
    "a transfer like 0 -> 1, or 'for'";
const x3::rule<step_class, ast::Step> step = "a step";
const x3::rule<invariant_class, ast::Invariant> invariant =
    "an invariant like 'invariant origin == r'";
const x3::rule<for_loop_class, ast::ForLoop> for_loop = "a loop";
const x3::rule<buffer_decl_class, ast::BufferDecl> buffer_decl =
    "a buffer declaration";
const x3::rule<chunks_decl_class, ast::ChunksDecl> chunks_decl =
    "a chunk count";
const x3::rule<starts_empty_decl_class, ast::StartsEmptyDecl>
    starts_empty_decl = "a buffer that starts empty";
const x3::rule<body_item_class, ast::BodyItem> body_item =
    "'step', 'for', 'buffer', 'chunks' or 'BUFFER starts empty'";
const x3::rule<param_range_class, ast::ParamRange> param_range =
    "a parameter range like d in 1 .. 16";
const x3::rule<then_part_class, ast::Identifier> then_part =
    "'then' and the next schedule";
const x3::rule<then_parts_class, std::vector<ast::Identifier>> then_parts =
    "'then' and the next schedule";
const x3::rule<composition_class, ast::Composition> composition =
    "'=' and the schedules it is made of";
const x3::rule<schedule_body_class, ast::ScheduleBody> schedule_body =
    "'{' or '='";
const x3::rule<schedule_decl_class, ast::ScheduleDecl> schedule_decl =
    "a schedule declaration";
const x3::rule<declaration_class, ast::Declaration> declaration =
    "a declaration ('topology', 'model', 'collective' or 'schedule')";

/// identifier ::= (letter | '_') (letter | digit | '_')*, not a reserved word
const auto identifier_def =
    lexeme[!reserved >> x3::raw[(alpha | '_') >> *idchar]];
/// kind_name ::= (letter | '_') (letter | digit | '_')*  (may be 'reduce')
const auto kind_name_def = lexeme[x3::raw[(alpha | '_') >> *idchar]];
/// number ::= digit+
const auto number_def = lexeme[x3::raw[+digit] >> !idchar];

// Expressions, loosest first. Bitwise operators bind tighter than
// comparisons (unlike C), so `r & m == 0` means `(r & m) == 0`.

/// expr ::= or_expr ('?' expr ':' or_expr)*      (right associative)
const auto expr_def = conditional;
const auto conditional_def = or_expr >> *branch;
const auto branch_def = lit('?') > expr > ':' > or_expr;
/// or_expr ::= and_expr ('or' and_expr)*
const auto or_expr_def = and_expr >> *or_op;
const auto or_op_def = lexeme[string("or") >> !idchar] > and_expr;
/// and_expr ::= not_expr ('and' not_expr)*
const auto and_expr_def = not_expr >> *and_op;
const auto and_op_def = lexeme[string("and") >> !idchar] > not_expr;
/// not_expr ::= 'not'* cmp_expr
const auto not_expr_def = *lexeme[string("not") >> !idchar] >> cmp_expr;
/// cmp_expr ::= bor_expr (('==' | '!=' | '<=' | '>=' | '<' | '>') bor_expr)*
const auto cmp_expr_def = bor_expr >> *cmp_op;
const auto cmp_op_def =
    (string("==") | string("!=") | string("<=") | string(">=") |
     (string("<") >> !lit('<')) | (string(">") >> !lit('>'))) > bor_expr;
/// bor_expr ::= bxor_expr ('|' bxor_expr)*
const auto bor_expr_def = bxor_expr >> *bor_op;
const auto bor_op_def = string("|") > bxor_expr;
/// bxor_expr ::= band_expr ('^' band_expr)*
const auto bxor_expr_def = band_expr >> *bxor_op;
const auto bxor_op_def = string("^") > band_expr;
/// band_expr ::= shift_expr ('&' shift_expr)*
const auto band_expr_def = shift_expr >> *band_op;
const auto band_op_def = string("&") > shift_expr;
/// shift_expr ::= add_expr (('<<' | '>>') add_expr)*
const auto shift_expr_def = add_expr >> *shift_op;
const auto shift_op_def = (string("<<") | string(">>")) > add_expr;
/// add_expr ::= mul_expr (('+' | '-') mul_expr)*       ('->' is not '-')
const auto add_expr_def = mul_expr >> *add_op;
const auto add_op_def = (string("+") | (string("-") >> !lit('>'))) > mul_expr;
/// mul_expr ::= neg_expr (('*' | '/' | '%') neg_expr)*
const auto mul_expr_def = neg_expr >> *mul_op;
const auto mul_op_def =
    ((string("*") >> !lit('*')) | string("/") | string("%")) > neg_expr;
/// neg_expr ::= ('-' | '~')* pow_expr
const auto neg_expr_def =
    *((string("-") >> !lit('>')) | string("~")) >> pow_expr;
/// pow_expr ::= primary ('**' pow_operand)*            (right associative)
const auto pow_expr_def = primary >> *pow_op;
const auto pow_op_def = string("**") > pow_operand;
const auto pow_operand_def =
    *((string("-") >> !lit('>')) | string("~")) >> primary;
/// primary ::= number | call | identifier | '(' expr ')'
const auto primary_def =
    number | call | identifier | (lit('(') > expr > lit(')'));
/// call ::= identifier '(' expr (',' expr)* ')'
const auto call_def = identifier >> lit('(') >> (expr % ',') > lit(')');

// Declarations.

/// argument ::= [kind_name ':'] expr
// X3 does not undo a failed alternative's attribute, so look ahead first.
// A key may be a reserved word: `redistribute(from: block, to: cyclic)`.
const auto argument_def =
    -(&(kind_name >> ':' >> !lit(':')) >> kind_name >> ':') >> expr;
/// edge ::= number '-' number
const auto edge_def = number > lit('-') > number;
/// topology_expr ::= kind '(' [argument (',' argument)*] ')'
///                   ['{' edge (',' edge)* '}']
const auto topology_expr_def = kind_name >> lit('(') >
                               -(argument % ',') > lit(')') >
                               -edge_list;
const auto edge_list_def = lit('{') >> &digit > (edge % ',') > lit('}');
/// topology_ref ::= topology_expr | identifier
const auto topology_ref_def = topology_expr | identifier;
/// topology_decl ::= 'topology' identifier '=' topology_expr ';'
const auto topology_decl_def = kw_topology > identifier > lit('=') >
                               topology_expr > lit(';');
/// quantity ::= decimal [unit ['/' unit]]
const auto quantity_def =
    x3::raw[lexeme[+digit >> -('.' >> +digit) >>
                   -(char_("eE") >> -char_("+-") >> +digit)]] >>
    x3::raw[lexeme[-(+alpha >> -('/' >> +alpha))]];
/// field ::= identifier ':' (quantity | identifier)
const auto field_def = identifier > lit(':') > (quantity | identifier);
/// model_decl ::= 'model' identifier '=' '{' field (',' field)* '}' ';'
const auto model_decl_def = kw_model > identifier > lit('=') > lit('{') >
                            (field % ',') > lit('}') > lit(';');
/// collective_expr ::= kind ['(' [argument (',' argument)*] ')']
const auto collective_expr_def =
    kind_name >> -(lit('(') > -(argument % ',') > lit(')'));
/// collective_decl ::= 'collective' identifier '=' collective_expr
///                     'on' topology_ref ['using' identifier] ';'
const auto collective_decl_def = kw_collective > identifier > lit('=') >
                                 collective_expr > kw_on > topology_ref >
                                 -(kw_using > identifier) > lit(';');

// Schedules.

/// target ::= identifier ['if' expr]
const auto target_def = identifier > -(kw_if > expr);
/// mode ::= 'copy' | 'reduce'
const auto mode_def =
    lexeme[x3::raw[lit("copy") | lit("reduce")] >> !idchar];
/// transfer ::= expr '->' expr [':' expr] ['from' identifier]
///              ['into' target (',' target)*] ['copy' | 'reduce']
///              ['when' expr]
const auto transfer_def = expr > arrow > expr > -(lit(':') > expr) >
                          -(kw_from > identifier) >
                          -(kw_into > (target % ',')) > -mode >
                          -(kw_when > expr);
/// step ::= 'step' [identifier] '{' [step_item (';' step_item)* [';']] '}'
const auto step_def = kw_step > -identifier > lit('{') >
                      -(step_item % ';') > -lit(';') > lit('}');
/// rule_loop ::= 'for' identifier 'in' expr '..' expr
///               '{' transfer (';' transfer)* [';'] '}'
const auto rule_loop_def = kw_for > identifier > kw_in > expr > dots > expr >
                           lit('{') > (transfer % ';') > -lit(';') > lit('}');
/// step_item ::= rule_loop | transfer
const auto step_item_def = rule_loop | transfer;
/// invariant ::= 'invariant' [identifier ':'] expr
const auto invariant_def =
    kw_invariant > -(&(identifier >> ':' >> !lit(':')) >> identifier >> ':') >
    expr;
/// for_loop ::= 'for' identifier 'in' ['reverse'] expr '..' expr
///              invariant* '{' body_item* '}'
const auto for_loop_def = kw_for > identifier > kw_in > x3::matches[kw_reverse] >
                          expr > dots > expr > *invariant > lit('{') >
                          *body_item > lit('}');
/// buffer_decl ::= 'buffer' identifier (',' identifier)* ';'
const auto buffer_decl_def = kw_buffer > (identifier % ',') > lit(';');
/// chunks_decl ::= 'chunks' expr ';'
const auto chunks_decl_def = kw_chunks > expr > lit(';');
/// starts_empty_decl ::= identifier (',' identifier)* 'starts' 'empty' ';'
/// Committed to only once 'starts' follows the names, so a stray transfer
/// outside a step keeps its own error.
const auto starts_empty_decl_def = &((identifier % ',') >> kw_starts) >
                                   (identifier % ',') > kw_starts > kw_empty >
                                   lit(';');
/// body_item ::= step | for_loop | buffer_decl | chunks_decl
///             | starts_empty_decl
const auto body_item_def =
    step | for_loop | buffer_decl | chunks_decl | starts_empty_decl;
/// param_range ::= 'where' identifier 'in' expr '..' expr
const auto param_range_def =
    kw_where > identifier > kw_in > expr > dots > expr;
/// then_part ::= 'then' identifier
const auto then_part_def = kw_then > identifier;
/// then_parts ::= then_part+
const auto then_parts_def = +then_part;
/// composition ::= '=' identifier then_parts ';'
const auto composition_def = lit('=') > identifier > then_parts > lit(';');
/// schedule_body ::= '{' body_item* '}' | composition
const auto schedule_body_def =
    (lit('{') > *body_item > lit('}')) | composition;
/// schedule_decl ::= 'schedule' identifier ':' collective_expr
///                   'on' topology_ref ['using' identifier] param_range*
///                   schedule_body
const auto schedule_decl_def = kw_schedule > identifier > lit(':') >
                               collective_expr > kw_on > topology_ref >
                               -(kw_using > identifier) > *param_range >
                               schedule_body;
/// declaration ::= topology_decl | model_decl | collective_decl
///               | schedule_decl
const auto declaration_def =
    topology_decl | model_decl | collective_decl | schedule_decl;

BOOST_SPIRIT_DEFINE(identifier, kind_name, number, expr, conditional, edge_list,
                    branch, or_expr, or_op, and_expr, and_op, not_expr,
                    cmp_expr, cmp_op, bor_expr, bor_op, bxor_expr, bxor_op,
                    band_expr, band_op, shift_expr, shift_op, add_expr, add_op,
                    mul_expr, mul_op, neg_expr, pow_expr, pow_op, pow_operand,
                    primary, call, argument, edge, topology_expr, topology_ref,
                    topology_decl, quantity, field, model_decl, collective_expr,
                    collective_decl, target, mode, transfer, rule_loop,
                    step_item, step, invariant, for_loop, buffer_decl,
                    chunks_decl, starts_empty_decl, body_item, param_range,
                    then_part, then_parts, composition, schedule_body,
                    schedule_decl, declaration)

} // namespace collc::grammar

namespace collc {

namespace {

bool startsDeclaration(const char *it, const char *end) {
  for (llvm::StringRef kw : {"topology", "model", "collective", "schedule"}) {
    if (static_cast<size_t>(end - it) > kw.size() &&
        llvm::StringRef(it, kw.size()) == kw &&
        !(std::isalnum(static_cast<unsigned char>(it[kw.size()])) ||
          it[kw.size()] == '_'))
      return true;
  }
  return false;
}

/// Error recovery: the next line that starts with a declaration keyword.
const char *nextDeclaration(const char *it, const char *end) {
  while (it != end) {
    while (it != end && *it != '\n')
      ++it;
    if (it == end)
      return end;
    ++it;
    while (it != end && (*it == ' ' || *it == '\t' || *it == '\r'))
      ++it;
    if (startsDeclaration(it, end))
      return it;
  }
  return end;
}

/// The grammar is recursive-descent: refuse input nested deeper than
/// maxNestingDepth before parsing, so no input can exhaust the stack.
/// Conditionals count too (`a ? b ? c ...`), until the statement ends.
const char *findExcessiveNesting(const char *it, const char *end) {
  unsigned depth = 0, conditionals = 0;
  for (; it != end; ++it) {
    switch (*it) {
    case '#':
      while (it != end && *it != '\n')
        ++it;
      if (it == end)
        return nullptr;
      break;
    case '(':
    case '[':
    case '{':
      if (++depth + conditionals > maxNestingDepth)
        return it;
      break;
    case ')':
    case ']':
    case '}':
      if (depth)
        --depth;
      conditionals = 0;
      break;
    case '?':
      if (depth + ++conditionals > maxNestingDepth)
        return it;
      break;
    case ';':
      conditionals = 0;
      break;
    default:
      break;
    }
  }
  return nullptr;
}

/// What the parser found at `it`, for "expected X, found Y": a character in
/// quotes, or what a byte outside printable ASCII is.
std::string describeFound(const char *it, const char *end) {
  if (it == end)
    return "end of file";
  auto hex = [](unsigned char byte) {
    return std::string{llvm::hexdigit(byte >> 4), llvm::hexdigit(byte & 15)};
  };
  auto byte = static_cast<unsigned char>(*it);
  if (byte < 0x80) {
    if (std::isprint(byte))
      return "'" + std::string(1, *it) + "'";
    return "a control character (0x" + hex(byte) + ")";
  }
  // A UTF-8 sequence: its length is in its first byte.
  size_t length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1;
  length = std::min<size_t>(length, end - it);
  std::string bytes;
  for (size_t i = 0; i < length; ++i)
    bytes += (i ? " " : "") + hex(static_cast<unsigned char>(it[i]));
  const auto *source = reinterpret_cast<const llvm::UTF8 *>(it);
  llvm::UTF32 codePoint = 0;
  llvm::UTF32 *target = &codePoint;
  if (length < 2 ||
      llvm::ConvertUTF8toUTF32(&source, source + length, &target, target + 1,
                               llvm::strictConversion) != llvm::conversionOK)
    return "a byte that is not ASCII (0x" + hex(byte) +
           ") and starts no UTF-8 character";
  std::string code = llvm::utohexstr(codePoint);
  code.insert(0, code.size() < 4 ? 4 - code.size() : 0, '0');
  return "a non-ASCII character (U+" + code + ", UTF-8 bytes " + bytes +
         "); names and operators are ASCII";
}

} // namespace

ast::Program parseProgram(unsigned bufferId, DiagnosticEngine &diags) {
  namespace x3 = boost::spirit::x3;
  const llvm::MemoryBuffer *buffer =
      diags.getSourceMgr().getMemoryBuffer(bufferId);
  const char *it = buffer->getBufferStart();
  const char *end = buffer->getBufferEnd();
  ast::Program program;
  // A UTF-8 byte-order mark, as some editors write, is no part of the text.
  if (llvm::StringRef(it, end - it).startswith("\xEF\xBB\xBF"))
    it += 3;

  if (const char *deep = findExcessiveNesting(it, end)) {
    diags.error(llvm::SMLoc::getFromPointer(deep),
                "nesting deeper than " + llvm::Twine(maxNestingDepth) +
                    " levels");
    return program;
  }

  // Past DiagnosticEngine::maxErrors errors are counted but not printed, so
  // going on is cheap and the summary stays true.
  while (true) {
    it = grammar::skipBlanks(it, end);
    if (it == end)
      break;
    ast::Declaration decl;
    const char *start = it;
    try {
      if (x3::phrase_parse(it, end, grammar::declaration, grammar::skipper,
                           decl)) {
        program.declarations.push_back(std::move(decl));
        continue;
      }
      diags.error(llvm::SMLoc::getFromPointer(start),
                  "expected a declaration ('topology', 'model', "
                  "'collective' or 'schedule')");
    } catch (const x3::expectation_failure<const char *> &failure) {
      // What is missing belongs after the last token, as in a ';' left off
      // at a line's end: point there where the next token is lines away.
      const char *found = grammar::skipBlanks(failure.where(), end);
      const char *after = grammar::endOfLastToken(start, found);
      bool linesApart = llvm::StringRef(after, found - after).contains('\n');
      std::string foundAt;
      if (linesApart && found != end)
        foundAt =
            " on line " +
            std::to_string(diags.getSourceMgr()
                               .getLineAndColumn(
                                   llvm::SMLoc::getFromPointer(found), bufferId)
                               .first);
      diags.error(llvm::SMLoc::getFromPointer(linesApart ? after : found),
                  "expected " + failure.which() + ", found " +
                      describeFound(found, end) + foundAt);
    }
    it = nextDeclaration(start, end);
  }
  return program;
}

} // namespace collc
