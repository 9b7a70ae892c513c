// Shared fixtures of the TraceTarget tests: one generated REVEN trace per
// test binary (physical memory, 4-level paging, planted far_pc and
// once_address; core/testing/include/backstep/testing/reven_generator.h), opened with small
// index blocks so that searches cross keyframes and segments.
//
// Thread-safety: SharedReven() is initialised once (function-local static).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "backstep/core/trace.h"
#include "backstep/testing/reven_generator.h"

namespace backstep::gdbstub::testing {

struct RevenFixture {
  std::string dir;
  core::testing::RevenGenInfo info;
  std::shared_ptr<core::Trace> trace;
};

inline constexpr std::uint64_t kRevenEvents = 20000;

inline const RevenFixture& SharedReven() {
  static RevenFixture* fixture = [] {
    auto* f = new RevenFixture;
    char name[] = "/tmp/backstep-target-XXXXXX";
    f->dir = mkdtemp(name);
    core::testing::RevenGenOptions gen;
    gen.events = kRevenEvents;
    gen.seed = 11;
    auto info = core::testing::GenerateRevenTrace(f->dir + "/trace.bin", gen);
    if (!info.ok()) {
      ADD_FAILURE() << info.status().ToString();
      return f;
    }
    f->info = *info;
    core::OpenOptions options;
    options.keyframe_interval = 300;
    options.index_block_entries = 8;
    options.index_snapshot_blocks = 4;
    auto trace = core::Trace::Open(f->dir + "/trace.bin", options);
    if (!trace.ok()) {
      ADD_FAILURE() << trace.status().ToString();
      return f;
    }
    f->trace = *trace;
    static std::string dir = f->dir;
    std::atexit([] { std::filesystem::remove_all(dir); });
    return f;
  }();
  return *fixture;
}

}  // namespace backstep::gdbstub::testing
