#include "formats/tfile/tfile_frames.h"

#include "formats/tfile/tfile_format.h"
#include "util/byte_reader.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

std::string FrameWhere(const std::string& file, std::uint64_t number, std::uint64_t offset) {
  return file + ": frame " + std::to_string(number) + " at offset " + HexU64(offset) + ": ";
}

}  // namespace

void TfileFrame::Clear() {
  number = 0;
  header = {};
  registers = {};
  memory.clear();
  tsv_values.clear();
  register_blocks = 0;
  static_blocks = 0;
}

Status DecodeTfileFrame(std::span<const std::uint8_t> file, const std::string& file_name,
                        std::uint64_t number, const TfileFrameHeader& header,
                        std::uint64_t register_block_size, TfileFrame* frame) {
  frame->Clear();
  frame->number = number;
  frame->header = header;
  const std::uint64_t data_at = header.offset + kTfileFrameHeaderSize;
  ByteReader r(file.subspan(data_at, header.size), data_at);
  auto fail = [&](std::uint64_t block_at, char type, const std::string& what) {
    return Status::Corruption(FrameWhere(file_name, number, header.offset) + type +
                              " block at offset " + HexU64(block_at) + ": " + what +
                              " (the frame's data ends at " + HexU64(data_at + header.size) + ")");
  };
  while (!r.empty()) {
    const std::uint64_t at = r.offset();
    const std::uint8_t type = r.U8();
    switch (type) {
      case kTfileBlockRegisters: {
        auto block = r.Bytes(register_block_size);
        if (!r.ok()) {
          return fail(at, 'R',
                      "the register block (" + std::to_string(register_block_size) +
                          " bytes) runs past the frame's end");
        }
        if (frame->register_blocks++ == 0) frame->registers = block;
        break;
      }
      case kTfileBlockMemory: {
        const Address address = r.U64();
        const std::uint16_t length = r.U16();
        if (!r.ok()) return fail(at, 'M', "the block header runs past the frame's end");
        auto bytes = r.Bytes(length);
        if (!r.ok()) {
          return fail(
              at, 'M',
              "length " + HexU64(length) + " at " + HexU64(address) + " runs past the frame's end");
        }
        if (length != 0 && address + (length - 1) < address) {
          return fail(at, 'M',
                      "length " + HexU64(length) + " at " + HexU64(address) +
                          " wraps around the address space");
        }
        frame->memory.push_back({address, bytes});
        break;
      }
      case kTfileBlockTsv: {
        TfileTsvValue v;
        v.number = static_cast<std::int32_t>(r.U32());
        v.value = static_cast<std::int64_t>(r.U64());
        if (!r.ok()) return fail(at, 'V', "the block (12 bytes) runs past the frame's end");
        frame->tsv_values.push_back(v);
        break;
      }
      case kTfileBlockStatic: {
        const std::uint16_t length = r.U16();
        r.Skip(length);
        if (!r.ok()) return fail(at, 'S', "the block runs past the frame's end");
        ++frame->static_blocks;
        break;
      }
      default:
        return Status::Corruption(FrameWhere(file_name, number, header.offset) +
                                  "unknown block type " + HexPadded(type, 2) + " at offset " +
                                  HexU64(at) + " (expected R, M, V or S)");
    }
  }
  return Status::Ok();
}

TfileScan ScanTfileFrames(std::span<const std::uint8_t> file, const std::string& file_name,
                          std::uint64_t first, std::uint64_t register_block_size) {
  TfileScan scan;
  std::uint64_t offset = first;
  TfileFrame scratch;
  while (offset < file.size()) {
    const std::uint64_t number = scan.frames.size();
    ByteReader r(file.subspan(offset), offset);
    TfileFrameHeader h;
    h.offset = offset;
    h.tpnum = static_cast<std::int16_t>(r.U16());
    if (r.ok() && h.tpnum == 0) {
      scan.end_marker = true;
      break;
    }
    h.size = r.U32();
    if (!r.ok()) {
      scan.damage = Status::Corruption(FrameWhere(file_name, number, offset) + "the file ends " +
                                       std::to_string(file.size() - offset) +
                                       " bytes into the 6-byte frame header");
      break;
    }
    if (h.size > r.remaining()) {
      scan.damage = Status::Corruption(FrameWhere(file_name, number, offset) + "tracepoint " +
                                       std::to_string(h.tpnum) + ", data size " + HexU64(h.size) +
                                       " runs past the end of the file (" + HexU64(r.remaining()) +
                                       " bytes left)");
      break;
    }
    Status s = DecodeTfileFrame(file, file_name, number, h, register_block_size, &scratch);
    if (!s.ok()) {
      scan.damage = s;
      break;
    }
    if (scratch.static_blocks) scan.static_frames.push_back(number);
    scan.frames.push_back(h);
    offset += kTfileFrameHeaderSize + h.size;
  }
  scan.end_offset = offset;
  return scan;
}

}  // namespace backstep::core
