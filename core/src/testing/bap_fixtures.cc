#include "testing/bap_fixtures.h"

#include "backstep/testing/fake_trace.h"
#include "backstep/testing/fake_trace_generator.h"
#include "backstep/testing/reader_fuzz.h"
#include "formats/bap/bap_test_util.h"
#include "formats/bap/bap_trace_writer.h"

namespace backstep::core::testing {
namespace {

std::string Le(std::uint64_t v, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i) out += static_cast<char>(i < 8 ? v >> (8 * i) : 0);
  return out;
}

void PutU64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

void PutMessage(std::vector<std::uint8_t>& out, const google::protobuf::MessageLite& m) {
  const std::string bytes = m.SerializeAsString();
  PutU64(out, bytes.size());
  out.insert(out.end(), bytes.begin(), bytes.end());
}

void Usage(bp::operand_usage* u, bool written) {
  u->set_read(!written);
  u->set_written(written);
  u->set_index(false);
  u->set_base(false);
}

// A literal's bytes, embedded NULs included.
template <std::size_t N>
std::string Raw(const char (&s)[N]) {
  return std::string(s, N - 1);
}

}  // namespace

bp::operand_info BapReg(const std::string& name, std::uint64_t value, int bytes, bool legacy) {
  bp::operand_info op;
  op.mutable_operand_info_specific()->mutable_reg_operand()->set_name(name);
  op.set_bit_length(legacy ? 0 : 8 * bytes);
  Usage(op.mutable_operand_usage(), false);
  op.mutable_taint_info()->set_no_taint(true);
  op.set_value(Le(value, bytes));
  return op;
}

bp::operand_info BapMem(std::uint64_t address, const std::string& value, bool written) {
  bp::operand_info op;
  op.mutable_operand_info_specific()->mutable_mem_operand()->set_address(address);
  op.set_bit_length(static_cast<std::int32_t>(8 * value.size()));
  Usage(op.mutable_operand_usage(), written);
  op.mutable_taint_info()->set_taint_id(3);
  op.set_value(value);
  return op;
}

bp::frame BapStd(std::uint64_t thread, std::uint64_t address, const std::string& rawbytes,
                 const std::vector<bp::operand_info>& pre,
                 const std::vector<bp::operand_info>& post) {
  bp::frame f;
  bp::std_frame* s = f.mutable_std_frame();
  s->set_address(address);
  s->set_thread_id(thread);
  s->set_rawbytes(rawbytes);
  for (const auto& op : pre) *s->mutable_operand_pre_list()->add_elem() = op;
  s->mutable_operand_pre_list();
  if (!post.empty()) {
    for (const auto& op : post) *s->mutable_operand_post_list()->add_elem() = op;
  }
  return f;
}

bp::meta_frame BapMeta(const std::string& tracer, const std::string& version) {
  bp::meta_frame m;
  m.mutable_tracer()->set_name(tracer);
  m.mutable_tracer()->add_args("-tracefile");
  m.mutable_tracer()->add_args("prog.frames");
  m.mutable_tracer()->set_version(version);
  m.mutable_target()->set_path("/tmp/prog");
  m.mutable_target()->add_args("prog");
  m.mutable_target()->set_md5sum(std::string(16, '\x5a'));
  m.mutable_fstats()->set_size(4096);
  m.mutable_fstats()->set_atime(1.5);
  m.mutable_fstats()->set_mtime(2.5);
  m.mutable_fstats()->set_ctime(3.5);
  m.set_user("alice");
  m.set_host("box");
  m.set_time(1700000000.25);
  return m;
}

std::vector<std::uint8_t> HandBapFile(const std::vector<bp::frame>& frames, const BapFileSpec& spec,
                                      const bp::meta_frame& meta) {
  std::vector<std::uint8_t> out;
  PutU64(out, spec.magic);
  PutU64(out, spec.version);
  PutU64(out, spec.arch);
  PutU64(out, spec.machine);
  PutU64(out, 0);
  PutU64(out, 0);
  if (spec.version >= 2) PutMessage(out, meta);
  std::vector<std::uint64_t> toc;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (i != 0 && i % spec.frames_per_toc_entry == 0) toc.push_back(out.size());
    PutMessage(out, frames[i]);
  }
  if (!spec.finished) return out;
  const std::uint64_t toc_offset = out.size();
  PutU64(out, spec.frames_per_toc_entry);
  for (std::uint64_t entry : toc) PutU64(out, entry);
  const std::uint64_t n = spec.declare_frames ? frames.size() : 0;
  for (int i = 0; i < 8; ++i) {
    out[32 + i] = static_cast<std::uint8_t>(n >> (8 * i));
    out[40 + i] = static_cast<std::uint8_t>(toc_offset >> (8 * i));
  }
  return out;
}

