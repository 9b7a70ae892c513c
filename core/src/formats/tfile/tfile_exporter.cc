#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "backstep/core/cursor.h"
#include "backstep/core/number.h"
#include "backstep/core/tfile_export.h"
#include "formats/tfile/tfile_format.h"
#include "formats/tfile/tfile_writer.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

constexpr std::uint32_t kPositionTsv = 1;
constexpr std::uint64_t kMemoryBlockHeader = 1 + 8 + 2;  // 'M', address, length
constexpr std::uint64_t kTsvBlockSize = 1 + 4 + 8;       // 'V', number, value
constexpr std::uint64_t kMaxFrames = 0x7fffffff;         // gdb's frame numbers are int

// Can `r` padding bytes be made of 11-byte empty M blocks and 13-byte V blocks?
std::optional<std::pair<std::uint64_t, std::uint64_t>> PaddingBlocks(std::uint64_t r) {
  for (std::uint64_t v = 0; v <= 10 && v * kTsvBlockSize <= r; ++v) {
    if ((r - v * kTsvBlockSize) % kMemoryBlockHeader == 0) {
      return std::make_pair((r - v * kTsvBlockSize) / kMemoryBlockHeader, v);
    }
  }
  return std::nullopt;
}

// [begin, end) ranges, merged.
struct Range {
  Address begin = 0, end = 0;
};

void AddRange(std::vector<Range>* ranges, Address address, std::uint64_t length) {
  if (length == 0) return;
  const Address end = address + length < address ? ~Address(0) : address + length;
  ranges->push_back({address, end});
}

void MergeRanges(std::vector<Range>* ranges) {
  std::sort(ranges->begin(), ranges->end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  std::vector<Range> merged;
  for (const Range& r : *ranges) {
    if (!merged.empty() && r.begin <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, r.end);
    } else {
      merged.push_back(r);
    }
  }
  *ranges = std::move(merged);
}

// What one frame holds.
struct Frame {
  Position position;
  Address pc = 0;
  RegisterFile registers{X86_64()};
  std::vector<std::pair<Address, std::vector<std::uint8_t>>> runs;  // known bytes only
  std::uint64_t data_size = 0;                                      // without padding
};

class Exporter {
 public:
  Exporter(const Trace& trace, const TfileExportOptions& options, std::uint64_t block_size)
      : trace_(trace), options_(options), block_size_(block_size) {}

