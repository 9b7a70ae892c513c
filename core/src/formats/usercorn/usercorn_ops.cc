#include "formats/usercorn/usercorn_ops.h"

#include "formats/usercorn/usercorn_format.h"
#include "util/byte_reader.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

constexpr const char* kNames[] = {"NOP",       "FRAME",    "KEYFRAME", "JMP",       "STEP",
                                  "REG",       "SPREG",    "MEM_READ", "MEM_WRITE", "MEM_MAP",
                                  "MEM_UNMAP", "MEM_PROT", "SYSCALL",  "EXIT"};

// Reads `n` fixed bytes and returns a reader over them.
Status ReadFixed(SnappyStream& in, std::uint8_t* buf, std::size_t n, ByteReader* r) {
  BACKSTEP_RETURN_IF_ERROR(in.Read(buf, n));
  *r = ByteReader(std::span<const std::uint8_t>(buf, n));
  return Status::Ok();
}

std::string Where(const std::string& name, SnappyPos at) {
  return name + ": op stream at offset " + HexU64(at.chunk) + " +" + HexU64(at.offset);
}

Status ReadData(SnappyStream& in, std::uint64_t n, std::vector<std::uint8_t>* arena,
                std::uint64_t limit, SnappyPos at) {
  if (n > limit || arena->size() > limit - n) {
    return Status::Unsupported(Where(in.name(), at) + ": " + std::to_string(n) +
                               " more bytes of data would exceed backstep's limit of " +
                               std::to_string(limit) + " per event");
  }
  return in.ReadAppend(n, arena);
}

}  // namespace

std::string UcirOpName(std::uint8_t type) {
  if (type <= kUcirMaxOp) return kNames[type];
  return "op " + HexU64(type);
}

std::string UcirProtString(std::uint8_t prot) {
  std::string s = "---";
  if (prot & kProtRead) s[0] = 'r';
  if (prot & kProtWrite) s[1] = 'w';
  if (prot & kProtExec) s[2] = 'x';
  return s;
}

Status ReadUcirOp(SnappyStream& in, UcirOpFields* op, std::vector<std::uint8_t>* arena,
                  std::uint64_t arena_limit) {
  const SnappyPos at = in.Tell();  // formatted only for messages
  BACKSTEP_RETURN_IF_ERROR(in.Read(&op->type, 1));
  std::uint8_t buf[kMemMapHeaderBytes];
  ByteReader r;
  switch (op->type) {
    case kOpNop:
    case kOpExit:
      return Status::Ok();
    case kOpFrame:
    case kOpKeyframe:
      BACKSTEP_RETURN_IF_ERROR(ReadFixed(in, buf, kFrameHeaderBytes, &r));
      op->pid = r.U64();
      op->count = r.U32();
      return Status::Ok();
    case kOpJmp:
    case kOpMemRead:
      BACKSTEP_RETURN_IF_ERROR(ReadFixed(in, buf, kJmpBytes, &r));
      op->addr = r.U64();
      op->size = r.U32();
      return Status::Ok();
    case kOpStep:
      BACKSTEP_RETURN_IF_ERROR(ReadFixed(in, buf, 1, &r));
      op->size = r.U8();
      return Status::Ok();
    case kOpReg:
      BACKSTEP_RETURN_IF_ERROR(ReadFixed(in, buf, kRegBytes, &r));
      op->reg = r.U16();
      op->value = r.U64();
      return Status::Ok();
    case kOpSpReg:
      BACKSTEP_RETURN_IF_ERROR(ReadFixed(in, buf, kSpRegHeaderBytes, &r));
      op->reg = r.U16();
      op->size = r.U16();
      op->data = arena->size();
      return ReadData(in, op->size, arena, arena_limit, at);
    case kOpMemWrite:
      BACKSTEP_RETURN_IF_ERROR(ReadFixed(in, buf, kMemWriteHeaderBytes, &r));
      op->addr = r.U64();
      op->size = r.U32();
      op->data = arena->size();
      return ReadData(in, op->size, arena, arena_limit, at);
    case kOpMemMap: {
      BACKSTEP_RETURN_IF_ERROR(ReadFixed(in, buf, kMemMapHeaderBytes, &r));
      op->addr = r.U64();
      op->size = r.U64();
      op->prot = r.U8();
      op->file_offset = r.U64();
      op->file_length = r.U64();
      const std::uint16_t desc_len = r.U16(), file_len = r.U16();
      op->desc.resize(desc_len);
      op->file.resize(file_len);
      BACKSTEP_RETURN_IF_ERROR(in.Read(reinterpret_cast<std::uint8_t*>(op->desc.data()), desc_len));
      return in.Read(reinterpret_cast<std::uint8_t*>(op->file.data()), file_len);
    }
    case kOpMemUnmap:
      BACKSTEP_RETURN_IF_ERROR(ReadFixed(in, buf, kMemUnmapBytes, &r));
      op->addr = r.U64();
      op->size = r.U64();
      return Status::Ok();
    case kOpMemProt:
      BACKSTEP_RETURN_IF_ERROR(ReadFixed(in, buf, kMemProtBytes, &r));
      op->addr = r.U64();
      op->size = r.U64();
      op->prot = r.U8();
      return Status::Ok();
    case kOpSyscall: {
      BACKSTEP_RETURN_IF_ERROR(ReadFixed(in, buf, kSyscallHeaderBytes, &r));
      op->num = r.U32();
      op->value = r.U64();
      const std::uint8_t nargs = r.U8();
      op->count = r.U16();
      op->args.resize(nargs);
      for (std::uint64_t& a : op->args) {
        BACKSTEP_RETURN_IF_ERROR(ReadFixed(in, buf, 8, &r));
        a = r.U64();
      }
      return Status::Ok();
    }
    default:
      return Status::Corruption(Where(in.name(), at) + ": unknown op type " + HexU64(op->type));
  }
}

}  // namespace backstep::core
