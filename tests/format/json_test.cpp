#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "format/collections_json.h"
#include "format/index_json.h"
#include "format/json_limits.h"
#include "format/python_json.h"
#include "test_support.h"

namespace vigil::format {
namespace {

using ojson = nlohmann::ordered_json;

// ---- python_json_dumps ----------------------------------------------------------------------------

TEST(PythonJson, Scalars) {
  EXPECT_EQ(python_json_dumps(nullptr), "null");
  EXPECT_EQ(python_json_dumps(true), "true");
  EXPECT_EQ(python_json_dumps(false), "false");
  EXPECT_EQ(python_json_dumps(0), "0");
  EXPECT_EQ(python_json_dumps(-17), "-17");
  EXPECT_EQ(python_json_dumps(std::numeric_limits<int64_t>::min()), "-9223372036854775808");
  EXPECT_EQ(python_json_dumps(std::numeric_limits<uint64_t>::max()), "18446744073709551615");
}

TEST(PythonJson, FloatsLikePythonRepr) {
  const std::vector<std::pair<double, std::string>> cases = {
      {0.0, "0.0"},
      {-0.0, "-0.0"},
      {1.0, "1.0"},
      {-2.5, "-2.5"},
      {100.0, "100.0"},
      {0.1, "0.1"},
      {0.1 + 0.2, "0.30000000000000004"},
      {1.0 / 3.0, "0.3333333333333333"},
      {0.0001, "0.0001"},
      {0.00012345, "0.00012345"},
      {1e-05, "1e-05"},
      {1.5e-05, "1.5e-05"},
      {1e-10, "1e-10"},
      {5e-324, "5e-324"},
      {123456.789, "123456.789"},
      {1e15, "1000000000000000.0"},
      {9999999999999998.0, "9999999999999998.0"},
      {1e16, "1e+16"},
      {1.2345e16, "1.2345e+16"},
      {123456789012345678.0, "1.2345678901234568e+17"},
      {1e22, "1e+22"},
      {1.5e300, "1.5e+300"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {1600000000.0, "1600000000.0"},
      {1591160699.4570894, "1591160699.4570894"},
      {std::numeric_limits<double>::quiet_NaN(), "NaN"},
      {std::numeric_limits<double>::infinity(), "Infinity"},
      {-std::numeric_limits<double>::infinity(), "-Infinity"},
  };
  for (const auto& [v, text] : cases) EXPECT_EQ(python_json_dumps(v), text) << text;
}

TEST(PythonJson, StringsWithEnsureAscii) {
  EXPECT_EQ(python_json_dumps("plain"), "\"plain\"");
  EXPECT_EQ(python_json_dumps(""), "\"\"");
  EXPECT_EQ(python_json_dumps("q\"b\\s/"), "\"q\\\"b\\\\s/\"");
  EXPECT_EQ(python_json_dumps("\n\r\t\b\f"), "\"\\n\\r\\t\\b\\f\"");
  EXPECT_EQ(python_json_dumps(std::string("\x00\x01\x1f\x7f", 4)), "\"\\u0000\\u0001\\u001f\\u007f\"");
  EXPECT_EQ(python_json_dumps("\xc3\xa9"), "\"\\u00e9\"");                 // é
  EXPECT_EQ(python_json_dumps("\xe2\x82\xac"), "\"\\u20ac\"");             // €
  EXPECT_EQ(python_json_dumps("\xef\xbf\xbf"), "\"\\uffff\"");             // U+FFFF
  EXPECT_EQ(python_json_dumps("\xf0\x9f\x98\x80"), "\"\\ud83d\\ude00\"");  // U+1F600
  EXPECT_EQ(python_json_dumps("\xf4\x8f\xbf\xbf"), "\"\\udbff\\udfff\"");  // U+10FFFF
  EXPECT_EQ(python_json_dumps("a\xc3\xa9z"), "\"a\\u00e9z\"");
}

TEST(PythonJson, MalformedUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(python_json_dumps("\xff"), "\"\\ufffd\"");
  EXPECT_EQ(python_json_dumps("\xc3"), "\"\\ufffd\"");                 // truncated sequence at the end
  EXPECT_EQ(python_json_dumps("\xc3z"), "\"\\ufffdz\"");               // bad continuation byte
  EXPECT_EQ(python_json_dumps("\xc0\xaf"), "\"\\ufffd\\ufffd\"");     // overlong
  EXPECT_EQ(python_json_dumps("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");  // UTF-8 encoded surrogate
}

TEST(PythonJson, ContainersUseDefaultSeparators) {
  ojson v = ojson::object();
  v["b"] = ojson::array({1, 2.0, nullptr, true, "s"});
  v["a"] = ojson::object();
  v["\xc3\xa9"] = ojson::array();
  v["n"] = ojson::object({{"x", ojson::array({ojson::array()})}});
  EXPECT_EQ(python_json_dumps(v), "{\"b\": [1, 2.0, null, true, \"s\"], \"a\": {}, \"\\u00e9\": [], \"n\": {\"x\": [[]]}}");
}

TEST(PythonJson, ParsedTextRoundTripsWhenItIsPythonFormatted) {
  for (const std::string text : {
           "{\"a\": 1, \"b\": [1.5, -2, 1e-05, 1e+16], \"c\": {\"d\": null}}",
           "[]",
           "{}",
           "[\"\\u00e9\\ud83d\\ude00\\n\"]",
       }) {
    EXPECT_EQ(python_json_dumps(ojson::parse(text)), text);
  }
}

// ---- index JSON -----------------------------------------------------------------------------------

TEST(IndexJson, SpecExampleExactBytes) {
  StepIndex index;
  index.mode = Mode::Train;
  index.mode_step = 0;
  index.event_file_name = "events/000000000000/000000000000_worker_0.tfevents";
  index.tensor_payload.push_back({"x", 0, 86});
  const std::string expected =
      "{\"meta\": {\"mode\": \"TRAIN\", \"mode_step\": 0, \"event_file_name\": "
      "\"events/000000000000/000000000000_worker_0.tfevents\"}, \"tensor_payload\": [{\"tensorname\": \"x\", "
      "\"start_idx\": 0, \"length\": 86}], \"shape_payload\": []}";
  const std::string got = serialize_index_json(index);
  EXPECT_EQ(got, expected);
  EXPECT_EQ(got.size(), 208u);

  auto parsed = parse_index_json(expected, "index/000000000/000000000000_worker_0.json");
  ASSERT_VIGIL_OK(parsed);
  EXPECT_EQ(parsed->mode, Mode::Train);
  EXPECT_EQ(parsed->mode_step, 0);
  EXPECT_EQ(parsed->event_file_name, index.event_file_name);
  ASSERT_EQ(parsed->tensor_payload.size(), 1u);
  EXPECT_EQ(parsed->tensor_payload[0].tensorname, "x");
  EXPECT_EQ(parsed->tensor_payload[0].start_idx, 0u);
  EXPECT_EQ(parsed->tensor_payload[0].length, 86u);
  EXPECT_TRUE(parsed->shape_payload.empty());
}

TEST(IndexJson, ShapesOnlyIndexHasTwoKeyMeta) {
  StepIndex index;
  index.mode = Mode::Eval;
  index.mode_step = 7;
  index.shape_payload.push_back({"fc1_output_0", "fc1_output_0", {32, 16}});
  index.shape_payload.push_back({"loss", "loss:0", {}});
  const std::string text = serialize_index_json(index);
  EXPECT_EQ(text,
            "{\"meta\": {\"mode\": \"EVAL\", \"mode_step\": 7}, \"tensor_payload\": [], \"shape_payload\": "
            "[{\"tensorname\": \"fc1_output_0\", \"originalname\": \"fc1_output_0\", \"shape\": [32, 16]}, "
            "{\"tensorname\": \"loss\", \"originalname\": \"loss:0\", \"shape\": []}]}");
  auto parsed = parse_index_json(text, "f.json");
  ASSERT_VIGIL_OK(parsed);
  EXPECT_FALSE(parsed->event_file_name);
  ASSERT_EQ(parsed->shape_payload.size(), 2u);
  EXPECT_EQ(parsed->shape_payload[0].shape, (std::vector<int64_t>{32, 16}));
  EXPECT_EQ(parsed->shape_payload[1].originalname, "loss:0");
  EXPECT_TRUE(parsed->shape_payload[1].shape.empty());
  EXPECT_EQ(serialize_index_json(*parsed), text);
}

TEST(IndexJson, NonAsciiTensorNamesAreEscaped) {
  StepIndex index;
  index.event_file_name = "events/000000000001/000000000001_worker_0.tfevents";
  index.mode_step = 1;
  index.tensor_payload.push_back({"\xc3\xa9t\xc3\xa9", 5, 100});
  const std::string text = serialize_index_json(index);
  EXPECT_NE(text.find("\"\\u00e9t\\u00e9\""), std::string::npos);
  auto parsed = parse_index_json(text, "f.json");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->tensor_payload[0].tensorname, "\xc3\xa9t\xc3\xa9");
  EXPECT_EQ(parsed->mode, Mode::Global);
}

TEST(IndexJson, EveryFixtureIndexFileRoundTripsByteForByte) {
  size_t count = 0;
  for (const auto& root : {test::real_fixtures(), test::pathology_fixtures()}) {
    for (const auto& path : test::files_under(root, [](const std::string& rel) {
           return test::has_component(rel, "index") && rel.ends_with(".json");
         })) {
      ++count;
      const std::string original = test::read_file(path);
      auto parsed = parse_index_json(original, path.string());
      ASSERT_TRUE(parsed) << path << ": " << parsed.error().message;
      EXPECT_EQ(serialize_index_json(*parsed), original) << path;
    }
  }
  EXPECT_GT(count, 70u);
  std::cout << "round-tripped " << count << " index files\n";
}

bool same_index(const StepIndex& a, const StepIndex& b) {
  if (a.mode != b.mode || a.mode_step != b.mode_step || a.event_file_name != b.event_file_name ||
      a.tensor_payload.size() != b.tensor_payload.size() || a.shape_payload.size() != b.shape_payload.size())
    return false;
  for (size_t i = 0; i < a.tensor_payload.size(); ++i)
    if (a.tensor_payload[i].tensorname != b.tensor_payload[i].tensorname ||
        a.tensor_payload[i].start_idx != b.tensor_payload[i].start_idx ||
        a.tensor_payload[i].length != b.tensor_payload[i].length)
      return false;
  return true;
}

TEST(IndexJson, OnePassReaderOfSmdebugsLayoutAgreesWithTheFullParser) {
  size_t count = 0, one_pass = 0;
  for (const auto& root : {test::real_fixtures(), test::pathology_fixtures()})
    for (const auto& path : test::files_under(root, [](const std::string& rel) {
           return test::has_component(rel, "index") && rel.ends_with(".json");
         })) {
      ++count;
      const std::string text = test::read_file(path);
      auto generic = parse_index_json_generic(text, path.string());
      ASSERT_TRUE(generic) << path;
      if (auto canonical = parse_canonical_index_json(text)) {
        ++one_pass;
        EXPECT_TRUE(same_index(*canonical, *generic)) << path;
      }
    }
  // Every index smdebug wrote with tensors takes the one-pass reader (shape-only ones do not).
  EXPECT_GT(one_pass, count / 2);
  std::cout << one_pass << " of " << count << " fixture index files read in one pass\n";

  // Anything off the layout goes to the full parser, which accepts or refuses it with its message.
  const std::string head = R"({"meta": {"mode": "TRAIN", "mode_step": 4, "event_file_name": "events/e.tfevents"}, )";
  const std::string good = head + R"("tensor_payload": [{"tensorname": "a/b:0", "start_idx": 0, "length": 90}, )"
                                  R"({"tensorname": "c", "start_idx": 90, "length": 16}], "shape_payload": []})";
  auto read = parse_canonical_index_json(good);
  ASSERT_TRUE(read);
  ASSERT_EQ(read->tensor_payload.size(), 2u);
  EXPECT_EQ(read->tensor_payload[1].start_idx, 90u);
  EXPECT_EQ(read->mode_step, 4);
  EXPECT_TRUE(parse_canonical_index_json(good + "\n"));
  EXPECT_TRUE(parse_canonical_index_json(head + R"("tensor_payload": [], "shape_payload": []})"));
  const std::vector<std::string> off_layout = {
      head + R"("tensor_payload": [{"tensorname": "a\"b", "start_idx": 0, "length": 90}], "shape_payload": []})",
      head + R"("tensor_payload": [{"tensorname": "\u00e9", "start_idx": 0, "length": 90}], "shape_payload": []})",
      head + R"("tensor_payload": [{"tensorname": "é", "start_idx": 0, "length": 90}], "shape_payload": []})",
      head + R"("tensor_payload": [{"start_idx": 0, "tensorname": "a", "length": 90}], "shape_payload": []})",
      head + R"("tensor_payload": [{"tensorname": "a", "start_idx": 01, "length": 90}], "shape_payload": []})",
      head + R"("tensor_payload": [{"tensorname": "a", "start_idx": -1, "length": 90}], "shape_payload": []})",
      head + R"("tensor_payload": [{"tensorname": "a", "start_idx": 99999999999999999999, "length": 90}], "shape_payload": []})",
      head + R"("tensor_payload": [{"tensorname": "a", "start_idx": 0, "length": 90}], "shape_payload": [{"tensorname": "a", "originalname": "a", "shape": []}]})",
      head + R"("tensor_payload": [{"tensorname": "a", "start_idx": 0, "length": 90}], "shape_payload": []} x)",
      head + R"("tensor_payload": [{"tensorname": "a", "start_idx": 0, "length": 90}],"shape_payload": []})",
      R"({"meta": {"mode": "TRAIN", "mode_step": 4, "event_file_name": "../e.tfevents"}, "tensor_payload": [], "shape_payload": []})",
      R"({"meta": {"mode": "TRAINING", "mode_step": 4, "event_file_name": "e.tfevents"}, "tensor_payload": [], "shape_payload": []})",
  };
  for (const auto& text : off_layout) {
    EXPECT_FALSE(parse_canonical_index_json(text)) << text;
    auto full = parse_index_json(text, "f.json");
    auto generic = parse_index_json_generic(text, "f.json");
    ASSERT_EQ(full.has_value(), generic.has_value()) << text;
    if (full) EXPECT_TRUE(same_index(*full, *generic)) << text;
    else EXPECT_EQ(full.error().message, generic.error().message) << text;
  }
}

