#pragma once
// Reading the files a user names.

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"

#include <string>

namespace collc {

/// Why `path` is not a file to read to its end, or empty where it may be
/// read: a device (/dev/zero never ends, and reading it whole ran out of
/// memory). "-" (standard input), pipes and missing files are left to the
/// reader and its own errors.
inline std::string notAFileToRead(llvm::StringRef path) {
  llvm::sys::fs::file_status status;
  if (path == "-" || llvm::sys::fs::status(path, status))
    return "";
  switch (status.type()) {
  case llvm::sys::fs::file_type::character_file:
  case llvm::sys::fs::file_type::block_file:
    return "a device, not a file";
  default:
    return "";
  }
}

} // namespace collc
