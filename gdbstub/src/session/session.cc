#include "session/session.h"

#include <algorithm>
#include <cassert>

#include "protocol/hex.h"
#include "protocol/response_writer.h"
#include "session/packet_table.h"

namespace backstep::gdbstub {
namespace {

using Framer = PacketFramer;

// Marks each Packet event that is followed by an Interrupt before the next
// Packet: that 0x03 was meant for the resume the packet may start.
std::vector<bool> InterruptFollows(const std::vector<Framer::Event>& events) {
  std::vector<bool> follows(events.size(), false);
  bool pending = false;
  for (std::size_t i = events.size(); i-- > 0;) {
    if (std::holds_alternative<Framer::Interrupt>(events[i])) pending = true;
    if (std::holds_alternative<Framer::Packet>(events[i])) {
      follows[i] = pending;
      pending = false;
    }
  }
  return follows;
}

}  // namespace

Session::Session(Target& target, SessionOptions options, ResumeRunner* runner)
    : target_(target), options_(options), runner_(runner), framer_(options.packet_size) {
  assert(options.packet_size >= kMinPacketSize);
}

// NOTE: LLDB sends 0x03 whenever its process is "running", also between
// two steps of a thread plan, after the last stop reply arrived; it takes
// that stop as the interrupt's answer and stops. Kept pending, the 0x03
// would stop the user's next command without moving (a `backstep rsi`
// after Ctrl-C did nothing). gdb needs it kept (class comment).
bool Session::KeepsLateInterrupts() const {
  const Negotiated& n = state_.negotiated;
  return !n.list_threads_in_stop_reply && !n.thread_suffix;  // both: LLDB only
}

std::vector<std::string> Session::OnBytes(std::span<const std::uint8_t> bytes) {
  std::vector<std::string> out;
  std::vector<Framer::Event> events = framer_.Feed(bytes);
  std::vector<bool> interrupt_follows = InterruptFollows(events);
  bool seen_packet = false;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Framer::Event& event = events[i];
    if (std::holds_alternative<Framer::Interrupt>(event) && !seen_packet) {
      pending_interrupt_ = KeepsLateInterrupts();  // idle: for the next resume
    }
    if (std::holds_alternative<Framer::Packet>(event)) seen_packet = true;
    if (const auto* packet = std::get_if<Framer::Packet>(&event)) {
      if (!no_ack_) out.emplace_back("+");
      if (interrupt_follows[i]) RequestInterrupt();
      interrupt_answered_ = false;
      Reply reply = Dispatch(packet->payload);
      // An interrupt the packet did not answer with T02 (a step that
      // completed, a packet that does not resume) waits for the next resume.
      if (interrupt_.exchange(false, std::memory_order_relaxed) && !interrupt_answered_) {
        pending_interrupt_ = KeepsLateInterrupts();
      }
      Send(reply, out);
      if (no_ack_pending_) {
        no_ack_ = true;
        no_ack_pending_ = false;
      }
    } else if (std::holds_alternative<Framer::Nack>(event)) {
      if (!no_ack_ && !last_sent_.empty()) out.push_back(last_sent_);
    } else if (std::holds_alternative<Framer::ChecksumError>(event)) {
      // NOTE: in no-ack mode a corrupted packet is dropped; the client times
      // out. Over TCP or a pipe this does not happen.
      if (!no_ack_) out.emplace_back("-");
    } else if (std::holds_alternative<Framer::Oversized>(event)) {
      if (!no_ack_) out.emplace_back("+");
      Send(Reply::Fail("packet longer than PacketSize"), out);
    } else if (std::holds_alternative<Framer::Malformed>(event)) {
      if (!no_ack_) out.emplace_back("+");
      Send(Reply::BadArguments("malformed escape or run-length encoding"), out);
    }
    // Ack: nothing to do (stray `+` are fine at any time). Interrupt: see
    // above (pending when idle, else consumed by the packet it follows).
  }
  return out;
}

Reply Session::Dispatch(std::string_view packet) {
  const Route* route = FindRoute(packet);
  if (route == nullptr || !HasCapability(target_, route->capability)) return Reply::Empty();
  return route->handler(*this, packet.substr(route->prefix.size()));
}

// The one place where replies become payloads: see reply.h for the mapping.
void Session::Send(const Reply& reply, std::vector<std::string>& out) {
  std::string_view console = reply.console();
  // Each O packet carries as much text as fits in PacketSize once hex-encoded.
  std::size_t per_packet = std::max<std::size_t>(1, (options_.packet_size - 1) / 2);
  while (!console.empty()) {
    std::size_t n = std::min(per_packet, console.size());
    std::string output = "O";
    AppendHexBytes(output, console.substr(0, n));
    SendPacket(output, out);
    console.remove_prefix(n);
  }
  if (const std::string* payload = reply.payload()) {
    SendPacket(*payload, out);
  } else if (const auto* error = std::get_if<Reply::Error>(&reply.body())) {
    std::string text = "E";
    AppendHexByte(text, static_cast<std::uint8_t>(error->code));
    if (state_.negotiated.error_strings) {
      text += ';';
      AppendHexBytes(text, error->message);
    }
    SendPacket(text, out);
  } else if (std::holds_alternative<Reply::Unsupported>(reply.body())) {
    SendPacket("", out);
  }
}

void Session::SendPacket(std::string_view payload, std::vector<std::string>& out) {
  out.push_back(FramePacket(payload));
  // Only ack mode resends a reply (on `-`): no-ack mode keeps no copy.
  if (!no_ack_) last_sent_ = out.back();
}

std::optional<core::ThreadId> Session::ResolveThread(const ThreadSpec& spec) {
  if (spec.pid && spec.pid->value() && *spec.pid->value() != target_.pid()) return std::nullopt;
  auto tid = spec.tid.value();
  if (!tid) return target_.current_thread();
  core::ThreadId thread(*tid);
  if (!IsLiveThread(thread)) return std::nullopt;
  return thread;
}

std::optional<core::ThreadId> Session::RegisterThread(const std::optional<ThreadSpec>& suffix) {
  if (suffix) return ResolveThread(*suffix);
  if (state_.general_thread && IsLiveThread(*state_.general_thread)) {
    return state_.general_thread;
  }
  return target_.current_thread();
}

bool Session::IsLiveThread(core::ThreadId thread) { return target_.HasThread(thread); }

void Session::AppendThread(std::string& out, core::ThreadId thread) {
  AppendThreadId(out, target_.pid(), thread, state_.negotiated.multiprocess);
}

StopReplyOptions Session::stop_reply_options() const {
  const Negotiated& n = state_.negotiated;
  // LLDB (the only client that sends QThreadSuffixSupported) numbers
  // signals as the target does; gdb has numbers of its own.
  StopReplyOptions options{n.multiprocess, n.swbreak, n.hwbreak, n.list_threads_in_stop_reply,
                           n.thread_suffix};
  // gdb computes the frame from fp, sp and pc (what gdbserver expedites) and
  // parses every expedited register at every stop: the others cost it more
  // CPU per stepped instruction than the stub spends on the step
  // (docs/benchmarks.md); a command that reads another register asks `g`
  // once per stop. LLDB reads every general register at every stop.
  options.frame_registers_only = !n.list_threads_in_stop_reply && !n.thread_suffix;
  options.exec_events = n.exec_events;
  return options;
}

std::span<std::uint8_t> Session::Scratch(std::size_t size) {
  if (scratch_.size() < size) scratch_.resize(size);
  return std::span<std::uint8_t>(scratch_).first(size);
}

}  // namespace backstep::gdbstub
