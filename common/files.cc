#include "common/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace larder::common {
namespace {

std::string ErrnoText(int err) {
  return std::error_code(err, std::generic_category()).message();
}

}  // namespace

std::optional<std::string> WriteFileAtomically(const std::string& path,
                                               const std::string& content) {
  std::string target = path;
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) != nullptr) target = resolved;
  struct stat st;
  mode_t mode = ::stat(target.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;

  std::string tmp = target + ".tmp-XXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0) return ErrnoText(errno);
  auto fail = [&](int err) -> std::optional<std::string> {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    return ErrnoText(err);
  };
  if (::fchmod(fd, mode) != 0) return fail(errno);
  for (size_t done = 0; done < content.size();) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(errno);
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail(errno);
  int rc = ::close(fd);
  fd = -1;
  if (rc != 0) return fail(errno);
  if (::rename(tmp.c_str(), target.c_str()) != 0) return fail(errno);

  // Make the rename itself durable. Best effort: the new file is already in place.
  std::string dir = std::filesystem::path(target).parent_path().string();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return std::nullopt;
}

}  // namespace larder::common
