// CompareTraces: two UCIR recordings of the same run replayed side by side
// (ReplayedState) for the recorder's engine cross-checks
// (emu/emu_crosscheck_test.cc, native/native_recorder_test.cc): at every
// position the same event kind, the same registers written, every GPR, rip,
// eflags, the selectors and fs/gs base equal, and the bytes each event wrote
// (in either trace) equal in both; x87 control/status/tag, mxcsr and
// xmm0-15 every 16 positions and at every system call; all memory either
// trace knows every 50000 positions and at the end; the same length.
// Failures are gtest assertions naming the position.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backstep/core/byte_source.h"
#include "backstep/core/format_registry.h"
#include "recorder/replayed_state_test_util.h"

namespace backstep::record::test_util {

using Replay = ReplayedState;

inline const char* const kGprs[] = {
    "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp",    "rsp", "r8", "r9",      "r10",
    "r11", "r12", "r13", "r14", "r15", "rip", "eflags", "cs",  "ss", "fs_base", "gs_base"};

inline void CompareRegisters(const Replay& p, const Replay& e, std::uint64_t k, bool fp,
                             const char* a_name, const char* b_name) {
  const core::ArchDescription& arch = core::X86_64();
  auto compare = [&](const std::string& name) {
    const core::RegisterId id = *arch.Find(name);
    ASSERT_EQ(p.regs.known(id), e.regs.known(id)) << name << " known at position " << k;
    if (!p.regs.known(id)) return;
    const auto a = p.regs.bytes(id), b = e.regs.bytes(id);
    ASSERT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end()))
        << name << " at position " << k << ": " << a_name << " 0x" << std::hex << p.regs.u64(id)
        << ", " << b_name << " 0x" << e.regs.u64(id) << " (rip 0x" << p.regs.u64(*arch.Find("rip"))
        << ")";
  };
  for (const char* name : kGprs) compare(name);
  if (!fp) return;
  for (const char* name : {"fctrl", "fstat", "ftag", "mxcsr"}) compare(name);
  for (int i = 0; i < 8; ++i) compare("fpr" + std::to_string(i));
  for (int i = 0; i < 16; ++i) compare("xmm" + std::to_string(i));
}

inline void CompareBytes(const Replay& p, const Replay& e, core::Address a, std::size_t n,
                         std::uint64_t k) {
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(p.ByteOrZero(a + i), e.ByteOrZero(a + i))
        << "memory at 0x" << std::hex << a + i << std::dec << " at position " << k;
  }
}

inline void CompareAllMemory(const Replay& p, const Replay& e, std::uint64_t k) {
  for (const Replay* r : {&p, &e}) {
    for (const auto& [page, contents] : r->pages) {
      CompareBytes(p, e, page * Replay::kPageSize, Replay::kPageSize, k);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// `a_skip`: a's events before b's position 0 (b is a's tail).
inline void CompareTraces(const std::string& a_path, const std::string& b_path, const char* a_name,
                          const char* b_name, std::uint64_t a_skip = 0) {
  auto psrc = core::MapFile(a_path);
  auto esrc = core::MapFile(b_path);
  ASSERT_TRUE(psrc.ok() && esrc.ok());
  auto preader = core::OpenTraceSource(*psrc);
  auto ereader = core::OpenTraceSource(*esrc);
  ASSERT_TRUE(preader.ok()) << preader.status().message();
  ASSERT_TRUE(ereader.ok()) << ereader.status().message();
  Replay p(**preader), e(**ereader);
  core::Event pe, ee;
  for (std::uint64_t i = 0; i < a_skip; ++i) {
    core::Expected<bool> more = (*preader)->Next(&pe);
    ASSERT_TRUE(more.ok() && *more) << a_name << " ends before position " << a_skip;
    p.Apply(pe);
  }
  CompareRegisters(p, e, 0, true, a_name, b_name);
  if (::testing::Test::HasFatalFailure()) return;
  CompareAllMemory(p, e, 0);
  if (::testing::Test::HasFatalFailure()) return;

  std::uint64_t k = 0;
  while (true) {
    core::Expected<bool> pm = (*preader)->Next(&pe);
    core::Expected<bool> em = (*ereader)->Next(&ee);
    ASSERT_TRUE(pm.ok() && em.ok());
    ASSERT_EQ(*pm, *em) << "one trace ends at position " << k;
    if (!*pm) break;
    ASSERT_EQ(static_cast<int>(pe.kind), static_cast<int>(ee.kind)) << "event kind at " << k;
    // The same registers written by each event (both engines record the
    // registers an instruction changed, nothing else).
    std::vector<core::RegisterId> pregs, eregs;
    for (const core::RegisterWrite& w : pe.registers) pregs.push_back(w.reg);
    for (const core::RegisterWrite& w : ee.registers) eregs.push_back(w.reg);
    std::sort(pregs.begin(), pregs.end());
    std::sort(eregs.begin(), eregs.end());
    ASSERT_EQ(pregs, eregs) << "registers written by the event at position " << k;
    p.Apply(pe);
    e.Apply(ee);
    ++k;
    const bool syscall = pe.kind == core::EventKind::kSyscall;
    CompareRegisters(p, e, k, syscall || k % 16 == 0, a_name, b_name);
    if (::testing::Test::HasFatalFailure()) return;
    for (const core::Event* ev : {&pe, &ee}) {
      for (const core::MemoryAccess& w : ev->writes)
        CompareBytes(p, e, w.address, w.data.size(), k);
      if (::testing::Test::HasFatalFailure()) return;
    }
    if (k % 50000 == 0) CompareAllMemory(p, e, k);
    if (::testing::Test::HasFatalFailure()) return;
  }
  CompareAllMemory(p, e, k);
}

}  // namespace backstep::record::test_util
