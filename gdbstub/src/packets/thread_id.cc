#include "packets/thread_id.h"

#include "protocol/hex.h"

namespace backstep::gdbstub {
namespace {

std::optional<WireId> ParseIdField(std::string_view text) {
  if (text == "-1") return WireId::All();
  auto value = ParseHexU64(text);
  if (!value) return std::nullopt;
  return *value == 0 ? WireId::Any() : WireId::Of(*value);
}

}  // namespace

std::optional<ThreadSpec> ParseThreadSpec(std::string_view text) {
  if (!text.starts_with('p')) {
    auto tid = ParseIdField(text);
    if (!tid) return std::nullopt;
    return ThreadSpec{std::nullopt, *tid};
  }
  text.remove_prefix(1);
  std::size_t dot = text.find('.');
  auto pid = ParseIdField(text.substr(0, dot));
  if (!pid) return std::nullopt;
  if (dot == std::string_view::npos) return ThreadSpec{pid, WireId::All()};
  auto tid = ParseIdField(text.substr(dot + 1));
  if (!tid) return std::nullopt;
  return ThreadSpec{pid, *tid};
}

std::optional<ThreadSuffixSplit> SplitThreadSuffix(std::string_view args) {
  constexpr std::string_view kSuffix = ";thread:";
  std::size_t at = args.find(kSuffix);
  if (at == std::string_view::npos) return ThreadSuffixSplit{args, std::nullopt};
  std::string_view id = args.substr(at + kSuffix.size());
  if (id.ends_with(';')) id.remove_suffix(1);
  auto thread = ParseThreadSpec(id);
  if (!thread) return std::nullopt;
  return ThreadSuffixSplit{args.substr(0, at), thread};
}

void AppendThreadId(std::string& out, std::uint64_t pid, core::ThreadId tid, bool multiprocess) {
  if (multiprocess) {
    out.push_back('p');
    AppendHexNumber(out, pid);
    out.push_back('.');
  }
  AppendHexNumber(out, tid.value);
}

}  // namespace backstep::gdbstub
