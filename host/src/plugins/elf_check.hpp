// A bounds check of an ELF file's headers before Boost.DLL's library_info reads it.
//
// Why: library_info trusts the section headers. A truncated or hostile `.so` with a section size
// of many GiB makes it allocate that much (or read past the file), and a non-ELF file makes it
// throw a bare iostream error. This check reads only the headers, verifies that every section the
// symbol listing touches lies inside the file, and says in words what is wrong.
#pragma once

#include <string>

namespace wo::plugins {

// Empty when `path` is a 64-bit little-endian ELF shared object for this machine whose section
// table and sections lie inside the file; otherwise the problem, naming the field and values.
std::string elf_problem(const std::string &path);

} // namespace wo::plugins
