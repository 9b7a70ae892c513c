#include "backstep/testing/tfile_fixtures.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "backstep/core/arch.h"
#include "backstep/core/register_file.h"
#include "formats/tfile/tfile_writer.h"

namespace backstep::core::testing {

std::string SamplesDir() {
  if (const char* env = std::getenv("BACKSTEP_SAMPLES_DIR"); env && *env) return env;
  // The repository's parent holds shared/. The source directory comes from
  // CMake, not __FILE__, which ccache's base_dir makes relative.
  namespace fs = std::filesystem;
  return (fs::path(BACKSTEP_SOURCE_DIR) / ".." / "shared" / "samples").lexically_normal().string();
}

std::vector<std::uint8_t> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
}

TfileBytes::TfileBytes(std::string_view definitions) {
  constexpr std::string_view kMagic{"\x7fTRACE0\n", 8};
  bytes_.assign(kMagic.begin(), kMagic.end());
  bytes_.insert(bytes_.end(), definitions.begin(), definitions.end());
  bytes_.push_back('\n');
}

TfileBytes& TfileBytes::Le(std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  return *this;
}

TfileBytes& TfileBytes::Frame(int tpnum) {
  frame_at_ = bytes_.size();
  return Le(static_cast<std::uint16_t>(tpnum), 2).Le(0, 4);
}

TfileBytes& TfileBytes::R(std::span<const std::uint8_t> block) {
  bytes_.push_back('R');
  return Raw(block);
}

TfileBytes& TfileBytes::R(std::size_t size, std::uint8_t fill) {
  bytes_.push_back('R');
  bytes_.insert(bytes_.end(), size, fill);
  return *this;
}

TfileBytes& TfileBytes::M(Address address, std::span<const std::uint8_t> bytes) {
  bytes_.push_back('M');
  return Le(address, 8).Le(bytes.size(), 2).Raw(bytes);
}

TfileBytes& TfileBytes::M(Address address, std::string_view text) {
  return M(address, {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
}

TfileBytes& TfileBytes::V(std::int32_t number, std::int64_t value) {
  bytes_.push_back('V');
  return Le(static_cast<std::uint32_t>(number), 4).Le(static_cast<std::uint64_t>(value), 8);
}

TfileBytes& TfileBytes::S(std::string_view bytes) {
  bytes_.push_back('S');
  Le(bytes.size(), 2);
  bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
  return *this;
}

TfileBytes& TfileBytes::End() {
  const std::uint64_t size = bytes_.size() - frame_at_ - 6;
  for (int i = 0; i < 4; ++i)
    bytes_[frame_at_ + 2 + i] = static_cast<std::uint8_t>(size >> (8 * i));
  return *this;
}

TfileBytes& TfileBytes::EndMarker() { return Le(0, 4); }

TfileBytes& TfileBytes::Raw(std::span<const std::uint8_t> bytes) {
  bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
  return *this;
}

std::vector<std::uint8_t> SmallTfile(bool tdesc) {
  const ArchDescription& a = X86_64();
  auto id = [&](std::string_view name) { return *a.Find(name); };
  std::vector<std::uint8_t> out;
  TfileWriterOptions options;
  options.write_tdesc = tdesc;
  options.notes = "small";
  auto w = TfileWriter::CreateInMemory(&out, options);

  std::vector<TfileTsv> tsvs = {{1, 0, true, "trace_timestamp"}, {2, 0, false, "hits"}};
  std::vector<TfileTracepoint> tps(5);
  tps[0].number = 2;
  tps[0].address = 0x401132;
  tps[0].actions = {"R0fffffffffffffffffffffffffffffffffffff", "M-1,404040,8"};
  tps[0].at_string = "work";
  tps[0].cmd_strings = {"collect $regs", "collect counter"};
  tps[0].hits = 3;
  tps[0].traceframe_usage = 0x100;
  tps[1].number = 4;
  tps[1].address = 0x40115f;
  tps[1].cmd_strings = {"teval $hits = $hits + 1", "collect $hits"};
  tps[2].number = 3;
  tps[2].address = 0x4011e8;
  tps[2].step_count = 2;
  tps[2].step_actions = {"R0fffffffffffffffffffffffffffffffffffff"};
  tps[3].number = 5;
  tps[3].address = 0x401200;
  tps[4].number = 5;
  tps[4].address = 0x401300;
  w->WriteDefinitions(tsvs, tps);

  RegisterFile regs(a);
  regs.SetU64(id("rip"), 0x401132);
  regs.SetU64(id("rsp"), 0x7fffffffe570);
  regs.SetU64(id("rbp"), 0x7fffffffe570);
  regs.SetU64(id("rax"), 0x1122334455667788);
  regs.SetU64(id("fstat"), 5u << 11);  // TOP = 5
  regs.SetU64(id("ftag"), 0x3fff);
  for (int i = 0; i < 8; ++i) {
    std::uint8_t value[10] = {
        static_cast<std::uint8_t>(0xf0 + i), 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0x3f};
    regs.Set(id("fpr" + std::to_string(i)), value);
  }
  regs.SetU64(id("fs_base"), 0x7ffff7d8a740);
  std::vector<std::uint8_t> buf(64, 0);
  buf[0] = 'A';
  const std::uint8_t counter[8] = {3, 0, 0, 0, 0, 0, 0, 0};
  w->BeginFrame(2);
  w->AddRegisters(regs);
  w->AddMemory(0x404040, counter);
  w->AddMemory(0x404060, buf);
  w->EndFrame();

  w->BeginFrame(4);
  w->AddTsvValue(2, 1);
  w->EndFrame();

  RegisterFile regs2(a);
  regs2.SetU64(id("rip"), 0x4011e8);
  const std::uint8_t aaaa[4] = {'a', 'a', 'a', 'a'}, bbbb[4] = {'b', 'b', 'b', 'b'};
  w->BeginFrame(3);
  w->AddRegisters(regs2);
  w->AddMemory(0x1000, aaaa);
  w->AddMemory(0x1002, bbbb);
  w->EndFrame();

  w->BeginFrame(3);
  w->EndFrame();

  w->BeginFrame(5);
  w->AddTsvValue(9, -3);
  w->EndFrame();

  const std::uint8_t marker[6] = {'m', 'a', 'r', 'k', 'e', 'r'}, x[1] = {'x'};
  w->BeginFrame(2);
  w->AddStaticData(marker);
  w->AddMemory(0x2000, x);
  w->EndFrame();

  w->BeginFrame(2);
  w->EndFrame();
  (void)w->Finish();
  return out;
}

}  // namespace backstep::core::testing
