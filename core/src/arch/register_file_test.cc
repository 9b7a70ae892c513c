#include "backstep/core/register_file.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>

namespace backstep::core {
namespace {

RegisterId Id(std::string_view name) { return X86_64().Find(name).value(); }

RegisterWrite Write(RegisterId reg, RegisterOp op, std::uint64_t v) {
  RegisterWrite w;
  w.reg = reg;
  w.op = op;
  for (int i = 0; i < 8; ++i) w.value[i] = static_cast<std::uint8_t>(v >> (8 * i));
  return w;
}

TEST(RegisterFileTest, StartsUnknownAndZero) {
  RegisterFile f(X86_64());
  for (std::size_t i = 0; i < X86_64().register_count(); ++i) {
    EXPECT_FALSE(f.known(static_cast<RegisterId>(i)));
  }
  EXPECT_EQ(f.u64(Id("rax")), 0u);
  EXPECT_EQ(f.raw_storage().size(), X86_64().storage_size());
}

TEST(RegisterFileTest, SetAndReadBack) {
  RegisterFile f(X86_64());
  f.SetU64(Id("rax"), 0x1122334455667788);
  EXPECT_TRUE(f.known(Id("rax")));
  EXPECT_EQ(f.u64(Id("rax")), 0x1122334455667788u);
  f.SetU64(Id("eflags"), 0xffffffff00000246);  // truncated to 4 bytes
  EXPECT_EQ(f.u64(Id("eflags")), 0x246u);
  f.SetU64(Id("ldtr_limit"), 0x12345678);  // 3 bytes
  EXPECT_EQ(f.u64(Id("ldtr_limit")), 0x345678u);

  std::array<std::uint8_t, 16> x{};
  for (int i = 0; i < 16; ++i) x[i] = static_cast<std::uint8_t>(i + 1);
  f.Set(Id("xmm3"), x);
  std::array<std::uint8_t, 16> out{};
  EXPECT_TRUE(f.Read(Id("xmm3"), out));
  EXPECT_EQ(out, x);
  EXPECT_TRUE(std::equal(x.begin(), x.end(), f.bytes(Id("xmm3")).begin()));

  f.SetUnknown(Id("rax"));
  EXPECT_FALSE(f.known(Id("rax")));
  EXPECT_EQ(f.u64(Id("rax")), 0u);
  std::array<std::uint8_t, 8> r{};
  EXPECT_FALSE(f.Read(Id("rax"), r));

  f.Clear();
  EXPECT_FALSE(f.known(Id("xmm3")));
  EXPECT_EQ(f, RegisterFile(X86_64()));
}

TEST(RegisterFileTest, ApplyAddWrapsAndCarries) {
  RegisterFile f(X86_64());
  const RegisterId rip = Id("rip");
  f.Apply(Write(rip, RegisterOp::kSet, 0x10ff));
  f.Apply(Write(rip, RegisterOp::kAdd, 1));
  EXPECT_EQ(f.u64(rip), 0x1100u);
  f.Apply(Write(rip, RegisterOp::kSet, 0xffffffffffffffff));
  f.Apply(Write(rip, RegisterOp::kAdd, 2));
  EXPECT_EQ(f.u64(rip), 1u);  // modulo 2^64
  f.Apply(Write(rip, RegisterOp::kAdd, static_cast<std::uint64_t>(-8)));
  EXPECT_EQ(f.u64(rip), static_cast<std::uint64_t>(-7));

  const RegisterId limit = Id("tr_limit");  // 3 bytes: modulo 2^24
  f.Apply(Write(limit, RegisterOp::kSet, 0xffffff));
  f.Apply(Write(limit, RegisterOp::kAdd, 0x10));
  EXPECT_EQ(f.u64(limit), 0xfu);

  // 16-byte add: the carry ripples from byte 7 to byte 8.
  const RegisterId xmm = Id("xmm0");
  RegisterWrite set;
  set.reg = xmm;
  std::memset(set.value, 0, sizeof(set.value));
  std::memset(set.value, 0xff, 8);
  f.Apply(set);
  f.Apply(Write(xmm, RegisterOp::kAdd, 1));
  auto b = f.bytes(xmm);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(b[i], 0) << i;
  EXPECT_EQ(b[8], 1);
}

TEST(RegisterFileTest, ApplyAndOr) {
  RegisterFile f(X86_64());
  const RegisterId fl = Id("eflags");
  f.Apply(Write(fl, RegisterOp::kSet, 0x202));
  f.Apply(Write(fl, RegisterOp::kOr, 1 << 6));
  EXPECT_EQ(f.u64(fl), 0x242u);
  f.Apply(Write(fl, RegisterOp::kAnd, ~std::uint64_t{0x200}));
  EXPECT_EQ(f.u64(fl), 0x42u);
}

TEST(RegisterFileTest, OperationsOnUnknownStayUnknown) {
  RegisterFile f(X86_64());
  for (RegisterOp op : {RegisterOp::kAdd, RegisterOp::kAnd, RegisterOp::kOr}) {
    f.Apply(Write(Id("rsp"), op, 8));
    EXPECT_FALSE(f.known(Id("rsp")));
    EXPECT_EQ(f.u64(Id("rsp")), 0u);
  }
}

TEST(RegisterFileTest, StackRegistersDeriveFromTop) {
  RegisterFile f(X86_64());
  std::array<std::uint8_t, 10> out{};
  EXPECT_FALSE(f.Read(Id("st0"), out));  // fstat unknown
  for (int i = 0; i < 8; ++i) {
    std::array<std::uint8_t, 10> v{};
    v.fill(static_cast<std::uint8_t>(0xa0 + i));
    f.Set(Id("fpr" + std::to_string(i)), v);
  }
  f.SetU64(Id("fstat"), 5u << 11 | 0x41);  // TOP = 5
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(f.Read(Id("st" + std::to_string(i)), out)) << i;
    EXPECT_EQ(out[0], 0xa0 + ((5 + i) & 7)) << i;
    EXPECT_EQ(out[9], 0xa0 + ((5 + i) & 7)) << i;
  }
  f.SetUnknown(Id("fpr6"));  // st1 with TOP = 5
  EXPECT_FALSE(f.Read(Id("st1"), out));
  EXPECT_TRUE(f.Read(Id("st0"), out));
  EXPECT_FALSE(f.known(Id("st0")));  // derived registers have no known bit
}

TEST(RegisterFileTest, RestoreAndEquality) {
  RegisterFile a(X86_64());
  a.SetU64(Id("rax"), 1);
  a.SetU64(Id("cr3"), 0x1000);
  RegisterFile b(X86_64());
  EXPECT_FALSE(a == b);
  b.Restore(a.raw_storage(), a.raw_known());
  EXPECT_EQ(a, b);
  EXPECT_EQ(b.u64(Id("cr3")), 0x1000u);

  // Garbage bytes of unknown registers are dropped on restore.
  std::vector<std::uint8_t> storage(a.raw_storage().begin(), a.raw_storage().end());
  storage[X86_64().info(Id("rbx")).storage_offset] = 0x55;
  RegisterFile c(X86_64());
  c.Restore(storage, a.raw_known());
  EXPECT_EQ(a, c);
  c.SetU64(Id("rax"), 2);
  EXPECT_FALSE(a == c);
}

}  // namespace
}  // namespace backstep::core
