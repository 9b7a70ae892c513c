#include <sys/stat.h>

#include <cstdio>

#include "backstep/core/number.h"
#include "cli/cli.h"

namespace backstep::cli {

std::optional<std::string> Args::TakeOption(std::string_view name) {
  std::string flag = "--" + std::string(name);
  std::optional<std::string> value;
  for (std::size_t i = 0; i < words_.size();) {
    std::optional<std::string> found;
    if (words_[i] == flag && i + 1 < words_.size()) {
      found = words_[i + 1];
      words_.erase(words_.begin() + i, words_.begin() + i + 2);
    } else if (words_[i].rfind(flag + "=", 0) == 0) {
      found = words_[i].substr(flag.size() + 1);
      words_.erase(words_.begin() + i);
    } else if (words_[i] == flag) {
      problems_.push_back(flag + " needs a value");
      words_.erase(words_.begin() + i);
    } else {
      ++i;
    }
    if (found && value) problems_.push_back(flag + " is given more than once");
    if (found && !value) value = std::move(found);
  }
  return value;
}

std::vector<std::vector<std::string>> Args::TakeOptionN(std::string_view name, int count) {
  std::string flag = "--" + std::string(name);
  std::vector<std::vector<std::string>> out;
  for (std::size_t i = 0; i < words_.size();) {
    bool complete = words_[i] == flag && i + count < words_.size();
    for (int k = 1; complete && k <= count; ++k) complete = words_[i + k].rfind("--", 0) != 0;
    if (complete) {
      out.emplace_back(words_.begin() + i + 1, words_.begin() + i + 1 + count);
      words_.erase(words_.begin() + i, words_.begin() + i + 1 + count);
    } else if (words_[i] == flag) {
      problems_.push_back(flag + " needs " + std::to_string(count) + " value" +
                          (count > 1 ? "s" : ""));
      // The values it has go with it (they are not positionals).
      std::size_t end = i + 1;
      while (end < words_.size() && end <= i + count && words_[end].rfind("--", 0) != 0) ++end;
      words_.erase(words_.begin() + i, words_.begin() + end);
    } else {
      ++i;
    }
  }
  return out;
}

bool Args::TakeFlag(std::string_view name) {
  std::string flag = "--" + std::string(name);
  for (std::size_t i = 0; i < words_.size(); ++i) {
    if (words_[i] == flag) {
      words_.erase(words_.begin() + i);
      return true;
    }
  }
  return false;
}

std::optional<std::string> Args::TakeOutput() {
  for (std::size_t i = 0; i + 1 < words_.size() && words_[i] != "--"; ++i) {
    if (words_[i] == "-o") {
      std::string value = words_[i + 1];
      words_.erase(words_.begin() + i, words_.begin() + i + 2);
      return value;
    }
  }
  if (auto out = TakeOption("output")) return out;
  return TakeOption("o");
}

std::vector<std::string> Args::Positionals() const {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < words_.size(); ++i) {
    if (words_[i] == "--cache-dir") {
      ++i;  // its value
    } else if (words_[i].rfind("--", 0) != 0) {
      out.push_back(words_[i]);
    }
  }
  return out;
}

std::optional<std::string> Args::Problem() const {
  if (!problems_.empty()) return problems_.front();
  if (auto unknown = UnknownOption()) return "unknown option " + *unknown;
  return std::nullopt;
}

std::optional<std::string> Args::UnknownOption() const {
  for (const auto& w : words_) {
    if (w.rfind("--", 0) == 0) return w;
  }
  return std::nullopt;
}

std::vector<std::string> Args::TakeAfterSeparator() {
  for (std::size_t i = 0; i < words_.size(); ++i) {
    if (words_[i] == "--") {
      std::vector<std::string> rest(words_.begin() + i + 1, words_.end());
      words_.resize(i);
      return rest;
    }
  }
  return {};
}

std::optional<std::uint64_t> ParseNumber(std::string_view text) {
  std::string digits;
  for (char c : text) {
    if (c != '_') digits += c;
  }
  return core::ParseNumber(digits);
}

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  if (stat(a.c_str(), &sa) != 0 || stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int Fail(const core::Status& status) {
  std::fprintf(stderr, "backstep: %s\n", status.message().c_str());
  return 1;
}

int Usage(std::string_view message) {
  std::fprintf(stderr, "backstep: %.*s\nRun 'backstep help' for usage.\n",
               static_cast<int>(message.size()), message.data());
  return 2;
}

}  // namespace backstep::cli
