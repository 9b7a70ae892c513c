// Every instruction of the installed glibc's AVX-512 functions (those whose
// name contains "evex" or "avx512": __memchr_evex, __strlen_evex,
// __memmove_avx512_unaligned_erms, ...) decodes with the recorder's decoder
// (insn_decoder.h: capstone 4, and Zydis for what capstone 4 cannot), and
// each explicit memory operand becomes a recorded read or write of the
// right address, size and direction. Decoding needs no AVX-512 CPU.
//
// What is expected comes from GNU objdump (Intel syntax), a decoder
// independent of the recorder's: its instruction boundaries, its operand
// sizes (BYTE ... ZMMWORD PTR), its addresses ([base+index*scale+disp]
// evaluated with known registers) and its operand order, where the first
// operand is the destination: a memory destination is written (and also read
// by read-modify-write instructions, never read by a store such as vmov*),
// any other memory operand is read and not written. lea, nop and prefetch
// touch no data; instructions without a memory operand (other than the stack
// and string ones, whose accesses are implicit) access none.
//
// The functions come from libc's detached debug symbols (libc6-dbg, which
// scripts/setup installs); without them the test is skipped, loudly.
#include <capstone/capstone.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/user.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/hex.h"
#include "backstep/core/number.h"
#include "recorder/insn_decoder.h"
#include "recorder/libc_symbols_test_util.h"

namespace backstep::record {
namespace {

// The path of the libc this test runs with (the installed one).
std::string LoadedLibc() {
  std::string path;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        const std::string name = info->dlpi_name ? info->dlpi_name : "";
        if (name.find("/libc.so") == std::string::npos) return 0;
        *static_cast<std::string*>(out) = name;
        return 1;
      },
      &path);
  return path;
}

// An ELF file's bytes and its loadable segments: the bytes at a virtual
// address.
struct ElfImage {
  std::vector<std::uint8_t> bytes;
  std::vector<Elf64_Phdr> loads;

  bool Load(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
    if (bytes.size() < sizeof(Elf64_Ehdr)) return false;
    Elf64_Ehdr eh;
    std::copy_n(bytes.data(), sizeof eh, reinterpret_cast<std::uint8_t*>(&eh));
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
      const std::uint64_t at = eh.e_phoff + std::uint64_t{i} * eh.e_phentsize;
      if (at + sizeof(Elf64_Phdr) > bytes.size()) return false;
      Elf64_Phdr ph;
      std::copy_n(bytes.data() + at, sizeof ph, reinterpret_cast<std::uint8_t*>(&ph));
      if (ph.p_type == PT_LOAD) loads.push_back(ph);
    }
    return !loads.empty();
  }
  // Up to 15 bytes at `vaddr` (empty outside the file's loaded bytes).
  std::span<const std::uint8_t> InstructionAt(std::uint64_t vaddr) const {
    for (const Elf64_Phdr& ph : loads) {
      if (vaddr < ph.p_vaddr || vaddr >= ph.p_vaddr + ph.p_filesz) continue;
      const std::uint64_t offset = ph.p_offset + (vaddr - ph.p_vaddr);
      if (offset >= bytes.size()) return {};
      return std::span(bytes).subspan(offset, std::min<std::uint64_t>(15, bytes.size() - offset));
    }
    return {};
  }
};

// objdump's Intel-syntax text of each instruction in [start, end), by address.
std::map<std::uint64_t, std::string> Objdump(const std::string& file, std::uint64_t start,
                                             std::uint64_t end) {
  std::map<std::uint64_t, std::string> out;
  std::istringstream lines(test_util::RunCommand(
      "objdump -d -M intel --no-show-raw-insn --start-address=" + core::HexU64(start) +
      " --stop-address=" + core::HexU64(end) + " " + file));
  for (std::string line; std::getline(lines, line);) {
    // "  163680:\tmov    eax,edi"
    const std::size_t colon = line.find(":\t");
    if (colon == std::string::npos) continue;
    const std::size_t first = line.find_first_not_of(' ');
    const auto address = core::ParseNumber("0x" + line.substr(first, colon - first));
    if (address) out[*address] = line.substr(colon + 2);
  }
  return out;
}

// The general-purpose registers' values the operands are evaluated with:
// distinct, so that a wrong base or index shows in the address.
user_regs_struct TestRegisters() {
  user_regs_struct r{};
  std::uint64_t v = 0x10000;
  for (unsigned long long* reg : {&r.rax, &r.rbx, &r.rcx, &r.rdx, &r.rsi, &r.rdi, &r.rbp, &r.rsp,
                                  &r.r8, &r.r9, &r.r10, &r.r11, &r.r12, &r.r13, &r.r14, &r.r15}) {
    *reg = v;
    v += 0x13000;
  }
  r.fs_base = 0x7f0000000000;
  return r;
}

