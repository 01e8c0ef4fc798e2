// The plugin registry against purpose-built plugins (test_plugins/): every way a file in the
// plugin directory can be wrong is rejected with a reason that says what was expected and found,
// nothing crashes the host, and selection picks by score with clear errors.
#include "observe/log.hpp"
#include "plugins/registry.hpp"

#include <worker/sdk.hpp>
#include <worker/testing/fake_host.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using wo::plugins::Candidate;
using wo::plugins::Registry;

namespace {

// The host's ABI as the registry prints it ("1.<minor>").
const std::string kHostAbi = "1." + std::to_string(WORKER_SDK_ABI_MINOR);

std::string case_dir(const std::string &c) { return std::string(WORKER_TEST_PLUGIN_ROOT) + "/" + c; }

// A fresh directory under the system temp dir, removed at the end of the test.
class TempDir {
public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() /
            ("wo-registry-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string str() const { return path_.string(); }
  std::string file(const std::string &name) const { return (path_ / name).string(); }
  void write(const std::string &name, const std::string &bytes) const {
    std::ofstream(path_ / name, std::ios::binary) << bytes;
  }

private:
  fs::path path_;
};

std::string random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto &c : s)
    c = static_cast<char>(rng() & 0xff);
  return s;
}

const Candidate &only_candidate(const Registry &reg) {
  EXPECT_EQ(reg.candidates().size(), 1u);
  static const Candidate none;
  return reg.candidates().empty() ? none : reg.candidates().front();
}

} // namespace

TEST(Registry, AcceptsGoodPluginsOfEveryKindWithTheirFacts) {
  Registry reg;
  reg.scan(case_dir("good"));
  ASSERT_EQ(reg.candidates().size(), 3u);
  for (const auto &c : reg.candidates()) {
    EXPECT_TRUE(c.accepted) << c.path << ": " << c.reason;
    EXPECT_EQ(c.reason, "");
    EXPECT_EQ(c.version, "1.2.3");
    EXPECT_EQ(c.abi, kHostAbi);
  }
  // Sorted by file name: tp_arch.so, tp_quant.so, tp_tok.so.
  EXPECT_EQ(reg.candidates()[0].name, "tp-arch");
  EXPECT_EQ(reg.candidates()[0].kind, "architecture");
  EXPECT_EQ(reg.candidates()[1].name, "tp-quant");
  EXPECT_EQ(reg.candidates()[1].kind, "quant");
  EXPECT_EQ(reg.candidates()[2].name, "tp-tok");
  EXPECT_EQ(reg.candidates()[2].kind, "tokenizer");
  EXPECT_EQ(reg.candidates()[2].path, case_dir("good") + "/tp_tok.so");

  EXPECT_EQ(reg.accepted(WO_PLUGIN_ARCHITECTURE).size(), 1u);
  EXPECT_EQ(reg.accepted(WO_PLUGIN_QUANT).size(), 1u);
  EXPECT_EQ(reg.accepted(WO_PLUGIN_TOKENIZER).size(), 1u);
  ASSERT_NE(reg.find("tp-quant"), nullptr);
  EXPECT_STREQ(reg.find("tp-quant")->name, "tp-quant");
  EXPECT_EQ(reg.find("no-such-plugin"), nullptr);
}

TEST(Registry, KeepsLoadedCodeAliveAcrossMovesForItsWholeLife) {
  Registry moved;
  {
    Registry reg;
    reg.scan(case_dir("good"));
    moved = std::move(reg);
  }
  const wo_quant_v1 *q = Registry::quant(moved.find("tp-quant"));
  // Call into the plugin: Q8_0 of 32 random values round-trips within the codec's precision.
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 2.f);
  std::vector<float> x(32), y(32);
  for (auto &v : x)
    v = nd(rng);
  std::vector<uint8_t> packed(34);
  ASSERT_EQ(q->quantize_rows(8, x.data(), 1, 32, packed.data()), WO_OK);
  ASSERT_EQ(q->dequantize_rows(8, packed.data(), 1, 32, y.data()), WO_OK);
  float amax = 0;
  for (float v : x)
    amax = std::max(amax, std::fabs(v));
  for (int i = 0; i < 32; ++i)
    EXPECT_NEAR(y[i], x[i], amax / 127.0f) << "element " << i; // half a step + fp16 scale
}

struct RejectCase {
  const char *dir;
  std::vector<std::string> reason_parts;
};

class RegistryRejects : public ::testing::TestWithParam<RejectCase> {};

