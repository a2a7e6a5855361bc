// Rule profiles (ABI 1.2): named sets of parameter defaults a job selects as a whole. `sagemaker`
// (the default) is every spec's default_text; `calibrated` takes a rule's profile_defaults where it
// has them (docs/verdict-quality.md says how they were chosen).
#pragma once

#include <vigil/vigil.h>

#include <span>
#include <string>
#include <string_view>

namespace vigil::plugin_host {

struct Profile {
  std::string_view name;
  std::string_view summary;
};

// The profiles Vigil knows, the default first.
std::span<const Profile> profiles();
const Profile* find_profile(std::string_view name);
std::string profile_names();  // "sagemaker, calibrated"
inline constexpr std::string_view kDefaultProfile = VIGIL_PROFILE_SAGEMAKER;

// A descriptor's profile defaults (none before ABI 1.2, or for NULL).
std::span<const vigil_profile_default> profile_defaults(const vigil_rule_descriptor* rule);

// The default of parameter `param` in `profile`: the profile's own if the rule gives one, else the
// spec's default_text (nullptr when neither exists).
const char* profile_default(const vigil_rule_descriptor& rule, const vigil_param_spec& param, std::string_view profile);

}  // namespace vigil::plugin_host
