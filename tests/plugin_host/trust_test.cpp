// Careful loading: a plugin file, or a folder on its path, that another user could write or that
// belongs to neither the user running vigil nor root is refused, unless allowed knowingly.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "plugin_host/elf_search_path.h"
#include "plugin_test_support.h"
#include "test_support.h"

namespace vigil {
namespace {

namespace fs = std::filesystem;
using test::variant_dir;

constexpr uid_t kOtherUid = 54321;  // a user that is neither root nor the one running the tests

fs::path good_plugin() { return variant_dir("good") / "libvigil_test_plugin_good.so"; }
// The good plugin with DT_RUNPATH $ORIGIN/deps.
fs::path runpath_plugin() { return variant_dir("runpath") / "libvigil_test_plugin_runpath.so"; }

// A copy of the good plugin at dir/libgood.so (folders made as needed, with the umask's modes).
fs::path copy_good_plugin_to(const fs::path& dir) {
  fs::create_directories(dir);
  fs::copy_file(good_plugin(), dir / "libgood.so");
  return dir / "libgood.so";
}

void set_mode(const fs::path& p, mode_t mode) { ASSERT_EQ(::chmod(p.c_str(), mode), 0) << p; }

// Loads `file` and expects a refusal (code Io) whose reason holds `part`.
void expect_untrusted(const fs::path& file, const std::string& part) {
  plugin_host::PluginRegistry registry(plugin_host::LoadOptions{});
  auto loaded = registry.load_file(file);
  ASSERT_FALSE(loaded.has_value());
  EXPECT_EQ(loaded.error().code, ErrorCode::Io);
  EXPECT_TRUE(registry.rules().empty());
  ASSERT_EQ(registry.refused().size(), 1u);
  EXPECT_EQ(registry.refused()[0].code, ErrorCode::Io);
  const std::string& reason = registry.refused()[0].reason;
  EXPECT_NE(reason.find("not trusted: "), std::string::npos) << reason;
  EXPECT_NE(reason.find(part), std::string::npos) << reason;
  EXPECT_NE(reason.find("--allow-insecure-plugins"), std::string::npos) << reason;
}

void expect_loads(const fs::path& file, plugin_host::LoadOptions options = {}) {
  plugin_host::PluginRegistry registry(options);
  auto loaded = registry.load_file(file);
  ASSERT_VIGIL_OK(loaded);
  EXPECT_EQ(registry.rules().size(), 5u);
}

struct stat stat_of(mode_t type_and_mode, uid_t uid) {
  struct stat st {};
  st.st_mode = type_and_mode;
  st.st_uid = uid;
  st.st_gid = 4242;
  return st;
}

TEST(PluginTrust, TheTestFoldersAreTrusted) {
  // Every plugin the other tests load sits in the build tree or a temporary folder under /tmp.
  test::ScratchDir dir;
  expect_loads(good_plugin());
  expect_loads(copy_good_plugin_to(dir.path() / "plugins"));
}

TEST(PluginTrust, AWorldWritableFileIsRefused) {
  test::ScratchDir dir;
  const fs::path file = copy_good_plugin_to(dir.path());
  set_mode(file, 0757);
  expect_untrusted(file, "the file " + fs::canonical(file).string() + " is writable by every user (mode 0757)");
}

TEST(PluginTrust, AGroupWritableFileIsRefused) {
  test::ScratchDir dir;
  const fs::path file = copy_good_plugin_to(dir.path());
  set_mode(file, 0775);
  expect_untrusted(file, "is writable by its group");
}

TEST(PluginTrust, AGroupWritableFolderIsRefused) {
  test::ScratchDir dir;
  const fs::path file = copy_good_plugin_to(dir.path() / "plugins");
  set_mode(dir.path() / "plugins", 0775);
  expect_untrusted(file, "the folder " + fs::canonical(dir.path() / "plugins").string() + " is writable by its group");
}

TEST(PluginTrust, AWorldWritableAncestorFolderIsRefused) {
  test::ScratchDir dir;
  const fs::path file = copy_good_plugin_to(dir.path() / "open" / "a" / "b");
  set_mode(dir.path() / "open", 0777);  // no sticky bit: anyone may rename a/ away and put their own
  expect_untrusted(file, "the folder " + fs::canonical(dir.path() / "open").string() + " is writable by every user");
  // The whole directory is refused file by file, with the same reason.
  plugin_host::PluginRegistry registry(plugin_host::LoadOptions{});
  registry.load_directory(file.parent_path());
  EXPECT_TRUE(registry.rules().empty());
  ASSERT_EQ(registry.refused().size(), 1u);
  EXPECT_NE(registry.refused()[0].reason.find("is writable by every user"), std::string::npos);
}

// A symlink is followed before the checks: what is checked, and loaded, is the real file's path.
TEST(PluginTrust, ASymlinkIsJudgedByTheFileItLeadsTo) {
  test::ScratchDir dir;
  const fs::path trusted = copy_good_plugin_to(dir.path() / "trusted");
  const fs::path open = copy_good_plugin_to(dir.path() / "open");
  set_mode(dir.path() / "open", 0777);
  fs::create_directories(dir.path() / "links");
  fs::create_symlink(open, dir.path() / "links" / "libopen.so");
  fs::create_symlink(trusted, dir.path() / "links" / "libtrusted.so");
  expect_untrusted(dir.path() / "links" / "libopen.so", "the folder " + fs::canonical(dir.path() / "open").string());
  expect_loads(dir.path() / "links" / "libtrusted.so");
}

TEST(PluginTrust, AFileOrFolderOfAnotherUserIsRefused) {
  if (::geteuid() == 0) {
    // Running as root: make the owners foreign for real.
    test::ScratchDir dir;
    const fs::path file = copy_good_plugin_to(dir.path() / "theirs");
    ASSERT_EQ(::chown(file.c_str(), kOtherUid, 0), 0);
    expect_untrusted(file, "belongs to uid " + std::to_string(kOtherUid) + " (neither the user running vigil, uid 0");
    ASSERT_EQ(::chown(file.c_str(), 0, 0), 0);
    ASSERT_EQ(::chown((dir.path() / "theirs").c_str(), kOtherUid, 0), 0);
    expect_untrusted(file, "the folder " + fs::canonical(dir.path() / "theirs").string() + " belongs to uid " +
                               std::to_string(kOtherUid));
  } else {
    // Files cannot be given away without root: judge the stat of one that belongs to someone else.
    const uid_t other = ::geteuid() == kOtherUid ? kOtherUid + 1 : kOtherUid;
    EXPECT_NE(plugin_host::trust_problem(stat_of(S_IFREG | 0755, other), ::geteuid()).find("belongs to uid"),
              std::string::npos);
    EXPECT_NE(plugin_host::trust_problem(stat_of(S_IFDIR | 0755, other), ::geteuid()).find("belongs to uid"),
              std::string::npos);
  }
}

TEST(PluginTrust, TheRulesOnStatFields) {
  const uid_t me = 1000;
  EXPECT_EQ(plugin_host::trust_problem(stat_of(S_IFREG | 0755, me), me), "");
  EXPECT_EQ(plugin_host::trust_problem(stat_of(S_IFREG | 0755, 0), me), "");  // root's
  EXPECT_EQ(plugin_host::trust_problem(stat_of(S_IFDIR | 0700, me), me), "");
  EXPECT_EQ(plugin_host::trust_problem(stat_of(S_IFREG | 0755, 1001), me),
            "belongs to uid 1001 (neither the user running vigil, uid 1000, nor root)");
  EXPECT_EQ(plugin_host::trust_problem(stat_of(S_IFDIR | 0777, me), me), "is writable by every user (mode 0777)");
  EXPECT_EQ(plugin_host::trust_problem(stat_of(S_IFDIR | 0770, me), me), "is writable by its group, gid 4242 (mode 0770)");
  // A root-owned sticky folder (/tmp) is fine; one of another owner, or a sticky file, is not.
  EXPECT_EQ(plugin_host::trust_problem(stat_of(S_IFDIR | 01777, 0), me), "");
  EXPECT_NE(plugin_host::trust_problem(stat_of(S_IFDIR | 01777, me), me), "");
  EXPECT_NE(plugin_host::trust_problem(stat_of(S_IFREG | 01777, 0), me), "");
}

TEST(PluginTrust, ARootOwnedStickyFolderIsAccepted) {
  test::ScratchDir dir;
  const fs::path sticky = dir.path() / "shared";
  const fs::path file = copy_good_plugin_to(sticky);
  set_mode(sticky, 01777);  // like /tmp
  struct stat st {};
  ASSERT_EQ(::stat(sticky.c_str(), &st), 0);
  if (st.st_uid == 0) {
    expect_loads(file);
  } else {
    // Not root: the folder is this user's, so its sticky bit does not make it safe.
    expect_untrusted(file, "is writable by every user (mode 1777)");
  }
  // Every temporary folder of these tests lies under /tmp, root-owned and sticky, and loads.
  ASSERT_EQ(::stat(fs::temp_directory_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_TRUE(st.st_mode & S_ISVTX);
  expect_loads(copy_good_plugin_to(dir.path() / "plain"));
}

TEST(PluginTrust, InsecurePluginsLoadWhenAllowed) {
  test::ScratchDir dir;
  const fs::path file = copy_good_plugin_to(dir.path() / "open");
  set_mode(dir.path() / "open", 0777);
  set_mode(file, 0777);
  expect_untrusted(file, "is writable by every user");
  expect_loads(file, plugin_host::LoadOptions{.allow_insecure = true});

  // VIGIL_ALLOW_INSECURE_PLUGINS=1 is the same; any other value is not, and neither is its absence.
  ::setenv("VIGIL_ALLOW_INSECURE_PLUGINS", "1", 1);
  EXPECT_TRUE(plugin_host::LoadOptions::from_environment().allow_insecure);
  {
    plugin_host::PluginRegistry registry;  // options from the environment
    EXPECT_TRUE(registry.load_file(file).has_value());
  }
  ::setenv("VIGIL_ALLOW_INSECURE_PLUGINS", "yes", 1);
  EXPECT_FALSE(plugin_host::LoadOptions::from_environment().allow_insecure);
  ::unsetenv("VIGIL_ALLOW_INSECURE_PLUGINS");
  EXPECT_FALSE(plugin_host::LoadOptions::from_environment().allow_insecure);
  plugin_host::PluginRegistry registry;
  EXPECT_FALSE(registry.load_file(file).has_value());
}

// `vigil rules` lists the refused plugin with its reason, and --allow-insecure-plugins loads it.
TEST(PluginTrust, VigilRulesShowsTheRefusalAndTheAllowFlagLoads) {
  test::ScratchDir dir;
  copy_good_plugin_to(dir.path() / "open");
  set_mode(dir.path() / "open", 0777);
  auto run = [&](const std::string& extra) {
    const std::string command = std::string(VIGIL_BINARY) + " rules --plugins " + (dir.path() / "open").string() +
                                extra + " 2>&1";
    std::string out;
    FILE* p = ::popen(command.c_str(), "r");
    char buf[4096];
    for (size_t n; p && (n = std::fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
    EXPECT_EQ(p ? ::pclose(p) : -1, 0) << out;
    return out;
  };
  const std::string refused = run("");
  EXPECT_NE(refused.find("refused: " + (dir.path() / "open" / "libgood.so").string() + ": not trusted: the folder"),
            std::string::npos)
      << refused;
  EXPECT_EQ(refused.find("StepsRule"), std::string::npos) << refused;
  const std::string allowed = run(" --allow-insecure-plugins");
  EXPECT_NE(allowed.find("StepsRule"), std::string::npos) << allowed;
  EXPECT_EQ(allowed.find("not trusted"), std::string::npos) << allowed;
}

// A trusted plugin's dependencies are found through its DT_RUNPATH first: a folder there that every
// user may write let another user's library run inside the evaluator.
TEST(PluginTrust, ALibrarySearchPathFolderOthersMayWriteIsRefused) {
  test::ScratchDir dir;
  fs::create_directories(dir.path() / "plugins");
  const fs::path plugin = dir.path() / "plugins" / "librunpath.so";
  fs::copy_file(runpath_plugin(), plugin);
  set_mode(plugin, 0755);
  {
    plugin_host::PluginRegistry registry(plugin_host::LoadOptions{});
    EXPECT_VIGIL_OK(registry.load_file(plugin));  // no deps/ folder: judged by plugins/, which is trusted
  }
  fs::create_directories(dir.path() / "plugins" / "deps");
  set_mode(dir.path() / "plugins" / "deps", 0777);
  expect_untrusted(plugin, "its library search path entry '$ORIGIN/deps': not trusted: the folder " +
                               (dir.path() / "plugins" / "deps").string());
  plugin_host::PluginRegistry allowing(plugin_host::LoadOptions{.allow_insecure = true});
  EXPECT_VIGIL_OK(allowing.load_file(plugin));
}

TEST(PluginTrust, TheSearchPathIsReadFromTheDynamicSection) {
  auto runpath = plugin_host::elf_library_search_path(runpath_plugin());
  ASSERT_VIGIL_OK(runpath);
  EXPECT_EQ(*runpath, std::vector<std::string>{"$ORIGIN/deps"});
  auto none = plugin_host::elf_library_search_path(good_plugin());
  ASSERT_VIGIL_OK(none);
  EXPECT_TRUE(none->empty());
  // Not ELF, and ELF cut short: refused with the reason, never read past the end.
  test::ScratchDir dir;
  const fs::path text = dir.path() / "text.so";
  std::ofstream(text) << "not a library";
  auto refused = plugin_host::elf_library_search_path(text);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("not a well-formed ELF shared object"), std::string::npos) << refused.error().message;
  const fs::path cut = dir.path() / "cut.so";
  fs::copy_file(runpath_plugin(), cut);
  fs::resize_file(cut, 200);
  EXPECT_FALSE(plugin_host::elf_library_search_path(cut));
}

// Damaged libraries (cut short anywhere in the first pages, bytes overwritten in the headers and the
// dynamic section) give an answer or a refusal, and nothing is read outside the file.
TEST(PluginTrust, DamagedLibrariesAreReadWithinTheirBounds) {
  test::ScratchDir dir;
  const std::string original = test::read_file(runpath_plugin());
  const fs::path damaged = dir.path() / "damaged.so";
  auto check = [&](const std::string& bytes) {
    std::ofstream(damaged, std::ios::binary | std::ios::trunc) << bytes;
    auto read = plugin_host::elf_library_search_path(damaged);
    if (!read) {
      EXPECT_EQ(read.error().code, ErrorCode::InvalidArgument) << read.error().message;
    }
  };
  for (size_t length = 0; length < std::min<size_t>(original.size(), 16384); length += 61) check(original.substr(0, length));
  uint64_t state = 12345;
  for (int i = 0; i < 2000; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    std::string bytes = original;
    const size_t at = size_t(state >> 33) % std::min<size_t>(bytes.size(), 16384);
    bytes[at] = char(state >> 13);
    check(bytes);
  }
}

}  // namespace
}  // namespace vigil
