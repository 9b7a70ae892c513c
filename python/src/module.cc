// backstep._core: module initialisation, open(), errors and the
// interruptible runner (py_common.h).
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "backstep/core/number.h"
#include "backstep/core/search.h"
#include "py_common.h"

namespace backstep::python {
namespace {

ModuleState g_state;

// "... offset 0x1a2b ..." -> 0x1a2b (the hex digits that follow "offset ").
std::optional<std::uint64_t> ParseOffset(const std::string& message) {
  const std::size_t at = message.find("offset 0x");
  if (at == std::string::npos) return std::nullopt;
  const std::size_t end = message.find_first_not_of("0123456789abcdefABCDEF", at + 9);
  return core::ParseNumber(std::string_view(message).substr(at + 7, end - (at + 7)));
}

void SetAttr(PyObject* obj, const char* name, PyObject* value) {
  if (!value) {
    PyErr_Clear();
    return;
  }
  PyObject_SetAttrString(obj, name, value);
  Py_DECREF(value);
}

// A progress line on stderr when it is a terminal (index builds).
core::ProgressFn TtyProgress(std::atomic<bool>& interrupt, bool show) {
  return [&interrupt, show, last = std::chrono::steady_clock::time_point()](
             std::string_view phase, std::uint64_t done, std::uint64_t total) mutable {
    if (show) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last > std::chrono::milliseconds(200) || (total && done >= total)) {
        last = now;
        if (total) {
          std::fprintf(stderr, "\rbackstep: %.*s %3u%%", static_cast<int>(phase.size()),
                       phase.data(), static_cast<unsigned>(done * 100 / total));
        } else {
          std::fprintf(stderr, "\rbackstep: %.*s %llu", static_cast<int>(phase.size()),
                       phase.data(), static_cast<unsigned long long>(done));
        }
        std::fflush(stderr);
      }
    }
    return !interrupt.load();
  };
}

PyObject* Open(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"path", "cache_dir", "progress", "build_index", nullptr};
  const char* path = nullptr;
  const char* cache_dir = nullptr;
  PyObject* progress = Py_None;
  int build_index = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|zOp", const_cast<char**>(kwlist), &path,
                                   &cache_dir, &progress, &build_index)) {
    return nullptr;
  }
  const bool show = progress == Py_None ? isatty(2) : PyObject_IsTrue(progress) == 1;
  std::atomic<bool> interrupt{false};
  core::OpenOptions options;
  if (cache_dir) options.cache_dir = cache_dir;
  options.build_index = build_index != 0;
  options.progress = TtyProgress(interrupt, show);
  std::optional<core::Expected<std::shared_ptr<core::Trace>>> result;
  const std::string path_copy = path;
  if (!RunInterruptible([&] { result.emplace(core::Trace::Open(path_copy, options)); },
                        interrupt)) {
    return nullptr;
  }
  if (show) std::fputs("\r\033[K", stderr);
  if (!result->ok()) return RaiseStatus(result->status(), {}, path_copy);
  auto* type = reinterpret_cast<PyTypeObject*>(State().trace_type);
  PyObject* obj = PyType_GenericAlloc(type, 0);
  if (!obj) return nullptr;
  reinterpret_cast<TraceObject*>(obj)->trace =
      new std::shared_ptr<core::Trace>(std::move(*result).value());
  return obj;
}

PyMethodDef kModuleMethods[] = {
    {"open", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(Open)),
     METH_VARARGS | METH_KEYWORDS,
     "open(path, cache_dir=None, progress=None, build_index=True) -> Trace\n\n"
     "Opens a trace of any supported format, reusing its index or building it\n"
     "(progress on stderr when it is a terminal, or when progress=True)."},
    {nullptr, nullptr, 0, nullptr},
};

