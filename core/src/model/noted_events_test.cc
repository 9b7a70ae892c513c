// The index's list of noted events (Trace::noted_events()): what the mapping
// timeline reads instead of decoding the trace, and the same answers as the
// timeline that decodes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backstep/core/byte_source.h"
#include "backstep/core/event_notes.h"
#include "backstep/core/format_registry.h"
#include "backstep/core/mappings.h"
#include "backstep/core/plain_syscalls.h"
#include "backstep/testing/usercorn_reading.h"

namespace backstep::core {
namespace {

std::string WriteRecording() {
  const std::string path = (std::filesystem::path(::testing::TempDir()) /
                            ("noted_events_test_" + std::to_string(::getpid()) + ".ucir"))
                               .string();
  const Status written = testing::WriteNotesRecording(path);
  EXPECT_TRUE(written.ok()) << written.ToString();
  return path;
}

// The trace opened through a factory that counts the readers it makes.
struct Counted {
  std::shared_ptr<Trace> trace;
  std::shared_ptr<std::atomic<int>> readers;
};

Counted OpenCounted(const std::string& path) {
  Counted out;
  out.readers = std::make_shared<std::atomic<int>>(0);
  auto source = MapFile(path);
  EXPECT_TRUE(source.ok()) << source.status().ToString();
  if (!source.ok()) return out;
  ReaderFactory factory = [source = *source, readers = out.readers] {
    ++*readers;
    return OpenTraceSource(source);
  };
  OpenOptions options;
  options.cache_dir = ::testing::TempDir();
  auto trace = Trace::OpenWith(factory, path, options);
  EXPECT_TRUE(trace.ok()) << trace.status().ToString();
  if (trace.ok()) out.trace = *trace;
  return out;
}

class NotedEventsTest : public ::testing::Test {
 protected:
  void SetUp() override { path_ = WriteRecording(); }
  void TearDown() override {
    std::filesystem::remove(path_);
    std::filesystem::remove(path_ + ".bsidx");
  }
  std::string path_;
};

// The list holds exactly the events a decoding pass finds with notes or
// mapping changes, with their thread, kind and description, except the
// plain system calls, which the index's stream holds with their thread and
// number.
void ExpectTheListsOfADecodingPass(const Trace& trace, std::size_t min_noted,
                                   std::size_t min_plain) {
  const std::vector<NotedEvent>* noted = trace.noted_events();
  ASSERT_NE(noted, nullptr);
  const std::optional<PlainSyscalls> plain = trace.plain_syscalls();
  ASSERT_TRUE(plain.has_value());
  auto reader = trace.NewReader();
  ASSERT_TRUE(reader.ok());
  std::vector<NotedEvent> decoded;
  std::vector<std::string> texts;
  std::vector<PlainSyscall> decoded_plain;
  Event event;
  for (std::uint64_t n = 0;; ++n) {
    auto more = (*reader)->Next(&event);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    if (!*more) break;
    if (!DescribesNotes(event.kind, event.description)) continue;
    if (const auto number = PlainSyscallNumber(event.kind, event.description)) {
      decoded_plain.push_back({n, event.thread, *number});
      continue;
    }
    decoded.push_back({n, event.thread, event.kind, {}});
    texts.emplace_back(event.description);
  }
  ASSERT_EQ(noted->size(), decoded.size());
  ASSERT_GE(decoded.size(), min_noted);
  for (std::size_t i = 0; i < decoded.size(); ++i) {
    EXPECT_EQ((*noted)[i].event, decoded[i].event) << i;
    EXPECT_EQ((*noted)[i].thread, decoded[i].thread) << i;
    EXPECT_EQ((*noted)[i].kind, decoded[i].kind) << i;
    EXPECT_EQ((*noted)[i].description, texts[i]) << i;
  }
  ASSERT_GE(decoded_plain.size(), min_plain);
  ASSERT_EQ(plain->size(), decoded_plain.size());
  std::vector<PlainSyscall> listed, block;
  for (std::uint64_t b = 0; b < plain->block_count(); ++b) {
    plain->Decode(b, &block);
    EXPECT_EQ(plain->block_first_event(b), block.front().event) << b;
    EXPECT_EQ(plain->BlockAt(block.back().event), b);
    listed.insert(listed.end(), block.begin(), block.end());
  }
  EXPECT_EQ(listed, decoded_plain);
}

TEST_F(NotedEventsTest, ListsTheEventsADecodingPassFinds) {
  Counted opened = OpenCounted(path_);
  ASSERT_TRUE(opened.trace);
  // The mmaps, the signal, the munmap, the kill; the write is plain.
  ExpectTheListsOfADecodingPass(*opened.trace, 5, 1);
}

// Thousands of system calls: the plain ones fill several blocks of the
// stream.
TEST_F(NotedEventsTest, PlainSystemCallsFillBlocksOfTheStream) {
  const Status written = testing::WriteSyscallStormRecording(path_, 2000);
  ASSERT_TRUE(written.ok()) << written.ToString();
  Counted opened = OpenCounted(path_);
  ASSERT_TRUE(opened.trace);
  ExpectTheListsOfADecodingPass(*opened.trace, 21, 1980);
  EXPECT_EQ(opened.trace->plain_syscalls()->block_count(), 8u);
}

// The trace's timeline reads no event (opens no reader) once the index
// exists, and answers as the timeline that decodes, at every position.
TEST_F(NotedEventsTest, TimelineReadsTheListAndAnswersAsTheScan) {
  Counted opened = OpenCounted(path_);
  ASSERT_TRUE(opened.trace);
  const Trace& trace = *opened.trace;
  const int readers = *opened.readers;
  const Position end(trace.event_count());
  auto last = trace.mappings().StateAt(end);
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  ASSERT_TRUE(trace.mappings().At(Position(1)).ok());
  EXPECT_EQ(*opened.readers, readers) << "the timeline decoded the trace";
  EXPECT_TRUE(trace.mappings().saw_changes());

  MappingTimeline scan(trace, MappingTimeline::Source::kScan);
  bool refilled = false;
  for (std::uint64_t p = 0; p <= end.value; ++p) {
    auto want = scan.StateAt(Position(p));
    auto got = trace.mappings().StateAt(Position(p));
    ASSERT_TRUE(want.ok() && got.ok()) << p;
    EXPECT_EQ((*got)->maps, (*want)->maps) << p;
    EXPECT_EQ((*got)->unmapped, (*want)->unmapped) << p;
    EXPECT_EQ((*got)->refilled, (*want)->refilled) << p;
    refilled = refilled || !(*got)->refilled.empty();
  }
  EXPECT_EQ(*opened.readers, readers + 1);  // the scan's own reader
  EXPECT_TRUE(refilled);
  EXPECT_FALSE((*last)->unmapped.empty());
}

}  // namespace
}  // namespace backstep::core
