// A FakeHost built from a fixture's reference.json: the model's real metadata (scalars with the
// GGUF types the converter writes) and tensor descriptors (name, type, shape) without data.
#pragma once

#include "fake_host.hpp"

#include <rapidjson/document.h>
#include <rapidjson/istreamwrapper.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace wo::gpt::testing {

inline std::string fixtures_dir() {
  const char *env = std::getenv("WORKER_FIXTURES_DIR");
  return env && *env ? env : WORKER_FIXTURES_DIR_DEFAULT;
}

class ReferenceHost : public FakeHost {
public:
  explicit ReferenceHost(const std::string &model) {
    const std::string path = fixtures_dir() + "/reference/" + model + "/reference.json";
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    rapidjson::IStreamWrapper isw(in);
    rapidjson::Document doc;
    doc.ParseStream(isw);
    if (doc.HasParseError() || !doc.IsObject()) throw std::runtime_error("malformed JSON in " + path);
    for (auto &m : doc["metadata"].GetObject())
      add_meta(m.name.GetString(), m.value);
    for (auto &t : doc["tensors"].GetArray()) {
      std::vector<int64_t> ne;
      for (auto &v : t["ne"].GetArray())
        ne.push_back(v.GetInt64());
      add_tensor(t["name"].GetString(), type_id(t["type"].GetString()), ne);
    }
  }

private:
  void add_meta(const std::string &key, const rapidjson::Value &v) {
    if (v.IsString()) {
      set_string(key, std::string(v.GetString(), v.GetStringLength()));
    } else if (v.IsInt64() && !v.IsDouble() && v.GetInt64() >= 0) {
      set_u32(key, static_cast<uint32_t>(v.GetInt64())); // the converter writes counts and ids as u32
    } else if (v.IsNumber()) {
      set_f32(key, v.GetDouble());
    }
    // arrays are reduced to counts in reference.json; the plugin needs none of them
  }
};

} // namespace wo::gpt::testing