TEST_P(RegistryRejects, WithAReasonThatNamesTheProblem) {
  const RejectCase &rc = GetParam();
  Registry reg;
  ASSERT_NO_THROW(reg.scan(case_dir(rc.dir)));
  const Candidate &c = only_candidate(reg);
  EXPECT_FALSE(c.accepted);
  for (const auto &part : rc.reason_parts)
    EXPECT_THAT(c.reason, HasSubstr(part));
  EXPECT_TRUE(reg.accepted(WO_PLUGIN_QUANT).empty());
  EXPECT_TRUE(reg.accepted(WO_PLUGIN_ARCHITECTURE).empty());
  EXPECT_TRUE(reg.accepted(WO_PLUGIN_TOKENIZER).empty());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RegistryRejects,
    ::testing::Values(
        RejectCase{"abi_major",
                   {"ABI major mismatch",
                    "plugin built against SDK 2." + std::to_string(WORKER_SDK_ABI_MINOR),
                    "host speaks " + kHostAbi}},
        RejectCase{"null_entry", {"entry returned NULL for host ABI " + kHostAbi}},
        RejectCase{"small_struct", {"descriptor struct_size 32 is smaller than the 40 bytes"}},
        RejectCase{"null_vtable", {"descriptor vtable is NULL"}},
        RejectCase{"small_vtable", {"wo_tokenizer_v1 struct_size 12 is smaller than the"}},
        RejectCase{"missing_fn", {"wo_tokenizer_v1.encode is NULL but required"}},
        RejectCase{"throws", {"entry threw a C++ exception"}},
        RejectCase{"unknown_kind", {"unknown plugin kind 7"}},
        RejectCase{"unloadable", {"unloadable: dlopen failed", "wo_test_symbol_that_no_library_defines"}},
        RejectCase{"no_entry",
                   {"not a worker plugin", "no 'worker_plugin_entry' symbol in ELF section 'worker'"}}),
    [](const ::testing::TestParamInfo<RejectCase> &info) { return std::string(info.param.dir); });

TEST(Registry, AcceptsANewerMinorWithLargerStructs) {
  Registry reg;
  reg.scan(case_dir("newer_minor"));
  const Candidate &c = only_candidate(reg);
  EXPECT_TRUE(c.accepted) << c.reason;
  EXPECT_EQ(c.abi, "1." + std::to_string(WORKER_SDK_ABI_MINOR + 1));
  ASSERT_NE(reg.find("tp-newer"), nullptr);
  EXPECT_GT(reg.find("tp-newer")->struct_size, sizeof(wo_plugin));
  const wo_tokenizer_v1 *t = Registry::tokenizer(reg.find("tp-newer"));
  EXPECT_GT(t->struct_size, sizeof(wo_tokenizer_v1));
}

TEST(Registry, RejectsTheSecondPluginOfADuplicateName) {
  Registry reg;
  reg.scan(case_dir("duplicate"));
  ASSERT_EQ(reg.candidates().size(), 2u);
  const Candidate &a = reg.candidates()[0], &b = reg.candidates()[1];
  EXPECT_EQ(a.path, case_dir("duplicate") + "/dup_a.so");
  EXPECT_TRUE(a.accepted) << a.reason;
  EXPECT_FALSE(b.accepted);
  EXPECT_EQ(b.name, "tp-dup");
  EXPECT_THAT(b.reason, HasSubstr("duplicate name 'tp-dup': already provided by " + a.path));
  EXPECT_EQ(reg.accepted(WO_PLUGIN_QUANT).size(), 1u);
}

TEST(Registry, ScanningTheSameDirectoryTwiceRejectsTheRepeatsAsDuplicates) {
  Registry reg;
  reg.scan(case_dir("good"));
  reg.scan(case_dir("good"));
  ASSERT_EQ(reg.candidates().size(), 6u);
  for (size_t i = 3; i < 6; ++i)
    EXPECT_THAT(reg.candidates()[i].reason, HasSubstr("duplicate name"));
  // The first copies still work after the repeats were unloaded.
  EXPECT_EQ(Registry::tokenizer(reg.find("tp-tok"))->vocab_size != nullptr, true);
}

