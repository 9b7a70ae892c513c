#include "formats/tfile/tfile_trace_writer.h"

#include <algorithm>
#include <charconv>

#include "formats/initial_image.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

// Whether the R block's st0..st7 (derived: stored as fpr0..7 through
// fstat's TOP, tfile_layout.h) can be written from `regs`: fstat and every
// fpr known. Resolved by name once (ArchDescription::Find).
const std::vector<RegisterId>& X87Storage() {
  static const std::vector<RegisterId> storage = [] {
    std::vector<RegisterId> ids = {*X86_64().Find("fstat")};
    for (int i = 0; i < 8; ++i) ids.push_back(*X86_64().Find("fpr" + std::to_string(i)));
    return ids;
  }();
  return storage;
}

bool X87Known(const RegisterFile& regs) {
  return std::ranges::all_of(X87Storage(), [&](RegisterId id) { return regs.known(id); });
}

}  // namespace

Status TfileTraceWriter::Begin(const TraceHeader& header,
                               const std::vector<std::pair<ThreadId, RegisterFile>>& initial,
                               const InitialMemoryFn& initial_memory) {
  if (header.arch != &X86_64()) {
    return Status::Unsupported(
        path_ + ": tfile conversion supports x86-64 traces only (this one is " +
        std::string(header.arch ? header.arch->name() : "of no architecture") + ")");
  }
  // Position 0 of a tfile is before its first frame: nothing is known there.
  for (const auto& [tid, regs] : initial) {
    for (RegisterId id = 0; id < X86_64().register_count(); ++id) {
      if (!X86_64().info(id).derived && regs.known(id)) {
        return Status::Unsupported(path_ +
                                   ": a tfile holds no state before its first frame, "
                                   "and the source knows registers at position 0");
      }
    }
  }
  if (const auto known = FirstKnownInitialByte(header, initial_memory)) {
    return Status::Unsupported(path_ +
                               ": a tfile holds no state before its first frame, and the "
                               "source knows memory at position 0 (at " +
                               HexU64(*known) + ")");
  }
  notes_ = "converted by backstep from a " + header.format + " trace";
  // A tfile source: its tracepoints and variables, so that each frame keeps
  // its tracepoint (and the pc gdb guesses from it for a frame without an R
  // block) and its variables.
  if (header.tracepoints) {
    std::string warning;
    for (const std::string& line : header.tracepoints->tracepoints) {
      BACKSTEP_RETURN_IF_ERROR(ParseTfileDefinitionLine("tp " + line, &source_, &warning));
    }
    for (const std::string& line : header.tracepoints->variables) {
      BACKSTEP_RETURN_IF_ERROR(ParseTfileDefinitionLine("tsv " + line, &source_, &warning));
    }
  }
  return Status::Ok();
}

std::optional<Address> TfileTraceWriter::GuessedPc(std::uint32_t tpnum) const {
  // gdb's tracefile_fetch_generic_registers (TfileReader does the same).
  const std::vector<std::size_t> locations = source_.FindTracepoints(tpnum);
  if (locations.size() != 1 || source_.tracepoints[locations[0]].step_count != 0) {
    return std::nullopt;
  }
  return source_.tracepoints[locations[0]].address;
}

Status TfileTraceWriter::Open(std::uint32_t features, std::uint64_t block_size) {
  TfileWriterOptions options;
  options.notes = notes_;
  options.features = features;
  options.block_size = block_size;
  BACKSTEP_ASSIGN_OR_RETURN(writer_, TfileWriter::Create(path_, options));
  // Tracepoint 1 at two addresses: with one location, gdb (and TfileReader)
  // would take its address for the pc of a frame without an R block.
  if (!source_.tracepoints.empty()) {
    return writer_->WriteDefinitions(source_.tsvs, source_.tracepoints);
  }
  TfileTracepoint tp;
  tp.number = 1;
  tp.cmd_strings = {"collect $regs"};
  TfileTracepoint second = tp;
  second.address = 1;
  return writer_->WriteDefinitions({}, {tp, second});
}

