#include "io/atomic_file.h"

#include "util/error.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace headroom::io {
namespace fs = std::filesystem;
namespace {

void fsync_path(const fs::path& p, bool directory) {
  const int fd = ::open(p.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  if (fd < 0) fail(p.string(), ": cannot open to sync (", std::strerror(errno), ")");
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && !directory) fail(p.string(), ": fsync failed (", std::strerror(err), ")");
}

}  // namespace

fs::path temp_path_for(const fs::path& final_path) { return fs::path(final_path.string() + ".tmp"); }

void write_file_atomic(const fs::path& path, std::string_view contents) {
  write_file_atomic(path,
                    [&](std::ostream& f) { f.write(contents.data(), static_cast<std::streamsize>(contents.size())); });
}

void write_file_atomic(const fs::path& path, const std::function<void(std::ostream&)>& write) {
  const fs::path tmp = temp_path_for(path);
  try {
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      if (!f) fail(tmp.string(), ": cannot create (", std::strerror(errno), ")");
      write(f);
      f.flush();
      if (!f) fail(tmp.string(), ": write failed (", std::strerror(errno), "; disk full?)");
    }
    commit_file(tmp, path);
  } catch (...) {
    discard_file(tmp);
    throw;
  }
}

void commit_file(const fs::path& tmp, const fs::path& final_path) {
  fsync_path(tmp, false);
  if (::rename(tmp.c_str(), final_path.c_str()) != 0)
    fail("cannot rename ", tmp.string(), " to ", final_path.string(), " (", std::strerror(errno), ")");
  const fs::path dir = final_path.has_parent_path() ? final_path.parent_path() : fs::path(".");
  fsync_path(dir, true);
}

void discard_file(const fs::path& tmp) noexcept {
  std::error_code ec;
  fs::remove(tmp, ec);
}

std::string read_file(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path.string(), ": cannot open (", std::strerror(errno), ")");
  std::ostringstream s;
  s << f.rdbuf();
  if (f.bad()) fail(path.string(), ": read failed");
  return s.str();
}

}  // namespace headroom::io
