// Reductions: MPI's predefined operators on its basic types as typed loops
// (the element type and operator are resolved once per call, never per
// element); everything else through MPI_Reduce_local.

#include "collc/Backend.h"

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace collc::rt {
namespace {

template <typename T> struct Tag {
  using type = T;
};

// MPI 4.0 §6.9.2's groups of basic types, by which operators they take:
// Fortran's integers take no logical operator, C's do.
enum class Family { Integer, FortranInteger, Floating, Complex, Bool };

// Calls fn(Tag<T>{}, family) for the C type of `size` bytes in `family`.
template <typename Fn> bool withSize(int size, Family family, Fn &&fn) {
  switch (family) {
  case Family::Integer:
  case Family::FortranInteger:
  case Family::Bool: // Fortran's LOGICAL: an integer, 0 false
    switch (size) {
    case 1: fn(Tag<int8_t>{}, family); return true;
    case 2: fn(Tag<int16_t>{}, family); return true;
    case 4: fn(Tag<int32_t>{}, family); return true;
    case 8: fn(Tag<int64_t>{}, family); return true;
    }
    return false;
  case Family::Floating:
    switch (size) {
    case 4: fn(Tag<float>{}, family); return true;
    case 8: fn(Tag<double>{}, family); return true;
    }
    return false;
  case Family::Complex:
    switch (size) {
    case 8: fn(Tag<std::complex<float>>{}, family); return true;
    case 16: fn(Tag<std::complex<double>>{}, family); return true;
    }
    return false;
  }
  return false;
}

/// Fortran's basic types, the family of `t`; false for any other type.
/// Their sizes are those of the Fortran compiler MPI was built with.
bool fortranFamily(MPI_Datatype t, Family &family) {
  if (t == MPI_DATATYPE_NULL) // an MPI built without Fortran
    return false;
#define COLLC_FORTRAN_TYPE(MPITYPE, FAMILY)                                    \
  if (t == MPITYPE) {                                                          \
    family = Family::FAMILY;                                                   \
    return true;                                                               \
  }
  COLLC_FORTRAN_TYPE(MPI_INTEGER, FortranInteger)
  COLLC_FORTRAN_TYPE(MPI_REAL, Floating)
  COLLC_FORTRAN_TYPE(MPI_DOUBLE_PRECISION, Floating)
  COLLC_FORTRAN_TYPE(MPI_COMPLEX, Complex)
  COLLC_FORTRAN_TYPE(MPI_DOUBLE_COMPLEX, Complex)
  COLLC_FORTRAN_TYPE(MPI_LOGICAL, Bool)
  // The optional ones, where the MPI defines them.
#ifdef MPI_INTEGER1
  COLLC_FORTRAN_TYPE(MPI_INTEGER1, FortranInteger)
#endif
#ifdef MPI_INTEGER2
  COLLC_FORTRAN_TYPE(MPI_INTEGER2, FortranInteger)
#endif
#ifdef MPI_INTEGER4
  COLLC_FORTRAN_TYPE(MPI_INTEGER4, FortranInteger)
#endif
#ifdef MPI_INTEGER8
  COLLC_FORTRAN_TYPE(MPI_INTEGER8, FortranInteger)
#endif
#ifdef MPI_REAL4
  COLLC_FORTRAN_TYPE(MPI_REAL4, Floating)
#endif
#ifdef MPI_REAL8
  COLLC_FORTRAN_TYPE(MPI_REAL8, Floating)
#endif
#ifdef MPI_COMPLEX8
  COLLC_FORTRAN_TYPE(MPI_COMPLEX8, Complex)
#endif
#ifdef MPI_COMPLEX16
  COLLC_FORTRAN_TYPE(MPI_COMPLEX16, Complex)
#endif
#undef COLLC_FORTRAN_TYPE
  return false;
}

// Calls fn(Tag<T>{}, family) for the C type behind a basic MPI type; returns
// false for any other type.
template <typename Fn> bool withBasicType(MPI_Datatype t, Fn &&fn) {
#define COLLC_TYPE(MPITYPE, CTYPE, FAMILY)                                     \
  if (t == MPITYPE) {                                                          \
    fn(Tag<CTYPE>{}, Family::FAMILY);                                          \
    return true;                                                               \
  }
  COLLC_TYPE(MPI_INT, int, Integer)
  COLLC_TYPE(MPI_DOUBLE, double, Floating)
  COLLC_TYPE(MPI_FLOAT, float, Floating)
  COLLC_TYPE(MPI_LONG, long, Integer)
  COLLC_TYPE(MPI_LONG_LONG, long long, Integer)
  COLLC_TYPE(MPI_LONG_LONG_INT, long long, Integer)
  COLLC_TYPE(MPI_SHORT, short, Integer)
  COLLC_TYPE(MPI_SIGNED_CHAR, signed char, Integer)
  COLLC_TYPE(MPI_UNSIGNED_CHAR, unsigned char, Integer)
  COLLC_TYPE(MPI_UNSIGNED_SHORT, unsigned short, Integer)
  COLLC_TYPE(MPI_UNSIGNED, unsigned, Integer)
  COLLC_TYPE(MPI_UNSIGNED_LONG, unsigned long, Integer)
  COLLC_TYPE(MPI_UNSIGNED_LONG_LONG, unsigned long long, Integer)
  COLLC_TYPE(MPI_INT8_T, int8_t, Integer)
  COLLC_TYPE(MPI_INT16_T, int16_t, Integer)
  COLLC_TYPE(MPI_INT32_T, int32_t, Integer)
  COLLC_TYPE(MPI_INT64_T, int64_t, Integer)
  COLLC_TYPE(MPI_UINT8_T, uint8_t, Integer)
  COLLC_TYPE(MPI_UINT16_T, uint16_t, Integer)
  COLLC_TYPE(MPI_UINT32_T, uint32_t, Integer)
  COLLC_TYPE(MPI_UINT64_T, uint64_t, Integer)
  COLLC_TYPE(MPI_LONG_DOUBLE, long double, Floating)
  COLLC_TYPE(MPI_C_FLOAT_COMPLEX, std::complex<float>, Complex)
  COLLC_TYPE(MPI_C_DOUBLE_COMPLEX, std::complex<double>, Complex)
  COLLC_TYPE(MPI_C_LONG_DOUBLE_COMPLEX, std::complex<long double>, Complex)
  COLLC_TYPE(MPI_C_BOOL, bool, Bool)
#undef COLLC_TYPE
  Family family = Family::Integer;
  int size = 0;
  return fortranFamily(t, family) && PMPI_Type_size(t, &size) == MPI_SUCCESS &&
         withSize(size, family, fn);
}

// The loops below are written so that the compiler vectorizes them (this
// file is built with -O3, see runtime/CMakeLists.txt): no operand overlaps
// the result, so no run-time alias check is needed. Elements stay
// independent, so vector code gives the same values as scalar code.
//
// Each is compiled three times: for the baseline instruction set and, on
// x86-64, for AVX2 and AVX-512, and a call takes the widest the processor
// has (MPI's own operators do the same, Open MPI's op/avx component). On 2
// ranks, a reduce of 128 KiB of doubles took 1.08x MPI_Reduce's time with
// the baseline's 128-bit loop, 1.04x with AVX2's and 1.00x with AVX-512's.
// The attribute covers only these loops: the operator, inlined into them,
// is compiled once, so nothing else built here needs the wider unit.
#define COLLC_FOLD_LOOPS(ISA, TARGET)                                          \
  namespace ISA {                                                              \
  template <typename T, typename Combine>                                      \
  TARGET void foldInto(T *__restrict acc, const T *__restrict in, size_t n,    \
                       Combine combine) {                                      \
    for (size_t i = 0; i < n; ++i)                                             \
      acc[i] = combine(acc[i], in[i]);                                         \
  }                                                                            \
  template <typename T, typename Combine>                                      \
  TARGET void foldApart(const T *__restrict lower, const T *__restrict upper,  \
                        T *__restrict out, size_t n, Combine combine) {        \
    for (size_t i = 0; i < n; ++i)                                             \
      out[i] = combine(lower[i], upper[i]);                                    \
  }                                                                            \
  }
COLLC_FOLD_LOOPS(baseline, )
#if defined(__x86_64__) && defined(__GNUC__)
#define COLLC_WIDER_FOLDS 1
COLLC_FOLD_LOOPS(avx2, __attribute__((target("avx2"))))
#ifdef __clang__ // Clang's spelling of the vector width
COLLC_FOLD_LOOPS(avx512,
                 __attribute__((target("avx512f"), min_vector_width(512))))
#else
COLLC_FOLD_LOOPS(avx512,
                 __attribute__((target("avx512f,prefer-vector-width=512"))))
#endif
#endif
#undef COLLC_FOLD_LOOPS

// The fold of one operator over n elements, operands in rank order, with
// the loops of instruction set I; `out` may be either operand (or neither).
// Complex and long double types keep the baseline loop: the wider units do
// not speed them, and complex products must round as they do everywhere
// else.
template <FoldIsa I, typename T, typename Combine>
void foldLoop(const T *lower, const T *upper, T *out, size_t n,
              Combine combine) {
  auto run = [&](auto into, auto apart) {
    if (out == lower)
      into(out, upper, n, combine);
    else if (out == upper)
      into(out, lower, n, [&](T held, T incoming) {
        return combine(incoming, held);
      });
    else
      apart(lower, upper, out, n, combine);
  };
#ifdef COLLC_WIDER_FOLDS
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, long double>) {
    if constexpr (I == FoldIsa::Avx512)
      return run([](auto... a) { avx512::foldInto(a...); },
                 [](auto... a) { avx512::foldApart(a...); });
    if constexpr (I == FoldIsa::Avx2)
      return run([](auto... a) { avx2::foldInto(a...); },
                 [](auto... a) { avx2::foldApart(a...); });
  }
#endif
  run([](auto... a) { baseline::foldInto(a...); },
      [](auto... a) { baseline::foldApart(a...); });
}

// MPI's predefined operators as function objects (one type each, so that
// a fold's loop is its own function, whose address a recording keeps).
// Integers add and multiply modulo 2^bits, as two's complement hardware
// (and MPI's own operators) do, without C++'s undefined signed overflow:
// in an unsigned type at least as wide as unsigned int, so that no
// promotion to int can overflow either.
template <typename T, typename = void> struct Wrapping {
  using type = T;
};
template <typename T>
struct Wrapping<T, std::enable_if_t<std::is_integral_v<T> &&
                                    !std::is_same_v<T, bool>>> {
  using type = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned,
                                  std::make_unsigned_t<T>>;
};
struct Sum {
  template <typename T> T operator()(T a, T b) const {
    using W = typename Wrapping<T>::type;
    return T(W(a) + W(b));
  }
};
struct Prod {
  template <typename T> T operator()(T a, T b) const {
    using W = typename Wrapping<T>::type;
    return T(W(a) * W(b));
  }
};
struct Min {
  template <typename T> T operator()(T a, T b) const { return std::min(a, b); }
};
struct Max {
  template <typename T> T operator()(T a, T b) const { return std::max(a, b); }
};
struct LogicalAnd {
  template <typename T> T operator()(T a, T b) const { return T(a && b); }
};
struct LogicalOr {
  template <typename T> T operator()(T a, T b) const { return T(a || b); }
};
struct LogicalXor {
  template <typename T> T operator()(T a, T b) const {
    return T(bool(a) != bool(b));
  }
};
struct BitAnd {
  template <typename T> T operator()(T a, T b) const { return T(a & b); }
};
struct BitOr {
  template <typename T> T operator()(T a, T b) const { return T(a | b); }
};
struct BitXor {
  template <typename T> T operator()(T a, T b) const { return T(a ^ b); }
};

template <FoldIsa I, typename T, typename Op>
void foldWith(const void *lower, const void *upper, void *out, size_t n) {
  foldLoop<I>(static_cast<const T *>(lower), static_cast<const T *>(upper),
              static_cast<T *>(out), n, Op{});
}

// Which predefined operators MPI defines on each family (MPI 4.0 §6.9.2).
template <FoldIsa I, typename T> FoldFn typedFold(MPI_Op op, Family family) {
  if (family != Family::Bool) {
    if (op == MPI_SUM)
      return &foldWith<I, T, Sum>;
    if (op == MPI_PROD)
      return &foldWith<I, T, Prod>;
  }
  if constexpr (!std::is_same_v<T, std::complex<float>> &&
                !std::is_same_v<T, std::complex<double>> &&
                !std::is_same_v<T, std::complex<long double>>) {
    if (family == Family::Integer || family == Family::FortranInteger ||
        family == Family::Floating) {
      if (op == MPI_MIN)
        return &foldWith<I, T, Min>;
      if (op == MPI_MAX)
        return &foldWith<I, T, Max>;
    }
    if (family == Family::Integer || family == Family::Bool) {
      if (op == MPI_LAND)
        return &foldWith<I, T, LogicalAnd>;
      if (op == MPI_LOR)
        return &foldWith<I, T, LogicalOr>;
      if (op == MPI_LXOR)
        return &foldWith<I, T, LogicalXor>;
    }
    // Not on Fortran's LOGICAL, an integer too.
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (family == Family::Integer || family == Family::FortranInteger) {
        if (op == MPI_BAND)
          return &foldWith<I, T, BitAnd>;
        if (op == MPI_BOR)
          return &foldWith<I, T, BitOr>;
        if (op == MPI_BXOR)
          return &foldWith<I, T, BitXor>;
      }
    }
  }
  return nullptr;
}

} // namespace

