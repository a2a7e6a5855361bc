/* A test-only host extension: the loader tests register it, and the test plugins that ask for it
 * report their init and deinit calls through it. */
#ifndef VIGIL_TEST_PROBE_EXTENSION_H
#define VIGIL_TEST_PROBE_EXTENSION_H

#include <vigil/vigil.h>

#define VIGIL_TEST_PROBE_EXTENSION_ID "vigil.test-probe/1"
/* An id no host offers: a plugin asking for it must get NULL and carry on. */
#define VIGIL_TEST_MISSING_EXTENSION_ID "vigil.no-such-extension/1"

typedef struct vigil_test_probe_ext {
  uint32_t struct_size;
  void(VIGIL_CALL *init_called)(const char *plugin_id);
  void(VIGIL_CALL *deinit_called)(const char *plugin_id);
} vigil_test_probe_ext;

#endif /* VIGIL_TEST_PROBE_EXTENSION_H */
