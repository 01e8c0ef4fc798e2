// GPT-2's reversible byte <-> unicode mapping used by byte-level BPE vocabularies: every byte is
// shown as one printable code point (printable Latin-1 bytes as themselves, the others as
// U+0100 + k), so that token texts are valid UTF-8 strings.
#pragma once

#include <string>
#include <string_view>

namespace wo::tok {

// The UTF-8 text of the code point standing for byte b.
const std::string &byte_to_unicode(unsigned char b);

// Map a byte-level token text back to bytes. False when `text` holds a code point outside the
// mapping (then `out` is unspecified).
bool unicode_to_bytes(std::string_view text, std::string &out);

// The byte-level form of raw bytes.
std::string bytes_to_unicode(std::string_view bytes);

} // namespace wo::tok
