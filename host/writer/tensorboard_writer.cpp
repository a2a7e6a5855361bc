// TensorBoardWriter: TensorBoard event files as smdebug's hooks write them (format spec §1.7, §3.12).
#include "writer/tensorboard_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/published_file.h"
#include "format/tfrecord.h"
#include "format/trial_layout.h"
#include "trial/compensated_sum.h"
#include "trial/element_access.h"

namespace vigil::writer {

namespace fs = std::filesystem;

namespace {

// Records are buffered and written in chunks of about this size (and at flush/close).
constexpr size_t kBufferBytes = size_t(1) << 20;

[[nodiscard]] Error write_error(const fs::path& file, std::string_view what) { return Error::io_write(file.string(), what); }

// smdebug's _clean_tag: re.sub(r"[^-/\w.]", "_", tag).lstrip("/"). Non-ASCII bytes are kept
// (Python's \w matches most non-ASCII letters; telling them from symbols would need Unicode tables).
std::string clean_tag(std::string_view tag) {
  std::string out;
  out.reserve(tag.size());
  for (char c : tag) {
    const auto u = static_cast<unsigned char>(c);
    const bool keep = u >= 0x80 || (u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') ||
                      c == '_' || c == '-' || c == '/' || c == '.';
    out.push_back(keep ? c : '_');
  }
  out.erase(0, out.find_first_not_of('/'));
  return out;
}

// TensorFlow's default histogram edges (InitDefaultBucketsInner in histogram.cc), built the same way
// so that the doubles are the same: -DBL_MAX, -1e20 < -1e-12·1.1^k <= -1e-12, 0, the positive
// mirror, DBL_MAX.
const std::vector<double>& default_edges() {
  static const std::vector<double> edges = [] {
    std::vector<double> positive;
    for (double v = 1e-12; v < 1e20; v *= 1.1) positive.push_back(v);
    std::vector<double> e{-DBL_MAX};
    for (auto it = positive.rbegin(); it != positive.rend(); ++it) e.push_back(-*it);
    e.push_back(0.0);
    e.insert(e.end(), positive.begin(), positive.end());
    e.push_back(DBL_MAX);
    return e;
  }();
  return edges;
}

// float(v) as IEEE rounding gives it, without the undefined behaviour of casting a double beyond
// float's range: from 2^128 - 2^103 (halfway between FLT_MAX and the next power of two) it is inf.
float to_float(double v) {
  if (std::fabs(v) >= 0x1.fffffep127 + 0x1p103) return std::signbit(v) ? -HUGE_VALF : HUGE_VALF;
  return static_cast<float>(v);
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

Result<std::optional<format::Histogram>> make_histogram(const TensorValue& values) {
  using detail::NumericKind;
  const NumericKind kind = detail::numeric_kind(values.dtype());
  if (kind == NumericKind::String || kind == NumericKind::Complex)
    return fail(Error::not_supported(
        fmt::format("cannot make a histogram of dtype {}", format::element_type_info(values.dtype()).numpy_name)));
  uint64_t count = 1;
  for (int64_t d : values.shape()) {
    if (d < 0 || (d != 0 && count > std::numeric_limits<uint64_t>::max() / uint64_t(d)))
      return fail(Error::invalid_argument("histogram values: invalid shape"));
    count *= uint64_t(d);
  }
  const size_t item = format::element_type_info(values.dtype()).item_size;
  if (count > std::numeric_limits<uint64_t>::max() / item || values.bytes().size() != count * item)
    return fail(Error::invalid_argument(fmt::format("histogram values: {} bytes do not match a shape of {} elements",
                                                    values.bytes().size(), count)));

  const std::vector<double>& edges = default_edges();
  const size_t buckets = edges.size() - 1;
  std::vector<double> counts(buckets, 0.0);
  format::Histogram h;
  h.min = std::numeric_limits<double>::infinity();
  h.max = -h.min;
  detail::CompensatedSum sum, sum_squares;
  detail::for_each_as_double(values, [&](double x) {
    if (!std::isfinite(x)) return;
    // np.histogram's rule: edges[i] <= x < edges[i+1], the last bucket closed (x == DBL_MAX).
    const size_t i = size_t(std::upper_bound(edges.begin(), edges.end(), x) - edges.begin()) - 1;
    counts[std::min(i, buckets - 1)] += 1;
    h.num += 1;
    h.min = std::min(h.min, x);
    h.max = std::max(h.max, x);
    sum.add(x);
    sum_squares.add(x * x);
  });
  if (h.num == 0) return std::optional<format::Histogram>{};
  h.sum = sum.value();
  h.sum_squares = sum_squares.value();

  // Keep buckets first..last (the non-empty range) plus the empty one before `first`; each bucket
  // is reported with its right edge as its limit.
  const auto nonzero = [](double c) { return c != 0; };
  const size_t first = size_t(std::ranges::find_if(counts, nonzero) - counts.begin());
  const size_t last = buckets - 1 - size_t(std::find_if(counts.rbegin(), counts.rend(), nonzero) - counts.rbegin());
  if (first == 0) {
    h.bucket.push_back(0);  // the empty bucket below -DBL_MAX
    h.bucket_limit.push_back(edges[0]);
  }
  for (size_t i = first == 0 ? 0 : first - 1; i <= last; ++i) {
    h.bucket.push_back(counts[i]);
    h.bucket_limit.push_back(edges[i + 1]);
  }
  return h;
}

TensorBoardWriter::TensorBoardWriter(PublishedFile file) : file_(std::move(file)) {}

TensorBoardWriter::~TensorBoardWriter() { (void)close(); }

Result<std::unique_ptr<TensorBoardWriter>> TensorBoardWriter::open(const fs::path& tb_dir, Mode mode,
                                                                   int64_t global_step) {
  if (!mode_from_int(static_cast<int32_t>(mode)))
    return fail(Error::invalid_argument(fmt::format("invalid mode {}", static_cast<int32_t>(mode))));
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return fail(write_error(tb_dir, std::strerror(errno)));
  const fs::path dir = tb_dir / std::string(mode_name(mode));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail(write_error(dir, ec.message()));
  fs::path path = dir / fmt::format("{:012d}_{}_{}.tfevents", global_step, ::getpid(), host);
  fs::path tmp = path;
  tmp += format::kTmpSuffix;
  auto file = PublishedFile::create(std::move(path), std::move(tmp));
  if (!file) return fail(std::move(file.error()));

  std::unique_ptr<TensorBoardWriter> w(new TensorBoardWriter(std::move(*file)));
  auto started = w->append(format::encode_file_version_event(now_seconds(), "brain.Event:2"));
  if (started) started = w->flush();
  if (!started) return fail(std::move(started.error()));  // the PublishedFile removes the .tmp
  return w;
}

Error TensorBoardWriter::closed_error() const {
  return Error::internal(fmt::format("the TensorBoard writer of {} is closed", path().string()));
}

Result<void> TensorBoardWriter::append(const std::string& event) {
  if (!file_.is_open()) return fail(closed_error());
  format::append_record(pending_, {reinterpret_cast<const uint8_t*>(event.data()), event.size()},
                        format::Footer::PayloadCrc);
  if (pending_.size() >= kBufferBytes) return flush();
  return {};
}

Result<void> TensorBoardWriter::add_scalar(std::string_view tag, double value, int64_t step, double wall_time) {
  return append(format::encode_scalar_event(wall_time, step, clean_tag(tag), to_float(value)));
}

Result<void> TensorBoardWriter::add_histogram(std::string_view tag, const TensorValue& values, int64_t step,
                                              double wall_time) {
  if (!file_.is_open()) return fail(closed_error());
  if (values.dtype() == ElementType::Bool) return {};
  auto h = make_histogram(values);
  if (!h) return fail(std::move(h.error()));
  if (!*h) return {};
  return append(format::encode_histogram_event(wall_time, step, clean_tag(tag), **h));
}

Result<void> TensorBoardWriter::flush() {
  if (!file_.is_open() || pending_.empty()) return {};
  auto written = file_.write(pending_);
  pending_.clear();  // after a failure the file holds part of them; writing them again would not help
  return written;
}

Result<void> TensorBoardWriter::close() {
  if (!file_.is_open()) return {};
  auto done = flush();
  auto published = file_.publish();  // removes the .tmp file when it fails
  if (!done) return done;
  return published;
}

}  // namespace vigil::writer