struct BadIndex {
  std::string name;
  std::string text;
  std::string message;  // exact when it is smdebug's, else a part of it
  bool exact = false;
};

TEST(IndexJson, IndexReaderExceptionCases) {
  const std::string efn = "\"event_file_name\": \"events/000000000001/000000000001_worker_0.tfevents\"";
  auto with_meta = [&](const std::string& meta, const std::string& rest = ", \"tensor_payload\": [], \"shape_payload\": []") {
    return "{\"meta\": {" + meta + "}" + rest + "}";
  };
  auto with_tensor = [&](const std::string& entry) {
    return with_meta("\"mode\": \"TRAIN\", \"mode_step\": 1, " + efn, ", \"tensor_payload\": [" + entry + "]");
  };
  auto with_shape = [&](const std::string& entry) {
    return with_meta("\"mode\": \"TRAIN\", \"mode_step\": 1", ", \"shape_payload\": [" + entry + "]");
  };
  const std::vector<BadIndex> cases = {
      {"empty file", "", "Empty/Corrupt Index File", true},
      {"garbage", "{\"meta\": ", "Empty/Corrupt Index File", true},
      {"csv", "a,b,c\n1,2,3\n", "Empty/Corrupt Index File", true},
      {"trailing garbage", "{} x", "Empty/Corrupt Index File", true},
      {"missing meta", "{\"tensor_payload\": []}", "meta section is not present", true},
      {"not an object", "[1, 2]", "meta section is not present", true},
      {"empty meta", "{\"meta\": {}, \"tensor_payload\": []}", "meta section is empty", true},
      {"empty meta list", "{\"meta\": [], \"tensor_payload\": []}", "meta section is empty", true},
      {"no payloads", "{\"meta\": {\"mode\": \"TRAIN\", \"mode_step\": 0}}",
       "neither tensor_payload nor shape_payload sections are present", true},
      {"meta not object", "{\"meta\": 5, \"tensor_payload\": []}", "meta section must be a JSON object"},
      {"mode missing", with_meta("\"mode_step\": 0"), "meta.mode is missing"},
      {"mode not string", with_meta("\"mode\": 1, \"mode_step\": 0"), "meta.mode must be a string"},
      {"unknown mode", with_meta("\"mode\": \"TRAINING\", \"mode_step\": 0"), "unknown mode name 'TRAINING'"},
      {"mode_step missing", with_meta("\"mode\": \"TRAIN\""), "meta.mode_step is missing"},
      {"mode_step float", with_meta("\"mode\": \"TRAIN\", \"mode_step\": 1.0"), "meta.mode_step must be an integer"},
      {"mode_step string", with_meta("\"mode\": \"TRAIN\", \"mode_step\": \"1\""), "meta.mode_step must be an integer"},
      {"mode_step bool", with_meta("\"mode\": \"TRAIN\", \"mode_step\": true"), "meta.mode_step must be an integer"},
      {"mode_step huge", with_meta("\"mode\": \"TRAIN\", \"mode_step\": 18446744073709551615"),
       "meta.mode_step must be an integer"},
      {"negative mode_step", with_meta("\"mode\": \"TRAIN\", \"mode_step\": -1"), "meta.mode_step must not be negative"},
      {"event_file_name not string", with_meta("\"mode\": \"TRAIN\", \"mode_step\": 0, \"event_file_name\": 3"),
       "meta.event_file_name must be a string"},
      {"event_file_name absolute",
       with_meta("\"mode\": \"TRAIN\", \"mode_step\": 0, \"event_file_name\": \"/etc/passwd\""),
       "is an absolute path"},
      {"event_file_name dotdot",
       with_meta("\"mode\": \"TRAIN\", \"mode_step\": 0, \"event_file_name\": \"events/../../secret.tfevents\""),
       "contains a '..' component"},
      {"event_file_name leading dotdot",
       with_meta("\"mode\": \"TRAIN\", \"mode_step\": 0, \"event_file_name\": \"../x.tfevents\""),
       "contains a '..' component"},
      {"event_file_name trailing dotdot",
       with_meta("\"mode\": \"TRAIN\", \"mode_step\": 0, \"event_file_name\": \"events/..\""),
       "contains a '..' component"},
      {"event_file_name NUL",
       with_meta("\"mode\": \"TRAIN\", \"mode_step\": 0, \"event_file_name\": \"events/a\\u0000b\""),
       "contains a NUL byte"},
      {"tensors without event file",
       with_meta("\"mode\": \"TRAIN\", \"mode_step\": 0",
                 ", \"tensor_payload\": [{\"tensorname\": \"x\", \"start_idx\": 0, \"length\": 86}]"),
       "meta.event_file_name is missing although tensor_payload is not empty"},
      {"tensor_payload not a list", with_meta("\"mode\": \"TRAIN\", \"mode_step\": 0", ", \"tensor_payload\": {}"),
       "tensor_payload must be a list"},
      {"shape_payload not a list", with_meta("\"mode\": \"TRAIN\", \"mode_step\": 0", ", \"shape_payload\": null"),
       "shape_payload must be a list"},
      {"tensor entry not object", with_tensor("[]"), "tensor_payload[0] must be a JSON object"},
      {"tensorname missing", with_tensor("{\"start_idx\": 0, \"length\": 86}"), "tensor_payload[0].tensorname"},
      {"tensorname number", with_tensor("{\"tensorname\": 1, \"start_idx\": 0, \"length\": 86}"),
       "tensor_payload[0].tensorname must be a string"},
      {"start_idx missing", with_tensor("{\"tensorname\": \"x\", \"length\": 86}"), "tensor_payload[0].start_idx"},
      {"negative start_idx", with_tensor("{\"tensorname\": \"x\", \"start_idx\": -1, \"length\": 86}"),
       "tensor_payload[0].start_idx must be a non-negative integer"},
      {"float start_idx", with_tensor("{\"tensorname\": \"x\", \"start_idx\": 0.5, \"length\": 86}"),
       "tensor_payload[0].start_idx"},
      {"length missing", with_tensor("{\"tensorname\": \"x\", \"start_idx\": 0}"), "tensor_payload[0].length"},
      {"negative length", with_tensor("{\"tensorname\": \"x\", \"start_idx\": 0, \"length\": -86}"),
       "tensor_payload[0].length must be a non-negative integer"},
      {"float length", with_tensor("{\"tensorname\": \"x\", \"start_idx\": 0, \"length\": 1.5}"),
       "tensor_payload[0].length must be a non-negative integer"},
      {"second entry bad",
       with_tensor("{\"tensorname\": \"x\", \"start_idx\": 0, \"length\": 86}, {\"tensorname\": \"y\", \"start_idx\": "
                   "\"86\", \"length\": 86}"),
       "tensor_payload[1].start_idx"},
      {"shape entry not object", with_shape("1"), "shape_payload[0] must be a JSON object"},
      {"shape originalname missing", with_shape("{\"tensorname\": \"x\", \"shape\": [1]}"),
       "shape_payload[0].originalname must be a string"},
      {"shape tensorname missing", with_shape("{\"originalname\": \"x\", \"shape\": [1]}"),
       "shape_payload[0].tensorname must be a string"},
      {"shape missing", with_shape("{\"tensorname\": \"x\", \"originalname\": \"x\"}"), "shape_payload[0].shape"},
      {"shape not ints", with_shape("{\"tensorname\": \"x\", \"originalname\": \"x\", \"shape\": [1, \"2\"]}"),
       "shape_payload[0].shape must be a list of non-negative integers"},
      {"negative dim", with_shape("{\"tensorname\": \"x\", \"originalname\": \"x\", \"shape\": [-1]}"),
       "shape_payload[0].shape must be a list of non-negative integers"},
  };
  for (const auto& c : cases) {
    auto r = parse_index_json(c.text, "index/000000000/000000000001_worker_0.json");
    ASSERT_FALSE(r) << c.name;
    EXPECT_EQ(r.error().code, ErrorCode::IndexReader) << c.name;
    EXPECT_EQ(r.error().class_name(), "IndexReaderException");
    EXPECT_EQ(r.error().file, "index/000000000/000000000001_worker_0.json") << c.name;
    if (c.exact) {
      EXPECT_EQ(r.error().message, c.message) << c.name;
    } else {
      EXPECT_NE(r.error().message.find(c.message), std::string::npos) << c.name << ": " << r.error().message;
    }
  }
}

