// `worker-orcd tokenize`: the model's tokenizer, exactly as the server would pick and use it
// (plugin selection by score over the GGUF metadata, or a tokenizer.json), on one text.
//
//   worker-orcd tokenize --model M [--tokenizer-json P] [--add-special|--no-add-special]
//                        [--parse-special|--no-parse-special] [--json] (TEXT | --text-file PATH)
//   worker-orcd tokenize --model M [--tokenizer-json P] [--json] --detokenize 1,2,3
//
// MODEL may be a vocabulary-only GGUF (no tensors): nothing here touches a device.
#include "cli/command.hpp"
#include "gguf/gguf_file.hpp"
#include "gguf/host_meta.hpp"
#include "observe/log.hpp"
#include "plugins/registry.hpp"

#include <worker/sdk.hpp>
#include <worker/utf8_stream.hpp>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

const char *kUsage =
    "usage: worker-orcd tokenize --model MODEL [options] (TEXT | --text-file PATH)\n"
    "       worker-orcd tokenize --model MODEL [options] --detokenize ID,ID,...\n"
    "  --model MODEL          GGUF file (a vocabulary-only GGUF is fine)\n"
    "  --tokenizer-json PATH  use this Hugging Face tokenizer.json instead of the GGUF vocabulary\n"
    "  --add-special          add BOS/EOS as the model's metadata says (default)\n"
    "  --no-add-special       add nothing\n"
    "  --parse-special        turn special-token text such as <|im_start|> into its id (default)\n"
    "  --no-parse-special     tokenize special-token text as plain text\n"
    "  --json                 print {\"ids\": [...], \"pieces\": [...]} (detokenize: {\"text\": ...})\n"
    "  --text-file PATH       read the text (bytes as they are) from PATH\n"
    "  --detokenize IDS       print the text of comma-separated token ids\n"
    "  --plugin-dir DIR       where to look for plugins (default: <dir of worker-orcd>/../plugins)\n";

struct Options {
  std::string model, tokenizer_json, plugin_dir, text_file, detokenize;
  std::string text;
  bool have_text = false, add_special = true, parse_special = true, json = false;
};

// The display form of a token: its bytes as UTF-8 with invalid parts replaced (lossy).
std::string display(std::string_view bytes) {
  wo::Utf8Assembler a;
  std::string s = a.push(bytes);
  s += a.flush();
  return s;
}

// Text-mode quoting: control characters shown as escapes so that one token stays on one line.
std::string quoted(const std::string &s) {
  std::string out = "'";
  for (unsigned char c : s) {
    switch (c) {
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    case '\\': out += "\\\\"; break;
    case '\'': out += "\\'"; break;
    default:
      if (c < 0x20 || c == 0x7F) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        out += buf;
      } else {
        out.push_back(static_cast<char>(c));
      }
    }
  }
  return out + "'";
}