// A register of objdump's text, by name, in `r` (64- and 32-bit views).
std::optional<std::uint64_t> RegisterValue(const user_regs_struct& r, std::string_view name) {
  static const struct {
    const char *name64, *name32;
    unsigned long long user_regs_struct::*field;
  } kRegs[] = {
      {"rax", "eax", &user_regs_struct::rax},  {"rbx", "ebx", &user_regs_struct::rbx},
      {"rcx", "ecx", &user_regs_struct::rcx},  {"rdx", "edx", &user_regs_struct::rdx},
      {"rsi", "esi", &user_regs_struct::rsi},  {"rdi", "edi", &user_regs_struct::rdi},
      {"rbp", "ebp", &user_regs_struct::rbp},  {"rsp", "esp", &user_regs_struct::rsp},
      {"r8", "r8d", &user_regs_struct::r8},    {"r9", "r9d", &user_regs_struct::r9},
      {"r10", "r10d", &user_regs_struct::r10}, {"r11", "r11d", &user_regs_struct::r11},
      {"r12", "r12d", &user_regs_struct::r12}, {"r13", "r13d", &user_regs_struct::r13},
      {"r14", "r14d", &user_regs_struct::r14}, {"r15", "r15d", &user_regs_struct::r15},
  };
  for (const auto& reg : kRegs) {
    if (name == reg.name64) return r.*reg.field;
    if (name == reg.name32) return r.*reg.field & 0xffffffff;
  }
  return std::nullopt;
}

struct MemOperand {
  std::uint64_t address = 0, size = 0;
  std::size_t position = 0;  // in Intel order: 0 is the destination
};

struct Instruction {
  std::string mnemonic;
  std::vector<MemOperand> memory;
  std::string error;  // an operand this parser does not understand
};

