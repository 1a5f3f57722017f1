#include "emit/Emitter.h"
#include "emit/Bindings.h"

#include "alltoallv/Emit.h"

#include "ir/Instantiate.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <utility>
#include <vector>

using namespace collc;
using namespace collc::emit;
using collc::ir::CollectiveKind;
using collc::ir::ExprOp;

namespace {
/// Names the emitted code declares itself, and C++ keywords a .coll name
/// could collide with: a spec name among them gets a trailing underscore.
bool isReserved(llvm::StringRef name) {
  // clang-format off
  static const llvm::StringSet<> reserved = {
      "r", "p", "origin", "dest", "index", "me", "eng", "call", "step",
      "live", "collc_name", "collc_member", "collc_member_p", "collc_ranges",
      "collc_ranks", "collc_values", "fits", "chunks", "rc", "transfers", "t",
      "auto", "bool", "break", "case", "char", "class", "const", "continue",
      "default", "delete", "do", "double", "else", "enum", "false", "float",
      "for", "goto", "if", "int", "long", "new", "return", "short", "signed",
      "sizeof", "static", "struct", "switch", "this", "true", "union",
      "unsigned", "void", "while", "and", "or", "not", "xor", "int64_t",
      "std"};
  // clang-format on
  return reserved.contains(name);
}

/// "spec.coll:12" for a place in the spec, "broadcast.coll:34" for one in
/// another file (a library schedule the spec's collective resolved to):
/// file names only, so the output does not depend on where files live.
std::string sourcePlace(const EmitOptions &options, llvm::SMLoc loc) {
  if (!options.sourceMgr || !loc.isValid())
    return options.specName;
  unsigned buffer = options.sourceMgr->FindBufferContainingLoc(loc);
  std::string file = options.specName;
  if (buffer != 0 && buffer != options.sourceMgr->getMainFileID())
    file = llvm::sys::path::filename(
               options.sourceMgr->getMemoryBuffer(buffer)->getBufferIdentifier())
               .str();
  return file + ":" +
         std::to_string(options.sourceMgr->getLineAndColumn(loc).first);
}

/// An expression as a C++ operand: printCpp parenthesizes inside, not
/// around, and C++ ranks `^` below `==`.
std::string operand(const ir::Expr &e, llvm::ArrayRef<std::string> names) {
  std::string text = ir::printCpp(e, names);
  if (e.op == ExprOp::Const || e.op == ExprOp::Var)
    return text;
  return concat({"(", text, ")"});
}

class ScheduleEmitter {
public:
  ScheduleEmitter(const VerifiedSchedule &v, const EmitOptions &options,
                  llvm::raw_string_ostream &os)
      : s(*v.schedule), report(v.report), options(options), os(os) {
    names = s.slotNames;
    for (unsigned slot = ir::NumFixedSlots; slot < names.size(); ++slot)
      if (isReserved(names[slot]) || names[slot] == "q")
        names[slot] += "_";
    // A family's shift amount is the function's argument `q`.
    if (s.collective.shiftOf)
      names[s.collective.shiftOf->slot] = "q";
  }

