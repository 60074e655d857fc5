#pragma once
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ipclab {

/// Bad input from the user: one line that names the fix; the CLI exits with 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The run cannot go on or cannot keep its results for a reason of the machine, not of the input
/// (a full disk, the file size limit of `ulimit -f`): one line that names the cause and what was
/// kept; the CLI exits with 1.
struct RunError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What a failed write of a file means to its user, for errno `e`: the cause and the fix for the
/// file size limit (EFBIG, SIGXFSZ being ignored: core/ownership/crash.hpp) and a full file system, else
/// strerror.
inline std::string write_failure(int e) {
  if (e == EFBIG)
    return "File too large: over the file size limit (ulimit -f); raise the limit or write less";
  if (e == ENOSPC || e == EDQUOT)
    return fmt::format("{}: free room there or choose another place", std::strerror(e));
  return std::strerror(e);
}

/// A feature the kernel or device lacks: the benchmark is reported as skipped with this reason.
struct Skip : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// `text` safe to print on one line of a terminal: valid UTF-8 is kept, while control characters
/// (C0, DEL, C1, U+2028/U+2029 line and paragraph separators) and bytes that are not valid UTF-8
/// become \n, \t, \r, \xNN or \u{NNNN} escapes. Every message that may carry user text goes
/// through it before it is printed; text equal to its printable() form has nothing to escape.
inline std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned c = s[i];
    if (c < 0x80) {
      if (c == '\n')
        out += "\\n";
      else if (c == '\t')
        out += "\\t";
      else if (c == '\r')
        out += "\\r";
      else if (c < 0x20 || c == 0x7f)
        fmt::format_to(std::back_inserter(out), "\\x{:02x}", c);
      else
        out += char(c);
      ++i;
      continue;
    }
    // A multi-byte sequence: its length from the lead byte, then the shortest-form, range and
    // surrogate rules of RFC 3629; anything else is one invalid byte.
    size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    unsigned cp = len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
    bool ok = len != 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (s[i + k] & 0xc0) == 0x80;
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if (ok && len == 3) ok = cp >= 0x800 && !(cp >= 0xd800 && cp <= 0xdfff);
    if (ok && len == 4) ok = cp >= 0x10000 && cp <= 0x10ffff;
    if (!ok) {
      fmt::format_to(std::back_inserter(out), "\\x{:02x}", c);
      ++i;
      continue;
    }
    if (cp <= 0x9f || cp == 0x2028 || cp == 0x2029)
      fmt::format_to(std::back_inserter(out), "\\u{{{:04x}}}", cp);
    else
      out.append(text.substr(i, len));
    i += len;
  }
  return out;
}

/// A user's value as an error message echoes it: printable(), and cut to about `max` characters
/// ("…" and how many bytes were left out), so that a 100 KB argument gives a readable line. The
/// one way every message shows user text (report/ipclab_report/util.py's brief() is its twin).
inline std::string brief(std::string_view text, size_t max = 200) {
  std::string out = printable(text);
  if (out.size() <= max) return out;
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xc0) == 0x80) --cut;  // whole characters
  return fmt::format("{}…(+{} bytes)", out.substr(0, cut), out.size() - cut);
}

}  // namespace ipclab
