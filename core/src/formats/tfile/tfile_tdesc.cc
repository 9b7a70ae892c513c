#include "formats/tfile/tfile_tdesc.h"

#include <charconv>
#include <optional>
#include <set>

namespace backstep::core {
namespace {

// gdb's amd64 feature files (features/i386/64bit-*.xml).
struct IncludeFile {
  std::string_view href;
  std::string_view feature;
  std::uint32_t bit;
};
constexpr IncludeFile kIncludes[] = {
    {"64bit-core.xml", "org.gnu.gdb.i386.core", kFeatureCore},
    {"64bit-sse.xml", "org.gnu.gdb.i386.sse", kFeatureSse},
    {"64bit-linux.xml", "org.gnu.gdb.i386.linux", kFeatureLinux},
    {"64bit-segments.xml", "org.gnu.gdb.i386.segments", kFeatureSegments},
    {"64bit-avx.xml", "org.gnu.gdb.i386.avx", kFeatureAvx},
    {"64bit-avx512.xml", "org.gnu.gdb.i386.avx512", kFeatureAvx512},
    {"64bit-pkeys.xml", "org.gnu.gdb.i386.pkeys", kFeaturePkeys},
};

struct Attribute {
  std::string_view name, value;
};

// One markup element: <name attr="v" ...> or </name> or <name .../>.
struct Tag {
  std::string_view name;
  bool closing = false;
  std::vector<Attribute> attributes;

