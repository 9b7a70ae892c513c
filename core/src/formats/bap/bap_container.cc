#include "formats/bap/bap_container.h"

#include <climits>

#include "formats/bap/bap_format.h"
#include "util/byte_reader.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

Status HeaderError(const std::string& file, std::uint64_t at, const std::string& what) {
  return Status::Corruption(file + ": header at offset " + HexU64(at) + ": " + what);
}

std::uint64_t U64At(std::span<const std::uint8_t> data, std::uint64_t at) {
  ByteReader r(data.subspan(static_cast<std::size_t>(at), 8));
  return r.U64();
}

}  // namespace

Expected<BapContainer> ParseBapContainer(std::span<const std::uint8_t> data,
                                         const std::string& file) {
  BapContainer c;
  const std::uint64_t size = data.size();
  if (size < kBapHeaderSize) {
    return HeaderError(file, 0,
                       "file holds " + std::to_string(size) + " bytes, a BAP frames header needs " +
                           std::to_string(kBapHeaderSize));
  }
  ByteReader r(data.first(kBapHeaderSize));
  const std::uint64_t magic = r.U64();
  if (magic != kBapMagic) {
    return HeaderError(file, 0, "magic " + HexU64(magic) + " is not BAP's " + HexU64(kBapMagic));
  }
  c.version = r.U64();
  c.arch = r.U64();
  c.machine = r.U64();
  c.declared_frames = r.U64();
  c.toc_offset = r.U64();
  if (c.version < kBapMinVersion || c.version > kBapMaxVersion) {
    return Status::Unsupported(file + ": header at offset 0x8: BAP frames version " +
                               std::to_string(c.version) + " (backstep reads 1 to 3)");
  }
  c.frames_start = kBapHeaderSize;
  if (c.version >= 2) {
    if (size < kBapHeaderSize + 8) {
      return HeaderError(file, kBapHeaderSize, "the file ends before the meta frame's size");
    }
    const std::uint64_t meta_size = U64At(data, kBapHeaderSize);
    if (meta_size > size - kBapHeaderSize - 8) {
      return HeaderError(file, kBapHeaderSize,
                         "meta frame of " + std::to_string(meta_size) + " bytes, the file has " +
                             std::to_string(size - kBapHeaderSize - 8) + " after its size");
    }
    if (meta_size > INT_MAX) {
      return Status::Unsupported(file + ": meta frame at offset 0x38 is larger than 2 GiB");
    }
    c.meta.emplace();
    // Partial parse, then our own check of the required fields: protobuf
    // would log the missing ones to stderr itself.
    if (!c.meta->ParsePartialFromArray(data.data() + kBapHeaderSize + 8,
                                       static_cast<int>(meta_size))) {
      return HeaderError(file, kBapHeaderSize + 8,
                         "the meta frame (" + std::to_string(meta_size) +
                             " bytes) is not a valid meta_frame protobuf message");
    }
    if (!c.meta->IsInitialized()) {
      return HeaderError(
          file, kBapHeaderSize + 8,
          "the meta frame (" + std::to_string(meta_size) +
              " bytes) misses required fields: " + c.meta->InitializationErrorString());
    }
    c.frames_start = kBapHeaderSize + 8 + meta_size;
  }
  // The TOC (described, not trusted; see the header).
  c.frames_end = size;
  if (c.toc_offset == 0) {
    c.toc_note = "none (TOC offset 0: the tracer did not finish the file)";
  } else if (c.toc_offset > size || size - c.toc_offset < 8) {
    c.toc_note = "at " + HexU64(c.toc_offset) + ", past the end of the file (" +
                 std::to_string(size) + " bytes): the file is cut; frames are read to its end";
  } else if (c.toc_offset < c.frames_start) {
    return HeaderError(file, 40,
                       "TOC offset " + HexU64(c.toc_offset) + " lies before the frames (" +
                           HexU64(c.frames_start) + ")");
  } else {
    const std::uint64_t m = U64At(data, c.toc_offset);
    const std::uint64_t bytes = size - c.toc_offset - 8;
    if (m == 0) {
      return Status::Corruption(file + ": TOC at offset " + HexU64(c.toc_offset) +
                                ": 0 frames per entry");
    }
    if (bytes % 8 != 0) {
      return Status::Corruption(file + ": TOC at offset " + HexU64(c.toc_offset) + ": " +
                                std::to_string(bytes) +
                                " bytes of entries, not a whole number of u64 offsets");
    }
    std::uint64_t previous = kBapHeaderSize;
    for (std::uint64_t at = c.toc_offset + 8; at < size; at += 8) {
      const std::uint64_t entry = U64At(data, at);
      if (entry < previous || entry > c.toc_offset) {
        return Status::Corruption(file + ": TOC entry at offset " + HexU64(at) + ": " +
                                  HexU64(entry) + " is not a frame offset in [" + HexU64(previous) +
                                  ", " + HexU64(c.toc_offset) + "]");
      }
      previous = entry;
    }
    c.frames_end = c.toc_offset;
    c.toc_frames_per_entry = m;
    c.toc_entries = bytes / 8;
    c.toc_note = "at " + HexU64(c.toc_offset) + ": " + std::to_string(c.toc_entries) +
                 " entries of " + std::to_string(m) + " frames";
  }
  if (c.frames_start > c.frames_end) {
    return HeaderError(file, 40, "the meta frame ends after the TOC offset");
  }
  return c;
}

Expected<std::uint64_t> BapFrameAt(std::span<const std::uint8_t> data, const std::string& file,
                                   const BapContainer& container, std::uint64_t offset,
                                   std::uint64_t index, google::protobuf::Message* frame) {
  const auto where = [&] {
    return file + ": frame " + std::to_string(index) + " at offset " + HexU64(offset) + ": ";
  };
  const std::uint64_t left = container.frames_end - offset;
  if (left < 8) {
    return Status::Corruption(where() + "the file ends " + std::to_string(left) +
                              " bytes into its length field");
  }
  const std::uint64_t len = U64At(data, offset);
  if (len == 0) return Status::Corruption(where() + "length 0");
  if (len > left - 8) {
    return Status::Corruption(where() + "length " + std::to_string(len) + ", only " +
                              std::to_string(left - 8) + " bytes follow");
  }
  if (len > INT_MAX) return Status::Unsupported(where() + "frames of 2 GiB or more");
  if (!frame->ParsePartialFromArray(data.data() + offset + 8, static_cast<int>(len))) {
    return Status::Corruption(where() + "its " + std::to_string(len) +
                              " bytes are not a valid frame protobuf message");
  }
  if (!frame->IsInitialized()) {
    std::string missing = frame->InitializationErrorString();
    if (missing.size() > 200) missing = missing.substr(0, 200) + "...";
    return Status::Corruption(where() + "misses required fields: " + missing);
  }
  return offset + 8 + len;
}

}  // namespace backstep::core
