// Shared pieces of the Python extension `backstep._core` (stable ABI).
//
// The extension is built against the limited API (Py_LIMITED_API = 3.11):
// every type is a heap type made with PyType_FromSpec, objects hold C++
// state through owning pointers, and no C++ exception crosses into Python
// (core returns Status; every failure becomes a Python exception).
//
// Long work (index build, searches, provenance) runs on a worker thread
// while the calling thread, without the GIL, polls Python's signal flags
// every 50 ms: Ctrl-C sets core's interrupt flag and the call raises
// KeyboardInterrupt. Short queries (one index lookup) run inline.
//
// Thread-safety: every entry point is called with the GIL held; a Cursor
// object is used under the GIL, so by one thread at a time as core requires.
#pragma once

#define PY_SSIZE_T_CLEAN
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#include <Python.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "backstep/core/cursor.h"
#include "backstep/core/status.h"
#include "backstep/core/trace.h"

namespace backstep::python {

// The module's exception and types, created at import.
struct ModuleState {
  PyObject* trace_error = nullptr;  // backstep.TraceError
  PyObject* trace_type = nullptr;
  PyObject* cursor_type = nullptr;
  PyObject* access_iter_type = nullptr;
  PyObject* pc_iter_type = nullptr;
  PyObject* access_type = nullptr;  // structseq (position, old, new | thread, address, data)
};
ModuleState& State();

// Raises the status as backstep.TraceError (KeyboardInterrupt for
// Interrupted), with attributes file (`file`, else the message's leading
// path, else None), offset (parsed from "offset 0x..."), position (if
// given) and code; returns nullptr.
PyObject* RaiseStatus(const core::Status& status, std::optional<std::uint64_t> position = {},
                      const std::string& file = "");

// Runs `work` on a worker thread without the GIL; Ctrl-C sets `interrupt`.
// Returns false (KeyboardInterrupt set) if a signal handler raised.
bool RunInterruptible(const std::function<void()>& work, std::atomic<bool>& interrupt);

// Converts a Python int to uint64 (negative or too large: ValueError).
bool ToU64(PyObject* obj, std::uint64_t* out, const char* what);

// False with ValueError set when [address, address + length) leaves the
// trace's address space (core::CheckRange), before any work is done.
bool CheckRangeArg(const core::Trace& trace, std::uint64_t address, std::uint64_t length);

// Access items carry the range's old/new bytes only up to this length: a
// longer range would cost (and allocate) its whole length at every write.
inline constexpr std::uint64_t kMaxValueBytes = 4096;

struct TraceObject {
  PyObject_HEAD std::shared_ptr<core::Trace>* trace;
};
struct CursorObject {
  PyObject_HEAD PyObject* owner;  // the TraceObject (keeps the Trace alive)
  std::unique_ptr<core::Cursor>* cursor;
};

bool RegisterTraceType(PyObject* module);
bool RegisterCursorType(PyObject* module);
bool RegisterIteratorTypes(PyObject* module);

PyObject* NewCursor(PyObject* trace_object);
PyObject* NewAccessIter(PyObject* trace_object, std::uint64_t address, std::uint64_t length,
                        std::uint64_t start, std::uint64_t end, bool writes);
PyObject* NewPcIter(PyObject* trace_object, std::uint64_t pc, std::uint64_t start,
                    std::uint64_t end);
core::Trace& TraceOf(PyObject* trace_object);

// Generic dealloc for our heap types: runs `destroy`, frees, drops the type.
void FreeObject(PyObject* self);

}  // namespace backstep::python