int Exec(PyObject* module) {
  g_state.trace_error = PyErr_NewExceptionWithDoc(
      "backstep.TraceError",
      "An error of the trace or of a query: attributes file, offset, position, code.", nullptr,
      nullptr);
  if (!g_state.trace_error) return -1;
  Py_INCREF(g_state.trace_error);
  if (PyModule_AddObject(module, "TraceError", g_state.trace_error) < 0) return -1;
  if (PyModule_AddIntConstant(module, "MAX_VALUE_BYTES", kMaxValueBytes) < 0) return -1;
  if (!RegisterTraceType(module) || !RegisterCursorType(module) || !RegisterIteratorTypes(module)) {
    return -1;
  }
  return 0;
}

PyModuleDef_Slot kSlots[] = {{Py_mod_exec, reinterpret_cast<void*>(Exec)}, {0, nullptr}};

PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT,
    "_core",
    "backstep._core: the C++ core of the backstep module (use `import backstep`).",
    0,
    kModuleMethods,
    kSlots,
    nullptr,
    nullptr,
    nullptr,
};

}  // namespace

ModuleState& State() { return g_state; }

PyObject* RaiseStatus(const core::Status& status, std::optional<std::uint64_t> position,
                      const std::string& file) {
  if (status.IsInterrupted()) {
    PyErr_SetString(PyExc_KeyboardInterrupt, status.message().c_str());
    return nullptr;
  }
  const std::string message = status.ToString();
  PyObject* exc = PyObject_CallFunction(g_state.trace_error, "s", message.c_str());
  if (!exc) return nullptr;
  // The file is the message's first "word:" when it names one.
  const std::string& bare = status.message();
  const std::size_t colon = bare.find(": ");
  if (!file.empty()) {
    SetAttr(exc, "file", PyUnicode_FromString(file.c_str()));
  } else if (colon != std::string::npos && bare.find('/') < colon) {
    SetAttr(exc, "file", PyUnicode_FromStringAndSize(bare.data(), static_cast<Py_ssize_t>(colon)));
  } else {
    SetAttr(exc, "file", Py_NewRef(Py_None));
  }
  auto offset = ParseOffset(bare);
  SetAttr(exc, "offset", offset ? PyLong_FromUnsignedLongLong(*offset) : Py_NewRef(Py_None));
  SetAttr(exc, "position", position ? PyLong_FromUnsignedLongLong(*position) : Py_NewRef(Py_None));
  SetAttr(exc, "code",
          PyUnicode_FromString(std::string(core::StatusCodeName(status.code())).c_str()));
  PyErr_SetObject(g_state.trace_error, exc);
  Py_DECREF(exc);
  return nullptr;
}

bool RunInterruptible(const std::function<void()>& work, std::atomic<bool>& interrupt) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  bool raised = false;
  std::thread worker([&] {
    work();
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    cv.notify_all();
  });
  while (true) {
    bool finished;
    Py_BEGIN_ALLOW_THREADS std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return done; });
    finished = done;
    Py_END_ALLOW_THREADS if (finished) break;
    if (!raised && PyErr_CheckSignals() < 0) {
      raised = true;  // KeyboardInterrupt (or the handler's exception) is set
      interrupt.store(true);
    }
  }
  Py_BEGIN_ALLOW_THREADS worker.join();
  Py_END_ALLOW_THREADS return !raised;
}

bool ToU64(PyObject* obj, std::uint64_t* out, const char* what) {
  if (!PyLong_Check(obj)) {
    PyErr_Format(PyExc_TypeError, "%s must be an int", what);
    return false;
  }
  const unsigned long long v = PyLong_AsUnsignedLongLong(obj);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "%s must be in 0..2**64-1", what);
    return false;
  }
  *out = v;
  return true;
}

bool CheckRangeArg(const core::Trace& trace, std::uint64_t address, std::uint64_t length) {
  const core::Status s = core::CheckRange(trace, address, length);
  if (s.ok()) return true;
  PyErr_SetString(PyExc_ValueError, s.message().c_str());
  return false;
}

void FreeObject(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  auto free_fn = reinterpret_cast<freefunc>(PyType_GetSlot(type, Py_tp_free));
  free_fn(self);
  Py_DECREF(type);
}

}  // namespace backstep::python

PyMODINIT_FUNC PyInit__core(void) { return PyModuleDef_Init(&backstep::python::kModule); }
