#include "jobs/output_uploads.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "jobs/output_archive.h"
#include "storage/local_folder_store.h"
#include "storage/s3_config.h"
#include "storage/s3_object_store.h"

namespace vigil::jobs {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kMaxListed = 10;      // names of files left kept in a record
constexpr size_t kMaxLogged = 20;      // clashes or skipped entries logged one by one
constexpr size_t kMaxFailureReason = 1024;  // FailureReason's length in DescribeTrainingJob

// Whether `inner` is `outer` or lies inside it (both absolute and normal).
bool within(const fs::path& inner, const fs::path& outer) {
  auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return o == outer.end();
}

Error refused(std::string message) { return Error::invalid_argument(std::move(message)); }

std::string holds_files(const std::string& uri) {
  return fmt::format("the job's output location {} already holds files: the outputs of two jobs are never mixed (an "
                     "earlier job of this name?); remove them, or give the job another name or output path",
                     uri);
}

}  // namespace

struct JobOutputUploads::Upload {
  JobOutput output;
  std::shared_ptr<storage::ObjectStore> store;
  std::unique_ptr<writer::TrialUploader> uploader;
  OutputRecord record;
};

StoreOpener default_store_opener() {
  return [](const OutputLocation& where) -> Result<std::shared_ptr<storage::ObjectStore>> {
    if (where.local) return storage::open_local_folder_store(where.folder, /*create=*/true);
    auto config = storage::s3_config_from_environment();
    if (!config) return fail(config.error());
    return storage::open_s3_store(where.s3, std::move(*config));
  };
}

JobOutputUploads::JobOutputUploads(JobPaths paths, writer::UploaderOptions options)
    : paths_(std::move(paths)), options_(std::move(options)) {}

JobOutputUploads::~JobOutputUploads() = default;  // each TrialUploader finishes in its destructor

void JobOutputUploads::log(std::string_view message) const noexcept {
  try {
    if (options_.log) options_.log(message);
    else std::fprintf(stderr, "vigil train: %.*s\n", int(message.size()), message.data());
  } catch (...) {
    // A logger that throws loses its message, nothing else.
  }
}

Result<std::unique_ptr<JobOutputUploads>> JobOutputUploads::prepare(std::vector<JobOutput> outputs, const JobPaths& paths,
                                                                    const StoreOpener& open,
                                                                    writer::UploaderOptions options) {
  try {
    std::unique_ptr<JobOutputUploads> self(new JobOutputUploads(paths, std::move(options)));
    std::error_code ec;
    const fs::path job_root = fs::weakly_canonical(fs::absolute(paths.root), ec);
    if (ec) return fail(Error::io(paths.root.string(), ec.message()));
    // First every check, then the local folders: a refused job leaves nothing behind.
    for (JobOutput& output : outputs) {
      auto up = std::make_unique<Upload>();
      up->record = OutputRecord{output.name, output.local.string(), output.destination.uri(), "Pending"};
      const std::string uri = up->record.destination;
      if (output.destination.local) {
        const fs::path folder = fs::weakly_canonical(output.destination.folder, ec);
        if (ec) return fail(refused(fmt::format("the job's output location {}: {}", uri, ec.message())));
        if (within(folder, job_root) || within(job_root, folder))
          return fail(refused(fmt::format("the job's output location {} overlaps the job's own folder {}: give an output "
                                          "path outside it",
                                          uri, job_root.string())));
        struct stat st {};
        if (::lstat(folder.c_str(), &st) == 0) {
          if (!S_ISDIR(st.st_mode))
            return fail(refused(fmt::format("the job's output location {} is not a folder", uri)));
          const bool empty = fs::is_empty(folder, ec);
          if (ec) return fail(refused(fmt::format("the job's output location {}: {}", uri, ec.message())));
          if (!empty) return fail(refused(holds_files(uri)));
        }
      } else {
        auto store = open(output.destination);
        if (!store) return fail(refused(fmt::format("cannot upload to {}: {}", uri, store.error().message)));
        auto held = (*store)->folder_exists("");
        if (!held) return fail(refused(fmt::format("cannot upload to {}: {}", uri, held.error().message)));
        if (*held) return fail(refused(holds_files(uri)));
        up->store = std::move(*store);
      }
      up->output = std::move(output);
      self->uploads_.push_back(std::move(up));
    }
    for (auto& up : self->uploads_) {
      if (!up->output.destination.local) continue;
      auto store = open(up->output.destination);
      if (!store) return fail(refused(fmt::format("cannot copy to {}: {}", up->record.destination, store.error().message)));
      up->store = std::move(*store);
    }
    return self;
  } catch (const std::exception& e) {
    return fail(Error::internal(fmt::format("preparing the job's uploads: {}", e.what())));
  }
}