  Expected<TfileExportSummary> Run(std::unique_ptr<TfileWriter> writer) {
    BACKSTEP_RETURN_IF_ERROR(Validate());
    BACKSTEP_ASSIGN_OR_RETURN(cursor_, trace_.NewCursor());
    // Pass 1: distinct pcs, frame sizes.
    std::set<std::uint64_t> sizes;
    std::uint64_t frames = 0;
    BACKSTEP_RETURN_IF_ERROR(Walk(0, [&](Frame& f) -> Status {
      if (!tracepoints_.contains(f.pc)) {
        if (tracepoints_.size() == static_cast<std::size_t>(kTfileMaxFrameTracepoint)) {
          return Status::InvalidArgument(
              trace_.path() + ": positions " + std::to_string(from_.value) + ".." +
              std::to_string(to_.value) + " execute more than " +
              std::to_string(kTfileMaxFrameTracepoint) + " distinct pcs (the 32768th is " +
              HexU64(f.pc) + " at position " + std::to_string(f.position.value) +
              "); a tfile holds one tracepoint per pc and tracepoint numbers are 16-bit: "
              "narrow the export with --from/--to or --at-pc");
        }
        const auto number = static_cast<std::uint32_t>(tracepoints_.size() + 1);
        tracepoints_.emplace(f.pc, number);
        pcs_in_order_.push_back(f.pc);
      }
      sizes.insert(f.data_size);
      if (++frames > kMaxFrames) {
        return Status::InvalidArgument(trace_.path() + ": more than " + std::to_string(kMaxFrames) +
                                       " frames (gdb's frame numbers are int): use --every or "
                                       "--from/--to");
      }
      return Status::Ok();
    }));
    if (frames == 0) {
      return Status::InvalidArgument(
          trace_.path() + ": no position selected (--from " + std::to_string(from_.value) +
          " --to " + std::to_string(to_.value) +
          (options_.at_pcs.empty() ? std::string() : ", --at-pc: no position has that pc") + ")");
    }
    // Equal frame sizes: the smallest size every frame can be padded to.
    // gdb 13.1's pc/range/line scans skip frames by the wrong length
    // (docs/protocol.md §9); with every frame the same size its miscount still lands
    // on a frame header, so the scans find the right frames.
    std::uint64_t size = *sizes.rbegin();
    // No '\n' byte in the size: it also goes into the decoy line.
    const auto has_newline = [](std::uint64_t v) {
      for (int i = 0; i < 4; ++i) {
        if (((v >> (8 * i)) & 0xff) == '\n') return true;
      }
      return false;
    };
    while (has_newline(size) || std::any_of(sizes.begin(), sizes.end(), [&](std::uint64_t s) {
             return !PaddingBlocks(size - s);
           })) {
      ++size;
    }
    if (size > 0xffffffffu) {
      return Status::InvalidArgument(trace_.path() + ": frames of " + std::to_string(size) +
                                     " bytes (the size field is a u32): use fewer --mem ranges");
    }

    // Definitions: descending numbers, so gdb's local numbers equal them
    // (gdb numbers uploaded tracepoints in reverse order of definition, and
    // `tfind tracepoint N` compares local numbers).
    std::vector<TfileTracepoint> tps;
    for (std::size_t i = pcs_in_order_.size(); i-- > 0;) {
      TfileTracepoint tp;
      tp.number = static_cast<std::uint32_t>(i + 1);
      tp.address = pcs_in_order_[i];
      tp.at_string = "*" + HexU64(tp.address);
      tp.cmd_strings = {"collect $regs"};
      tps.push_back(std::move(tp));
    }
    TfileTsv position_tsv;
    position_tsv.number = kPositionTsv;
    position_tsv.name = "backstep_position";
    writer->set_decoy_header_size(static_cast<std::uint32_t>(size));
    BACKSTEP_RETURN_IF_ERROR(writer->WriteDefinitions({position_tsv}, tps));

    // Pass 2: the frames.
    TfileExportSummary summary;
    BACKSTEP_RETURN_IF_ERROR(Walk(1, [&](Frame& f) -> Status {
      writer->BeginFrame(static_cast<int>(tracepoints_.at(f.pc)));
      writer->AddRegisters(f.registers);
      writer->AddTsvValue(kPositionTsv, static_cast<std::int64_t>(f.position.value));
      for (const auto& [address, bytes] : f.runs) writer->AddMemory(address, bytes);
      const auto [empty_blocks, tsv_blocks] = *PaddingBlocks(size - f.data_size);
      for (std::uint64_t i = 0; i < empty_blocks; ++i) writer->AddEmptyMemory(0);
      for (std::uint64_t i = 0; i < tsv_blocks; ++i) {
        writer->AddTsvValue(kPositionTsv, static_cast<std::int64_t>(f.position.value));
      }
      summary.padding += size - f.data_size;
      return writer->EndFrame();
    }));
    summary.frames = writer->frames_written();
    summary.tracepoints = pcs_in_order_.size();
    summary.frame_size = size;
    BACKSTEP_RETURN_IF_ERROR(writer->Finish());
    return summary;
  }