TEST(IndexJson, AcceptedVariations) {
  // Either payload alone may be absent; whitespace around the mode name is stripped like smdebug.
  auto a = parse_index_json("{\"meta\": {\"mode\": \" EVAL \", \"mode_step\": 3}, \"shape_payload\": []}", "f");
  ASSERT_VIGIL_OK(a);
  EXPECT_EQ(a->mode, Mode::Eval);
  auto b = parse_index_json(
      "{\"tensor_payload\": [], \"meta\": {\"mode_step\": 3, \"mode\": \"PREDICT\", \"extra\": 1}, \"other\": 2}", "f");
  ASSERT_VIGIL_OK(b);
  EXPECT_EQ(b->mode, Mode::Predict);
  // A shapes-only index written before a tensor was added has no event file, and that is fine.
  auto c = parse_index_json("{\"meta\": {\"mode\": \"GLOBAL\", \"mode_step\": 0}, \"tensor_payload\": []}", "f");
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->event_file_name);
  // An empty event file name (smdebug's tests index such dummy steps) is kept; a value read fails later.
  auto e = parse_index_json(
      "{\"meta\": {\"mode\": \"TRAIN\", \"mode_step\": 2, \"event_file_name\": \"\"}, "
      "\"tensor_payload\": [{\"tensorname\": \"x\", \"start_idx\": 0, \"length\": 16}]}",
      "f");
  ASSERT_VIGIL_OK(e);
  ASSERT_TRUE(e->event_file_name);
  EXPECT_EQ(*e->event_file_name, "");
  EXPECT_EQ(e->tensor_payload.size(), 1u);
  // A length shorter than any record (smdebug's tests index "dummy" entries of length 1) is kept by
  // both readers; reading that value fails later (RecordReader).
  const std::string dummy =
      R"({"meta": {"mode": "TRAIN", "mode_step": 0, "event_file_name": "events/a.tfevents"}, )"
      R"("tensor_payload": [{"tensorname": "x", "start_idx": 0, "length": 1}], "shape_payload": []})";
  for (auto parsed : {parse_index_json_generic(dummy, "f"), parse_index_json(dummy, "f")}) {
    ASSERT_VIGIL_OK(parsed);
    ASSERT_EQ(parsed->tensor_payload.size(), 1u);
    EXPECT_EQ(parsed->tensor_payload[0].length, 1u);
  }
  EXPECT_TRUE(parse_canonical_index_json(dummy));
  // Large offsets survive.
  auto d = parse_index_json(
      "{\"meta\": {\"mode\": \"TRAIN\", \"mode_step\": 0, \"event_file_name\": \"events/a.tfevents\"}, "
      "\"tensor_payload\": [{\"tensorname\": \"x\", \"start_idx\": 9007199254740993, \"length\": 16}]}",
      "f");
  ASSERT_VIGIL_OK(d);
  EXPECT_EQ(d->tensor_payload[0].start_idx, 9007199254740993u);
}

