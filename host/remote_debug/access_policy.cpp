#include "remote_debug/access_policy.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "common/file_read.h"
#include "format/json_limits.h"
#include <vigil/sdk/text.hpp>

namespace vigil::remote_debug {

namespace {

using sdk::ascii_lower;
using sdk::iequals;
using sdk::lower;

namespace fs = std::filesystem;
using nlohmann::json;

enum class Effect { Allow, Deny };

// The families of condition tests; a negated operator is its family with `negated` set.
enum class TestKind {
  StringEquals,
  StringEqualsIgnoreCase,
  StringLike,
  Bool,
  NumericEquals,
  NumericLessThan,
  NumericLessThanEquals,
  NumericGreaterThan,
  NumericGreaterThanEquals,
  Null,
};

struct OperatorInfo {
  std::string_view name;
  TestKind kind;
  bool negated;
};

constexpr OperatorInfo kOperators[] = {
    {"StringEquals", TestKind::StringEquals, false},
    {"StringNotEquals", TestKind::StringEquals, true},
    {"StringEqualsIgnoreCase", TestKind::StringEqualsIgnoreCase, false},
    {"StringNotEqualsIgnoreCase", TestKind::StringEqualsIgnoreCase, true},
    {"StringLike", TestKind::StringLike, false},
    {"StringNotLike", TestKind::StringLike, true},
    {"Bool", TestKind::Bool, false},
    {"NumericEquals", TestKind::NumericEquals, false},
    {"NumericNotEquals", TestKind::NumericEquals, true},
    {"NumericLessThan", TestKind::NumericLessThan, false},
    {"NumericLessThanEquals", TestKind::NumericLessThanEquals, false},
    {"NumericGreaterThan", TestKind::NumericGreaterThan, false},
    {"NumericGreaterThanEquals", TestKind::NumericGreaterThanEquals, false},
    {"Null", TestKind::Null, false},
};

constexpr std::string_view kIfExists = "IfExists";

// One key of one operator block: the request's value of `key` against the document's values.
struct ConditionTest {
  TestKind kind = TestKind::StringEquals;
  bool negated = false;
  bool if_exists = false;
  std::string key;                   // as written; looked up case-insensitively
  std::vector<std::string> strings;  // String*: values (lower-cased for IgnoreCase) or patterns
  std::vector<double> numbers;       // Numeric*
  std::vector<bool> flags;           // Bool, Null
};

struct Statement {
  std::string label;  // Sid, or where the statement stands
  Effect effect = Effect::Allow;
  bool not_action = false;
  std::vector<std::string> actions;  // lower-cased patterns
  bool not_resource = false;
  std::vector<std::string> resources;
  std::vector<ConditionTest> conditions;  // all must hold
};

struct UserEntry {
  enum class Kind { Everyone, Name, Uid } kind = Kind::Everyone;
  std::string name;
  uint32_t uid = 0;
};

struct Binding {
  std::vector<UserEntry> users;
  std::vector<Statement> statements;
};

// `*` matches any run of characters (none included), `?` any one character. Backtracks only to the
// last `*` seen, so the cost stays O(pattern × text) whatever the pattern.
bool wildcard_match(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0;
  size_t star = std::string_view::npos, star_text = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_text = t;
    } else if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++star_text;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

// A whole string as a finite number ("10", "-2.5", "1e3"); nullopt otherwise.
std::optional<double> parse_number(std::string_view s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<bool> parse_bool(std::string_view s) {
  if (iequals(s, "true")) return true;
  if (iequals(s, "false")) return false;
  return std::nullopt;
}

// The request's value of `key`, matched case-insensitively (IAM's condition keys are).
std::optional<std::string_view> context_value(const AccessRequest& request, std::string_view key) {
  if (auto exact = request.context.find(std::string(key)); exact != request.context.end()) return exact->second;
  for (const auto& [k, v] : request.context)
    if (iequals(k, key)) return v;
  return std::nullopt;
}

bool test_holds(const ConditionTest& test, const AccessRequest& request) {
  const std::optional<std::string_view> value = context_value(request, test.key);
  if (test.kind == TestKind::Null) {
    const bool present = value.has_value();
    return std::any_of(test.flags.begin(), test.flags.end(), [&](bool null) { return null ? !present : present; });
  }
  // IAM: a key missing from the request makes a test false, except that ...IfExists holds and a
  // negated operator (StringNotLike, NumericNotEquals, ...) holds: no value is unlike every pattern.
  if (!value) return test.if_exists || test.negated;
  bool any = false;
  switch (test.kind) {
    case TestKind::StringEquals:
      any = std::any_of(test.strings.begin(), test.strings.end(), [&](const std::string& v) { return v == *value; });
      break;
    case TestKind::StringEqualsIgnoreCase: {
      const std::string folded = lower(*value);
      any = std::any_of(test.strings.begin(), test.strings.end(), [&](const std::string& v) { return v == folded; });
      break;
    }
    case TestKind::StringLike:
      any = std::any_of(test.strings.begin(), test.strings.end(),
                        [&](const std::string& pattern) { return wildcard_match(pattern, *value); });
      break;
    case TestKind::Bool: {
      const std::optional<bool> b = parse_bool(*value);
      if (!b) return false;
      any = std::any_of(test.flags.begin(), test.flags.end(), [&](bool v) { return v == *b; });
      break;
    }
    default: {  // the numeric tests
      const std::optional<double> n = parse_number(*value);
      if (!n) return false;
      any = std::any_of(test.numbers.begin(), test.numbers.end(), [&](double v) {
        switch (test.kind) {
          case TestKind::NumericEquals: return *n == v;
          case TestKind::NumericLessThan: return *n < v;
          case TestKind::NumericLessThanEquals: return *n <= v;
          case TestKind::NumericGreaterThan: return *n > v;
          case TestKind::NumericGreaterThanEquals: return *n >= v;
          default: return false;
        }
      });
      break;
    }
  }
  return test.negated ? !any : any;
}

bool statement_applies(const Statement& s, const std::string& action, const AccessRequest& request) {
  const bool action_listed = std::any_of(s.actions.begin(), s.actions.end(),
                                         [&](const std::string& pattern) { return wildcard_match(pattern, action); });
  if (action_listed == s.not_action) return false;
  const bool resource_listed = std::any_of(s.resources.begin(), s.resources.end(), [&](const std::string& pattern) {
    return wildcard_match(pattern, request.resource);
  });
  if (resource_listed == s.not_resource) return false;
  return std::all_of(s.conditions.begin(), s.conditions.end(),
                     [&](const ConditionTest& t) { return test_holds(t, request); });
}

bool names_user(const Binding& b, const LocalUser& who) {
  return std::any_of(b.users.begin(), b.users.end(), [&](const UserEntry& u) {
    switch (u.kind) {
      case UserEntry::Kind::Everyone: return true;
      case UserEntry::Kind::Name: return u.name == who.name;
      case UserEntry::Kind::Uid: return u.uid == who.uid;
    }
    return false;
  });
}

// ---- parsing ------------------------------------------------------------------------------------

std::string display_name(const fs::path& file) { return file.empty() ? std::string("(policy text)") : file.string(); }

// One JSON text being read: names its file in every message.
class DocumentReader {
 public:
  explicit DocumentReader(std::string file) : file_(std::move(file)) {}

  [[nodiscard]] Error malformed(std::string_view where, std::string_view what) const {
    if (where.empty()) return Error::invalid_argument(fmt::format("MalformedPolicyDocument: {}: {}", file_, what));
    return Error::invalid_argument(fmt::format("MalformedPolicyDocument: {}: {}: {}", file_, where, what));
  }

  // The text as JSON; an object member named twice is refused, since which of the two a reader
  // keeps differs between parsers (a second "Effect" must not quietly turn a Deny into an Allow).
  [[nodiscard]] Result<json> parse_json(std::string_view text) const {
    if (format::json_nesting_exceeds(text))
      return fail(malformed({}, fmt::format("nests deeper than {} levels", format::kMaxJsonDepth)));
    std::vector<std::set<std::string>> open_objects;
    std::optional<std::string> duplicate;
    auto watch = [&](int, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::object_start) {
        open_objects.emplace_back();
      } else if (event == json::parse_event_t::object_end) {
        if (!open_objects.empty()) open_objects.pop_back();
      } else if (event == json::parse_event_t::key && !open_objects.empty() && parsed.is_string()) {
        if (!open_objects.back().insert(parsed.get<std::string>()).second && !duplicate)
          duplicate = parsed.get<std::string>();
      }
      return true;
    };
    json doc;
    try {
      doc = json::parse(text, watch);
    } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers like 1e400
      return fail(malformed({}, fmt::format("not valid JSON: {}", e.what())));
    }
    if (duplicate) return fail(malformed({}, fmt::format("the member \"{}\" appears twice in one object", *duplicate)));
    return doc;
  }

