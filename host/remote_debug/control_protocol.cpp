#include "remote_debug/control_protocol.h"

#include <poll.h>

#include <cstring>

#include <fmt/format.h>

#include "common/os.h"

namespace vigil::remote_debug {

namespace {

void put_u32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(char((v >> shift) & 0xff));
}

uint32_t get_u32(std::string_view bytes) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | uint8_t(bytes[size_t(i)]);
  return v;
}

bool known_type(char c) {
  switch (FrameType(c)) {
    case FrameType::Request:
    case FrameType::Reply:
    case FrameType::Input:
    case FrameType::Output:
    case FrameType::WindowSize:
    case FrameType::Exit:
    case FrameType::Close: return true;
  }
  return false;
}

Error io_error(std::string message) { return Error{.code = ErrorCode::Io, .message = std::move(message)}; }

}  // namespace

std::string_view frame_type_name(FrameType type) {
  switch (type) {
    case FrameType::Request: return "request";
    case FrameType::Reply: return "reply";
    case FrameType::Input: return "input";
    case FrameType::Output: return "output";
    case FrameType::WindowSize: return "window size";
    case FrameType::Exit: return "exit";
    case FrameType::Close: return "close";
  }
  return "unknown";
}

void append_frame(std::string& out, FrameType type, std::string_view payload) {
  if (payload.size() > kMaxFramePayload) payload = payload.substr(0, kMaxFramePayload);
  out.push_back(char(type));
  put_u32(out, uint32_t(payload.size()));
  out.append(payload);
}

std::string encode_frame(FrameType type, std::string_view payload) {
  std::string out;
  append_frame(out, type, payload);
  return out;
}

void append_data_frames(std::string& out, FrameType type, std::string_view data) {
  while (!data.empty()) {
    const size_t n = std::min<size_t>(data.size(), kMaxFramePayload);
    append_frame(out, type, data.substr(0, n));
    data.remove_prefix(n);
  }
}

std::string encode_window_size(WindowSize size) {
  return {char(size.rows >> 8), char(size.rows & 0xff), char(size.cols >> 8), char(size.cols & 0xff)};
}

std::optional<WindowSize> decode_window_size(std::string_view payload) {
  if (payload.size() != 4) return std::nullopt;
  auto u16 = [&](size_t at) { return uint16_t((uint8_t(payload[at]) << 8) | uint8_t(payload[at + 1])); };
  return WindowSize{u16(0), u16(2)};
}

std::string encode_exit_status(int32_t status) {
  std::string out;
  put_u32(out, uint32_t(status));
  return out;
}

std::optional<int32_t> decode_exit_status(std::string_view payload) {
  if (payload.size() != 4) return std::nullopt;
  return int32_t(get_u32(payload));
}

nlohmann::json error_reply(std::string text) { return nlohmann::json{{"Ok", false}, {"Error", std::move(text)}}; }

Result<std::optional<Frame>> FrameDecoder::next() {
  const std::string_view pending = std::string_view(buffer_).substr(start_);
  if (pending.empty()) return std::optional<Frame>{};
  if (!known_type(pending[0]))
    return fail(
        Error::invalid_argument(fmt::format("bad frame: type byte 0x{:02x} is no frame type", uint8_t(pending[0]))));
  if (pending.size() < kFrameHeaderSize) return std::optional<Frame>{};
  const uint32_t length = get_u32(pending.substr(1, 4));
  if (length > kMaxFramePayload)
    return fail(Error::invalid_argument(fmt::format("bad frame: a {} frame of {} bytes (at most {})",
                                                    frame_type_name(FrameType(pending[0])), length, kMaxFramePayload)));
  if (pending.size() < kFrameHeaderSize + length) return std::optional<Frame>{};
  Frame frame{FrameType(pending[0]), std::string(pending.substr(kFrameHeaderSize, length))};
  start_ += kFrameHeaderSize + length;
  if (start_ == buffer_.size()) {
    buffer_.clear();
    start_ = 0;
  } else if (start_ > 4 * kMaxFramePayload) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  return std::optional<Frame>(std::move(frame));
}

Result<void> send_all(int socket_fd, std::string_view bytes) {
  if (const auto sent = os::write_all(socket_fd, bytes); !sent.ok())
    return fail(io_error(fmt::format("cannot write to the control socket: {}", std::strerror(sent.error))));
  return {};
}

Result<Frame> read_frame(int fd, FrameDecoder& decoder, std::optional<std::chrono::steady_clock::time_point> deadline,
                         int wake_fd) {
  char chunk[16 * 1024];
  for (;;) {
    auto frame = decoder.next();
    if (!frame) return fail(frame.error());
    if (*frame) return std::move(**frame);
    pollfd fds[2] = {{fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    const int ready = os::poll(std::span(fds, wake_fd >= 0 ? 2 : 1), deadline);
    if (ready < 0) return fail(io_error(fmt::format("cannot wait on the control socket: {}", std::strerror(errno))));
    if (wake_fd >= 0 && (fds[1].revents & POLLIN))
      return fail(Error{.code = ErrorCode::Cancelled, .message = "the control server is stopping"});
    if (ready == 0) {
      if (deadline && std::chrono::steady_clock::now() >= *deadline)
        return fail(Error{.code = ErrorCode::Timeout, .message = "no complete frame in time"});
      continue;
    }
    const os::IoOutcome got = os::read_some(fd, chunk);
    if (got.bytes > 0) {
      decoder.feed(std::string_view(chunk, got.bytes));
      continue;
    }
    if (got.ok()) return fail(io_error("the connection closed before a complete frame"));
    if (got.would_block()) continue;
    return fail(io_error(fmt::format("cannot read from the control socket: {}", std::strerror(got.error))));
  }
}

}  // namespace vigil::remote_debug