  void emitFunction(const Binding &b) {
    // One body for both communicators (collc::rt::CommRef), called by the
    // MPI_Comm function and by its collc::rt::LocalComm twin in `local`.
    os << "static int " << s.name << "(" << commParams(b, "collc::rt::CommRef")
       << ") {\n";
    if (s.collective.kind == CollectiveKind::Alltoallv) {
      emitIrregularBody(b);
      return;
    }
    os << "  collc::rt::Call call;\n";
    // A named array, not a literal: its address is this function's alone
    // (identical literals of two functions may share one), and the runtime
    // tells calls of different schedules apart by it (Engine::Signature).
    os << "  static const char collc_name[] = " << quote(s.name) << ";\n";
    os << "  call.name = collc_name;\n";
    os << "  call.kind = collc::rt::Kind::" << b.kind << ";\n";
    if (s.collective.kind == CollectiveKind::Shift && !s.collective.shiftOf)
      os << "  call.shift = " << s.collective.shift << ";\n";
    if (!s.collective.commutative) // proved to fold in rank order
      os << "  call.foldsInOrder = true;\n";
    os << "  call.comm = comm.mpi;\n  call.local = comm.local;\n"
       << "  call.rotation = comm.rotation;\n  " << b.setup;
    // A call like one of the last on its communicator, whose checks below
    // passed with these arguments, runs as recorded (Engine::replayLast).
    os << "  int collc_rc = MPI_SUCCESS;\n  if (collc::rt::Engine::replayLast("
          "call, collc_rc))\n"
       << "    return collc_rc;\n";
    os << "  collc::rt::Engine eng;\n";
    os << "  if (int rc = eng.connect(call))\n    return rc;\n";
    if (ir::isRooted(s.collective.kind))
      os << "  if (root != " << s.collective.root
         << ")\n    return eng.fail(MPI_ERR_ROOT, "
         << quote("the schedule is proved for root " +
                  std::to_string(s.collective.root))
         << ");\n";
    os << "  const int64_t p = eng.size();\n";
    os << "  const int64_t me = eng.rank();\n";
    emitSizeCheck();
    if (const ir::ExprRef &to = s.collective.permuteTo)
      os << "  // Where each rank's block goes: "
         << s.collective.permutationText() << ".\n"
         << "  int64_t *collc_to = eng.permutation();\n"
         << "  for (int64_t " << names[ir::SlotRank] << " = 0; "
         << names[ir::SlotRank] << " < p; ++" << names[ir::SlotRank]
         << ")\n    collc_to[" << names[ir::SlotRank]
         << "] = " << ir::printCpp(*to, names) << ";\n";
    os << "  const int64_t chunks = "
       << (s.chunks ? operand(*s.chunks, names) : "1") << ";\n";
    uint64_t startEmpty = 0;
    for (size_t b = 0; b < s.buffers.size() && b < 64; ++b)
      if (s.startsEmpty(b))
        startEmpty |= uint64_t(1) << b;
    os << "  if (int rc = eng.start(" << s.buffers.size() << ", chunks"
       << (startEmpty ? ", " + std::to_string(startEmpty) + "u" : "") << "))\n"
       << "    return rc;\n"
       << "  if (eng.replayed()) // as recorded from the last like call\n"
       << "    return MPI_SUCCESS;\n";
    os << "  int64_t step = 0;\n";
    emitBody(s.body, 1);
    os << "  return eng.finish();\n}\n\n";
    os << "int " << s.name << "(" << b.params << ") {\n  return " << s.name
       << "(" << commRefArgs(b) << ");\n}\n";
  }

private:
  /// An alltoallv schedule: the same walk of the steps, on an engine that
  /// notes this rank's messages (its own block for the receiver, or the
  /// pieces a filter names; sizes from the counts at run time) and then
  /// moves them. A rank's steps depend on the size alone, so a call like an
  /// earlier one skips the walk.
  void emitIrregularBody(const Binding &b) {
    os << "  static const char collc_name[] = " << quote(s.name) << ";\n";
    os << "  collc::rt::AlltoallvSteps eng;\n";
    os << "  if (int rc = eng.connect(collc_name, comm))\n    return rc;\n";
    os << "  const int64_t p = eng.size();\n";
    os << "  const int64_t me = eng.rank();\n";
    emitSizeCheck();
    os << "  if (!eng.known()) {\n";
    if (s.chunks)
      os << "    if (int rc = eng.splitBlocks(" << operand(*s.chunks, names)
         << "))\n      return rc;\n";
    os << "    int64_t step = 0;\n";
    emitBody(s.body, 2);
    os << "  }\n";
    os << "  return eng.run(sendbuf, sendcounts, sdispls, sendtype, recvbuf, "
          "recvcounts, rdispls, recvtype);\n}\n\n";
    os << "int " << s.name << "(" << b.params << ") {\n  return " << s.name
       << "(" << commRefArgs(b) << ");\n}\n";
  }

  std::string indent(unsigned depth) { return std::string(2 * depth, ' '); }

  std::string sourceLine(llvm::SMLoc loc) {
    if (!options.sourceMgr || !loc.isValid())
      return "";
    unsigned buffer = options.sourceMgr->FindBufferContainingLoc(loc);
    if (!buffer)
      return "";
    llvm::StringRef text =
        options.sourceMgr->getMemoryBuffer(buffer)->getBuffer();
    const char *begin = loc.getPointer();
    while (begin > text.begin() && begin[-1] != '\n')
      --begin;
    const char *end = loc.getPointer();
    while (end < text.end() && *end != '\n')
      ++end;
    return llvm::StringRef(begin, end - begin).trim().str();
  }

  std::string where(llvm::SMLoc loc) { return sourcePlace(options, loc); }

  /// The topology's number of ranks as a C++ expression over its dimensions
  /// (ir::countRanks, printed).
  std::string rankCount() {
    std::vector<std::string> dims;
    for (const ir::ExprRef &d : s.topology.dims)
      dims.push_back(operand(*d, names));
    switch (s.topology.kind) {
    case TopologyKind::Mesh:
    case TopologyKind::Torus:
      return llvm::join(dims, " * ");
    case TopologyKind::Hypercube:
      return "(int64_t(1) << " + dims[0] + ")";
    default:
      return dims[0];
    }
  }

  // Outside the proved sizes, or on a size the topology does not have, the
  // function refuses: it never runs an unproved schedule.
  /// The one wording of a size the emitted function refuses, for a
  /// schedule of fixed size ("6 ranks") and a family ("p in 2..8") alike.
  static std::string sizeMismatch(llvm::StringRef topology,
                                  llvm::StringRef sizes) {
    return ("the communicator's size does not fit " + topology + " (" +
            sizes + ")")
        .str();
  }

