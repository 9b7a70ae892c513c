// Origin: the provenance chain of a value (see provenance.h for the rules).
//
// Why capstone here: the index knows *that* event w wrote bytes, not where
// the value came from; only the instruction's operands say that, so each
// step decodes the writer at its pc in the state before it and evaluates the
// source operand with the registers of that state.
#include "backstep/core/provenance.h"

#include <capstone/capstone.h>

#include <algorithm>
#include <cstdint>

#include "backstep/core/cursor.h"
#include "backstep/core/hex.h"
#include "backstep/core/mappings.h"
#include "backstep/core/register_queries.h"
#include "backstep/core/search.h"
#include "backstep/core/trace.h"
#include "backstep/core/trace_query.h"
#include "queries/register_writer.h"
#include "queries/x86_dataflow.h"

namespace backstep::core {
namespace {

// Whether every byte of [address, address + length) lies, at `at`, in a
// mapping whose zero fill the trace leaves out (backstep/core/mappings.h):
// with no write before, its value is that fill, not the initial image's.
// Only traces that describe mappings pay for the timeline's pass.
bool InUnfilledMapping(const Trace& trace, Address address, std::uint64_t length, Position at) {
  if (!trace.header().describes_mappings) return false;
  Expected<std::vector<Mapping>> maps = trace.mappings().At(at);
  if (!maps.ok()) return false;
  std::vector<std::uint8_t> values(length), known(length, 0);
  FillUnfilledMappings(*maps, address, values, known);
  return std::find(known.begin(), known.end(), 0) == known.end();
}

// What the mappings at `at` say of [address, address + length) before its
// last write is followed: "unmapped" when a byte of it is unmapped there, the
// zero fill when a mapping made at or after `last_write` (an event number;
// none: UINT64_MAX) without its fill in the trace covers it all (the reads
// show zeros there, not the older bytes), else "". Only traces that describe
// mappings pay for the timeline's lookup.
std::string MappingEnd(const Trace& trace, Address address, std::uint64_t length, Position at,
                       std::uint64_t last_write, std::uint64_t* map_event) {
  if (!trace.header().describes_mappings) return "";
  Expected<std::shared_ptr<const MappingState>> state = trace.mappings().StateAt(at);
  if (!state.ok()) return "";
  const Address end = address + length;
  for (const Mapping& gone : (*state)->unmapped) {
    if (gone.start < end && address < gone.end()) return "unmapped";
  }
  for (const MappingState::Refill& refill : (*state)->refilled) {
    if (refill.start <= address && end <= refill.start + refill.size &&
        (last_write == UINT64_MAX || last_write < refill.map_event)) {
      *map_event = refill.map_event;
      return "zero fill of a mapping made during the run";
    }
  }
  return "";
}

// Whether the recorded reads cover [address, address + length).
bool ReadsCover(const std::vector<MemoryAccess>& reads, Address address, std::uint64_t length) {
  Address at = address;
  bool progress = true;
  while (at < address + length && progress) {
    progress = false;
    for (const MemoryAccess& r : reads) {
      if (r.address <= at && at < r.address + r.data.size()) {
        at = r.address + r.data.size();
        progress = true;
      }
    }
  }
  return at >= address + length;
}

}  // namespace

std::string OriginLocation::ToString() const {
  if (is_register) return reg;
  return "mem " + HexU64(address) + "+" + std::to_string(length);
}

Expected<std::vector<OriginStep>> Origin(const Trace& trace, Address address, std::uint64_t length,
                                         Position at, unsigned depth,
                                         const std::atomic<bool>* interrupt) {
  if (at.value > trace.event_count()) {
    return Status::OutOfRange("position " + std::to_string(at.value) + " past the end (" +
                              std::to_string(trace.event_count()) + ")");
  }
  if (length == 0 || length > 4096) {
    return Status::InvalidArgument("origin: length must be 1..4096 bytes");
  }
  if (trace.arch().name() != "i386:x86-64") {
    return Status::Unsupported("origin: only x86-64 instructions are decoded");
  }
  BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<Cursor> cursor, trace.AcquireCursor());
  struct Release {
    const Trace& trace;
    std::unique_ptr<Cursor>& cursor;
    ~Release() { trace.ReleaseCursor(std::move(cursor)); }
  } release{trace, cursor};
  x86::Decoder decoder;
  const bool records_reads = IndexRecordsReads(trace);

  std::vector<OriginStep> steps;
  x86::Followed current;
  current.location.address = address;
  current.location.length = length;
  ThreadId reg_thread;  // whose register a register location is
  Position before = at;

  auto read_location = [&](const x86::Followed& src, ThreadId thread, OriginStep& step) -> Status {
    if (src.location.is_register) {
      BACKSTEP_ASSIGN_OR_RETURN(const RegisterFile* regs, cursor->Registers(thread));
      x86::Read(*regs, src.reg, step.value, step.known);
      return Status();
    }
    step.value.assign(src.location.length, 0);
    step.known.assign(src.location.length, 0);
    return cursor->ReadMemory(src.location.address, step.value, step.known);
  };