  // A policy document (`where` is its place in the file: "" for a whole file, "Bindings[0].Policy").
  // `label_prefix` goes before the place of a statement without a Sid in its label.
  [[nodiscard]] Result<std::vector<Statement>> parse_document(const json& doc, const std::string& where,
                                                              const std::string& label_prefix) const {
    if (!doc.is_object()) return fail(malformed(where, "a policy document must be a JSON object"));
    const std::string at = where.empty() ? std::string() : where + ".";
    bool variables = false;  // policy variables exist only in 2012-10-17 documents
    for (const auto& [name, value] : doc.items()) {
      if (name == "Version") {
        if (!value.is_string() || (value != "2012-10-17" && value != "2008-10-17"))
          return fail(malformed(at + "Version", fmt::format("must be \"2012-10-17\" or \"2008-10-17\", not {}", value.dump())));
        variables = value == "2012-10-17";
      } else if (name == "Id") {
        if (!value.is_string()) return fail(malformed(at + "Id", "must be a string"));
      } else if (name != "Statement") {
        return fail(malformed(at + name, "unknown element (a policy document has Version, Id and Statement)"));
      }
    }
    const auto statements = doc.find("Statement");
    if (statements == doc.end()) return fail(malformed(at + "Statement", "is required"));
    std::vector<Statement> out;
    std::set<std::string> sids;
    auto add = [&](const json& s, const std::string& place) -> Result<void> {
      auto parsed = parse_statement(s, place, label_prefix, variables, sids);
      if (!parsed) return fail(parsed.error());
      out.push_back(std::move(*parsed));
      return {};
    };
    if (statements->is_object()) {
      if (auto r = add(*statements, at + "Statement"); !r) return fail(r.error());
    } else if (statements->is_array()) {
      if (statements->empty()) return fail(malformed(at + "Statement", "must hold at least one statement"));
      for (size_t i = 0; i < statements->size(); ++i)
        if (auto r = add((*statements)[i], fmt::format("{}Statement[{}]", at, i)); !r) return fail(r.error());
    } else {
      return fail(malformed(at + "Statement", "must be a statement object or a list of them"));
    }
    return out;
  }

