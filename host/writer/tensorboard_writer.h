// The hooks' TensorBoard export (format spec §1.7, §3.12): scalars and histograms as Events that
// TensorBoard reads, TFRecord-framed with the real masked payload CRC (§2.3).
//
// One writer is one file, <tb_dir>/<MODE>/<global_step:012d>_<pid>_<hostname>.tfevents. Like every
// local smdebug file (§1.6) it is written as "<path>.tmp" and renamed to path() by close(); flush()
// pushes what is buffered into the .tmp file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/published_file.h"
#include "common/mode.h"
#include "format/event_proto.h"
#include "trial/tensor_value.h"

namespace vigil::writer {

class TensorBoardWriter {
 public:
  // Creates the file and writes TensorBoard's first event {wall_time: now, file_version:
  // "brain.Event:2"}. Io when the folder or the file cannot be created.
  [[nodiscard]] static Result<std::unique_ptr<TensorBoardWriter>> open(const std::filesystem::path& tb_dir, Mode mode,
                                                         int64_t global_step);
  ~TensorBoardWriter();  // close(), its errors dropped

  // Tags are cleaned as smdebug cleans them: every character outside [-/\w.] becomes '_' and
  // leading '/' are dropped (bytes of non-ASCII characters are kept).

  // Event{wall_time, step, summary{value{tag, simple_value: float(value)}}}.
  [[nodiscard]] Result<void> add_scalar(std::string_view tag, double value, int64_t step, double wall_time);
  // Event{wall_time, step, summary{value{tag, histo}}} with histo = make_histogram(values). Writes
  // nothing for values with no finite element and for bool values (smdebug saves no histogram of
  // either). NotSupported for strings and complex numbers; InvalidArgument when the bytes do not
  // match the shape.
  [[nodiscard]] Result<void> add_histogram(std::string_view tag, const TensorValue& values, int64_t step, double wall_time);

  [[nodiscard]] Result<void> flush();
  // Flushes, closes and renames the .tmp file to path() (on an Io error the .tmp file is removed).
  // Idempotent; adding afterwards is an Internal error.
  [[nodiscard]] Result<void> close();

  const std::filesystem::path& path() const { return file_.final_path(); }

 private:
  explicit TensorBoardWriter(PublishedFile file);
  [[nodiscard]] Result<void> append(const std::string& event);
  [[nodiscard]] Error closed_error() const;

  PublishedFile file_;
  std::string pending_;  // framed records not yet written
};

// The histogram of the finite elements of a numeric value, bucketed like smdebug (tensorboardX):
// TensorFlow's default bucket edges (histogram.cc: 0, ±1e-12·1.1^k below 1e20, ±DBL_MAX), a value x
// counted in the bucket [edge_i, edge_i+1) that holds it (the last one closed), then the empty
// buckets at both ends trimmed, keeping one empty bucket on the left so that TensorBoard, which shows
// only right limits, still sees where the data starts. NaN and ±inf are skipped and not counted.
// nullopt when no element is finite. min/max/num/sum/sum_squares are over the finite elements (sums
// compensated, in double); bool counts as 0/1. Errors as add_histogram.
[[nodiscard]] Result<std::optional<format::Histogram>> make_histogram(const TensorValue& values);

}  // namespace vigil::writer
