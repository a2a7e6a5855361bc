// compile_search_regex: the limits, and smdebug's trailing look-behind (XGBoost's losses collection)
// rewritten for ECMAScript so that it selects exactly the names Python's re.search selects.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "common/regex_limits.h"
#include "common/search_regex.h"
#include "test_support.h"

namespace vigil {
namespace {

bool search(const std::regex& re, const std::string& s) { return std::regex_search(s, re); }

// libstdc++'s matcher recurses once per character of the text: a 30,000-character name overflowed the
// stack (a crash, not a failure, before the bound). Past kMaxRegexSubjectLength nothing matches.
TEST(SearchRegex, ALongTextIsNeverHandedToTheMatcher) {
  auto re = compile_search_regex("(a|b)*c.*x");
  ASSERT_VIGIL_OK(re);
  for (const size_t length : {size_t(30'000), size_t(200'000)}) {
    const std::string text = std::string(length - 1, 'a') + "x";
    EXPECT_FALSE(regex_search_bounded(text, *re)) << length;
  }
  const std::string within = std::string(kMaxRegexSubjectLength - 2, 'a') + "cx";
  EXPECT_TRUE(regex_search_bounded(within, *re));
  EXPECT_FALSE(regex_search_bounded(within + "x", *re));  // one character past the bound
}

TEST(SearchRegex, SmdebugsXgboostLossesPatternSelectsWhatPythonSelects) {
  auto losses = compile_search_regex("^[a-zA-z]+-.+(?<!(auc|map))$");
  ASSERT_VIGIL_OK(losses);
  // Python's meaning: the body matches and the name does not end with "auc" or "map".
  const std::regex body("^[a-zA-z]+-.+$");
  auto python = [&](const std::string& s) {
    return search(body, s) && !s.ends_with("auc") && !s.ends_with("map");
  };
  // Every name of up to 5 characters over an alphabet that reaches every branch.
  const std::string alphabet = "aucmpx-_";
  std::vector<std::string> names{""};
  for (size_t len = 1, begin = 0; len <= 5; ++len) {
    const size_t end = names.size();
    for (size_t i = begin; i < end; ++i)
      for (char c : alphabet) names.push_back(names[i] + c);
    begin = end;
  }
  names.insert(names.end(), {"train-rmse", "validation-auc", "validation-logloss", "eval-map", "eval-map@3",
                             "eval-ndcg@5", "a-xauc", "a-aucx", "train-error@0.7"});
  size_t selected = 0;
  for (const auto& n : names) {
    ASSERT_EQ(search(*losses, n), python(n)) << n;
    selected += python(n);
  }
  EXPECT_GT(selected, 1000u);
  EXPECT_EQ(ecmascript_form("^[a-zA-z]+-.+(?<!(auc|map))$"), "^(?!.*(?:auc|map)$)(?:[a-zA-z]+-.+)$");
}

TEST(SearchRegex, AnUnanchoredLookBehindKeepsSearchSemantics) {
  auto re = compile_search_regex("loss(?<!xloss)$");
  ASSERT_VIGIL_OK(re);
  EXPECT_TRUE(search(*re, "train_loss"));
  EXPECT_FALSE(search(*re, "train_xloss"));
  EXPECT_FALSE(search(*re, "loss_x"));
}

TEST(SearchRegex, OtherLookBehindsAndOversizedPatternsAreRefusedWithTheReason) {
  auto lb = compile_search_regex("(?<=a)b");
  ASSERT_FALSE(lb);
  EXPECT_EQ(lb.error().code, ErrorCode::InvalidArgument);
  EXPECT_NE(lb.error().message.find("(?<=a)b"), std::string::npos);
  auto big = compile_search_regex(std::string(5000, 'a'));
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message.find("characters long"), std::string::npos);
  EXPECT_EQ(ecmascript_form("^gradient"), "^gradient");  // anything else is left as it is
}

}  // namespace
}  // namespace vigil
