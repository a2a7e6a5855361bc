// Untrusted trials: index entries and files that lead outside the trial directory (".." components,
// absolute paths, symlinks) are refused with a clear error, oversized index lengths are refused
// before anything is allocated, and unsafe regexes never reach std::regex. Each test writes a small
// trial with the writer, then damages it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "format/index_json.h"
#include "format/trial_layout.h"
#include "test_support.h"
#include "trial/trial.h"

namespace vigil {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

fs::path only_file_under(const fs::path& dir, std::string_view extension) {
  fs::path found;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == extension) {
      EXPECT_TRUE(found.empty()) << "more than one " << extension << " file under " << dir;
      found = e.path();
    }
  EXPECT_FALSE(found.empty()) << "no " << extension << " file under " << dir;
  return found;
}

// A trial of one step holding tensor "w", next to a folder outside it (both in one temp dir).
class UntrustedTrial : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(outside());
    test::write_worker(trial(), "worker_0", 1, {{0}}, /*end_marker=*/true);
    index_file = only_file_under(trial() / "index", ".json");
    event_file = only_file_under(trial() / "events", ".tfevents");
  }
  fs::path trial() const { return dir.path() / "trial"; }
  fs::path outside() const { return dir.path() / "outside"; }

  // Rewrites the step's index with `edit` applied to the parsed index.
  template <typename Edit>
  void edit_index(Edit edit) {
    auto index = format::parse_index_json(read_text(index_file), index_file.string());
    ASSERT_VIGIL_OK(index);
    edit(*index);
    write_text(index_file, format::serialize_index_json(*index));
  }
  // Replaces the step's index by raw JSON naming `event_file_name` (which the parser would refuse
  // to produce through serialize_index_json's round trip).
  void set_event_file_name_raw(const std::string& event_file_name) {
    std::string text = read_text(index_file);
    const std::string relative = fs::relative(event_file, trial()).string();
    const auto at = text.find(relative);
    ASSERT_NE(at, std::string::npos);
    text.replace(at, relative.size(), event_file_name);
    write_text(index_file, text);
  }

  test::ScratchDir dir;
  fs::path index_file;
  fs::path event_file;
};

void expect_refused(const Error& e, const std::string& part) {
  EXPECT_EQ(e.code, ErrorCode::IndexReader) << e.message;
  EXPECT_NE(e.message.find(part), std::string::npos) << e.message;
}

TEST_F(UntrustedTrial, TheUndamagedTrialReads) {
  auto t = Trial::open(trial());
  ASSERT_VIGIL_OK(t);
  auto v = (*t)->value("w", 0);
  ASSERT_VIGIL_OK(v);
  EXPECT_EQ(v->size(), 2u);
}

TEST_F(UntrustedTrial, DotDotInEventFileNameIsRefused) {
  // The file it names exists, so only the path check stands between the reader and it.
  fs::copy_file(event_file, outside() / "stolen.tfevents");
  set_event_file_name_raw("events/../../outside/stolen.tfevents");
  auto t = Trial::open(trial());
  ASSERT_FALSE(t.has_value());
  expect_refused(t.error(), "contains a '..' component");
}

TEST_F(UntrustedTrial, AnEmptyEventFileNameOpensAndFailsOnlyWhenAValueIsRead) {
  set_event_file_name_raw("");
  auto t = Trial::open(trial());
  ASSERT_VIGIL_OK(t);  // smdebug's "dummy" steps: the bookkeeping works
  auto steps = (*t)->steps(Mode::Global);
  ASSERT_TRUE(steps.has_value());
  EXPECT_EQ(*steps, std::vector<int64_t>{0});
  EXPECT_TRUE((*t)->has_tensor("w"));
  auto v = (*t)->value("w", 0);
  ASSERT_FALSE(v.has_value());
  expect_refused(v.error(), "empty meta.event_file_name");
}

TEST_F(UntrustedTrial, ADummyLengthOpensAndFailsOnlyWhenThatValueIsRead) {
  // smdebug's tests/analysis/trials/test_has_passed_step_scenarios.py index entries of length 1.
  edit_index([](format::StepIndex& index) {
    ASSERT_EQ(index.tensor_payload.size(), 1u);
    index.tensor_payload[0].length = 1;
  });
  auto t = Trial::open(trial());
  ASSERT_VIGIL_OK(t);
  auto steps = (*t)->steps(Mode::Global);
  ASSERT_TRUE(steps.has_value());
  EXPECT_EQ(*steps, std::vector<int64_t>{0});
  EXPECT_TRUE((*t)->has_tensor("w"));
  auto v = (*t)->value("w", 0);
  ASSERT_FALSE(v.has_value());
  expect_refused(v.error(), "has length 1, shorter than any record (16 bytes)");
}

