// The dict-literal parser of the *ProfilingConfig strings: what the SDK writes, and what it must
// refuse rather than evaluate.
#include "profiler/python_literal.h"

#include "test_support.h"

namespace vigil::profiler {
namespace {

TEST(PythonDict, ParsesWhatTheSdkWrites) {
  auto dict = parse_python_dict(R"({"StartStep": 5, "NumSteps": 1, })");
  ASSERT_VIGIL_OK(dict);
  ASSERT_EQ(dict->size(), 2u);
  EXPECT_EQ((*dict)[0].first, "StartStep");
  EXPECT_EQ((*dict)[0].second, PythonScalar(int64_t(5)));
  EXPECT_EQ((*dict)[1].first, "NumSteps");
  EXPECT_EQ((*dict)[1].second, PythonScalar(int64_t(1)));
}

TEST(PythonDict, ParsesEveryScalarKind) {
  auto dict = parse_python_dict(
      "{ 'a': 'single', \"b\": \"double \\\"q\\\"\", 'c': -12, 'd': 2.5, 'e': 1e3, 'f': .5, 'g': True, 'h': False, 'i': None }");
  ASSERT_VIGIL_OK(dict);
  ASSERT_EQ(dict->size(), 9u);
  EXPECT_EQ((*dict)[0].second, PythonScalar(std::string("single")));
  EXPECT_EQ((*dict)[1].second, PythonScalar(std::string("double \"q\"")));
  EXPECT_EQ((*dict)[2].second, PythonScalar(int64_t(-12)));
  EXPECT_EQ((*dict)[3].second, PythonScalar(2.5));
  EXPECT_EQ((*dict)[4].second, PythonScalar(1000.0));
  EXPECT_EQ((*dict)[5].second, PythonScalar(0.5));
  EXPECT_EQ((*dict)[6].second, PythonScalar(true));
  EXPECT_EQ((*dict)[7].second, PythonScalar(false));
  EXPECT_EQ((*dict)[8].second, PythonScalar(PythonNone{}));
}

TEST(PythonDict, EmptyDictAndSpaces) {
  auto dict = parse_python_dict("  {\n}  ");
  ASSERT_VIGIL_OK(dict);
  EXPECT_TRUE(dict->empty());
}

TEST(PythonDict, Int64Limits) {
  auto dict = parse_python_dict("{'lo': -9223372036854775808, 'hi': 9223372036854775807}");
  ASSERT_VIGIL_OK(dict);
  EXPECT_EQ((*dict)[0].second, PythonScalar(std::numeric_limits<int64_t>::min()));
  EXPECT_EQ((*dict)[1].second, PythonScalar(std::numeric_limits<int64_t>::max()));
  EXPECT_FALSE(parse_python_dict("{'x': 9223372036854775808}"));
}

// Nothing that would need evaluation, and nothing malformed, gets through.
TEST(PythonDict, RefusesEverythingElse) {
  for (const char* text : {
           "",
           "{",
           "}",
           "{'a': 1",
           "{'a' 1}",
           "{'a': }",
           "{'a': 1,,}",
           "{,}",
           "{'a': 1} extra",
           "{'a': 1}{}",
           "{a: 1}",
           "{1: 2}",
           "{'a': true}",          // JSON's true, which breaks smdebug's eval too
           "{'a': null}",
           "{'a': Truely}",
           "{'a': __import__('os').system('true')}",
           "{'a': [1, 2]}",
           "{'a': {'b': 1}}",
           "{'a': (1)}",
           "{'a': 1 + 2}",
           "{'a': 0x10}",
           "{'a': 1_000}",
           "{'a': 05}",
           "{'a': 1.2.3}",
           "{'a': 1e}",
           "{'a': -}",
           "{'a': 'unterminated}",
           "{'a': 'bad \\q escape'}",
           "{'a': r'raw'}",
           "{'a': 'line\nbreak'}",
           "{'a': 1, 'a': 2}",
           "{'a': inf}",
           "{'a': 1e999}",
           "['a', 1]",
       }) {
    auto dict = parse_python_dict(text);
    EXPECT_FALSE(dict) << "accepted: " << text;
    if (!dict) {
      EXPECT_EQ(dict.error().code, ErrorCode::InvalidArgument) << text;
      EXPECT_FALSE(dict.error().message.empty());
    }
  }
}

TEST(PythonDict, ErrorsSayWhere) {
  auto dict = parse_python_dict("{'a': 1 'b': 2}");
  ASSERT_FALSE(dict);
  EXPECT_EQ(dict.error().message, "expected ',' or '}' at character 9, found '''");
}

TEST(PythonDict, RefusesHugeText) {
  std::string text = "{'a': '" + std::string(100000, 'x') + "'}";
  EXPECT_FALSE(parse_python_dict(text));
}

}  // namespace
}  // namespace vigil::profiler