  void emitSizeCheck() {
    std::string topology = verify::describeTopology(s.topology);
    if (!s.isSymbolic()) {
      emitFixedSizeCheck(topology);
      return;
    }
    std::string range;
    for (const verify::ParamRange &r : report.ranges)
      range += (range.empty() ? "" : ", ") + r.name + " in " +
               std::to_string(r.lo) + ".." + std::to_string(r.hi);
    os << "  // The member of the family " << topology
       << " with p ranks, within the proved range " << range << ".\n";
    const std::string mismatch = "    return eng.fail(MPI_ERR_SIZE, " +
                                 quote(sizeMismatch(topology, range)) + ");\n";
    // The caller's shift amount first, then the size.
    for (const ir::Parameter &param : s.params)
      if (const verify::ParamRange *r = provedRange(param);
          r && s.collective.isShiftAmount(param.slot))
        os << "  if (q < " << r->lo << " || q > " << r->hi
           << ")\n    return eng.fail(MPI_ERR_ARG, "
           << quote("the schedule is proved for q in " + std::to_string(r->lo) +
                    ".." + std::to_string(r->hi))
           << ");\n";
    // The parameters found from the size, each with its proved range.
    std::vector<std::pair<const ir::Parameter *, const verify::ParamRange *>>
        searched;
    for (const ir::Parameter &param : s.params) {
      const verify::ParamRange *r = provedRange(param);
      if (!r || s.collective.isShiftAmount(param.slot))
        continue;
      // ring(p): the size parameter is p itself; only its range is checked.
      if (param.slot == ir::SlotSize) {
        os << "  if (p < " << r->lo << " || p > " << r->hi << ")\n" << mismatch;
      } else {
        searched.emplace_back(&param, r);
      }
    }
    if (searched.empty()) {
      std::string count = rankCount();
      if (count != "p")
        os << "  if (" << count << " != p)\n" << mismatch;
      return;
    }
    emitMemberSearch(searched, mismatch);
  }

  /// A schedule of fixed size runs on that many ranks only.
  void emitFixedSizeCheck(const std::string &topology) {
    std::vector<int64_t> dims;
    for (const ir::ExprRef &d : s.topology.dims)
      dims.push_back(d->value);
    llvm::Expected<int64_t> n = ir::countRanks(s.topology.kind, dims);
    int64_t ranks = n ? *n : 0;
    if (!n)
      llvm::consumeError(n.takeError());
    os << "  if (p != " << ranks << ")\n    return eng.fail(MPI_ERR_SIZE, "
       << quote(sizeMismatch(topology, std::to_string(ranks) + " ranks"))
       << ");\n";
  }

  /// The range `param` is proved over (a report holds one a parameter), if
  /// any.
  const verify::ParamRange *provedRange(const ir::Parameter &param) const {
    auto r = llvm::find_if(report.ranges, [&](const verify::ParamRange &c) {
      return c.name == param.name;
    });
    return r == report.ranges.end() ? nullptr : &*r;
  }

  /// The member collc/Member.h names for p ranks within the `searched`
  /// parameters' proved ranges, found once per size and thread; none is
  /// the size mismatch.
  void emitMemberSearch(
      const std::vector<std::pair<const ir::Parameter *,
                                  const verify::ParamRange *>> &searched,
      const std::string &mismatch) {
    os << "  static thread_local int64_t collc_member_p = -1;\n"
       << "  static thread_local int64_t collc_member[" << searched.size()
       << "];\n"
       << "  if (collc_member_p != p) {\n"
       << "    static const collc::member::Range collc_ranges[] = {";
    for (size_t i = 0; i < searched.size(); ++i)
      os << (i ? ", " : "") << "{" << searched[i].second->lo << ", "
         << searched[i].second->hi << "}";
    os << "};\n"
       << "    auto collc_ranks = [&](const int64_t *collc_values) {\n";
    for (size_t i = 0; i < searched.size(); ++i)
      os << "      [[maybe_unused]] const int64_t "
         << names[searched[i].first->slot] << " = collc_values[" << i << "];\n";
    os << "      return " << rankCount() << ";\n    };\n"
       << "    if (!collc::member::closest(collc_ranges, " << searched.size()
       << ", p, collc_ranks, collc_member))\n  " << mismatch
       << "    collc_member_p = p;\n  }\n";
    for (size_t i = 0; i < searched.size(); ++i)
      os << "  [[maybe_unused]] const int64_t "
         << names[searched[i].first->slot] << " = collc_member[" << i << "];\n";
  }

