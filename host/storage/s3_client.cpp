#include "storage/s3_client.h"

#include "storage/curl_library.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <chrono>
#include <ctime>
#include <functional>
#include <map>
#include <random>
#include <thread>

#include "format/crc32c.h"
#include "storage/s3_xml.h"
#include "storage/sigv4.h"
#include <vigil/sdk/text.hpp>

namespace vigil::storage {

using Clock = std::chrono::steady_clock;
using Header = std::pair<std::string, std::string>;

// What a request is for: the counter it adds to and the verb of its messages.
struct S3Client::Request {
  Kind kind = Kind::Get;
  std::string bucket;
  std::string key;  // empty for a listing
  std::vector<Header> query;
  std::vector<Header> headers;  // signed, besides those every request carries
  std::string_view body;        // PUT
  std::span<std::byte> sink;    // Range: where a 206's body goes
  size_t body_limit = kSmallBodyLimit;  // the most of a body (not the sink's) held: past it the transfer stops
  std::string object;           // "s3://bucket/key": what messages name
  // Why a 2xx answer is not to be trusted (short, damaged), or nullopt: a reason means another try.
  std::function<std::optional<std::string>(const Response&)> check;
};

struct S3Client::Response {
  long status = 0;
  std::map<std::string, std::string> headers;  // lowercase names, of the last response (not a 100 Continue)
  std::string body;                            // everything not written to the request's sink
  uint64_t sink_bytes = 0;

