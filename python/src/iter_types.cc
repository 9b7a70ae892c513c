// Lazy iterators of backstep._core: recorded accesses to a range (from the
// memory index, fetched in batches of kBatch) and positions at a pc (one
// pc-index lookup per item). Neither builds the whole list.
#include <algorithm>
#include <vector>

#include "backstep/core/pc_queries.h"
#include "backstep/core/search.h"
#include "backstep/core/trace_query.h"
#include "py_common.h"

namespace backstep::python {
namespace {

constexpr std::size_t kBatch = 4096;

struct AccessIterState {
  std::uint64_t address = 0, length = 0, next_from = 0, end = 0;
  bool writes = true;
  // Old/new values are carried from write to write (new = old overlaid with
  // the write) when nothing else changes memory between writes: no
  // recorded reads (value inference) and no memory clears. Otherwise each
  // is read from the index.
  bool incremental = false;
  bool have_state = false;
  std::vector<std::uint8_t> value, known;
  std::vector<core::Access> batch;
  std::size_t next = 0;
  std::unique_ptr<core::Cursor> cursor;
};

struct AccessIterObject {
  PyObject_HEAD PyObject* owner;
  AccessIterState* state;
};

void AccessDealloc(PyObject* self) {
  auto* it = reinterpret_cast<AccessIterObject*>(self);
  delete it->state;
  Py_XDECREF(it->owner);
  FreeObject(self);
}

PyObject* SelfIter(PyObject* self) { return Py_NewRef(self); }

// Fills the next batch; false with an exception set on error.
bool Fetch(core::Trace& trace, AccessIterState& s) {
  std::size_t max = kBatch;
  while (s.next_from < s.end) {
    auto r = core::History(trace, s.address, s.length, core::Position(s.next_from),
                           core::Position(s.end), max);
    if (!r.ok()) {
      RaiseStatus(r.status(), s.next_from);
      return false;
    }
    std::vector<core::Access> got = std::move(r).value();
    if (got.size() < max) {
      s.batch = std::move(got);
      s.next_from = s.end;
      break;
    }
    // Cut at an event boundary so the next batch starts with a whole event.
    const std::uint64_t last = got.back().event;
    while (!got.empty() && got.back().event == last) got.pop_back();
    if (got.empty()) {
      max *= 2;  // one event with more accesses than the batch
      continue;
    }
    s.batch = std::move(got);
    s.next_from = last;
    break;
  }
  s.next = 0;
  return true;
}

PyObject* RangeBytes(const std::vector<std::uint8_t>& value,
                     const std::vector<std::uint8_t>& known) {
  if (std::find(known.begin(), known.end(), 0) != known.end()) Py_RETURN_NONE;
  return PyBytes_FromStringAndSize(reinterpret_cast<const char*>(value.data()),
                                   static_cast<Py_ssize_t>(value.size()));
}

bool ReadAt(AccessIterState& s, std::uint64_t p, std::vector<std::uint8_t>& value,
            std::vector<std::uint8_t>& known) {
  value.assign(s.length, 0);
  known.assign(s.length, 0);
  core::Status st = s.cursor->Seek(core::Position(p));
  if (st.ok()) st = s.cursor->ReadMemory(s.address, value, known);
  if (!st.ok()) {
    RaiseStatus(st, p);
    return false;
  }
  return true;
}

PyObject* AccessNext(PyObject* self) {
  auto* it = reinterpret_cast<AccessIterObject*>(self);
  AccessIterState& s = *it->state;
  core::Trace& trace = TraceOf(it->owner);
  while (true) {
    if (s.next >= s.batch.size()) {
      if (s.next_from >= s.end) return nullptr;  // StopIteration
      if (!Fetch(trace, s)) return nullptr;
      if (s.batch.empty()) return nullptr;
    }
    const core::Access& a = s.batch[s.next++];
    if (a.is_write != s.writes) continue;
    PyObject *old_obj, *new_obj;
    if (s.length > kMaxValueBytes) {
      old_obj = Py_NewRef(Py_None);  // see kMaxValueBytes
      new_obj = Py_NewRef(Py_None);
    } else if (a.is_write) {
      if (!s.incremental || !s.have_state) {
        if (!ReadAt(s, a.event, s.value, s.known)) return nullptr;
      }
      old_obj = RangeBytes(s.value, s.known);
      if (s.incremental) {
        for (std::size_t i = 0; i < a.data.size(); ++i) {
          const core::Address byte = a.address + i;
          if (byte < s.address || byte - s.address >= s.length) continue;
          s.value[byte - s.address] = a.data[i];
          s.known[byte - s.address] = 1;
        }
        s.have_state = true;
      } else if (!ReadAt(s, a.event + 1, s.value, s.known)) {
        Py_DECREF(old_obj);
        return nullptr;
      }
      new_obj = RangeBytes(s.value, s.known);
    } else {
      std::vector<std::uint8_t> v, k;
      if (!ReadAt(s, a.event, v, k)) return nullptr;
      old_obj = RangeBytes(v, k);
      new_obj = Py_NewRef(old_obj);
    }
    PyObject* item = PyStructSequence_New(reinterpret_cast<PyTypeObject*>(State().access_type));
    if (!item) {
      Py_DECREF(old_obj);
      Py_DECREF(new_obj);
      return nullptr;
    }
    PyStructSequence_SetItem(item, 0, PyLong_FromUnsignedLongLong(a.event));
    PyStructSequence_SetItem(item, 1, old_obj);
    PyStructSequence_SetItem(item, 2, new_obj);
    PyStructSequence_SetItem(item, 3, PyLong_FromUnsignedLongLong(a.thread.value));
    PyStructSequence_SetItem(item, 4, PyLong_FromUnsignedLongLong(a.address));
    PyStructSequence_SetItem(item, 5,
                             PyBytes_FromStringAndSize(reinterpret_cast<const char*>(a.data.data()),
                                                       static_cast<Py_ssize_t>(a.data.size())));
    PyStructSequence_SetItem(item, 6, PyBool_FromLong(a.is_write));
    return item;
  }
}

PyType_Slot kAccessSlots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(AccessDealloc)},
    {Py_tp_iter, reinterpret_cast<void*>(SelfIter)},
    {Py_tp_iternext, reinterpret_cast<void*>(AccessNext)},
    {Py_tp_doc, const_cast<char*>("Lazy iterator of recorded accesses to a range")},
    {0, nullptr},
};
PyType_Spec kAccessSpec = {"backstep._core.AccessIterator", sizeof(AccessIterObject), 0,
                           Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, kAccessSlots};