TEST(Registry, GarbageAndNonElfFilesAreRejectedAndGoodPluginsBesideThemStillLoad) {
  TempDir dir;
  dir.write("x.so", random_bytes(4096, std::random_device{}()));
  dir.write("notes.so", "this is a text file, not a shared object\n");
  dir.write("empty.so", "");
  // ELF magic followed by garbage: the header checks must catch what library_info would trust.
  dir.write("truncated.so", std::string("\x7f"
                                        "ELF\x02\x01\x01",
                                        7) +
                                random_bytes(200, 11));
  dir.write("README.txt", "not a .so: ignored\n");
  fs::copy_file(case_dir("good") + "/tp_quant.so", dir.file("z_good.so"));

  Registry reg;
  ASSERT_NO_THROW(reg.scan(dir.str()));
  ASSERT_EQ(reg.candidates().size(), 5u) << "only *.so files are candidates";
  std::map<std::string, const Candidate *> by_file;
  for (const auto &c : reg.candidates())
    by_file[fs::path(c.path).filename().string()] = &c;
  EXPECT_THAT(by_file.at("x.so")->reason, HasSubstr("not a loadable plugin"));
  EXPECT_THAT(by_file.at("notes.so")->reason,
              HasSubstr("not an ELF file: expected magic bytes 7f 45 4c 46, found 74 68 69 73"));
  EXPECT_THAT(by_file.at("empty.so")->reason,
              HasSubstr("not an ELF file: expected magic bytes 7f 45 4c 46, found an empty file"));
  EXPECT_THAT(by_file.at("truncated.so")->reason, HasSubstr("not a loadable plugin"));
  for (const char *bad : {"x.so", "notes.so", "empty.so", "truncated.so"})
    EXPECT_FALSE(by_file.at(bad)->accepted) << bad;
  EXPECT_TRUE(by_file.at("z_good.so")->accepted) << by_file.at("z_good.so")->reason;
  EXPECT_NE(reg.find("tp-quant"), nullptr);
}

TEST(Registry, ElfWithSectionsOutsideTheFileIsRejectedBeforeLibraryInfoReadsIt) {
  // A real plugin whose section header table is cut off: the bounds check names the table.
  std::ifstream in(case_dir("good") + "/tp_quant.so", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 4096u);
  TempDir dir;
  dir.write("cut.so", bytes.substr(0, bytes.size() - 64));
  Registry reg;
  reg.scan(dir.str());
  const Candidate &c = only_candidate(reg);
  EXPECT_FALSE(c.accepted);
  EXPECT_THAT(c.reason, HasSubstr("ELF section header table"));
  EXPECT_THAT(c.reason, HasSubstr("past the end of the " + std::to_string(bytes.size() - 64) + "-byte file"));
}

TEST(Registry, MissingDirectoryYieldsNoCandidatesAndDoesNotThrow) {
  Registry reg;
  ASSERT_NO_THROW(reg.scan("/nonexistent/wo-plugins-dir"));
  EXPECT_TRUE(reg.candidates().empty());
  try {
    reg.select_architecture(nullptr);
    FAIL() << "expected wo::Error";
  } catch (const wo::Error &e) {
    EXPECT_EQ(e.status(), WO_ERR_NOT_FOUND);
    EXPECT_THAT(e.what(),
                HasSubstr("no architecture plugin is installed (scanned: /nonexistent/wo-plugins-dir)"));
  }
}

TEST(Registry, LogsEveryRejectionWithItsReason) {
  std::vector<std::string> lines;
  wo::observe::set_sink([&](const std::string &l) { lines.push_back(l); });
  Registry reg;
  reg.scan(case_dir("null_entry"));
  wo::observe::set_sink(nullptr);
  bool found = false;
  for (const auto &l : lines)
    found = found ||
            (l.find("\"plugin_rejected\"") != std::string::npos &&
             l.find("entry returned NULL") != std::string::npos && l.find("tp_null.so") != std::string::npos);
  EXPECT_TRUE(found) << "no plugin_rejected event with the path and reason among " << lines.size()
                     << " lines";
}

// ---- selection ----------------------------------------------------------------------------

TEST(RegistrySelect, HighestArchitectureScoreWins) {
  Registry reg;
  reg.scan(case_dir("ranked"));
  ASSERT_EQ(reg.accepted(WO_PLUGIN_ARCHITECTURE).size(), 3u);
  wo::testing::FakeHost tiny;
  tiny.set_str("general.architecture", "tiny");
  EXPECT_STREQ(reg.select_architecture(tiny.host())->name, "tp-rank-high"); // 50 beats 40; 'other' scores 0
  wo::testing::FakeHost other;
  other.set_str("general.architecture", "other");
  EXPECT_STREQ(reg.select_architecture(other.host())->name, "tp-rank-other");
}

TEST(RegistrySelect, NoPluginScoringAboveZeroNamesTheArchitectureAndTheScores) {
  Registry reg;
  reg.scan(case_dir("ranked"));
  wo::testing::FakeHost host;
  host.set_str("general.architecture", "mamba");
  try {
    reg.select_architecture(host.host());
    FAIL() << "expected wo::Error";
  } catch (const wo::Error &e) {
    EXPECT_EQ(e.status(), WO_ERR_NOT_FOUND);
    EXPECT_THAT(e.what(), HasSubstr("general.architecture='mamba'"));
    EXPECT_THAT(e.what(), HasSubstr("tp-rank-high=0, tp-rank-low=0, tp-rank-other=0"));
  }
}