// ---- collections JSON -----------------------------------------------------------------------------

std::vector<std::filesystem::path> collection_files() {
  std::vector<std::filesystem::path> out;
  for (const auto& root : {test::real_fixtures(), test::pathology_fixtures()}) {
    for (auto& p : test::files_under(root, [](const std::string& rel) {
           return rel.find("collections/000000000/") != std::string::npos && rel.ends_with(".json");
         }))
      out.push_back(p);
  }
  return out;
}

TEST(CollectionsJson, EveryFixtureCollectionFileRoundTripsByteForByte) {
  const auto files = collection_files();
  EXPECT_GE(files.size(), 24u);
  for (const auto& path : files) {
    const std::string original = test::read_file(path);
    auto parsed = parse_collections_json(original, path.string());
    ASSERT_TRUE(parsed) << path << ": " << parsed.error().message;
    EXPECT_EQ(serialize_collections_json(*parsed), original) << path;
  }
  std::cout << "round-tripped " << files.size() << " collection files\n";
}

TEST(CollectionsJson, FixtureReductionTokenOrder) {
  const auto path = test::real_fixtures() / "mlp_healthy" / "collections" / "000000000" / "worker_0_collections.json";
  auto parsed = parse_collections_json(test::read_file(path), path.string());
  ASSERT_VIGIL_OK(parsed);
  const CollectionConfig* relu = nullptr;
  for (const auto& c : parsed->collections)
    if (c.name == "relu_reductions") relu = &c;
  ASSERT_NE(relu, nullptr);
  ASSERT_TRUE(relu->reduction_config);
  const std::vector<ReductionSpec> expected = {{"min", false}, {"max", false}, {"mean", false},
                                               {"l2", false},  {"min", true},  {"max", true},
                                               {"mean", true}, {"l1", true},   {"l2", true}};
  EXPECT_EQ(relu->reduction_config->reductions, expected);
  EXPECT_EQ(format_reduction_list(relu->reduction_config->reductions),
            "min,max,mean,l2_norm,abs_min,abs_max,abs_mean,abs_l1_norm,abs_l2_norm");
  EXPECT_EQ(parsed->num_workers, 1);
  ASSERT_TRUE(relu->save_config);
}

