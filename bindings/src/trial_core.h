// Opening and waiting on a vigil::Trial from Python: the GIL is released and the wait is sliced so
// that a pending signal (Ctrl-C) interrupts it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "trial/trial.h"

namespace vigil::python {

std::shared_ptr<Trial> open_trial_interruptible(const std::string& path, std::optional<int64_t> begin,
                                                std::optional<int64_t> end);
void wait_interruptible(Trial& trial, const std::vector<int64_t>& steps, Mode mode);

}  // namespace vigil::python
