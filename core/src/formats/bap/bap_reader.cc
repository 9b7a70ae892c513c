#include "formats/bap/bap_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "formats/bap/bap_format.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

// The meta frame's time (seconds, a double): whole seconds when it fits a
// long long, else the double as written (a file can hold any value; the
// conversion of an out-of-range double is undefined behaviour).
std::string TimeText(double t) {
  if (std::isfinite(t) && t >= -9.2e18 && t <= 9.2e18) {
    return std::to_string(static_cast<long long>(t));
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%g (out of range)", t);
  return text;
}

std::span<const std::uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// Printable text for `backstep info` (meta strings are the tracer's).
std::string Printable(const std::string& s, std::size_t max = 200) {
  std::string out;
  for (char c : s.substr(0, max)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (s.size() > max) out += "...";
  return out;
}

std::string Joined(const google::protobuf::RepeatedPtrField<std::string>& list) {
  std::string out;
  for (const std::string& s : list) out += (out.empty() ? "" : " ") + Printable(s, 80);
  return Printable(out, 400);
}

}  // namespace

Expected<std::unique_ptr<BapReader>> BapReader::Open(std::shared_ptr<const ByteSource> source) {
  std::unique_ptr<BapReader> reader(new BapReader(std::move(source)));
  const std::string& file = reader->source_->name();
  BACKSTEP_ASSIGN_OR_RETURN(reader->container_, ParseBapContainer(reader->source_->data(), file));
  auto arch = FindBapArch(reader->container_.arch, reader->container_.machine);
  if (!arch.ok()) return arch.status().Annotate(file + ": header at offset 0x10");
  reader->arch_ = *arch;
  reader->offset_ = reader->container_.frames_start;
  reader->ScanFirstThreads();
  reader->FillHeader();
  return reader;
}

void BapReader::ScanFirstThreads() {
  const auto data = source_->data();
  std::uint64_t at = container_.frames_start;
  std::vector<std::uint64_t> seen;
  for (std::uint64_t i = 0; i < kBapLookahead && at < container_.frames_end; ++i) {
    if (container_.declared_frames != 0 && i >= container_.declared_frames) break;
    const std::uint64_t frame_at = at;
    auto next = BapFrameAt(data, source_->name(), container_, at, i, &peek_);
    if (!next.ok()) break;  // Next() reports it when it gets there
    at = *next;
    if (!peek_.has_std_frame()) continue;
    const std::uint64_t tid = peek_.std_frame().thread_id();
    if (tid > kBapMaxThreadId || std::find(seen.begin(), seen.end(), tid) != seen.end()) continue;
    if (seen.empty()) first_thread_ = ThreadId(tid + 1);
    seen.push_back(tid);
    // Before its first instruction: the values that instruction's pre-list
    // reads, and its address.
    RegisterFile regs(arch_->arch());
    Event pre;
    if (BapFrameAt(data, source_->name(), container_, frame_at, i, &ahead_).ok()) {
      AddPreRegisters(ahead_.std_frame(), &pre);
    }
    for (const RegisterWrite& w : pre.registers) regs.Apply(w);
    regs.SetU64(arch_->arch().pc(), peek_.std_frame().address());
    initial_.emplace_back(ThreadId(tid + 1), std::move(regs));
  }
}

void BapReader::FillHeader() {
  header_.format = "bap";
  header_.arch = &arch_->arch();
  header_.address_kind = AddressKind::kVirtual;
  header_.records_reads = true;
  if (container_.declared_frames != 0) header_.declared_events = container_.declared_frames;
  auto& p = header_.properties;
  p.emplace_back("version", std::to_string(container_.version));
  p.emplace_back("bap arch", std::string(arch_->name()) + " (frame_architecture " +
                                 std::to_string(container_.arch) + ", machine " +
                                 std::to_string(container_.machine) + ")");
  p.emplace_back("frames", container_.declared_frames == 0
                               ? std::string("not declared (n = 0): read to the end")
                               : std::to_string(container_.declared_frames) + " declared");
  p.emplace_back("toc", container_.toc_note);
  if (container_.meta) {
    const bap_proto::meta_frame& m = *container_.meta;
    p.emplace_back("tracer", Printable(m.tracer().name()) + " " + Printable(m.tracer().version()));
    if (m.tracer().args_size() != 0) p.emplace_back("tracer args", Joined(m.tracer().args()));
    p.emplace_back("target", Printable(m.target().path()));
    if (m.target().args_size() != 0) p.emplace_back("target args", Joined(m.target().args()));
    p.emplace_back("user", Printable(m.user()) + "@" + Printable(m.host()));
    p.emplace_back("time", TimeText(m.time()));
  }
  std::string first;
  for (const auto& [tid, regs] : initial_) {
    first += (first.empty() ? "" : ", ") + std::to_string(tid.value) + ": " +
             HexU64(regs.u64(arch_->arch().pc()));
  }
  p.emplace_back("first pcs", first.empty() ? std::string("none in the first frames") : first);
}

void BapReader::ReadInitialMemory(Address, std::span<std::uint8_t> out,
                                  std::span<std::uint8_t> known) const {
  std::fill(out.begin(), out.end(), 0);
  std::fill(known.begin(), known.end(), 0);
}

Status BapReader::Seek(const ReaderPosition& pos) {
  if (pos.offset < container_.frames_start || pos.offset > container_.frames_end ||
      pos.aux > kBapMaxFrames) {
    return Status::InvalidArgument(source_->name() + ": cannot resume at " + HexU64(pos.offset) +
                                   "/" + std::to_string(pos.aux) +
                                   " (not a BAP frames reader position)");
  }
  offset_ = pos.offset;
  index_ = pos.aux;
  return Status::Ok();
}

std::string BapReader::Where() const {
  return source_->name() + ": frame " + std::to_string(index_) + " at offset " +
         HexU64(frame_offset_) + ": ";
}

Expected<ThreadId> BapReader::Thread(std::uint64_t thread_id) const {
  if (thread_id > kBapMaxThreadId) {
    return Status::Unsupported(Where() + "thread id " + std::to_string(thread_id) +
                               " (backstep numbers threads id + 1)");
  }
  return ThreadId(thread_id + 1);
}

Expected<bool> BapReader::Next(Event* event) {
  event->Clear();
  if (offset_ >= container_.frames_end) return false;
  if (container_.declared_frames != 0 && index_ >= container_.declared_frames) return false;
  if (index_ >= kBapMaxFrames) {
    return Status::Unsupported(source_->name() + ": more than 2^62 frames");
  }
  frame_offset_ = offset_;
  BACKSTEP_ASSIGN_OR_RETURN(next_offset_, BapFrameAt(source_->data(), source_->name(), container_,
                                                     offset_, index_, &frame_));
  const int kinds = frame_.has_std_frame() + frame_.has_syscall_frame() +
                    frame_.has_exception_frame() + frame_.has_taint_intro_frame() +
                    frame_.has_modload_frame() + frame_.has_key_frame();
  if (kinds != 1) {
    return Status::Corruption(Where() + "sets " + std::to_string(kinds) +
                              " frame kinds (exactly one is allowed)");
  }
  if (frame_.has_std_frame()) {
    BACKSTEP_RETURN_IF_ERROR(StdFrame(frame_.std_frame(), event));
  } else if (frame_.has_syscall_frame()) {
    const auto& f = frame_.syscall_frame();
    BACKSTEP_ASSIGN_OR_RETURN(event->thread, Thread(f.thread_id()));
    event->kind = EventKind::kSyscall;
    description_ = "syscall " + std::to_string(f.number()) + " at " + HexU64(f.address());
    if (f.argument_list().elem_size() != 0) {
      description_ += " (args";
      for (int i = 0; i < f.argument_list().elem_size() && i < 8; ++i) {
        description_ += " " + std::to_string(f.argument_list().elem(i));
      }
      description_ += f.argument_list().elem_size() > 8 ? " ...)" : ")";
    }
  } else if (frame_.has_exception_frame()) {
    const auto& f = frame_.exception_frame();
    if (f.has_thread_id()) {
      BACKSTEP_ASSIGN_OR_RETURN(event->thread, Thread(f.thread_id()));
    } else {
      event->thread = first_thread_;
    }
    event->kind = EventKind::kException;
    description_ = "exception " + std::to_string(f.exception_number());
    if (f.has_from_addr()) description_ += " from " + HexU64(f.from_addr());
    if (f.has_to_addr()) description_ += " to " + HexU64(f.to_addr());
  } else if (frame_.has_taint_intro_frame()) {
    event->thread = first_thread_;
    event->kind = EventKind::kMarker;
    const auto& list = frame_.taint_intro_frame().taint_intro_list();
    description_ = "taint intro (" + std::to_string(list.elem_size()) + " entries)";
    for (const bap_proto::taint_intro& t : list.elem()) {
      if (t.has_value() && !t.value().empty()) {
        BACKSTEP_RETURN_IF_ERROR(AddMemory(t.addr(), t.value(), 0, &event->writes));
      }
    }
  } else if (frame_.has_modload_frame()) {
    const auto& f = frame_.modload_frame();
    event->thread = first_thread_;
    event->kind = EventKind::kMarker;
    description_ = "modload " + Printable(f.module_name()) + " [" + HexU64(f.low_address()) + ", " +
                   HexU64(f.high_address()) + ")";
  } else {
    BACKSTEP_RETURN_IF_ERROR(KeyFrame(frame_.key_frame(), event));
  }
  if (event->kind != EventKind::kInstruction) event->description = description_;
  offset_ = next_offset_;
  ++index_;
  return true;
}

Status BapReader::StdFrame(const bap_proto::std_frame& f, Event* event) {
  BACKSTEP_ASSIGN_OR_RETURN(event->thread, Thread(f.thread_id()));
  event->kind = EventKind::kInstruction;
  if (!f.rawbytes().empty()) {
    BACKSTEP_RETURN_IF_ERROR(AddMemory(f.address(), f.rawbytes(), 0, &event->reads));
  }
  for (const bap_proto::operand_info& op : f.operand_pre_list().elem()) {
    const auto& spec = op.operand_info_specific();
    if (spec.has_mem_operand()) {
      BACKSTEP_RETURN_IF_ERROR(
          AddMemory(spec.mem_operand().address(), op.value(), op.bit_length(), &event->reads));
    } else if (spec.has_reg_operand()) {
      AddRegister(spec.reg_operand().name(), op.value(), event);
    }
  }
  for (const bap_proto::operand_info& op : f.operand_post_list().elem()) {
    const auto& spec = op.operand_info_specific();
    if (spec.has_mem_operand()) {
      BACKSTEP_RETURN_IF_ERROR(
          AddMemory(spec.mem_operand().address(), op.value(), op.bit_length(), &event->writes));
    } else if (spec.has_reg_operand()) {
      AddRegister(spec.reg_operand().name(), op.value(), event);
    }
  }
  // A suspended thread's registers do not change: the values its next
  // instruction's pre-list reads are its registers from here on, and its
  // pc is that instruction's address.
  BACKSTEP_ASSIGN_OR_RETURN(const bool next, NextFrame(f.thread_id()));
  if (!next) {
    // Its last instruction (within reach): what the frame lists is all the
    // file says about the state after it (no pc in legacy traces, which
    // have no pc operand; the TCG plugin's post-list has it).
    event->flags = kEventClearsRegisters;
    return Status::Ok();
  }
  AddPreRegisters(ahead_.std_frame(), event);
  RegisterWrite& pc = event->registers.emplace_back();
  pc.reg = arch_->arch().pc();
  for (std::size_t i = 0; i < arch_->arch().info(pc.reg).size; ++i) {
    pc.value[i] = static_cast<std::uint8_t>(ahead_.std_frame().address() >> (8 * i));
  }
  return Status::Ok();
}

void BapReader::AddPreRegisters(const bap_proto::std_frame& f, Event* event) {
  for (const bap_proto::operand_info& op : f.operand_pre_list().elem()) {
    if (op.operand_info_specific().has_reg_operand()) {
      AddRegister(op.operand_info_specific().reg_operand().name(), op.value(), event);
    }
  }
}

Expected<bool> BapReader::NextFrame(std::uint64_t thread_id) {
  const auto data = source_->data();
  std::uint64_t at = next_offset_;
  for (std::uint64_t i = index_ + 1, end = index_ + 1 + kBapLookahead;
       i < end && at < container_.frames_end; ++i) {
    if (container_.declared_frames != 0 && i >= container_.declared_frames) break;
    auto next = BapFrameAt(data, source_->name(), container_, at, i, &peek_);
    if (!next.ok()) return false;  // Next() reports it when it gets there
    if (peek_.has_std_frame() && peek_.std_frame().thread_id() == thread_id) {
      // Decoded once as a peek: this full decoding cannot fail.
      BACKSTEP_RETURN_IF_ERROR(
          BapFrameAt(data, source_->name(), container_, at, i, &ahead_).status());
      return true;
    }
    at = *next;
  }
  return false;
}

void BapReader::AddRegister(const std::string& name, const std::string& value, Event* event) {
  const RegisterId id = arch_->Find(name);
  if (id == kNoRegister) return;
  RegisterWrite& w = event->registers.emplace_back();
  w.reg = id;
  const std::size_t size = arch_->arch().info(id).size;
  std::memcpy(w.value, value.data(), std::min(size, value.size()));
}

Status BapReader::AddMemory(std::uint64_t address, const std::string& value,
                            std::int32_t bit_length, std::vector<MemoryAccess>* out) {
  std::size_t size = value.size();
  // A value longer than the access (bit_length bits) holds host bytes past
  // it: only the access's own bytes are memory.
  if (bit_length > 0 && static_cast<std::size_t>(bit_length) / 8 < size) size = bit_length / 8;
  if (size == 0) return Status::Ok();
  if (size - 1 > ~address) {
    return Status::Corruption(Where() + "memory operand at " + HexU64(address) + " of " +
                              std::to_string(size) + " bytes wraps around the address space");
  }
  out->push_back(MemoryAccess{address, Bytes(value).first(size)});
  return Status::Ok();
}

Status BapReader::KeyFrame(const bap_proto::key_frame& f, Event* event) {
  event->kind = EventKind::kMarker;
  event->thread = first_thread_;
  description_ = "key frame";
  std::optional<std::uint64_t> thread;
  for (const bap_proto::tagged_value_list& list : f.tagged_value_lists().elem()) {
    const bap_proto::value_source_tag& tag = list.value_source_tag();
    if (tag.has_thread_id()) {
      if (thread && *thread != tag.thread_id()) {
        return Status::Unsupported(Where() + "a key frame with values of threads " +
                                   std::to_string(*thread) + " and " +
                                   std::to_string(tag.thread_id()));
      }
      thread = tag.thread_id();
    }
    for (const bap_proto::value_info& v : list.value_list().elem()) {
      const auto& spec = v.operand_info_specific();
      if (spec.has_mem_operand()) {
        BACKSTEP_RETURN_IF_ERROR(
            AddMemory(spec.mem_operand().address(), v.value(), v.bit_length(), &event->writes));
      } else if (spec.has_reg_operand()) {
        AddRegister(spec.reg_operand().name(), v.value(), event);
      }
    }
  }
  if (thread) {
    BACKSTEP_ASSIGN_OR_RETURN(event->thread, Thread(*thread));
  }
  return Status::Ok();
}

bool BapReader::Sniff(std::span<const std::uint8_t> head) {
  if (head.size() < 8) return false;
  std::uint64_t magic = 0;
  for (int i = 0; i < 8; ++i) magic |= std::uint64_t{head[i]} << (8 * i);
  return magic == kBapMagic;
}

}  // namespace backstep::core