 private:
  [[nodiscard]] Result<Statement> parse_statement(const json& s, const std::string& where, const std::string& label_prefix,
                                                  bool variables, std::set<std::string>& sids) const {
    if (!s.is_object()) return fail(malformed(where, "a statement must be a JSON object"));
    for (const auto& [name, value] : s.items()) {
      static const std::set<std::string> known = {"Sid",      "Effect",      "Action",   "NotAction",
                                                  "Resource", "NotResource", "Condition"};
      if (name == "Principal" || name == "NotPrincipal")
        return fail(malformed(where + "." + name,
                              "not allowed: these are identity policies, which have no principal; the binding's "
                              "Users name who the policy applies to"));
      if (!known.contains(name)) return fail(malformed(where + "." + name, "unknown element"));
    }
    Statement out;
    out.label = label_prefix + where;
    if (auto sid = s.find("Sid"); sid != s.end()) {
      if (!sid->is_string()) return fail(malformed(where + ".Sid", "must be a string"));
      const std::string& text = sid->get_ref<const std::string&>();
      if (!std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isalnum(c) != 0; }))
        return fail(malformed(where + ".Sid", fmt::format("\"{}\": a Sid holds ASCII letters and digits only", text)));
      if (!text.empty()) {
        if (!sids.insert(text).second)
          return fail(malformed(where + ".Sid", fmt::format("\"{}\" is used by two statements of the document", text)));
        out.label = text;
      }
    }
    const auto effect = s.find("Effect");
    if (effect == s.end()) return fail(malformed(where + ".Effect", "is required (\"Allow\" or \"Deny\")"));
    if (*effect == "Allow") out.effect = Effect::Allow;
    else if (*effect == "Deny") out.effect = Effect::Deny;
    else return fail(malformed(where + ".Effect", fmt::format("must be \"Allow\" or \"Deny\" (case matters), not {}", effect->dump())));

