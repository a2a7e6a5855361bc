// The uploads of a training job's outputs (jobs/output_uploads.h), to a folder (file://, SageMaker
// local mode) and to the S3 test server (tests/support/s3_test_server.py): live while the job runs,
// in the uploader's order (the end marker last), the archives at the end; destinations checked
// before the job; failures reported as SageMaker reports them, the job folder keeping everything.
#include "jobs/output_uploads.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "s3_server_process.h"
#include "storage/s3_object_store.h"
#include "test_support.h"

namespace vigil::jobs {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using test::ScratchDir;
using Clock = std::chrono::steady_clock;

void write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

// A trial file as the writer publishes it: whole, by renaming its .tmp (a live scan must never see
// it half written, or it is uploaded twice, once empty).
void publish(const fs::path& path, const std::string& bytes) {
  const fs::path tmp = fs::path(path).concat(".tmp");
  write(tmp, bytes);
  fs::rename(tmp, path);
}

// A job folder as run_training_job lays it out, for a request whose outputs all go to `base`.
struct Job {
  ScratchDir dir;
  JobPaths paths;
  TrainingJobRequest request;

  Job(const std::string& name, const std::string& base, const std::string& compression = "GZIP")
      : paths(job_paths(dir / "jobs", name)) {
    json r = {{"TrainingJobName", name},
              {"RoleArn", "arn:aws:iam::111122223333:role/SageMakerExecRole"},
              {"OutputDataConfig", {{"S3OutputPath", base}, {"CompressionType", compression}}},
              {"DebugHookConfig", {{"S3OutputPath", base}}}};
    auto parsed = parse_training_job_request(r.dump());
    EXPECT_TRUE(parsed.has_value()) << (parsed ? "" : parsed.error().message);
    if (parsed) request = std::move(*parsed);
    for (const fs::path& d : {paths.debug_output(), paths.host_root(0) / "model", paths.host_root(1) / "model",
                              paths.host_root(0) / "output/data"})
      fs::create_directories(d);
  }

