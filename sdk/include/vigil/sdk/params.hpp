// Vigil C++ SDK: rule parameters, declared once as constexpr specs and read back at create time.
//
//   class MyRule : public vigil::sdk::Rule {
//    public:
//     static constexpr const char* kModes[] = {"fast", "exact", nullptr};
//     static constexpr vigil::sdk::ParamSpec kParams[] = {
//         vigil::sdk::param_double("threshold", "0.0000001", "Mean absolute gradient below which ...").min(0),
//         vigil::sdk::param_string_list("collection_names", nullptr, "Collections to check"),
//         vigil::sdk::param_enum("mode", kModes, "fast", "How to check"),
//         vigil::sdk::param_int("min_samples", "1", "Samples before judging").min(1).calibrated("30"),
//     };
//     explicit MyRule(vigil::sdk::RuleContext ctx)
//         : Rule(std::move(ctx)), threshold_(params().get_double("threshold")) {}
//   };
//
// The SDK turns kParams into a static vigil_param_spec[] for the descriptor; the host validates the
// RuleParameters against it and passes typed values in the same order, which Params copies.
// calibrated(text) gives the parameter another default in the calibrated profile (ABI 1.2,
// plugin.h's vigil_profile_default); the default_text stays SageMaker's.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vigil/sdk/error.hpp"
#include "vigil/sdk/text.hpp"

namespace vigil::sdk::inline v1 {

// One parameter of a rule: a constexpr builder around vigil_param_spec.
class ParamSpec {
 public:
  static constexpr double kUnbounded = std::numeric_limits<double>::quiet_NaN();

  constexpr ParamSpec(const char* name, vigil_param_type type, const char* default_text,
                      const char* description) noexcept
      : spec_{sizeof(vigil_param_spec), name, type, 0u, default_text, kUnbounded, kUnbounded, nullptr, description} {}

  // Inclusive bounds (INT64 and DOUBLE only).
  [[nodiscard]] constexpr ParamSpec min(double value) const noexcept {
    ParamSpec p = *this;
    p.spec_.min_value = value;
    return p;
  }
  [[nodiscard]] constexpr ParamSpec max(double value) const noexcept {
    ParamSpec p = *this;
    p.spec_.max_value = value;
    return p;
  }
  [[nodiscard]] constexpr ParamSpec range(double lo, double hi) const noexcept { return min(lo).max(hi); }
  // The host refuses a configuration that leaves a required parameter out.
  [[nodiscard]] constexpr ParamSpec required(bool yes = true) const noexcept {
    ParamSpec p = *this;
    p.spec_.flags = yes ? (p.spec_.flags | VIGIL_PARAMF_REQUIRED) : (p.spec_.flags & ~uint32_t{VIGIL_PARAMF_REQUIRED});
    return p;
  }

  // The default in the calibrated profile (VIGIL_PROFILE_CALIBRATED), as SageMaker would pass it.
  [[nodiscard]] constexpr ParamSpec calibrated(const char* default_text) const noexcept {
    ParamSpec p = *this;
    p.calibrated_ = default_text;
    return p;
  }
  constexpr const char* calibrated_default() const noexcept { return calibrated_; }

  constexpr const vigil_param_spec& spec() const noexcept { return spec_; }
  constexpr operator const vigil_param_spec&() const noexcept { return spec_; }

  constexpr std::string_view name() const noexcept { return spec_.name ? spec_.name : ""; }
  constexpr vigil_param_type type() const noexcept { return spec_.type; }
  constexpr bool is_required() const noexcept { return (spec_.flags & VIGIL_PARAMF_REQUIRED) != 0; }
  constexpr const char* default_text() const noexcept { return spec_.default_text; }
  constexpr const char* description() const noexcept { return spec_.description; }
  constexpr bool has_min() const noexcept { return spec_.min_value == spec_.min_value; }  // not NaN
  constexpr bool has_max() const noexcept { return spec_.max_value == spec_.max_value; }
  constexpr double min_value() const noexcept { return spec_.min_value; }
  constexpr double max_value() const noexcept { return spec_.max_value; }
  constexpr const char* const* choices() const noexcept { return spec_.choices; }

 private:
  template <size_t N>
  friend constexpr ParamSpec param_enum(const char*, const char* const (&)[N], const char*, const char*) noexcept;