    auto actions = parse_patterns(s, where, "Action", "NotAction", out.not_action, false);
    if (!actions) return fail(actions.error());
    for (auto& a : *actions) {
      if (a != "*" && (a.find(':') == std::string::npos || a.front() == ':'))
        return fail(malformed(where + (out.not_action ? ".NotAction" : ".Action"),
                              fmt::format("\"{}\": an action is \"service:Name\" or \"*\"", a)));
      out.actions.push_back(lower(a));
    }
    auto resources = parse_patterns(s, where, "Resource", "NotResource", out.not_resource, variables);
    if (!resources) return fail(resources.error());
    for (auto& r : *resources) {
      if (r != "*" && !r.starts_with("arn:"))
        return fail(malformed(where + (out.not_resource ? ".NotResource" : ".Resource"),
                              fmt::format("\"{}\": a resource is an ARN (\"arn:...\") or \"*\"", r)));
    }
    out.resources = std::move(*resources);

    if (auto condition = s.find("Condition"); condition != s.end()) {
      auto tests = parse_condition(*condition, where + ".Condition", variables);
      if (!tests) return fail(tests.error());
      out.conditions = std::move(*tests);
    }
    return out;
  }

  // Exactly one of `name`/`not_name`, a string or a non-empty list of strings.
  [[nodiscard]] Result<std::vector<std::string>> parse_patterns(const json& s, const std::string& where,
                                                                std::string_view name, std::string_view not_name,
                                                                bool& negated, bool variables) const {
    const auto plain = s.find(std::string(name)), inverse = s.find(std::string(not_name));
    if (plain != s.end() && inverse != s.end())
      return fail(malformed(where, fmt::format("has both {} and {}; a statement takes exactly one", name, not_name)));
    if (plain == s.end() && inverse == s.end())
      return fail(malformed(where, fmt::format("needs {} or {}", name, not_name)));
    negated = inverse != s.end();
    const json& value = negated ? *inverse : *plain;
    const std::string place = fmt::format("{}.{}", where, negated ? not_name : name);
    std::vector<std::string> out;
    auto take = [&](const json& v, const std::string& at) -> Result<void> {
      if (!v.is_string() || v.get_ref<const std::string&>().empty())
        return fail(malformed(at, "must be a non-empty string"));
      if (variables && v.get_ref<const std::string&>().find("${") != std::string::npos)
        return fail(malformed(at, "policy variables (${...}) are not supported"));
      out.push_back(v.get<std::string>());
      return {};
    };
    if (value.is_array()) {
      if (value.empty()) return fail(malformed(place, "must name at least one"));
      for (size_t i = 0; i < value.size(); ++i)
        if (auto r = take(value[i], fmt::format("{}[{}]", place, i)); !r) return fail(r.error());
    } else if (auto r = take(value, place); !r) {
      return fail(r.error());
    }
    return out;
  }

  [[nodiscard]] Result<std::vector<ConditionTest>> parse_condition(const json& block, const std::string& where,
                                                                   bool variables) const {
    if (!block.is_object()) return fail(malformed(where, "must be an object of condition operators"));
    std::vector<ConditionTest> out;
    for (const auto& [op_name, keys] : block.items()) {
      const std::string op_place = where + "." + op_name;
      auto info = find_operator(op_name);
      if (!info) return fail(malformed(op_place, unknown_operator_message(op_name)));
      if (!keys.is_object() || keys.empty())
        return fail(malformed(op_place, "must be a non-empty object of condition keys and values"));
      for (const auto& [key, values] : keys.items()) {
        const std::string key_place = op_place + "." + key;
        if (key.empty()) return fail(malformed(key_place, "a condition key must not be empty"));
        ConditionTest test{.kind = info->first.kind, .negated = info->first.negated, .if_exists = info->second, .key = key};
        if (values.is_array() && values.empty()) return fail(malformed(key_place, "must give at least one value"));
        const json listed = values.is_array() ? values : json::array({values});
        for (size_t i = 0; i < listed.size(); ++i) {
          const std::string at = values.is_array() ? fmt::format("{}[{}]", key_place, i) : key_place;
          if (auto r = add_value(test, listed[i], at, variables); !r) return fail(r.error());
        }
        out.push_back(std::move(test));
      }
    }
    return out;
  }

  // The operator named `name` (IfExists stripped), with whether IfExists was given.
  static std::optional<std::pair<OperatorInfo, bool>> find_operator(std::string_view name) {
    bool if_exists = false;
    if (name.size() > kIfExists.size() && name.ends_with(kIfExists)) {
      name.remove_suffix(kIfExists.size());
      if_exists = true;
    }
    for (const auto& op : kOperators)
      if (op.name == name && !(if_exists && op.kind == TestKind::Null)) return std::pair{op, if_exists};
    return std::nullopt;
  }

  static std::string unknown_operator_message(std::string_view name) {
    if (name.starts_with("ForAnyValue:") || name.starts_with("ForAllValues:"))
      return "the set operators (ForAnyValue:, ForAllValues:) are not supported: request keys have one value here";
    for (std::string_view family : {"Date", "IpAddress", "NotIpAddress", "Arn", "Binary"})
      if (name.starts_with(family)) return "IAM's Date, IpAddress, Arn and Binary operators are not supported";
    if (name == "NullIfExists") return "Null takes no IfExists";
    return "unknown condition operator (String*, Numeric*, Bool and Null are supported, with IfExists)";
  }

  [[nodiscard]] Result<void> add_value(ConditionTest& test, const json& v, const std::string& at, bool variables) const {
    if (!v.is_string() && !v.is_boolean() && !v.is_number())
      return fail(malformed(at, "condition values are strings, booleans or numbers"));
    const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
    switch (test.kind) {
      case TestKind::Bool:
      case TestKind::Null: {
        const std::optional<bool> b = v.is_boolean() ? std::optional<bool>(v.get<bool>())
                                                     : v.is_string() ? parse_bool(text) : std::nullopt;
        if (!b) return fail(malformed(at, fmt::format("{} is neither true nor false", v.dump())));
        test.flags.push_back(*b);
        return {};
      }
      case TestKind::StringEquals:
      case TestKind::StringEqualsIgnoreCase:
      case TestKind::StringLike:
        if (variables && text.find("${") != std::string::npos)
          return fail(malformed(at, "policy variables (${...}) are not supported"));
        test.strings.push_back(test.kind == TestKind::StringEqualsIgnoreCase ? lower(text) : text);
        return {};
      default: {
        const std::optional<double> n = v.is_number() ? std::optional<double>(v.get<double>())
                                                      : v.is_string() ? parse_number(text) : std::nullopt;
        if (!n) return fail(malformed(at, fmt::format("{} is not a number", v.dump())));
        test.numbers.push_back(*n);
        return {};
      }
    }
  }

  std::string file_;
};

