// gdb target descriptions generated from the register table.
//
// The documents mirror gdb's features/i386/64bit-*.xml (32bit-*.xml for
// i386; the prefix comes from ArchNaming): same feature names,
// same file names, same type definitions, with a regnum attribute on every
// register so the layout cannot drift from GdbLayout(). target.xml holds only
// xi:include lines because LLDB reads all inline <feature>s before any
// include, which would reorder registers (docs/protocol.md §11).

#include <string>

#include "backstep/core/arch.h"

namespace backstep::core {
namespace {

struct FeatureDoc {
  std::uint32_t bit;
  const char* name;   // <feature name=...>
  const char* file;   // annex, after ArchNaming::tdesc_file_prefix
  const char* types;  // type definitions the feature's registers use
};

constexpr char kEflagsType[] =
    "  <flags id=\"i386_eflags\" size=\"4\">\n"
    "    <field name=\"CF\" start=\"0\" end=\"0\"/>\n"
    "    <field name=\"\" start=\"1\" end=\"1\"/>\n"
    "    <field name=\"PF\" start=\"2\" end=\"2\"/>\n"
    "    <field name=\"AF\" start=\"4\" end=\"4\"/>\n"
    "    <field name=\"ZF\" start=\"6\" end=\"6\"/>\n"
    "    <field name=\"SF\" start=\"7\" end=\"7\"/>\n"
    "    <field name=\"TF\" start=\"8\" end=\"8\"/>\n"
    "    <field name=\"IF\" start=\"9\" end=\"9\"/>\n"
    "    <field name=\"DF\" start=\"10\" end=\"10\"/>\n"
    "    <field name=\"OF\" start=\"11\" end=\"11\"/>\n"
    "    <field name=\"NT\" start=\"14\" end=\"14\"/>\n"
    "    <field name=\"RF\" start=\"16\" end=\"16\"/>\n"
    "    <field name=\"VM\" start=\"17\" end=\"17\"/>\n"
    "    <field name=\"AC\" start=\"18\" end=\"18\"/>\n"
    "    <field name=\"VIF\" start=\"19\" end=\"19\"/>\n"
    "    <field name=\"VIP\" start=\"20\" end=\"20\"/>\n"
    "    <field name=\"ID\" start=\"21\" end=\"21\"/>\n"
    "  </flags>\n";

#define BACKSTEP_VEC128_TYPE                                  \
  "  <vector id=\"v8bf16\" type=\"bfloat16\" count=\"8\"/>\n" \
  "  <vector id=\"v8h\" type=\"ieee_half\" count=\"8\"/>\n"   \
  "  <vector id=\"v4f\" type=\"ieee_single\" count=\"4\"/>\n" \
  "  <vector id=\"v2d\" type=\"ieee_double\" count=\"2\"/>\n" \
  "  <vector id=\"v16i8\" type=\"int8\" count=\"16\"/>\n"     \
  "  <vector id=\"v8i16\" type=\"int16\" count=\"8\"/>\n"     \
  "  <vector id=\"v4i32\" type=\"int32\" count=\"4\"/>\n"     \
  "  <vector id=\"v2i64\" type=\"int64\" count=\"2\"/>\n"     \
  "  <union id=\"vec128\">\n"                                 \
  "    <field name=\"v8_bfloat16\" type=\"v8bf16\"/>\n"       \
  "    <field name=\"v8_half\" type=\"v8h\"/>\n"              \
  "    <field name=\"v4_float\" type=\"v4f\"/>\n"             \
  "    <field name=\"v2_double\" type=\"v2d\"/>\n"            \
  "    <field name=\"v16_int8\" type=\"v16i8\"/>\n"           \
  "    <field name=\"v8_int16\" type=\"v8i16\"/>\n"           \
  "    <field name=\"v4_int32\" type=\"v4i32\"/>\n"           \
  "    <field name=\"v2_int64\" type=\"v2i64\"/>\n"           \
  "    <field name=\"uint128\" type=\"uint128\"/>\n"          \
  "  </union>\n"

constexpr char kSseTypes[] = BACKSTEP_VEC128_TYPE
    "  <flags id=\"i386_mxcsr\" size=\"4\">\n"
    "    <field name=\"IE\" start=\"0\" end=\"0\"/>\n"
    "    <field name=\"DE\" start=\"1\" end=\"1\"/>\n"
    "    <field name=\"ZE\" start=\"2\" end=\"2\"/>\n"
    "    <field name=\"OE\" start=\"3\" end=\"3\"/>\n"
    "    <field name=\"UE\" start=\"4\" end=\"4\"/>\n"
    "    <field name=\"PE\" start=\"5\" end=\"5\"/>\n"
    "    <field name=\"DAZ\" start=\"6\" end=\"6\"/>\n"
    "    <field name=\"IM\" start=\"7\" end=\"7\"/>\n"
    "    <field name=\"DM\" start=\"8\" end=\"8\"/>\n"
    "    <field name=\"ZM\" start=\"9\" end=\"9\"/>\n"
    "    <field name=\"OM\" start=\"10\" end=\"10\"/>\n"
    "    <field name=\"UM\" start=\"11\" end=\"11\"/>\n"
    "    <field name=\"PM\" start=\"12\" end=\"12\"/>\n"
    "    <field name=\"FZ\" start=\"15\" end=\"15\"/>\n"
    "  </flags>\n";

constexpr char kAvx512Types[] =
    BACKSTEP_VEC128_TYPE "  <vector id=\"v2ui128\" type=\"uint128\" count=\"2\"/>\n";

#undef BACKSTEP_VEC128_TYPE

// In gdb's amd64 order.
constexpr FeatureDoc kFeatures[] = {
    {kFeatureCore, "org.gnu.gdb.i386.core", "core.xml", kEflagsType},
    {kFeatureSse, "org.gnu.gdb.i386.sse", "sse.xml", kSseTypes},
    {kFeatureLinux, "org.gnu.gdb.i386.linux", "linux.xml", ""},
    {kFeatureSegments, "org.gnu.gdb.i386.segments", "segments.xml", ""},
    {kFeatureAvx, "org.gnu.gdb.i386.avx", "avx.xml", ""},
    {kFeatureAvx512, "org.gnu.gdb.i386.avx512", "avx512.xml", kAvx512Types},
    {kFeaturePkeys, "org.gnu.gdb.i386.pkeys", "pkeys.xml", ""},
};

std::string FeatureXml(const FeatureDoc& doc, const std::vector<GdbSlot>& layout,
                       const ArchDescription& arch) {
  std::string xml =
      "<?xml version=\"1.0\"?>\n<!DOCTYPE feature SYSTEM \"gdb-target.dtd\">\n<feature name=\"";
  xml += doc.name;
  xml += "\">\n";
  xml += doc.types;
  for (const GdbSlot& slot : layout) {
    const RegisterInfo& r = arch.info(slot.reg);
    if ((r.feature & doc.bit) == 0) continue;
    xml += "  <reg name=\"" + std::string(r.name) + "\" bitsize=\"" + std::to_string(8 * r.size) +
           "\" type=\"" + std::string(r.gdb_type) + "\" regnum=\"" + std::to_string(slot.regnum) +
           "\"";
    if (!r.group.empty()) xml += " group=\"" + std::string(r.group) + "\"";
    xml += "/>\n";
  }
  xml += "</feature>\n";
  return xml;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ArchDescription::TargetXml(
    std::uint32_t features) const {
  const std::vector<GdbSlot> layout = GdbLayout(features);
  std::string target =
      "<?xml version=\"1.0\"?>\n<!DOCTYPE target SYSTEM \"gdb-target.dtd\">\n<target>\n"
      "<architecture>" +
      name_ + "</architecture>\n<osabi>GNU/Linux</osabi>\n";
  std::vector<std::pair<std::string, std::string>> docs;
  docs.emplace_back("target.xml", "");
  for (const FeatureDoc& doc : kFeatures) {
    if ((features & doc.bit) == 0) continue;
    const std::string annex = std::string(naming_.tdesc_file_prefix) + doc.file;
    target += "<xi:include href=\"" + annex + "\"/>\n";
    docs.emplace_back(annex, FeatureXml(doc, layout, *this));
  }
  target += "</target>\n";
  docs[0].second = std::move(target);
  return docs;
}

}  // namespace backstep::core