  std::vector<JobOutput> plan() const {
    auto planned = plan_job_outputs(request, paths, dir.path());
    EXPECT_TRUE(planned.has_value()) << (planned ? "" : planned.error().message);
    return planned ? *planned : std::vector<JobOutput>{};
  }
  std::vector<fs::path> host_roots() const { return {paths.host_root(0), paths.host_root(1)}; }
  // One step of a worker's trial, as the hook publishes it: the event file, then its index.
  void publish_step(int step) const {
    const std::string s = fmt::format("{:012d}", step);
    publish(paths.debug_output() / fmt::format("events/{}/{}_worker_0.tfevents", s, s), "event " + s);
    publish(paths.debug_output() / fmt::format("index/000000000/{}_worker_0.json", s), "index " + s);
  }
};

struct Log {
  std::mutex mutex;
  std::vector<std::string> lines;
  writer::UploaderOptions options() {
    writer::UploaderOptions o;
    o.scan_interval = 50ms;
    o.log = [this](std::string_view m) {
      std::lock_guard lock(mutex);
      lines.emplace_back(m);
    };
    return o;
  }
  std::string all() {
    std::lock_guard lock(mutex);
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  }
};

const OutputRecord* record(const std::vector<OutputRecord>& records, std::string_view name) {
  for (const auto& r : records)
    if (r.name == name) return &r;
  return nullptr;
}

// Waits up to 10 s for `ready`.
template <typename F>
bool eventually(F ready) {
  for (auto until = Clock::now() + 10s; Clock::now() < until; std::this_thread::sleep_for(20ms))
    if (ready()) return true;
  return false;
}

TEST(JobOutputUploads, ToAFolderLiveThenTheArchivesAtTheEnd) {
  Job job("job-1", "file://dest/");  // relative: to the job's working folder (here the scratch folder)
  Log log;
  auto uploads = JobOutputUploads::prepare(job.plan(), job.paths, default_store_opener(), log.options());
  ASSERT_VIGIL_OK(uploads);
  const fs::path dest = job.dir / "dest/job-1";
  ASSERT_VIGIL_OK((*uploads)->start_live());
  EXPECT_EQ(record((*uploads)->records(), "debug-output")->status, "Uploading");
  EXPECT_EQ(record((*uploads)->records(), "output")->status, "Pending");

  // While the job runs, each step reaches the destination.
  job.publish_step(0);
  EXPECT_TRUE(eventually([&] { return fs::exists(dest / "debug-output/index/000000000/000000000000_worker_0.json"); }));
  EXPECT_EQ(test::read_file(dest / "debug-output/events/000000000000/000000000000_worker_0.tfevents"), "event 000000000000");
  job.publish_step(1);
  publish(job.paths.debug_output() / "training_job_end.ts", "1");
  write(job.paths.host_root(0) / "model/model.pt", "weights");
  write(job.paths.host_root(1) / "model/shard.pt", "shard");
  write(job.paths.host_root(0) / "output/data/metrics.json", "{}");

  (*uploads)->finish(job.host_roots(), /*compress_model=*/true, Clock::now() + 10s);
  const auto records = (*uploads)->records();
  ASSERT_EQ(records.size(), 2u);
  for (const auto& r : records) {
    EXPECT_EQ(r.status, "Uploaded") << r.name << ": " << r.error.value_or("");
    EXPECT_EQ(r.files_left, 0u);
  }
  EXPECT_EQ(record(records, "debug-output")->files_uploaded, 5u);
  EXPECT_EQ(record(records, "debug-output")->destination, "file://" + dest.string() + "/debug-output");
  EXPECT_EQ(test::list_files(dest / "debug-output"), test::list_files(job.paths.debug_output()));
  EXPECT_EQ(test::list_files(dest / "output"), (std::vector<std::string>{"model.tar.gz", "output.tar.gz"}));
  EXPECT_EQ(test::read_file(dest / "output/model.tar.gz"), test::read_file(job.paths.model_archive()));
  EXPECT_EQ((*uploads)->model_artifacts(), "file://" + dest.string() + "/output/model.tar.gz");
  EXPECT_EQ((*uploads)->failure_reason(), std::nullopt);
  EXPECT_EQ(log.all(), "");
}

TEST(JobOutputUploads, TheUncompressedModelGoesAsItsFiles) {
  Job job("job-1", "file://dest", "NONE");
  Log log;
  auto uploads = JobOutputUploads::prepare(job.plan(), job.paths, default_store_opener(), log.options());
  ASSERT_VIGIL_OK(uploads);
  write(job.paths.host_root(0) / "model/model.pt", "weights");
  write(job.paths.host_root(1) / "model/tokenizer/vocab.txt", "a b");
  // As deep as the uploader walks, and one folder deeper than the copy goes.
  std::string deep;
  for (int i = 1; i <= 29; ++i) deep += fmt::format("f{}/", i);
  write(job.paths.host_root(0) / "model" / (deep + "deep.bin"), "d");
  write(job.paths.host_root(0) / "model" / (deep + "f30/too-deep.bin"), "x");
  (*uploads)->finish(job.host_roots(), /*compress_model=*/false, Clock::now() + 10s);
  const fs::path dest = job.dir / "dest/job-1/output";
  EXPECT_EQ(test::list_files(dest), (std::vector<std::string>{"model/" + deep + "deep.bin", "model/model.pt",
                                                               "model/tokenizer/vocab.txt", "output.tar.gz"}));
  EXPECT_EQ(record((*uploads)->records(), "output")->status, "Uploaded");
  EXPECT_EQ((*uploads)->model_artifacts(), "file://" + dest.string() + "/model/");
  EXPECT_NE(log.all().find("f30: deeper than 30 folders"), std::string::npos) << log.all();
}

TEST(JobOutputUploads, DestinationsAreCheckedBeforeTheJobAndARefusalLeavesNothing) {
  {
    Job job("job-1", "file://dest");
    write(job.dir / "dest/job-1/debug-output/index/000000000/000000000000_worker_0.json", "an earlier job's");
    auto uploads = JobOutputUploads::prepare(job.plan(), job.paths, default_store_opener());
    ASSERT_FALSE(uploads);
    EXPECT_EQ(uploads.error().message,
              "the job's output location file://" + (job.dir / "dest/job-1/debug-output").string() +
                  " already holds files: the outputs of two jobs are never mixed (an earlier job of this name?); remove "
                  "them, or give the job another name or output path");
    EXPECT_FALSE(fs::exists(job.dir / "dest/job-1/output"));  // nothing made for the other outputs
  }
  {
    Job job("job-1", "file://jobs/job-1/output");  // would upload into its own staging folders
    auto uploads = JobOutputUploads::prepare(job.plan(), job.paths, default_store_opener());
    ASSERT_FALSE(uploads);
    EXPECT_NE(uploads.error().message.find("overlaps the job's own folder"), std::string::npos) << uploads.error().message;
  }
  {
    Job job("job-1", "file://dest");
    write(job.dir / "dest/job-1/output", "a file where the folder goes");
    auto uploads = JobOutputUploads::prepare(job.plan(), job.paths, default_store_opener());
    ASSERT_FALSE(uploads);
    EXPECT_NE(uploads.error().message.find("/dest/job-1/output is not a folder"), std::string::npos) << uploads.error().message;
  }
  {
    // An empty folder left behind is no one's output.
    Job job("job-1", "file://dest");
    fs::create_directories(job.dir / "dest/job-1/debug-output");
    EXPECT_VIGIL_OK(JobOutputUploads::prepare(job.plan(), job.paths, default_store_opener()));
  }
  {
    Job job("job-1", "s3://bucket/out");
    StoreOpener unreachable = [](const OutputLocation&) -> Result<std::shared_ptr<storage::ObjectStore>> {
      return fail(Error::invalid_argument("no AWS credentials found (looked in: ...)"));
    };
    auto uploads = JobOutputUploads::prepare(job.plan(), job.paths, unreachable);
    ASSERT_FALSE(uploads);
    EXPECT_EQ(uploads.error().message,
              "cannot upload to s3://bucket/out/job-1/debug-output: no AWS credentials found (looked in: ...)");
  }
}

TEST(JobOutputUploads, AnArchiveThatCannotBeBuiltFailsTheOutputAndSaysWhy) {
  Job job("job-1", "file://dest");
  Log log;
  auto uploads = JobOutputUploads::prepare(job.plan(), job.paths, default_store_opener(), log.options());
  ASSERT_VIGIL_OK(uploads);
  ASSERT_VIGIL_OK((*uploads)->start_live());
  // A file where the archives' folder goes.
  write(job.paths.artifacts(), "in the way");
  (*uploads)->finish(job.host_roots(), true, Clock::now() + 10s);
  EXPECT_EQ(record((*uploads)->records(), "output")->status, "Failed");
  EXPECT_EQ(record((*uploads)->records(), "debug-output")->status, "Uploaded");
  const auto reason = (*uploads)->failure_reason();
  ASSERT_TRUE(reason);
  EXPECT_TRUE(reason->starts_with("ClientError: Artifact upload failed:cannot write " + job.paths.artifacts().string()))
      << *reason;
  EXPECT_EQ((*uploads)->model_artifacts(), std::nullopt);
}

// Whether `s` is whole UTF-8 sequences (no sequence cut at its end).
bool whole_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (i + n > s.size()) return false;
    i += n;
  }
  return true;
}

