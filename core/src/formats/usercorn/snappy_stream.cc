#include "formats/usercorn/snappy_stream.h"

#include <snappy.h>

#include <algorithm>
#include <cstring>

#include "formats/usercorn/crc32c.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

constexpr std::size_t kChunkHeader = 4;
constexpr std::size_t kCrcBytes = 4;

std::uint32_t Le32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
         std::uint32_t{p[3]} << 24;
}

}  // namespace

SnappyStream::SnappyStream(std::span<const std::uint8_t> file, std::uint64_t begin,
                           std::string name)
    : file_(file), begin_(std::min<std::uint64_t>(begin, file.size())), name_(std::move(name)) {
  chunk_ = next_ = begin_;
}

Status SnappyStream::Fail(std::uint64_t at, const std::string& what) const {
  return Status::Corruption(name_ + ": snappy stream at offset " + HexU64(at) + ": " + what);
}

Status SnappyStream::Start() {
  loaded_ = false;
  truncated_ = false;
  chunk_ = next_ = begin_;
  const std::uint64_t left = file_.size() - begin_;
  if (left == 0) return Status::Ok();
  const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, 10));
  if (n < 10 || std::memcmp(file_.data() + begin_, kSnappyStreamIdentifier, 10) != 0) {
    return Fail(begin_, "expected the stream identifier ff 06 00 00 73 4e 61 50 70 59, found " +
                            HexBytes(file_.subspan(begin_, n), ' ') +
                            (n < 10 ? " (file ends)" : ""));
  }
  chunk_ = next_ = begin_ + 10;
  return Status::Ok();
}

Status SnappyStream::LoadAt(std::uint64_t at, bool* is_data) {
  *is_data = false;
  const std::uint64_t left = file_.size() - at;
  if (left < kChunkHeader) {
    truncated_ = left != 0;
    return Status::OutOfRange(name_ + ": snappy stream at offset " + HexU64(at) +
                              (left == 0 ? ": end of data" : ": file ends inside a chunk header"));
  }
  const std::uint8_t* h = file_.data() + at;
  const std::uint8_t type = h[0];
  const std::uint32_t length =
      std::uint32_t{h[1]} | std::uint32_t{h[2]} << 8 | std::uint32_t{h[3]} << 16;
  if (length > left - kChunkHeader) {
    truncated_ = true;
    return Status::OutOfRange(name_ + ": snappy stream at offset " + HexU64(at) + ": chunk of " +
                              std::to_string(length) + " bytes cut by the end of the file");
  }
  const std::uint8_t* payload = h + kChunkHeader;
  const std::uint64_t after = at + kChunkHeader + length;
  if (type == kSnappyIdentifier) {
    if (length != 6 || std::memcmp(payload, kSnappyStreamIdentifier + 4, 6) != 0) {
      return Fail(at, "malformed stream identifier chunk");
    }
    next_ = after;
    return Status::Ok();
  }
  if (type >= 0x80) {  // padding, reserved skippable
    next_ = after;
    return Status::Ok();
  }
  if (type > kSnappyUncompressed) {
    return Fail(at, "reserved unskippable chunk type " + HexU64(type));
  }
  if (length < kCrcBytes) return Fail(at, "data chunk shorter than its CRC");
  const std::uint32_t stored = Le32(payload);
  const char* body = reinterpret_cast<const char*>(payload + kCrcBytes);
  const std::size_t body_size = length - kCrcBytes;
  if (type == kSnappyCompressed) {
    std::size_t size = 0;
    if (!snappy::GetUncompressedLength(body, body_size, &size)) {
      return Fail(at, "undecodable snappy block length");
    }
    if (size > kSnappyMaxChunkData) {
      return Fail(at, "chunk decompresses to " + std::to_string(size) + " bytes (at most 65536)");
    }
    buffer_.resize(size);
    if (!snappy::RawUncompress(body, body_size, reinterpret_cast<char*>(buffer_.data()))) {
      return Fail(at, "corrupt snappy block");
    }
    data_ = buffer_;
  } else {
    if (body_size > kSnappyMaxChunkData) {
      return Fail(at,
                  "uncompressed chunk of " + std::to_string(body_size) + " bytes (at most 65536)");
    }
    data_ = std::span<const std::uint8_t>(payload + kCrcBytes, body_size);
  }
  const std::uint32_t actual = MaskCrc32c(Crc32c(data_));
  if (actual != stored) {
    return Fail(at, "CRC mismatch (stored " + HexPadded(stored, 8) + ", data has " +
                        HexPadded(actual, 8) + ")");
  }
  chunk_ = at;
  next_ = after;
  pos_ = 0;
  loaded_ = true;
  *is_data = true;
  return Status::Ok();
}

Status SnappyStream::LoadNext() {
  for (;;) {
    loaded_ = false;
    bool is_data = false;
    BACKSTEP_RETURN_IF_ERROR(LoadAt(next_, &is_data));
    if (is_data && !data_.empty()) return Status::Ok();
  }
}

Status SnappyStream::Peek(std::uint8_t* byte) {
  if (!loaded_ || pos_ == data_.size()) BACKSTEP_RETURN_IF_ERROR(LoadNext());
  *byte = data_[pos_];
  return Status::Ok();
}