  for (unsigned d = 0; d < depth; ++d) {
    if (interrupt && interrupt->load(std::memory_order_relaxed)) {
      return Status::Interrupted("origin interrupted");
    }
    OriginStep step;
    step.location = current.location;
    std::uint64_t w = 0;
    Address write_start = 0;
    if (!current.location.is_register) {
      BACKSTEP_ASSIGN_OR_RETURN(
          std::optional<Access> access,
          LastWrite(trace, current.location.address, current.location.length, before));
      std::uint64_t map_event = 0;
      const std::string mapping_end =
          MappingEnd(trace, current.location.address, current.location.length, before,
                     access ? access->event : UINT64_MAX, &map_event);
      if (!mapping_end.empty()) {
        // The bytes were unmapped or mapped again since their last write:
        // that write no longer gave them their value.
        BACKSTEP_RETURN_IF_ERROR(cursor->Seek(before));
        step.thread = cursor->current_thread();
        BACKSTEP_RETURN_IF_ERROR(read_location(current, step.thread, step));
        if (mapping_end != "unmapped") step.position = Position(map_event);
        step.end = mapping_end;
        steps.push_back(std::move(step));
        break;
      }
      if (!access) {
        BACKSTEP_RETURN_IF_ERROR(cursor->Seek(before));
        step.thread = cursor->current_thread();
        BACKSTEP_RETURN_IF_ERROR(read_location(current, step.thread, step));
        step.end =
            InUnfilledMapping(trace, current.location.address, current.location.length, before)
                ? "zero fill of a mapping made during the run"
                : "initial image";
        steps.push_back(std::move(step));
        break;
      }
      w = access->event;
      const Address lo = std::max(current.location.address, access->address);
      const Address hi = std::min(current.location.address + current.location.length,
                                  access->address + access->data.size());
      current.location.address = lo;
      current.location.length = hi > lo ? hi - lo : 1;
      step.location = current.location;
      write_start = access->address;
    } else {
      BACKSTEP_ASSIGN_OR_RETURN(
          x86::RegisterWriter found,
          x86::LastRegisterWriter(trace, *cursor, decoder, reg_thread, current.reg, before,
                                  kDefaultRegisterScanEvents, interrupt));
      if (found.result == RegisterWriteSearch::Result::kNone ||
          found.result == RegisterWriteSearch::Result::kBeyondBound) {
        BACKSTEP_RETURN_IF_ERROR(cursor->Seek(before));
        step.thread = reg_thread;
        BACKSTEP_RETURN_IF_ERROR(read_location(current, reg_thread, step));
        step.end =
            found.result == RegisterWriteSearch::Result::kNone
                ? "initial registers"
                : "not found within " + std::to_string(kDefaultRegisterScanEvents) + " events";
        steps.push_back(std::move(step));
        break;
      }
      w = found.event;
      if (found.result == RegisterWriteSearch::Result::kCleared) {
        step.position = Position(w);
        step.thread = reg_thread;
        step.end = "registers cleared";
        steps.push_back(std::move(step));
        break;
      }
    }

    // The writer, in the state before it.
    step.position = Position(w);
    BACKSTEP_RETURN_IF_ERROR(cursor->Seek(Position(w)));
    const ThreadId thread = cursor->current_thread();
    step.thread = thread;
    step.pc = cursor->Pc(thread);
    BACKSTEP_ASSIGN_OR_RETURN(const Event* event, cursor->CurrentEvent());
    const EventKind kind = event->kind;
    BACKSTEP_ASSIGN_OR_RETURN(const RegisterFile* regs_now, cursor->Registers(thread));
    const RegisterFile before_regs = *regs_now;
    x86::SourceOfWrite next;
    if (kind != EventKind::kInstruction) {
      next.end = "written by " + std::string(EventKindName(kind));
    } else if (!step.pc) {
      next.end = "pc unknown";
    } else {
      std::uint8_t bytes[15], known[15];
      BACKSTEP_RETURN_IF_ERROR(cursor->ReadMemory(*step.pc, bytes, known));
      std::size_t n = 0;
      while (n < sizeof bytes && known[n]) ++n;
      // ReadMemory may have moved the event's views: take it again.
      BACKSTEP_ASSIGN_OR_RETURN(event, cursor->CurrentEvent());
      const cs_insn* insn = decoder.Decode(std::span<const std::uint8_t>(bytes, n), *step.pc);
      if (!insn) {
        next.end = "undecodable instruction";
      } else {
        step.instruction = x86::InstructionText(*insn);
        next = x86::SourceOf(decoder, *insn, before_regs, current, write_start);
        // Where the trace recorded what this event read, the decoded
        // source must be among it.
        const OriginLocation& src = next.next.location;
        if (next.end.empty() && !src.is_register && (records_reads || !event->reads.empty()) &&
            !ReadsCover(event->reads, src.address, src.length)) {
          next.end = "decoded source " + src.ToString() + " not among the event's recorded reads";
        }
      }
    }
    // The value the writer left.
    BACKSTEP_RETURN_IF_ERROR(cursor->Seek(Position(w + 1)));
    BACKSTEP_RETURN_IF_ERROR(read_location(current, thread, step));
    step.end = next.end;
    if (step.end.empty() && d + 1 == depth) step.end = "depth";
    steps.push_back(std::move(step));
    if (!next.end.empty()) break;
    current = std::move(next.next);
    reg_thread = thread;
    before = Position(w);
  }
  return steps;
}

std::string FormatOrigin(const std::vector<OriginStep>& steps) {
  std::string out;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const OriginStep& s = steps[i];
    out += "#" + std::to_string(i) + " ";
    out += s.position ? "pos " + std::to_string(s.position->value) : std::string("pos -");
    out += s.pc ? " pc " + HexU64(*s.pc) : std::string(" pc -");
    out += " " + s.location.ToString() + " =";
    for (std::size_t j = 0; j < s.value.size() && j < 64; ++j) {
      out += ' ';
      if (s.known[j]) {
        out += HexBytes({&s.value[j], 1});
      } else {
        out += "??";
      }
    }
    if (s.value.size() > 64) out += " ...";
    if (!s.instruction.empty()) out += "  <- " + s.instruction;
    out += "\n";
    if (!s.end.empty()) out += "   (" + s.end + ")\n";
  }
  return out;
}

}  // namespace backstep::core
