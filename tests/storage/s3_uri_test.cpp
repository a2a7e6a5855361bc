#include <gtest/gtest.h>

#include "storage/s3_uri.h"

namespace vigil::storage {
namespace {

TEST(S3Uri, ParsesBucketAndPrefix) {
  auto uri = parse_s3_uri("s3://my-bucket/jobs/job-1/debug-output/");
  ASSERT_TRUE(uri.has_value()) << uri.error().message;
  EXPECT_EQ(uri->bucket, "my-bucket");
  EXPECT_EQ(uri->prefix, "jobs/job-1/debug-output");
  EXPECT_EQ(uri->to_string(), "s3://my-bucket/jobs/job-1/debug-output");
  EXPECT_EQ(uri->key("index/000000000/000000000001_worker_0.json"),
            "jobs/job-1/debug-output/index/000000000/000000000001_worker_0.json");
}

TEST(S3Uri, AWholeBucket) {
  for (std::string_view text : {"s3://bucket", "s3://bucket/"}) {
    auto uri = parse_s3_uri(text);
    ASSERT_TRUE(uri.has_value()) << text;
    EXPECT_EQ(uri->prefix, "");
    EXPECT_EQ(uri->key("a/b"), "a/b");
    EXPECT_EQ(uri->to_string(), "s3://bucket");
  }
}

TEST(S3Uri, RefusesWhatNamesNoOnePlace) {
  for (std::string_view text : {"/local/path", "s3:/bucket", "s3://", "s3://ab", "s3://Bucket/x", "s3://-bucket/x",
                                "s3://bucket-/x", "s3://a..b/x", "s3://bucket//x", "s3://bucket/a/../b",
                                "s3://bucket/./a", "s3://bucket_name/x"}) {
    auto uri = parse_s3_uri(text);
    EXPECT_FALSE(uri.has_value()) << text;
    if (!uri) {
      EXPECT_EQ(uri.error().code, ErrorCode::InvalidArgument) << text;
      EXPECT_NE(uri.error().message.find(std::string(text)), std::string::npos) << uri.error().message;
    }
  }
}

TEST(S3Uri, TellsS3UrisFromPaths) {
  EXPECT_TRUE(is_s3_uri("s3://b/p"));
  EXPECT_FALSE(is_s3_uri("./s3://b"));
  EXPECT_FALSE(is_s3_uri("S3://b"));
}

}  // namespace
}  // namespace vigil::storage