 private:
  Status Validate() {
    if (&trace_.arch() != &X86_64()) {
      return Status::Unsupported(trace_.path() + ": tfile export supports x86-64 traces only");
    }
    const std::uint64_t last = trace_.event_count();
    from_ = options_.from;
    to_ = options_.to.value_or(Position(last));
    if (from_.value > last) {
      return Status::InvalidArgument("--from " + std::to_string(from_.value) +
                                     " is past the end of " + trace_.path() + " (positions 0.." +
                                     std::to_string(last) + ")");
    }
    if (to_.value > last) {
      return Status::InvalidArgument("--to " + std::to_string(to_.value) + " is past the end of " +
                                     trace_.path() + " (positions 0.." + std::to_string(last) +
                                     ")");
    }
    if (from_ > to_) {
      return Status::InvalidArgument("--from " + std::to_string(from_.value) + " is after --to " +
                                     std::to_string(to_.value));
    }
    if (options_.every == 0) return Status::InvalidArgument("--every 0: K must be at least 1");
    if (options_.every != 1 && !options_.at_pcs.empty()) {
      return Status::InvalidArgument("--every and --at-pc select positions differently: use one");
    }
    for (const TfileMemoryRange& m : options_.memory) {
      if (m.length == 0 || m.length > kTfileExportMemoryLimit) {
        return Status::InvalidArgument("--mem " + HexU64(m.address) + ":" +
                                       std::to_string(m.length) + ": LEN must be 1..16 MiB");
      }
    }
    at_pcs_.insert(options_.at_pcs.begin(), options_.at_pcs.end());
    selected_ = (to_.value - from_.value) / options_.every + 1;
    return Status::Ok();
  }

  // Calls fn for each selected position, in order; pass 0 or 1 for progress.
  template <typename Fn>
  Status Walk(int pass, Fn fn) {
    Frame frame;
    std::uint64_t done = 0;
    for (std::uint64_t p = from_.value;; p += options_.every) {
      const Position position(p);
      if (position.value == cursor_->position().value + 1) {
        BACKSTEP_RETURN_IF_ERROR(cursor_->StepForward());
      } else if (position != cursor_->position()) {
        BACKSTEP_RETURN_IF_ERROR(cursor_->Seek(position));
      }
      const ThreadId thread = cursor_->current_thread();
      const Address pc = cursor_->Pc(thread).value_or(0);
      if (at_pcs_.empty() || at_pcs_.contains(pc)) {
        BACKSTEP_RETURN_IF_ERROR(Build(thread, pc, &frame));
        BACKSTEP_RETURN_IF_ERROR(fn(frame));
      }
      ++done;
      if (options_.progress && done % 4096 == 0 &&
          !options_.progress("exporting", pass * selected_ + done, 2 * selected_)) {
        return Status::Interrupted(trace_.path() + ": export interrupted; nothing was written");
      }
      if (to_.value - p < options_.every) break;
    }
    if (options_.progress) options_.progress("exporting", pass * selected_ + done, 2 * selected_);
    return Status::Ok();
  }

  // The frame at the cursor's position.
  Status Build(ThreadId thread, Address pc, Frame* f) {
    f->position = cursor_->position();
    f->pc = pc;
    f->registers.Clear();
    if (auto regs = cursor_->Registers(thread); regs.ok()) f->registers = **regs;
    f->runs.clear();

    std::vector<Range> ranges;
    std::vector<std::uint8_t> sp_bytes(8);
    if (f->registers.Read(X86_64().sp(), sp_bytes)) {
      Address sp = 0;
      for (int i = 7; i >= 0; --i) sp = (sp << 8) | sp_bytes[i];
      const Address low = sp >= options_.stack_below ? sp - options_.stack_below : 0;
      AddRange(&ranges, low, (sp - low) + options_.stack_above);
    }
    if (trace_.header().address_kind == AddressKind::kVirtual) {
      if (auto event = cursor_->CurrentEvent(); event.ok()) {
        std::uint64_t budget = kTfileExportAccessLimit;
        for (const auto* list : {&(*event)->reads, &(*event)->writes}) {
          for (const MemoryAccess& a : *list) {
            const std::uint64_t n = std::min<std::uint64_t>(a.data.size(), budget);
            AddRange(&ranges, a.address, n);
            budget -= n;
          }
        }
      }
    }
    for (const TfileMemoryRange& m : options_.memory) AddRange(&ranges, m.address, m.length);
    MergeRanges(&ranges);

    f->data_size = 1 + block_size_ + kTsvBlockSize;
    for (const Range& r : ranges) {
      bytes_.resize(r.end - r.begin);
      known_.resize(r.end - r.begin);
      if (!cursor_->ReadMemory(r.begin, bytes_, known_).ok()) continue;  // untranslatable
      for (std::size_t i = 0; i < bytes_.size();) {
        if (!known_[i]) {
          ++i;
          continue;
        }
        std::size_t j = i;
        while (j < bytes_.size() && known_[j]) ++j;
        const std::uint64_t n = j - i;
        f->runs.emplace_back(r.begin + i,
                             std::vector<std::uint8_t>(bytes_.begin() + i, bytes_.begin() + j));
        f->data_size +=
            n + kMemoryBlockHeader * ((n + kTfileMaxMemoryBlock - 1) / kTfileMaxMemoryBlock);
        i = j;
      }
    }
    return Status::Ok();
  }

