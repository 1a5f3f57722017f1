#include "emit/Bindings.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

using collc::Allocation;
using collc::ir::CollectiveKind;
namespace meaning = collc::meaning;

namespace {

/// The runtime's collc::rt::Distribution for an allocation.
std::string allocationCpp(const Allocation &a) {
  switch (a.kind) {
  case Allocation::Kind::Block:
    return "collc::rt::Distribution::consecutive()";
  case Allocation::Kind::Cyclic:
    return "collc::rt::Distribution::cyclic()";
  case Allocation::Kind::BlockCyclic:
    return "collc::rt::Distribution::blockCyclic(" + std::to_string(a.block) +
           ")";
  }
  return "";
}

/// MPI's argument conventions (MPI 4.0 §6), read off a kind's line of
/// collc/Meaning.h, so a new kind gets its binding from the table.
struct Convention {
  const meaning::KindRow &row;
  const meaning::Conditions &m;
  /// Send and receive counts and types apart (MPI_Gather, MPI_Allgather):
  /// a copy with a block per rank on one side.
  bool pair;
  /// Of a rooted pair, the side the other ranks use ("send" for a gather,
  /// "recv" for a scatter); the root's other side describes every block.
  llvm::StringRef own, rootSide;
  /// The one count's name where send and receive share it.
  llvm::StringRef count;

  explicit Convention(CollectiveKind kind)
      : row(meaning::rowOf(kind)), m(row.means) {
    pair = !m.reduction() && !m.oneBuffer() &&
           (m.sendPerDest() || m.recvPerOrigin());
    own = m.required.at == meaning::At::Root ? "send" : "recv";
    rootSide = own == "send" ? "recv" : "send";
    // MPI_Reduce_scatter_block: each rank gets recvcount elements.
    count = m.sendPerDest() ? "recvcount" : "count";
  }
};

/// "reduce_scatter" as "ReduceScatter": the rt::Kind enumerator.
std::string camelCase(llvm::StringRef name) {
  std::string out;
  bool upper = true;
  for (char ch : name) {
    if (ch == '_') {
      upper = true;
      continue;
    }
    out += upper ? llvm::toUpper(ch) : ch;
    upper = false;
  }
  return out;
}

} // namespace