Status TfileTraceWriter::ChooseLayout(const std::string& where) {
  // gdb makes every register of the R block available and those past the R
  // size unavailable (tracefile-tfile.c, tfile_fetch_registers): the known
  // registers must be the layout's first ones, by offset. The features are
  // those of the known registers; the R size ends after the last of them.
  std::uint32_t features = kFeatureCore;
  for (RegisterId id = 0; id < X86_64().register_count(); ++id) {
    if (X86_64().info(id).derived || !regs_.known(id)) continue;
    if (std::ranges::find(X87Storage(), id) != X87Storage().end()) continue;  // st0..st7: core
    if (X86_64().info(id).feature == 0) {
      return Status::Unsupported(where + ": register " + std::string(X86_64().info(id).name) +
                                 " has no place in a tfile R block");
    }
    features |= X86_64().info(id).feature;
  }
  const TfileRegisterLayout layout = TfileRegisterLayout::ForFeatures(features);
  std::vector<const TfileRegisterSlot*> slots;
  for (const TfileRegisterSlot& slot : layout.slots()) slots.push_back(&slot);
  std::sort(slots.begin(), slots.end(), [](const TfileRegisterSlot* a, const TfileRegisterSlot* b) {
    return a->offset < b->offset;
  });
  std::uint64_t end = 0;
  bool gap = false;
  for (const TfileRegisterSlot* slot : slots) {
    if (slot->reg == kNoRegister) continue;
    const bool derived = X86_64().info(slot->reg).derived;
    if (derived ? !X87Known(regs_) : !regs_.known(slot->reg)) {
      gap = true;
      continue;
    }
    if (gap) {
      return Status::Unsupported(where + ": register " +
                                 std::string(X86_64().info(slot->reg).name) +
                                 " is known but an earlier one of the R block is not; a tfile "
                                 "frame's registers are all of its R block or none");
    }
    end = std::uint64_t{slot->offset} + slot->size;
  }
  for (RegisterId id = 0; id < X86_64().register_count(); ++id) {
    if (!X86_64().info(id).derived && regs_.known(id)) layout_known_.push_back(id);
  }
  return Open(features, end);
}

Status TfileTraceWriter::Append(const Event& event) {
  const std::string where = path_ + ": event " + std::to_string(events_++);
  if (event.thread != ThreadId(1)) {
    return Status::Unsupported(where +
                               ": a tfile frame has no thread (it reads back as thread 1), "
                               "and this event is thread " +
                               std::to_string(event.thread.value) + "'s");
  }
  // Each frame holds what it collected, nothing of the frames before it.
  if (!(event.flags & kEventClearsMemory) && memory_known_) {
    return Status::Unsupported(where +
                               ": it keeps memory of earlier events, and a tfile frame "
                               "holds only what it collected");
  }
  if (event.flags & kEventClearsRegisters) {
    regs_.Clear();
  } else if (std::ranges::any_of(layout_known_, [&](RegisterId id) { return regs_.known(id); })) {
    return Status::Unsupported(where +
                               ": it keeps registers of earlier events, and a tfile "
                               "frame holds only what it collected");
  }
  for (const RegisterWrite& w : event.registers) regs_.Apply(w);
  std::vector<RegisterId> known;
  for (RegisterId id = 0; id < X86_64().register_count(); ++id) {
    if (!X86_64().info(id).derived && regs_.known(id)) known.push_back(id);
  }
  // The frame's tracepoint: the source's (TfileReader describes a frame as
  // "tracepoint N, ..."), else tracepoint 1.
  std::uint32_t tpnum = 1;
  if (!source_.tracepoints.empty()) {
    constexpr std::string_view kPrefix = "tracepoint ";
    const std::string_view d = event.description;
    if (d.starts_with(kPrefix)) {
      std::from_chars(d.data() + kPrefix.size(), d.data() + d.size(), tpnum);
    }
  }
  // Without an R block gdb knows only the pc it guesses from the frame's
  // tracepoint (none for tracepoint 1 here, at two addresses).
  const std::optional<Address> guessed =
      source_.tracepoints.empty() ? std::nullopt : GuessedPc(tpnum);
  const RegisterId pc = X86_64().pc();
  const bool no_block =
      known.empty() ? !guessed
                    : guessed && known.size() == 1 && known[0] == pc && regs_.u64(pc) == *guessed;
  if (!no_block && !writer_) BACKSTEP_RETURN_IF_ERROR(ChooseLayout(where));
  if (!writer_) BACKSTEP_RETURN_IF_ERROR(Open(kDefaultX86_64Features, 0));
  if (!no_block && known != layout_known_) {
    return Status::Unsupported(where +
                               ": its frame knows other registers than the first one's, "
                               "and a tfile has one R block layout");
  }
  writer_->BeginFrame(static_cast<int>(tpnum));
  if (!no_block) writer_->AddRegisters(regs_);
  for (const TraceVariableValue& v : event.variables) writer_->AddTsvValue(v.number, v.value);
  // Last write first: the reader's first block wins where writes overlap.
  for (auto w = event.writes.rbegin(); w != event.writes.rend(); ++w) {
    writer_->AddMemory(w->address, w->data);
  }
  memory_known_ = !event.writes.empty();
  return writer_->EndFrame();
}

Status TfileTraceWriter::Finish() {
  if (!writer_) BACKSTEP_RETURN_IF_ERROR(Open(kDefaultX86_64Features, 0));
  return writer_->Finish();
}

}  // namespace backstep::core