  vigil_param_spec spec_;
  const char* calibrated_ = nullptr;  // not part of vigil_param_spec, which never grows
};

namespace detail {
// Called only from constant evaluation on a bad spec: the compiler names the problem.
inline void enum_choices_must_end_with_nullptr() {}
}  // namespace detail

// default_text is the string SageMaker would pass ("true", "0.5", "a,b"); nullptr = no default.
constexpr ParamSpec param_bool(const char* name, const char* default_text, const char* description) noexcept {
  return {name, VIGIL_PARAM_BOOL, default_text, description};
}
constexpr ParamSpec param_int(const char* name, const char* default_text, const char* description) noexcept {
  return {name, VIGIL_PARAM_INT64, default_text, description};
}
constexpr ParamSpec param_double(const char* name, const char* default_text, const char* description) noexcept {
  return {name, VIGIL_PARAM_DOUBLE, default_text, description};
}
constexpr ParamSpec param_string(const char* name, const char* default_text, const char* description) noexcept {
  return {name, VIGIL_PARAM_STRING, default_text, description};
}
// Comma-separated in RuleParameters ("gradients,weights").
constexpr ParamSpec param_string_list(const char* name, const char* default_text, const char* description) noexcept {
  return {name, VIGIL_PARAM_STRING_LIST, default_text, description};
}
// A string the host checks compiles as a regex.
constexpr ParamSpec param_regex(const char* name, const char* default_text, const char* description) noexcept {
  return {name, VIGIL_PARAM_REGEX, default_text, description};
}
// One of `choices`: a static array ending with nullptr, e.g. {"a", "b", nullptr}.
template <size_t N>
constexpr ParamSpec param_enum(const char* name, const char* const (&choices)[N], const char* default_text,
                               const char* description) noexcept {
  if (choices[N - 1] != nullptr) detail::enum_choices_must_end_with_nullptr();
  ParamSpec p{name, VIGIL_PARAM_ENUM, default_text, description};
  p.spec_.choices = choices;
  return p;
}

namespace detail {

// Compile-time checks of a rule's kParams; each failure calls a function whose name says what is wrong.
inline void param_name_must_be_non_empty() {}
inline void param_names_must_be_unique() {}
inline void param_type_is_unknown() {}
inline void param_enum_needs_choices() {}
inline void param_choices_only_for_enum() {}
inline void param_bounds_only_for_int_or_double() {}
inline void param_min_must_not_exceed_max() {}
inline void param_required_with_default_makes_no_sense() {}
inline void param_enum_default_is_not_a_choice() {}
inline void param_bool_default_must_be_true_false_1_0() {}
inline void param_spec_struct_size_is_wrong() {}
inline void param_calibrated_default_must_be_non_empty() {}

consteval bool check_params(std::span<const ParamSpec> params) {
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamSpec& p = params[i];
    if (p.spec().struct_size != sizeof(vigil_param_spec)) param_spec_struct_size_is_wrong();
    if (p.name().empty()) param_name_must_be_non_empty();
    for (size_t j = 0; j < i; ++j)
      if (params[j].name() == p.name()) param_names_must_be_unique();
    if (p.type() < VIGIL_PARAM_BOOL || p.type() > VIGIL_PARAM_ENUM) param_type_is_unknown();
    // An enum's choices come from an array reference (param_enum), so only the first entry is
    // checked: comparing a global's address with nullptr is not a constant expression under ASan.
    if (p.type() == VIGIL_PARAM_ENUM && !p.choices()[0]) param_enum_needs_choices();
    if (p.type() != VIGIL_PARAM_ENUM && p.choices()) param_choices_only_for_enum();
    if ((p.has_min() || p.has_max()) && p.type() != VIGIL_PARAM_INT64 && p.type() != VIGIL_PARAM_DOUBLE)
      param_bounds_only_for_int_or_double();
    if (p.has_min() && p.has_max() && p.min_value() > p.max_value()) param_min_must_not_exceed_max();
    if (p.is_required() && p.default_text()) param_required_with_default_makes_no_sense();
    if (p.calibrated_default() && !*p.calibrated_default()) param_calibrated_default_must_be_non_empty();
    if (p.type() == VIGIL_PARAM_ENUM && p.default_text()) {
      bool found = false;
      for (const char* const* c = p.choices(); *c; ++c)
        if (std::string_view(*c) == p.default_text()) found = true;
      if (!found) param_enum_default_is_not_a_choice();
    }
    if (p.type() == VIGIL_PARAM_BOOL && p.default_text()) {
      const std::string_view d = p.default_text();
      if (!parse_bool(d)) param_bool_default_must_be_true_false_1_0();
    }
  }
  return true;
}

// The rule class's kParams (a C array or a span of ParamSpec), or none.
template <class R>
constexpr std::span<const ParamSpec> rule_params() noexcept {
  if constexpr (requires { R::kParams; }) return std::span<const ParamSpec>(R::kParams);
  else return {};
}

template <size_t N>
constexpr std::array<vigil_param_spec, N> to_spec_array(std::span<const ParamSpec> specs) noexcept {
  std::array<vigil_param_spec, N> table{};
  for (size_t i = 0; i < N; ++i) table[i] = specs[i].spec();
  return table;
}

// A static vigil_param_spec[] built at compile time from R::kParams (for inspection and tests; the
// plugin's descriptors use a table private to the plugin, see plugin.hpp).
template <class R>
struct ParamTable {
  static constexpr std::span<const ParamSpec> specs = rule_params<R>();
  static constexpr size_t size = specs.size();
  static_assert(check_params(specs), "invalid kParams");
  static constexpr std::array<vigil_param_spec, size> table = to_spec_array<size>(specs);
  static constexpr const vigil_param_spec* data() noexcept { return size ? table.data() : nullptr; }
};

}  // namespace detail

