#include "spm_model.hpp"

#include "utf8_text.hpp"

#include <worker/sdk.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

namespace wo::tok {

SpmModel::SpmModel(const Vocab &vocab) : vocab_(vocab) {
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    int32_t id = vocab.find(buf);
    if (id < 0) id = vocab.find(std::string(1, static_cast<char>(b)));
    if (id < 0) id = vocab.unk;
    byte_id_[b] = id; // -1: this byte cannot be represented (checked at encode)
  }
}

void SpmModel::encode(std::string_view text, std::vector<int32_t> &out) const {
  struct Sym {
    int32_t prev, next;
    size_t off, n; // n == 0: merged away
  };
  struct Cand {
    float score;
    int32_t left, right;
    size_t size;
  };
  struct Worse {
    bool operator()(const Cand &a, const Cand &b) const {
      return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
  };
  std::vector<Sym> syms;
  for (size_t off = 0; off < text.size();) {
    size_t len = std::min(utf8_len(static_cast<unsigned char>(text[off])), text.size() - off);
    int32_t idx = static_cast<int32_t>(syms.size());
    syms.push_back({idx - 1, -1, off, len});
    if (idx > 0) syms[idx - 1].next = idx;
    off += len;
  }
  std::vector<Cand> heap;
  std::string joined;
  auto consider = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    joined.assign(text.data() + syms[left].off, syms[left].n + syms[right].n);
    int32_t id = vocab_.find(joined);
    if (id < 0) return;
    heap.push_back({vocab_.score.empty() ? 0.0f : vocab_.score[id], left, right, joined.size()});
    std::push_heap(heap.begin(), heap.end(), Worse{});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i)
    consider(i - 1, i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), Worse{});
    Cand c = heap.back();
    heap.pop_back();
    Sym &l = syms[c.left];
    Sym &r = syms[c.right];
    if (l.n == 0 || r.n == 0 || l.n + r.n != c.size) continue; // stale
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = c.left;
    consider(l.prev, c.left);
    consider(c.left, l.next);
  }

  for (int32_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[i].next) {
    std::string piece(text.data() + syms[i].off, syms[i].n);
    int32_t id = vocab_.find(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    for (unsigned char b : piece) {
      if (byte_id_[b] < 0) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "0x%02X", b);
        throw Error(WO_ERR_FORMAT, std::string("SentencePiece vocabulary has no byte token <") + buf +
                                       "> and no unknown token to stand for byte " + buf);
      }
      out.push_back(byte_id_[b]);
    }
  }
}

} // namespace wo::tok
