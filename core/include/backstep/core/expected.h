// Expected<T>: either a value of type T or a non-OK Status.
//
// std::expected is C++23; this is the small subset backstep needs.
// REQUIRES for value access: ok(). Accessing the value of an error, or the
// error of a value, is a bug and asserts.
//
// Thread-safety: as for T.
#pragma once

#include <cassert>
#include <utility>
#include <variant>

#include "backstep/core/status.h"

namespace backstep::core {

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}        // NOLINT(runtime/explicit)
  Expected(Status status) : v_(std::move(status)) {  // NOLINT(runtime/explicit)
    assert(!std::get<Status>(v_).ok() && "Expected built from an OK Status");
  }

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // The error; an OK Status when this holds a value.
  Status status() const { return ok() ? Status() : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace backstep::core

// `BACKSTEP_ASSIGN_OR_RETURN(auto x, Expr())`: declares x from the value of an
// Expected, or returns its Status from the enclosing function.
#define BACKSTEP_CONCAT_INNER(a, b) a##b
#define BACKSTEP_CONCAT(a, b) BACKSTEP_CONCAT_INNER(a, b)
#define BACKSTEP_ASSIGN_OR_RETURN(decl, expr)                 \
  auto BACKSTEP_CONCAT(_bs_expected_, __LINE__) = (expr);     \
  if (!BACKSTEP_CONCAT(_bs_expected_, __LINE__).ok())         \
    return BACKSTEP_CONCAT(_bs_expected_, __LINE__).status(); \
  decl = std::move(BACKSTEP_CONCAT(_bs_expected_, __LINE__)).value()
