// Status: the result of an operation that returns no value.
//
// backstep never lets an exception cross a module boundary. Every fallible
// operation returns a Status (no value) or an Expected<T> (a value or a
// Status). An OK status costs nothing: it holds no allocation.
//
// Every non-OK message names its context: the file, the section, the byte
// offset, the position. Callers add context with Annotate(), never by
// rewording the message.
//
// Thread-safety: a Status is a value; distinct objects may be used from
// distinct threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace backstep::core {

// The small set of error kinds, in leveldb's manner.
enum class StatusCode : unsigned char {
  kOk = 0,
  kNotFound,         // a file, register, thread or position that does not exist
  kCorruption,       // bytes that do not follow their format
  kUnsupported,      // a valid input that backstep does not handle (yet)
  kInvalidArgument,  // a request that makes no sense (bad address, bad option)
  kIOError,          // the operating system refused (open, read, rename, ...)
  kOutOfRange,       // past the end of the trace or of a buffer
  kInterrupted,      // stopped on request (Ctrl-C, gdb's \x03)
};

class Status {
 public:
  Status() = default;  // OK

  static Status Ok() { return Status(); }
  static Status NotFound(std::string_view msg) { return Status(StatusCode::kNotFound, msg); }
  static Status Corruption(std::string_view msg) { return Status(StatusCode::kCorruption, msg); }
  static Status Unsupported(std::string_view msg) { return Status(StatusCode::kUnsupported, msg); }
  static Status InvalidArgument(std::string_view msg) {
    return Status(StatusCode::kInvalidArgument, msg);
  }
  static Status IOError(std::string_view msg) { return Status(StatusCode::kIOError, msg); }
  static Status OutOfRange(std::string_view msg) { return Status(StatusCode::kOutOfRange, msg); }
  static Status Interrupted(std::string_view msg) { return Status(StatusCode::kInterrupted, msg); }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  // The bare message, without the code's name. Empty when OK.
  const std::string& message() const;
  // "Corruption: trace.bin: events at offset 0x1234: ..." ("OK" when OK).
  std::string ToString() const;

  // Returns a copy whose message is prefixed with `context + ": "`.
  // Use it to add the file name, section or position at each layer.
  Status Annotate(std::string_view context) const;

  bool IsNotFound() const { return code() == StatusCode::kNotFound; }
  bool IsCorruption() const { return code() == StatusCode::kCorruption; }
  bool IsUnsupported() const { return code() == StatusCode::kUnsupported; }
  bool IsOutOfRange() const { return code() == StatusCode::kOutOfRange; }
  bool IsInterrupted() const { return code() == StatusCode::kInterrupted; }

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  Status(StatusCode code, std::string_view msg)
      : rep_(std::make_shared<const Rep>(Rep{code, std::string(msg)})) {}

  std::shared_ptr<const Rep> rep_;  // null when OK
};

// Name of a code: "NotFound", "Corruption", ...
std::string_view StatusCodeName(StatusCode code);

}  // namespace backstep::core

// Evaluates `expr` (a Status); returns it from the enclosing function if not OK.
#define BACKSTEP_RETURN_IF_ERROR(expr)            \
  do {                                            \
    ::backstep::core::Status _bs_status = (expr); \
    if (!_bs_status.ok()) return _bs_status;      \
  } while (0)