  [[nodiscard]] std::string header(const std::string& name) const {
    const auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

namespace {

std::string_view method(S3Client::Kind kind) {
  switch (kind) {
    case S3Client::Kind::Head: return "HEAD";
    case S3Client::Kind::Put: return "PUT";
    default: return "GET";
  }
}

// "cannot read|list|write <object>: <what>"
Error failure(const S3Client::Request& request, std::string_view what, ErrorCode code = ErrorCode::Io) {
  Error e = request.kind == S3Client::Kind::Put ? Error::io_write(request.object, what) : Error::io(request.object, what);
  if (request.kind == S3Client::Kind::List) e.message = fmt::format("cannot list {}: {}", request.object, what);
  e.code = code;
  return e;
}

// "HTTP 403 AccessDenied: Access Denied": S3's Code and Message, never the rest of its error
// document (a SignatureDoesNotMatch document repeats the string to sign and the signature).
std::string http_failure(const S3Client::Response& response, const S3Config& config) {
  std::string text = fmt::format("HTTP {}", response.status);
  if (const auto code = xml_text(response.body, "Code")) text += " " + *code;
  if (auto message = xml_text(response.body, "Message")) {
    if (message->size() > 300) message->resize(300);
    text += ": " + *message;
  }
  if (const std::string region = response.header("x-amz-bucket-region"); !region.empty())
    text += fmt::format(" (the bucket is in region {})", region);
  if (response.status == 403) text += fmt::format(" (credentials from {})", config.credentials_source);
  return text;
}

bool retryable_transport(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_HTTP2:
    case CURLE_PARTIAL_FILE:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_HTTP2_STREAM: return true;
    default: return false;
  }
}

bool retryable_answer(long status, std::string_view code) {
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504 || code == "SlowDown" ||
         code == "RequestTimeout" || code == "InternalError";
}

std::string amz_date_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[17];
  std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &utc);
  return text;
}

std::string base64(std::span<const uint8_t> bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t n = uint32_t(bytes[i]) << 16 | (i + 1 < bytes.size() ? uint32_t(bytes[i + 1]) << 8 : 0) |
                       (i + 2 < bytes.size() ? uint32_t(bytes[i + 2]) : 0);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

// x-amz-checksum-crc32c: base64 of the big-endian CRC32C.
std::string crc32c_base64(std::string_view bytes) {
  const uint32_t crc = format::crc32c(bytes.data(), bytes.size());
  const uint8_t be[4] = {uint8_t(crc >> 24), uint8_t(crc >> 16), uint8_t(crc >> 8), uint8_t(crc)};
  return base64(be);
}

std::optional<uint64_t> parse_u64(std::string_view text) {
  uint64_t value = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || p != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// One attempt's transfer: curl's callbacks write here.
struct Transfer {
  S3Client::Response response;
  std::span<std::byte> sink;
  bool sink_overflow = false;  // a 206 brought more than the range asked for
  bool body_too_big = false;   // the body went past body_limit
  size_t body_limit = kSmallBodyLimit;
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const std::string_view line(data, size * count);
  if (line.starts_with("HTTP/")) {  // a new response (after a 100 Continue, or a redirect) starts over
    t.response.headers.clear();
    const size_t space = line.find(' ');
    t.response.status = space == std::string_view::npos ? 0 : std::strtol(std::string(line.substr(space + 1, 3)).c_str(), nullptr, 10);
    return line.size();
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return line.size();
  const std::string name = sdk::lower(line.substr(0, colon));
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.remove_suffix(1);
  t.response.headers[name] = std::string(value);
  return line.size();
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const size_t n = size * count;
  if (!t.sink.empty() && t.response.status == 206) {
    if (t.response.sink_bytes + n > t.sink.size()) {
      t.sink_overflow = true;
      return 0;  // stops the transfer: CURLE_WRITE_ERROR
    }
    std::memcpy(t.sink.data() + t.response.sink_bytes, data, n);
    t.response.sink_bytes += n;
    return n;
  }
  if (t.response.body.size() + n > t.body_limit) {
    t.body_too_big = true;
    return 0;
  }
  t.response.body.append(data, n);
  return n;
}

}  // namespace

Result<std::shared_ptr<S3Client>> S3Client::create(S3Config config) {
  auto endpoint = parse_s3_endpoint(config.endpoint);
  if (!endpoint) return fail(endpoint.error());
  if (config.max_attempts < 1) return fail(Error::invalid_argument("S3 max_attempts must be at least 1"));
  auto curl = curl_library();
  if (!curl) return fail(curl.error());
  return std::shared_ptr<S3Client>(new S3Client(std::move(config), std::move(*endpoint), **curl));
}

S3Client::S3Client(S3Config config, S3Endpoint endpoint, const CurlLibrary& curl)
    : config_(std::move(config)), endpoint_(std::move(endpoint)), curl_(&curl) {}

S3Client::~S3Client() {
  for (void* handle : pool_) curl_->easy_cleanup(static_cast<CURL*>(handle));
}

void* S3Client::take_handle() const {
  {
    std::lock_guard lock(pool_mutex_);
    if (!pool_.empty()) {
      void* handle = pool_.back();
      pool_.pop_back();
      curl_->easy_reset(static_cast<CURL*>(handle));  // options go, the connection cache stays
      return handle;
    }
  }
  return curl_->easy_init();
}

void S3Client::return_handle(void* handle) const {
  std::lock_guard lock(pool_mutex_);
  pool_.push_back(handle);
}

S3Stats S3Client::stats() const {
  return S3Stats{counters_.list.load(),    counters_.get.load(),     counters_.range.load(), counters_.head.load(),
                 counters_.put.load(),     counters_.retries.load(), counters_.received.load(), counters_.sent.load()};
}

Result<S3Client::Response> S3Client::execute(const Request& request) const {
  const bool path_style = config_.use_path_style(request.bucket);
  const std::string host = path_style ? endpoint_.authority() : request.bucket + "." + endpoint_.authority();
  const std::string encoded_key = uri_encode(request.key, true);
  const std::string path = path_style ? "/" + request.bucket + (request.key.empty() ? "" : "/" + encoded_key) : "/" + encoded_key;
  std::string url = fmt::format("{}://{}{}", endpoint_.scheme, host, path);
  for (size_t i = 0; i < request.query.size(); ++i)
    url += fmt::format("{}{}={}", i == 0 ? '?' : '&', uri_encode(request.query[i].first, false),
                       uri_encode(request.query[i].second, false));
  const std::string payload_sha256 = request.kind == Kind::Put ? sha256_hex(request.body) : std::string(kEmptyPayloadSha256);
  const SigningKeyParts signing_key{config_.credentials.access_key_id, config_.credentials.secret_access_key,
                                    config_.region, "s3"};

  std::atomic<uint64_t>& sent_counter = request.kind == Kind::List    ? counters_.list
                                        : request.kind == Kind::Get   ? counters_.get
                                        : request.kind == Kind::Range ? counters_.range
                                        : request.kind == Kind::Head  ? counters_.head
                                                                      : counters_.put;
  const auto deadline = Clock::now() + config_.request_timeout * config_.max_attempts;
  thread_local std::minstd_rand jitter{std::random_device{}()};

  std::string last_failure = "no attempt was made in time";
  bool last_timed_out = true;
  int attempts = 0;
  while (attempts < config_.max_attempts) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      last_timed_out = true;
      break;
    }
    ++attempts;
    sent_counter.fetch_add(1);
    if (attempts > 1) counters_.retries.fetch_add(1);

    // Signed afresh each time: x-amz-date moves on while retries wait.
    RequestToSign to_sign{std::string(method(request.kind)), path, request.query, request.headers, payload_sha256};
    const std::string amz_date = amz_date_now();
    to_sign.headers.emplace_back("host", host);
    to_sign.headers.emplace_back("x-amz-date", amz_date);
    to_sign.headers.emplace_back("x-amz-content-sha256", payload_sha256);
    if (!config_.credentials.session_token.empty())
      to_sign.headers.emplace_back("x-amz-security-token", config_.credentials.session_token);
    const Signature signature = sign_v4(to_sign, signing_key, amz_date);

    curl_slist* header_list = nullptr;
    for (const auto& [name, value] : to_sign.headers)
      header_list = curl_->slist_append(header_list, fmt::format("{}: {}", name, value).c_str());
    header_list = curl_->slist_append(header_list, ("Authorization: " + signature.authorization).c_str());
    header_list = curl_->slist_append(header_list, "Expect:");  // no 100-continue round trip before a PUT's body
    if (request.kind == Kind::Put) header_list = curl_->slist_append(header_list, "Content-Type: application/octet-stream");

    Transfer transfer;
    transfer.sink = request.sink;
    transfer.body_limit = request.body_limit;
    char curl_error[CURL_ERROR_SIZE] = "";
    const auto timeout = std::min(config_.request_timeout, left);
    CURL* curl = static_cast<CURL*>(take_handle());
    if (curl == nullptr) {
      curl_->slist_free_all(header_list);
      return fail(failure(request, "cannot start a transfer (curl_easy_init failed)"));
    }
    curl_->easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_->easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_->easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);  // keys are sent as signed: no dot-segment folding
    curl_->easy_setopt(curl, CURLOPT_HTTPHEADER, header_list);
    curl_->easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM: calls come from many threads
    curl_->easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_error);
    curl_->easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, long(std::min(config_.connect_timeout, timeout).count()));
    curl_->easy_setopt(curl, CURLOPT_TIMEOUT_MS, long(timeout.count()));
    curl_->easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, config_.low_speed_bytes_per_second);
    curl_->easy_setopt(curl, CURLOPT_LOW_SPEED_TIME,
                     long(std::max<int64_t>(1, std::min<int64_t>(config_.low_speed_window.count(),
                                                                 std::chrono::duration_cast<std::chrono::seconds>(timeout).count()))));
    curl_->easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_->easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
    curl_->easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_->easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
    if (request.kind == Kind::Head) curl_->easy_setopt(curl, CURLOPT_NOBODY, 1L);
    if (request.kind == Kind::Put) {
      curl_->easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "PUT");
      curl_->easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
      curl_->easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.size()));
    }
    const CURLcode code = curl_->easy_perform(curl);
    return_handle(curl);
    curl_->slist_free_all(header_list);
    counters_.received.fetch_add(transfer.response.body.size() + transfer.response.sink_bytes);
    if (request.kind == Kind::Put) counters_.sent.fetch_add(request.body.size());

    Response& response = transfer.response;
    if (transfer.body_too_big)
      return fail(failure(request, fmt::format("HTTP {} with a body larger than the {} bytes allowed for this request",
                                               response.status, request.body_limit)));
    if (transfer.sink_overflow) {
      last_failure = fmt::format("the server sent more than the {} bytes asked for", request.sink.size());
      last_timed_out = false;
    } else if (code != CURLE_OK) {
      // curl's own text names the host and what happened, never a header value.
      last_failure = curl_error[0] != '\0' ? std::string(curl_error) : std::string(curl_->easy_strerror(code));
      last_timed_out = code == CURLE_OPERATION_TIMEDOUT;
      if (!retryable_transport(code)) return fail(failure(request, last_failure));
    } else if (response.status >= 200 && response.status < 300) {
      const auto untrusted = request.check ? request.check(response) : std::nullopt;
      if (!untrusted) return std::move(response);
      last_failure = *untrusted;
      last_timed_out = false;
    } else {
      const auto s3_code = xml_text(response.body, "Code");
      if (!retryable_answer(response.status, s3_code.value_or(""))) return std::move(response);
      last_failure = http_failure(response, config_);
      last_timed_out = false;
    }
    if (attempts == config_.max_attempts) break;
    // Full jitter: uniform in [0, min(cap, base × 2^(attempt - 1))], never past the deadline.
    const auto ceiling = std::min<int64_t>(config_.backoff_cap.count(), config_.backoff_base.count() << std::min(attempts - 1, 20));
    const auto pause = std::chrono::milliseconds(std::uniform_int_distribution<int64_t>(0, std::max<int64_t>(0, ceiling))(jitter));
    const auto until_deadline = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    std::this_thread::sleep_for(std::min(pause, until_deadline));
  }
  return fail(failure(request,
                      fmt::format("{} after {} attempt{}{}", last_failure, attempts, attempts == 1 ? "" : "s",
                                  last_timed_out ? fmt::format(" (time limit {} ms per attempt)", config_.request_timeout.count()) : ""),
                      last_timed_out ? ErrorCode::Timeout : ErrorCode::Io));
}

