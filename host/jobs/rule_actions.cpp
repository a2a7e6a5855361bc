#include "jobs/rule_actions.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>

#include "format/json_limits.h"
#include <vigil/sdk/text.hpp>

namespace vigil::jobs {

namespace {

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_octal(char c) { return c >= '0' && c <= '7'; }
bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ascii_word(char c) {
  return is_ascii_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

// The value of the `digits` hex digits after text[i], when they are all there.
std::optional<uint32_t> hex_at(std::string_view text, size_t i, size_t digits) {
  if (i + 1 + digits > text.size()) return std::nullopt;
  uint32_t v = 0;
  for (size_t k = 0; k < digits; ++k) {
    const char c = text[i + 1 + k];
    if (!is_hex(c)) return std::nullopt;
    v = v * 16 + uint32_t(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return v;
}

// The body of a Python string literal as Python reads it: the rule container passes the text to
// json.loads inside a "..." literal (sagemaker-api §5). Escapes Python would refuse or that name a
// character (\N{...}) stay as written.
std::string unescape_python_literal(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c != '\\' || i + 1 == text.size()) {
      out += c;
      continue;
    }
    const char e = text[i + 1];
    auto simple = [&](char replacement) {
      out += replacement;
      ++i;
    };
    switch (e) {
      case '\n': ++i; break;  // a line continuation
      case '\\': simple('\\'); break;
      case '\'': simple('\''); break;
      case '"': simple('"'); break;
      case 'a': simple('\a'); break;
      case 'b': simple('\b'); break;
      case 'f': simple('\f'); break;
      case 'n': simple('\n'); break;
      case 'r': simple('\r'); break;
      case 't': simple('\t'); break;
      case 'v': simple('\v'); break;
      case 'x':
      case 'u':
      case 'U': {
        const size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        auto cp = hex_at(text, i + 1, digits);
        if (!cp || *cp > 0x10FFFF) {
          out += c;  // kept as written
          break;
        }
        append_utf8(out, *cp);
        i += 1 + digits;
        break;
      }
      default:
        if (is_octal(e)) {
          uint32_t v = 0;
          size_t n = 0;
          while (n < 3 && i + 1 + n < text.size() && is_octal(text[i + 1 + n])) v = v * 8 + uint32_t(text[i + 1 + n++] - '0');
          append_utf8(out, v);
          i += n;
        } else {
          out += c;  // an unknown escape: Python keeps the backslash
        }
    }
  }
  return out;
}

// ^[A-Za-z0-9\-]+$
bool valid_training_job_prefix(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c == '-' || (is_ascii_word(c) && c != '_'); });
}

// ^[a-z0-9]+[@]\w+[.]\w{2,3}$ (\w taken as ASCII [A-Za-z0-9_])
bool valid_email(std::string_view s) {
  const size_t at = s.find('@');
  if (at == std::string_view::npos || at == 0) return false;
  if (!std::all_of(s.begin(), s.begin() + at, [](char c) { return is_ascii_digit(c) || (c >= 'a' && c <= 'z'); }))
    return false;
  const std::string_view domain = s.substr(at + 1);
  const size_t dot = domain.find('.');
  if (dot == std::string_view::npos || dot == 0) return false;
  const std::string_view name = domain.substr(0, dot), top = domain.substr(dot + 1);
  return std::all_of(name.begin(), name.end(), is_ascii_word) && top.size() >= 2 && top.size() <= 3 &&
         std::all_of(top.begin(), top.end(), is_ascii_word);
}

// ^\+\d{1,15}$
bool valid_phone_number(std::string_view s) {
  return s.size() >= 2 && s.size() <= 16 && s[0] == '+' && std::all_of(s.begin() + 1, s.end(), is_ascii_digit);
}

}  // namespace

