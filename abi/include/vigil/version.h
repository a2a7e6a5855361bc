/* Vigil rule-plugin C ABI: version numbers and struct-size checks.
 *
 * Major: must match exactly (it is also the suffix of the entry symbol, vigil_plugin_entry_v1).
 * Minor: append-only growth. A host accepts any minor from a plugin; a plugin built against a
 * newer minor checks the host's struct sizes (VIGIL_HAS_FIELD) before using newer slots.
 *
 * Who decides: the host, from vigil_plugin_entry.abi.major, the one version check that refuses a
 * plugin (VIGIL_E_VERSION_MISMATCH); the symbol's _v1 only keeps a library of another major from
 * being found at all. A plugin that cannot use the host (too old a minor, say) declines it in its
 * entry function, which gets the host's major and minor and returns NULL: before init, with nothing
 * to undo. The SDK's entry does so for another major. (init may also fail with
 * VIGIL_E_VERSION_MISMATCH and a message; the host reports that as the same refusal.) */
#ifndef VIGIL_VERSION_H
#define VIGIL_VERSION_H

#include "vigil/platform.h"

#define VIGIL_ABI_MAJOR 1
#define VIGIL_ABI_MINOR 5 /* 1.1: extra rule parameters (VIGIL_RULEF_EXTRA_PARAMS); 1.2: rule profiles,
                           not_judged, invoke_at_time; 1.3: float8 tensor views (tensor.h); 1.4: rule
                           preparation (VIGIL_RULE_PREPARER_ID, plugin.h); 1.5: step_reductions, a
                           step's reductions in one call (host.h) */
#define VIGIL_ABI_PATCH 0

VIGIL_EXTERN_C_BEGIN

typedef struct vigil_version {
  uint16_t major;
  uint16_t minor;
  uint32_t patch;
} vigil_version;

VIGIL_EXTERN_C_END

/* True when `ptr` (a struct starting with uint32_t struct_size) is large enough to hold `field`:
 * how a reader tells whether an older writer of that struct knew the field. */
#define VIGIL_HAS_FIELD(ptr, type, field) \
  ((ptr) != NULL && (size_t)(ptr)->struct_size >= offsetof(type, field) + sizeof(((type *)0)->field))

#endif /* VIGIL_VERSION_H */
