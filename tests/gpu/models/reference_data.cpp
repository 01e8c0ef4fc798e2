#include "reference_data.hpp"

#include <rapidjson/document.h>

#include <algorithm>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>

namespace wo::testing {

namespace {

using Json = rapidjson::Value;

[[noreturn]] void fail(const std::string &file, const std::string &key, const std::string &what) {
  throw std::runtime_error(file + ": key '" + key + "': " + what);
}

const Json &member(const std::string &file, const Json &obj, const char *key) {
  if (!obj.IsObject() || !obj.HasMember(key)) fail(file, key, "expected it to be present, found nothing");
  return obj[key];
}

std::vector<int32_t> int_array(const std::string &file, const Json &v, const std::string &key) {
  if (!v.IsArray()) fail(file, key, "expected an array of integers");
  std::vector<int32_t> out;
  for (const auto &e : v.GetArray()) {
    if (!e.IsInt()) fail(file, key, "expected integer elements");
    out.push_back(e.GetInt());
  }
  return out;
}

Routing routing(const std::string &file, const Json &v, const std::string &key) {
  Routing r;
  if (!v.IsArray()) fail(file, key, "expected an array of layers");
  for (const auto &layer : v.GetArray()) {
    std::vector<RoutedToken> toks;
    for (const auto &t : member(file, layer, "tokens").GetArray()) {
      RoutedToken rt;
      if (!t.IsArray() || t.Size() < 2) fail(file, key, "expected [gap, e1, e2, ...] per token");
      rt.gap = t[0].GetDouble();
      for (rapidjson::SizeType i = 1; i < t.Size(); ++i)
        rt.experts.push_back(t[i].GetInt());
      toks.push_back(std::move(rt));
    }
    r.push_back(std::move(toks));
  }
  return r;
}

std::string basename_of(const std::string &p) {
  auto s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

} // namespace

Reference load_reference(const std::string &dir) {
  const std::string file = dir + "/reference.json";
  std::ifstream in(file);
  if (!in) throw std::runtime_error(file + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  rapidjson::Document d;
  d.Parse(ss.str().c_str());
  if (d.HasParseError() || !d.IsObject()) throw std::runtime_error(file + ": not a JSON object");

  Reference r;
  r.dir = dir;
  r.model_file = basename_of(member(file, d, "model_file").GetString());
  r.arch = member(file, d, "arch").GetString();
  r.n_vocab = member(file, d, "n_vocab").GetInt64();
  for (const auto &p : member(file, d, "prompts").GetArray()) {
    ReferencePrompt rp;
    rp.name = member(file, p, "name").GetString();
    const std::string where = "prompts[" + rp.name + "]";
    rp.tokens = int_array(file, member(file, p, "tokens"), where + ".tokens");
    const Json &ll = member(file, p, "last_logits");
    rp.logits_file = member(file, ll, "file").GetString();
    rp.logits_std = member(file, ll, "std").GetDouble();
    rp.logits_argmax = member(file, ll, "argmax").GetInt();
    for (const auto &pos : member(file, p, "topk").GetArray()) {
      std::vector<std::pair<int32_t, float>> row;
      for (const auto &pair : pos.GetArray())
        row.emplace_back(pair[0].GetInt(), static_cast<float>(pair[1].GetDouble()));
      rp.topk.push_back(std::move(row));
    }
    if (rp.topk.size() != rp.tokens.size())
      fail(file, where + ".topk",
           "expected one entry per prompt token (" + std::to_string(rp.tokens.size()) + "), found " +
               std::to_string(rp.topk.size()));
    rp.greedy = int_array(file, member(file, member(file, p, "greedy"), "tokens"), where + ".greedy.tokens");
    if (p.HasMember("routing_prompt"))
      rp.routing_prompt = routing(file, p["routing_prompt"], where + ".routing_prompt");
    if (p.HasMember("routing_greedy"))
      rp.routing_greedy = routing(file, p["routing_greedy"], where + ".routing_greedy");
    r.prompts.push_back(std::move(rp));
  }
  return r;
}

std::vector<std::string> reference_dirs(const std::string &root) {
  std::vector<std::string> out;
  DIR *d = opendir(root.c_str());
  if (!d) return out;
  while (dirent *e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (stat((root + "/" + name + "/reference.json").c_str(), &st) == 0) out.push_back(name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<float> read_f32(const std::string &path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const auto bytes = static_cast<size_t>(in.tellg());
  std::vector<float> v(bytes / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char *>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  return v;
}

} // namespace wo::testing
