#include "storage/s3_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <map>
#include <vector>
#include <vigil/sdk/text.hpp>

#include "storage/s3_uri.h"

namespace vigil::storage {
namespace {

using sdk::trim;

// key -> value of one INI section; a nested block ("s3 =" then indented "key = value" lines) is
// stored as "s3.key".
using IniSection = std::map<std::string, std::string>;
using IniFile = std::map<std::string, IniSection>;

// The AWS file format: [section], key = value, full-line comments (# or ;) and comments after
// whitespace. A file that is missing or unreadable holds nothing (as for the AWS CLI).
IniFile read_ini(const std::string& path) {
  IniFile out;
  std::ifstream in(path);
  std::string raw, section, nested_parent;
  while (std::getline(in, raw)) {
    std::string_view line = raw;
    for (size_t at = line.find_first_of("#;"); at != std::string_view::npos; at = line.find_first_of("#;", at + 1)) {
      if (at == 0 || line[at - 1] == ' ' || line[at - 1] == '\t') {
        line = line.substr(0, at);
        break;
      }
    }
    const bool indented = !line.empty() && (line.front() == ' ' || line.front() == '\t');
    line = trim(line);
    if (line.empty()) continue;
    if (line.front() == '[' && line.back() == ']') {
      section = std::string(trim(line.substr(1, line.size() - 2)));
      nested_parent.clear();
      out[section];
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string key(trim(line.substr(0, eq)));
    const std::string value(trim(line.substr(eq + 1)));
    if (indented && !nested_parent.empty()) {
      out[section][nested_parent + "." + key] = value;
      continue;
    }
    nested_parent = value.empty() ? key : std::string();
    out[section][key] = value;
  }
  return out;
}

// The profile's settings: the credentials file's [NAME] first, then the config file's
// [profile NAME] ([default] for "default"), each key from the first that has it.
struct Profile {
  IniSection values;
  bool found = false;
};

Profile read_profile(const std::string& name, const std::string& credentials_file, const std::string& config_file) {
  Profile profile;
  auto take = [&](const IniFile& file, const std::string& section) {
    const auto it = file.find(section);
    if (it == file.end()) return;
    profile.found = true;
    for (const auto& [k, v] : it->second) profile.values.emplace(k, v);  // keeps the earlier file's value
  };
  if (!credentials_file.empty()) take(read_ini(credentials_file), name);
  if (!config_file.empty()) {
    const IniFile config = read_ini(config_file);
    take(config, "profile " + name);
    if (name == "default") take(config, "default");
  }
  return profile;
}

std::optional<std::string> value_of(const IniSection& values, const std::string& key) {
  const auto it = values.find(key);
  if (it == values.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

Result<int> positive_int(std::string_view name, std::string_view text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 1)
    return fail(Error::invalid_argument(fmt::format("{} must be a positive whole number, not '{}'", name, text)));
  return value;
}

}  // namespace

Result<S3Endpoint> parse_s3_endpoint(std::string_view url) {
  auto bad = [&](std::string_view why) {
    return fail(Error::invalid_argument(fmt::format("S3 endpoint '{}' {}", url_without_userinfo(url), why)));
  };
  S3Endpoint out;
  const size_t sep = url.find("://");
  if (sep == std::string_view::npos) return bad("is not a URL (scheme://host[:port])");
  out.scheme = std::string(url.substr(0, sep));
  if (out.scheme != "http" && out.scheme != "https") return bad("does not start with http:// or https://");
  std::string_view rest = url.substr(sep + 3);
  if (rest.ends_with('/')) rest.remove_suffix(1);
  if (rest.find('@') != std::string_view::npos) return bad("has a user name (credentials come from the AWS variables and files)");
  if (rest.find_first_of("/?#") != std::string_view::npos) return bad("has more than scheme://host[:port]");
  std::string_view host = rest;
  std::string_view port;
  const size_t bracket = rest.find(']');
  const size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket)) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (port.empty() || port.find_first_not_of("0123456789") != std::string_view::npos) return bad("has a bad port");
  }
  if (host.empty()) return bad("has no host");
  out.host = std::string(host);
  // The Host header leaves out a scheme's own port, so the signed host must too.
  if (!((out.scheme == "http" && port == "80") || (out.scheme == "https" && port == "443"))) out.port = std::string(port);
  return out;
}

bool S3Config::use_path_style(std::string_view bucket) const {
  if (bucket.find('.') != std::string_view::npos && endpoint.starts_with("https:")) return true;
  switch (addressing_style) {
    case S3AddressingStyle::Path: return true;
    case S3AddressingStyle::Virtual: return false;
    case S3AddressingStyle::Auto: return custom_endpoint;
  }
  return true;
}

Result<S3Config> s3_config_from_environment() {
  return s3_config_from_environment([](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  });
}

