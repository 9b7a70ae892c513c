#include "index/index_inference_merge.h"

#include <cstring>
#include <optional>
#include <string>

#include "index/access_list_builder.h"

namespace backstep::core {
namespace {

// [offset, offset + count * size) of the file, inside the part at `base`.
const std::uint8_t* InPart(std::span<const std::uint8_t> body, std::uint64_t base,
                           std::uint64_t offset, std::uint64_t count, std::uint64_t size) {
  if (offset < base || offset - base > body.size()) return nullptr;
  const std::uint64_t room = body.size() - (offset - base);
  if (size != 0 && count > room / size) return nullptr;
  return body.data() + (offset - base);
}

Status OutOfPart(const std::string& what, std::uint64_t offset) {
  return Status::Corruption("index part: " + what + " at file offset " + std::to_string(offset) +
                            " is outside the part");
}

}  // namespace

Status InferenceMerge::RewriteList(std::span<const std::uint8_t> body, std::uint64_t base,
                                   std::uint64_t last_event, SegmentRecord* segment,
                                   IndexSink& sink) {
  const ListRecord list = segment->lists[kInferredList];
  const std::uint8_t* pages =
      InPart(body, base, list.pages_offset, list.page_count, sizeof(PageRecord));
  if (!pages) return OutOfPart("inferred page records", list.pages_offset);
  const std::span<const std::uint8_t> trace = reader_.source().data();
  AccessListBuilder out(block_entries_, snapshot_blocks_, false, trace);
  bool changed = false;
  std::uint8_t image_values[kPageSize], image_known[kPageSize];
  for (std::uint64_t p = 0; p < list.page_count; ++p) {
    const auto rec = LoadRecord<PageRecord>(pages + p * sizeof(PageRecord));
    const auto it = known_.find(rec.page);
    const std::uint64_t* bits = it == known_.end() ? nullptr : it->second.data();
    // The single pass's tracker counts the image until the first clear.
    if (cleared_) {
      std::memset(image_known, 0, sizeof(image_known));
    } else {
      reader_.ReadInitialMemory(rec.page << kPageBits, image_values, image_known);
    }
    auto known = [&](std::uint32_t i) {
      return image_known[i] || (bits && ((bits[i / 64] >> (i % 64)) & 1));
    };
    const std::uint8_t* blocks =
        InPart(body, base, rec.blocks_offset, rec.block_count, sizeof(BlockRecord));
    if (!blocks) return OutOfPart("inferred block records", rec.blocks_offset);
    for (std::uint32_t b = 0; b < rec.block_count; ++b) {
      const auto block = LoadRecord<BlockRecord>(blocks + b * sizeof(BlockRecord));
      const std::uint8_t* data = InPart(body, base, block.data_offset, block.data_size, 1);
      if (!data) return OutOfPart("inferred entries", block.data_offset);
      EntryDecoder decoder(data, data + block.data_size, block.first_event);
      for (std::uint32_t j = 0; j < block.entry_count; ++j) {
        const AccessEntry e = decoder.Next();
        if (e.offset + std::uint64_t{e.length} > kPageSize || e.event_ref ||
            (e.ref && (e.ref_offset > trace.size() || e.length > trace.size() - e.ref_offset))) {
          return OutOfPart("an inferred entry", block.data_offset);
        }
        const std::uint8_t* value = e.ref ? trace.data() + e.ref_offset : e.data;
        if (e.event > last_event) {  // after the part's first clear: exact
          out.Add(e.event, rec.page, e.offset, {value, e.length},
                  e.ref ? std::optional<std::uint64_t>(e.ref_offset) : std::nullopt, e.piece_offset,
                  e.access_length);
          continue;
        }
        // The runs of bytes still unknown, encoded as the single pass's
        // tracker callback does (AddAccess in index_part_builder.cc).
        auto add_run = [&](std::uint32_t start, std::uint32_t length) {
          const std::uint32_t skip = start - e.offset;
          std::optional<std::uint64_t> ref;
          if (e.ref && length >= kMinReferencedLength) ref = e.ref_offset + skip;
          out.Add(e.event, rec.page, start, {value + skip, length}, ref, 0, length);
        };
        std::uint32_t run = 0, start = e.offset;
        for (std::uint32_t i = e.offset; i < e.offset + e.length; ++i) {
          if (!known(i)) {
            if (run == 0) start = i;
            ++run;
            continue;
          }
          changed = true;
          if (run > 0) add_run(start, run);
          run = 0;
        }
        if (run > 0) add_run(start, run);
      }
    }
  }
  if (changed) {
    sink.Pad8();
    segment->lists[kInferredList] = out.Flush(sink, false);
  }
  return sink.status();
}

Status InferenceMerge::AddPart(std::span<const std::uint8_t> body, std::uint64_t base,
                               IndexTables* tables, IndexSink& sink) {
  if (!tables->records_reads) return Status::Ok();
  if (!first_part_) {
    // Entries up to the part's first clear (its reads come before the
    // clear) may be of bytes known before the part.
    const std::uint64_t last =
        tables->memory_clears.empty() ? kNoEvent : tables->memory_clears.front();
    for (SegmentRecord& segment : tables->segments) {
      if (segment.first_event > last) break;
      if (segment.lists[kInferredList].page_count == 0) continue;
      BACKSTEP_RETURN_IF_ERROR(RewriteList(body, base, last, &segment, sink));
    }
  }
  first_part_ = false;
  if (!tables->memory_clears.empty()) {
    known_ = std::move(tables->known_at_end);
    cleared_ = true;
  } else {
    for (const auto& [page, bits] : tables->known_at_end) {
      auto [it, inserted] = known_.try_emplace(page, bits);
      if (inserted) continue;
      for (std::size_t w = 0; w < bits.size(); ++w) it->second[w] |= bits[w];
    }
  }
  tables->known_at_end = KnownPages();
  return sink.status();
}

}  // namespace backstep::core