namespace collc::emit {

/// A C string literal.
std::string quote(llvm::StringRef text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}
/// Statements that set `bytes` to the message size m the cost model uses
/// (one block), from arguments every rank passes alike: a collective with
/// several schedules must pick the same one on every rank.
std::string blockBytes(CollectiveKind kind) {
  const Convention conv(kind);
  std::string count = conv.count.str(), type = "type";
  if (conv.pair && conv.m.rooted()) {
    // The root's receive (gather) or send (scatter) arguments describe
    // every block; elsewhere only the other pair is significant.
    const llvm::StringRef root = conv.rootSide, own = conv.own;
    return concat({"  int rank = 0, size = 0;\n  MPI_Comm_rank(comm, "
                   "&rank);\n  const bool atRoot = rank == root;\n"
                   "  MPI_Type_size(atRoot ? ",
                   root, "type : ", own,
                   "type, &size);\n  const long long bytes = "
                   "static_cast<long long>(atRoot ? ",
                   root, "count : ", own, "count) * size;\n"});
  }
  if (conv.pair || conv.row.perPairSizes)
    count = "recvcount", type = "recvtype";
  return "  int size = 0;\n  MPI_Type_size(" + type +
         ", &size);\n  const long long bytes = static_cast<long long>(" +
         count + ") * size;\n";
}

Binding bindingFor(const ir::Collective &c) {
  const Convention conv(c.kind);
  Binding b;
  b.kind = camelCase(conv.row.name);
  std::vector<std::string> params;
  std::string setup;
  if (conv.row.perPairSizes) {
    // MPI_Alltoallv's; the steps run on collc::rt::AlltoallvSteps.
    params = {"const void *sendbuf", "const int *sendcounts",
              "const int *sdispls",  "MPI_Datatype sendtype",
              "void *recvbuf",       "const int *recvcounts",
              "const int *rdispls",  "MPI_Datatype recvtype"};
  } else if (conv.m.oneBuffer()) {
    params = {"void *buf", "int count", "MPI_Datatype type"};
    setup = "call.recv = buf;\n  call.count = count;\n  call.type = type;\n";
  } else if (conv.pair) {
    params = {"const void *send", "int sendcount", "MPI_Datatype sendtype",
              "void *recv",       "int recvcount", "MPI_Datatype recvtype"};
    if (conv.m.rooted()) {
      // Only the root's other side is significant; in place, the root
      // passes MPI_IN_PLACE for its own side.
      const llvm::StringRef own = conv.own, root = conv.rootSide;
      // The root's other side is described apart (Call::sendSide,
      // recvSide): its type need only have the same signature.
      setup = concat({"const bool atRoot = comm.rank() == root;\n  const bool "
                      "inPlace = atRoot && ",
                      own,
                      " == MPI_IN_PLACE;\n  call.send = send;\n  call.recv = "
                      "recv;\n  call.count = inPlace ? ",
                      root, "count : ", own, "count;\n  call.type = inPlace ? ",
                      root, "type : ", own,
                      "type;\n  if (atRoot && !inPlace)\n    call.", root,
                      "Side = {", root, "count, ", root, "type, true};\n"});
    } else {
      setup = "call.send = send;\n  call.recv = recv;\n  call.count = "
              "recvcount;\n  call.type = recvtype;\n  call.sendSide = "
              "{sendcount, sendtype, true};\n";
    }
  } else {
    params = {"const void *send", "void *recv", "int " + conv.count.str(),
              "MPI_Datatype type"};
    setup = concat({"call.send = send;\n  call.recv = recv;\n  call.count = ",
                    conv.count, ";\n  call.type = type;\n"});
  }
  if (conv.m.reduction()) {
    params.push_back("MPI_Op op");
    setup += "  call.op = op;\n";
  }
  if (conv.m.rooted()) {
    params.push_back("int root");
    setup += "  call.root = root;\n";
  }
  // A family over the shift amount (`shift(q: q)`) takes it at run time.
  if (c.shiftOf) {
    params.push_back("int q");
    setup += "  call.shift = q;\n";
  }
  params.push_back("MPI_Comm comm");
  std::vector<llvm::StringRef> args;
  for (const std::string &param : params)
    args.push_back(llvm::StringRef(param).rsplit(' ').second.ltrim('*'));
  b.params = llvm::join(params, ", ");
  b.args = llvm::join(args, ", ");
  b.setup = std::move(setup);
  return b;
}
/// The pieces joined, appended in order. Building strings as
/// `"literal" + std::string(...)` inserts at the front of a temporary, which
/// GCC 12 at -O3 misreads as an overlapping memcpy (-Werror=restrict, GCC bug
/// 105651); appending avoids that code path altogether.
std::string concat(std::initializer_list<llvm::StringRef> pieces) {
  size_t size = 0;
  for (llvm::StringRef piece : pieces)
    size += piece.size();
  std::string out;
  out.reserve(size);
  for (llvm::StringRef piece : pieces)
    out.append(piece.data(), piece.size());
  return out;
}
/// 004 §3: the pairs' shares follow from the allocations, which every rank
/// knows; collc::rt::redistribute packs, runs the exchange, and unpacks.
/// MPI only: the shares that differ between pairs go to MPI_Alltoallv.
Redistributing redistributionFunction(const CollectiveDef &c,
                                      const std::string &place) {
  const Redistribution &r = *c.redistribution;
  const std::string signature =
      "int " + c.name +
      "(const void *send, void *recv, long long n, MPI_Datatype type, "
      "MPI_Comm comm)";
  const std::string ranks = std::to_string(c.topology.numRanks());
  const std::string comment = concat(
      {"// Collective `", c.name, "` (", place,
       "): redistribute(from: ", r.from.spelling(), ", to: ", r.to.spelling(),
       "),\n// 004 §3, on ", ranks,
       " ranks. Moves this rank's part of an n-element array of a\n"
       "// contiguous `type` (in `send`) to its part in the other allocation "
       "(in\n// `recv`): where every pair trades as many elements, by `",
       c.collectiveFunction(),
       "`,\n// otherwise by MPI_Alltoallv. Returns an MPI error code, the "
       "same on every\n// rank where any rank's arguments are wrong.\n"});
  return {
      comment + signature + ";\n\n",
      concat({comment, signature,
              " {\n  // Both ways of exchanging take only the proved "
              "size.\n  int size = 0;\n  if (comm != MPI_COMM_NULL && "
              "MPI_Comm_size(comm, &size) == MPI_SUCCESS &&\n      size != ",
              ranks,
              ")\n    return MPI_ERR_SIZE;\n  return "
              "collc::rt::redistribute(send, ",
              allocationCpp(r.from),
              ",\n                                 "
              "recv, ",
              allocationCpp(r.to),
              ",\n                                 n, type, comm, &",
              c.collectiveFunction(), ");\n}\n\n"})};
}
/// The binding's parameters with the communicator's type replaced.
std::string commParams(const Binding &b, llvm::StringRef commType) {
  std::string params = b.params;
  size_t at = params.rfind("MPI_Comm comm");
  params.replace(at, 13,
                 commType.str() + (commType.endswith("&") ? "comm" : " comm"));
  return params;
}

/// The binding's arguments, the communicator as a collc::rt::CommRef.
std::string commRefArgs(const Binding &b) {
  std::string args = b.args;
  args.replace(args.rfind("comm"), 4, "collc::rt::CommRef(comm)");
  return args;
}
/// A rooted schedule's any_root:: twin: the call with its root played by
/// the proved one, on the communicator's ranks rotated (collc::rt::Call::
/// rotation). A root outside the communicator goes to the schedule as it
/// is, which refuses it.
std::string anyRootFunction(const ir::Schedule &s, const Binding &b,
                            llvm::StringRef qualifier) {
  llvm::SmallVector<llvm::StringRef> names;
  llvm::StringRef(b.args).split(names, ", ");
  std::vector<std::string> rotated;
  for (llvm::StringRef name : names)
    rotated.push_back(name == "root" ? std::to_string(s.collective.root)
                      : name == "comm"
                          ? std::string("collc::rt::CommRef(comm, rotation)")
                          : name.str());
  return concat({"int ", s.name, "(", b.params,
                 ") {\n  int size = 0;\n  MPI_Comm_size(comm, &size);\n"
                 "  const int rotation = collc::rt::rotationFor(root, ",
                 std::to_string(s.collective.root),
                 ", size);\n  if (rotation <= 0)\n    return ", qualifier,
                 s.name, "(", b.args, ");\n  return ", qualifier, s.name, "(",
                 llvm::join(rotated, ", "), ");\n}\n\n"});
}

} // namespace collc::emit