Result<S3Config> s3_config_from_environment(const EnvironmentLookup& lookup) {
  auto env = [&](std::string_view name) -> std::optional<std::string> {
    auto value = lookup(name);
    if (value && value->empty()) return std::nullopt;  // set but empty counts as unset, as for the AWS CLI
    return value;
  };
  const std::optional<std::string> home = env("HOME");
  const std::string credentials_file =
      env("AWS_SHARED_CREDENTIALS_FILE").value_or(home ? *home + "/.aws/credentials" : std::string());
  const std::string config_file = env("AWS_CONFIG_FILE").value_or(home ? *home + "/.aws/config" : std::string());
  const std::string profile_name = env("AWS_PROFILE").value_or("default");
  const Profile profile = read_profile(profile_name, credentials_file, config_file);
  auto setting = [&](const std::string& key) { return value_of(profile.values, key); };
  const std::string profile_place = fmt::format("profile '{}' in {} and {}", profile_name,
                                                credentials_file.empty() ? "(no HOME: no credentials file)" : credentials_file,
                                                config_file.empty() ? "(no HOME: no config file)" : config_file);

  S3Config config;
  const auto env_key = env("AWS_ACCESS_KEY_ID");
  const auto env_secret = env("AWS_SECRET_ACCESS_KEY");
  if (env_key || env_secret) {
    if (!env_key || !env_secret)
      return fail(Error::invalid_argument(fmt::format("S3 credentials: {} is set but {} is not",
                                                      env_key ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                                                      env_key ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID")));
    config.credentials = {*env_key, *env_secret, env("AWS_SESSION_TOKEN").value_or("")};
    config.credentials_source = "environment";
  } else {
    const auto key = setting("aws_access_key_id");
    const auto secret = setting("aws_secret_access_key");
    if (!key || !secret)
      return fail(Error::invalid_argument(fmt::format(
          "no S3 credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set, and {} {}", profile_place,
          !profile.found ? "does not exist"
          : !key         ? "has no aws_access_key_id"
                         : "has no aws_secret_access_key")));
    config.credentials = {*key, *secret, setting("aws_session_token").value_or("")};
    config.credentials_source = profile_place;
  }

  if (auto region = env("AWS_REGION").or_else([&] { return env("AWS_DEFAULT_REGION"); }).or_else([&] { return setting("region"); }))
    config.region = *region;

  const auto endpoint = env("AWS_ENDPOINT_URL_S3")
                            .or_else([&] { return env("AWS_ENDPOINT_URL"); })
                            .or_else([&] { return setting("s3.endpoint_url"); })
                            .or_else([&] { return setting("endpoint_url"); });
  config.custom_endpoint = endpoint.has_value();
  config.endpoint = endpoint.value_or(fmt::format("https://s3.{}.amazonaws.com", config.region));
  auto parsed = parse_s3_endpoint(config.endpoint);
  if (!parsed) return fail(parsed.error());
  config.endpoint = fmt::format("{}://{}", parsed->scheme, parsed->authority());

  const auto env_style = env("VIGIL_S3_ADDRESSING_STYLE");
  if (const auto style = env_style.or_else([&] { return setting("s3.addressing_style"); })) {
    if (*style == "path") config.addressing_style = S3AddressingStyle::Path;
    else if (*style == "virtual") config.addressing_style = S3AddressingStyle::Virtual;
    else if (*style == "auto") config.addressing_style = S3AddressingStyle::Auto;
    else
      return fail(Error::invalid_argument(fmt::format("{} must be path, virtual or auto, not '{}'",
                                                      env_style ? "VIGIL_S3_ADDRESSING_STYLE" : "s3.addressing_style of " + profile_place,
                                                      *style)));
  }

  const auto vigil_attempts = env("VIGIL_S3_MAX_ATTEMPTS");
  const auto aws_attempts = env("AWS_MAX_ATTEMPTS");
  if (const auto attempts = vigil_attempts.or_else([&] { return aws_attempts; }).or_else([&] { return setting("max_attempts"); })) {
    auto n = positive_int(vigil_attempts ? "VIGIL_S3_MAX_ATTEMPTS" : aws_attempts ? "AWS_MAX_ATTEMPTS" : "max_attempts", *attempts);
    if (!n) return fail(n.error());
    config.max_attempts = *n;
  }
  if (const auto timeout = env("VIGIL_S3_TIMEOUT_SECONDS")) {
    auto n = positive_int("VIGIL_S3_TIMEOUT_SECONDS", *timeout);
    if (!n) return fail(n.error());
    config.request_timeout = std::chrono::seconds(*n);
  }
  return config;
}

bool is_aws_credential_variable(std::string_view name) {
  static constexpr std::string_view kCredentialVariables[] = {
      "AWS_ACCESS_KEY_ID",  "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
      "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
      "AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE"};
  return std::find(std::begin(kCredentialVariables), std::end(kCredentialVariables), name) != std::end(kCredentialVariables);
}

}  // namespace vigil::storage