Status SnappyStream::Read(std::uint8_t* out, std::size_t n) {
  while (n > 0) {
    if (!loaded_ || pos_ == data_.size()) BACKSTEP_RETURN_IF_ERROR(LoadNext());
    const std::size_t k = std::min<std::size_t>(n, data_.size() - pos_);
    std::memcpy(out, data_.data() + pos_, k);
    pos_ += static_cast<std::uint32_t>(k);
    out += k;
    n -= k;
  }
  return Status::Ok();
}

Status SnappyStream::ReadAppend(std::uint64_t n, std::vector<std::uint8_t>* out) {
  while (n > 0) {
    if (!loaded_ || pos_ == data_.size()) BACKSTEP_RETURN_IF_ERROR(LoadNext());
    const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(n, data_.size() - pos_));
    out->insert(out->end(), data_.begin() + pos_, data_.begin() + pos_ + k);
    pos_ += static_cast<std::uint32_t>(k);
    n -= k;
  }
  return Status::Ok();
}

SnappyPos SnappyStream::Tell() const {
  if (!loaded_) return {next_, 0};
  return {chunk_, pos_};
}

Status SnappyStream::Seek(SnappyPos pos) {
  truncated_ = false;
  if (pos.chunk < begin_ || pos.chunk > file_.size() || pos.offset > kSnappyMaxChunkData) {
    return Status::InvalidArgument(name_ + ": cannot resume at offset " + HexU64(pos.chunk) + " +" +
                                   HexU64(pos.offset) + " (outside the snappy stream)");
  }
  if (loaded_ && pos.chunk == chunk_) {  // the loaded chunk: no decoding
    if (pos.offset > data_.size()) {
      return Status::InvalidArgument(name_ + ": cannot resume at offset " + HexU64(pos.chunk) +
                                     " +" + HexU64(pos.offset) + " (past the chunk's data)");
    }
    pos_ = pos.offset;
    return Status::Ok();
  }
  loaded_ = false;
  next_ = pos.chunk;
  if (pos.offset == 0) return Status::Ok();
  bool is_data = false;
  Status s = LoadAt(pos.chunk, &is_data);
  if (s.IsOutOfRange()) s = Status::InvalidArgument(s.message() + " (cannot resume there)");
  BACKSTEP_RETURN_IF_ERROR(s);
  if (!is_data || pos.offset > data_.size()) {
    loaded_ = false;
    next_ = pos.chunk;
    return Status::InvalidArgument(name_ + ": cannot resume at offset " + HexU64(pos.chunk) + " +" +
                                   HexU64(pos.offset) + " (not inside a data chunk)");
  }
  pos_ = pos.offset;
  return Status::Ok();
}

std::string SnappyStream::Where() const {
  const SnappyPos p = Tell();
  return "offset " + HexU64(p.chunk) + " +" + HexU64(p.offset);
}

SnappyFrameWriter::SnappyFrameWriter(Sink sink, SnappyChunkMode mode, std::size_t chunk_size)
    : sink_(std::move(sink)),
      mode_(mode),
      chunk_size_(std::clamp<std::size_t>(chunk_size, 1, kSnappyMaxChunkData)) {}

void SnappyFrameWriter::Write(std::span<const std::uint8_t> data) {
  bytes_in_ += data.size();
  while (!data.empty()) {
    if (pending_.empty() && data.size() >= chunk_size_) {  // whole chunks skip the buffer
      EmitChunk(data.first(chunk_size_));
      data = data.subspan(chunk_size_);
      continue;
    }
    const std::size_t k = std::min(data.size(), chunk_size_ - pending_.size());
    pending_.insert(pending_.end(), data.begin(), data.begin() + k);
    data = data.subspan(k);
    if (pending_.size() == chunk_size_) Flush();
  }
}

void SnappyFrameWriter::Flush() {
  if (pending_.empty()) return;
  EmitChunk(pending_);
  pending_.clear();
}

void SnappyFrameWriter::EmitChunk(std::span<const std::uint8_t> data) {
  if (!wrote_identifier_) {
    sink_(kSnappyStreamIdentifier);
    wrote_identifier_ = true;
  }
  const std::uint32_t crc = MaskCrc32c(Crc32c(data));
  scratch_.resize(8 + snappy::MaxCompressedLength(data.size()));
  std::size_t compressed = 0;
  if (mode_ != SnappyChunkMode::kUncompressed) {
    snappy::RawCompress(reinterpret_cast<const char*>(data.data()), data.size(),
                        reinterpret_cast<char*>(scratch_.data() + 8), &compressed);
  }
  const bool use_compressed =
      mode_ == SnappyChunkMode::kCompressed ||
      (mode_ == SnappyChunkMode::kAuto && compressed < data.size() - data.size() / 8);
  const std::size_t length = kCrcBytes + (use_compressed ? compressed : data.size());
  std::uint8_t* h = scratch_.data();
  h[0] = use_compressed ? kSnappyCompressed : kSnappyUncompressed;
  h[1] = static_cast<std::uint8_t>(length);
  h[2] = static_cast<std::uint8_t>(length >> 8);
  h[3] = static_cast<std::uint8_t>(length >> 16);
  for (int i = 0; i < 4; ++i) h[4 + i] = static_cast<std::uint8_t>(crc >> (8 * i));
  if (use_compressed) {
    sink_(std::span<const std::uint8_t>(scratch_.data(), 8 + compressed));
  } else {
    sink_(std::span<const std::uint8_t>(scratch_.data(), 8));
    sink_(data);
  }
}

}  // namespace backstep::core
