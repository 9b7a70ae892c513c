#include "recorder/native/native_io.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>

namespace backstep::record {

core::Status WriteFileAtomically(const std::string& path, const std::vector<std::uint8_t>& data,
                                 const std::string& what) {
  // A temporary file next to it, renamed into place: never half a file.
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data.data()),
              static_cast<std::streamsize>(data.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return core::Status::IOError("cannot write " + what + " " + tmp);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return core::Status::IOError("cannot rename " + what + " into " + path);
  }
  return core::Status::Ok();
}

core::Expected<std::vector<std::uint8_t>> ReadWholeFile(const std::string& path,
                                                        const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::Status::NotFound("cannot open " + what + " " + path);
  return std::vector<std::uint8_t>((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
}

}  // namespace backstep::record
