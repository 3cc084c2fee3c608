#include "io/free_space.h"

#include "util/error.h"

#include <sys/statvfs.h>

namespace headroom::io {

std::string free_space_note(const std::filesystem::path& dir) {
  struct statvfs s {};
  if (::statvfs(dir.c_str(), &s) != 0) return "";
  const unsigned long long free_bytes = static_cast<unsigned long long>(s.f_bavail) * s.f_frsize;
  // Below 1 MiB nothing of size fits; a quota is not visible to statvfs, so it is named as a
  // possibility only when the disk looks full.
  constexpr unsigned long long kLittle = 1ull << 20;
  if (free_bytes >= kLittle) return "";
  return cat("; ", dir.string(), ": the file system is full (disk full or quota reached: ", free_bytes, " bytes free)");
}

}  // namespace headroom::io