struct PcIterObject {
  PyObject_HEAD PyObject* owner;
  std::uint64_t pc, next, end;
};

void PcDealloc(PyObject* self) {
  Py_XDECREF(reinterpret_cast<PcIterObject*>(self)->owner);
  FreeObject(self);
}

PyObject* PcNext(PyObject* self) {
  auto* it = reinterpret_cast<PcIterObject*>(self);
  if (it->next >= it->end) return nullptr;
  auto q = core::NextAtPc(TraceOf(it->owner), it->pc, core::Position(it->next));
  if (!q || q->value >= it->end) {
    it->next = it->end;
    return nullptr;
  }
  it->next = q->value + 1;
  return PyLong_FromUnsignedLongLong(q->value);
}

PyObject* PcLengthHint(PyObject* self, PyObject*) {
  auto* it = reinterpret_cast<PcIterObject*>(self);
  return PyLong_FromUnsignedLongLong(core::CountAtPc(
      TraceOf(it->owner), it->pc, core::Position(it->next), core::Position(it->end)));
}

PyMethodDef kPcMethods[] = {
    {"__length_hint__", PcLengthHint, METH_NOARGS, "positions left (counted, not listed)"},
    {nullptr, nullptr, 0, nullptr},
};

PyType_Slot kPcSlots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(PcDealloc)},
    {Py_tp_iter, reinterpret_cast<void*>(SelfIter)},
    {Py_tp_iternext, reinterpret_cast<void*>(PcNext)},
    {Py_tp_methods, kPcMethods},
    {Py_tp_doc, const_cast<char*>("Lazy iterator of the positions at a pc")},
    {0, nullptr},
};
PyType_Spec kPcSpec = {"backstep._core.PcIterator", sizeof(PcIterObject), 0,
                       Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, kPcSlots};

PyStructSequence_Field kAccessFields[] = {
    {"position", "the accessing event (the state before it)"},
    {"old", "the range's bytes before the event (None if any is unknown)"},
    {"new", "the range's bytes after it (None if any is unknown); reads: as old"},
    {"thread", "thread of the event"},
    {"address", "start of the whole access (may extend past the range)"},
    {"data", "the bytes written or observed by the whole access"},
    {"is_write", "True for a write"},
    {nullptr, nullptr},
};
PyStructSequence_Desc kAccessDesc = {
    "backstep.Access", "One recorded access: (position, old, new) plus thread, address, data.",
    kAccessFields, 3};

}  // namespace

PyObject* NewAccessIter(PyObject* trace_object, std::uint64_t address, std::uint64_t length,
                        std::uint64_t start, std::uint64_t end, bool writes) {
  core::Trace& trace = TraceOf(trace_object);
  auto cursor = trace.NewCursor();
  if (!cursor.ok()) return RaiseStatus(cursor.status());
  auto* type = reinterpret_cast<PyTypeObject*>(State().access_iter_type);
  PyObject* obj = PyType_GenericAlloc(type, 0);
  if (!obj) return nullptr;
  auto* it = reinterpret_cast<AccessIterObject*>(obj);
  it->owner = Py_NewRef(trace_object);
  it->state = new AccessIterState();
  AccessIterState& s = *it->state;
  s.address = address;
  s.length = length;
  s.next_from = start;
  s.end = end;
  s.writes = writes;
  s.cursor = std::move(cursor).value();
  s.incremental = !core::IndexRecordsReads(trace) &&
                  !core::LastMemoryClearBefore(trace, trace.event_count()).has_value();
  return obj;
}

PyObject* NewPcIter(PyObject* trace_object, std::uint64_t pc, std::uint64_t start,
                    std::uint64_t end) {
  auto* type = reinterpret_cast<PyTypeObject*>(State().pc_iter_type);
  PyObject* obj = PyType_GenericAlloc(type, 0);
  if (!obj) return nullptr;
  auto* it = reinterpret_cast<PcIterObject*>(obj);
  it->owner = Py_NewRef(trace_object);
  it->pc = pc;
  it->next = start;
  it->end = end;
  return obj;
}

bool RegisterIteratorTypes(PyObject* module) {
  State().access_iter_type = PyType_FromSpec(&kAccessSpec);
  State().pc_iter_type = PyType_FromSpec(&kPcSpec);
  State().access_type = reinterpret_cast<PyObject*>(PyStructSequence_NewType(&kAccessDesc));
  if (!State().access_iter_type || !State().pc_iter_type || !State().access_type) return false;
  Py_INCREF(State().access_type);
  return PyModule_AddObject(module, "Access", State().access_type) == 0;
}

}  // namespace backstep::python
