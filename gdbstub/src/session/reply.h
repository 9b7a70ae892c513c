// Reply: what a packet handler answers, before it becomes wire bytes.
//
// Handlers never write error bytes themselves: they return Reply::Error or
// Reply::FromStatus, and the session maps every reply to payloads in one
// place (Session::Encode):
//
//   Empty (unsupported)        ""                      `$#00`
//   Error, error strings off   "E<code>"               `$E01#a6`
//   Error, QEnableErrorStrings "E<code>;<hex message>" (LLDB's format)
//   Packet                     the payload as is
//   None                       nothing (the packet has no reply: `R`)
//
// `console` holds text sent before the reply as `O<hex>` packets (qRcmd).
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "backstep/core/status.h"

namespace backstep::gdbstub {

// The error numbers the stub sends. docs/protocol.md fixes E01 for refused writes,
// unreadable memory and dead threads; clients print but do not interpret them.
enum class ErrorCode : std::uint8_t {
  kFailed = 0x01,           // the request is valid but cannot be served
  kInvalidArgument = 0x16,  // EINVAL: malformed arguments
};

class Reply {
 public:
  struct Unsupported {};
  struct NoReply {};
  struct Error {
    ErrorCode code;
    std::string message;  // for QEnableErrorStrings and logs
  };

  static Reply Packet(std::string payload) { return Reply(std::move(payload)); }
  static Reply Ok() { return Reply(std::string("OK")); }
  static Reply Empty() { return Reply(Unsupported{}); }
  static Reply None() { return Reply(NoReply{}); }
  static Reply Fail(std::string_view message) {
    return Reply(Error{ErrorCode::kFailed, std::string(message)});
  }
  static Reply BadArguments(std::string_view message) {
    return Reply(Error{ErrorCode::kInvalidArgument, std::string(message)});
  }
  // kUnsupported -> Empty; kInvalidArgument -> E16; any other error -> E01.
  // REQUIRES: !status.ok().
  static Reply FromStatus(const core::Status& status);

  // Adds console text sent before the reply as O packets.
  Reply& WithConsole(std::string text) {
    console_ = std::move(text);
    return *this;
  }

  const std::variant<std::string, Unsupported, Error, NoReply>& body() const { return body_; }
  const std::string& console() const { return console_; }
  // The payload of a Packet reply; nullptr for Empty and Error.
  const std::string* payload() const { return std::get_if<std::string>(&body_); }

 private:
  explicit Reply(std::variant<std::string, Unsupported, Error, NoReply> body)
      : body_(std::move(body)) {}

  std::variant<std::string, Unsupported, Error, NoReply> body_;
  std::string console_;
};

}  // namespace backstep::gdbstub