TEST_F(UntrustedTrial, AbsoluteEventFileNameIsRefused) {
  fs::copy_file(event_file, outside() / "stolen.tfevents");
  set_event_file_name_raw((outside() / "stolen.tfevents").string());
  auto t = Trial::open(trial());
  ASSERT_FALSE(t.has_value());
  expect_refused(t.error(), "is an absolute path");
}

TEST_F(UntrustedTrial, EventFileSymlinkedOutsideIsRefused) {
  fs::copy_file(event_file, outside() / "stolen.tfevents");
  fs::remove(event_file);
  fs::create_symlink(outside() / "stolen.tfevents", event_file);
  auto t = Trial::open(trial());
  ASSERT_VIGIL_OK(t);  // the index itself is fine
  auto v = (*t)->value("w", 0);
  ASSERT_FALSE(v.has_value());
  expect_refused(v.error(), "outside the trial directory");
  auto wall_time = (*t)->step_wall_time(0);
  ASSERT_FALSE(wall_time.has_value());
  expect_refused(wall_time.error(), "outside the trial directory");
}

TEST_F(UntrustedTrial, RelativeSymlinkClimbingOutIsRefused) {
  fs::copy_file(event_file, outside() / "stolen.tfevents");
  fs::remove(event_file);
  // events/<step>/file -> ../../../outside/stolen.tfevents
  fs::create_symlink(fs::path("../../../outside/stolen.tfevents"), event_file);
  auto t = Trial::open(trial());
  ASSERT_VIGIL_OK(t);
  auto v = (*t)->value("w", 0);
  ASSERT_FALSE(v.has_value());
  expect_refused(v.error(), "outside the trial directory");
}

TEST_F(UntrustedTrial, EventsFolderSymlinkedOutsideIsRefused) {
  fs::rename(trial() / "events", outside() / "events");
  fs::create_directory_symlink(outside() / "events", trial() / "events");
  auto t = Trial::open(trial());
  ASSERT_VIGIL_OK(t);
  auto v = (*t)->value("w", 0);
  ASSERT_FALSE(v.has_value());
  expect_refused(v.error(), "outside the trial directory");
}

TEST_F(UntrustedTrial, IndexFolderSymlinkedOutsideIsRefused) {
  fs::rename(trial() / "index", outside() / "index");
  fs::create_directory_symlink(outside() / "index", trial() / "index");
  auto t = Trial::open(trial());
  ASSERT_FALSE(t.has_value());
  expect_refused(t.error(), "outside the trial directory");
}

TEST_F(UntrustedTrial, CollectionsFileSymlinkedOutsideIsRefused) {
  const fs::path collections = only_file_under(trial() / "collections", ".json");
  fs::rename(collections, outside() / "collections.json");
  fs::create_symlink(outside() / "collections.json", collections);
  auto t = Trial::open(trial());
  ASSERT_FALSE(t.has_value());
  expect_refused(t.error(), "outside the trial directory");
}

TEST_F(UntrustedTrial, SymlinksThatStayInsideTheTrialAreFollowed) {
  fs::create_directories(trial() / "store");
  fs::rename(event_file, trial() / "store" / "kept.tfevents");
  fs::create_symlink(trial() / "store" / "kept.tfevents", event_file);
  auto t = Trial::open(trial());
  ASSERT_VIGIL_OK(t);
  auto v = (*t)->value("w", 0);
  ASSERT_VIGIL_OK(v);
}

TEST_F(UntrustedTrial, RelativeSymlinksThatStayInsideTheTrialAreFollowed) {
  fs::create_directories(trial() / "store");
  fs::rename(event_file, trial() / "store" / "kept.tfevents");
  // events/<step>/file -> ../../store/kept.tfevents: resolved by the kernel beneath the trial root
  fs::create_symlink(fs::path("../../store/kept.tfevents"), event_file);
  auto t = Trial::open(trial());
  ASSERT_TRUE(t.has_value()) << t.error().message;
  auto v = (*t)->value("w", 0);
  ASSERT_TRUE(v.has_value()) << v.error().message;
}

