// Model locations: path, file:, ram: (POSIX shared memory), `..` and --model-root rejection,
// and a message of its own for each way a location is not a GGUF model.
#include "fixture_paths.hpp"
#include "gguf/gguf_file.hpp"
#include "gguf/model_location.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <filesystem>
#include <random>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace wo::gguf {
namespace {

namespace fs = std::filesystem;
using namespace test;

// A fresh scratch folder per test.
class Locations : public ::testing::Test {
protected:
  void SetUp() override {
    std::random_device rd;
    dir_ =
        fs::temp_directory_path() / ("gguf-loc-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, ec);
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string &name) const { return (dir_ / name).string(); }

  // The error text of File::open; fails the test when it succeeds or has another status.
  std::string open_error(const std::string &loc, wo_status expected, const OpenOptions &o = {}) {
    try {
      File::open(loc, o);
    } catch (const Error &e) {
      EXPECT_EQ(e.status(), expected) << e.what();
      return e.what();
    }
    ADD_FAILURE() << loc << " opened";
    return {};
  }

  fs::path dir_;
};

void expect_has(const std::string &msg, const std::string &part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "'" << part << "' not in: " << msg;
}

TEST_F(Locations, PlainPathAndFileUriOpenTheSameModel) {
  const std::string m = model_path("llama-tiny-Q8_0");
  auto a = File::open(m);
  auto b = File::open("file:" + fs::absolute(m).string());
  auto c = File::open("file://" + fs::absolute(m).string());
  EXPECT_EQ(a->size(), b->size());
  EXPECT_EQ(a->size(), c->size());
  EXPECT_EQ(a->tensors().size(), b->tensors().size());
}

TEST_F(Locations, RamSegmentIsMapped) {
  const auto bytes = read_all(model_path("llama-tiny-Q4_K_M"));
  const std::string name = "wo-gguf-test-" + std::to_string(::getpid());
  int fd = ::shm_open(("/" + name).c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(bytes.size())), 0);
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ::close(fd);
  try {
    auto f = File::open("ram:" + name);
    EXPECT_EQ(f->size(), bytes.size());
    EXPECT_EQ(f->architecture(), "llama");
    EXPECT_EQ(f->tensors().size(), 21u);
  } catch (const std::exception &e) {
    ADD_FAILURE() << e.what();
  }
  ::shm_unlink(("/" + name).c_str());
  expect_has(open_error("ram:" + name, WO_ERR_IO), "does not exist");
}

TEST_F(Locations, BadRamNamesRejected) {
  expect_has(open_error("ram:", WO_ERR_INVALID_ARGUMENT), "ram:NAME");
  expect_has(open_error("ram:a/b", WO_ERR_INVALID_ARGUMENT), "found '/'");
  expect_has(open_error("ram:../x", WO_ERR_INVALID_ARGUMENT), "letters, digits");
  expect_has(open_error("ram:a.b", WO_ERR_INVALID_ARGUMENT), "found '.'");
}

TEST_F(Locations, DotDotComponentsRejected) {
  for (std::string loc : {"../m.gguf", "a/../m.gguf", "/x/..", "file:../m.gguf"})
    expect_has(open_error(loc, WO_ERR_INVALID_ARGUMENT), "'..'");
  // A name that merely contains dots is fine (and then simply missing).
  expect_has(open_error(path("a..b.gguf"), WO_ERR_IO), "does not exist");
}

TEST_F(Locations, ModelRootContainment) {
  fs::create_directories(dir_ / "root");
  fs::copy_file(model_path("llama-tiny-Q8_0"), dir_ / "root" / "in.gguf");
  fs::copy_file(model_path("llama-tiny-Q8_0"), dir_ / "out.gguf");
  fs::create_symlink(dir_ / "out.gguf", dir_ / "root" / "escape.gguf");
  fs::create_directories(dir_ / "root2");
  fs::copy_file(model_path("llama-tiny-Q8_0"), dir_ / "root2" / "sibling.gguf");
  OpenOptions o;
  o.model_root = path("root");
  EXPECT_NO_THROW(File::open(path("root/in.gguf"), o));
  expect_has(open_error(path("out.gguf"), WO_ERR_INVALID_ARGUMENT, o), "outside --model-root");
  expect_has(open_error(path("root/escape.gguf"), WO_ERR_INVALID_ARGUMENT, o), "outside --model-root");
  // "root2" shares the prefix "root" but is not inside it.
  expect_has(open_error(path("root2/sibling.gguf"), WO_ERR_INVALID_ARGUMENT, o), "outside --model-root");
}

TEST_F(Locations, MissingDirectoryAndUnreadable) {
  expect_has(open_error(path("nope.gguf"), WO_ERR_IO), "does not exist");
  expect_has(open_error(dir_.string(), WO_ERR_IO), "is a directory");
  expect_has(open_error("", WO_ERR_INVALID_ARGUMENT), "empty");
  fs::copy_file(model_path("llama-tiny-Q8_0"), dir_ / "locked.gguf");
  fs::permissions(dir_ / "locked.gguf", fs::perms::none);
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: permission bits do not stop reads";
  expect_has(open_error(path("locked.gguf"), WO_ERR_IO), "not readable");
}

TEST_F(Locations, ForeignFormatsNamed) {
  std::mt19937 rng(std::random_device{}());
  auto noise = [&](size_t n) {
    std::vector<uint8_t> v(n);
    for (auto &b : v)
      b = static_cast<uint8_t>(rng());
    return v;
  };
  // safetensors: u64 LE header length, then the JSON header.
  std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::vector<uint8_t> st(8);
  const uint64_t hl = header.size();
  std::memcpy(st.data(), &hl, 8);
  st.insert(st.end(), header.begin(), header.end());
  auto tail = noise(8);
  st.insert(st.end(), tail.begin(), tail.end());
  write_all(path("m.safetensors"), st);
  expect_has(open_error(path("m.safetensors"), WO_ERR_FORMAT), "safetensors");

  std::vector<uint8_t> zip = {'P', 'K', 3, 4};
  auto z = noise(60);
  zip.insert(zip.end(), z.begin(), z.end());
  write_all(path("m.pt"), zip);
  expect_has(open_error(path("m.pt"), WO_ERR_FORMAT), "ZIP archive, as PyTorch checkpoints");

  std::vector<uint8_t> pickle = {0x80, 0x02};
  auto p = noise(40);
  pickle.insert(pickle.end(), p.begin(), p.end());
  write_all(path("m.bin"), pickle);
  expect_has(open_error(path("m.bin"), WO_ERR_FORMAT), "pickle");

  // ONNX ModelProto: ir_version (field 1, varint 8), then producer_name (field 2, bytes).
  std::vector<uint8_t> onnx = {0x08, 0x08, 0x12, 0x07, 'p', 'y', 't', 'o', 'r', 'c', 'h'};
  auto o = noise(30);
  onnx.insert(onnx.end(), o.begin(), o.end());
  write_all(path("m.onnx"), onnx);
  expect_has(open_error(path("m.onnx"), WO_ERR_FORMAT), "ONNX");

  write_all(path("empty.gguf"), {});
  expect_has(open_error(path("empty.gguf"), WO_ERR_FORMAT), "empty");

  write_all(path("text.gguf"), {'h', 'e', 'l', 'l', 'o', '\n'});
  expect_has(open_error(path("text.gguf"), WO_ERR_FORMAT),
             "expected 'GGUF' (47 47 55 46), found 68 65 6c 6c");
}

} // namespace
} // namespace wo::gguf
