/* vigil_tensor must have exactly the layout of DLPack 1.x's DLManagedTensorVersioned, so a view can
 * be handed to any DLPack consumer. Debian's dlpack header is 0.6 and has no versioned struct, so
 * the expected offsets are written out from DLPack 1.x's dlpack.h (64-bit):
 *
 *   typedef struct { uint32_t major; uint32_t minor; } DLPackVersion;              size 8
 *   struct DLManagedTensorVersioned {
 *     DLPackVersion version;                                    offset  0
 *     void *manager_ctx;                                        offset  8
 *     void (*deleter)(struct DLManagedTensorVersioned *self);   offset 16
 *     uint64_t flags;                                           offset 24
 *     DLTensor dl_tensor;                                       offset 32   (size 48)
 *   };                                                          size 80, align 8
 *   DLTensor: data 0, device 8 (DLDevice {int32 device_type; int32 device_id}), ndim 16 (int32),
 *             dtype 20 (DLDataType {uint8 code; uint8 bits; uint16 lanes}), shape 24, strides 32,
 *             byte_offset 40; size 48.
 *   DLPACK_FLAG_BITMASK_READ_ONLY = 1 << 0, DLPACK_FLAG_BITMASK_IS_COPIED = 1 << 1, kDLBool = 6.
 *
 * The checks are static assertions (the build fails when the layout drifts); the program also
 * prints the layout it checked so that the test log shows it. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <vigil/tensor.h>

#define MEMBER_SIZE(T, f) sizeof(((T *)0)->f)

#if UINTPTR_MAX != UINT64_MAX
#error "the expected DLManagedTensorVersioned offsets below are those of a 64-bit platform"
#endif

/* DLPackVersion version */
_Static_assert(offsetof(vigil_tensor, dlpack_version) == 0, "dlpack_version must be at offset 0");
_Static_assert(MEMBER_SIZE(vigil_tensor, dlpack_version) == 8, "dlpack_version must be {u32, u32}");
_Static_assert(offsetof(vigil_tensor, dlpack_version.major) == 0, "dlpack_version.major must be at offset 0");
_Static_assert(MEMBER_SIZE(vigil_tensor, dlpack_version.major) == 4, "dlpack_version.major must be a u32");
_Static_assert(offsetof(vigil_tensor, dlpack_version.minor) == 4, "dlpack_version.minor must be at offset 4");
_Static_assert(MEMBER_SIZE(vigil_tensor, dlpack_version.minor) == 4, "dlpack_version.minor must be a u32");
/* void *manager_ctx */
_Static_assert(offsetof(vigil_tensor, manager_ctx) == 8, "manager_ctx must be at offset 8");
_Static_assert(MEMBER_SIZE(vigil_tensor, manager_ctx) == 8, "manager_ctx must be a pointer");
/* void (*deleter)(self) */
_Static_assert(offsetof(vigil_tensor, deleter) == 16, "deleter must be at offset 16");
_Static_assert(MEMBER_SIZE(vigil_tensor, deleter) == 8, "deleter must be a function pointer");
/* uint64_t flags */
_Static_assert(offsetof(vigil_tensor, flags) == 24, "flags must be at offset 24");
_Static_assert(MEMBER_SIZE(vigil_tensor, flags) == 8, "flags must be a u64");
/* DLTensor dl_tensor */
_Static_assert(offsetof(vigil_tensor, dl_tensor) == 32, "dl_tensor must be at offset 32");
_Static_assert(MEMBER_SIZE(vigil_tensor, dl_tensor) == 48, "dl_tensor must be a 48-byte DLTensor");
_Static_assert(sizeof(vigil_tensor) == 80, "vigil_tensor must be 80 bytes, like DLManagedTensorVersioned");
_Static_assert(_Alignof(vigil_tensor) == 8, "vigil_tensor must be 8-byte aligned");

/* DLTensor (unchanged from DLPack 0.6 to 1.x) */
_Static_assert(offsetof(DLTensor, data) == 0, "DLTensor.data");
_Static_assert(offsetof(DLTensor, device) == 8 && sizeof(DLDevice) == 8, "DLTensor.device");
_Static_assert(offsetof(DLDevice, device_type) == 0 && MEMBER_SIZE(DLDevice, device_type) == 4, "DLDevice.device_type");
_Static_assert(offsetof(DLDevice, device_id) == 4 && MEMBER_SIZE(DLDevice, device_id) == 4, "DLDevice.device_id");
_Static_assert(offsetof(DLTensor, ndim) == 16 && MEMBER_SIZE(DLTensor, ndim) == 4, "DLTensor.ndim");
_Static_assert(offsetof(DLTensor, dtype) == 20 && sizeof(DLDataType) == 4, "DLTensor.dtype");
_Static_assert(offsetof(DLDataType, code) == 0 && MEMBER_SIZE(DLDataType, code) == 1, "DLDataType.code");
_Static_assert(offsetof(DLDataType, bits) == 1 && MEMBER_SIZE(DLDataType, bits) == 1, "DLDataType.bits");
_Static_assert(offsetof(DLDataType, lanes) == 2 && MEMBER_SIZE(DLDataType, lanes) == 2, "DLDataType.lanes");
_Static_assert(offsetof(DLTensor, shape) == 24, "DLTensor.shape");
_Static_assert(offsetof(DLTensor, strides) == 32, "DLTensor.strides");
_Static_assert(offsetof(DLTensor, byte_offset) == 40 && MEMBER_SIZE(DLTensor, byte_offset) == 8, "DLTensor.byte_offset");
_Static_assert(sizeof(DLTensor) == 48, "DLTensor size");

/* DLPack 1.x values we mirror under our own names */
_Static_assert(VIGIL_TENSOR_FLAG_READ_ONLY == 1u << 0, "= DLPACK_FLAG_BITMASK_READ_ONLY");
_Static_assert(VIGIL_TENSOR_FLAG_IS_COPIED == 1u << 1, "= DLPACK_FLAG_BITMASK_IS_COPIED");
_Static_assert(VIGIL_DL_BOOL == 6, "= kDLBool");
_Static_assert(kDLCPU == 1 && kDLInt == 0 && kDLUInt == 1 && kDLFloat == 2 && kDLBfloat == 4 && kDLComplex == 5,
               "DLPack device and type codes");

int main(void) {
  printf("vigil_tensor size %zu align %zu: dlpack_version %zu, manager_ctx %zu, deleter %zu, flags %zu, dl_tensor %zu\n",
         sizeof(vigil_tensor), (size_t)_Alignof(vigil_tensor), offsetof(vigil_tensor, dlpack_version),
         offsetof(vigil_tensor, manager_ctx), offsetof(vigil_tensor, deleter), offsetof(vigil_tensor, flags),
         offsetof(vigil_tensor, dl_tensor));
  printf("matches DLPack 1.x DLManagedTensorVersioned (64-bit)\n");
  return 0;
}
