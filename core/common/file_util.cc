#include "core/common/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace metaopt {
namespace {

// Closes the descriptor when the read is over, whichever way it ends.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  const int fd_;
};

}  // namespace

absl::StatusOr<std::string> ReadFileToString(const std::string& path,
                                             absl::string_view what,
                                             int64_t max_bytes) {
  const std::string name =
      what.empty() ? path : absl::StrCat(what, " ", path);
  const FileDescriptor fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    const int error = errno;
    if (error == ENOENT || error == ENOTDIR) {
      return absl::NotFoundError(absl::StrCat(name, ": no such file"));
    }
    return absl::ErrnoToStatus(error, absl::StrCat(name, ": cannot open"));
  }
  struct stat info {};
  const bool have_info = fstat(fd.get(), &info) == 0;
  if (have_info && S_ISDIR(info.st_mode)) {
    return absl::NotFoundError(
        absl::StrCat(name, ": is a directory, not a file"));
  }
  std::string contents;
  if (have_info && S_ISREG(info.st_mode) && info.st_size > 0 && info.st_size <= max_bytes) {
    contents.reserve(static_cast<size_t>(info.st_size));
  }
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = read(fd.get(), buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::ErrnoToStatus(errno, absl::StrCat(name, ": cannot read"));
    }
    if (n == 0) return contents;
    if (static_cast<int64_t>(contents.size()) + n > max_bytes) {
      return absl::OutOfRangeError(
          absl::StrCat(name, ": larger than ", max_bytes, " bytes"));
    }
    contents.append(buffer, static_cast<size_t>(n));
  }
}

absl::StatusOr<std::string> ReadPemFile(const std::string& path,
                                        absl::string_view what) {
  absl::StatusOr<std::string> text = ReadFileToString(path, what);
  if (text.ok() && text->find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, ": not a PEM file (no -----BEGIN line)"));
  }
  return text;
}

}  // namespace metaopt