// The validated parameter values of one rule instance, copied from the host at create time (the
// host's vigil_param_value array lives only during create).
class Params {
 public:
  struct Entry {
    std::string name;
    vigil_param_type type = 0;
    bool is_set = false;
    std::string text;  // as given, or the default
    bool b = false;
    int64_t i = 0;
    double d = 0;
    std::vector<std::string> list;
  };

  Params() = default;

  // Copies `count` host values read in the order of `specs` (the descriptor's vigil_param_spec
  // array). Values past `count` are "not set".
  [[nodiscard]] static Result<Params> from_abi(std::span<const vigil_param_spec> specs, const vigil_param_value* values,
                                 uint32_t count) {
    if (count > 0 && !values) return fail(Error::invalid_argument("the rule context has parameters but no values"));
    Params p;
    p.entries_.reserve(specs.size());
    for (size_t k = 0; k < specs.size(); ++k) {
      Entry e;
      e.name = specs[k].name ? specs[k].name : "";
      e.type = specs[k].type;
      if (k < count) {
        const vigil_param_value& v = values[k];
        if (v.type != e.type)
          return fail(Error::invalid_argument(fmt::format(
              "the host passed parameter {} as type {}, the rule declares type {}", e.name, v.type, e.type)));
        e.is_set = v.is_set;
        if (v.text) e.text = v.text;
        if (e.is_set) {
          switch (e.type) {
            case VIGIL_PARAM_BOOL: e.b = v.v.b; break;
            case VIGIL_PARAM_INT64: e.i = v.v.i; break;
            case VIGIL_PARAM_DOUBLE: e.d = v.v.d; break;
            case VIGIL_PARAM_STRING:
            case VIGIL_PARAM_REGEX:
            case VIGIL_PARAM_ENUM:
              if (v.v.s) e.text = v.v.s;
              break;
            case VIGIL_PARAM_STRING_LIST:
              if (v.list_count > 0 && !v.list)
                return fail(Error::invalid_argument(fmt::format("parameter {} has items but no list", e.name)));
              e.list.reserve(v.list_count);
              for (size_t j = 0; j < v.list_count; ++j) e.list.emplace_back(v.list[j] ? v.list[j] : "");
              break;
            default: break;
          }
        }
      }
      p.entries_.push_back(std::move(e));
    }
    return p;
  }
  // The same from the ParamSpec declarations.
  [[nodiscard]] static Result<Params> from_abi(std::span<const ParamSpec> specs, const vigil_param_value* values, uint32_t count) {
    std::vector<vigil_param_spec> c;
    c.reserve(specs.size());
    for (const ParamSpec& s : specs) c.push_back(s.spec());
    return from_abi(std::span<const vigil_param_spec>(c), values, count);
  }

  // ABI 1.1 (rules flagged VIGIL_RULEF_EXTRA_PARAMS): the parameters given that the rule does not
  // declare, as (name, value) strings in name order. Empty with an ABI 1.0 host.
  std::span<const std::pair<std::string, std::string>> extra() const noexcept { return extra_; }
  std::optional<std::string_view> extra(std::string_view name) const noexcept {
    for (const auto& [n, v] : extra_)
      if (n == name) return std::string_view(v);
    return std::nullopt;
  }
  // Copies the host's extra (name, value) arrays.
  [[nodiscard]] Result<void> set_extra_from_abi(const char* const* names, const char* const* values, uint32_t count) {
    extra_.clear();
    if (count == 0) return {};
    if (!names || !values) return fail(Error::invalid_argument("the rule context has extra parameters but no arrays"));
    extra_.reserve(count);
    for (uint32_t i = 0; i < count; ++i) extra_.emplace_back(names[i] ? names[i] : "", values[i] ? values[i] : "");
    return {};
  }

