// Session: one client's conversation with the stub.
//
// Layering: protocol/ (PacketFramer, FramePacket) turns bytes into packets
// and back; the session owns the per-client state (ack mode, negotiated
// features, Hg/Hc threads, the selected trace frame, the last stop) and
// dispatches each packet through the packet table (packet_table.h) to one
// handler in packets/; handlers talk to the Target. Transport (sockets,
// Asio) lives elsewhere: the session is fed bytes and returns bytes.
//
// Acks: in ack mode every received packet is answered `+` before its reply,
// a bad checksum `-`, and a `-` from the client resends our last packet.
// QStartNoAckMode is answered `+` `$OK#9a` and no-ack mode starts after it;
// stray `+` are ignored at any time.
//
// Interrupts: a resume receives a flag that RequestInterrupt() sets (the
// transport calls it when 0x03 arrives while a resume is being computed, and
// drops that byte). A 0x03 that arrives in the same OnBytes() call right
// after a resume packet interrupts that resume. One that no resume honoured
// (it arrived while idle, before the chunk's first packet, or after a step
// that completed anyway) stays pending: the next resume stops at once with
// T02 without moving, as a real process with a pending SIGINT does under
// gdbserver. gdb relies on this when it interrupts a
// command made of many short resumes (a software watchpoint steps one
// instruction per `bs`): its 0x03 usually lands between two steps. An LLDB
// client (it negotiated QThreadSuffixSupported or QListThreadsInStopReply)
// counts the last stop as the answer to such a 0x03: it is dropped.
//
// Thread-safety: one thread calls everything except RequestInterrupt(),
// which may be called from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backstep/core/types.h"
#include "backstep/gdbstub/stop_reason.h"
#include "backstep/gdbstub/target.h"
#include "packets/thread_id.h"
#include "protocol/packet_framer.h"
#include "session/reply.h"
#include "session/resume_runner.h"

namespace backstep::gdbstub {

inline constexpr std::size_t kMinPacketSize = 16;

struct SessionOptions {
  // The PacketSize we advertise: the largest packet payload we accept. It
  // also bounds what one reply carries (m, qXfer, O packets), so no request
  // can make the stub allocate more than about this much. At least
  // kMinPacketSize; gdb needs 2x the `g` block plus overhead.
  std::size_t packet_size = 0x4000;
};

// Features agreed with the client.
struct Negotiated {
  bool multiprocess = false;  // both sent multiprocess+: p<pid>.<tid> ids
  bool swbreak = false;       // client offered swbreak+ and the target has breakpoints
  bool hwbreak = false;
  bool list_threads_in_stop_reply = false;  // QListThreadsInStopReply -> OK
  bool thread_suffix = false;               // QThreadSuffixSupported -> OK
  bool error_strings = false;               // QEnableErrorStrings -> OK
  bool extended = false;                    // `!`: vKill keeps the session, vRun/R restart
  bool exec_events = false;                 // client offered exec-events+ (gdb)
};

// Per-client state that handlers read and update.
struct SessionState {
  Negotiated negotiated;
  std::optional<core::ThreadId> general_thread;   // Hg; nullopt: the current thread
  std::optional<core::ThreadId> continue_thread;  // Hc; nullopt: any thread
  std::optional<std::uint32_t> selected_frame;    // QTFrame; nullopt: none
  StopReason last_stop = DoneStep{};              // for `?`
  std::vector<core::ThreadId> thread_list_rest;   // qsThreadInfo continuation
  std::size_t tracepoint_upload_next = 0;         // qTsP continuation
  std::size_t variable_upload_next = 0;           // qTsV continuation
  std::optional<std::string> reported_libraries;  // libraries-svr4 as LLDB last got it
};

class Session {
 public:
  // `target` and `runner` must outlive the session. `runner` runs the
  // resumes that may take long (resume_runner.h); nullptr: inline.
  explicit Session(Target& target, SessionOptions options = {}, ResumeRunner* runner = nullptr);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Feeds bytes received from the client; returns what to send back, in
  // order, one element per ack or packet ("+", "$OK#9a"). Each reply is
  // bounded by about PacketSize, so the output grows with the number of
  // packets in `bytes`: feed socket-sized chunks (real clients wait for each
  // reply anyway).
  std::vector<std::string> OnBytes(std::span<const std::uint8_t> bytes);

  // Thread-safe: asks the resume in progress to stop where it is (T02).
  void RequestInterrupt() { interrupt_.store(true, std::memory_order_relaxed); }

  bool no_ack_mode() const { return no_ack_; }
  // True after D, vKill or k: the transport closes once the reply is sent.
  bool finished() const { return finished_; }

  // ---- For packet handlers.
  Target& target() { return target_; }
  const SessionOptions& options() const { return options_; }
  SessionState& state() { return state_; }
  // The reply being built switches the session to no-ack mode once sent.
  void StartNoAckModeAfterReply() { no_ack_pending_ = true; }
  void Finish() { finished_ = true; }
  const std::atomic<bool>* interrupt_flag() const { return &interrupt_; }
  // True once per idle 0x03 (see Interrupts above): the resume being handled
  // must stop at once with Interrupted.
  bool TakePendingInterrupt() { return std::exchange(pending_interrupt_, false); }
  // The resume being handled stopped with Interrupted: the 0x03 is answered.
  void NoteInterruptAnswered() { interrupt_answered_ = true; }
  // Runs a continue or range step through the session's ResumeRunner.
  core::Expected<StopReason> RunLongResume(const ResumeRunner::Resume& resume) {
    return runner_ ? runner_->Run(resume) : resume();
  }

  // The target thread `spec` names: a value must be a live thread (and the
  // pid, if given, ours); any/all resolve to the current thread.
  std::optional<core::ThreadId> ResolveThread(const ThreadSpec& spec);
  // The thread g/p read: `suffix` when given, else Hg, else the current one.
  std::optional<core::ThreadId> RegisterThread(const std::optional<ThreadSpec>& suffix);
  bool IsLiveThread(core::ThreadId thread);
  // Appends a thread id in the negotiated form.
  void AppendThread(std::string& out, core::ThreadId thread);
  StopReplyOptions stop_reply_options() const;
  // A reusable buffer of `size` bytes (memory reads without allocating).
  std::span<std::uint8_t> Scratch(std::size_t size);

 private:
  Reply Dispatch(std::string_view packet);
  // Whether a 0x03 that no resume answered waits for the next resume.
  bool KeepsLateInterrupts() const;
  void Send(const Reply& reply, std::vector<std::string>& out);
  void SendPacket(std::string_view payload, std::vector<std::string>& out);

  Target& target_;
  SessionOptions options_;
  ResumeRunner* runner_;
  PacketFramer framer_;
  SessionState state_;
  bool no_ack_ = false;
  bool no_ack_pending_ = false;
  bool finished_ = false;
  std::string last_sent_;  // for retransmission on `-`
  std::vector<std::uint8_t> scratch_;
  std::atomic<bool> interrupt_{false};
  bool pending_interrupt_ = false;   // an unanswered 0x03 awaiting the next resume
  bool interrupt_answered_ = false;  // set by the packet being dispatched
};

}  // namespace backstep::gdbstub
