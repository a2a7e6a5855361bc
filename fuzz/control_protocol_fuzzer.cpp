// The job's control socket's framing and messages (host/remote_debug/control_protocol.*): the input is
// the byte stream a client (any local user the socket admits) sends. Its first byte chooses how the
// stream is cut into the reads the server would see; the rest is the stream. Frames come out the same
// whatever the cut, never over the payload limit, each the bytes it was read from; a request frame's
// payload is parsed as the server parses it and window sizes and exit statuses decode or are refused.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_check.h"
#include "remote_debug/control_protocol.h"

using namespace vigil::remote_debug;

namespace {

struct Decoded {
  std::vector<Frame> frames;
  bool failed = false;
};

// Feeds `stream` in reads of `chunk` bytes (0: all at once), taking out every complete frame after each.
Decoded decode(std::string_view stream, size_t chunk) {
  Decoded out;
  FrameDecoder decoder;
  size_t at = 0;
  do {
    const size_t n = chunk == 0 ? stream.size() - at : std::min(chunk, stream.size() - at);
    decoder.feed(stream.substr(at, n));
    at += n;
    for (;;) {
      auto frame = decoder.next();
      if (!frame) {
        FUZZ_CHECK(!frame.error().message.empty());
        out.failed = true;
        return out;
      }
      if (!*frame) break;
      out.frames.push_back(std::move(**frame));
    }
  } while (at < stream.size());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = data[0] % 17;  // 0: whole, else reads of 1..16 bytes
  const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);

  const Decoded cut = decode(stream, chunk);
  const Decoded whole = decode(stream, 0);
  FUZZ_CHECK(cut.failed == whole.failed);
  FUZZ_CHECK(cut.frames.size() == whole.frames.size());

  std::string reencoded;
  for (size_t i = 0; i < cut.frames.size(); ++i) {
    const Frame& f = cut.frames[i];
    FUZZ_CHECK(f.type == whole.frames[i].type && f.payload == whole.frames[i].payload);
    FUZZ_CHECK(f.payload.size() <= kMaxFramePayload);
    FUZZ_CHECK(frame_type_name(f.type) != "unknown");
    append_frame(reencoded, f.type, f.payload);
    switch (f.type) {
      case FrameType::Request:
      case FrameType::Reply: {
        const nlohmann::json j = nlohmann::json::parse(f.payload, nullptr, false);
        if (j.is_object()) (void)j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        break;
      }
      case FrameType::WindowSize: {
        const auto size = decode_window_size(f.payload);
        FUZZ_CHECK(size.has_value() == (f.payload.size() == 4));
        if (size) FUZZ_CHECK(decode_window_size(encode_window_size(*size)).has_value());
        break;
      }
      case FrameType::Exit: {
        const auto status = decode_exit_status(f.payload);
        FUZZ_CHECK(status.has_value() == (f.payload.size() == 4));
        if (status) FUZZ_CHECK(decode_exit_status(encode_exit_status(*status)) == status);
        break;
      }
      default:
        break;
    }
  }
  // The frames are the stream's bytes: what they re-encode to is the stream's start.
  FUZZ_CHECK(stream.substr(0, reencoded.size()) == reencoded);
  if (!cut.failed) FUZZ_CHECK(stream.size() - reencoded.size() < kFrameHeaderSize + kMaxFramePayload);
  return 0;
}
