#include "emit/Bindings.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

using collc::Allocation;
using collc::ir::CollectiveKind;

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
  std::string count = "count", type = "type";
  switch (kind) {
  case CollectiveKind::Allgather:
  case CollectiveKind::Alltoall:
  case CollectiveKind::Alltoallv:
  case CollectiveKind::ReduceScatter:
    count = "recvcount",
    type = kind == CollectiveKind::ReduceScatter ? "type" : "recvtype";
    break;
  case CollectiveKind::Scatter:
  case CollectiveKind::Gather: {
    // The root's receive (gather) or send (scatter) arguments describe
    // every block; elsewhere only the other pair is significant.
    bool scatter = kind == CollectiveKind::Scatter;
    return std::string("  int rank = 0, size = 0;\n  MPI_Comm_rank(comm, "
                       "&rank);\n  const bool atRoot = rank == root;\n") +
           "  MPI_Type_size(atRoot ? " + (scatter ? "sendtype" : "recvtype") +
           " : " + (scatter ? "recvtype" : "sendtype") +
           ", &size);\n  const long long bytes = static_cast<long long>("
           "atRoot ? " +
           (scatter ? "sendcount" : "recvcount") + " : " +
           (scatter ? "recvcount" : "sendcount") + ") * size;\n";
  }
  default:
    break;
  }
  return "  int size = 0;\n  MPI_Type_size(" + type +
         ", &size);\n  const long long bytes = static_cast<long long>(" +
         count + ") * size;\n";
}

std::optional<Binding> bindingFor(const ir::Collective &c) {
  switch (c.kind) {
  case CollectiveKind::Broadcast:
    return Binding{"Broadcast",
                   "void *buf, int count, MPI_Datatype type, int root, "
                   "MPI_Comm comm",
                   "buf, count, type, root, comm",
                   "call.recv = buf;\n  call.count = count;\n  call.type = "
                   "type;\n  call.root = root;\n",
                   ""};
  case CollectiveKind::Reduce:
    return Binding{"Reduce",
                   "const void *send, void *recv, int count, MPI_Datatype "
                   "type, MPI_Op op, int root, MPI_Comm comm",
                   "send, recv, count, type, op, root, comm",
                   "call.send = send;\n  call.recv = recv;\n  call.count = "
                   "count;\n  call.type = type;\n  call.op = op;\n  call.root "
                   "= root;\n",
                   ""};
  case CollectiveKind::Allreduce:
  case CollectiveKind::Scan:
  case CollectiveKind::Exscan:
    return Binding{c.kind == CollectiveKind::Scan     ? "Scan"
                   : c.kind == CollectiveKind::Exscan ? "Exscan"
                                                      : "Allreduce",
                   "const void *send, void *recv, int count, MPI_Datatype "
                   "type, MPI_Op op, MPI_Comm comm",
                   "send, recv, count, type, op, comm",
                   "call.send = send;\n  call.recv = recv;\n  call.count = "
                   "count;\n  call.type = type;\n  call.op = op;\n",
                   ""};
  case CollectiveKind::ReduceScatter:
    // MPI_Reduce_scatter_block: every rank gets recvcount elements.
    return Binding{"ReduceScatter",
                   "const void *send, void *recv, int recvcount, "
                   "MPI_Datatype type, MPI_Op op, MPI_Comm comm",
                   "send, recv, recvcount, type, op, comm",
                   "call.send = send;\n  call.recv = recv;\n  call.count = "
                   "recvcount;\n  call.type = type;\n  call.op = op;\n",
                   ""};
  case CollectiveKind::Allgather:
  case CollectiveKind::Alltoall:
    return Binding{
        c.kind == CollectiveKind::Allgather ? "Allgather" : "Alltoall",
        "const void *send, int sendcount, MPI_Datatype sendtype, void *recv, "
        "int recvcount, MPI_Datatype recvtype, MPI_Comm comm",
        "send, sendcount, sendtype, recv, recvcount, recvtype, comm",
        "call.send = send;\n  call.recv = recv;\n  call.count = recvcount;\n "
        " call.type = recvtype;\n",
        "send != MPI_IN_PLACE &&\n      (sendcount != recvcount || "
        "sendtype != recvtype)"};
  case CollectiveKind::Gather:
    // Only the root's receive arguments are significant.
    return Binding{
        "Gather",
        "const void *send, int sendcount, MPI_Datatype sendtype, void *recv, "
        "int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm",
        "send, sendcount, sendtype, recv, recvcount, recvtype, root, comm",
        // The rank only where it matters: a repeated call skips asking.
        "const bool inPlace = send == MPI_IN_PLACE && comm.rank() == root;"
        "\n  call.send = send;\n  "
        "call.recv = recv;\n  call.count = inPlace ? recvcount : "
        "sendcount;\n  call.type = inPlace ? recvtype : sendtype;\n  "
        "call.root = root;\n",
        "(sendcount != recvcount || sendtype != recvtype) &&\n      "
        "!inPlace && comm.rank() == root"};
  case CollectiveKind::Scatter:
    // Only the root's send arguments are significant.
    return Binding{
        "Scatter",
        "const void *send, int sendcount, MPI_Datatype sendtype, void *recv, "
        "int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm",
        "send, sendcount, sendtype, recv, recvcount, recvtype, root, comm",
        "const bool inPlace = recv == MPI_IN_PLACE && comm.rank() == root;"
        "\n  call.send = send;\n  "
        "call.recv = recv;\n  call.count = inPlace ? sendcount : "
        "recvcount;\n  call.type = inPlace ? sendtype : recvtype;\n  "
        "call.root = root;\n",
        "(sendcount != recvcount || sendtype != recvtype) &&\n      "
        "!inPlace && comm.rank() == root"};
  case CollectiveKind::Shift:
    // A family over the amount (`shift(q: q)`) takes it at run time.
    if (c.shiftOf)
      return Binding{"Shift",
                     "const void *send, void *recv, int count, MPI_Datatype "
                     "type, int q, MPI_Comm comm",
                     "send, recv, count, type, q, comm",
                     "call.send = send;\n  call.recv = recv;\n  call.count = "
                     "count;\n  call.type = type;\n  call.shift = q;\n",
                     ""};
    [[fallthrough]];
  case CollectiveKind::Permute:
    // MPI has neither; a block in, a block out.
    return Binding{c.kind == CollectiveKind::Shift ? "Shift" : "Permute",
                   "const void *send, void *recv, int count, MPI_Datatype "
                   "type, MPI_Comm comm",
                   "send, recv, count, type, comm",
                   "call.send = send;\n  call.recv = recv;\n  call.count = "
                   "count;\n  call.type = type;\n",
                   ""};
  case CollectiveKind::Alltoallv:
    // MPI_Alltoallv's; the steps run on collc::rt::AlltoallvSteps.
    return Binding{"Alltoallv",
                   "const void *sendbuf, const int *sendcounts, const int "
                   "*sdispls, MPI_Datatype sendtype, void *recvbuf, const int "
                   "*recvcounts, const int *rdispls, MPI_Datatype recvtype, "
                   "MPI_Comm comm",
                   "sendbuf, sendcounts, sdispls, sendtype, recvbuf, "
                   "recvcounts, rdispls, recvtype, comm",
                   "", ""};
  }
  return std::nullopt;
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
