// Helpers for the end-to-end tests of the stepcast binary: run it with captured stdout/stderr in a
// per-test temporary directory, and a small strict JSON parser (RFC 8259) to check its output.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stepcast_cli_test {

namespace fs = std::filesystem;

inline const std::string kBinary = STEPCAST_BINARY;
inline const fs::path kSourceDir = STEPCAST_SOURCE_DIR;
inline const std::string kExample =
    (fs::path(STEPCAST_SOURCE_DIR) / "examples" / "resnet50-ps.yaml").string();

inline std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

inline void write_text(const fs::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

struct RunResult {
  int code = -1;  ///< exit status of the command (>= 128: killed by a signal; 124: timed out)
  std::string out;
  std::string err;
  std::string command;

  /// For assertion messages.
  [[nodiscard]] std::string describe() const {
    std::string why;
    if (code == 124) {
      why = " (timed out)";
    } else if (code > 128) {
      why = " (killed by signal " + std::to_string(code - 128) + ")";
    }
    return "command: " + command + "\nexit code: " + std::to_string(code) + why +
           "\n--- stdout (first 2000 chars) ---\n" + out.substr(0, 2000) + "\n--- stderr ---\n" +
           err.substr(0, 2000);
  }
};

/// A fresh empty directory per test, removed at the end.
class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "_" + info->name();
    for (char& c : name) {
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    }
    dir_ = fs::path(::testing::TempDir()) / ("stepcast_cli_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  [[nodiscard]] fs::path path(const std::string& name) const { return dir_ / name; }

  /// Writes `text` to a file in the test directory; returns its path.
  std::string file(const std::string& name, std::string_view text) {
    fs::path p = path(name);
    write_text(p, text);
    return p.string();
  }

  /// Runs stepcast with `args` from the source directory, under a time limit; its stdin is empty,
  /// or with `piped` the file's bytes through a pipe (`cat FILE | stepcast ...`).
  RunResult run(const std::vector<std::string>& args, int timeout_s = 30, const std::string& piped = "") {
    RunResult r;
    const fs::path out = dir_ / ("stdout." + std::to_string(runs_));
    const fs::path err = dir_ / ("stderr." + std::to_string(runs_));
    ++runs_;
    // Built by appending: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string&&.
    std::string cmd = "stepcast";
    std::string line = "cd ";
    line.append(shell_quote(kSourceDir.string())).append(" && ");
    if (!piped.empty()) line.append("cat ").append(shell_quote(piped)).append(" | ");
    line.append("timeout -k 5 ");
    line.append(std::to_string(timeout_s)).append(" ").append(shell_quote(kBinary));
    for (const auto& a : args) {
      cmd.append(" ").append(a);
      line.append(" ").append(shell_quote(a));
    }
    line.append(" >").append(shell_quote(out.string()));
    line.append(" 2>").append(shell_quote(err.string()));
    if (piped.empty()) line.append(" </dev/null");
    const int status = std::system(line.c_str());
    if (status == -1) {
      r.code = -1;
    } else if (WIFEXITED(status)) {
      r.code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      r.code = 128 + WTERMSIG(status);
    }
    r.out = read_text(out);
    r.err = read_text(err);
    r.command = cmd;
    return r;
  }

  fs::path dir_;
  int runs_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Strict JSON: a recursive-descent parser building a small tree. Rejects trailing commas, leading
// zeros, bare control characters in strings, bad escapes, NaN/Infinity and trailing garbage.

struct Json {
  enum class Type { Null, Bool, Number, String, Array, Object };
  Type type = Type::Null;
  bool boolean = false;
  double number = 0;
  std::string number_text;  ///< the number as written
  std::string string;
  std::vector<Json> array;
  std::vector<std::pair<std::string, Json>> object;  ///< in order; duplicates rejected

  // The destructor is defined after the class: with an implicit one, clang 14 and libstdc++ 12
  // define it while std::pair<std::string, Json> (of `object`) is still incomplete, and fail.
  Json() = default;
  Json(const Json&) = default;
  Json(Json&&) noexcept = default;
  Json& operator=(const Json&) = default;
  Json& operator=(Json&&) noexcept = default;
  ~Json();

  [[nodiscard]] bool is_object() const { return type == Type::Object; }
  [[nodiscard]] bool is_array() const { return type == Type::Array; }
  [[nodiscard]] bool is_number() const { return type == Type::Number; }
  [[nodiscard]] bool is_string() const { return type == Type::String; }
  [[nodiscard]] bool has(std::string_view key) const { return find(key) != nullptr; }
  [[nodiscard]] const Json* find(std::string_view key) const {
    for (const auto& [k, v] : object) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  /// Member lookup; a Null value when absent or not an object.
  [[nodiscard]] const Json& operator[](std::string_view key) const {
    static const Json none;
    const Json* v = find(key);
    return v != nullptr ? *v : none;
  }
  /// "a.b.c" through nested objects; nullptr when any part is missing.
  [[nodiscard]] const Json* at_path(std::string_view dotted) const {
    const Json* cur = this;
    while (cur != nullptr) {
      size_t dot = dotted.find('.');
      cur = cur->find(dotted.substr(0, dot));
      if (dot == std::string_view::npos) return cur;
      dotted.remove_prefix(dot + 1);
    }
    return nullptr;
  }
};

inline Json::~Json() = default;

class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : s_(text) {}

  /// true and `out` filled, or false and `error()` says where and why.
  bool parse(Json& out) {
    try {
      skip_ws();
      out = value(0);
      skip_ws();
      if (i_ != s_.size()) fail("trailing characters after the JSON value");
      return true;
    } catch (const Failure&) {
      return false;
    }
  }
  [[nodiscard]] const std::string& error() const { return error_; }

 private:
  struct Failure {};
  [[noreturn]] void fail(const std::string& why) {
    error_ = "offset " + std::to_string(i_) + ": " + why + " near '" +
             std::string(s_.substr(i_ < 20 ? 0 : i_ - 20, 40)) + "'";
    throw Failure{};
  }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void expect(char c) {
    if (peek() != c || i_ >= s_.size()) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  void literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) fail("bad literal");
    i_ += word.size();
  }

  Json value(int depth) {
    if (depth > 200) fail("nesting too deep");
    Json v;
    switch (peek()) {
      case '{':
        v.type = Json::Type::Object;
        object(v, depth);
        break;
      case '[':
        v.type = Json::Type::Array;
        array(v, depth);
        break;
      case '"':
        v.type = Json::Type::String;
        v.string = string();
        break;
      case 't':
        literal("true");
        v.type = Json::Type::Bool;
        v.boolean = true;
        break;
      case 'f':
        literal("false");
        v.type = Json::Type::Bool;
        break;
      case 'n':
        literal("null");
        break;
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) {
          v.type = Json::Type::Number;
          number(v);
        } else {
          fail("expected a value");
        }
    }
    return v;
  }

  void object(Json& v, int depth) {
    expect('{');
    skip_ws();
    if (peek() == '}') {
      ++i_;
      return;
    }
    for (;;) {
      skip_ws();
      if (peek() != '"') fail("expected a string key");
      std::string key = string();
      if (v.has(key)) fail("duplicate key '" + key + "'");
      skip_ws();
      expect(':');
      skip_ws();
      Json member = value(depth + 1);
      v.object.emplace_back(std::move(key), std::move(member));
      skip_ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect('}');
      return;
    }
  }

  void array(Json& v, int depth) {
    expect('[');
    skip_ws();
    if (peek() == ']') {
      ++i_;
      return;
    }
    for (;;) {
      skip_ws();
      v.array.push_back(value(depth + 1));
      skip_ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect(']');
      return;
    }
  }

  static bool is_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  }

  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      if (i_ >= s_.size()) fail("unterminated string");
      const char c = s_[i_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) fail("unterminated escape");
      const char e = s_[i_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          if (i_ + 4 > s_.size()) fail("short \\u escape");
          unsigned code = 0;
          for (int k = 0; k < 4; ++k) {
            const char h = s_[i_++];
            if (!is_hex(h)) fail("bad \\u escape");
            code = code * 16 + static_cast<unsigned>(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
          }
          // Only ASCII is decoded exactly; the tests never need more.
          out += code < 0x80 ? static_cast<char>(code) : '?';
          break;
        }
        default:
          fail("bad escape");
      }
    }
  }

  void number(Json& v) {
    const size_t start = i_;
    if (peek() == '-') ++i_;
    if (peek() == '0') {
      ++i_;
      if (peek() >= '0' && peek() <= '9') fail("leading zero");
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9') ++i_;
    } else {
      fail("expected a digit");
    }
    if (peek() == '.') {
      ++i_;
      if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit after '.'");
      while (peek() >= '0' && peek() <= '9') ++i_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++i_;
      if (peek() == '+' || peek() == '-') ++i_;
      if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit in the exponent");
      while (peek() >= '0' && peek() <= '9') ++i_;
    }
    v.number_text = std::string(s_.substr(start, i_ - start));
    v.number = std::strtod(v.number_text.c_str(), nullptr);
  }

  std::string_view s_;
  size_t i_ = 0;
  std::string error_;
};

/// Parses `text` as one strict JSON value, failing the current test when it is not.
inline Json parse_json_or_fail(const std::string& text) {
  Json v;
  JsonParser parser(text);
  EXPECT_TRUE(parser.parse(v)) << "invalid JSON: " << parser.error();
  return v;
}

inline std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace stepcast_cli_test