Result<std::vector<S3ListedObject>> S3Client::list_objects(std::string_view bucket, std::string_view prefix,
                                                           std::string_view start_after, size_t max_objects) const {
  std::vector<S3ListedObject> out;
  std::string continuation;
  size_t page_keys = config_.list_max_keys > 0 ? size_t(config_.list_max_keys) : 0;  // 0: S3's own (1000)
  if (max_objects > 0 && (page_keys == 0 || max_objects < page_keys)) page_keys = max_objects;
  const auto deadline = Clock::now() + config_.list_time_limit;
  uint64_t listing_bytes = 0;
  for (int pages = 0;; ++pages) {
    Request request{.kind = Kind::List, .bucket = std::string(bucket), .body_limit = kListPageLimit};
    request.object = prefix.empty() ? fmt::format("s3://{}", bucket) : fmt::format("s3://{}/{}", bucket, prefix);
    if (pages == config_.list_max_pages)
      return fail(failure(request, fmt::format("the listing goes on past {} pages", config_.list_max_pages)));
    if (pages > 0 && Clock::now() >= deadline)
      return fail(failure(request, fmt::format("the listing goes on past its time limit of {} ms ({} pages)",
                                               config_.list_time_limit.count(), pages),
                          ErrorCode::Timeout));
    request.query = {{"list-type", "2"}, {"prefix", std::string(prefix)}};
    if (page_keys > 0) request.query.emplace_back("max-keys", std::to_string(page_keys));
    // StartAfter picks the first page; the continuation token carries on from there.
    if (!continuation.empty()) request.query.emplace_back("continuation-token", continuation);
    else if (!start_after.empty()) request.query.emplace_back("start-after", std::string(start_after));
    auto response = execute(request);
    if (!response) return fail(response.error());
    if (response->status != 200) return fail(failure(request, http_failure(*response, config_)));
    listing_bytes += response->body.size();
    if (listing_bytes > kListingBytesLimit)
      return fail(failure(request, fmt::format("the listing's pages come to more than {} bytes", kListingBytesLimit)));
    auto page = parse_list_objects_v2(response->body);
    if (!page) return fail(failure(request, page.error().message));
    for (auto& object : page->objects) out.push_back(std::move(object));
    if (max_objects > 0 && out.size() >= max_objects) {
      out.resize(max_objects);
      break;
    }
    if (!page->truncated) break;
    if (page->next_token.empty() || page->next_token == continuation)
      return fail(failure(request, "a truncated listing gives no new continuation token"));
    continuation = std::move(page->next_token);
  }
  return out;
}