  std::optional<std::string_view> Get(std::string_view key) const {
    for (const Attribute& a : attributes) {
      if (a.name == key) return a.value;
    }
    return std::nullopt;
  }
};

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsNameChar(char c) { return !IsSpace(c) && c != '/' && c != '>' && c != '=' && c != '<'; }

// Parses the inside of "<...>" (without the brackets).
std::optional<Tag> ParseTag(std::string_view s) {
  Tag tag;
  std::size_t i = 0;
  if (i < s.size() && s[i] == '/') {
    tag.closing = true;
    ++i;
  }
  const std::size_t name_start = i;
  while (i < s.size() && IsNameChar(s[i])) ++i;
  tag.name = s.substr(name_start, i - name_start);
  if (tag.name.empty()) return std::nullopt;
  while (true) {
    while (i < s.size() && IsSpace(s[i])) ++i;
    if (i == s.size() || (s[i] == '/' && i + 1 == s.size())) return tag;
    const std::size_t an = i;
    while (i < s.size() && IsNameChar(s[i])) ++i;
    if (i == an || i + 1 >= s.size() || s[i] != '=') return std::nullopt;
    const std::string_view name = s.substr(an, i - an);
    const char quote = s[i + 1];
    if (quote != '"' && quote != '\'') return std::nullopt;
    const std::size_t end = s.find(quote, i + 2);
    if (end == std::string_view::npos) return std::nullopt;
    tag.attributes.push_back({name, s.substr(i + 2, end - (i + 2))});
    i = end + 1;
  }
}

std::optional<std::uint32_t> Decimal(std::string_view s) {
  std::uint32_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

class TdescParser {
 public:
  Status Reg(const Tag& tag) {
    auto name = tag.Get("name");
    auto bitsize = tag.Get("bitsize");
    if (!name || name->empty()) return Status::Corruption("<reg> without a name");
    const std::string who = "register '" + std::string(*name) + "'";
    auto bits = bitsize ? Decimal(*bitsize) : std::nullopt;
    if (!bits || *bits == 0 || *bits % 8 != 0 || *bits > 8192) {
      return Status::Corruption(who + ": bitsize missing or invalid");
    }
    int regnum = next_regnum_;
    if (auto r = tag.Get("regnum")) {
      auto v = Decimal(*r);
      if (!v || *v > 65535) return Status::Corruption(who + ": regnum invalid");
      regnum = static_cast<int>(*v);
    }
    return Add(std::string(*name), *bits, regnum);
  }

  Status Include(const Tag& tag) {
    const std::string_view href = tag.Get("href").value_or("");
    for (const IncludeFile& inc : kIncludes) {
      if (inc.href != href) continue;
      tdesc_.features.emplace_back(inc.feature);
      for (const GdbSlot& slot : X86_64().GdbLayout(inc.bit)) {
        const RegisterInfo& r = X86_64().info(slot.reg);
        BACKSTEP_RETURN_IF_ERROR(Add(std::string(r.name), 8u * r.size, slot.regnum));
      }
      return Status::Ok();
    }
    return Status::Corruption("include of unknown file '" + std::string(href) + "'");
  }

  Tdesc& tdesc() { return tdesc_; }

 private:
  Status Add(std::string name, std::uint32_t bits, int regnum) {
    if (!regnums_.insert(regnum).second) {
      return Status::Corruption("register '" + name + "': duplicate regnum " +
                                std::to_string(regnum));
    }
    const std::string feature = tdesc_.features.empty() ? "" : tdesc_.features.back();
    tdesc_.registers.push_back({std::move(name), bits, regnum, feature});
    next_regnum_ = regnum + 1;
    return Status::Ok();
  }

  Tdesc tdesc_;
  std::set<int> regnums_;
  int next_regnum_ = 0;
};

}  // namespace

Expected<Tdesc> ParseTdesc(std::string_view xml) {
  TdescParser parser;
  std::size_t i = 0;
  while ((i = xml.find('<', i)) != std::string_view::npos) {
    std::string_view rest = xml.substr(i);
    std::string_view terminator = ">";
    if (rest.starts_with("<!--")) terminator = "-->";
    if (rest.starts_with("<?")) terminator = "?>";
    const std::size_t end = rest.find(terminator, 1);
    if (end == std::string_view::npos) return Status::Corruption("unterminated markup");
    const std::size_t after = i + end + terminator.size();
    if (rest[1] == '!' || rest[1] == '?') {
      i = after;
      continue;
    }
    auto tag = ParseTag(rest.substr(1, end - 1));
    if (!tag) return Status::Corruption("malformed tag at character " + std::to_string(i));
    i = after;
    if (tag->closing) continue;
    if (tag->name == "architecture") {
      const std::size_t text_end = xml.find('<', i);
      std::string_view text = xml.substr(i, text_end == std::string_view::npos ? 0 : text_end - i);
      while (!text.empty() && IsSpace(text.front())) text.remove_prefix(1);
      while (!text.empty() && IsSpace(text.back())) text.remove_suffix(1);
      parser.tdesc().architecture = std::string(text);
    } else if (tag->name == "feature") {
      parser.tdesc().features.emplace_back(tag->Get("name").value_or(""));
    } else if (tag->name == "reg") {
      BACKSTEP_RETURN_IF_ERROR(parser.Reg(*tag));
    } else if (tag->name == "xi:include") {
      BACKSTEP_RETURN_IF_ERROR(parser.Include(*tag));
    }
  }
  return std::move(parser.tdesc());
}

std::string InlineTargetXml(const ArchDescription& arch, std::uint32_t features) {
  const auto docs = arch.TargetXml(features);
  std::string out;
  std::string_view target = docs.front().second;
  while (!target.empty()) {
    const std::size_t nl = target.find('\n');
    const std::string_view line = target.substr(0, nl);
    target.remove_prefix(nl == std::string_view::npos ? target.size() : nl + 1);
    constexpr std::string_view kInclude = "<xi:include href=\"";
    if (!line.starts_with(kInclude)) {
      out.append(line).append("\n");
      continue;
    }
    const std::string_view href =
        line.substr(kInclude.size(), line.find('"', kInclude.size()) - kInclude.size());
    for (const auto& [annex, xml] : docs) {
      if (annex != href) continue;
      std::string_view body = xml;
      while (!body.empty()) {
        const std::size_t bnl = body.find('\n');
        const std::string_view bline = body.substr(0, bnl);
        body.remove_prefix(bnl == std::string_view::npos ? body.size() : bnl + 1);
        if (bline.starts_with("<?xml") || bline.starts_with("<!DOCTYPE")) continue;
        out.append(bline).append("\n");
      }
    }
  }
  return out;
}

}  // namespace backstep::core
