#pragma once
// What each collective's emitted function looks like from outside: its C++
// signature in MPI's argument order and the Call it fills (MPI's conventions,
// read off the kind's row of collc/Meaning.h), its twins for another
// communicator type or any root, and a redistribution's move around its
// exchange. Private to compiler/emit.

#include "sema/Program.h"

#include "llvm/ADT/StringRef.h"

#include <initializer_list>
#include <optional>
#include <string>

namespace collc::emit {

/// The C++ signature and Call set-up of each collective, in MPI's argument
/// order (MPI 4.0 §6): the names follow the MPI standard's bindings.
struct Binding {
  std::string kind;   // collc::rt::Kind enumerator
  std::string params; // C++ parameter list
  std::string args;   // the same names, to forward a call
  std::string setup;  // statements filling `call` before connect()
};

/// The Binding of collective `c`'s kind, derived from its line of
/// collc/Meaning.h (every kind has one).
Binding bindingFor(const ir::Collective &c);
/// Statements that set `bytes` to the message size m the cost model uses
/// (one block), from arguments every rank passes alike.
std::string blockBytes(ir::CollectiveKind kind);
/// The binding's parameters with the communicator's type replaced.
std::string commParams(const Binding &b, llvm::StringRef commType);
/// The binding's arguments, the communicator as a collc::rt::CommRef.
std::string commRefArgs(const Binding &b);
/// A rooted schedule's any_root:: twin.
std::string anyRootFunction(const ir::Schedule &s, const Binding &b,
                            llvm::StringRef qualifier);

/// A redistribution's function: the array's move around its exchange.
struct Redistributing {
  std::string declaration, definition;
};
Redistributing redistributionFunction(const CollectiveDef &c,
                                      const std::string &place);

/// A C string literal.
std::string quote(llvm::StringRef text);
/// The pieces joined, appended in order (see Bindings.cpp).
std::string concat(std::initializer_list<llvm::StringRef> pieces);

} // namespace collc::emit
