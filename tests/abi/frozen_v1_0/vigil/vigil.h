/* Vigil rule-plugin C ABI, version 1: the umbrella header. */
#ifndef VIGIL_VIGIL_H
#define VIGIL_VIGIL_H

#include "vigil/platform.h"
#include "vigil/version.h"
#include "vigil/status.h"
#include "vigil/tensor.h"
#include "vigil/host.h"
#include "vigil/plugin.h"

#endif /* VIGIL_VIGIL_H */
