// backstep._core.Cursor: the state of a trace at one position
// (core::Cursor), and resuming with stop conditions (core::RunUntil).
#include <vector>

#include "backstep/core/search.h"
#include "py_common.h"

namespace backstep::python {
namespace {

core::Cursor& Of(PyObject* self) { return **reinterpret_cast<CursorObject*>(self)->cursor; }

void Dealloc(PyObject* self) {
  auto* c = reinterpret_cast<CursorObject*>(self);
  delete c->cursor;
  Py_XDECREF(c->owner);
  FreeObject(self);
}

PyObject* GetPosition(PyObject* self, void*) {
  return PyLong_FromUnsignedLongLong(Of(self).position().value);
}
PyObject* GetThread(PyObject* self, void*) {
  return PyLong_FromUnsignedLongLong(Of(self).current_thread().value);
}
PyObject* GetThreads(PyObject* self, void*) {
  PyObject* list = PyList_New(0);
  for (core::ThreadId t : Of(self).threads()) {
    PyObject* v = PyLong_FromUnsignedLongLong(t.value);
    PyList_Append(list, v);
    Py_DECREF(v);
  }
  return list;
}

PyObject* Seek(PyObject* self, PyObject* arg) {
  std::uint64_t p;
  if (!ToU64(arg, &p, "position")) return nullptr;
  core::Status s = Of(self).Seek(core::Position(p));
  if (!s.ok()) return RaiseStatus(s, p, Of(self).trace().path());
  Py_RETURN_NONE;
}

// step(n): |n| events forward (n > 0) or backward; returns how many it
// moved (fewer at the ends of the trace).
PyObject* Step(PyObject* self, PyObject* arg) {
  const long long n = PyLong_AsLongLong(arg);
  if (n == -1 && PyErr_Occurred()) return nullptr;
  core::Cursor& c = Of(self);
  const std::uint64_t here = c.position().value;
  std::uint64_t target;
  if (n >= 0) {
    target = std::min<std::uint64_t>(here + static_cast<std::uint64_t>(n), c.trace().event_count());
  } else {
    const std::uint64_t back = static_cast<std::uint64_t>(-(n + 1)) + 1;
    target = back > here ? 0 : here - back;
  }
  core::Status s = (target + 1 == here)   ? c.StepBackward()
                   : (target == here + 1) ? c.StepForward()
                   : target == here       ? core::Status()
                                          : c.Seek(core::Position(target));
  if (!s.ok()) return RaiseStatus(s, target, Of(self).trace().path());
  return PyLong_FromLongLong(static_cast<long long>(target) - static_cast<long long>(here));
}

bool ThreadArg(PyObject* self, PyObject* obj, core::ThreadId* out) {
  if (obj == nullptr || obj == Py_None) {
    *out = Of(self).current_thread();
    return true;
  }
  std::uint64_t t;
  if (!ToU64(obj, &t, "thread")) return false;
  *out = core::ThreadId(t);
  return true;
}

PyObject* Pc(PyObject* self, PyObject* args) {
  PyObject* thread_obj = Py_None;
  if (!PyArg_ParseTuple(args, "|O", &thread_obj)) return nullptr;
  core::ThreadId thread;
  if (!ThreadArg(self, thread_obj, &thread)) return nullptr;
  auto pc = Of(self).Pc(thread);
  if (!pc) Py_RETURN_NONE;
  return PyLong_FromUnsignedLongLong(*pc);
}

// reg(name, thread=None) -> bytes (little-endian) | None when unknown.
// KeyError for a name the architecture does not have.
PyObject* Reg(PyObject* self, PyObject* args) {
  const char* name;
  PyObject* thread_obj = Py_None;
  if (!PyArg_ParseTuple(args, "s|O", &name, &thread_obj)) return nullptr;
  core::ThreadId thread;
  if (!ThreadArg(self, thread_obj, &thread)) return nullptr;
  core::Cursor& c = Of(self);
  auto id = c.trace().arch().Find(name);
  if (!id) {
    PyErr_Format(PyExc_KeyError, "%s", name);
    return nullptr;
  }
  auto regs = c.Registers(thread);
  if (!regs.ok()) return RaiseStatus(regs.status(), c.position().value, Of(self).trace().path());
  std::vector<std::uint8_t> value(c.trace().arch().info(*id).size);
  if (!(*regs)->Read(*id, value)) Py_RETURN_NONE;
  return PyBytes_FromStringAndSize(reinterpret_cast<const char*>(value.data()),
                                   static_cast<Py_ssize_t>(value.size()));
}

// read(addr, n, physical=False) -> (bytes, mask): mask[i] is 1 for a known byte.
PyObject* Read(PyObject* self, PyObject* args) {
  PyObject *a, *n;
  int physical = 0;
  if (!PyArg_ParseTuple(args, "OO|p", &a, &n, &physical)) return nullptr;
  std::uint64_t address, length;
  if (!ToU64(a, &address, "address") || !ToU64(n, &length, "length")) return nullptr;
  if (!CheckRangeArg(Of(self).trace(), address, length)) return nullptr;
  if (length == 0) return Py_BuildValue("(y#y#)", "", Py_ssize_t(0), "", Py_ssize_t(0));
  if (length > (std::uint64_t(1) << 30)) {
    PyErr_SetString(PyExc_ValueError, "length above 1 GiB");
    return nullptr;
  }
  std::vector<std::uint8_t> out(length), known(length);
  core::Cursor& c = Of(self);
  core::Status s = c.ReadMemory(
      address, out, known, physical ? core::AddressKind::kPhysical : core::AddressKind::kVirtual);
  if (!s.ok()) return RaiseStatus(s, c.position().value, Of(self).trace().path());
  return Py_BuildValue("(y#y#)", reinterpret_cast<const char*>(out.data()),
                       static_cast<Py_ssize_t>(length), reinterpret_cast<const char*>(known.data()),
                       static_cast<Py_ssize_t>(length));
}

const char* ReasonName(core::StopEvent::Reason r) {
  switch (r) {
    case core::StopEvent::Reason::kBreakpoint:
      return "breakpoint";
    case core::StopEvent::Reason::kWatch:
      return "watch";
    case core::StopEvent::Reason::kHistoryBegin:
      return "begin";
    case core::StopEvent::Reason::kHistoryEnd:
      return "end";
    case core::StopEvent::Reason::kFence:
      return "fence";
    case core::StopEvent::Reason::kInterrupted:
      return "interrupted";
  }
  return "?";
}

// run(forward, breakpoints, watches, thread, fence_low, fence_high)
// watches: [(addr, n, "w"|"r"|"a")]. Moves the cursor to the stop and
// returns (reason, position, thread, address, kind, event).
PyObject* Run(PyObject* self, PyObject* args) {
  int forward;
  PyObject *bps, *watches, *thread_obj, *lo_obj, *hi_obj;
  if (!PyArg_ParseTuple(args, "pOOOOO", &forward, &bps, &watches, &thread_obj, &lo_obj, &hi_obj)) {
    return nullptr;
  }
  core::StopCondition cond;
  std::atomic<bool> interrupt{false};
  cond.interrupt = &interrupt;
  PyObject* it = PyObject_GetIter(bps);
  if (!it) return nullptr;
  while (PyObject* item = PyIter_Next(it)) {
    std::uint64_t pc;
    const bool ok = ToU64(item, &pc, "breakpoint");
    Py_DECREF(item);
    if (!ok) {
      Py_DECREF(it);
      return nullptr;
    }
    cond.breakpoints.push_back(pc);
  }
  Py_DECREF(it);
  if (PyErr_Occurred()) return nullptr;
  it = PyObject_GetIter(watches);
  if (!it) return nullptr;
  while (PyObject* item = PyIter_Next(it)) {
    PyObject *a, *n;
    const char* kind = "w";
    const bool parsed = PyArg_ParseTuple(item, "OO|s", &a, &n, &kind);
    core::Watch w;
    bool ok = parsed && ToU64(a, &w.address, "watch address") &&
              ToU64(n, &w.length, "watch length") &&
              CheckRangeArg(Of(self).trace(), w.address, w.length);
    if (ok && w.length == 0) {
      PyErr_SetString(PyExc_ValueError, "watch length must be positive");
      ok = false;
    }
    if (ok) {
      const std::string k = kind;
      if (k == "w") {
        w.kind = core::WatchKind::kWrite;
      } else if (k == "r") {
        w.kind = core::WatchKind::kRead;
      } else if (k == "a" || k == "rw") {
        w.kind = core::WatchKind::kAccess;
      } else {
        PyErr_SetString(PyExc_ValueError, "watch kind must be 'w', 'r' or 'a'");
        ok = false;
      }
    }
    Py_DECREF(item);
    if (!ok) {
      Py_DECREF(it);
      return nullptr;
    }
    cond.watches.push_back(w);
  }
  Py_DECREF(it);
  if (PyErr_Occurred()) return nullptr;
  if (thread_obj != Py_None) {
    std::uint64_t t;
    if (!ToU64(thread_obj, &t, "thread")) return nullptr;
    cond.thread = core::ThreadId(t);
    cond.thread_filters_watches = true;  // run(thread=T): only T's stops, watches included
  }
  std::uint64_t lo = 0, hi = UINT64_MAX;
  if (lo_obj != Py_None && !ToU64(lo_obj, &lo, "fence")) return nullptr;
  if (hi_obj != Py_None && !ToU64(hi_obj, &hi, "fence")) return nullptr;
  cond.fence_low = core::Position(lo);
  cond.fence_high = core::Position(hi);

  core::Cursor& c = Of(self);
  const core::Position from = c.position();
  std::optional<core::Expected<core::StopEvent>> result;
  if (!RunInterruptible(
          [&] {
            result.emplace(core::RunUntil(
                c.trace(), from, forward ? core::Direction::kForward : core::Direction::kBackward,
                cond));
          },
          interrupt)) {
    return nullptr;
  }
  if (!result->ok()) return RaiseStatus(result->status(), from.value, Of(self).trace().path());
  const core::StopEvent& stop = result->value();
  core::Status s = c.Seek(stop.position);
  if (!s.ok()) return RaiseStatus(s, stop.position.value, Of(self).trace().path());
  const char* kind = stop.watch_kind == core::WatchKind::kWrite  ? "w"
                     : stop.watch_kind == core::WatchKind::kRead ? "r"
                                                                 : "a";
  return Py_BuildValue("(sKKKsK)", ReasonName(stop.reason),
                       static_cast<unsigned long long>(stop.position.value),
                       static_cast<unsigned long long>(stop.thread.value),
                       static_cast<unsigned long long>(stop.address), kind,
                       static_cast<unsigned long long>(stop.event));
}

PyObject* Event(PyObject* self, PyObject*) {
  auto ev = Of(self).CurrentEvent();
  if (!ev.ok()) {
    if (ev.status().IsNotFound()) Py_RETURN_NONE;
    return RaiseStatus(ev.status(), Of(self).position().value, Of(self).trace().path());
  }
  const std::string kind(core::EventKindName((*ev)->kind));
  return PyUnicode_FromString(kind.c_str());
}

PyGetSetDef kGetSet[] = {
    {"position", GetPosition, nullptr, "the current position", nullptr},
    {"thread", GetThread, nullptr, "thread of the next event", nullptr},
    {"threads", GetThreads, nullptr, "threads that exist here", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMethodDef kMethods[] = {
    {"seek", Seek, METH_O, "seek(position)"},
    {"step", Step, METH_O, "step(n) -> events moved (negative: backward)"},
    {"pc", Pc, METH_VARARGS, "pc(thread=None) -> int | None"},
    {"reg", Reg, METH_VARARGS, "reg(name, thread=None) -> bytes | None (little-endian)"},
    {"read", Read, METH_VARARGS, "read(addr, n, physical=False) -> (bytes, mask)"},
    {"run", Run, METH_VARARGS,
     "run(forward, breakpoints, watches, thread, fence_low, fence_high) -> "
     "(reason, position, thread, address, kind, event)"},
    {"event_kind", Event, METH_NOARGS, "kind of the next event, or None at the end"},
    {nullptr, nullptr, 0, nullptr},
};

PyType_Slot kSlots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(Dealloc)},
    {Py_tp_getset, kGetSet},
    {Py_tp_methods, kMethods},
    {Py_tp_doc, const_cast<char*>("The state of a trace at one position")},
    {0, nullptr},
};

PyType_Spec kSpec = {"backstep._core.Cursor", sizeof(CursorObject), 0,
                     Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, kSlots};

}  // namespace

PyObject* NewCursor(PyObject* trace_object) {
  auto cursor = TraceOf(trace_object).NewCursor();
  if (!cursor.ok()) return RaiseStatus(cursor.status());
  auto* type = reinterpret_cast<PyTypeObject*>(State().cursor_type);
  PyObject* obj = PyType_GenericAlloc(type, 0);
  if (!obj) return nullptr;
  auto* c = reinterpret_cast<CursorObject*>(obj);
  c->owner = Py_NewRef(trace_object);
  c->cursor = new std::unique_ptr<core::Cursor>(std::move(cursor).value());
  return obj;
}

bool RegisterCursorType(PyObject* module) {
  PyObject* type = PyType_FromSpec(&kSpec);
  if (!type) return false;
  State().cursor_type = type;
  Py_INCREF(type);
  return PyModule_AddObject(module, "Cursor", type) == 0;
}

}  // namespace backstep::python
