// Target descriptions inside a tfile: the XML that gdb saves as `tdesc`
// lines, parsed just far enough to rebuild the R-block layout, and the
// single-document XML backstep writes.
//
// Parsing keeps what gdb's xml-tdesc.c uses for the layout: <architecture>,
// <feature name>, and each <reg>'s name, bitsize and regnum (explicit, or
// one more than the previous register's, starting at 0). Types, flags,
// unions and comments are skipped. `<xi:include href="64bit-*.xml"/>` of
// gdb's amd64 feature files is expanded from X86_64()'s table (gdb itself
// writes fully expanded documents; the include form only appears in
// hand-made files).
//
// Rejected alternative: a general XML parser. The documents are gdb's own,
// machine-written and bounded by the 1000-character line limit; a strict
// scanner that fails on anything unexpected (the reader then ignores the
// tdesc, as gdb does) is smaller and safer to fuzz.
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/arch.h"
#include "backstep/core/expected.h"

namespace backstep::core {

struct TdescRegister {
  std::string name;
  std::uint32_t bitsize = 0;
  int regnum = 0;  // explicit or implicit
  std::string feature;
};

struct Tdesc {
  std::string architecture;  // "" when the document names none
  std::vector<std::string> features;
  std::vector<TdescRegister> registers;  // in document order
};

// Parses a target description. Corruption (a short reason, no file name) for
// malformed markup, a <reg> without name or with a bitsize that is missing,
// not a multiple of 8 or over 8192, a regnum over 65535, a duplicate regnum,
// or an include of an unknown file.
Expected<Tdesc> ParseTdesc(std::string_view xml);

// One document with every feature inline, for `tdesc` lines: the
// TargetXml(features) documents merged (gdb cannot fetch includes from a
// tfile). Every line is far below kTfileMaxLineLength.
std::string InlineTargetXml(const ArchDescription& arch, std::uint32_t features);

}  // namespace backstep::core
