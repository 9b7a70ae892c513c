// Strong types shared by every layer: Position, ThreadId, Address.
//
// A Position is a state index: position 0 is the state before the first
// event, position N (N = event count) the state after the last. Event t turns
// state t into state t+1. Positions are 64-bit everywhere.
//
// Position and ThreadId are distinct types with explicit constructors, so a
// position cannot be passed where an address or a thread is expected.
// Addresses stay plain integers (they take part in arithmetic everywhere).
//
// Thread-safety: plain values.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <limits>

namespace backstep::core {

using Address = std::uint64_t;

struct Position {
  std::uint64_t value = 0;

  constexpr Position() = default;
  constexpr explicit Position(std::uint64_t v) : value(v) {}
  static constexpr Position Max() { return Position(std::numeric_limits<std::uint64_t>::max()); }

  constexpr auto operator<=>(const Position&) const = default;
  constexpr Position operator+(std::uint64_t n) const { return Position(value + n); }
  constexpr Position operator-(std::uint64_t n) const { return Position(value - n); }
  constexpr std::uint64_t operator-(Position other) const { return value - other.value; }
};

struct ThreadId {
  std::uint64_t value = 0;

  constexpr ThreadId() = default;
  constexpr explicit ThreadId(std::uint64_t v) : value(v) {}
  constexpr auto operator<=>(const ThreadId&) const = default;
};

// Which addresses a trace's memory is keyed by.
enum class AddressKind : unsigned char {
  kVirtual,   // addresses as the debugger sees them (usercorn, x64dbg, BAP, tfile)
  kPhysical,  // machine physical memory (REVEN); virtual reads go through the page walk
};

}  // namespace backstep::core

template <>
struct std::hash<backstep::core::Position> {
  std::size_t operator()(backstep::core::Position p) const noexcept {
    return std::hash<std::uint64_t>()(p.value);
  }
};
template <>
struct std::hash<backstep::core::ThreadId> {
  std::size_t operator()(backstep::core::ThreadId t) const noexcept {
    return std::hash<std::uint64_t>()(t.value);
  }
};