bool foldIsaSupported(FoldIsa isa) {
  switch (isa) {
  case FoldIsa::Baseline:
    return true;
#ifdef COLLC_WIDER_FOLDS
  case FoldIsa::Avx2:
    return __builtin_cpu_supports("avx2");
  case FoldIsa::Avx512:
    return __builtin_cpu_supports("avx512f");
#else
  case FoldIsa::Avx2:
  case FoldIsa::Avx512:
    return false;
#endif
  }
  return false;
}

FoldFn foldFunction(MPI_Datatype type, MPI_Op op, FoldIsa isa) {
  if (!foldIsaSupported(isa))
    return nullptr;
  FoldFn fn = nullptr;
  withBasicType(type, [&](auto tag, Family family) {
    using T = typename decltype(tag)::type;
    switch (isa) {
    case FoldIsa::Baseline:
      fn = typedFold<FoldIsa::Baseline, T>(op, family);
      break;
    case FoldIsa::Avx2:
      fn = typedFold<FoldIsa::Avx2, T>(op, family);
      break;
    case FoldIsa::Avx512:
      fn = typedFold<FoldIsa::Avx512, T>(op, family);
      break;
    }
  });
  return fn;
}

FoldFn foldFunction(MPI_Datatype type, MPI_Op op) {
  // The widest the processor has, asked once.
  static const FoldIsa widest = foldIsaSupported(FoldIsa::Avx512) ? FoldIsa::Avx512
                                : foldIsaSupported(FoldIsa::Avx2) ? FoldIsa::Avx2
                                                                  : FoldIsa::Baseline;
  return foldFunction(type, op, widest);
}

int combine(const void *lower, const void *upper, void *out, int count,
            MPI_Datatype type, MPI_Op op) {
  if (count == 0)
    return MPI_SUCCESS;
  if (FoldFn fold = foldFunction(type, op)) {
    fold(lower, upper, out, static_cast<size_t>(count));
    return MPI_SUCCESS;
  }
  // MPI_Reduce_local(in, inout) computes inout = in op inout: the upper
  // operand must be in `out` first, or in a copy when `out` is the lower.
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_extent(type, &lb, &extent);
  const size_t bytes = static_cast<size_t>(extent) * static_cast<size_t>(count);
  if (out == upper)
    return MPI_Reduce_local(lower, out, count, type, op);
  if (out != lower) {
    std::memcpy(out, upper, bytes);
    return MPI_Reduce_local(lower, out, count, type, op);
  }
  std::vector<char> scratch(static_cast<const char *>(upper),
                            static_cast<const char *>(upper) + bytes);
  if (int rc = MPI_Reduce_local(lower, scratch.data(), count, type, op))
    return rc;
  std::memcpy(out, scratch.data(), bytes);
  return MPI_SUCCESS;
}

} // namespace collc::rt
