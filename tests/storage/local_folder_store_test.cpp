// A local folder's opened files: a small one (a step's event file of small tensors) is read whole
// when opened, so its records come from memory, not a pread each; a larger one, and bytes appended
// after opening, are read from the file.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "storage/local_folder_store.h"

namespace vigil::storage {
namespace {

namespace fs = std::filesystem;

class LocalFolderStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           fmt::format("local_store_{}_{}", ::testing::UnitTest::GetInstance()->current_test_info()->name(), ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "events");
    auto s = open_local_folder_store(dir_);
    ASSERT_TRUE(s) << s.error().message;
    store_ = *s;
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& rel, const std::string& bytes, std::ios::openmode mode = std::ios::trunc) {
    std::ofstream(dir_ / rel, std::ios::binary | std::ios::out | mode) << bytes;
  }
  std::string read_at(const StoredObject& f, uint64_t offset, size_t size) {
    std::string out(size, '\0');
    auto r = f.read_at(offset, std::as_writable_bytes(std::span(out)));
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return out;
  }

  fs::path dir_;
  std::shared_ptr<ObjectStore> store_;
};

std::string pattern(size_t size, char salt) {
  std::string s(size, '\0');
  for (size_t i = 0; i < size; ++i) s[i] = char('a' + (i * 7 + size_t(salt)) % 26);
  return s;
}

TEST_F(LocalFolderStoreTest, ASmallFileIsReadWholeWhenOpened) {
  const std::string bytes = pattern(4000, 1);
  write("events/small", bytes);
  auto f = store_->open("events/small");
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ((*f)->size(), bytes.size());
  // Emptied in place (not replaced): the records still come, from what opening read.
  fs::resize_file(dir_ / "events/small", 0);
  EXPECT_EQ(read_at(**f, 0, 100), bytes.substr(0, 100));
  EXPECT_EQ(read_at(**f, 3900, 100), bytes.substr(3900));
  // Past the end (as opened): refused.
  std::string past(2, '\0');
  EXPECT_FALSE((*f)->read_at(3999, std::as_writable_bytes(std::span(past))));
}

TEST_F(LocalFolderStoreTest, ALargeFileIsReadFromTheFile) {
  const std::string bytes = pattern(64 * 1024, 2);
  write("events/large", bytes);
  auto f = store_->open("events/large");
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(read_at(**f, 1000, 50), bytes.substr(1000, 50));
  fs::resize_file(dir_ / "events/large", 0);  // nothing was read ahead: the next read fails
  std::string out(50, '\0');
  EXPECT_FALSE((*f)->read_at(1000, std::as_writable_bytes(std::span(out))));
}

TEST_F(LocalFolderStoreTest, BytesAppendedAfterOpeningAreReadFromTheFile) {
  const std::string head = pattern(300, 3), tail = pattern(200, 4);
  write("events/growing", head);
  auto f = store_->open("events/growing");
  ASSERT_TRUE(f) << f.error().message;
  write("events/growing", tail, std::ios::app);
  EXPECT_EQ((*f)->current_size().value(), head.size() + tail.size());
  EXPECT_EQ(read_at(**f, 250, 100), head.substr(250) + tail.substr(0, 50));
  EXPECT_EQ(read_at(**f, 300, 200), tail);
}

}  // namespace
}  // namespace vigil::storage
