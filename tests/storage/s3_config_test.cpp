// S3Config from environment variables and the AWS profile files, through a map instead of the
// process environment.
#include "storage/s3_config.h"
#include "storage/s3_uri.h"

#include <fstream>
#include <map>

#include "test_support.h"

namespace vigil::storage {
namespace {

using Env = std::map<std::string, std::string>;

Result<S3Config> config_from(const Env& env) {
  return s3_config_from_environment([&](std::string_view name) -> std::optional<std::string> {
    const auto it = env.find(std::string(name));
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
}

void write_text(const test::fs::path& path, const std::string& text) { std::ofstream(path) << text; }

TEST(S3Config, CredentialsRegionAndEndpointFromTheEnvironment) {
  auto config = config_from({{"AWS_ACCESS_KEY_ID", "AKID"}, {"AWS_SECRET_ACCESS_KEY", "SECRET"},
                             {"AWS_SESSION_TOKEN", "TOKEN"}, {"AWS_REGION", "eu-west-1"},
                             {"AWS_DEFAULT_REGION", "ap-south-1"}, {"AWS_ENDPOINT_URL", "http://minio:9000/"},
                             {"AWS_ENDPOINT_URL_S3", "http://127.0.0.1:8000"}});
  ASSERT_VIGIL_OK(config);
  EXPECT_EQ(config->credentials.access_key_id, "AKID");
  EXPECT_EQ(config->credentials.secret_access_key, "SECRET");
  EXPECT_EQ(config->credentials.session_token, "TOKEN");
  EXPECT_EQ(config->credentials_source, "environment");
  EXPECT_EQ(config->region, "eu-west-1");
  EXPECT_EQ(config->endpoint, "http://127.0.0.1:8000");  // AWS_ENDPOINT_URL_S3 before AWS_ENDPOINT_URL
  EXPECT_TRUE(config->custom_endpoint);
  EXPECT_TRUE(config->use_path_style("trials"));  // a custom endpoint: path-style unless told otherwise
  EXPECT_EQ(config->max_attempts, 5);
  EXPECT_EQ(config->request_timeout, std::chrono::seconds(30));
}

TEST(S3Config, AwsDefaultsAndAddressing) {
  auto config = config_from({{"AWS_ACCESS_KEY_ID", "AKID"}, {"AWS_SECRET_ACCESS_KEY", "SECRET"},
                             {"AWS_DEFAULT_REGION", "eu-central-1"}, {"AWS_ENDPOINT_URL", "http://minio:9000/"}});
  ASSERT_VIGIL_OK(config);
  EXPECT_EQ(config->region, "eu-central-1");
  EXPECT_EQ(config->endpoint, "http://minio:9000");

  config = config_from({{"AWS_ACCESS_KEY_ID", "AKID"}, {"AWS_SECRET_ACCESS_KEY", "SECRET"}});
  ASSERT_VIGIL_OK(config);
  EXPECT_EQ(config->region, "us-east-1");
  EXPECT_EQ(config->endpoint, "https://s3.us-east-1.amazonaws.com");
  EXPECT_FALSE(config->custom_endpoint);
  EXPECT_FALSE(config->use_path_style("trials"));       // virtual-hosted on AWS
  EXPECT_TRUE(config->use_path_style("my.dotted.bucket"));  // its virtual host would not match the certificate

  config = config_from({{"AWS_ACCESS_KEY_ID", "AKID"}, {"AWS_SECRET_ACCESS_KEY", "SECRET"},
                        {"AWS_ENDPOINT_URL_S3", "http://localhost:9000"}, {"VIGIL_S3_ADDRESSING_STYLE", "virtual"}});
  ASSERT_VIGIL_OK(config);
  EXPECT_FALSE(config->use_path_style("trials"));
  EXPECT_FALSE(config->use_path_style("a.b.c"));  // dots matter only over https

  config = config_from({{"AWS_ACCESS_KEY_ID", "AKID"}, {"AWS_SECRET_ACCESS_KEY", "SECRET"},
                        {"VIGIL_S3_ADDRESSING_STYLE", "path"}});
  ASSERT_VIGIL_OK(config);
  EXPECT_TRUE(config->use_path_style("trials"));

  config = config_from({{"AWS_ACCESS_KEY_ID", "AKID"}, {"AWS_SECRET_ACCESS_KEY", "SECRET"},
                        {"VIGIL_S3_ADDRESSING_STYLE", "sideways"}});
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message.find("VIGIL_S3_ADDRESSING_STYLE"), std::string::npos);
}

TEST(S3Config, AttemptsAndTimeouts) {
  const Env base = {{"AWS_ACCESS_KEY_ID", "AKID"}, {"AWS_SECRET_ACCESS_KEY", "SECRET"}};
  Env env = base;
  env["AWS_MAX_ATTEMPTS"] = "7";
  auto config = config_from(env);
  ASSERT_VIGIL_OK(config);
  EXPECT_EQ(config->max_attempts, 7);
  env["VIGIL_S3_MAX_ATTEMPTS"] = "2";
  env["VIGIL_S3_TIMEOUT_SECONDS"] = "4";
  config = config_from(env);
  ASSERT_VIGIL_OK(config);
  EXPECT_EQ(config->max_attempts, 2);
  EXPECT_EQ(config->request_timeout, std::chrono::seconds(4));
  for (const char* bad : {"0", "-1", "three", "2x"}) {
    env["VIGIL_S3_MAX_ATTEMPTS"] = bad;
    config = config_from(env);
    ASSERT_FALSE(config) << bad;
    EXPECT_EQ(config.error().code, ErrorCode::InvalidArgument);
    EXPECT_NE(config.error().message.find("VIGIL_S3_MAX_ATTEMPTS"), std::string::npos);
  }
}

TEST(S3Config, ProfileFiles) {
  test::ScratchDir dir;
  write_text(dir / "credentials",
             "# a comment\n[default]\naws_access_key_id = DEFAULTKEY\naws_secret_access_key = DEFAULTSECRET\n\n"
             "[dev]\n  aws_access_key_id=DEVKEY   \n; another comment\naws_secret_access_key = DEV/SECRET+x  # trailing\n"
             "aws_session_token = DEVTOKEN\n");
  write_text(dir / "config",
             "[default]\nregion = us-west-2\n\n[profile dev]\nregion = eu-north-1\nmax_attempts = 3\n"
             "s3 =\n  addressing_style = virtual\n  endpoint_url = http://storage.local:9000\n");
  const Env files = {{"AWS_SHARED_CREDENTIALS_FILE", (dir / "credentials").string()},
                     {"AWS_CONFIG_FILE", (dir / "config").string()}};
  auto config = config_from(files);
  ASSERT_VIGIL_OK(config);
  EXPECT_EQ(config->credentials.access_key_id, "DEFAULTKEY");
  EXPECT_EQ(config->credentials.secret_access_key, "DEFAULTSECRET");
  EXPECT_EQ(config->region, "us-west-2");
  EXPECT_EQ(config->endpoint, "https://s3.us-west-2.amazonaws.com");
  EXPECT_NE(config->credentials_source.find("profile 'default'"), std::string::npos);

  Env dev = files;
  dev["AWS_PROFILE"] = "dev";
  config = config_from(dev);
  ASSERT_VIGIL_OK(config);
  EXPECT_EQ(config->credentials.access_key_id, "DEVKEY");
  EXPECT_EQ(config->credentials.secret_access_key, "DEV/SECRET+x");
  EXPECT_EQ(config->credentials.session_token, "DEVTOKEN");
  EXPECT_EQ(config->region, "eu-north-1");
  EXPECT_EQ(config->max_attempts, 3);
  EXPECT_EQ(config->endpoint, "http://storage.local:9000");
  EXPECT_TRUE(config->custom_endpoint);
  EXPECT_FALSE(config->use_path_style("trials"));  // the profile's s3.addressing_style

  // The environment's credentials and region come before the profile's.
  dev["AWS_ACCESS_KEY_ID"] = "ENVKEY";
  dev["AWS_SECRET_ACCESS_KEY"] = "ENVSECRET";
  dev["AWS_REGION"] = "sa-east-1";
  config = config_from(dev);
  ASSERT_VIGIL_OK(config);
  EXPECT_EQ(config->credentials.access_key_id, "ENVKEY");
  EXPECT_EQ(config->credentials.session_token, "");
  EXPECT_EQ(config->region, "sa-east-1");

  // HOME locates the files when no variable names them.
  test::fs::create_directories(dir / "home" / ".aws");
  write_text(dir / "home" / ".aws" / "config", "[default]\naws_access_key_id = HOMEKEY\naws_secret_access_key = HOMESECRET\n");
  config = config_from({{"HOME", (dir / "home").string()}});
  ASSERT_VIGIL_OK(config);
  EXPECT_EQ(config->credentials.access_key_id, "HOMEKEY");
}

TEST(S3Config, MissingCredentialsSayWhereTheyWereLookedFor) {
  test::ScratchDir dir;
  auto config = config_from({{"AWS_SHARED_CREDENTIALS_FILE", (dir / "nope").string()},
                             {"AWS_CONFIG_FILE", (dir / "nada").string()}, {"AWS_PROFILE", "ci"}});
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().code, ErrorCode::InvalidArgument);
  for (const std::string& named : {std::string("AWS_ACCESS_KEY_ID"), std::string("AWS_SECRET_ACCESS_KEY"),
                                   std::string("'ci'"), (dir / "nope").string(), (dir / "nada").string()})
    EXPECT_NE(config.error().message.find(named), std::string::npos) << named << " in " << config.error().message;
}

TEST(S3Config, NoSecretInAnyMessage) {
  test::ScratchDir dir;
  const std::string secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  const std::string token = "FQoGZXIvYXdzEXAMPLETOKEN";
  write_text(dir / "credentials", "[default]\naws_secret_access_key = " + secret + "\naws_session_token = " + token + "\n");
  std::vector<Error> errors;
  auto add = [&](const Env& env) {
    auto config = config_from(env);
    ASSERT_FALSE(config);
    errors.push_back(config.error());
  };
  add({{"AWS_SHARED_CREDENTIALS_FILE", (dir / "credentials").string()}});  // a secret without a key id
  add({{"AWS_SECRET_ACCESS_KEY", secret}, {"AWS_SESSION_TOKEN", token}});   // likewise from the environment
  add({{"AWS_ACCESS_KEY_ID", "AKID"}, {"AWS_SECRET_ACCESS_KEY", secret}, {"AWS_SESSION_TOKEN", token},
       {"AWS_ENDPOINT_URL_S3", "ftp://host"}});
  add({{"AWS_ACCESS_KEY_ID", "AKID"}, {"AWS_SECRET_ACCESS_KEY", secret}, {"VIGIL_S3_TIMEOUT_SECONDS", "soon"}});
  ASSERT_EQ(errors.size(), 4u);
  for (const Error& e : errors) {
    EXPECT_EQ(e.message.find(secret), std::string::npos) << e.message;
    EXPECT_EQ(e.message.find(token), std::string::npos) << e.message;
    EXPECT_EQ(e.file.find(secret), std::string::npos);
  }
}

// Issue 28, item 18: an endpoint URL with a user name and password is refused, and no message
// about it, or about an s3:// location written the same way, shows the password.
TEST(S3Config, NoEndpointPasswordInAnyMessage) {
  const std::string password = "pa/ss-hunter2";
  std::vector<std::string> messages;
  for (const std::string& url : {"http://admin:" + password + "@minio:9000", "ftp://admin:" + password + "@minio",
                                 "http://admin:" + password + "@minio/path", "admin:" + password + "@minio:9000"}) {
    auto config = config_from({{"AWS_ACCESS_KEY_ID", "AKID"}, {"AWS_SECRET_ACCESS_KEY", "SECRET"},
                               {"AWS_ENDPOINT_URL_S3", url}});
    ASSERT_FALSE(config) << url;
    messages.push_back(config.error().message);
    auto endpoint = parse_s3_endpoint(url);
    ASSERT_FALSE(endpoint) << url;
    messages.push_back(endpoint.error().message);
  }
  auto uri = parse_s3_uri("s3://admin:" + password + "@bucket/trial");
  ASSERT_FALSE(uri);
  messages.push_back(uri.error().message);
  for (const std::string& message : messages) {
    EXPECT_EQ(message.find("hunter2"), std::string::npos) << message;
    EXPECT_EQ(message.find("pa/ss"), std::string::npos) << message;
    EXPECT_NE(message.find("***"), std::string::npos) << message;  // it says where, without what
  }
}

TEST(S3Config, EndpointUrls) {
  auto endpoint = parse_s3_endpoint("https://s3.eu-west-1.amazonaws.com:443/");
  ASSERT_VIGIL_OK(endpoint);
  EXPECT_EQ(endpoint->scheme, "https");
  EXPECT_EQ(endpoint->authority(), "s3.eu-west-1.amazonaws.com");  // the scheme's own port is left out, as in Host
  endpoint = parse_s3_endpoint("http://[::1]:9000");
  ASSERT_VIGIL_OK(endpoint);
  EXPECT_EQ(endpoint->host, "[::1]");
  EXPECT_EQ(endpoint->port, "9000");
  for (const char* bad : {"s3.amazonaws.com", "ftp://host", "http://", "http://host/path", "http://host:port",
                          "http://user@host", "http://host?x=1"})
    EXPECT_FALSE(parse_s3_endpoint(bad)) << bad;
}

}  // namespace
}  // namespace vigil::storage
