// Thread ids on the wire: the one place that parses and formats them.
//
// Forms (docs/protocol.md §1), parsed always, whatever was negotiated:
//   <tid>            "1", "a"; "-1" = all threads, "0" = any thread
//   p<pid>.<tid>     "p1.1", "p1.-1", "p1.0"
//   p<pid>           all threads of <pid> ("p1" = "p1.-1")
// Written as p<pid>.<tid> only when multiprocess was negotiated.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "backstep/core/types.h"

namespace backstep::gdbstub {

// One id field: any (0), all (-1) or a value.
class WireId {
 public:
  static WireId Any() { return WireId(Kind::kAny, 0); }
  static WireId All() { return WireId(Kind::kAll, 0); }
  // REQUIRES: value != 0.
  static WireId Of(std::uint64_t value) { return WireId(Kind::kValue, value); }

  bool is_any() const { return kind_ == Kind::kAny; }
  bool is_all() const { return kind_ == Kind::kAll; }
  std::optional<std::uint64_t> value() const {
    if (kind_ != Kind::kValue) return std::nullopt;
    return value_;
  }
  bool operator==(const WireId&) const = default;

 private:
  enum class Kind : unsigned char { kAny, kAll, kValue };
  WireId(Kind kind, std::uint64_t value) : kind_(kind), value_(value) {}
  Kind kind_;
  std::uint64_t value_;
};

struct ThreadSpec {
  std::optional<WireId> pid;  // present only in the p<pid>... forms
  WireId tid = WireId::Any();
  bool operator==(const ThreadSpec&) const = default;
};

// Parses a whole string as one thread id; nullopt on anything else.
std::optional<ThreadSpec> ParseThreadSpec(std::string_view text);

// Splits LLDB's thread suffix (QThreadSuffixSupported) off a packet's
// arguments: "0;thread:1;" -> {"0", thread 1}. The trailing `;` is optional.
// Without a suffix `thread` is nullopt; nullopt overall if the suffix is
// present but malformed.
struct ThreadSuffixSplit {
  std::string_view body;
  std::optional<ThreadSpec> thread;
};
std::optional<ThreadSuffixSplit> SplitThreadSuffix(std::string_view args);

// Appends `tid` as p<pid>.<tid> (multiprocess) or <tid>, in hex.
void AppendThreadId(std::string& out, std::uint64_t pid, core::ThreadId tid, bool multiprocess);

}  // namespace backstep::gdbstub