Result<RuleActions> parse_rule_actions(std::string_view action_json, std::string_view default_job_name) {
  std::string text = action_json.find("\\\"") != std::string_view::npos ? unescape_python_literal(action_json)
                                                                         : std::string(action_json);
  text = sdk::lower(std::move(text));
  if (format::json_nesting_exceeds(text))
    return fail(Error::invalid_argument(fmt::format("action_json nests deeper than {} levels", format::kMaxJsonDepth)));
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return fail(Error::invalid_argument(fmt::format("action_json is not valid JSON: {}", text)));

  RuleActions result;
  std::vector<const nlohmann::json*> entries;
  if (doc.is_object()) {
    entries.push_back(&doc);
  } else if (doc.is_array()) {
    for (const auto& e : doc) entries.push_back(&e);
  } else {
    result.warnings.push_back(
        fmt::format("action_json is {}, not an object or a list of objects: no actions", doc.dump()));
    return result;
  }
  for (size_t n = 0; n < entries.size(); ++n) {
    const nlohmann::json& entry = *entries[n];
    const std::string where = fmt::format("action {}", n + 1);
    auto skip = [&](std::string_view why) { result.warnings.push_back(fmt::format("{}: {}; skipped", where, why)); };
    if (!entry.is_object()) {
      skip(fmt::format("{} is not an object", entry.dump()));
      continue;
    }
    auto name = entry.find("name");
    if (name == entry.end() || !name->is_string()) {
      skip("it has no \"name\" (stoptraining, email or sms)");
      continue;
    }
    const std::string& kind = name->get_ref<const std::string&>();
    // The key an action needs, as a string: nullopt (and a warning) when it is missing or not one.
    auto string_key = [&](const char* key) -> std::optional<std::string> {
      auto it = entry.find(key);
      if (it == entry.end()) return std::nullopt;
      if (!it->is_string()) {
        skip(fmt::format("{} \"{}\" is {}, not a string", kind, key, it->dump()));
        return std::nullopt;
      }
      return it->get<std::string>();
    };
    if (kind == "stoptraining") {
      std::optional<std::string> prefix;
      if (entry.contains("training_job_prefix")) {
        prefix = string_key("training_job_prefix");
        if (!prefix) continue;
      } else if (!default_job_name.empty()) {
        prefix = sdk::lower(std::string(default_job_name));
      } else {
        skip("stoptraining requires \"training_job_prefix\"");
        continue;
      }
      if (!valid_training_job_prefix(*prefix)) {
        skip(fmt::format("training_job_prefix '{}' is invalid: it must contain only letters, numbers and hyphens "
                         "(^[A-Za-z0-9\\-]+$)",
                         *prefix));
        continue;
      }
      result.actions.push_back(RuleAction{RuleAction::Kind::StopTraining, std::move(*prefix), {}});
    } else if (kind == "email" || kind == "sms") {
      const bool email = kind == "email";
      if (!entry.contains("endpoint")) {
        skip(fmt::format("{} requires \"endpoint\"", kind));
        continue;
      }
      auto endpoint = string_key("endpoint");
      if (!endpoint) continue;
      if (email ? !valid_email(*endpoint) : !valid_phone_number(*endpoint)) {
        skip(email ? fmt::format("email endpoint '{}' is not an address of the form username@domain "
                                 "(^[a-z0-9]+[@]\\w+[.]\\w{{2,3}}$)",
                                 *endpoint)
                   : fmt::format("sms endpoint '{}' is not a phone number: '+' and 1 to 15 digits (^\\+\\d{{1,15}}$)",
                                 *endpoint));
        continue;
      }
      result.actions.push_back(
          RuleAction{email ? RuleAction::Kind::Email : RuleAction::Kind::Sms, {}, std::move(*endpoint)});
    } else {
      skip(fmt::format("action '{}' is not supported (the actions are stoptraining, email and sms)", kind));
    }
  }
  return result;
}

std::expected<std::string, std::string> choose_job_to_stop(std::string_view prefix,
                                                          const std::vector<std::string>& in_progress_jobs) {
  std::set<std::string> matches;
  for (const auto& name : in_progress_jobs)
    if (std::string_view(name).starts_with(prefix)) matches.insert(name);
  if (matches.size() == 1) return *matches.begin();
  if (matches.empty())
    return std::unexpected(fmt::format("no InProgress training job's name starts with '{}': nothing stopped", prefix));
  return std::unexpected(fmt::format(
      "{} InProgress training jobs' names start with '{}' ({}): StopTraining stops a job only when exactly one does",
      matches.size(), prefix, fmt::join(matches, ", ")));
}

}  // namespace vigil::jobs
