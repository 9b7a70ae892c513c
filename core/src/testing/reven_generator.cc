#include "backstep/testing/reven_generator.h"

#include <algorithm>
#include <numeric>

#include "testing/page_table_builder.h"
#include "testing/reven_gen_cpu.h"

namespace backstep::core::testing {

std::optional<Address> RevenGenInfo::Translate(Address va) const {
  auto it = std::upper_bound(pages.begin(), pages.end(), va, [](Address a, const RevenGenPage& p) {
    return a < p.virtual_address;
  });
  if (it == pages.begin()) return std::nullopt;
  --it;
  if (va - it->virtual_address >= kGenPage) return std::nullopt;
  return it->physical_address + (va - it->virtual_address);
}

void RevenGenRun::Layout() {
  for (const RevenRegion& r : kGenRegions) {
    info_.regions.push_back({r.start, r.size, "", "", 0});
    image_.emplace_back(r.size, 0);
  }
  dirty_.assign(kGenRegions[2].start / kGenPage + kGenRegions[2].size / kGenPage, 0);
  const bool paging = o_.with_paging;
  const Address code = paging ? kGenCodeVirt : kGenCodePhys;
  const Address stack = paging ? kGenStackVirt : kGenStackPhys;
  const Address heap = kHeapStart();
  info_.ranges = {{"code", code, kGenCodePages * kGenPage},
                  {"stack", stack, kGenStackPages * kGenPage},
                  {"heap", heap, kGenHeapPages * kGenPage}};
  std::vector<std::uint64_t> slots(kGenHeapSlots);
  std::iota(slots.begin(), slots.end(), 0);
  for (std::uint64_t i = 0; i < kGenHeapPages && paging; ++i) {
    std::swap(slots[i], slots[i + rng_.Below(kGenHeapSlots - i)]);
  }
  for (std::uint64_t i = 0; i < kGenCodePages; ++i) {
    info_.pages.push_back({code + i * kGenPage, kGenCodePhys + i * kGenPage});
  }
  for (std::uint64_t i = 0; i < kGenStackPages; ++i) {
    info_.pages.push_back({stack + i * kGenPage, kGenStackPhys + i * kGenPage});
  }
  for (std::uint64_t i = 0; i < kGenHeapPages; ++i) {
    info_.pages.push_back({heap + i * kGenPage, kGenHeapPhys + slots[i] * kGenPage});
  }
  std::sort(info_.pages.begin(), info_.pages.end(),
            [](auto& a, auto& b) { return a.virtual_address < b.virtual_address; });
  if (paging) {
    PageTableBuilder tables(kGenTables);
    for (const RevenGenPage& p : info_.pages) tables.Map4K(p.virtual_address, p.physical_address);
    tables.WriteTo(image_[0], 0);
    info_.cr3 = tables.cr3();
  }
  program_ = BuildGenProgram(code, rng_);
  for (const GenInsn& i : program_.insns) info_.code_addresses.push_back(i.pc);
  std::sort(info_.code_addresses.begin(), info_.code_addresses.end());
  info_.far_pc = code + kGenFarPcOffset;
  info_.outside_address = kGenApicEoi;
  info_.once_size = 8;
  info_.once_address = heap + kGenOncePage * kGenPage + 0x120;
  info_.once_physical = *info_.Translate(info_.once_address);
}

void RevenGenRun::WriteInitialState() {
  // Code bytes, a heap pattern; the stack and tables as they are.
  for (const RevenGenPage& p : info_.pages) {
    std::uint8_t* page = PhysPointer(p.physical_address);
    for (std::uint64_t i = 0; i < kGenPage; ++i) {
      page[i] = static_cast<std::uint8_t>((p.virtual_address + i) * 0x9d >> 3);
    }
  }
  for (std::size_t i = 0; i < std::size(kGenRegions); ++i) w_->WriteInitialMemory(image_[i]);
  const bool paging = o_.with_paging;
  for (std::uint16_t id = 0; id < 16; ++id) SetValue(id, rng_.Next());
  rip_ = program_.insns[program_.main_entry].pc;
  rsp_ = info_.ranges[1].start + kGenStackPages * kGenPage - 0x100;
  SetValue(panda::kCr0, paging ? 0x80050033 : 0x11);
  SetValue(panda::kCr3, info_.cr3);
  SetValue(panda::kCr4, paging ? 0x6a0 : 0);
  SetValue(panda::kMsrEfer, paging ? 0xd01 : 0);
  SetValue(panda::kCs, 0x33);
  SetValue(panda::kCs + 1, 0x2b);  // ds
  SetValue(panda::kCs + 3, 0x2b);  // ss
  SetValue(panda::kCsShadow, paging ? 0x00affb000000ffffull : 0x00cffb000000ffffull);
  SetValue(panda::kCsShadow + 1, 0x00cff3000000ffffull);
  SetValue(panda::kCsShadow + 3, 0x00cff3000000ffffull);
  SetValue(panda::kMsrFsBase, 0x7ffff7fd0000);
  SetValue(panda::kX87Control, 0x37f);
  SetValue(138, 0x1f80);  // mxcsr
  SyncScalars();
  for (const RevenRegisterDecl& r : machine_.registers) {
    w_->WriteInitialRegister(r.id, std::span<const std::uint8_t>(&values_[offset_[r.id]], r.size));
  }
  frames_.push_back({0});
  at_ = program_.main_entry;
}

void RevenGenRun::CachePoint(std::uint64_t context) {
  RevenCachePointData p;
  p.context_id = context;
  p.trace_events_offset = w_->events_offset();
  SyncScalars();
  for (const RevenRegisterDecl& r : machine_.registers) {
    const std::uint8_t* v = &values_[offset_[r.id]];
    p.registers.emplace_back(r.id, std::vector<std::uint8_t>(v, v + r.size));
  }
  for (std::size_t page = 0; page < dirty_.size(); ++page) {
    if (!dirty_[page]) continue;
    dirty_[page] = 0;
    const std::uint8_t* bytes = PhysPointer(page * kGenPage);
    if (bytes == nullptr) continue;
    p.pages.emplace_back(page * kGenPage, std::vector<std::uint8_t>(bytes, bytes + kGenPage));
  }
  cache_.push_back(std::move(p));
  info_.cache_points.push_back(context);
}

void RevenGenRun::Run() {
  const std::uint64_t n = o_.events;
  if (n >= 20) {
    info_.once_event = n * 8 / 10;
    info_.far_pc_event = n * 9 / 10;
  }
  static constexpr std::string_view kOthers[] = {"hw interrupt 32", "page fault", "interrupt 128",
                                                 "hw interrupt 236"};
  std::uint64_t others = 0;
  for (std::uint64_t e = 0; e < n; ++e) {
    if (o_.cache_every != 0 && e != 0 && e % o_.cache_every == 0) CachePoint(e);
    if (info_.far_pc_event != 0 && e + 1 == info_.far_pc_event) {
      // The interrupt that enters the handler whose only instruction (an
      // iret at far_pc) runs once, at event far_pc_event.
      resume_ = rip_;
      Other(e, "hw interrupt 33", info_.far_pc);
    } else if (info_.far_pc_event != 0 && e == info_.far_pc_event) {
      w_->BeginInstruction();
      rip_ = resume_;
      Reg64(panda::kRip, rip_);
      w_->EndEvent();
    } else if (o_.other_event_every != 0 && e % o_.other_event_every == o_.other_event_every - 1) {
      Other(e, kOthers[others++ % std::size(kOthers)], rip_);
    } else {
      w_->BeginInstruction();
      Instruction(e);
      w_->EndEvent();
    }
  }
  info_.events = n;
}

namespace {

Status Generate(RevenWriter* writer, RevenGenRun* g) {
  g->Layout();
  g->WriteInitialState();
  g->Run();
  return writer->Finish();
}

RevenWriterOptions WriterOptions(const RevenGenOptions& opts) {
  RevenWriterOptions w;
  w.metadata.tool_name = "panda";
  w.metadata.tool_version = "1.0.0";
  w.metadata.generation_date = 1700000000;  // fixed: generated files are reproducible
  w.metadata.tool_info = "backstep synthetic generator, seed " + std::to_string(opts.seed) +
                         " - using rvnbintrace 1.0.1";
  w.patch_event_count = opts.patch_event_count;
  return w;
}

}  // namespace

Expected<RevenGenInfo> GenerateRevenTrace(const std::string& path, const RevenGenOptions& opts) {
  if (opts.phy_size < 4 || opts.phy_size > 8) {
    return Status::InvalidArgument("GenerateRevenTrace: phy_size must be 4..8");
  }
  RevenGenRun g(opts, nullptr);
  BACKSTEP_ASSIGN_OR_RETURN(auto writer,
                            RevenWriter::CreateFile(path, g.machine(), WriterOptions(opts)));
  g.set_writer(writer.get());
  BACKSTEP_RETURN_IF_ERROR(Generate(writer.get(), &g));
  if (opts.cache_every != 0) {
    RevenMetadata md = WriterOptions(opts).metadata;
    BACKSTEP_RETURN_IF_ERROR(WriteRevenCacheFile(path + ".cache", md, 4096, g.cache()));
  }
  return std::move(g.info());
}

Expected<RevenGenInfo> GenerateRevenTraceBytes(const RevenGenOptions& opts,
                                               std::vector<std::uint8_t>* out) {
  if (opts.phy_size < 4 || opts.phy_size > 8) {
    return Status::InvalidArgument("GenerateRevenTraceBytes: phy_size must be 4..8");
  }
  RevenGenOptions o = opts;
  o.cache_every = 0;
  RevenGenRun g(o, nullptr);
  auto writer = RevenWriter::CreateMemory(g.machine(), WriterOptions(o));
  g.set_writer(writer.get());
  BACKSTEP_RETURN_IF_ERROR(Generate(writer.get(), &g));
  *out = writer->TakeBytes();
  return std::move(g.info());
}

}  // namespace backstep::core::testing