Result<void> JobOutputUploads::start_live() try {
  std::optional<Error> first;
  for (auto& up : uploads_) {
    if (up->output.when != UploadTime::Live || up->uploader) continue;
    std::error_code ec;
    fs::create_directories(up->output.local, ec);
    auto started = writer::TrialUploader::start(up->output.local, up->store, options_);
    if (!started) {
      up->record.status = "Failed";
      up->record.error = started.error().message;
      if (!first) first = Error::io_write(up->record.destination, started.error().message);
      continue;
    }
    up->uploader = std::move(*started);
    up->record.status = "Uploading";
  }
  if (first) return fail(*first);
  return {};
} catch (const std::exception& e) {
  return fail(Error::internal(fmt::format("starting the job's uploads: {}", e.what())));
}

Result<void> JobOutputUploads::build_artifacts(std::span<const fs::path> host_roots, bool compress_model) {
  std::error_code ec;
  fs::create_directories(paths_.artifacts(), ec);
  if (ec) return fail(Error::io_write(paths_.artifacts().string(), ec.message()));
  std::vector<fs::path> model_roots, data_roots;
  for (const fs::path& root : host_roots) {
    model_roots.push_back(root / "model");
    data_roots.push_back(root / "output" / "data");
  }
  auto note = [&](std::string_view what, const MergeReport& report) {
    for (size_t i = 0; i < report.clashes.size() && i < kMaxLogged; ++i)
      log(fmt::format("{}: {} is left out: an earlier host wrote that name too", what, report.clashes[i]));
    for (size_t i = 0; i < report.skipped.size() && i < kMaxLogged; ++i)
      log(fmt::format("{}: not taken whole: {}", what, report.skipped[i]));
    if (report.clashes.size() + report.skipped.size() > 2 * kMaxLogged)
      log(fmt::format("{}: {} names clashed and {} entries were not taken whole in all", what, report.clashes.size(),
                      report.skipped.size()));
  };
  auto model = compress_model ? write_merged_tar_gz(model_roots, paths_.model_archive())
                              : copy_merged(model_roots, paths_.model_folder());
  if (!model) return fail(model.error());
  note(compress_model ? "model.tar.gz" : "model/", *model);
  auto data = write_merged_tar_gz(data_roots, paths_.output_archive());
  if (!data) return fail(data.error());
  note("output.tar.gz", *data);
  // The uploader reads each file whole and sends it in one PUT.
  for (auto it = fs::recursive_directory_iterator(paths_.artifacts(), ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code size_ec;
    if (!it->is_regular_file(size_ec)) continue;
    const uint64_t size = it->file_size(size_ec);
    if (!size_ec && size > kMaxUploadBytes)
      return fail(Error::invalid_argument(fmt::format(
          "{} is {} bytes, more than the {} bytes (5 GiB) uploaded in one piece (multipart uploads are not implemented)",
          it->path().lexically_relative(paths_.artifacts()).string(), size, kMaxUploadBytes)));
  }
  if (ec) return fail(Error::io(paths_.artifacts().string(), ec.message()));
  return {};
}

void JobOutputUploads::finish(std::span<const fs::path> host_roots, bool compress_model, Clock::time_point deadline) noexcept {
  try {
    for (auto& up : uploads_) {
      if (up->output.when != UploadTime::AtEnd || up->uploader) continue;
      if (auto built = build_artifacts(host_roots, compress_model); !built) {
        up->record.status = "Failed";
        up->record.error = built.error().message;
        log(fmt::format("{} not uploaded: {}", up->record.destination, built.error().message));
        continue;
      }
      auto started = writer::TrialUploader::start(up->output.local, up->store, options_);
      if (!started) {
        up->record.status = "Failed";
        up->record.error = started.error().message;
        continue;
      }
      up->uploader = std::move(*started);
      up->record.status = "Uploading";
    }
    // All uploads run side by side on their threads: one deadline for all.
    for (auto& up : uploads_) {
      if (!up->uploader) continue;
      const auto left = std::max(Clock::duration::zero(), deadline - Clock::now());
      auto report = up->uploader->finish(std::chrono::duration_cast<std::chrono::milliseconds>(left));
      OutputRecord& r = up->record;
      if (!report) {
        r.status = "Failed";
        r.error = report.error().message;
        continue;
      }
      r.files_uploaded = report->files_uploaded;
      r.bytes_uploaded = report->bytes_uploaded;
      r.files_left = report->files_left.size();
      r.some_files_left.assign(report->files_left.begin(),
                               report->files_left.begin() + long(std::min(kMaxListed, report->files_left.size())));
      if (report->complete()) {
        r.status = "Uploaded";
      } else {
        r.status = "Failed";
        r.error = report->first_error ? report->first_error->message : std::string("not all uploaded");
        log(fmt::format("{}: {} file(s) not uploaded ({}); the job folder keeps them in {}", r.destination, r.files_left,
                        *r.error, r.local_path));
      }
      if (up->output.when == UploadTime::AtEnd) {
        const bool model_left = std::any_of(report->files_left.begin(), report->files_left.end(),
                                            [](const std::string& f) { return f.starts_with("model"); });
        if (!model_left)
          model_artifacts_ = compress_model ? up->output.destination.child("model.tar.gz").uri()
                                            : up->output.destination.child("model").uri() + "/";
      }
    }
  } catch (const std::exception& e) {
    log(fmt::format("finishing the job's uploads: {}", e.what()));
    for (auto& up : uploads_)
      if (up->record.status == "Uploading" || up->record.status == "Pending") {
        up->record.status = "Failed";
        up->record.error = e.what();
      }
  } catch (...) {
  }
}

std::vector<OutputRecord> JobOutputUploads::records() const {
  std::vector<OutputRecord> out;
  for (const auto& up : uploads_) {
    OutputRecord r = up->record;
    if (r.status == "Uploading" && up->uploader) {
      const auto counters = up->uploader->counters();
      r.files_uploaded = counters.files;
      r.bytes_uploaded = counters.bytes;
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<std::string> JobOutputUploads::failure_reason() const {
  // The archives first: the model is what the job is for.
  std::vector<const Upload*> order;
  for (const auto& up : uploads_)
    if (up->output.when == UploadTime::AtEnd) order.push_back(up.get());
  for (const auto& up : uploads_)
    if (up->output.when != UploadTime::AtEnd) order.push_back(up.get());
  for (const Upload* up : order) {
    const OutputRecord& r = up->record;
    if (r.status != "Failed") continue;
    std::string reason = fmt::format("ClientError: Artifact upload failed:{} ({} not wholly at {}; the job folder keeps "
                                     "it: {})",
                                     r.error.value_or("unknown error"), r.name, r.destination, r.local_path);
    if (reason.size() > kMaxFailureReason) {
      // Cut on a character boundary: never inside a UTF-8 sequence.
      size_t end = kMaxFailureReason;
      while (end > 0 && (static_cast<unsigned char>(reason[end]) & 0xC0) == 0x80) --end;
      reason.resize(end);
    }
    return reason;
  }
  return std::nullopt;
}

std::optional<std::string> JobOutputUploads::model_artifacts() const { return model_artifacts_; }

}  // namespace vigil::jobs