TEST_F(UntrustedTrial, TheTrialRootReadsWholeFilesAndRefusesPathsLeavingIt) {
  auto root = format::TrialRoot::open(trial());
  ASSERT_TRUE(root.has_value()) << root.error().message;
  std::string big(200'000, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = char('a' + i % 26);
  write_text(trial() / "big.txt", big);
  write_text(trial() / "empty.txt", "");
  auto read_big = root->read_file("big.txt");
  ASSERT_TRUE(read_big.has_value()) << read_big.error().message;
  EXPECT_EQ(*read_big, big);
  auto read_empty = root->read_file("empty.txt");
  ASSERT_TRUE(read_empty.has_value()) << read_empty.error().message;
  EXPECT_EQ(*read_empty, "");
  auto opened = root->open_file("big.txt");
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  EXPECT_EQ(opened->size, big.size());
  EXPECT_TRUE(opened->fd);  // owned: closed with `opened`

  write_text(outside() / "secret.txt", "secret");
  auto climbing = root->read_file("../outside/secret.txt");
  ASSERT_FALSE(climbing.has_value());
  expect_refused(climbing.error(), "contains a '..' component");
  auto missing = root->read_file("no_such_file.txt");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ErrorCode::Io);
}

TEST_F(UntrustedTrial, ATrialOpenedThroughASymlinkReads) {
  fs::create_directory_symlink(trial(), dir.path() / "link_to_trial");
  auto t = Trial::open(dir.path() / "link_to_trial");
  ASSERT_VIGIL_OK(t);
  auto v = (*t)->value("w", 0);
  ASSERT_VIGIL_OK(v);
}

TEST_F(UntrustedTrial, AFifoInPlaceOfTheEventFileIsRefusedWithoutBlocking) {
  fs::remove(event_file);
  ASSERT_EQ(::mkfifo(event_file.c_str(), 0600), 0);
  auto t = Trial::open(trial());
  ASSERT_VIGIL_OK(t);
  auto v = (*t)->value("w", 0);  // would block forever on open() without O_NONBLOCK
  ASSERT_FALSE(v.has_value());
  expect_refused(v.error(), "not a regular file");
}

// Collection regexes come from the trial's files, query regexes from rules: either way std::regex
// must not see a pattern it cannot compile safely (see common/regex_limits.h).
TEST_F(UntrustedTrial, RegexesBeyondTheLimitsAreRefused) {
  auto t = Trial::open(trial());
  ASSERT_VIGIL_OK(t);
  using namespace std::string_literals;
  for (const std::string& pattern : {"w{99999999999999999999}"s, "(w)\\99999999999999999999"s, std::string(5000, 'w')}) {
    auto names = (*t)->tensor_names(TensorNameQuery{.regex = {pattern}});
    ASSERT_FALSE(names.has_value()) << pattern;
    EXPECT_EQ(names.error().code, ErrorCode::InvalidArgument);
    EXPECT_NE(names.error().message.find("invalid regex"), std::string::npos) << names.error().message;
  }
  auto names = (*t)->tensor_names(TensorNameQuery{.regex = {"^w{1}$"}});
  ASSERT_VIGIL_OK(names);
  EXPECT_EQ(*names, std::vector<std::string>{"w"});
}

// A 30,000-character tensor name made `vigil inspect` and `evaluate` die of a stack overflow in
// std::regex, which recurses once per character of the name: such an index is refused instead.
TEST_F(UntrustedTrial, AnOverlongTensorNameIsRefusedBeforeARegexMeetsIt) {
  edit_index([](format::StepIndex& index) { index.tensor_payload.at(0).tensorname = std::string(30'000, 'w'); });
  auto t = Trial::open(trial());
  std::optional<Error> error;
  if (!t) {
    error = t.error();
  } else if (auto names = (*t)->tensor_names(TensorNameQuery{.regex = {"(w|v)*x"}}); !names) {
    error = names.error();
  }
  ASSERT_TRUE(error.has_value()) << "the overlong name reached the matcher";
  expect_refused(*error, "a tensor name longer than 1024 characters");
}

TEST_F(UntrustedTrial, IndexLengthOf2To60IsRefusedBeforeAllocating) {
  // The record buffer is sized by the index entry: it must be checked against the file first.
  edit_index([](format::StepIndex& index) { index.tensor_payload.at(0).length = uint64_t{1} << 60; });
  auto t = Trial::open(trial());
  ASSERT_VIGIL_OK(t);
  auto v = (*t)->value("w", 0);
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code, ErrorCode::CorruptData);
  EXPECT_NE(v.error().message.find("lies outside the file"), std::string::npos) << v.error().message;
}

}  // namespace
}  // namespace vigil
