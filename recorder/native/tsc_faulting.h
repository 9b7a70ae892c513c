// Whether this machine makes rdtsc fault for a process that asks it to
// (prctl(PR_SET_TSC, PR_TSC_SIGSEGV)). The native engine logs the value of
// every rdtsc/rdtscp the program runs by answering that fault; a hypervisor
// that ignores the setting (seen on some VMs) lets the program read the
// counter unseen, and the materialization then diverges from the recording
// at the first value that reaches a register or memory it compares. ld.so
// reads the counter in every dynamically linked program.
//
// Thread-safety: safe; the probe runs once per process.
#pragma once

namespace backstep::record {

// Probes once (a child process that turns the setting on and runs rdtsc)
// and keeps the answer.
bool RdtscFaults();

// The explanation to add to a warning or an error when RdtscFaults() is
// false: what it breaks and what to use instead.
const char* RdtscNotFaultingHint();

}  // namespace backstep::record
