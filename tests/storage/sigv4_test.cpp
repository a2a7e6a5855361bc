// SigV4 against the worked examples of AWS's "Signature Calculations for the Authorization Header"
// (S3 API reference): the same keys, dates and requests must give the published signatures.
#include <gtest/gtest.h>

#include "common/sha256.h"
#include "storage/sigv4.h"

namespace vigil::storage {
namespace {

const SigningKeyParts kExampleKey{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1", "s3"};
constexpr std::string_view kExampleDate = "20130524T000000Z";

TEST(SigV4, HmacMatchesRfc4231Case2) {
  const auto mac = hmac_sha256("Jefe", "what do ya want for nothing?");
  EXPECT_EQ(digest_hex(mac), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(SigV4, HmacHashesKeysLongerThanABlock) {
  // RFC 4231 test case 6: a 131-byte key.
  const std::string key(131, '\xaa');
  const auto mac = hmac_sha256(key, "Test Using Larger Than Block-Size Key - Hash Key First");
  EXPECT_EQ(digest_hex(mac), "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(SigV4, GetObjectWithRange) {
  RequestToSign request{.method = "GET",
                        .path = "/test.txt",
                        .query = {},
                        .headers = {{"Host", "examplebucket.s3.amazonaws.com"},
                                    {"Range", "bytes=0-9"},
                                    {"x-amz-content-sha256", std::string(kEmptyPayloadSha256)},
                                    {"x-amz-date", std::string(kExampleDate)}},
                        .payload_sha256 = std::string(kEmptyPayloadSha256)};
  const Signature s = sign_v4(request, kExampleKey, kExampleDate);
  EXPECT_EQ(s.signed_headers, "host;range;x-amz-content-sha256;x-amz-date");
  EXPECT_EQ(s.signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(s.authorization,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4, ListObjectsSortsAndEncodesTheQuery) {
  RequestToSign request{.method = "GET",
                        .path = "/",
                        .query = {{"prefix", "J"}, {"max-keys", "2"}},  // out of order on purpose
                        .headers = {{"host", "examplebucket.s3.amazonaws.com"},
                                    {"x-amz-content-sha256", std::string(kEmptyPayloadSha256)},
                                    {"x-amz-date", std::string(kExampleDate)}},
                        .payload_sha256 = std::string(kEmptyPayloadSha256)};
  const Signature s = sign_v4(request, kExampleKey, kExampleDate);
  EXPECT_NE(s.canonical_request.find("\nmax-keys=2&prefix=J\n"), std::string::npos) << s.canonical_request;
  EXPECT_EQ(s.signature, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST(SigV4, HeaderValuesAreTrimmedAndFolded) {
  RequestToSign a{.method = "GET", .path = "/k", .query = {}, .headers = {{"X-Amz-Meta-A", "  one   two  "}},
                  .payload_sha256 = "UNSIGNED-PAYLOAD"};
  RequestToSign b = a;
  b.headers = {{"x-amz-meta-a", "one two"}};
  EXPECT_EQ(sign_v4(a, kExampleKey, kExampleDate).signature, sign_v4(b, kExampleKey, kExampleDate).signature);
  EXPECT_NE(sign_v4(a, kExampleKey, kExampleDate).canonical_request.find("x-amz-meta-a:one two\n"), std::string::npos);
}

TEST(SigV4, UriEncodeKeepsUnreservedAndSlashOnlyWhenAsked) {
  EXPECT_EQ(uri_encode("a-b_c.d~e/f g+h=", true), "a-b_c.d~e/f%20g%2Bh%3D");
  EXPECT_EQ(uri_encode("a/b", false), "a%2Fb");
  EXPECT_EQ(uri_encode("\xc3\xa9", true), "%C3%A9");
}

TEST(SigV4, EmptyPayloadHashIsTheHashOfNothing) { EXPECT_EQ(sha256_hex(""), kEmptyPayloadSha256); }

}  // namespace
}  // namespace vigil::storage