TEST(JobOutputUploads, TheFailureReasonIsAtMost1024BytesCutBetweenCharacters) {
  // Destinations named with two-byte characters (é): byte 1024 of the reason falls among them. Four
  // shifts by one byte put it inside a character at least once.
  std::string names;
  for (int k = 0; k < 120; ++k) names += "\xc3\xa9";  // 240 bytes: within a file name's 255
  std::set<size_t> sizes;
  for (int shift = 0; shift < 4; ++shift) {
    Job job("job-1", fmt::format("file://d{}/{}/{}/{}/{}", std::string(size_t(shift), 'x'), names, names, names, names));
    Log log;
    auto uploads = JobOutputUploads::prepare(job.plan(), job.paths, default_store_opener(), log.options());
    ASSERT_VIGIL_OK(uploads);
    write(job.paths.artifacts(), "in the way");
    (*uploads)->finish(job.host_roots(), true, Clock::now() + 10s);
    const auto reason = (*uploads)->failure_reason();
    ASSERT_TRUE(reason);
    EXPECT_TRUE(whole_utf8(*reason)) << shift;
    sizes.insert(reason->size());
  }
  EXPECT_EQ(sizes, (std::set<size_t>{1023, 1024}));
}

// ---- against the S3 test server ------------------------------------------------------------------