std::vector<bp::frame> SmallBapFrames() {
  std::vector<bp::frame> f;
  // 0: thread 0 (legacy QEMU style): mov rax, [0x601000].
  f.push_back(BapStd(0, 0x401000, Raw("\x48\x8b\x04\x25\x00\x10\x60\x00"),
                     {BapMem(0x601000, Le(0x1122334455667788, 8))},
                     {BapReg("RAX", 0x1122334455667788)}));
  // 1: thread 1 (TCG plugin style): inc rbx; flags and an unmapped name.
  f.push_back(
      BapStd(1, 0x402000, Raw("\x48\xff\xc3"),
             {BapReg("rbx", 5, 8, false), BapReg("eflags", 0x202, 4, false),
              BapReg("k_gs_base", 0xffff800000000000, 8, false), BapReg("ES_BASE", 0, 8, false)},
             {BapReg("rbx", 6, 8, false), BapReg("eflags", 0x206, 4, false)}));
  // 2: a module load.
  {
    bp::frame m;
    m.mutable_modload_frame()->set_module_name("libc.so.6");
    m.mutable_modload_frame()->set_low_address(0x7f0000000000);
    m.mutable_modload_frame()->set_high_address(0x7f0000100000);
    f.push_back(m);
  }
  // 3: thread 0: mov [0x601008], rax (a store: post-list memory).
  f.push_back(BapStd(0, 0x401008, Raw("\x48\x89\x04\x25\x08\x10\x60\x00"),
                     {BapReg("RAX", 0x1122334455667788)},
                     {BapMem(0x601008, Le(0x1122334455667788, 8), true)}));
  // 4: thread 0's system call write(1, 0x601000, 8).
  {
    bp::frame s;
    s.mutable_syscall_frame()->set_address(0x401010);
    s.mutable_syscall_frame()->set_thread_id(0);
    s.mutable_syscall_frame()->set_number(1);
    for (std::int64_t a : {1, 0x601000, 8})
      s.mutable_syscall_frame()->mutable_argument_list()->add_elem(a);
    f.push_back(s);
  }
  // 5: an exception in thread 1 (page fault) to a handler.
  {
    bp::frame e;
    e.mutable_exception_frame()->set_exception_number(14);
    e.mutable_exception_frame()->set_thread_id(1);
    e.mutable_exception_frame()->set_from_addr(0x402003);
    e.mutable_exception_frame()->set_to_addr(0x403000);
    f.push_back(e);
  }
  // 6: tainted input arrives at 0x601010.
  {
    bp::frame t;
    bp::taint_intro* ti = t.mutable_taint_intro_frame()->mutable_taint_intro_list()->add_elem();
    ti->set_addr(0x601010);
    ti->set_taint_id(1);
    ti->set_value("abcd");
    ti->set_source_name("stdin");
    ti->set_offset(0);
    bp::taint_intro* none = t.mutable_taint_intro_frame()->mutable_taint_intro_list()->add_elem();
    none->set_addr(0x601100);
    none->set_taint_id(2);
    f.push_back(t);
  }
  // 7: a key frame of thread 1: rcx and 3 bytes at 0x601020.
  {
    bp::frame k;
    bp::tagged_value_list* l = k.mutable_key_frame()->mutable_tagged_value_lists()->add_elem();
    l->mutable_value_source_tag()->set_thread_id(1);
    bp::value_info* r = l->mutable_value_list()->add_elem();
    r->mutable_operand_info_specific()->mutable_reg_operand()->set_name("rcx");
    r->set_bit_length(64);
    r->set_value(Le(7, 8));
    bp::value_info* m = l->mutable_value_list()->add_elem();
    m->mutable_operand_info_specific()->mutable_mem_operand()->set_address(0x601020);
    m->set_bit_length(24);
    m->set_value("xyz");
    f.push_back(k);
  }
  // 8: thread 1 in the handler: push rbx (rsp written, a store); st0 is
  // not mapped (derived), RFLAGS 8 bytes into eflags.
  f.push_back(BapStd(
      1, 0x403000, Raw("\x53"),
      {BapReg("RSP", 0x7ffe0010), BapReg("RBX", 6), BapReg("st0", 1, 10, false)},
      {BapReg("RSP", 0x7ffe0008), BapMem(0x7ffe0008, Le(6, 8), true), BapReg("RFLAGS", 0x246)}));
  // 9: thread 0 reads the tainted bytes: mov edx, [0x601010] (a 4-byte load
  // whose value the tracer stored as 8 host bytes).
  {
    bp::operand_info wide = BapMem(0x601010, std::string("abcd") + std::string(4, '\0'));
    wide.set_bit_length(32);
    f.push_back(BapStd(0, 0x401012, Raw("\x8b\x14\x25\x10\x10\x60\x00"), {wide},
                       {BapReg("RDX", 0x64636261)}));
  }
  // 10: thread 0 again (the pc after 9), nothing touched but rip.
  f.push_back(BapStd(0, 0x401019, Raw("\x90"), {}));
  return f;
}

std::vector<std::uint8_t> SmallBapTrace(const BapFileSpec& spec) {
  return HandBapFile(SmallBapFrames(), spec);
}

std::vector<std::pair<std::string, std::vector<std::uint8_t>>> BapSeedFiles() {
  BapFileSpec v1, unfinished, i386;
  v1.version = 1;
  unfinished.finished = false;
  i386.machine = 1;
  std::vector<bp::frame> i386_frames = {
      BapStd(0, 0x8048000, "\x90", {BapReg("EAX", 2, 4)}, {BapReg("EAX", 3, 4)}),
      BapStd(1, 0x8048001, "\x90", {BapMem(0x9000, "abcd")})};
  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> files = {
      {"small.frames", SmallBapTrace()},
      {"small_v1.frames", SmallBapTrace(v1)},
      {"unfinished.frames", SmallBapTrace(unfinished)},
      {"i386.frames", HandBapFile(i386_frames, i386)}};
  FakeTraceOptions o;
  o.events = 300;
  o.threads = 3;
  o.records_reads = true;
  o.full_image = false;
  o.full_registers = false;
  auto source = OpenFakeTrace(FakeTraceSource(bap_test::BapConvertible(GenerateFakeTrace(o))));
  auto writer = BapTraceWriter::InMemory();
  if (source.ok() && ConvertTrace(**source, *writer, "seed").ok()) {
    files.emplace_back("generated.frames", writer->bytes());
  }
  return files;
}

}  // namespace backstep::core::testing
