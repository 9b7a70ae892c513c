// Helpers shared by the usercorn tests: open bytes as a trace, and render
// events compactly (writes longer than 16 bytes by size and a checksum).
//
// Thread-safety: pure functions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backstep/core/event_notes.h"
#include "backstep/testing/usercorn_reading.h"
#include "formats/usercorn/usercorn_reader.h"
#include "util/hex.h"

namespace backstep::core::usercorn_test {

inline Expected<std::unique_ptr<UsercornReader>> OpenBytes(std::vector<std::uint8_t> bytes,
                                                           std::string name = "t.ucir") {
  return UsercornReader::Open(MemorySource(std::move(bytes), std::move(name)));
}

inline std::string Summary(const Event& e) { return testing::EventSummary(e); }

// Every event from the reader's position; the error, if any, is appended
// as "error: <status>".
inline std::vector<std::string> ReadAll(TraceReader& reader, std::size_t max = 1000000) {
  std::vector<std::string> out;
  Event e;
  while (out.size() < max) {
    auto more = reader.Next(&e);
    if (!more.ok()) {
      out.push_back("error: " + more.status().ToString());
      break;
    }
    if (!*more) break;
    out.push_back(Summary(e));
  }
  return out;
}

// Every event from the reader's position and the notes read from each (the
// same index in both); the reader's error, if any.
struct EventsWithNotes {
  std::vector<Event> events;
  std::vector<EventNotes> notes;
};
inline Expected<EventsWithNotes> ReadEventsWithNotes(TraceReader& reader) {
  EventsWithNotes out;
  Event e;
  while (true) {
    BACKSTEP_ASSIGN_OR_RETURN(bool more, reader.Next(&e));
    if (!more) return out;
    out.events.push_back(e);
    out.notes.push_back(ReadEventNotes(e));
  }
}

}  // namespace backstep::core::usercorn_test