class JobOutputUploadsS3 : public test::S3ServerSuite {
 protected:
  StoreOpener opener() const {
    return [config = server_->config()](const OutputLocation& where) -> Result<std::shared_ptr<storage::ObjectStore>> {
      if (where.local) return default_store_opener()(where);
      return storage::open_s3_store(where.s3, config);
    };
  }
  std::shared_ptr<storage::ObjectStore> bucket() const {
    auto store = storage::open_s3_store(storage::S3Uri{"trials", ""}, server_->config());
    EXPECT_TRUE(store) << store.error().message;
    return *store;
  }
  // The keys the proxy saw PUT under `prefix`, in order.
  std::vector<std::string> puts(const std::string& prefix) const {
    std::vector<std::string> out;
    for (const auto& r : server_->requests())
      if (r["method"] == "PUT" && r["status"] == 200) {
        const std::string path = r["path"].get<std::string>();
        if (path.starts_with("/trials/" + prefix)) out.push_back(path.substr(8 + prefix.size()));
      }
    return out;
  }
};

TEST_F(JobOutputUploadsS3, LiveInTheUploadersOrderThenTheArchives) {
  Job job("live-job", "s3://trials/jobs/");
  Log log;
  auto uploads = JobOutputUploads::prepare(job.plan(), job.paths, opener(), log.options());
  ASSERT_VIGIL_OK(uploads);
  ASSERT_VIGIL_OK((*uploads)->start_live());
  job.publish_step(0);
  // Uploaded while the job runs, not at its end.
  EXPECT_TRUE(eventually([&] {
    auto there = bucket()->exists("jobs/live-job/debug-output/index/000000000/000000000000_worker_0.json");
    return there && *there;
  }));
  job.publish_step(1);
  publish(job.paths.debug_output() / "training_job_end.ts", "1");
  write(job.paths.host_root(0) / "model/model.pt", "weights");
  (*uploads)->finish(job.host_roots(), true, Clock::now() + 20s);

  for (const auto& r : (*uploads)->records()) EXPECT_EQ(r.status, "Uploaded") << r.name << ": " << r.error.value_or("");
  const auto debug = puts("jobs/live-job/debug-output/");
  ASSERT_EQ(debug.size(), 5u);
  // Each index after its event file, the marker last.
  EXPECT_EQ(debug.back(), "training_job_end.ts");
  for (int step : {0, 1}) {
    const std::string s = fmt::format("{:012d}", step);
    const auto event = std::find(debug.begin(), debug.end(), fmt::format("events/{}/{}_worker_0.tfevents", s, s));
    const auto index = std::find(debug.begin(), debug.end(), fmt::format("index/000000000/{}_worker_0.json", s));
    ASSERT_NE(event, debug.end());
    ASSERT_NE(index, debug.end());
    EXPECT_LT(event, index);
  }
  auto model = bucket()->read("jobs/live-job/output/model.tar.gz");
  ASSERT_VIGIL_OK(model);
  EXPECT_EQ(*model, test::read_file(job.paths.model_archive()));
  EXPECT_VIGIL_OK(bucket()->read("jobs/live-job/output/output.tar.gz"));
  EXPECT_EQ((*uploads)->model_artifacts(), "s3://trials/jobs/live-job/output/model.tar.gz");
  EXPECT_EQ((*uploads)->failure_reason(), std::nullopt);
}

TEST_F(JobOutputUploadsS3, APrefixHoldingObjectsOrAMissingBucketIsRefused) {
  ASSERT_VIGIL_OK(bucket()->write("jobs/taken-job/debug-output/training_job_end.ts", "1"));
  Job taken("taken-job", "s3://trials/jobs");
  auto uploads = JobOutputUploads::prepare(taken.plan(), taken.paths, opener());
  ASSERT_FALSE(uploads);
  EXPECT_NE(uploads.error().message.find("s3://trials/jobs/taken-job/debug-output already holds files"), std::string::npos)
      << uploads.error().message;

  Job missing("job-2", "s3://no-such-bucket/jobs");
  uploads = JobOutputUploads::prepare(missing.plan(), missing.paths, opener());
  ASSERT_FALSE(uploads);
  EXPECT_NE(uploads.error().message.find("cannot upload to s3://no-such-bucket/jobs/job-2/debug-output:"), std::string::npos)
      << uploads.error().message;
  EXPECT_NE(uploads.error().message.find("NoSuchBucket"), std::string::npos) << uploads.error().message;
}