TEST(RegistrySelect, ATieForTheTopScoreIsAnErrorNamingBothPlugins) {
  Registry reg;
  reg.scan(case_dir("tie"));
  wo::testing::FakeHost host;
  host.set_str("general.architecture", "tiny");
  try {
    reg.select_architecture(host.host());
    FAIL() << "expected wo::Error";
  } catch (const wo::Error &e) {
    EXPECT_EQ(e.status(), WO_ERR_INVALID_ARGUMENT);
    EXPECT_THAT(e.what(), HasSubstr("'tp-tie-a' (" + case_dir("tie") + "/tie_a.so)"));
    EXPECT_THAT(e.what(), HasSubstr("'tp-tie-b' (" + case_dir("tie") + "/tie_b.so)"));
    EXPECT_THAT(e.what(), HasSubstr("both score 20"));
    EXPECT_THAT(e.what(), HasSubstr("general.architecture='tiny'"));
    EXPECT_THAT(e.what(), ::testing::Not(HasSubstr("tp-tie-low")));
  }
}

TEST(RegistrySelect, TokenizerByMetadataAndItsErrorNamesTheTokenizerModel) {
  Registry reg;
  reg.scan(case_dir("good"));
  wo::testing::FakeHost host;
  host.set_str("tokenizer.ggml.model", "bytes");
  wo_tokenizer_config cfg{sizeof(wo_tokenizer_config), nullptr};
  EXPECT_STREQ(reg.select_tokenizer(host.host(), &cfg)->name, "tp-tok");

  host.set_str("tokenizer.ggml.model", "gpt2");
  host.set_str("tokenizer.ggml.pre", "qwen2");
  try {
    reg.select_tokenizer(host.host(), &cfg);
    FAIL() << "expected wo::Error";
  } catch (const wo::Error &e) {
    EXPECT_EQ(e.status(), WO_ERR_NOT_FOUND);
    EXPECT_THAT(e.what(), HasSubstr("tokenizer.ggml.model='gpt2', tokenizer.ggml.pre='qwen2'"));
    EXPECT_THAT(e.what(), HasSubstr("tp-tok=0"));
  }
}

TEST(RegistrySelect, QuantForTypeFindsTheCodecOrNothing) {
  Registry reg;
  reg.scan(case_dir("good"));
  ASSERT_NE(reg.quant_for_type(8), nullptr);
  EXPECT_STREQ(reg.quant_for_type(8)->name, "tp-quant");
  EXPECT_EQ(reg.quant_for_type(12), nullptr); // Q4_K: nobody serves it
}

TEST(RegistrySelect, TwoCodecsForOneTypeIsAnErrorNamingBoth) {
  Registry reg;
  reg.scan(case_dir("quant_conflict"));
  try {
    reg.quant_for_type(8);
    FAIL() << "expected wo::Error";
  } catch (const wo::Error &e) {
    EXPECT_EQ(e.status(), WO_ERR_INVALID_ARGUMENT);
    EXPECT_THAT(e.what(), HasSubstr("ggml type Q8_0 (8) is served by two quant plugins"));
    EXPECT_THAT(e.what(), HasSubstr("'tp-qc-a'"));
    EXPECT_THAT(e.what(), HasSubstr("'tp-qc-b'"));
  }
}

TEST(RegistryCasts, CheckKindAndRefuseNull) {
  Registry reg;
  reg.scan(case_dir("good"));
  const wo_plugin *q = reg.find("tp-quant");
  EXPECT_NE(Registry::quant(q), nullptr);
  EXPECT_EQ(Registry::quant(q)->n_types, 1u);
  EXPECT_THROW(Registry::arch(q), wo::Error);
  EXPECT_THROW(Registry::tokenizer(q), wo::Error);
  EXPECT_THROW(Registry::quant(nullptr), wo::Error);
  try {
    Registry::arch(q);
  } catch (const wo::Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("plugin 'tp-quant': expected kind architecture, found kind 2"));
  }
  EXPECT_NE(Registry::arch(reg.find("tp-arch")), nullptr);
  EXPECT_NE(Registry::tokenizer(reg.find("tp-tok")), nullptr);
}

TEST(Registry, DefaultDirIsThePluginsFolderBesideTheExecutablesFolder) {
  // Test executables live in <build>/tests-bin, so the default is <build>/plugins.
  EXPECT_EQ(fs::weakly_canonical(Registry::default_dir()), fs::weakly_canonical(WORKER_PLUGIN_DIR_DEFAULT));
}
