#include "plugins/elf_check.hpp"

#include <elf.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <vector>

namespace wo::plugins {
namespace {

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
#else
constexpr uint16_t kHostMachine = EM_NONE; // unknown: skip the machine check
#endif

std::string hex_bytes(const unsigned char *p, size_t n) {
  static const char *digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (i) s += ' ';
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

} // namespace

std::string elf_problem(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "cannot open the file for reading";
  f.seekg(0, std::ios::end);
  const auto file_size = static_cast<uint64_t>(f.tellg());
  f.seekg(0);

  // Magic first: "a text file" says more than "too short" about most files that are not plugins.
  Elf64_Ehdr eh{};
  const auto head = static_cast<std::streamsize>(std::min<uint64_t>(file_size, sizeof(eh)));
  f.read(reinterpret_cast<char *>(&eh), head);
  if (!f) return "not an ELF file: reading its first " + std::to_string(head) + " bytes failed";
  if (file_size < SELFMAG || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return "not an ELF file: expected magic bytes 7f 45 4c 46, found " +
           (file_size == 0 ? std::string("an empty file") : hex_bytes(eh.e_ident, std::min<uint64_t>(file_size, SELFMAG)));
  if (file_size < sizeof(eh))
    return "truncated ELF file: " + std::to_string(file_size) + " bytes, shorter than an ELF header (" +
           std::to_string(sizeof(eh)) + " bytes)";
  if (eh.e_ident[EI_CLASS] != ELFCLASS64)
    return "ELF class " + std::to_string(eh.e_ident[EI_CLASS]) + " is not 64-bit (expected " +
           std::to_string(ELFCLASS64) + ")";
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return "ELF data encoding " + std::to_string(eh.e_ident[EI_DATA]) + " is not little-endian (expected " +
           std::to_string(ELFDATA2LSB) + ")";
  if (eh.e_type != ET_DYN)
    return "ELF e_type " + std::to_string(eh.e_type) + " is not a shared object (expected ET_DYN = " +
           std::to_string(ET_DYN) + ")";
  if (kHostMachine != EM_NONE && eh.e_machine != kHostMachine)
    return "ELF e_machine " + std::to_string(eh.e_machine) + " is another CPU than this host's (" +
           std::to_string(kHostMachine) + ")";
  if (eh.e_shentsize != sizeof(Elf64_Shdr))
    return "ELF e_shentsize " + std::to_string(eh.e_shentsize) + ", expected " + std::to_string(sizeof(Elf64_Shdr));
  if (eh.e_shnum == 0) return "ELF file has no section headers (e_shnum = 0), so it lists no plugin entry";
  const uint64_t table_end = eh.e_shoff + uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr);
  if (eh.e_shoff > file_size || table_end > file_size)
    return "ELF section header table (e_shoff " + std::to_string(eh.e_shoff) + ", " + std::to_string(eh.e_shnum) +
           " entries) ends at byte " + std::to_string(table_end) + ", past the end of the " +
           std::to_string(file_size) + "-byte file";
  if (eh.e_shstrndx >= eh.e_shnum)
    return "ELF e_shstrndx " + std::to_string(eh.e_shstrndx) + " is not below e_shnum " + std::to_string(eh.e_shnum);

  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  f.seekg(static_cast<std::streamoff>(eh.e_shoff));
  f.read(reinterpret_cast<char *>(sections.data()), static_cast<std::streamsize>(sections.size() * sizeof(Elf64_Shdr)));
  if (!f) return "reading the ELF section header table failed";
  for (size_t i = 0; i < sections.size(); ++i) {
    const Elf64_Shdr &s = sections[i];
    if (s.sh_type == SHT_NOBITS || s.sh_type == SHT_NULL) continue;
    if (s.sh_offset > file_size || s.sh_size > file_size - s.sh_offset)
      return "ELF section " + std::to_string(i) + " (offset " + std::to_string(s.sh_offset) + ", size " +
             std::to_string(s.sh_size) + ") lies outside the " + std::to_string(file_size) + "-byte file";
  }
  return {};
}

} // namespace wo::plugins
