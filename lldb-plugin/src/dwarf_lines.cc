#include "dwarf_lines.h"

#include <cstring>
#include <vector>

namespace backstep::lldb_plugin {
namespace {

// A bounds-checked little-endian reader; any overrun sets `bad`.
struct Reader {
  std::span<const std::uint8_t> bytes;
  std::size_t at = 0;
  bool bad = false;

  std::uint64_t Fixed(std::size_t n) {
    if (n > 8 || at + n > bytes.size()) {
      bad = true;
      at = bytes.size();
      return 0;
    }
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t{bytes[at + i]} << (8 * i);
    at += n;
    return v;
  }
  std::uint64_t Uleb() {
    std::uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      if (at >= bytes.size() || shift > 63) {
        bad = true;
        return v;
      }
      std::uint8_t b = bytes[at++];
      v |= std::uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return v;
    }
  }
  std::int64_t Sleb() {
    std::int64_t v = 0;
    int shift = 0;
    std::uint8_t b = 0;
    do {
      if (at >= bytes.size() || shift > 63) {
        bad = true;
        return v;
      }
      b = bytes[at++];
      v |= std::int64_t{b & 0x7f} << shift;
      shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40)) v |= -(std::int64_t{1} << shift);
    return v;
  }
  void Skip(std::uint64_t n) {
    if (n > bytes.size() - at) {
      bad = true;
      at = bytes.size();
    } else {
      at += n;
    }
  }
};

// gdb's line state machine, as far as recording decisions go.
struct Sequence {
  std::uint64_t address = 0, file = 1;
  std::int64_t line = 1;
  std::uint64_t discriminator = 0;
  bool line_has_discriminator = false;
  std::int64_t last_line = 0;
  std::uint64_t last_file = 0;

  void AdvanceLine(std::int64_t delta) {
    line += delta;
    if (delta != 0) line_has_discriminator = discriminator != 0;
  }
  void Row(std::unordered_set<std::uint64_t>& folded) {
    if (file == last_file && line == last_line && line_has_discriminator) folded.insert(address);
    last_file = file;
    last_line = line;
    discriminator = 0;
  }
};

void DecodeProgram(Reader& r, std::size_t end, int version, std::uint8_t min_length,
                   std::int8_t line_base, std::uint8_t line_range, std::uint8_t opcode_base,
                   const std::vector<std::uint8_t>& lengths,
                   std::unordered_set<std::uint64_t>& folded) {
  (void)version;
  Sequence s;
  while (r.at < end && !r.bad) {
    const std::uint8_t op = static_cast<std::uint8_t>(r.Fixed(1));
    if (op >= opcode_base) {
      const std::uint8_t adjusted = static_cast<std::uint8_t>(op - opcode_base);
      s.address += static_cast<std::uint64_t>(adjusted / line_range) * min_length;
      s.AdvanceLine(line_base + adjusted % line_range);
      s.Row(folded);
      continue;
    }
    switch (op) {
      case 0: {  // extended
        const std::uint64_t length = r.Uleb();
        if (length == 0 || length > end - r.at) return;
        const std::size_t next = r.at + length;
        const std::uint8_t sub = static_cast<std::uint8_t>(r.Fixed(1));
        if (sub == 1) {
          s = Sequence{};  // end_sequence: a fresh state machine
        } else if (sub == 2) {
          s.address = r.Fixed(length - 1);
        } else if (sub == 4) {
          s.discriminator = r.Uleb();
          s.line_has_discriminator |= s.discriminator != 0;
        }
        r.at = next;
        break;
      }
      case 1:  // copy
        s.Row(folded);
        break;
      case 2:
        s.address += r.Uleb() * min_length;
        break;
      case 3:
        s.AdvanceLine(r.Sleb());
        break;
      case 4:
        s.file = r.Uleb();
        break;
      case 8:
        s.address += std::uint64_t{(255u - opcode_base) / line_range} * min_length;
        break;
      case 9:
        s.address += r.Fixed(2);
        break;
      default:  // column, negate_stmt, basic_block, prologue_end, isa, unknown
        for (std::uint8_t i = 0; i < lengths[op - 1]; ++i) r.Uleb();
        break;
    }
  }
}

}  // namespace

std::unordered_set<std::uint64_t> FoldedLineRows(std::span<const std::uint8_t> debug_line) {
  std::unordered_set<std::uint64_t> folded;
  Reader r{debug_line};
  while (r.at < debug_line.size() && !r.bad) {
    std::uint64_t length = r.Fixed(4);
    std::size_t offset_size = 4;
    if (length == 0xffffffffu) {
      length = r.Fixed(8);
      offset_size = 8;
    }
    if (r.bad || length > debug_line.size() - r.at) return folded;
    const std::size_t end = r.at + length;
    const int version = static_cast<int>(r.Fixed(2));
    if (version < 2 || version > 5) {
      r.at = end;
      continue;
    }
    if (version >= 5) r.Skip(2);  // address_size, segment_selector_size
    const std::uint64_t header_length = r.Fixed(offset_size);
    if (r.bad || header_length > end - r.at) return folded;
    const std::size_t program = r.at + header_length;
    const std::uint8_t min_length = static_cast<std::uint8_t>(r.Fixed(1));
    if (version >= 4) r.Skip(1);  // maximum_operations_per_instruction
    r.Skip(1);                    // default_is_stmt
    const std::int8_t line_base = static_cast<std::int8_t>(r.Fixed(1));
    const std::uint8_t line_range = static_cast<std::uint8_t>(r.Fixed(1));
    const std::uint8_t opcode_base = static_cast<std::uint8_t>(r.Fixed(1));
    if (r.bad || line_range == 0 || opcode_base == 0) return folded;
    std::vector<std::uint8_t> lengths(opcode_base - 1);
    for (auto& l : lengths) l = static_cast<std::uint8_t>(r.Fixed(1));
    if (r.bad) return folded;
    r.at = program;
    DecodeProgram(r, end, version, min_length, line_base, line_range, opcode_base, lengths, folded);
    r.bad = false;  // a malformed unit ends itself only
    r.at = end;
  }
  return folded;
}

}  // namespace backstep::lldb_plugin
