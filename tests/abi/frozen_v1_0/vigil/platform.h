/* Vigil rule-plugin C ABI: platform macros. Pure C (C99/C11) and C++ compatible. */
#ifndef VIGIL_PLATFORM_H
#define VIGIL_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define VIGIL_EXTERN_C_BEGIN extern "C" {
#define VIGIL_EXTERN_C_END }
#else
#define VIGIL_EXTERN_C_BEGIN
#define VIGIL_EXTERN_C_END
#endif

/* Calling convention: empty on Linux; exists so a Windows port never changes a signature. */
#define VIGIL_CALL

#if defined(_WIN32)
#define VIGIL_EXPORT __declspec(dllexport)
#else
#define VIGIL_EXPORT __attribute__((visibility("default")))
#endif

#endif /* VIGIL_PLATFORM_H */