[[nodiscard]] Result<std::vector<UserEntry>> parse_users(const DocumentReader& reader, const json& users,
                                                         const std::string& where) {
  if (!(users.is_string() || (users.is_array() && !users.empty())))
    return fail(reader.malformed(where, "must be a user name, a uid or \"*\", or a non-empty list of them"));
  const json listed = users.is_array() ? users : json::array({users});
  std::vector<UserEntry> out;
  for (size_t i = 0; i < listed.size(); ++i) {
    const std::string at = users.is_array() ? fmt::format("{}[{}]", where, i) : where;
    if (!listed[i].is_string() || listed[i].get_ref<const std::string&>().empty())
      return fail(reader.malformed(at, "must be a non-empty string"));
    const std::string& text = listed[i].get_ref<const std::string&>();
    UserEntry entry;
    if (text == "*") {
      entry.kind = UserEntry::Kind::Everyone;
    } else if (std::all_of(text.begin(), text.end(), [](unsigned char c) { return c >= '0' && c <= '9'; })) {
      entry.kind = UserEntry::Kind::Uid;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), entry.uid);
      if (ec != std::errc() || end != text.data() + text.size())
        return fail(reader.malformed(at, fmt::format("\"{}\" is not a uid (too large)", text)));
    } else if (text.find_first_of("*?") != std::string::npos) {
      return fail(reader.malformed(at, fmt::format("\"{}\": \"*\" stands alone for every user; names take no wildcards", text)));
    } else {
      entry.kind = UserEntry::Kind::Name;
      entry.name = text;
    }
    out.push_back(std::move(entry));
  }
  return out;
}