TEST(CollectionsJson, ReductionListParsing) {
  auto r = parse_reduction_list(" mean , ,abs_l1_norm,l2_norm,, abs_variance ,prod,");
  ASSERT_VIGIL_OK(r);
  const std::vector<ReductionSpec> expected = {
      {"mean", false}, {"l1", true}, {"l2", false}, {"variance", true}, {"prod", false}};
  EXPECT_EQ(*r, expected);
  // Written grouped: plain, norms, abs, abs norms; insertion order inside each group.
  EXPECT_EQ(format_reduction_list(*r), "mean,prod,l2_norm,abs_variance,abs_l1_norm");
  EXPECT_TRUE(parse_reduction_list("")->empty());
  EXPECT_TRUE(parse_reduction_list(" , ")->empty());
  EXPECT_EQ(format_reduction_list({}), "");
  for (std::string ok : {"min", "max", "mean", "std", "variance", "sum", "prod", "l1_norm", "l2_norm", "abs_min",
                         "abs_prod", "abs_l1_norm", "abs_l2_norm"})
    EXPECT_TRUE(parse_reduction_list(ok)) << ok;
}

TEST(CollectionsJson, ReductionListErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"median", "reductions can only be one of min,max,mean,std,variance,sum,prod"},
      {"l1", "reductions can only be one of min,max,mean,std,variance,sum,prod"},
      {"abs_l1", "abs_reductions can only be one of min,max,mean,std,variance,sum,prod"},
      {"abs_median", "abs_reductions can only be one of min,max,mean,std,variance,sum,prod"},
      {"l3_norm", "norms can only be one of l1,l2"},
      {"mean_norm", "norms can only be one of l1,l2"},
      {"abs_l3_norm", "abs_norms can only be one of l1,l2"},
      {"abs_norm", "abs_norms can only be one of l1,l2"},
      {"_norm", "norms can only be one of l1,l2"},
      {"min,MAX", "reductions can only be one of min,max,mean,std,variance,sum,prod"},
  };
  for (const auto& [text, message] : cases) {
    auto r = parse_reduction_list(text);
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(r.error().code, ErrorCode::InvalidArgument) << text;
    EXPECT_EQ(r.error().message, message) << text;
  }
}

