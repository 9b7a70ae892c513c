#include "packets/memory_region.h"

#include "protocol/hex.h"
#include "session/session.h"

namespace backstep::gdbstub {

std::string FormatMemoryRegion(const MemoryRegion& region) {
  std::string out = "start:";
  AppendHexNumber(out, region.start);
  out += ";size:";
  // size 0 stands for "up to the end of the address space".
  AppendHexNumber(out, region.size != 0 ? region.size : 0 - region.start);
  out += ';';
  if (!region.mapped) return out;
  std::string permissions;
  if (region.readable) permissions += 'r';
  if (region.writable) permissions += 'w';
  if (region.executable) permissions += 'x';
  if (!permissions.empty()) out += "permissions:" + permissions + ';';
  if (!region.name.empty()) {
    out += "name:";
    AppendHexBytes(out, region.name);
    out += ';';
  }
  return out;
}

Reply HandleMemoryRegionInfo(Session& session, std::string_view args) {
  auto addr = ParseHexU64(args);
  if (!addr) return Reply::BadArguments("qMemoryRegionInfo: malformed address");
  return Reply::Packet(FormatMemoryRegion(session.target().memory_map()->RegionAt(*addr)));
}

}  // namespace backstep::gdbstub