// A PolicyFile: read and parsed as one policy document; its messages name it.
[[nodiscard]] Result<std::vector<Statement>> load_policy_file(const DocumentReader& bindings_reader,
                                                              const fs::path& bindings_file, const json& value,
                                                              const std::string& where) {
  if (!value.is_string() || value.get_ref<const std::string&>().empty())
    return fail(bindings_reader.malformed(where, "must be a non-empty path"));
  const std::string& written = value.get_ref<const std::string&>();
  fs::path path(written);
  if (path.is_relative()) path = bindings_file.parent_path() / path;
  auto text = read_whole_file(path);
  if (!text) return fail(bindings_reader.malformed(where, text.error().message));
  const DocumentReader reader(display_name(path));
  auto doc = reader.parse_json(*text);
  if (!doc) return fail(doc.error());
  if (doc->is_object() && doc->contains("Bindings"))
    return fail(reader.malformed("Bindings", "a PolicyFile holds one policy document, not bindings"));
  return reader.parse_document(*doc, "", written + ": ");
}

}  // namespace

struct AccessPolicy::Rules {
  std::vector<Binding> bindings;
};

std::string_view access_decision_name(AccessDecision decision) {
  switch (decision) {
    case AccessDecision::Allowed: return "Allowed";
    case AccessDecision::ExplicitDeny: return "ExplicitDeny";
    case AccessDecision::ImplicitDeny: return "ImplicitDeny";
  }
  return "ImplicitDeny";
}