CollectionConfig spec_collection(std::string name, std::vector<std::string> regex, std::vector<std::string> names,
                                 bool histogram = true) {
  CollectionConfig c;
  c.name = std::move(name);
  c.include_regex = std::move(regex);
  c.tensor_names = std::move(names);
  c.reduction_config = ReductionConfig{};
  c.save_config.emplace();
  for (auto& m : *c.save_config) m = SaveConfigMode{};
  c.save_histogram = histogram;
  return c;
}

TEST(CollectionsJson, SpecExampleDefaultCollection) {
  CollectionsFile file;
  file.collections = {
      spec_collection("default", {}, {"x"}),
      spec_collection("weights", {"^(?!gradient).*weight"}, {}),
      spec_collection("biases", {"^(?!gradient).*bias"}, {}),
      spec_collection("gradients", {"^gradient"}, {}),
      spec_collection("losses", {"[Ll]oss_(?!input).*output"}, {}, false),
      spec_collection("all", {}, {}),
  };
  const std::string text = serialize_collections_json(file);
  const std::string default_line =
      "{\"name\": \"default\", \"include_regex\": [], \"tensor_names\": [\"x\"], \"reduction_config\": "
      "{\"save_raw_tensor\": true, \"reductions\": \"\", \"save_shape\": false}, \"save_config\": {\"TRAIN\": "
      "{\"save_interval\": 500, \"save_steps\": [], \"start_step\": 0, \"end_step\": null}, \"EVAL\": "
      "{\"save_interval\": 500, \"save_steps\": [], \"start_step\": 0, \"end_step\": null}, \"PREDICT\": "
      "{\"save_interval\": 500, \"save_steps\": [], \"start_step\": 0, \"end_step\": null}, \"GLOBAL\": "
      "{\"save_interval\": 500, \"save_steps\": [], \"start_step\": 0, \"end_step\": null}}, \"save_histogram\": true}";
  EXPECT_TRUE(text.starts_with("{\"collections\": {\"default\": " + default_line + ", \"weights\": "));
  EXPECT_TRUE(text.ends_with("}, \"_meta\": {\"num_workers\": 1}}"));
  EXPECT_EQ(text.size(), 3400u);  // spec §10.4, whatever the collection order
  std::swap(file.collections[0], file.collections[5]);
  EXPECT_EQ(serialize_collections_json(file).size(), 3400u);
}

TEST(CollectionsJson, TensorNamesAreWrittenSortedAndUnique) {
  CollectionsFile file;
  file.collections.push_back(spec_collection("c", {}, {"b", "a", "\xc3\xa9", "B", "a"}));
  file.collections[0].reduction_config.reset();
  file.collections[0].save_config.reset();
  file.num_workers = 4;
  EXPECT_EQ(serialize_collections_json(file),
            "{\"collections\": {\"c\": {\"name\": \"c\", \"include_regex\": [], \"tensor_names\": [\"B\", \"a\", \"b\", "
            "\"\\u00e9\"], \"reduction_config\": null, \"save_config\": null, \"save_histogram\": true}}, \"_meta\": "
            "{\"num_workers\": 4}}");
}

