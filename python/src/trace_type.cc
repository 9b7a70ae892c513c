// backstep._core.Trace: an opened trace (core::Trace) and its queries.
#include <algorithm>

#include "backstep/core/pc_queries.h"
#include "backstep/core/provenance.h"
#include "backstep/core/search.h"
#include "py_common.h"

namespace backstep::python {
namespace {

core::Trace& Of(PyObject* self) { return **reinterpret_cast<TraceObject*>(self)->trace; }

void Dealloc(PyObject* self) {
  delete reinterpret_cast<TraceObject*>(self)->trace;
  FreeObject(self);
}

PyObject* GetPath(PyObject* self, void*) { return PyUnicode_FromString(Of(self).path().c_str()); }
PyObject* GetFormat(PyObject* self, void*) {
  return PyUnicode_FromString(Of(self).header().format.c_str());
}
PyObject* GetArch(PyObject* self, void*) {
  const std::string name(Of(self).arch().name());
  return PyUnicode_FromString(name.c_str());
}
PyObject* GetPhysical(PyObject* self, void*) {
  return PyBool_FromLong(Of(self).header().address_kind == core::AddressKind::kPhysical);
}
PyObject* GetRecordsReads(PyObject* self, void*) {
  return PyBool_FromLong(Of(self).header().records_reads);
}
PyObject* GetEventCount(PyObject* self, void*) {
  return PyLong_FromUnsignedLongLong(Of(self).event_count());
}
PyObject* GetThreads(PyObject* self, void*) {
  const std::vector<core::ThreadId> threads = Of(self).threads();
  PyObject* list = PyList_New(0);
  for (core::ThreadId t : threads) {
    PyObject* v = PyLong_FromUnsignedLongLong(t.value);
    PyList_Append(list, v);
    Py_DECREF(v);
  }
  return list;
}
PyObject* GetIndexPath(PyObject* self, void*) {
  return PyUnicode_FromString(Of(self).index_status().path.c_str());
}
PyObject* GetIndexReused(PyObject* self, void*) {
  return PyBool_FromLong(Of(self).index_status().reused);
}
PyObject* GetRegisterNames(PyObject* self, void*) {
  PyObject* list = PyList_New(0);
  for (const core::RegisterInfo& r : Of(self).arch().registers()) {
    PyObject* v =
        PyUnicode_FromStringAndSize(r.name.data(), static_cast<Py_ssize_t>(r.name.size()));
    PyList_Append(list, v);
    Py_DECREF(v);
  }
  return list;
}

PyObject* Cursor(PyObject* self, PyObject*) { return NewCursor(self); }

// (address, length, position) arguments of the access queries.
bool ParseRangeAt(PyObject* args, const char* fmt, std::uint64_t* address, std::uint64_t* length,
                  std::uint64_t* at) {
  PyObject *a, *n, *p;
  if (!PyArg_ParseTuple(args, fmt, &a, &n, &p)) return false;
  return ToU64(a, address, "address") && ToU64(n, length, "length") && ToU64(p, at, "position");
}

PyObject* AccessTuple(const std::optional<core::Access>& access) {
  if (!access) Py_RETURN_NONE;
  return Py_BuildValue("(KKOKy#)", static_cast<unsigned long long>(access->event),
                       static_cast<unsigned long long>(access->thread.value),
                       access->is_write ? Py_True : Py_False,
                       static_cast<unsigned long long>(access->address),
                       reinterpret_cast<const char*>(access->data.data()),
                       static_cast<Py_ssize_t>(access->data.size()));
}

template <auto Query>
PyObject* NearestAccess(PyObject* self, PyObject* args) {
  std::uint64_t address, length, at;
  if (!ParseRangeAt(args, "OOO", &address, &length, &at)) return nullptr;
  if (length == 0) {
    PyErr_SetString(PyExc_ValueError, "length must be positive");
    return nullptr;
  }
  if (!CheckRangeArg(Of(self), address, length)) return nullptr;
  auto r = Query(Of(self), address, length, core::Position(at), core::AddressKind::kVirtual);
  if (!r.ok()) return RaiseStatus(r.status(), at, Of(self).path());
  return AccessTuple(*r);
}

PyObject* AccessIter(PyObject* self, PyObject* args) {
  PyObject *a, *n, *s, *e;
  int writes;
  if (!PyArg_ParseTuple(args, "OOOOp", &a, &n, &s, &e, &writes)) return nullptr;
  std::uint64_t address, length, start, end;
  if (!ToU64(a, &address, "address") || !ToU64(n, &length, "length") ||
      !ToU64(s, &start, "start") || !ToU64(e, &end, "end")) {
    return nullptr;
  }
  if (length == 0) {
    PyErr_SetString(PyExc_ValueError, "length must be positive");
    return nullptr;
  }
  if (!CheckRangeArg(Of(self), address, length)) return nullptr;
  if (!writes && !Of(self).header().records_reads) {
    return RaiseStatus(
        core::Status::InvalidArgument(Of(self).path() + ": the trace records no memory reads"));
  }
  return NewAccessIter(self, address, length, start, std::min(end, Of(self).event_count()),
                       writes != 0);
}

PyObject* PcIter(PyObject* self, PyObject* args) {
  PyObject *p, *s, *e;
  if (!PyArg_ParseTuple(args, "OOO", &p, &s, &e)) return nullptr;
  std::uint64_t pc, start, end;
  if (!ToU64(p, &pc, "pc") || !ToU64(s, &start, "start") || !ToU64(e, &end, "end")) return nullptr;
  return NewPcIter(self, pc, start, std::min(end, Of(self).event_count()));
}

PyObject* CountAtPc(PyObject* self, PyObject* args) {
  PyObject *p, *s, *e;
  if (!PyArg_ParseTuple(args, "OOO", &p, &s, &e)) return nullptr;
  std::uint64_t pc, start, end;
  if (!ToU64(p, &pc, "pc") || !ToU64(s, &start, "start") || !ToU64(e, &end, "end")) return nullptr;
  return PyLong_FromUnsignedLongLong(
      core::CountAtPc(Of(self), pc, core::Position(start), core::Position(end)));
}

PyObject* PrevAtPc(PyObject* self, PyObject* args) {
  PyObject *p, *b;
  if (!PyArg_ParseTuple(args, "OO", &p, &b)) return nullptr;
  std::uint64_t pc, before;
  if (!ToU64(p, &pc, "pc") || !ToU64(b, &before, "before")) return nullptr;
  auto q = core::PrevAtPc(Of(self), pc, core::Position(before));
  if (!q) Py_RETURN_NONE;
  return PyLong_FromUnsignedLongLong(q->value);
}

PyObject* OriginSteps(const std::vector<core::OriginStep>& steps) {
  PyObject* list = PyList_New(0);
  for (const core::OriginStep& s : steps) {
    PyObject* location =
        s.location.is_register
            ? Py_BuildValue("(sOK)", s.location.reg.c_str(), Py_None,
                            static_cast<unsigned long long>(s.location.length))
            : Py_BuildValue("(OKK)", Py_None, static_cast<unsigned long long>(s.location.address),
                            static_cast<unsigned long long>(s.location.length));
    PyObject* position =
        s.position ? PyLong_FromUnsignedLongLong(s.position->value) : Py_NewRef(Py_None);
    PyObject* pc = s.pc ? PyLong_FromUnsignedLongLong(*s.pc) : Py_NewRef(Py_None);
    PyObject* item = Py_BuildValue(
        "(NNKNsy#y#s)", position, pc, static_cast<unsigned long long>(s.thread.value), location,
        s.instruction.c_str(), reinterpret_cast<const char*>(s.value.data()),
        static_cast<Py_ssize_t>(s.value.size()), reinterpret_cast<const char*>(s.known.data()),
        static_cast<Py_ssize_t>(s.known.size()), s.end.c_str());
    if (!item) {
      Py_DECREF(list);
      return nullptr;
    }
    PyList_Append(list, item);
    Py_DECREF(item);
  }
  return list;
}

PyObject* Origin(PyObject* self, PyObject* args) {
  PyObject *a, *n, *p, *d;
  if (!PyArg_ParseTuple(args, "OOOO", &a, &n, &p, &d)) return nullptr;
  std::uint64_t address, length, at, depth;
  if (!ToU64(a, &address, "address") || !ToU64(n, &length, "length") ||
      !ToU64(p, &at, "position") || !ToU64(d, &depth, "depth")) {
    return nullptr;
  }
  if (depth == 0 || depth > UINT32_MAX) {
    PyErr_SetString(PyExc_ValueError, "depth must be in 1..2**32-1");
    return nullptr;
  }
  std::atomic<bool> interrupt{false};
  std::optional<core::Expected<std::vector<core::OriginStep>>> result;
  core::Trace& trace = Of(self);
  if (!RunInterruptible(
          [&] {
            result.emplace(core::Origin(trace, address, length, core::Position(at),
                                        static_cast<unsigned>(depth), &interrupt));
          },
          interrupt)) {
    return nullptr;
  }
  if (!result->ok()) return RaiseStatus(result->status(), at, Of(self).path());
  return OriginSteps(result->value());
}

PyGetSetDef kGetSet[] = {
    {"path", GetPath, nullptr, "the trace file", nullptr},
    {"format", GetFormat, nullptr, "format name: reven, usercorn, tfile, ...", nullptr},
    {"arch", GetArch, nullptr, "architecture (gdb's name): i386:x86-64", nullptr},
    {"physical", GetPhysical, nullptr, "True if memory is keyed by physical address (REVEN)",
     nullptr},
    {"records_reads", GetRecordsReads, nullptr, "True if events record the memory they read",
     nullptr},
    {"event_count", GetEventCount, nullptr, "number of events (positions are 0..event_count)",
     nullptr},
    {"threads", GetThreads, nullptr, "thread ids", nullptr},
    {"index_path", GetIndexPath, nullptr, "where the index file is", nullptr},
    {"index_reused", GetIndexReused, nullptr, "True if an existing index was reused", nullptr},
    {"register_names", GetRegisterNames, nullptr, "every register of the architecture", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMethodDef kMethods[] = {
    {"cursor", Cursor, METH_NOARGS, "cursor() -> Cursor at position 0"},
    {"last_write", NearestAccess<core::LastWrite>, METH_VARARGS,
     "last_write(addr, n, before) -> (event, thread, is_write, address, data) | None"},
    {"next_write", NearestAccess<core::NextWrite>, METH_VARARGS,
     "next_write(addr, n, start) -> (event, thread, is_write, address, data) | None"},
    {"last_read", NearestAccess<core::LastRead>, METH_VARARGS,
     "last_read(addr, n, before) -> (event, thread, is_write, address, data) | None"},
    {"next_read", NearestAccess<core::NextRead>, METH_VARARGS,
     "next_read(addr, n, start) -> (event, thread, is_write, address, data) | None"},
    {"accesses", AccessIter, METH_VARARGS,
     "accesses(addr, n, start, end, writes) -> lazy iterator of Access"},
    {"positions_at_pc", PcIter, METH_VARARGS,
     "positions_at_pc(pc, start, end) -> lazy iterator of positions"},
    {"count_at_pc", CountAtPc, METH_VARARGS,
     "count_at_pc(pc, start, end) -> number of positions at pc (no listing)"},
    {"prev_at_pc", PrevAtPc, METH_VARARGS, "prev_at_pc(pc, before) -> position | None"},
    {"origin", Origin, METH_VARARGS,
     "origin(addr, n, at, depth) -> [(position, pc, thread, (reg, addr, len), instruction, "
     "value, known, end)]"},
    {nullptr, nullptr, 0, nullptr},
};

PyType_Slot kSlots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(Dealloc)},
    {Py_tp_getset, kGetSet},
    {Py_tp_methods, kMethods},
    {Py_tp_doc, const_cast<char*>("An opened trace (use backstep.open)")},
    {0, nullptr},
};

PyType_Spec kSpec = {"backstep._core.Trace", sizeof(TraceObject), 0,
                     Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, kSlots};

}  // namespace

core::Trace& TraceOf(PyObject* trace_object) { return Of(trace_object); }

bool RegisterTraceType(PyObject* module) {
  PyObject* type = PyType_FromSpec(&kSpec);
  if (!type) return false;
  State().trace_type = type;
  Py_INCREF(type);
  return PyModule_AddObject(module, "Trace", type) == 0;
}

}  // namespace backstep::python