Result<std::string> S3Client::get_object(std::string_view bucket, std::string_view key, uint64_t max_bytes) const {
  Request request{.kind = Kind::Get, .bucket = std::string(bucket), .key = std::string(key),
                  .body_limit = size_t(std::min<uint64_t>(max_bytes, SIZE_MAX))};
  request.object = fmt::format("s3://{}/{}", bucket, key);
  // Asks S3 for the checksum it keeps (objects this client wrote have a CRC32C), to check the bytes end to end.
  request.headers = {{"x-amz-checksum-mode", "ENABLED"}};
  request.check = [](const Response& r) -> std::optional<std::string> {
    if (const auto length = parse_u64(r.header("content-length")); length && *length != r.body.size())
      return fmt::format("short body: {} of {} bytes", r.body.size(), *length);
    // A multipart object's checksum is of its parts ("…-N"): not the CRC32C of the bytes.
    if (const std::string crc = r.header("x-amz-checksum-crc32c"); !crc.empty() && crc.find('-') == std::string::npos &&
                                                                     crc != crc32c_base64(r.body))
      return fmt::format("the body's CRC32C does not match x-amz-checksum-crc32c {}", crc);
    return std::nullopt;
  };
  auto response = execute(request);
  if (!response) return fail(response.error());
  if (response->status == 404) return fail(failure(request, "no such file (" + http_failure(*response, config_) + ")"));
  if (response->status != 200) return fail(failure(request, http_failure(*response, config_)));
  return std::move(response->body);
}