  /// Where the step being emitted is: each enclosing body (outermost
  /// first), the index of the item being emitted in it, and the loop whose
  /// body it is (null at the top).
  struct Frame {
    const std::vector<ir::BodyItem> *body;
    size_t index;
    const ir::Loop *loop;
  };
  std::vector<Frame> frames;

  /// Whether any step of items [from, end) of `body` sends from `buffer`.
  static bool reads(const std::vector<ir::BodyItem> &body, size_t from,
                    unsigned buffer) {
    for (size_t i = from; i < body.size(); ++i) {
      if (const auto *step = std::get_if<ir::Step>(&body[i])) {
        if (llvm::any_of(step->rules, [&](const ir::TransferRule &rule) {
              return rule.fromBuffer == buffer;
            }))
          return true;
      } else if (reads(std::get<std::shared_ptr<ir::Loop>>(body[i])->body, 0,
                       buffer)) {
        return true;
      }
    }
    return false;
  }

  /// The buffers a delivery of the current step can still matter in, as a
  /// C++ expression of type uint64_t: the result (finish() reads it), and
  /// every buffer a later step sends from. A buffer that only an earlier
  /// iteration of an enclosing loop reads is dead in that loop's last
  /// iteration (Algorithm 4.9's `msg` in its last step). Empty when every
  /// buffer stays live.
  std::string liveBuffers() {
    std::vector<std::string> bits;
    bool someDead = false;
    for (unsigned b = 0; b < s.buffers.size() && b < 64; ++b) {
      std::string bit = concat({"(uint64_t(1) << ", std::to_string(b), ")"});
      bool always = b == 0;
      std::vector<std::string> unlessLast; // loops that read b again
      for (const Frame &f : frames) {
        if (always)
          break;
        if (reads(*f.body, f.index + 1, b)) {
          always = true;
        } else if (f.loop && reads(f.loop->body, 0, b)) {
          const std::string &v = names[f.loop->slot];
          std::string last =
              operand(f.loop->reverse ? *f.loop->lo : *f.loop->hi, names);
          unlessLast.push_back(v + " != " + last);
        }
      }
      if (always) {
        bits.push_back(bit);
      } else if (!unlessLast.empty()) {
        someDead = true;
        bits.push_back(concat({"((", llvm::join(unlessLast, " || "), ") ? ",
                               bit, " : uint64_t(0))"}));
      } else {
        someDead = true;
      }
    }
    return someDead ? llvm::join(bits, " | ") : std::string();
  }

  void emitBody(const std::vector<ir::BodyItem> &body, unsigned depth,
                const ir::Loop *loop = nullptr) {
    frames.push_back({&body, 0, loop});
    for (size_t index = 0; index < body.size(); ++index) {
      frames.back().index = index;
      const ir::BodyItem &item = body[index];
      if (const auto *step = std::get_if<ir::Step>(&item)) {
        emitStep(*step, depth);
        continue;
      }
      const ir::Loop &loop = *std::get<std::shared_ptr<ir::Loop>>(item);
      const std::string &v = names[loop.slot];
      std::string lo = operand(*loop.lo, names);
      std::string hi = operand(*loop.hi, names);
      os << indent(depth) << "// " << sourceLine(loop.loc) << "\n";
      if (loop.reverse)
        os << indent(depth) << "for (int64_t " << v << " = " << hi << "; "
           << v << " >= " << lo << "; --" << v << ") {\n";
      else
        os << indent(depth) << "for (int64_t " << v << " = " << lo << "; "
           << v << " <= " << hi << "; ++" << v << ") {\n";
      emitBody(loop.body, depth + 1, &loop);
      os << indent(depth) << "}\n";
    }
    frames.pop_back();
  }

  static bool isConstantRule(const ir::TransferRule &rule) {
    const ir::Expr *g = rule.guard.get();
    return g && g->op == ExprOp::Eq && g->args[0]->op == ExprOp::Var &&
           g->args[0]->slot == ir::SlotRank && g->args[1]->isConst() &&
           rule.peer->isConst() && !rule.selector &&
           llvm::all_of(rule.into,
                        [](const ir::Delivery &d) { return !d.when; });
  }

  static uint64_t constantMask(const ir::TransferRule &rule) {
    uint64_t mask = 0;
    for (const ir::Delivery &d : rule.into)
      mask |= uint64_t(1) << d.buffer;
    return mask;
  }

