#include "formats/usercorn/usercorn_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

namespace backstep::core {
namespace {

void PutLe(std::vector<std::uint8_t>& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

std::vector<std::uint8_t> FrameHeader(std::uint8_t type, std::uint64_t pid, std::uint32_t count) {
  std::vector<std::uint8_t> h{type};
  PutLe(h, pid, 8);
  PutLe(h, count, 4);
  return h;
}

}  // namespace

UsercornWriter::UsercornWriter(UsercornWriterOptions options)
    : options_(std::move(options)),
      snappy_([this](std::span<const std::uint8_t> b) { Output(b); }, options_.chunk_mode,
              options_.chunk_size) {}

UsercornWriter::~UsercornWriter() {
  if (part_fd_ < 0) return;
  close(part_fd_);
  unlink(part_path_.c_str());  // destroyed without Finish(): nothing left behind
}

Expected<std::unique_ptr<UsercornWriter>> UsercornWriter::CreatePart(
    const std::string& path, bool first, UsercornWriterOptions options) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IOError(path + ": cannot create: " + std::strerror(errno));
  std::unique_ptr<UsercornWriter> w(new UsercornWriter(std::move(options)));
  w->part_fd_ = fd;
  w->part_path_ = path;
  w->part_buf_.reserve((1u << 20) + kSnappyMaxChunkData + 64);
  if (!first) w->snappy_.Continue();
  return w;
}

void UsercornWriter::WritePart() {
  for (std::size_t done = 0; done < part_buf_.size() && status_.ok();) {
    const ssize_t n = ::write(part_fd_, part_buf_.data() + done, part_buf_.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (!(n < 0 && errno == EINTR)) {
      status_ = Status::IOError(part_path_ + ": write failed: " + std::strerror(errno));
    }
  }
  part_buf_.clear();
}

Status UsercornWriter::AppendPart(const std::string& path, std::uint64_t size) {
  if (!open_.empty()) Fail("AppendPart() inside an open frame (not at a cut)");
  snappy_.Flush();
  if (!status_.ok()) return status_;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  Status checked = Status::Ok();
  if (fstat(fd, &st) != 0 || static_cast<std::uint64_t>(st.st_size) != size) {
    checked = Status::Corruption(path + ": damaged part: " + std::to_string(st.st_size) +
                                 " bytes, its writer wrote " + std::to_string(size));
  }
  // Whole chunks: each header's length leads to the next, the last to the end.
  for (std::uint64_t at = 0; checked.ok() && at < size;) {
    std::uint8_t h[4];
    if (pread(fd, h, 4, static_cast<off_t>(at)) != 4 || (h[0] >= 0x02 && h[0] <= 0x7f) ||
        at + 4 + (h[1] | h[2] << 8 | std::uint64_t{h[3]} << 16) > size) {
      checked = Status::Corruption(path + ": damaged part: no whole snappy chunk at offset " +
                                   std::to_string(at));
      break;
    }
    at += 4 + (h[1] | h[2] << 8 | std::uint64_t{h[3]} << 16);
  }
  if (checked.ok()) {
    if (file_) {
      file_->AppendFrom(fd, size);
      if (!file_->status().ok() && status_.ok()) status_ = file_->status();
    } else {
      std::vector<std::uint8_t> bytes(size);
      if (pread(fd, bytes.data(), size, 0) != static_cast<ssize_t>(size)) {
        checked = Status::IOError(path + ": read failed");
      }
      buf_.insert(buf_.end(), bytes.begin(), bytes.end());
    }
    written_ += size;
  }
  close(fd);
  // Whatever follows continues the joined stream.
  snappy_.Continue();
  return checked.ok() ? status_ : checked;
}

Expected<std::unique_ptr<UsercornWriter>> UsercornWriter::CreateFile(
    const std::string& path, UsercornWriterOptions options) {
  BACKSTEP_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(path));
  std::unique_ptr<UsercornWriter> w(new UsercornWriter(std::move(options)));
  w->file_.emplace(std::move(file));
  w->WriteHeader();
  return w;
}

std::unique_ptr<UsercornWriter> UsercornWriter::CreateMemory(UsercornWriterOptions options) {
  std::unique_ptr<UsercornWriter> w(new UsercornWriter(std::move(options)));
  w->WriteHeader();
  return w;
}

void UsercornWriter::WriteHeader() {
  std::vector<std::uint8_t> h(kUcirMagic, kUcirMagic + 4);
  for (int shift = 24; shift >= 0; shift -= 8) {
    h.push_back(static_cast<std::uint8_t>(options_.version >> shift));  // big-endian
  }
  for (const std::string* name : {&options_.arch, &options_.os}) {
    std::vector<std::uint8_t> field(kUcirNameSize, 0);
    std::copy_n(name->begin(), std::min<std::size_t>(name->size(), kUcirNameSize), field.begin());
    h.insert(h.end(), field.begin(), field.end());
  }
  h.push_back(options_.code_order);
  h.push_back(options_.data_order);
  Output(h);
}

void UsercornWriter::Output(std::span<const std::uint8_t> bytes) {
  written_ += bytes.size();
  if (file_) {
    file_->Write(bytes);
  } else if (part_fd_ >= 0) {
    part_buf_.insert(part_buf_.end(), bytes.begin(), bytes.end());
    if (part_buf_.size() >= (1u << 20)) WritePart();
  } else {
    buf_.insert(buf_.end(), bytes.begin(), bytes.end());
  }
}

void UsercornWriter::Fail(const std::string& what) {
  if (status_.ok()) status_ = Status::InvalidArgument("usercorn writer: " + what);
}

void UsercornWriter::Emit(std::span<const std::uint8_t> head, std::span<const std::uint8_t> data) {
  if (open_.empty() || open_.back().declared) {
    snappy_.Write(head);
    snappy_.Write(data);
  } else {
    auto& ops = open_.back().ops;
    ops.insert(ops.end(), head.begin(), head.end());
    ops.insert(ops.end(), data.begin(), data.end());
  }
  if (!open_.empty()) ++open_.back().count;
}

void UsercornWriter::Begin(std::uint8_t type, std::vector<std::uint8_t> header,
                           std::optional<std::uint32_t> declared) {
  if (declared) {
    if (!open_.empty()) return Fail("a streamed container must be at the top level");
    snappy_.Write(header);
  }
  open_.push_back({type, std::move(header), {}, 0, declared});
}

void UsercornWriter::End(std::uint8_t type, std::optional<std::uint64_t> count_override) {
  if (open_.empty() || (open_.back().type == kOpSyscall) != (type == kOpSyscall)) {
    return Fail("End of a container that is not open");
  }
  Container c = std::move(open_.back());
  open_.pop_back();
  if (c.declared) {
    if (c.count != *c.declared) {
      Fail("frame declared " + std::to_string(*c.declared) + " ops, got " +
           std::to_string(c.count));
    }
    return;
  }
  const std::uint64_t count = count_override.value_or(c.count);
  if (type == kOpSyscall) {
    if (count > 0xffff) return Fail("more than 65535 ops in a SYSCALL");
    c.header[14] = static_cast<std::uint8_t>(count);
    c.header[15] = static_cast<std::uint8_t>(count >> 8);
  } else {
    if (count > 0xffffffffu) return Fail("more than 2^32 - 1 ops in a frame");
    for (int i = 0; i < 4; ++i) c.header[9 + i] = static_cast<std::uint8_t>(count >> (8 * i));
  }
  Emit(c.header, c.ops);
}

void UsercornWriter::BeginKeyframe(std::uint64_t pid, std::optional<std::uint32_t> declared) {
  Begin(kOpKeyframe, FrameHeader(kOpKeyframe, pid, declared.value_or(0)), declared);
}

void UsercornWriter::BeginFrame(std::uint64_t pid, std::optional<std::uint32_t> declared) {
  Begin(kOpFrame, FrameHeader(kOpFrame, pid, declared.value_or(0)), declared);
}

void UsercornWriter::EndFrame(std::optional<std::uint32_t> count_override) {
  End(kOpFrame, count_override);
}

void UsercornWriter::BeginSyscall(std::uint32_t num, std::uint64_t ret,
                                  std::span<const std::uint64_t> args) {
  if (args.size() > 0xff) return Fail("more than 255 syscall arguments");
  std::vector<std::uint8_t> h{kOpSyscall};
  PutLe(h, num, 4);
  PutLe(h, ret, 8);
  h.push_back(static_cast<std::uint8_t>(args.size()));
  PutLe(h, 0, 2);  // op count, patched by EndSyscall
  for (std::uint64_t a : args) PutLe(h, a, 8);
  Begin(kOpSyscall, std::move(h), std::nullopt);
}

void UsercornWriter::EndSyscall(std::optional<std::uint16_t> count_override) {
  End(kOpSyscall, count_override);
}

void UsercornWriter::Nop() {
  const std::uint8_t op = kOpNop;
  Emit(std::span<const std::uint8_t>(&op, 1));
}

void UsercornWriter::Exit() {
  const std::uint8_t op = kOpExit;
  Emit(std::span<const std::uint8_t>(&op, 1));
}

void UsercornWriter::Jmp(Address address, std::uint32_t block_size) {
  head_.assign(1, kOpJmp);
  PutLe(head_, address, 8);
  PutLe(head_, block_size, 4);
  Emit(head_);
}

void UsercornWriter::Step(std::uint8_t size) {
  const std::uint8_t op[2] = {kOpStep, size};
  Emit(op);
}

void UsercornWriter::Reg(std::uint16_t unicorn, std::uint64_t value) {
  head_.assign(1, kOpReg);
  PutLe(head_, unicorn, 2);
  PutLe(head_, value, 8);
  Emit(head_);
}

void UsercornWriter::SpReg(std::uint16_t unicorn, std::span<const std::uint8_t> value) {
  if (value.size() > 0xffff) return Fail("SPREG value longer than 65535 bytes");
  head_.assign(1, kOpSpReg);
  PutLe(head_, unicorn, 2);
  PutLe(head_, value.size(), 2);
  Emit(head_, value);
}

void UsercornWriter::MemRead(Address address, std::uint32_t size) {
  head_.assign(1, kOpMemRead);
  PutLe(head_, address, 8);
  PutLe(head_, size, 4);
  Emit(head_);
}

void UsercornWriter::MemWrite(Address address, std::span<const std::uint8_t> data) {
  if (data.size() > std::numeric_limits<std::uint32_t>::max()) {
    return Fail("MEM_WRITE of 4 GiB or more");
  }
  head_.assign(1, kOpMemWrite);
  PutLe(head_, address, 8);
  PutLe(head_, data.size(), 4);
  Emit(head_, data);
}

void UsercornWriter::MemMap(const UsercornMapping& m) {
  if (m.desc.size() > 0xffff || m.file.size() > 0xffff) return Fail("MEM_MAP name too long");
  head_.assign(1, kOpMemMap);
  PutLe(head_, m.address, 8);
  PutLe(head_, m.size, 8);
  head_.push_back(m.prot);
  PutLe(head_, m.file_offset, 8);
  PutLe(head_, m.file_length, 8);
  PutLe(head_, m.desc.size(), 2);
  PutLe(head_, m.file.size(), 2);
  head_.insert(head_.end(), m.desc.begin(), m.desc.end());
  head_.insert(head_.end(), m.file.begin(), m.file.end());
  Emit(head_);
}

void UsercornWriter::MemUnmap(Address address, std::uint64_t size) {
  head_.assign(1, kOpMemUnmap);
  PutLe(head_, address, 8);
  PutLe(head_, size, 8);
  Emit(head_);
}

void UsercornWriter::MemProt(Address address, std::uint64_t size, std::uint8_t prot) {
  head_.assign(1, kOpMemProt);
  PutLe(head_, address, 8);
  PutLe(head_, size, 8);
  head_.push_back(prot);
  Emit(head_);
}

void UsercornWriter::Raw(std::span<const std::uint8_t> bytes) { Emit(bytes); }

void UsercornWriter::Flush() {
  while (!open_.empty() && open_.back().type == kOpFrame && !open_.back().declared) EndFrame();
  snappy_.Flush();
}

Status UsercornWriter::Finish() {
  if (finished_) return Status::InvalidArgument("usercorn writer: Finish() called twice");
  finished_ = true;
  while (!open_.empty()) End(open_.back().type, std::nullopt);
  snappy_.Flush();
  if (part_fd_ >= 0) {
    WritePart();
    if (close(part_fd_) != 0 && status_.ok()) {
      status_ = Status::IOError(part_path_ + ": close failed: " + std::strerror(errno));
    }
    part_fd_ = -1;
  }
  if (!status_.ok()) return status_;
  if (file_) return file_->Commit();
  return Status::Ok();
}

}  // namespace backstep::core
