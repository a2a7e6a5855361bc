// How to reach S3: credentials, region, endpoint, addressing style, timeouts and retries, found
// where the AWS CLI and SDKs find them (environment variables, then the shared credentials and
// config files of a profile). The secret key and the session token never appear in a message.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

namespace vigil::storage {

struct S3Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // temporary credentials: sent (and signed) as x-amz-security-token
};

enum class S3AddressingStyle {
  Auto,     // virtual-hosted on AWS's own endpoints, path-style on a custom endpoint
  Path,     // http://endpoint/bucket/key
  Virtual,  // http://bucket.endpoint/key
};

struct S3Config {
  S3Credentials credentials;
  std::string region = "us-east-1";
  // "scheme://host[:port]", no path: AWS's https://s3.<region>.amazonaws.com unless one is configured.
  std::string endpoint;
  bool custom_endpoint = false;  // the endpoint was configured (not AWS's default for the region)
  S3AddressingStyle addressing_style = S3AddressingStyle::Auto;

  int max_attempts = 5;  // tries per call, the first included
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds request_timeout{30000};  // one attempt; a call ends by request_timeout × max_attempts
  // An attempt whose transfer stays below low_speed_bytes_per_second for low_speed_window is abandoned
  // (a stalled connection), well before request_timeout.
  long low_speed_bytes_per_second = 1;
  std::chrono::seconds low_speed_window{10};
  // Full-jitter exponential backoff between attempts: uniform in [0, min(cap, base × 2^retry)].
  std::chrono::milliseconds backoff_base{100};
  std::chrono::milliseconds backoff_cap{5000};
  int list_max_keys = 0;  // ListObjectsV2 max-keys; 0: the server's default (1000 on AWS)
  // One listing ends (Io) past this many pages or this long, whatever IsTruncated says: a hostile
  // endpoint could paginate forever (docs/object-storage.md, "Limits").
  int list_max_pages = 10000;
  std::chrono::milliseconds list_time_limit{std::chrono::minutes(10)};

  // Where the credentials came from ("environment", "profile default in /home/u/.aws/credentials"):
  // for messages, never the credentials themselves.
  std::string credentials_source;

  // Whether requests for `bucket` use path-style addressing: as configured, and always for a bucket
  // whose name holds '.' over https (a virtual host name with dots does not match S3's certificate).
  [[nodiscard]] bool use_path_style(std::string_view bucket) const;
};

// An endpoint URL taken apart: what the client connects to and signs as the host.
struct S3Endpoint {
  std::string scheme;  // "http" or "https"
  std::string host;    // "s3.us-east-1.amazonaws.com", "127.0.0.1", "[::1]"
  std::string port;    // empty: the scheme's default
  // host[:port], as the Host header carries it.
  [[nodiscard]] std::string authority() const { return port.empty() ? host : host + ":" + port; }
};
// "scheme://host[:port][/]"; a path, query, user name or other scheme is an InvalidArgument.
[[nodiscard]] Result<S3Endpoint> parse_s3_endpoint(std::string_view url);

// A getenv: the value of a variable, or nullopt when it is not set.
using EnvironmentLookup = std::function<std::optional<std::string>(std::string_view name)>;

// The configuration from the process environment (and the profile files it names).
[[nodiscard]] Result<S3Config> s3_config_from_environment();
// The same from `lookup` instead of the process environment (tests).
//   credentials: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN); else profile
//     AWS_PROFILE ("default") of AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials), then of
//     AWS_CONFIG_FILE (~/.aws/config, section "[profile NAME]", "[default]")
//   region: AWS_REGION, AWS_DEFAULT_REGION, the profile's region, "us-east-1"
//   endpoint: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's s3.endpoint_url or endpoint_url
//   addressing: VIGIL_S3_ADDRESSING_STYLE (path|virtual|auto), the profile's s3.addressing_style
//   attempts: VIGIL_S3_MAX_ATTEMPTS, AWS_MAX_ATTEMPTS, the profile's max_attempts (5)
//   timeout: VIGIL_S3_TIMEOUT_SECONDS per attempt (30)
[[nodiscard]] Result<S3Config> s3_config_from_environment(const EnvironmentLookup& lookup);

// Whether environment variable `name` carries AWS credentials or says where to fetch them (the
// keys, the session token, the container and web-identity credential sources): what a process
// acting for someone else (a remote-debug session) must not inherit.
[[nodiscard]] bool is_aws_credential_variable(std::string_view name);

}  // namespace vigil::storage