// Parses objdump's "[prefixes] mnemonic op,op,..." at `pc` (`next_pc`:
// after it).
Instruction Parse(std::string text, const user_regs_struct& regs, std::uint64_t next_pc) {
  Instruction insn;
  if (const std::size_t c = text.find('#'); c != std::string::npos) text.resize(c);
  if (const std::size_t c = text.find('<'); c != std::string::npos) text.resize(c);
  std::istringstream words(text);
  static const std::set<std::string> kPrefixes = {"data16", "cs",   "ds",      "es",
                                                  "rep",    "repz", "repe",    "repnz",
                                                  "repne",  "lock", "notrack", "bnd"};
  std::string word;
  while (words >> word && kPrefixes.count(word)) {
  }
  insn.mnemonic = word;
  std::string rest;
  std::getline(words, rest);
  std::istringstream operands(rest);
  std::size_t position = 0;
  for (std::string op; std::getline(operands, op, ','); ++position) {
    const std::size_t open = op.find('['), close = op.find(']');
    if (open == std::string::npos || close == std::string::npos) continue;
    static const std::map<std::string, std::uint64_t> kSizes = {
        {"BYTE", 1},   {"WORD", 2},     {"DWORD", 4},    {"QWORD", 8},
        {"TBYTE", 10}, {"XMMWORD", 16}, {"YMMWORD", 32}, {"ZMMWORD", 64}};
    std::istringstream size_words(op);
    std::string size_word;
    size_words >> size_word;
    MemOperand m;
    m.position = position;
    if (auto it = kSizes.find(size_word); it != kSizes.end()) m.size = it->second;
    if (op.find("fs:[") != std::string::npos) m.address = regs.fs_base;
    // [term(+|-)term...]: a register, register*scale or a number.
    const std::string expr = op.substr(open + 1, close - open - 1);
    std::size_t i = 0;
    int sign = 1;
    while (i < expr.size()) {
      const std::size_t next = expr.find_first_of("+-", i);
      const std::string term = expr.substr(i, next == std::string::npos ? next : next - i);
      const std::size_t star = term.find('*');
      const std::string name = term.substr(0, star);
      std::uint64_t value = 0;
      if (name == "rip") {
        value = next_pc;
      } else if (auto reg = RegisterValue(regs, name)) {
        value = *reg;
      } else if (auto number = core::ParseNumber(name)) {
        value = *number;
      } else {
        insn.error = "unknown term '" + term + "' in " + op;
      }
      if (star != std::string::npos) value *= core::ParseNumber(term.substr(star + 1)).value_or(0);
      m.address += sign > 0 ? value : -value;
      if (next == std::string::npos) break;
      sign = expr[next] == '+' ? 1 : -1;
      i = next + 1;
    }
    insn.memory.push_back(m);
  }
  return insn;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Instruction classes, by objdump's mnemonic.
bool TouchesNoData(const std::string& m) {
  return m == "lea" || StartsWith(m, "nop") || StartsWith(m, "prefetch");
}
bool ReadsItsDestination(const std::string& m) {  // read-modify-write
  static const std::set<std::string> k = {
      "add",  "sub",  "and",     "or",  "xor", "adc", "sbb", "inc", "dec", "neg", "not",
      "xchg", "xadd", "cmpxchg", "shl", "shr", "sar", "rol", "ror", "bts", "btr", "btc"};
  return k.count(m) != 0;
}
bool OnlyReadsFirstOperand(const std::string& m) {
  return m == "cmp" || m == "test" || m == "bt" || m == "cmps" || m == "push";
}
bool PureStore(const std::string& m) {
  return StartsWith(m, "mov") || StartsWith(m, "vmov") || StartsWith(m, "kmov") ||
         StartsWith(m, "set") || m == "stos";
}
bool StringOp(const std::string& m) {
  return m == "movs" || m == "stos" || m == "lods" || m == "scas" || m == "cmps";
}
bool ImplicitMemory(const std::string& m) {  // the stack
  return m == "push" || m == "pop" || m == "call" || m == "ret" || m == "leave" || m == "enter" ||
         StartsWith(m, "pushf") || StartsWith(m, "popf");
}

bool Has(const std::vector<Range>& ranges, std::uint64_t address, std::uint64_t size) {
  return std::any_of(ranges.begin(), ranges.end(),
                     [&](const Range& r) { return r.start == address && r.size == size; });
}
bool Touches(const std::vector<Range>& ranges, std::uint64_t address) {
  return std::any_of(ranges.begin(), ranges.end(),
                     [&](const Range& r) { return r.start == address; });
}

// What is wrong with the recorder's decoding of the instruction at `pc`
// (objdump's `text`, `length` bytes), "" when nothing; counts its memory
// operands into `operands`.
std::string Check(InsnDecoder& decoder, std::uint64_t pc, std::span<const std::uint8_t> bytes,
                  std::uint64_t length, const std::string& text, const user_regs_struct& before,
                  std::uint64_t* operands) {
  const Decoded& d = decoder.Decode(pc, bytes);
  if (d.size != length) {
    return d.size == 0 ? "undecodable" : "decoded as " + std::to_string(d.size) + " bytes";
  }
  if (d.unknown_reads || d.unknown_writes) return "accesses not bounded (unknown reads/writes)";
  const Instruction insn = Parse(text, before, pc + length);
  if (!insn.error.empty()) return insn.error;
  // A string step: one element, forwards.
  user_regs_struct after = before;
  if (StringOp(insn.mnemonic) && !insn.memory.empty()) {
    after.rsi += insn.memory[0].size;
    after.rdi += insn.memory[0].size;
  }
  std::vector<Range> reads, writes;
  InsnDecoder::Reads(d, before, after, &reads);
  // A read under an opmask with every element enabled: the whole operand.
  for (const Decoded::MaskedRead& m : d.masked_reads)
    InsnDecoder::MaskedReads(m, before, ~std::uint64_t{0}, &reads);
  InsnDecoder::Writes(d, before, after, &writes);
  if (TouchesNoData(insn.mnemonic) || (insn.memory.empty() && !ImplicitMemory(insn.mnemonic))) {
    return reads.empty() && writes.empty() ? "" : "an access without a memory operand";
  }
  for (const MemOperand& m : insn.memory) {
    ++*operands;
    if (m.size == 0) return "a memory operand without a size";
    const std::string what = "operand " + std::to_string(m.position) + " (" +
                             core::HexU64(m.address) + ", " + std::to_string(m.size) + " bytes)";
    const bool destination = m.position == 0 && !OnlyReadsFirstOperand(insn.mnemonic);
    const bool rmw = ReadsItsDestination(insn.mnemonic);
    if ((destination || rmw) && !Has(writes, m.address, m.size))
      return what + ": write not recorded";
    if (!destination && !rmw && Touches(writes, m.address))
      return what + ": a source recorded as written";
    if ((!destination || rmw) && !Has(reads, m.address, m.size))
      return what + ": read not recorded";
    if (destination && PureStore(insn.mnemonic) && Touches(reads, m.address))
      return what + ": a store's destination recorded as read";
  }
  return "";
}

TEST(LibcEvexDecode, EveryInstructionAndMemoryOperand) {
  const std::string libc = LoadedLibc();
  ASSERT_FALSE(libc.empty()) << "this test does not run with a libc.so";
  const std::string debug = test_util::DebugFileOf(libc);
  if (debug.empty()) {
    std::fprintf(stderr,
                 "\n*** SKIPPED: %s has no detached debug symbols (install libc6-dbg, as "
                 "scripts/setup does): its AVX-512 functions cannot be found ***\n\n",
                 libc.c_str());
    GTEST_SKIP() << "libc6-dbg is not installed: no symbols to find " << libc
                 << "'s AVX-512 functions";
  }
  // Each function once (memcpy and memmove share their code).
  std::map<std::uint64_t, test_util::FunctionSymbol> functions;
  for (const test_util::FunctionSymbol& f : test_util::FunctionSymbols(debug)) {
    if (f.name.find("evex") != std::string::npos || f.name.find("avx512") != std::string::npos)
      functions.emplace(f.address, f);
  }
  ASSERT_GT(functions.size(), 10u) << "glibc has AVX-512 string functions since 2.26";
  ElfImage image;
  ASSERT_TRUE(image.Load(libc)) << libc;
  // objdump's text of runs of adjacent functions (one objdump per run).
  std::map<std::uint64_t, std::string> text;
  for (auto it = functions.begin(); it != functions.end();) {
    const std::uint64_t start = it->first;
    std::uint64_t end = it->first + it->second.size;
    for (++it; it != functions.end() && it->first < end + 256; ++it)
      end = std::max(end, it->first + it->second.size);
    text.merge(Objdump(libc, start, end));
  }

  csh capstone = 0;
  ASSERT_EQ(cs_open(CS_ARCH_X86, CS_MODE_64, &capstone), CS_ERR_OK);
  InsnDecoder decoder;
  const user_regs_struct before = TestRegisters();
  std::uint64_t instructions = 0, operands = 0, capstone_undecodable = 0, undecodable = 0;
  std::uint64_t wrong = 0;  // instructions failing a check (the first 20 are reported)
  for (const auto& [start, function] : functions) {
    const std::uint64_t end = start + function.size;
    for (std::uint64_t pc = start; pc < end;) {
      auto line = text.find(pc);
      ASSERT_NE(line, text.end()) << function.name << ": objdump has no instruction at "
                                  << core::HexU64(pc);
      const auto next = std::next(line);
      // The last instruction of a run of functions: objdump's next one is in
      // another run.
      const std::uint64_t length =
          next == text.end() || next->first > end ? end - pc : next->first - pc;
      const std::span<const std::uint8_t> bytes = image.InstructionAt(pc);
      ASSERT_GE(bytes.size(), std::min<std::uint64_t>(length, 15)) << core::HexU64(pc);
      ++instructions;
      cs_insn* alone = nullptr;
      const std::size_t n = cs_disasm(capstone, bytes.data(), bytes.size(), pc, 1, &alone);
      if (n == 0) ++capstone_undecodable;
      cs_free(alone, n);
      const std::string problem =
          Check(decoder, pc, bytes, length, line->second, before, &operands);
      if (decoder.Find(pc)->size == 0) ++undecodable;
      if (!problem.empty() && ++wrong <= 20) {
        ADD_FAILURE() << function.name << " " << core::HexU64(pc) << ": " << line->second << " ("
                      << core::HexBytes(bytes.first(std::min<std::size_t>(length, bytes.size())),
                                        ' ')
                      << "): " << problem;
      }
      pc += length;
    }
  }
  cs_close(&capstone);
  std::printf(
      "[ DECODED  ] %zu AVX-512 functions of %s, %llu instructions, %llu memory operands; "
      "capstone 4 alone cannot decode %llu of them, the recorder's decoder %llu\n",
      functions.size(), libc.c_str(), static_cast<unsigned long long>(instructions),
      static_cast<unsigned long long>(operands),
      static_cast<unsigned long long>(capstone_undecodable),
      static_cast<unsigned long long>(undecodable));
  EXPECT_EQ(undecodable, 0u);
  EXPECT_EQ(wrong, 0u) << "instructions whose decoding is wrong (the first 20 are listed above)";
}

}  // namespace
}  // namespace backstep::record
