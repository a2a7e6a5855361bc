// The SDK's text helpers (vigil/sdk/text.hpp), shared by the host: ASCII case, trimming, and
// SageMaker's one boolean rule, checked against every spelling in boolean_spellings.txt.
#include "vigil/sdk/text.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace vigil::sdk {
namespace {

TEST(SdkText, CaseAndTrim) {
  EXPECT_EQ(lower("MiXed-1_Z"), "mixed-1_z");
  EXPECT_EQ(upper("batch-size"), "BATCH-SIZE");
  EXPECT_EQ(trim(" \t\r\n a b \f\v"), "a b");
  EXPECT_EQ(trim("   "), "");
  EXPECT_TRUE(iequals("Content-Type", "content-type"));
  EXPECT_FALSE(iequals("abc", "abd"));
  EXPECT_FALSE(iequals("abc", "ab"));
}

TEST(SdkText, EverySageMakerBooleanSpelling) {
  std::ifstream in(VIGIL_BOOLEAN_SPELLINGS);
  ASSERT_TRUE(in) << VIGIL_BOOLEAN_SPELLINGS;
  int checked = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t bar = line.find('|');
    ASSERT_NE(bar, std::string::npos) << line;
    const std::string expected = line.substr(0, bar), text = line.substr(bar + 1);
    const std::optional<bool> got = parse_bool(text);
    if (expected == "none") EXPECT_FALSE(got.has_value()) << "'" << text << "'";
    else EXPECT_EQ(got, std::optional<bool>(expected == "true")) << "'" << text << "'";
    ++checked;
  }
  EXPECT_GE(checked, 20);
  static_assert(parse_bool("True") == true && parse_bool("0") == false && !parse_bool("yes"));
}

}  // namespace
}  // namespace vigil::sdk