TEST(CollectionsJson, ReaderFallbacksAndQuirks) {
  const std::string text =
      "{\"collections\": {"
      "\"bare\": {\"name\": \"bare\"},"
      "\"keyed\": {\"include_regex\": null, \"tensor_names\": [\"t\"]},"
      "\"rc\": {\"name\": \"rc\", \"reduction_config\": {\"reductions\": \"max\"}, \"save_config\": {\"EVAL\": "
      "{\"save_interval\": \"10\", \"end_step\": 0, \"start_step\": null}, \"TRAIN\": null}, \"save_histogram\": false},"
      "\"nulls\": {\"name\": \"nulls\", \"reduction_config\": null, \"save_config\": null, \"include_regex\": false}"
      "}, \"_meta\": {\"num_workers\": \"3\"}}";
  auto parsed = parse_collections_json(text, "c.json");
  ASSERT_VIGIL_OK(parsed);
  ASSERT_EQ(parsed->collections.size(), 4u);
  EXPECT_EQ(parsed->num_workers, 3);

  const auto& bare = parsed->collections[0];
  EXPECT_EQ(bare.name, "bare");
  EXPECT_TRUE(bare.include_regex.empty());
  EXPECT_TRUE(bare.tensor_names.empty());
  EXPECT_FALSE(bare.reduction_config);
  EXPECT_FALSE(bare.save_config);
  EXPECT_TRUE(bare.save_histogram);

  const auto& keyed = parsed->collections[1];
  EXPECT_EQ(keyed.name, "keyed");  // no name: the key stands in
  EXPECT_EQ(keyed.tensor_names, std::vector<std::string>{"t"});

  const auto& rc = parsed->collections[2];
  ASSERT_TRUE(rc.reduction_config);
  EXPECT_FALSE(rc.reduction_config->save_raw_tensor);  // ReductionConfig.from_dict default
  EXPECT_FALSE(rc.reduction_config->save_shape);
  EXPECT_EQ(rc.reduction_config->reductions, (std::vector<ReductionSpec>{{"max", false}}));
  ASSERT_TRUE(rc.save_config);
  EXPECT_FALSE((*rc.save_config)[0]);  // TRAIN null
  ASSERT_TRUE((*rc.save_config)[1]);   // EVAL
  EXPECT_EQ((*rc.save_config)[1]->save_interval, 10);
  EXPECT_EQ((*rc.save_config)[1]->start_step, 0);
  EXPECT_FALSE((*rc.save_config)[1]->end_step);  // `end_step or None`: 0 means no end
  EXPECT_FALSE((*rc.save_config)[2]);            // PREDICT missing
  EXPECT_FALSE((*rc.save_config)[3]);            // GLOBAL missing
  EXPECT_FALSE(rc.save_histogram);

  const auto& nulls = parsed->collections[3];
  EXPECT_FALSE(nulls.reduction_config);
  EXPECT_FALSE(nulls.save_config);
  EXPECT_TRUE(nulls.include_regex.empty());
}

TEST(CollectionsJson, SaveConfigModeDefaults) {
  auto parsed = parse_collections_json(
      "{\"collections\": {\"c\": {\"save_config\": {\"GLOBAL\": {}, \"TRAIN\": {\"save_interval\": 0, \"save_steps\": "
      "[3, 1], \"start_step\": \"5\", \"end_step\": 9}}}}, \"_meta\": {}}",
      "c.json");
  ASSERT_VIGIL_OK(parsed);
  EXPECT_EQ(parsed->num_workers, 1);
  const auto& sc = *parsed->collections[0].save_config;
  ASSERT_TRUE(sc[3]);
  EXPECT_EQ(sc[3]->save_interval, 500);
  EXPECT_TRUE(sc[3]->save_steps.empty());
  EXPECT_EQ(sc[3]->start_step, 0);
  EXPECT_FALSE(sc[3]->end_step);
  ASSERT_TRUE(sc[0]);
  EXPECT_EQ(sc[0]->save_interval, 500);  // 0 is falsy: the default
  EXPECT_EQ(sc[0]->save_steps, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(sc[0]->start_step, 5);
  EXPECT_EQ(sc[0]->end_step, 9);
}

TEST(CollectionsJson, ParseErrors) {
  auto wrap = [](const std::string& collection) {
    return "{\"collections\": {\"c\": " + collection + "}, \"_meta\": {\"num_workers\": 1}}";
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "collection file is not valid JSON"},
      {"[]", "collection file must hold a JSON object"},
      {"{\"collections\": {}, \"_meta\": {}, \"extra\": 1}",
       "allowed params for collection manager can only be one of collections,_meta"},
      {"{\"_meta\": {}}", "collections section is not present"},
      {"{\"collections\": [], \"_meta\": {}}", "collections must be a JSON object"},
      {"{\"collections\": {}}", "_meta section is not present"},
      {"{\"collections\": {}, \"_meta\": 1}", "_meta must be a JSON object"},
      {"{\"collections\": {}, \"_meta\": {\"num_workers\": 0}}", "_meta.num_workers must be a positive integer"},
      {"{\"collections\": {}, \"_meta\": {\"num_workers\": \"x\"}}", "_meta.num_workers must be a positive integer"},
      {wrap("[]"), "collection 'c' must be a JSON object"},
      {wrap("{\"name\": 1}"), "name must be a string"},
      {wrap("{\"include_regex\": \"x\"}"), "include_regex must be a list of strings"},
      {wrap("{\"include_regex\": [1]}"), "include_regex must be a list of strings"},
      {wrap("{\"tensor_names\": null}"), "tensor_names must be a list of strings"},
      {wrap("{\"reduction_config\": []}"), "reduction_config must be a JSON object or null"},
      {wrap("{\"reduction_config\": {\"save_raw_tensor\": 1}}"), "reduction_config.save_raw_tensor must be a boolean"},
      {wrap("{\"reduction_config\": {\"save_shape\": \"no\"}}"), "reduction_config.save_shape must be a boolean"},
      {wrap("{\"reduction_config\": {\"reductions\": [\"min\"]}}"), "reduction_config.reductions must be a string"},
      {wrap("{\"reduction_config\": {\"reductions\": \"median\"}}"),
       "reductions can only be one of min,max,mean,std,variance,sum,prod"},
      {wrap("{\"save_config\": 5}"), "save_config must be a JSON object or null"},
      {wrap("{\"save_config\": {\"TRAINING\": null}}"), "save_config has an unknown mode 'TRAINING'"},
      {wrap("{\"save_config\": {\"TRAIN\": 3}}"), "save_config.TRAIN must be a JSON object or null"},
      {wrap("{\"save_config\": {\"TRAIN\": {\"save_interval\": \"often\"}}}"), "save_config.TRAIN.save_interval must be an integer"},
      {wrap("{\"save_config\": {\"EVAL\": {\"start_step\": 1.5}}}"), "save_config.EVAL.start_step must be an integer"},
      {wrap("{\"save_config\": {\"EVAL\": {\"end_step\": true}}}"), "save_config.EVAL.end_step must be an integer"},
      {wrap("{\"save_config\": {\"EVAL\": {\"save_steps\": [1, \"2\"]}}}"), "save_config.EVAL.save_steps must be a list"},
      {wrap("{\"save_histogram\": 1}"), "save_histogram must be a boolean"},
  };
  for (const auto& [text, message] : cases) {
    auto r = parse_collections_json(text, "collections/000000000/worker_0_collections.json");
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(r.error().code, ErrorCode::InvalidArgument) << text;
    EXPECT_EQ(r.error().file, "collections/000000000/worker_0_collections.json") << text;
    EXPECT_NE(r.error().message.find(message), std::string::npos) << text << " -> " << r.error().message;
  }
}

