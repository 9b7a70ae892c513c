#include "formats/bap/bap_writer.h"

#include "formats/bap/bap_format.h"

namespace backstep::core {

Expected<std::unique_ptr<BapWriter>> BapWriter::CreateFile(const std::string& path,
                                                           BapWriterOptions options) {
  BACKSTEP_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(path));
  std::unique_ptr<BapWriter> w(new BapWriter(options));
  w->file_.emplace(std::move(file));
  w->path_ = path;
  return w;
}

std::unique_ptr<BapWriter> BapWriter::CreateMemory(BapWriterOptions options) {
  return std::unique_ptr<BapWriter>(new BapWriter(options));
}

void BapWriter::Put(std::span<const std::uint8_t> bytes) {
  if (file_) {
    file_->Write(bytes);
  } else {
    memory_.insert(memory_.end(), bytes.begin(), bytes.end());
  }
}

void BapWriter::PutU64(std::uint64_t v) {
  std::uint8_t b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<std::uint8_t>(v >> (8 * i));
  Put(b);
}

void BapWriter::PatchU64(std::uint64_t offset, std::uint64_t v) {
  std::uint8_t b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<std::uint8_t>(v >> (8 * i));
  if (file_) {
    file_->WriteAt(offset, b);
  } else {
    std::copy(b, b + 8, memory_.begin() + static_cast<std::ptrdiff_t>(offset));
  }
}

Status BapWriter::Begin(std::uint64_t arch, std::uint64_t machine,
                        const bap_proto::meta_frame& meta) {
  PutU64(kBapMagic);
  PutU64(options_.version);
  PutU64(arch);
  PutU64(machine);
  PutU64(0);  // n, patched by Finish()
  PutU64(0);  // T, patched by Finish()
  if (options_.version >= 2) {
    if (!meta.SerializeToString(&scratch_)) {
      return status_ = Status::InvalidArgument(path_ + ": the meta frame misses a required field");
    }
    PutU64(scratch_.size());
    Put({reinterpret_cast<const std::uint8_t*>(scratch_.data()), scratch_.size()});
  }
  return file_ ? file_->status() : Status::Ok();
}

Status BapWriter::AppendFrame(const bap_proto::frame& frame) {
  if (!status_.ok()) return status_;
  if (!frame.SerializeToString(&scratch_)) {
    return status_ = Status::InvalidArgument(path_ + ": frame " + std::to_string(frames_) +
                                             " misses a required field");
  }
  if (frames_ != 0 && frames_ % options_.frames_per_toc_entry == 0) toc_.push_back(size());
  PutU64(scratch_.size());
  Put({reinterpret_cast<const std::uint8_t*>(scratch_.data()), scratch_.size()});
  ++frames_;
  return file_ ? file_->status() : Status::Ok();
}

Status BapWriter::Finish() {
  if (!status_.ok()) return status_;
  if (options_.write_toc) {
    const std::uint64_t toc = size();
    PutU64(options_.frames_per_toc_entry);
    for (std::uint64_t entry : toc_) PutU64(entry);
    PatchU64(32, frames_);
    PatchU64(40, toc);
  }
  return file_ ? file_->Commit() : Status::Ok();
}

}  // namespace backstep::core