  const Trace& trace_;
  const TfileExportOptions& options_;
  const std::uint64_t block_size_;  // the R block
  Position from_, to_;
  std::uint64_t selected_ = 0;
  std::unordered_set<Address> at_pcs_;
  std::unique_ptr<Cursor> cursor_;
  std::unordered_map<Address, std::uint32_t> tracepoints_;  // pc -> tracepoint number
  std::vector<Address> pcs_in_order_;
  std::vector<std::uint8_t> bytes_, known_;
};

}  // namespace

Expected<TfileMemoryRange> ParseTfileMemoryRange(std::string_view spec) {
  const std::string quoted = "--mem '" + std::string(spec) + "'";
  const std::size_t colon = spec.find(':');
  if (colon == std::string_view::npos) {
    return Status::InvalidArgument(quoted + ": expected ADDR:LEN (e.g. 0x601040:64)");
  }
  const auto address = ParseNumber(spec.substr(0, colon));
  if (!address) return Status::InvalidArgument(quoted + ": ADDR is not a number");
  const auto length = ParseNumber(spec.substr(colon + 1));
  if (!length) return Status::InvalidArgument(quoted + ": LEN is not a number");
  if (*length == 0 || *length > kTfileExportMemoryLimit) {
    return Status::InvalidArgument(quoted + ": LEN must be 1..16 MiB");
  }
  if (*address + *length < *address) {
    return Status::InvalidArgument(quoted + ": the range wraps past the end of the address space");
  }
  return TfileMemoryRange{*address, *length};
}

namespace {

Expected<TfileExportSummary> RunExport(const Trace& trace, std::unique_ptr<TfileWriter> writer,
                                       const TfileExportOptions& options) {
  Exporter exporter(trace, options, writer->layout().block_size());
  return exporter.Run(std::move(writer));
}

TfileWriterOptions WriterOptions(const Trace& trace) {
  TfileWriterOptions w;
  w.notes = "exported by backstep from " + trace.path();
  if (w.notes.size() > 300) w.notes.resize(300);
  return w;
}

}  // namespace

Expected<TfileExportSummary> ExportTfile(const Trace& trace, const std::string& path,
                                         const TfileExportOptions& options) {
  BACKSTEP_ASSIGN_OR_RETURN(auto writer, TfileWriter::Create(path, WriterOptions(trace)));
  BACKSTEP_ASSIGN_OR_RETURN(TfileExportSummary summary,
                            RunExport(trace, std::move(writer), options));
  return summary;
}

Expected<TfileExportSummary> ExportTfileToMemory(const Trace& trace, std::vector<std::uint8_t>* out,
                                                 const TfileExportOptions& options) {
  return RunExport(trace, TfileWriter::CreateInMemory(out, WriterOptions(trace)), options);
}

}  // namespace backstep::core