Result<void> S3Client::get_range(std::string_view bucket, std::string_view key, uint64_t offset,
                                 std::span<std::byte> out, std::string_view if_match_etag) const {
  if (out.empty()) return {};
  Request request{.kind = Kind::Range, .bucket = std::string(bucket), .key = std::string(key), .sink = out};
  request.object = fmt::format("s3://{}/{}", bucket, key);
  const uint64_t last = offset + out.size() - 1;
  request.headers = {{"range", fmt::format("bytes={}-{}", offset, last)}};
  if (!if_match_etag.empty()) request.headers.emplace_back("if-match", std::string(if_match_etag));
  request.check = [&](const Response& r) -> std::optional<std::string> {
    const std::string range = r.header("content-range");
    if (!range.starts_with(fmt::format("bytes {}-{}/", offset, last)))
      return fmt::format("Content-Range '{}' is not the bytes {}-{} asked for", range, offset, last);
    if (r.sink_bytes != out.size())
      return fmt::format("truncated ranged read: {} of {} bytes at offset {}", r.sink_bytes, out.size(), offset);
    return std::nullopt;
  };
  auto response = execute(request);
  if (!response) return fail(response.error());
  if (response->status == 206) return {};
  if (response->status == 412)
    return fail(Error::corrupt(request.object, offset,
                               fmt::format("the object changed since it was opened (it is no longer ETag {})", if_match_etag)));
  if (response->status == 404) return fail(failure(request, "no such file (" + http_failure(*response, config_) + ")"));
  if (response->status == 200)
    return fail(failure(request, fmt::format("the server ignored the range {}-{} (HTTP 200)", offset, last)));
  return fail(failure(request, http_failure(*response, config_)));
}

