// Training modes, numbered exactly like smdebug's ModeKeys (and the C ABI's vigil_mode).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <vigil/sdk/messages.hpp>

namespace vigil {

enum class Mode : int32_t { Train = 1, Eval = 2, Predict = 3, Global = 4 };

inline constexpr Mode kAllModes[] = {Mode::Train, Mode::Eval, Mode::Predict, Mode::Global};

// smdebug's ModeKeys names ("TRAIN", ...): the SDK's one table.
constexpr std::string_view mode_name(Mode m) { return sdk::mode_name(static_cast<vigil_mode>(m)); }

// Accepts the names smdebug writes ("TRAIN", ...) with surrounding whitespace, like smdebug's reader.
std::optional<Mode> parse_mode_name(std::string_view name);
std::optional<Mode> mode_from_int(int64_t value);

}  // namespace vigil