  void emitStep(const ir::Step &step, unsigned depth) {
    std::string label = step.name.empty() ? "step at " + where(step.loc)
                                          : "step " + step.name + " (" +
                                                where(step.loc) + ")";
    std::string in = indent(depth);
    os << in << "// " << label << "\n";
    os << in << "++step;\n";
    // A transfer that delivers only into buffers no later step reads is
    // left out at both ends: it cannot change the result.
    const std::string live = liveBuffers();
    if (!live.empty())
      os << in << "const uint64_t live = " << live << ";\n";
    if (!step.rules.empty() && llvm::all_of(step.rules, isConstantRule)) {
      // A hand-written step: a table of its transfers.
      os << in << "{\n";
      os << in << "  // sender, receiver, from buffer, into buffers (bits), "
                  "reduce\n";
      os << in << "  static constexpr int64_t transfers[][5] = {\n";
      for (const ir::TransferRule &rule : step.rules)
        os << in << "      {" << rule.guard->args[1]->value << ", "
           << rule.peer->value << ", " << rule.fromBuffer << ", "
           << constantMask(rule) << ", "
           << (rule.mode == ir::TransferMode::Reduce ? 1 : 0) << "}, // "
           << sourceLine(rule.loc) << "\n";
      os << in << "  };\n";
      std::string mask = live.empty() ? "static_cast<uint64_t>(t[3])"
                                      : "(static_cast<uint64_t>(t[3]) & live)";
      std::string alive = live.empty() ? "" : " && " + mask;
      os << in << "  for (const auto &t : transfers)\n"
         << in << "    if (t[0] == me" << alive << ")\n"
         << in << "      eng.sendAll(t[1], static_cast<int>(t[2]));\n";
      os << in << "  for (const auto &t : transfers)\n"
         << in << "    if (t[1] == me" << alive << ")\n"
         << in << "      eng.receive(t[0], " << mask << ", t[4] != 0);\n";
      os << in << "}\n";
    } else {
      for (const ir::TransferRule &rule : step.rules)
        emitRule(rule, depth, !live.empty());
    }
    os << in << "if (int rc = eng.endStep(step, " << quote(label) << "))\n"
       << in << "  return rc;\n";
  }

  /// One transfer rule; with `live`, only where it delivers into a buffer
  /// the step's `live` mask keeps.
  void emitRule(const ir::TransferRule &rule, unsigned depth, bool live) {
    std::string in = indent(depth);
    std::string guard =
        rule.guard ? operand(*rule.guard, names) : std::string();
    std::string peer = operand(*rule.peer, names);
    std::string mask = deliveryMask(rule, live);
    os << in << "// " << sourceLine(rule.loc) << "\n";
    emitRuleSender(rule, in, guard, peer, mask, live);
    emitRuleReceiver(rule, in, guard, peer, mask, live);
  }

  /// The receiver's buffers, over the sender's environment (r is the
  /// sending rank in every expression).
  std::string deliveryMask(const ir::TransferRule &rule, bool live) {
    std::string mask;
    for (const ir::Delivery &d : rule.into) {
      std::string bit =
          concat({"(uint64_t(1) << ", std::to_string(d.buffer), ")"});
      if (d.when)
        bit = concat(
            {"(", operand(*d.when, names), " ? ", bit, " : uint64_t(0))"});
      if (!mask.empty())
        mask += " | ";
      mask += bit;
    }
    if (live)
      mask = concat({"((", mask, ") & live)"});
    return mask;
  }

  /// This rank as the rule's sender.
  void emitRuleSender(const ir::TransferRule &rule, const std::string &in,
                      const std::string &guard, const std::string &peer,
                      const std::string &mask, bool live) {
    os << in << "{\n" << in << "  [[maybe_unused]] const int64_t r = me;\n";
    std::string sendIn = in + "  ";
    std::string condition = guard;
    if (live)
      condition = (guard.empty() ? "" : guard + " && ") + mask + " != 0";
    if (!condition.empty()) {
      // operand() parenthesises all but a variable or a constant.
      const bool bare =
          live || rule.guard->op == ExprOp::Var || rule.guard->isConst();
      os << in << "  if " << (bare ? "(" + condition + ")" : condition) << "\n";
      sendIn += "  ";
    }
    emitSendCall(rule, sendIn, peer);
    os << in << "}\n";
  }

  /// The engine call that sends the rule's buffer, whole or filtered by its
  /// selector.
  void emitSendCall(const ir::TransferRule &rule, const std::string &sendIn,
                    const std::string &peer) {
    // An alltoallv schedule's engine keeps a filter past the walk, for the
    // run that moves the blocks, so it captures the walk's values by copy.
    const bool irregular = s.collective.kind == CollectiveKind::Alltoallv;
    if (!rule.selector || (irregular && ir::sendsOwnBlock(rule))) {
      os << sendIn << "eng.sendAll(" << peer << ", " << rule.fromBuffer
         << ");\n";
      return;
    }
    std::vector<unsigned> used;
    ir::collectSlots(*rule.selector, used);
    auto param = [&](unsigned slot, const char *name) {
      return llvm::is_contained(used, slot) ? std::string("int64_t ") + name
                                            : std::string("int64_t");
    };
    os << sendIn << "eng.send(" << peer << ", " << rule.fromBuffer
       << (irregular ? ", [=](" : ", [&](") << param(ir::SlotOrigin, "origin")
       << ", " << param(ir::SlotDest, "dest") << ", "
       << param(ir::SlotIndex, "index") << ") {\n"
       << sendIn << "  return static_cast<bool>("
       << ir::printCpp(*rule.selector, names) << ");\n"
       << sendIn << "});\n";
  }

