#include "gguf/model_location.hpp"

#include <worker/sdk.hpp>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace wo::gguf {
namespace {

[[noreturn]] void fail(wo_status s, const std::string &msg) { throw Error(s, msg); }

bool has_dotdot_component(const std::string &p) {
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string::npos) end = p.size();
    if (p.compare(start, end - start, "..") == 0 && end - start == 2) return true;
    start = end + 1;
  }
  return false;
}

std::string real_path(const std::string &p) {
  char buf[PATH_MAX];
  if (!::realpath(p.c_str(), buf)) return {};
  return buf;
}

// Closes an fd on scope exit.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::unique_ptr<MappedRegion> map_fd(int fd, uint64_t size, const std::string &what) {
  if (size == 0) {
    static const uint8_t empty = 0; // nothing to map; the parser reports the empty file
    return std::make_unique<MappedRegion>(&empty, 0);
  }
  void *p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    fail(WO_ERR_IO, what + ": mmap of " + std::to_string(size) + " bytes failed: " + std::strerror(errno));
  return std::make_unique<MappedRegion>(static_cast<const uint8_t *>(p), size);
}

std::unique_ptr<MappedRegion> map_path(const ModelLocation &loc, const std::string &model_root) {
  const std::string what = "model file '" + loc.path + "'";
  struct stat st {};
  if (::stat(loc.path.c_str(), &st) != 0) {
    int e = errno;
    if (e == ENOENT || e == ENOTDIR) fail(WO_ERR_IO, what + " does not exist");
    if (e == EACCES) fail(WO_ERR_IO, what + " cannot be reached: permission denied on a parent folder");
    fail(WO_ERR_IO, what + ": stat failed: " + std::strerror(e));
  }
  if (!model_root.empty()) {
    std::string root = real_path(model_root);
    if (root.empty())
      fail(WO_ERR_INVALID_ARGUMENT,
           "--model-root '" + model_root + "' does not resolve: " + std::strerror(errno));
    std::string real = real_path(loc.path);
    if (real.empty()) fail(WO_ERR_IO, what + " does not resolve: " + std::strerror(errno));
    std::string prefix = root == "/" ? root : root + "/";
    if (real.compare(0, prefix.size(), prefix) != 0)
      fail(WO_ERR_INVALID_ARGUMENT, what + " resolves to '" + real + "', outside --model-root '" + root +
                                        "' (expected a file under it)");
  }
  if (S_ISDIR(st.st_mode)) fail(WO_ERR_IO, what + " is a directory, expected a GGUF file");
  if (!S_ISREG(st.st_mode)) fail(WO_ERR_IO, what + " is not a regular file (expected a GGUF file)");
  Fd fd{::open(loc.path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (fd.fd < 0) {
    int e = errno;
    if (e == EACCES) fail(WO_ERR_IO, what + " is not readable: permission denied");
    fail(WO_ERR_IO, what + ": open failed: " + std::strerror(e));
  }
  // Size from the open descriptor: the file may have changed since stat.
  if (::fstat(fd.fd, &st) != 0) fail(WO_ERR_IO, what + ": fstat failed: " + std::strerror(errno));
  return map_fd(fd.fd, static_cast<uint64_t>(st.st_size), what);
}

std::unique_ptr<MappedRegion> map_shm(const ModelLocation &loc) {
  const std::string what = "shared-memory segment '" + loc.text + "' (/dev/shm/" + loc.shm + ")";
  Fd fd{::shm_open(("/" + loc.shm).c_str(), O_RDONLY, 0)};
  if (fd.fd < 0) {
    int e = errno;
    if (e == ENOENT) fail(WO_ERR_IO, what + " does not exist (expected a segment staged by another process)");
    if (e == EACCES) fail(WO_ERR_IO, what + " is not readable: permission denied");
    fail(WO_ERR_IO, what + ": shm_open failed: " + std::strerror(e));
  }
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) fail(WO_ERR_IO, what + ": fstat failed: " + std::strerror(errno));
  return map_fd(fd.fd, static_cast<uint64_t>(st.st_size), what);
}

} // namespace

MappedRegion::~MappedRegion() {
  if (size_ > 0) ::munmap(const_cast<uint8_t *>(data_), size_);
}

ModelLocation parse_location(const std::string &text) {
  ModelLocation loc;
  loc.text = text;
  if (text.empty())
    fail(WO_ERR_INVALID_ARGUMENT, "model location is empty (expected a path, file:/path or ram:NAME)");
  if (text.compare(0, 4, "ram:") == 0) {
    loc.kind = ModelLocation::Kind::shm;
    loc.shm = text.substr(4);
    if (loc.shm.empty() || loc.shm.size() > 255)
      fail(WO_ERR_INVALID_ARGUMENT, "model location '" + text +
                                        "': expected ram:NAME with a name of 1 to 255 characters, found " +
                                        std::to_string(loc.shm.size()));
    for (size_t i = 0; i < loc.shm.size(); ++i) {
      char c = loc.shm[i];
      bool ok =
          (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
      if (!ok)
        fail(WO_ERR_INVALID_ARGUMENT,
             "model location '" + text + "': ram: names may hold only letters, digits, '-' and '_', found '" +
                 std::string(1, c) + "' at character " + std::to_string(4 + i));
    }
    return loc;
  }
  loc.path = text;
  if (text.compare(0, 7, "file://") == 0)
    loc.path = text.substr(7);
  else if (text.compare(0, 5, "file:") == 0)
    loc.path = text.substr(5);
  if (loc.path.empty())
    fail(WO_ERR_INVALID_ARGUMENT, "model location '" + text + "': the path after file: is empty");
  if (has_dotdot_component(loc.path))
    fail(WO_ERR_INVALID_ARGUMENT,
         "model location '" + text +
             "': paths with '..' components are rejected (expected a path without '..')");
  return loc;
}

std::unique_ptr<MappedRegion> map_location(const ModelLocation &loc, const std::string &model_root) {
  return loc.kind == ModelLocation::Kind::shm ? map_shm(loc) : map_path(loc, model_root);
}

} // namespace wo::gguf