TEST(CollectionsJson, DuplicateNamesKeepTheFirstPlaceAndTheLastValue) {
  auto parsed = parse_collections_json(
      "{\"collections\": {\"a\": {\"name\": \"x\", \"tensor_names\": [\"1\"]}, \"b\": {\"name\": \"y\"}, "
      "\"c\": {\"name\": \"x\", \"tensor_names\": [\"2\"]}}, \"_meta\": {}}",
      "c.json");
  ASSERT_TRUE(parsed);
  ASSERT_EQ(parsed->collections.size(), 2u);
  EXPECT_EQ(parsed->collections[0].name, "x");
  EXPECT_EQ(parsed->collections[0].tensor_names, std::vector<std::string>{"2"});
  EXPECT_EQ(parsed->collections[1].name, "y");
}

TEST(SaveConfigMode, ShouldSaveStep) {
  SaveConfigMode m;
  m.save_interval = 100;
  m.end_step = 200;
  std::vector<int64_t> saved;
  for (int64_t s = 0; s < 1000; ++s)
    if (m.should_save_step(s)) saved.push_back(s);
  EXPECT_EQ(saved, (std::vector<int64_t>{0, 100}));

  m = SaveConfigMode{};
  m.save_interval = 100;
  m.start_step = 150;
  saved.clear();
  for (int64_t s = 0; s < 450; ++s)
    if (m.should_save_step(s)) saved.push_back(s);
  EXPECT_EQ(saved, (std::vector<int64_t>{200, 300, 400}));

  // save_steps is a union with the interval, and ignores start/end.
  m = SaveConfigMode{};
  m.save_interval = 10;
  m.start_step = 5;
  m.end_step = 25;
  m.save_steps = {3, 27};
  saved.clear();
  for (int64_t s = 0; s < 40; ++s)
    if (m.should_save_step(s)) saved.push_back(s);
  EXPECT_EQ(saved, (std::vector<int64_t>{3, 10, 20, 27}));

  m = SaveConfigMode{};
  EXPECT_TRUE(m.should_save_step(0));
  EXPECT_TRUE(m.should_save_step(500));
  EXPECT_FALSE(m.should_save_step(499));
  m.end_step = 0;
  EXPECT_FALSE(m.should_save_step(0));
  m = SaveConfigMode{};
  m.save_interval = 0;
  EXPECT_FALSE(m.should_save_step(0));
  m.save_interval = -1;
  EXPECT_TRUE(m.should_save_step(std::numeric_limits<int64_t>::max()));
}

// ---- nesting limit ------------------------------------------------------------------------------

std::string nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// Found by feeding the fuzz harnesses deeply nested files: nlohmann::json copies values recursively,
// so 200,000 levels of "[" in a collection file overflowed the stack. Files nesting deeper than
// kMaxJsonDepth are refused before parsing.
TEST(JsonNesting, DeepCollectionFilesAreRefused) {
  const std::string text = R"({"collections": {"c": {"include_regex": )" + nested(200000) + R"(}}, "_meta": {}})";
  auto parsed = parse_collections_json(text, "deep_collections.json");
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(parsed.error().code, ErrorCode::InvalidArgument);
  EXPECT_NE(parsed.error().message.find("nests deeper than 128 levels"), std::string::npos) << parsed.error().message;
  EXPECT_EQ(parsed.error().file, "deep_collections.json");
}

TEST(JsonNesting, DeepIndexFilesAreRefused) {
  const std::string text = R"({"meta": {"mode": "TRAIN", "mode_step": 0}, "shape_payload": [], "x": )" + nested(200000) + "}";
  auto parsed = parse_index_json(text, "deep.json");
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(parsed.error().code, ErrorCode::IndexReader);
  EXPECT_NE(parsed.error().message.find("nests deeper than 128 levels"), std::string::npos) << parsed.error().message;
}

TEST(JsonNesting, TheLimitCountsOnlyStructureOutsideStrings) {
  EXPECT_FALSE(json_nesting_exceeds(nested(128)));
  EXPECT_TRUE(json_nesting_exceeds(nested(129)));
  // Brackets in strings, also after an escaped quote, are text.
  EXPECT_FALSE(json_nesting_exceeds(R"({"a": ")" + std::string(1000, '[') + R"(\")" + std::string(1000, '[') + R"("})"));
  EXPECT_FALSE(json_nesting_exceeds(std::string(1000, '[') + "x", 1000));  // invalid JSON is the parser's to judge
  // Deep but within the limit still parses.
  const std::string text = R"({"meta": {"mode": "TRAIN", "mode_step": 0}, "shape_payload": [], "x": )" + nested(100) + "}";
  EXPECT_TRUE(parse_index_json(text, "ok.json").has_value());
}

}  // namespace
}  // namespace vigil::format
