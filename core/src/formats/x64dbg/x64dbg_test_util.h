// Helpers shared by the x64dbg tests: reading a whole trace and comparing
// event streams by their effect (registers of the event's thread after it,
// exact reads and writes), since the reader emits a register for every
// register of a stored slot while a source may list only changed ones.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "backstep/testing/fake_trace.h"
#include "formats/x64dbg/x64dbg_reader.h"

namespace backstep::core::testing {

inline std::string DescribeAccesses(const std::vector<FakeAccess>& list) {
  std::string out;
  for (const FakeAccess& a : list) {
    out += std::to_string(a.address) + ":";
    for (std::uint8_t b : a.data) out += std::to_string(b) + ",";
    out += " ";
  }
  return out;
}

// Expects `got` to mean the same as `want`, event by event.
inline void ExpectSameTrace(const FakeTrace& want, const FakeTrace& got) {
  ASSERT_EQ(got.events.size(), want.events.size());
  std::map<std::uint64_t, RegisterFile> a, b;
  for (const auto& [tid, regs] : want.initial_registers) a.emplace(tid.value, regs);
  for (const auto& [tid, regs] : got.initial_registers) b.emplace(tid.value, regs);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [tid, regs] : a) {
    ASSERT_TRUE(b.count(tid)) << "thread " << tid;
    EXPECT_TRUE(b.at(tid) == regs) << "initial registers of thread " << tid;
  }
  for (std::size_t i = 0; i < want.events.size(); ++i) {
    const FakeEvent& w = want.events[i];
    const FakeEvent& g = got.events[i];
    SCOPED_TRACE("event " + std::to_string(i));
    ASSERT_EQ(g.thread, w.thread);
    ASSERT_EQ(g.kind, w.kind);
    ASSERT_EQ(g.flags, w.flags);
    ASSERT_EQ(g.description, w.description);
    ASSERT_EQ(DescribeAccesses(g.reads), DescribeAccesses(w.reads));
    ASSERT_EQ(DescribeAccesses(g.writes), DescribeAccesses(w.writes));
    const ArchDescription& arch = want.initial_registers.at(0).second.arch();
    for (auto* m : {&a, &b}) m->try_emplace(w.thread.value, RegisterFile(arch));
    RegisterFile& ra = a.at(w.thread.value);
    RegisterFile& rb = b.at(w.thread.value);
    if (w.flags & kEventClearsRegisters) ra.Clear(), rb.Clear();
    for (const RegisterWrite& r : w.registers) ra.Apply(r);
    for (const RegisterWrite& r : g.registers) rb.Apply(r);
    ASSERT_TRUE(ra == rb) << "registers of thread " << w.thread.value << " after the event";
  }
}

}  // namespace backstep::core::testing