  /// This rank as a receiver: every sender whose rule names it, in rank
  /// order (the order deliveries follow).
  void emitRuleReceiver(const ir::TransferRule &rule, const std::string &in,
                        const std::string &guard, const std::string &peer,
                        const std::string &mask, bool live) {
    std::string accepts =
        concat({"if (", guard.empty() ? "" : guard + " && ", peer, " == me",
                live ? " && " + mask + " != 0" : "", ")"});
    std::string receive = concat(
        {"eng.receive(r, ", mask, ", ",
         rule.mode == ir::TransferMode::Reduce ? "true" : "false", ");"});
    auto named = report.namedSenders.find(&rule);
    if (named == report.namedSenders.end()) {
      os << in << "for (int64_t r = 0; r < p; ++r)\n"
         << in << "  " << accepts << "\n"
         << in << "    " << receive << "\n";
      return;
    }
    emitNamedSenders(rule, named->second, in, accepts, receive);
  }

  /// The prover showed that these candidates, evaluated at this rank,
  /// include every sender (Prover::namedSenders): a few evaluations per
  /// step instead of p.
  void emitNamedSenders(const ir::TransferRule &rule,
                        const std::vector<ir::ExprRef> &candidates,
                        std::string in, const std::string &accepts,
                        const std::string &receive) {
    os << in << "{\n" << in << "  [[maybe_unused]] const int64_t r = me;\n";
    // Where the guard's rank-free part fails no rank sends, and a candidate
    // need not be defined there.
    ir::ExprRef free = ir::rankFreeGuard(rule);
    if (free) {
      os << in << "  if (" << ir::printCpp(*free, names) << ") {\n";
      in += "  ";
    }
    os << in << "  int64_t collc_senders[] = {";
    for (size_t k = 0; k < candidates.size(); ++k)
      os << (k ? ", " : "") << ir::printCpp(*candidates[k], names);
    os << "};\n";
    const size_t n = candidates.size();
    if (n > 1)
      os << in << "  std::sort(collc_senders, collc_senders + " << n << ");\n";
    os << in << "  for (size_t collc_k = 0; collc_k < " << n
       << "; ++collc_k) {\n"
       << in << "    const int64_t r = collc_senders[collc_k];\n"
       << in << "    if (r < 0 || r >= p"
       << (n > 1 ? " || (collc_k > 0 && r == collc_senders[collc_k - 1])" : "")
       << ")\n"
       << in << "      continue;\n"
       << in << "    " << accepts << "\n"
       << in << "      " << receive << "\n"
       << in << "  }\n";
    if (free) {
      in.resize(in.size() - 2);
      os << in << "  }\n";
    }
    os << in << "}\n";
  }

  const ir::Schedule &s;
  const verify::ScheduleReport &report;
  const EmitOptions &options;
  llvm::raw_string_ostream &os;
  std::vector<std::string> names;
};

std::string proofComment(const ir::Schedule &s,
                         const verify::ScheduleReport &report,
                         llvm::StringRef location) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "// Schedule `" << s.name << "` (" << location
     << "): " << verify::describeCollective(s.collective) << " on "
     << verify::describeTopology(s.topology) << "\n";
  os << "// Proved";
  if (!report.ranges.empty()) {
    os << " for";
    for (const verify::ParamRange &r : report.ranges)
      os << " " << r.name << " = " << r.lo << ".." << r.hi;
  }
  // Where the simulator only cross-checked a proof by induction, how far
  // it got depends on the machine's speed: generated code must not.
  bool bySimulation = llvm::any_of(report.properties, [](const auto &r) {
    return llvm::StringRef(r.method).startswith("simulation");
  });
  if (bySimulation && !report.simulated.empty())
    os << " (simulated: " << report.simulated << ")";
  os << ":\n//";
  for (const verify::PropertyResult &r : report.properties)
    os << " " << verify::propertyName(r.property) << " ("
       << r.method << ")" << (&r == &report.properties.back() ? "." : ",");
  os << "\n";
  return text;
}

/// The header and source of one spec, in the order emitCpp writes them:
/// the includes, every schedule's function, every collective's choice or
/// pattern, then the any-root and local twins gathered on the way.
class FileEmitter {
public:
  FileEmitter(const Program &program, const EmitOptions &options,
              EmittedFiles &files)
      : program(program), options(options), files(files), header(files.header),
        source(files.source), localHeader(localHeaderText),
        localSource(localSourceText), anyRootHeader(anyRootHeaderText),
        anyRootSource(anyRootSourceText),
        qualifier(options.ns.empty() ? "::" : "::" + options.ns + "::") {}