Result<std::optional<S3ObjectStart>> S3Client::get_start(std::string_view bucket, std::string_view key,
                                                         uint64_t max_bytes) const {
  if (max_bytes == 0) return fail(Error::invalid_argument("get_start needs at least one byte"));
  // A server that ignores the range sends the whole object: held up to the whole-object bound.
  Request request{.kind = Kind::Get, .bucket = std::string(bucket), .key = std::string(key),
                  .body_limit = size_t(std::max(max_bytes, kWholeObjectLimit))};
  request.object = fmt::format("s3://{}/{}", bucket, key);
  request.headers = {{"range", fmt::format("bytes=0-{}", max_bytes - 1)}};
  // "bytes 0-<last>/<size>": the answer must be the start asked for, all of it.
  auto total_of = [max_bytes](const Response& r) -> std::optional<uint64_t> {
    const std::string range = r.header("content-range");
    const size_t slash = range.rfind('/');
    if (!range.starts_with("bytes 0-") || slash == std::string::npos) return std::nullopt;
    const auto last = parse_u64(std::string_view(range).substr(8, slash - 8));
    const auto total = parse_u64(std::string_view(range).substr(slash + 1));
    if (!last || !total || *last + 1 != std::min(*total, max_bytes)) return std::nullopt;
    return total;
  };
  request.check = [&](const Response& r) -> std::optional<std::string> {
    if (r.status == 200) {  // a server that ignores ranges sends the whole object
      if (const auto length = parse_u64(r.header("content-length")); length && *length != r.body.size())
        return fmt::format("short body: {} of {} bytes", r.body.size(), *length);
      return std::nullopt;
    }
    const auto total = total_of(r);
    if (!total) return fmt::format("Content-Range '{}' is not the start 0-{} asked for", r.header("content-range"), max_bytes - 1);
    if (r.body.size() != std::min(*total, max_bytes))
      return fmt::format("truncated ranged read: {} of {} bytes at offset 0", r.body.size(), std::min(*total, max_bytes));
    return std::nullopt;
  };
  auto response = execute(request);
  if (!response) return fail(response.error());
  if (response->status == 404) return std::optional<S3ObjectStart>();
  if (response->status == 416) {  // an empty object has no byte 0
    auto head = head_object(bucket, key);
    if (!head) return fail(head.error());
    if (!*head) return std::optional<S3ObjectStart>();
    return std::optional<S3ObjectStart>(S3ObjectStart{std::move(**head), {}});
  }
  if (response->status != 200 && response->status != 206) return fail(failure(request, http_failure(*response, config_)));
  const uint64_t size = response->status == 200 ? response->body.size() : *total_of(*response);
  std::string bytes = std::move(response->body);
  if (bytes.size() > max_bytes) bytes.resize(max_bytes);
  return std::optional<S3ObjectStart>(S3ObjectStart{S3ObjectHead{size, response->header("etag")}, std::move(bytes)});
}

Result<std::optional<S3ObjectHead>> S3Client::head_object(std::string_view bucket, std::string_view key) const {
  Request request{.kind = Kind::Head, .bucket = std::string(bucket), .key = std::string(key)};
  request.object = fmt::format("s3://{}/{}", bucket, key);
  auto response = execute(request);
  if (!response) return fail(response.error());
  if (response->status == 404) return std::optional<S3ObjectHead>();
  if (response->status != 200) return fail(failure(request, http_failure(*response, config_)));
  const auto size = parse_u64(response->header("content-length"));
  if (!size) return fail(failure(request, "HEAD gave no Content-Length"));
  return std::optional<S3ObjectHead>(S3ObjectHead{*size, response->header("etag")});
}

Result<void> S3Client::put_object(std::string_view bucket, std::string_view key, std::string_view bytes) const {
  Request request{.kind = Kind::Put, .bucket = std::string(bucket), .key = std::string(key), .body = bytes};
  request.object = fmt::format("s3://{}/{}", bucket, key);
  request.headers = {{"x-amz-checksum-crc32c", crc32c_base64(bytes)}};
  auto response = execute(request);
  if (!response) return fail(response.error());
  if (response->status != 200) return fail(failure(request, http_failure(*response, config_)));
  return {};
}

}  // namespace vigil::storage
