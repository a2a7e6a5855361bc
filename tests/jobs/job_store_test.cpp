// The job folder's records as read back: a shared jobs folder holds other users' job folders, and
// what they plant there must not stop this user's readers (list-training-jobs, a supervisor).
#include "jobs/job_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "common/os.h"
#include "test_support.h"

namespace vigil::jobs {
namespace {

namespace fs = std::filesystem;

JobState job_named(std::string name, double created) {
  JobState s;
  s.name = std::move(name);
  s.creation_time = created;
  s.last_modified_time = created;
  s.status = TrainingJobStatus::Completed;
  return s;
}

TEST(JobStore, AFifoPlantedAsStateIsRefusedNotWaitedOn) {
  test::ScratchDir scratch("vigil-job-store");
  const fs::path jobs = scratch.path() / "jobs";
  const JobPaths real{jobs / "real"};
  fs::create_directories(real.root);
  ASSERT_TRUE(save_state(real, job_named("real", 1)));
  const JobPaths planted{jobs / "planted"};
  fs::create_directories(planted.root);
  ASSERT_EQ(::mkfifo(planted.state().c_str(), 0666), 0);

  // The planter's end: once a reader opens the FIFO it is fed a valid record, so a reader that
  // waits on it gets the planted job rather than hanging the test.
  std::thread planter([&] {
    const os::UniqueFd w(::open(planted.state().c_str(), O_WRONLY | O_CLOEXEC));
    if (w) (void)os::write_all(w.get(), to_json(job_named("planted", 2)).dump());
  });
  const std::vector<JobState> listed = list_jobs(jobs);
  // Lets the planter's open() return where no reader came.
  const os::UniqueFd release(::open(planted.state().c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  planter.join();

  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].name, "real");
  auto direct = load_state(planted);
  ASSERT_FALSE(direct);
  EXPECT_NE(direct.error().message.find("not a regular file"), std::string::npos) << direct.error().message;
}

}  // namespace
}  // namespace vigil::jobs