TEST_F(JobOutputUploadsS3, AFailedUploadIsSageMakersClientErrorAndTheJobFolderKeepsTheFiles) {
  Job job("denied-job", "s3://trials/jobs");
  Log log;
  auto uploads = JobOutputUploads::prepare(job.plan(), job.paths, opener(), log.options());
  ASSERT_VIGIL_OK(uploads);
  ASSERT_VIGIL_OK((*uploads)->start_live());
  server_->set_faults(json::array(
      {{{"match", "model.tar.gz"}, {"method", "PUT"}, {"times", 1000}, {"action", "status"}, {"status", 403}, {"code", "AccessDenied"}}}));
  job.publish_step(0);
  write(job.paths.host_root(0) / "model/model.pt", "weights");
  // AccessDenied is retried at every scan like any fault, until the deadline.
  (*uploads)->finish(job.host_roots(), true, Clock::now() + 2s);

  const auto records = (*uploads)->records();
  EXPECT_EQ(record(records, "debug-output")->status, "Uploaded");
  const OutputRecord* output = record(records, "output");
  EXPECT_EQ(output->status, "Failed");
  EXPECT_EQ(output->files_left, 1u);
  EXPECT_EQ(output->some_files_left, std::vector<std::string>{"model.tar.gz"});
  const auto reason = (*uploads)->failure_reason();
  ASSERT_TRUE(reason);
  EXPECT_TRUE(reason->starts_with("ClientError: Artifact upload failed:")) << *reason;
  EXPECT_NE(reason->find("s3://trials/jobs/denied-job/output/model.tar.gz"), std::string::npos) << *reason;
  EXPECT_NE(reason->find("AccessDenied"), std::string::npos) << *reason;
  EXPECT_NE(reason->find("the job folder keeps it: " + job.paths.artifacts().string()), std::string::npos) << *reason;
  EXPECT_LE(reason->size(), 1024u);
  // No credential in what is reported or logged (the test server's key and secret are both "S3RVER").
  EXPECT_EQ(reason->find("S3RVER"), std::string::npos);
  EXPECT_EQ(log.all().find("S3RVER"), std::string::npos);
  EXPECT_NE(log.all().find("AccessDenied"), std::string::npos) << log.all();
  EXPECT_EQ((*uploads)->model_artifacts(), std::nullopt);
  EXPECT_TRUE(fs::exists(job.paths.model_archive()));
  // output.tar.gz made it; only the model is missing.
  EXPECT_VIGIL_OK(bucket()->read("jobs/denied-job/output/output.tar.gz"));
}

TEST_F(JobOutputUploadsS3, TheEndWaitsNoLongerThanItsDeadline) {
  Job job("slow-job", "s3://trials/jobs");
  Log log;
  auto uploads = JobOutputUploads::prepare(job.plan(), job.paths, opener(), log.options());
  ASSERT_VIGIL_OK(uploads);
  server_->set_faults(json::array({{{"match", "model.tar.gz"}, {"method", "PUT"}, {"times", 1000}, {"action", "delay"}, {"seconds", 4}}}));
  const auto started = Clock::now();
  (*uploads)->finish(job.host_roots(), true, Clock::now() + 1s);
  EXPECT_LT(Clock::now() - started, 3s);
  const auto records = (*uploads)->records();
  const OutputRecord* output = record(records, "output");
  EXPECT_EQ(output->status, "Failed");
  EXPECT_NE(output->error.value_or("").find("no answer within"), std::string::npos) << output->error.value_or("");
  // The PUT left in flight ends (answered late) before the suite stops the server.
  EXPECT_TRUE(eventually([&] {
    for (const auto& r : server_->requests())
      if (r["method"] == "PUT" && r["path"].get<std::string>().ends_with("/model.tar.gz")) return true;
    return false;
  }));
}

}  // namespace
}  // namespace vigil::jobs