  /// The banner, includes and opening namespace of both files.
  void begin(bool hasAlltoallvSchedule) {
    // 001 §3: an alltoallv collective runs a library pattern on the
    // runtime's irregular all-to-all, whose plan type the declaration names.
    bool hasAlltoallv =
        llvm::any_of(program.collectives, [&](const CollectiveDef &c) {
          return program.runsPattern(c);
        });
    bool hasRedistribution =
        llvm::any_of(program.collectives, [](const CollectiveDef &c) {
          return c.redistribution.has_value();
        });
    std::string banner = "// Generated by collc from " + options.specName +
                         ". Do not edit: change the spec and recompile.\n";
    // Each function also runs on the local backend (collc/Local.h).
    header << banner << "#pragma once\n\n#include <mpi.h>\n\n"
           << "namespace collc::rt {\nclass LocalComm;\n}\n\n"
           << (hasAlltoallv ? "#include \"collc/Alltoallv.h\"\n\n" : "")
           << namespaceOpen();
    source << banner << "#include \"" << options.baseName << ".h\"\n\n"
           << "#include \"collc/Member.h\"\n"
           << "#include \"collc/Runtime.h\"\n"
           << (hasAlltoallvSchedule ? "#include \"collc/Alltoallv.h\"\n" : "")
           << (hasRedistribution ? "#include \"collc/Redistribute.h\"\n" : "")
           << "\n#include <algorithm>\n"
           << "#include <cstdint>\n\n"
           << namespaceOpen();
  }

  /// A proved schedule's function, its twin on the local backend and, for
  /// a rooted one, its any-root twin.
  llvm::Error schedule(const VerifiedSchedule &v) {
    const ir::Schedule &s = *v.schedule;
    if (v.report.verdict() != verify::Status::Proved)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "schedule '" + s.name +
                                         "' is not proved");
    const Binding b = bindingFor(s.collective);
    // The function finds its member from the communicator's size; a
    // parameter that the size does not set must have one proved value.
    for (const ir::Parameter &param : s.params) {
      auto range = llvm::find_if(
          v.report.ranges, [&](const auto &r) { return r.name == param.name; });
      if (s.isMemberChoice(param.slot) && range != v.report.ranges.end() &&
          range->lo != range->hi)
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "schedule '" + s.name +
                "': the communicator's size does not set "
                "its parameter '" +
                param.name + "' (" + std::to_string(range->lo) + ".." +
                std::to_string(range->hi) +
                "); declare a collective that uses it, or compile one member "
                "(--param " +
                param.name + "=N..N)");
    }
    std::string comment = proofComment(s, v.report, location(s.loc));
    header << comment << "int " << s.name << "(" << b.params << ");\n\n";
    // The same function on the local backend, in the nested namespace
    // `local` (a second overload would make `&name` ambiguous).
    std::string local =
        "int " + s.name + "(" + commParams(b, "collc::rt::LocalComm &") + ")";
    localHeader << local << ";\n";
    localSource << local << " {\n  return " << qualifier << s.name << "("
                << commRefArgs(b) << ");\n}\n";
    source << comment;
    std::string body;
    llvm::raw_string_ostream bodyOs(body);
    ScheduleEmitter(v, options, bodyOs).emitFunction(b);
    source << bodyOs.str() << "\n";
    if (ir::isRooted(s.collective.kind)) {
      anyRootHeader << "int " << s.name << "(" << b.params << ");\n";
      anyRootSource << anyRootFunction(s, b, qualifier);
    }
    return llvm::Error::success();
  }

  /// An alltoallv collective that runs a checked pattern (001 §3).
  llvm::Error pattern(const CollectiveDef &c,
                      llvm::ArrayRef<VerifiedPattern> patterns) {
    const VerifiedPattern *pattern = llvm::find_if(
        patterns, [&](const VerifiedPattern &v) { return v.collective == &c; });
    if (pattern == patterns.end())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     location(c.loc) + ": alltoallv `" +
                                         c.name + "` was not checked");
    llvm::Expected<alltoallv::EmittedCollective> e =
        alltoallv::emitCollective(c.name, pattern->verdict, location(c.loc));
    if (!e)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     location(c.loc) + ": " +
                                         llvm::toString(e.takeError()));
    header << e->declaration;
    source << e->definition;
    localHeader << e->localDeclaration;
    localSource << e->localDefinition;
    if (!e->note.empty())
      files.notes.push_back(e->note);
    return llvm::Error::success();
  }

  /// A redistribution's function, written after the exchanges it calls.
  void redistribution(const CollectiveDef &c) {
    Redistributing f = redistributionFunction(c, location(c.loc));
    redistributionHeader += f.declaration;
    redistributionSource += f.definition;
  }

  /// A collective resolved to several schedules by message size (library/
  /// Library.h, `using auto`): a function that picks one at run time.
  void choice(const CollectiveDef &c) {
    const Binding b = bindingFor(c.collective);
    const std::string function = c.collectiveFunction();
    std::string comment = concat(
        {"// ",
         c.redistribution ? "The exchange of collective `" : "Collective `",
         c.name, "` (", location(c.loc),
         "): ", verify::describeCollective(c.collective),
         ", the cheapest proved schedule for the size of "
         "its message (m = count elements).\n"});
    header << comment << "int " << function << "(" << b.params << ");\n\n";
    std::string body = blockBytes(c.collective.kind);
    for (size_t i = c.resolved.size(); i-- > 1;)
      body += "  if (bytes >= " + std::to_string(c.resolved[i].fromBytes) +
              "LL)\n    return " + c.resolved[i].schedule + "(" + b.args +
              ");\n";
    body += "  return " + c.resolved[0].schedule + "(" + b.args + ");\n}\n";
    source << comment << "int " << function << "(" << b.params << ") {\n"
           << body << "\n";
    // Its twin in `local` picks among the schedules' twins there.
    std::string localBody = body;
    const std::string mpiRank = "MPI_Comm_rank(comm, &rank);";
    if (size_t at = localBody.find(mpiRank); at != std::string::npos)
      localBody.replace(at, mpiRank.size(),
                        "rank = collc::rt::CommRef(comm).rank();");
    std::string local =
        "int " + function + "(" + commParams(b, "collc::rt::LocalComm &") + ")";
    localHeader << local << ";\n";
    localSource << local << " {\n" << localBody;
  }

  /// The redistributions, the any-root and local namespaces, and the
  /// closing namespace.
  void end() {
    header << redistributionHeader;
    source << redistributionSource;
    if (!anyRootHeader.str().empty()) {
      header << "// The rooted functions above for any root: the ranks are "
                "rotated so that\n// `root` plays the proved root. A rotation "
                "is a symmetry of a fully\n// connected network (what a "
                "communicator without a topology is), so the\n// proof "
                "carries over; on the spec's own topology it may congest.\n"
             << "namespace any_root {\n"
             << anyRootHeader.str() << "} // namespace any_root\n\n";
      source << "namespace any_root {\n\n"
             << anyRootSource.str() << "} // namespace any_root\n\n";
    }
    if (!localHeader.str().empty()) {
      header << "// The functions above on the local backend "
                "(collc/Local.h):\n"
             << "// ranks as threads of one process.\nnamespace local {\n"
             << localHeader.str() << "} // namespace local\n\n";
      source << "namespace local {\n\n"
             << localSource.str() << "\n} // namespace local\n\n";
    }
    if (!options.ns.empty()) {
      header << "} // namespace " << options.ns << "\n";
      source << "} // namespace " << options.ns << "\n";
    }
    header.flush();
    source.flush();
  }

