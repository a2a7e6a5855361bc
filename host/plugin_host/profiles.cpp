#include "plugin_host/profiles.h"

#include <array>
#include <cstring>

namespace vigil::plugin_host {

namespace {

constexpr std::array kProfiles{
    Profile{VIGIL_PROFILE_SAGEMAKER, "SageMaker's defaults, faithfully (the default)"},
    Profile{VIGIL_PROFILE_CALIBRATED, "defaults and evidence requirements chosen against labelled runs"},
};

}  // namespace

std::span<const Profile> profiles() { return kProfiles; }

const Profile* find_profile(std::string_view name) {
  for (const auto& p : kProfiles)
    if (p.name == name) return &p;
  return nullptr;
}

std::string profile_names() {
  std::string out;
  for (const auto& p : kProfiles) out += (out.empty() ? "" : ", ") + std::string(p.name);
  return out;
}

std::span<const vigil_profile_default> profile_defaults(const vigil_rule_descriptor* rule) {
  if (!VIGIL_HAS_FIELD(rule, vigil_rule_descriptor, profile_default_count) || !rule->profile_defaults) return {};
  return {rule->profile_defaults, rule->profile_default_count};
}

const char* profile_default(const vigil_rule_descriptor& rule, const vigil_param_spec& param, std::string_view profile) {
  if (profile != kDefaultProfile)
    for (const auto& d : profile_defaults(&rule))
      if (d.profile && d.param && d.profile == profile && std::strcmp(d.param, param.name) == 0) return d.default_text;
  return param.default_text;
}

}  // namespace vigil::plugin_host