std::vector<int32_t> parse_ids(const std::string &list) {
  std::vector<int32_t> ids;
  std::stringstream ss(list);
  std::string item;
  size_t index = 0;
  while (std::getline(ss, item, ',')) {
    size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    std::string t = b == std::string::npos ? "" : item.substr(b, e - b + 1);
    char *end = nullptr;
    long long v = t.empty() ? 0 : std::strtoll(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0' || v < 0 || v > INT32_MAX)
      throw wo::Error(WO_ERR_INVALID_ARGUMENT, "--detokenize: item " + std::to_string(index) + " ('" + item +
                                                   "') is not a token id (expected a non-negative integer)");
    ids.push_back(static_cast<int32_t>(v));
    ++index;
  }
  if (ids.empty())
    throw wo::Error(WO_ERR_INVALID_ARGUMENT,
                    "--detokenize: expected comma-separated ids, found '" + list + "'");
  return ids;
}

std::string read_text_file(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw wo::Error(WO_ERR_IO, "--text-file: cannot open '" + path + "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Parses argv; returns 0 to go on, otherwise the exit code (after printing).
int parse_args(int argc, char **argv, Options &o) {
  auto value = [&](int &i, const std::string &a) -> std::string {
    size_t eq = a.find('=');
    if (eq != std::string::npos) return a.substr(eq + 1);
    if (i + 1 >= argc)
      throw wo::Error(WO_ERR_INVALID_ARGUMENT, a + " expects a value (argument " + std::to_string(i) + ")");
    return argv[++i];
  };
  auto is = [](const std::string &a, const char *name) {
    return a == name || a.rfind(std::string(name) + "=", 0) == 0;
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return -1;
    } else if (is(a, "--model"))
      o.model = value(i, a);
    else if (is(a, "--tokenizer-json"))
      o.tokenizer_json = value(i, a);
    else if (is(a, "--plugin-dir"))
      o.plugin_dir = value(i, a);
    else if (is(a, "--text-file"))
      o.text_file = value(i, a);
    else if (is(a, "--detokenize"))
      o.detokenize = value(i, a);
    else if (a == "--add-special")
      o.add_special = true;
    else if (a == "--no-add-special")
      o.add_special = false;
    else if (a == "--parse-special")
      o.parse_special = true;
    else if (a == "--no-parse-special")
      o.parse_special = false;
    else if (a == "--json")
      o.json = true;
    else if (a == "--") {
      if (i + 1 < argc && !o.have_text) {
        o.text = argv[++i];
        o.have_text = true;
      }
    } else if ((a.empty() || a[0] != '-') && !o.have_text) {
      o.text = a;
      o.have_text = true;
    } else {
      std::fprintf(stderr, "tokenize: unexpected argument '%s' (argument %d)\n%s", a.c_str(), i, kUsage);
      return 1;
    }
  }
  if (o.model.empty()) {
    std::fprintf(stderr, "tokenize: --model MODEL is required\n%s", kUsage);
    return 1;
  }
  const int sources = (o.have_text ? 1 : 0) + (o.text_file.empty() ? 0 : 1) + (o.detokenize.empty() ? 0 : 1);
  if (sources != 1) {
    std::fprintf(stderr,
                 "tokenize: expected exactly one of TEXT, --text-file PATH or --detokenize IDS, found %d\n%s",
                 sources, kUsage);
    return 1;
  }
  return 0;
}

void write_json_string(rapidjson::Writer<rapidjson::StringBuffer> &w, const std::string &s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

int run(const Options &o) {
  auto file = wo::gguf::File::open(o.model);
  wo::gguf::MetaHost meta(*file, [](wo_log_level level, const char *msg) {
    if (level >= WO_LOG_WARN) std::fprintf(stderr, "tokenize: %s\n", msg);
  });
  wo::plugins::Registry reg;
  reg.scan(o.plugin_dir.empty() ? wo::plugins::Registry::default_dir() : o.plugin_dir);
  wo_tokenizer_config cfg{};
  cfg.struct_size = sizeof cfg;
  cfg.tokenizer_json = o.tokenizer_json.empty() ? nullptr : o.tokenizer_json.c_str();
  const wo_plugin *plugin = reg.select_tokenizer(meta.host(), &cfg);
  const wo_tokenizer_v1 *vt = wo::plugins::Registry::tokenizer(plugin);
  wo_tokenizer_instance *inst = nullptr;
  wo_status st = vt->create(meta.host(), &cfg, &inst);
  if (st != WO_OK)
    throw wo::Error(st, std::string("tokenizer plugin '") + plugin->name +
                            "' cannot load the tokenizer of '" + o.model + "': " + vt->last_error(nullptr));
  struct Release {
    const wo_tokenizer_v1 *vt;
    wo_tokenizer_instance *inst;
    ~Release() { vt->destroy(inst); }
  } release{vt, inst};

  auto bytes_of = [&](int32_t id) {
    wo_str s{};
    wo_status r = vt->token_bytes(inst, id, &s);
    if (r != WO_OK) throw wo::Error(r, vt->last_error(inst));
    return std::string(s.data, s.len);
  };

  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  if (!o.detokenize.empty()) {
    const std::vector<int32_t> ids = parse_ids(o.detokenize);
    wo_special_ids sp{};
    sp.struct_size = sizeof sp;
    if (vt->special_ids(inst, &sp) != WO_OK) sp.bos = -1;
    // SentencePiece: the space the encoder puts before the first word (after BOS) is not text.
    bool strip_prefix = std::string(vt->kind(inst)) == "gguf-spm";
    std::string text;
    for (int32_t id : ids) {
      std::string b = bytes_of(id);
      if (strip_prefix && id != sp.bos) {
        if (!b.empty() && b[0] == ' ') b.erase(0, 1);
        strip_prefix = false;
      }
      text += b;
    }
    if (o.json) {
      w.StartObject();
      w.Key("text");
      write_json_string(w, display(text));
      w.EndObject();
      std::printf("%s\n", buf.GetString());
    } else {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fputc('\n', stdout);
    }
    return 0;
  }

  const std::string text = o.text_file.empty() ? o.text : read_text_file(o.text_file);
  const uint32_t flags =
      (o.add_special ? WO_TOK_ADD_SPECIAL : 0u) | (o.parse_special ? WO_TOK_PARSE_SPECIAL : 0u);
  std::vector<int32_t> ids(text.size() + 16);
  size_t n = 0;
  st = vt->encode(inst, text.data(), text.size(), flags, ids.data(), ids.size(), &n);
  if (st == WO_ERR_BUFFER_TOO_SMALL) {
    ids.resize(n);
    st = vt->encode(inst, text.data(), text.size(), flags, ids.data(), ids.size(), &n);
  }
  if (st != WO_OK) throw wo::Error(st, std::string("tokenize: ") + vt->last_error(inst));
  ids.resize(n);

  if (o.json) {
    w.StartObject();
    w.Key("ids");
    w.StartArray();
    for (int32_t id : ids)
      w.Int(id);
    w.EndArray();
    w.Key("pieces");
    w.StartArray();
    for (int32_t id : ids)
      write_json_string(w, display(bytes_of(id)));
    w.EndArray();
    w.EndObject();
    std::printf("%s\n", buf.GetString());
  } else {
    std::printf("%zu tokens (%s, %s)\n", ids.size(), plugin->name, vt->kind(inst));
    for (int32_t id : ids)
      std::printf("%8d  %s\n", id, quoted(display(bytes_of(id))).c_str());
  }
  return 0;
}

int tokenize_main(int argc, char **argv) {
  Options o;
  try {
    int rc = parse_args(argc, argv, o);
    if (rc != 0) return rc < 0 ? 0 : rc;
    // The output is the point; keep the narration log for real errors unless asked.
    if (!std::getenv("WORKER_LOG_LEVEL")) wo::observe::set_min_level(wo::observe::Level::error);
    return run(o);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "tokenize: %s\n", e.what());
    return 1;
  }
}

} // namespace

WORKER_CLI_COMMAND("tokenize", "tokenize TEXT (or --detokenize IDS) with the model's tokenizer plugin",
                   tokenize_main);
