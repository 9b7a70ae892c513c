#include "formats/bap/bap_trace_writer.h"

#include <algorithm>
#include <charconv>

#include "formats/bap/bap_format.h"

namespace backstep::core {
namespace {

constexpr std::size_t kImagePiece = std::size_t{1} << 16;

// N of a description "PREFIX N..." (our reader's syscall/exception text).
std::uint64_t NumberAfter(std::string_view text, std::string_view prefix) {
  if (text.substr(0, prefix.size()) != prefix) return 0;
  std::uint64_t n = 0;
  const std::string_view rest = text.substr(prefix.size());
  std::from_chars(rest.data(), rest.data() + rest.size(), n);
  return n;
}

void Bits(bap_proto::operand_usage* usage, bool written) {
  usage->set_read(!written);
  usage->set_written(written);
  usage->set_index(false);
  usage->set_base(false);
}

}  // namespace

std::unique_ptr<BapTraceWriter> BapTraceWriter::InMemory(BapWriterOptions options) {
  auto w = std::make_unique<BapTraceWriter>("<memory>", options);
  w->in_memory_ = true;
  return w;
}

Status BapTraceWriter::CheckThread(ThreadId thread, const std::string& where) const {
  if (thread.value == 0) {
    return Status::Unsupported(where + ": thread 0 has no BAP thread id (id = thread - 1)");
  }
  return Status::Ok();
}

RegisterFile& BapTraceWriter::State(ThreadId thread) {
  auto it = state_.find(thread);
  if (it == state_.end()) it = state_.emplace(thread, RegisterFile(arch_->arch())).first;
  return it->second;
}

void BapTraceWriter::AddRegister(bap_proto::operand_value_list* list, RegisterId id,
                                 const RegisterFile& regs, bool written) {
  bap_proto::operand_info* op = list->add_elem();
  op->mutable_operand_info_specific()->mutable_reg_operand()->set_name(
      std::string(arch_->WriteName(id)));
  const auto bytes = regs.bytes(id);
  op->set_bit_length(static_cast<std::int32_t>(8 * bytes.size()));
  Bits(op->mutable_operand_usage(), written);
  op->mutable_taint_info()->set_no_taint(true);
  op->set_value(std::string(bytes.begin(), bytes.end()));
}

void BapTraceWriter::AddMemory(bap_proto::operand_value_list* list, const MemoryAccess& m,
                               bool written) {
  bap_proto::operand_info* op = list->add_elem();
  op->mutable_operand_info_specific()->mutable_mem_operand()->set_address(m.address);
  op->set_bit_length(static_cast<std::int32_t>(8 * m.data.size()));
  Bits(op->mutable_operand_usage(), written);
  op->mutable_taint_info()->set_no_taint(true);
  op->set_value(std::string(m.data.begin(), m.data.end()));
}

Status BapTraceWriter::Begin(
    const TraceHeader& header,
    const std::vector<std::pair<ThreadId, RegisterFile>>& initial_registers,
    const InitialMemoryFn& initial_memory) {
  arch_ = header.arch ? BapArchFor(*header.arch) : nullptr;
  if (!arch_) {
    return Status::Unsupported(path_ +
                               ": backstep writes BAP frames for x86-64 and i386 only, not " +
                               std::string(header.arch ? header.arch->name() : "?"));
  }
  if (header.address_kind != AddressKind::kVirtual) {
    return Status::Unsupported(path_ +
                               ": BAP frames hold virtual memory; converting a physical-memory "
                               "trace is not supported");
  }
  for (const auto& [thread, regs] : initial_registers) {
    BACKSTEP_RETURN_IF_ERROR(CheckThread(thread, path_));
    State(thread) = regs;
    known_threads_.insert(thread);
  }
  // The initial image: known bytes of the header's regions, in runs.
  std::vector<std::vector<std::uint8_t>> runs;
  std::vector<MemoryAccess> memory;
  std::uint64_t image_bytes = 0;
  if (initial_memory) {
    std::vector<std::uint8_t> piece(kImagePiece), known(kImagePiece);
    for (const MemoryRegion& r : header.regions) {
      for (std::uint64_t at = 0; at < r.size; at += kImagePiece) {
        const std::size_t n =
            static_cast<std::size_t>(std::min<std::uint64_t>(kImagePiece, r.size - at));
        initial_memory(r.start + at, {piece.data(), n}, {known.data(), n});
        for (std::size_t i = 0; i < n;) {
          if (!known[i]) {
            ++i;
            continue;
          }
          std::size_t j = i;
          while (j < n && known[j]) ++j;
          image_bytes += j - i;
          if (image_bytes > kMaxInitialBytes) {
            return Status::Unsupported(path_ + ": the initial memory image holds more than " +
                                       std::to_string(kMaxInitialBytes >> 20) +
                                       " MiB of known bytes; a BAP frame carrying that much is "
                                       "not supported");
          }
          runs.emplace_back(piece.begin() + i, piece.begin() + j);
          memory.push_back({r.start + at + i, {}});
          i = j;
        }
      }
    }
  }
  if (in_memory_) {
    writer_ = BapWriter::CreateMemory(options_);
  } else {
    BACKSTEP_ASSIGN_OR_RETURN(writer_, BapWriter::CreateFile(path_, options_));
  }
  bap_proto::meta_frame meta;
  meta.mutable_tracer()->set_name("backstep");
  meta.mutable_tracer()->add_args("convert");
  meta.mutable_tracer()->add_args("--from=" + header.format);
  meta.mutable_tracer()->set_version("1");
  meta.mutable_target()->set_path("");
  meta.mutable_target()->set_md5sum("");
  meta.mutable_fstats()->set_size(0);
  meta.mutable_fstats()->set_atime(0);
  meta.mutable_fstats()->set_mtime(0);
  meta.mutable_fstats()->set_ctime(0);
  meta.set_user("");
  meta.set_host("");
  meta.set_time(0);
  BACKSTEP_RETURN_IF_ERROR(writer_->Begin(arch_->bap_arch(), arch_->bap_machine(), meta));
  // The initial state beyond each thread's pc rides in the pre-list of the
  // thread's first std_frame (values before it): BapReader takes a thread's
  // initial registers from there, and bap-frames (lib/frame_events.ml)
  // turns key frames into no event at all, so a key frame would only shift
  // every position by one. The image goes with the trace's first
  // instruction as memory operands (reads: known back to position 0).
  for (const auto& [thread, regs] : initial_registers) {
    std::vector<RegisterId>& ids = initial_[thread];
    for (RegisterId id = 0; id < arch_->arch().register_count(); ++id) {
      if (id != arch_->arch().pc() && !arch_->WriteName(id).empty() && regs.known(id)) {
        ids.push_back(id);
      }
    }
  }
  image_runs_ = std::move(runs);
  image_ = std::move(memory);
  for (std::size_t i = 0; i < image_runs_.size(); ++i) image_[i].data = image_runs_[i];
  return Status::Ok();
}

Status BapTraceWriter::AppendKeyFrame(ThreadId thread, const std::vector<RegisterId>& registers,
                                      const RegisterFile& regs,
                                      std::span<const MemoryAccess> memory) {
  frame_.Clear();
  bap_proto::tagged_value_list* list =
      frame_.mutable_key_frame()->mutable_tagged_value_lists()->add_elem();
  list->mutable_value_source_tag()->set_thread_id(thread.value - 1);
  bap_proto::value_list* values = list->mutable_value_list();
  for (RegisterId id : registers) {
    bap_proto::value_info* v = values->add_elem();
    v->mutable_operand_info_specific()->mutable_reg_operand()->set_name(
        std::string(arch_->WriteName(id)));
    const auto bytes = regs.bytes(id);
    v->set_bit_length(static_cast<std::int32_t>(8 * bytes.size()));
    v->set_value(std::string(bytes.begin(), bytes.end()));
  }
  for (const MemoryAccess& m : memory) {
    bap_proto::value_info* v = values->add_elem();
    v->mutable_operand_info_specific()->mutable_mem_operand()->set_address(m.address);
    v->set_bit_length(static_cast<std::int32_t>(8 * m.data.size()));
    v->set_value(std::string(m.data.begin(), m.data.end()));
  }
  return Emit(thread);
}

Status BapTraceWriter::Append(const Event& event) {
  if (!writer_) return Status::InvalidArgument(path_ + ": Append() before Begin()");
  const std::string where = path_ + ": event " + std::to_string(events_++);
  BACKSTEP_RETURN_IF_ERROR(CheckThread(event.thread, where));
  // A thread's last instruction clears its registers in BapReader's events
  // (the state after it is what its frame lists): a std_frame says that by
  // being the thread's last one. Any other clear is not expressible.
  const bool last_instruction =
      event.kind == EventKind::kInstruction && event.flags == kEventClearsRegisters;
  if (event.flags != 0 && !last_instruction) {
    return Status::Unsupported(where + ": BAP frames cannot express an event that clears state");
  }
  if (!known_threads_.contains(event.thread)) {
    return Status::Unsupported(where + ": thread " + std::to_string(event.thread.value) +
                               " starts here, after position 0, and a BAP reader gives every "
                               "thread its first pc from position 0");
  }
  // The thread's state after its latest std_frame, before a later event
  // changes it (WriteOldest() may list it in that frame's post-list).
  if (event.kind != EventKind::kInstruction) {
    if (auto last = last_.find(event.thread); last != last_.end() && !last->second.after) {
      last->second.after = State(event.thread);
    }
  }
  RegisterFile& regs = State(event.thread);
  const RegisterFile before = regs;
  // What the thread's last frame lists is all BapReader knows after it.
  if (last_instruction) regs.Clear();
  const RegisterId pc = arch_->arch().pc();
  std::vector<RegisterId> touched;
  for (const RegisterWrite& w : event.registers) {
    regs.Apply(w);
    if (w.reg != pc && !arch_->WriteName(w.reg).empty() &&
        std::find(touched.begin(), touched.end(), w.reg) == touched.end()) {
      touched.push_back(w.reg);
    }
  }
  std::erase_if(touched, [&](RegisterId id) { return !regs.known(id); });
  const auto initial = initial_.find(event.thread);
  if (event.kind != EventKind::kInstruction) {
    // The thread's initial registers wait for its first instruction's
    // pre-list, the image for the trace's first: this event must not change
    // them in between.
    if (initial != initial_.end()) {
      for (RegisterId id : initial->second) {
        if (!regs.known(id) || !std::ranges::equal(regs.bytes(id), before.bytes(id))) {
          return Status::Unsupported(
              where + ": it changes " + std::string(arch_->arch().info(id).name) + " of thread " +
              std::to_string(event.thread.value) +
              " before the thread's first instruction, whose pre-list holds its initial value "
              "(BAP frames have no other place for it)");
        }
      }
    }
    if (!image_.empty() && !event.writes.empty()) {
      return Status::Unsupported(where +
                                 ": it writes memory before the first instruction, "
                                 "whose pre-list holds the initial memory image (BAP "
                                 "frames have no other place for it)");
    }
  }
  const std::uint64_t thread_id = event.thread.value - 1;
  const Address address = before.known(pc) ? before.u64(pc) : 0;
  if (event.kind != EventKind::kInstruction) {
    if (!touched.empty() || !event.writes.empty()) {
      return AppendKeyFrame(event.thread, touched, regs, event.writes);
    }
    frame_.Clear();
    if (event.kind == EventKind::kSyscall) {
      bap_proto::syscall_frame* f = frame_.mutable_syscall_frame();
      f->set_address(address);
      f->set_thread_id(thread_id);
      f->set_number(NumberAfter(event.description, "syscall "));
      f->mutable_argument_list();
      return Emit(event.thread);
    }
    if (event.kind == EventKind::kException || event.kind == EventKind::kInterrupt) {
      bap_proto::exception_frame* f = frame_.mutable_exception_frame();
      f->set_exception_number(NumberAfter(event.description, "exception "));
      f->set_thread_id(thread_id);
      if (before.known(pc)) f->set_from_addr(address);
      return Emit(event.thread);
    }
    return AppendKeyFrame(event.thread, {}, regs, {});
  }
  frame_.Clear();
  bap_proto::std_frame* f = frame_.mutable_std_frame();
  f->set_address(address);
  f->set_thread_id(thread_id);
  f->set_rawbytes("");
  bap_proto::operand_value_list* pre = f->mutable_operand_pre_list();
  bap_proto::operand_value_list* post = f->mutable_operand_post_list();
  bool raw = false;
  for (const MemoryAccess& r : event.reads) {
    if (!raw && before.known(pc) && r.address == address && !r.data.empty()) {
      f->set_rawbytes(std::string(r.data.begin(), r.data.end()));
      raw = true;
      continue;
    }
    AddMemory(pre, r, false);
  }
  for (const MemoryAccess& m : image_) AddMemory(pre, m, false);
  image_.clear();
  image_runs_.clear();
  std::vector<RegisterId> in_pre;
  std::vector<RegisterId> in_post;
  for (RegisterId id : touched) {
    const bool same = before.known(id) && std::ranges::equal(before.bytes(id), regs.bytes(id));
    AddRegister(same ? pre : post, id, regs, !same);
    (same ? in_pre : in_post).push_back(id);
  }
  last_[event.thread] = {next_frame_, std::nullopt, std::move(in_post)};
  if (initial != initial_.end()) {
    for (RegisterId id : initial->second) {
      if (std::find(in_pre.begin(), in_pre.end(), id) == in_pre.end()) {
        AddRegister(pre, id, before, false);
      }
    }
    initial_.erase(initial);
  }
  for (const MemoryAccess& w : event.writes) AddMemory(post, w, true);
  return Emit(event.thread);
}

Status BapTraceWriter::Emit(ThreadId thread) {
  window_.push_back({std::move(frame_), thread, next_frame_++});
  frame_.Clear();
  while (window_.size() > kWindow) BACKSTEP_RETURN_IF_ERROR(WriteOldest());
  return Status::Ok();
}

Status BapTraceWriter::WriteOldest() {
  Windowed& w = window_.front();
  const auto last = last_.find(w.thread);
  if (w.frame.has_std_frame() && last != last_.end() && last->second.frame == w.number) {
    // No later frame of its thread within the window: BapReader knows after
    // it only what it lists, so its post-list gets every register the
    // thread knew after it (the pc included: the TCG plugin's way).
    const RegisterFile& regs = last->second.after ? *last->second.after : State(w.thread);
    const std::vector<RegisterId>& listed = last->second.post;
    bap_proto::operand_value_list* post = w.frame.mutable_std_frame()->mutable_operand_post_list();
    for (RegisterId id = 0; id < arch_->arch().register_count(); ++id) {
      if (arch_->WriteName(id).empty() || !regs.known(id) ||
          std::find(listed.begin(), listed.end(), id) != listed.end()) {
        continue;
      }
      AddRegister(post, id, regs, true);
    }
    last_.erase(last);
  }
  const Status s = writer_->AppendFrame(w.frame);
  window_.pop_front();
  return s;
}

Status BapTraceWriter::Finish() {
  if (!writer_) return Status::InvalidArgument(path_ + ": Finish() before Begin()");
  while (!window_.empty()) BACKSTEP_RETURN_IF_ERROR(WriteOldest());
  const bool registers_left = std::any_of(initial_.begin(), initial_.end(),
                                          [](const auto& entry) { return !entry.second.empty(); });
  if (registers_left || !image_.empty()) {
    return Status::Unsupported(path_ +
                               ": the initial state goes in the pre-list of an instruction, and "
                               "the source has no instruction to carry it");
  }
  return writer_->Finish();
}

}  // namespace backstep::core