  std::span<const Entry> entries() const noexcept { return entries_; }
  size_t size() const noexcept { return entries_.size(); }
  const Entry* find(std::string_view name) const noexcept {
    for (const auto& e : entries_)
      if (e.name == name) return &e;
    return nullptr;
  }
  bool contains(std::string_view name) const noexcept { return find(name) != nullptr; }
  // True when the parameter has a value (given, or a default). False for unknown names.
  bool is_set(std::string_view name) const noexcept {
    const Entry* e = find(name);
    return e && e->is_set;
  }

  // get<T>: T = bool, int64_t, double (also reads INT64), std::string / std::string_view (the text of
  // any scalar type), std::vector<std::string> (STRING_LIST). Errors: unknown name or a parameter that
  // is not set -> VIGIL_E_INVALID_ARGUMENT; another type -> VIGIL_E_TYPE_ERROR.
  template <class T>
  [[nodiscard]] Result<T> get(std::string_view name) const {
    const Entry* e = find(name);
    if (!e) return fail(Error::invalid_argument(fmt::format("the rule has no parameter {}", name)));
    if (!e->is_set) return fail(Error::invalid_argument(fmt::format("parameter {} is not set", name)));
    const auto mismatch = [&](std::string_view wanted) {
      return fail(Error::type_error(fmt::format("parameter {} is not {}", name, wanted)));
    };
    if constexpr (std::is_same_v<T, bool>) {
      if (e->type != VIGIL_PARAM_BOOL) return mismatch("a bool");
      return e->b;
    } else if constexpr (std::is_same_v<T, int64_t>) {
      if (e->type != VIGIL_PARAM_INT64) return mismatch("an int64");
      return e->i;
    } else if constexpr (std::is_same_v<T, double>) {
      if (e->type == VIGIL_PARAM_INT64) return static_cast<double>(e->i);
      if (e->type != VIGIL_PARAM_DOUBLE) return mismatch("a double");
      return e->d;
    } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view>) {
      if (e->type == VIGIL_PARAM_STRING_LIST) return mismatch("a string (it is a string list)");
      return T(e->text);
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      if (e->type != VIGIL_PARAM_STRING_LIST) return mismatch("a string list");
      return e->list;
    } else {
      static_assert(detail::always_false<T>,
                    "Params::get<T>: T must be bool, int64_t, double, std::string, std::string_view or "
                    "std::vector<std::string>");
    }
  }

  // The value, or `fallback` when the parameter is not set (unknown names and type errors still fail).
  template <class T>
  [[nodiscard]] Result<T> get_or(std::string_view name, T fallback) const {
    const Entry* e = find(name);
    if (e && !e->is_set) return fallback;
    return get<T>(name);
  }

#if VIGIL_SDK_EXCEPTIONS
  // Throwing getters (SMDebugValueError / SMDebugTypeError), handy in a rule's constructor.
  double get_double(std::string_view name) const { return value_or_throw(get<double>(name)); }
  int64_t get_int(std::string_view name) const { return value_or_throw(get<int64_t>(name)); }
  bool get_bool(std::string_view name) const { return value_or_throw(get<bool>(name)); }
  std::string get_string(std::string_view name) const { return value_or_throw(get<std::string>(name)); }
  std::vector<std::string> get_list(std::string_view name) const {
    return value_or_throw(get<std::vector<std::string>>(name));
  }
  double get_double_or(std::string_view name, double fallback) const {
    return value_or_throw(get_or<double>(name, fallback));
  }
  int64_t get_int_or(std::string_view name, int64_t fallback) const {
    return value_or_throw(get_or<int64_t>(name, fallback));
  }
  bool get_bool_or(std::string_view name, bool fallback) const { return value_or_throw(get_or<bool>(name, fallback)); }
  std::string get_string_or(std::string_view name, std::string fallback) const {
    return value_or_throw(get_or<std::string>(name, std::move(fallback)));
  }
  std::vector<std::string> get_list_or(std::string_view name, std::vector<std::string> fallback) const {
    return value_or_throw(get_or<std::vector<std::string>>(name, std::move(fallback)));
  }
#endif

 private:
  std::vector<Entry> entries_;
  std::vector<std::pair<std::string, std::string>> extra_;
};

}  // namespace vigil::sdk::inline v1
