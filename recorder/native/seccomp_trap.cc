#include "recorder/native/seccomp_trap.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

namespace backstep::record {

core::Status InstallSyscallTrap(Tracee& tracee, std::optional<std::uint64_t> allowed_ip) {
  user_regs_struct regs{};
  if (core::Status s = tracee.GetRegs(&regs); !s.ok()) return s;
  // Without an allowed address, it compares with an address no `syscall`
  // ends at (0).
  const std::uint64_t ip = allowed_ip.value_or(0);
  const auto ip_low = static_cast<std::uint32_t>(ip),
             ip_high = static_cast<std::uint32_t>(ip >> 32);
  const sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, instruction_pointer)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ip_low, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, instruction_pointer) + 4),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ip_high, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE),
  };
  // sock_fprog {u16 len; pointer filter} then the instructions, 1 KiB below
  // the stack pointer (the initial stack mapping is far larger).
  const std::uint64_t at = (regs.rsp - 1024) & ~std::uint64_t{15};
  const std::uint64_t code_at = at + 16;
  std::vector<std::uint8_t> image(16 + sizeof filter);
  const std::uint16_t len = sizeof filter / sizeof filter[0];
  std::memcpy(image.data(), &len, 2);
  std::memcpy(image.data() + 8, &code_at, 8);
  std::memcpy(image.data() + 16, filter, sizeof filter);
  std::vector<std::uint8_t> saved_stack(image.size());
  std::uint8_t saved_code[2] = {};
  if (tracee.ReadMemory(at, saved_stack) != saved_stack.size() ||
      tracee.ReadMemory(regs.rip, saved_code) != 2)
    return core::Status::IOError("cannot read the program's stack or first instruction");
  static const std::uint8_t kSyscall[2] = {0x0f, 0x05};
  if (core::Status s = tracee.WriteMemory(at, image); !s.ok()) return s;
  if (core::Status s = tracee.WriteMemory(regs.rip, kSyscall); !s.ok()) return s;
  core::Status status = core::Status::Ok();
  const std::uint64_t no_new_privs[] = {PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0};
  const std::uint64_t install[] = {SECCOMP_SET_MODE_FILTER, 0, at};
  for (const auto& [nr, args, what] :
       {std::tuple{std::uint64_t{SYS_prctl}, std::span<const std::uint64_t>(no_new_privs),
                   "prctl(PR_SET_NO_NEW_PRIVS)"},
        std::tuple{std::uint64_t{SYS_seccomp}, std::span<const std::uint64_t>(install),
                   "seccomp(SECCOMP_SET_MODE_FILTER)"}}) {
    core::Expected<std::uint64_t> r = tracee.InjectSyscall(tracee.pid(), regs.rip, nr, args);
    if (!r.ok()) {
      status = r.status();
      break;
    }
    if (*r > ~std::uint64_t{4095}) {
      status = core::Status::Unsupported(std::string("--engine native: ") + what +
                                         " failed: " + std::strerror(-static_cast<int>(*r)));
      break;
    }
  }
  // Restore the image whatever happened.
  if (core::Status s = tracee.WriteMemory(regs.rip, saved_code); !s.ok() && status.ok()) status = s;
  if (core::Status s = tracee.WriteMemory(at, saved_stack); !s.ok() && status.ok()) status = s;
  if (!status.ok()) return status;
  const long options = PTRACE_O_EXITKILL | PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK |
                       PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC | PTRACE_O_TRACESECCOMP |
                       PTRACE_O_TRACESYSGOOD;
  if (ptrace(PTRACE_SETOPTIONS, tracee.pid(), nullptr, options) != 0)
    return core::Status::IOError(std::string("PTRACE_SETOPTIONS: ") + std::strerror(errno));
  return core::Status::Ok();
}

}  // namespace backstep::record
