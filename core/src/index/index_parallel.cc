#include "index/index_parallel.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "index/index_inference_merge.h"
#include "index/index_part_builder.h"
#include "index/index_part_sink.h"
#include "index/index_relocate.h"

namespace backstep::core {
namespace {

struct Part {
  IndexPartPlan plan;
  std::unique_ptr<TraceReader> own_reader;  // parts after the first
  TraceReader* reader = nullptr;
  std::unique_ptr<PartSink> sink;
  IndexTables tables;
  Status status;
  std::atomic<std::uint64_t> done{0};  // events indexed so far
};

std::string At(std::uint64_t event) { return "at event " + std::to_string(event); }

// Makes the parts: plans, readers, sinks. "" or why not.
std::string SetUp(TraceReader& reader, const IndexIdentity& identity,
                  const IndexBuildOptions& options, std::vector<ResumePoint>& splits,
                  const IndexSink& sink, std::vector<std::unique_ptr<Part>>* parts) {
  const std::size_t n = splits.size() + 1;
  for (std::size_t i = 0; i < n; ++i) {
    auto part = std::make_unique<Part>();
    IndexPartPlan& plan = part->plan;
    plan.first_event = i == 0 ? 0 : splits[i - 1].position.value;
    plan.stop_event = i + 1 < n ? splits[i].position.value : kNoEvent;
    plan.seed_is_initial = i == 0;
    plan.seed = i == 0 ? reader.InitialRegisters() : splits[i - 1].registers;
    plan.keyframe_interval = identity.keyframe_interval;
    plan.memory_budget = std::max<std::uint64_t>(options.memory_budget / n, 1);
    plan.block_entries = options.block_entries;
    plan.snapshot_blocks = options.snapshot_blocks;
    plan.event_refs = true;  // options.new_reader is set: it makes the parts' readers
    if (i == 0) {
      part->reader = &reader;
    } else {
      Expected<std::unique_ptr<TraceReader>> r = options.new_reader();
      if (!r.ok()) return "cannot open another reader: " + r.status().ToString();
      part->own_reader = std::move(*r);
      part->reader = part->own_reader.get();
      Status s = part->reader->Seek(splits[i - 1].reader_position);
      if (!s.ok()) return "resume point " + At(plan.first_event) + ": " + s.ToString();
    }
    Expected<std::unique_ptr<PartSink>> part_sink = sink.NewPartSink();
    if (!part_sink.ok()) return part_sink.status().ToString();
    part->sink = std::move(*part_sink);
    parts->push_back(std::move(part));
  }
  return "";
}

enum class RunOutcome { kDone, kCancelled, kNoThread };

// Runs every part on its own thread; the calling thread reports progress.
RunOutcome RunParts(std::vector<std::unique_ptr<Part>>& parts, const IndexBuildOptions& options,
                    std::uint64_t total) {
  std::atomic<bool> cancel{false};
  std::mutex mu;
  std::condition_variable cv;
  std::size_t finished = 0;
  std::vector<std::thread> threads;
  for (auto& part : parts) {
    Part* p = part.get();
    p->plan.progress = [p, &cancel](std::uint64_t done) {
      p->done.store(done - p->plan.first_event, std::memory_order_relaxed);
      return !cancel.load(std::memory_order_relaxed);
    };
    try {
      threads.emplace_back([p, &mu, &cv, &finished] {
        p->status = BuildIndexPart(*p->reader, p->plan, *p->sink, &p->tables);
        std::lock_guard<std::mutex> lock(mu);
        ++finished;
        cv.notify_one();
      });
    } catch (const std::system_error&) {
      // Out of threads: stop the parts already started, fall back.
      cancel.store(true);
      for (std::thread& t : threads) t.join();
      return RunOutcome::kNoThread;
    }
  }
  // Progress first at once (a caller cancelling at the start is obeyed),
  // then every 100 ms.
  for (;;) {
    if (options.progress && !cancel.load()) {
      std::uint64_t done = 0;
      for (auto& p : parts) done += p->done.load(std::memory_order_relaxed);
      if (!options.progress("indexing", done, total)) cancel.store(true);
    }
    std::unique_lock<std::mutex> lock(mu);
    if (cv.wait_for(lock, std::chrono::milliseconds(100),
                    [&] { return finished == parts.size(); })) {
      break;
    }
  }
  for (std::thread& t : threads) t.join();
  return cancel.load() ? RunOutcome::kCancelled : RunOutcome::kDone;
}

// "" when part k (k >= 1) starts exactly where part k-1 ended, with the
// state part k was seeded with. `known`: registers of every thread known at
// the end of part k-1 (all parts before it merged).
std::string CheckSeam(const IndexTables& before, const ResumePoint& split,
                      const std::unordered_map<std::uint64_t, const RegisterFile*>& known) {
  const std::uint64_t at = split.position.value;
  if (before.end_event != at) {
    return "the trace ends " + At(before.end_event) + ", before the resume point " + At(at);
  }
  if (!(before.end_position == split.reader_position)) {
    return "resume point " + At(at) + ": the reader position differs";
  }
  if (split.registers.size() != known.size()) {
    return "resume point " + At(at) + ": " + std::to_string(split.registers.size()) +
           " threads, the trace has " + std::to_string(known.size());
  }
  for (const auto& [tid, regs] : split.registers) {
    auto it = known.find(tid.value);
    if (it == known.end()) {
      return "resume point " + At(at) + ": thread " + std::to_string(tid.value) + " is unknown";
    }
    if (!(*it->second == regs)) {
      return "resume point " + At(at) + ": registers of thread " + std::to_string(tid.value) +
             " differ";
    }
  }
  return "";
}

// Relocates part `p` to the end of `sink`, appends it, merges its tables.
Status AppendPart(Part& p, IndexSink& sink, IndexTables& merged,
                  std::unordered_map<std::uint64_t, std::size_t>& global,
                  InferenceMerge& inference) {
  IndexTables& t = p.tables;
  std::vector<std::uint64_t> map(t.threads.size());
  std::vector<bool> fresh(t.threads.size(), false);
  std::size_t next = merged.threads.size();
  for (std::size_t j = 0; j < t.threads.size(); ++j) {
    auto [it, inserted] = global.try_emplace(t.threads[j].tid.value, next);
    if (inserted) ++next, fresh[j] = true;
    map[j] = it->second;
  }
  sink.Pad8();
  BACKSTEP_ASSIGN_OR_RETURN(std::span<std::uint8_t> body, p.sink->Bytes());
  const std::uint64_t base = sink.size();
  BACKSTEP_RETURN_IF_ERROR(RelocatePart(body, base, map, &t));
  sink.Write(body);
  BACKSTEP_RETURN_IF_ERROR(inference.AddPart(body, base, &t, sink));
  p.sink.reset();  // the part's file or memory goes

  for (std::size_t j = 0; j < t.threads.size(); ++j) {
    if (fresh[j])
      merged.threads.push_back({t.threads[j].tid, t.threads[j].regs, t.threads[j].out, {}});
  }
  // A run that continues across the seam stays one run.
  const bool join = !merged.runs.empty() && !t.runs.empty() &&
                    merged.runs.back().thread_index == map[t.runs[0].thread_index];
  std::vector<std::uint64_t> run_index(t.runs.size());
  for (std::size_t r = 0; r < t.runs.size(); ++r) {
    if (r == 0 && join) {
      run_index[r] = merged.runs.size() - 1;
      continue;
    }
    run_index[r] = merged.runs.size();
    merged.runs.push_back({t.runs[r].first_event, map[t.runs[r].thread_index]});
  }
  for (std::size_t j = 0; j < t.threads.size(); ++j) {
    IndexTables::Thread& m = merged.threads[map[j]];
    if (m.out.first_event == kNoEvent) m.out.first_event = t.threads[j].out.first_event;
    for (std::uint64_t r : t.threads[j].runs) {
      if (r == 0 && join) continue;
      m.runs.push_back(run_index[r]);
    }
  }
  merged.keyframes.insert(merged.keyframes.end(), t.keyframes.begin(), t.keyframes.end());
  merged.memory_clears.insert(merged.memory_clears.end(), t.memory_clears.begin(),
                              t.memory_clears.end());
  merged.register_clears.insert(merged.register_clears.end(), t.register_clears.begin(),
                                t.register_clears.end());
  merged.segments.insert(merged.segments.end(), t.segments.begin(), t.segments.end());
  for (NoteRecord note : t.notes) {
    note.text_offset += merged.note_text.size();
    merged.notes.push_back(note);
  }
  merged.note_text += t.note_text;
  merged.plain_syscalls.Append(t.plain_syscalls);
  merged.end_event = t.end_event;
  merged.records_reads = t.records_reads;
  return sink.status();
}

}  // namespace

Status BuildIndexInParallel(TraceReader& reader, const IndexIdentity& identity,
                            const IndexBuildOptions& options, std::vector<ResumePoint> splits,
                            IndexSink& sink, IndexBuildReport* report, bool* written) {
  *written = false;
  const ReaderPosition start = reader.Tell();
  auto fall_back = [&](std::string why) {
    report->note = std::move(why);
    Status s = reader.Seek(start);
    *written = !s.ok();
    return s;
  };
  std::vector<std::unique_ptr<Part>> parts;
  if (std::string why = SetUp(reader, identity, options, splits, sink, &parts); !why.empty()) {
    return fall_back(why);
  }
  const std::uint64_t total = reader.header().declared_events.value_or(0);
  const RunOutcome outcome = RunParts(parts, options, total);
  if (outcome == RunOutcome::kNoThread) return fall_back("cannot start a thread per part");
  if (outcome == RunOutcome::kCancelled) {
    *written = true;
    std::uint64_t done = 0;
    for (auto& p : parts) done += p->done.load();
    return Status::Interrupted("indexing " + reader.source().name() + ": cancelled after " +
                               std::to_string(done) + " events");
  }
  if (!parts[0]->status.ok()) {
    *written = true;
    return parts[0]->status;
  }
  std::unordered_map<std::uint64_t, const RegisterFile*> known;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const Part& p = *parts[k];
    if (k > 0) {
      if (!p.status.ok()) {
        return fall_back("part " + std::to_string(k) + " (from event " +
                         std::to_string(p.plan.first_event) + ") failed: " + p.status.ToString());
      }
      if (std::string why = CheckSeam(parts[k - 1]->tables, splits[k - 1], known); !why.empty()) {
        return fall_back("trace.cache disagrees with the trace: " + why);
      }
    }
    for (const IndexTables::Thread& t : p.tables.threads) known[t.tid.value] = &t.regs;
  }

  *written = true;
  WriteIndexHeader(identity, sink);
  IndexTables merged;
  std::unordered_map<std::uint64_t, std::size_t> global;
  InferenceMerge inference(reader, options.block_entries, options.snapshot_blocks);
  for (auto& p : parts) BACKSTEP_RETURN_IF_ERROR(AppendPart(*p, sink, merged, global, inference));
  WriteIndexDirectory(merged, reader.header(), options, sink);
  if (options.progress) options.progress("indexing", merged.end_event, merged.end_event);
  report->parts = static_cast<unsigned>(parts.size());
  return sink.status();
}

}  // namespace backstep::core