Result<AccessPolicy> AccessPolicy::parse(std::string_view json_text, const std::filesystem::path& source) {
  const DocumentReader reader(display_name(source));
  auto doc = reader.parse_json(json_text);
  if (!doc) return fail(doc.error());
  if (!doc->is_object()) return fail(reader.malformed({}, "must be a JSON object (bindings or a policy document)"));
  auto rules = std::make_shared<Rules>();

  // A bare policy document, for every user: told by its own elements, so that a misspelt Statement
  // is reported as such rather than as a bindings file without Bindings.
  if (doc->contains("Statement") || doc->contains("Version") || doc->contains("Id")) {
    if (doc->contains("Bindings"))
      return fail(reader.malformed({}, "has both Bindings and Statement: a bindings file or a policy document, not both"));
    auto statements = reader.parse_document(*doc, "", "");
    if (!statements) return fail(statements.error());
    rules->bindings.push_back(Binding{.users = {UserEntry{}}, .statements = std::move(*statements)});
    return AccessPolicy(std::move(rules));
  }

  for (const auto& [name, value] : doc->items())
    if (name != "Bindings")
      return fail(reader.malformed(name, "unknown member (a bindings file has Bindings; a policy document Statement)"));
  const auto bindings = doc->find("Bindings");
  if (bindings == doc->end()) return fail(reader.malformed("Bindings", "is required (or give a policy document with Statement)"));
  if (!bindings->is_array()) return fail(reader.malformed("Bindings", "must be a list"));
  for (size_t i = 0; i < bindings->size(); ++i) {
    const json& b = (*bindings)[i];
    const std::string where = fmt::format("Bindings[{}]", i);
    if (!b.is_object()) return fail(reader.malformed(where, "must be an object with Users and Policy or PolicyFile"));
    for (const auto& [name, value] : b.items())
      if (name != "Users" && name != "Policy" && name != "PolicyFile")
        return fail(reader.malformed(where + "." + name, "unknown member (a binding has Users and Policy or PolicyFile)"));
    Binding binding;
    const auto users = b.find("Users");
    if (users == b.end()) return fail(reader.malformed(where + ".Users", "is required"));
    auto entries = parse_users(reader, *users, where + ".Users");
    if (!entries) return fail(entries.error());
    binding.users = std::move(*entries);

    const auto inline_policy = b.find("Policy"), policy_file = b.find("PolicyFile");
    if (inline_policy != b.end() && policy_file != b.end())
      return fail(reader.malformed(where, "has both Policy and PolicyFile; a binding takes exactly one"));
    if (inline_policy == b.end() && policy_file == b.end())
      return fail(reader.malformed(where, "needs Policy or PolicyFile"));
    auto statements = inline_policy != b.end()
                          ? reader.parse_document(*inline_policy, where + ".Policy", "")
                          : load_policy_file(reader, source, *policy_file, where + ".PolicyFile");
    if (!statements) return fail(statements.error());
    binding.statements = std::move(*statements);
    rules->bindings.push_back(std::move(binding));
  }
  return AccessPolicy(std::move(rules));
}

Result<AccessPolicy> AccessPolicy::load(const std::filesystem::path& file) {
  auto text = read_whole_file(file);
  if (!text) return fail(text.error());
  return parse(*text, file);
}

AccessVerdict AccessPolicy::decide(const LocalUser& who, const AccessRequest& request) const {
  const std::string action = lower(request.action);
  const Statement* allowing = nullptr;
  for (const Binding& binding : rules_->bindings) {
    if (!names_user(binding, who)) continue;
    for (const Statement& s : binding.statements) {
      if (!statement_applies(s, action, request)) continue;
      if (s.effect == Effect::Deny) return {AccessDecision::ExplicitDeny, s.label};
      if (!allowing) allowing = &s;
    }
  }
  if (allowing) return {AccessDecision::Allowed, allowing->label};
  return {AccessDecision::ImplicitDeny, {}};
}

bool AccessPolicy::grants_users_other_than(const LocalUser& owner) const {
  return std::any_of(rules_->bindings.begin(), rules_->bindings.end(), [&](const Binding& b) {
    const bool names_others = std::any_of(b.users.begin(), b.users.end(), [&](const UserEntry& u) {
      switch (u.kind) {
        case UserEntry::Kind::Everyone: return true;
        case UserEntry::Kind::Name: return u.name != owner.name;
        case UserEntry::Kind::Uid: return u.uid != owner.uid;
      }
      return true;
    });
    return names_others && std::any_of(b.statements.begin(), b.statements.end(),
                                       [](const Statement& s) { return s.effect == Effect::Allow; });
  });
}

bool AccessPolicy::may_grant_anything_to(const LocalUser& who) const {
  return std::any_of(rules_->bindings.begin(), rules_->bindings.end(), [&](const Binding& b) {
    return names_user(b, who) &&
           std::any_of(b.statements.begin(), b.statements.end(), [](const Statement& s) { return s.effect == Effect::Allow; });
  });
}

}  // namespace vigil::remote_debug