private:
  std::string namespaceOpen() const {
    return options.ns.empty() ? std::string()
                              : "namespace " + options.ns + " {\n\n";
  }
  std::string location(llvm::SMLoc loc) const {
    return sourcePlace(options, loc);
  }

  const Program &program;
  const EmitOptions &options;
  EmittedFiles &files;
  llvm::raw_string_ostream header, source;
  std::string localHeaderText, localSourceText, anyRootHeaderText,
      anyRootSourceText, redistributionHeader, redistributionSource;
  llvm::raw_string_ostream localHeader, localSource, anyRootHeader,
      anyRootSource;
  const std::string qualifier; // the functions' namespace, "::ns::"
};

} // namespace

llvm::Expected<EmittedFiles> collc::emit::emitCpp(
    const Program &program, llvm::ArrayRef<VerifiedSchedule> schedules,
    llvm::ArrayRef<VerifiedPattern> patterns, const EmitOptions &options) {
  EmittedFiles files;
  { // the writer's streams end before the files are returned
    FileEmitter file(program, options, files);
    // An alltoallv schedule runs on the irregular all-to-all's engine.
    file.begin(llvm::any_of(schedules, [](const VerifiedSchedule &v) {
      return v.schedule->collective.kind == ir::CollectiveKind::Alltoallv;
    }));
    for (const VerifiedSchedule &v : schedules)
      if (llvm::Error e = file.schedule(v))
        return e;
    // A collective resolved to one schedule is that schedule, already
    // emitted; one resolved to several gets a function that picks.
    for (const CollectiveDef &c : program.collectives) {
      if (program.runsPattern(c)) {
        if (llvm::Error e = file.pattern(c, patterns))
          return e;
        continue;
      }
      if (c.redistribution)
        file.redistribution(c);
      if (c.resolved.size() >= 2)
        file.choice(c);
    }
    file.end();
  }
  return files;
}
