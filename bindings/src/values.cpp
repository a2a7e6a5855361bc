// Host buffers as numpy arrays (zero-copy, read-only) and as DLPack capsules; numpy dtypes <->
// Vigil's element types.
#include <dlpack/dlpack.h>
#include <vigil/sdk/half.hpp>
#include <vigil/tensor.h>

#include <cstring>

#include "bindings.h"
#include "plugin_host/host_services.h"
#include "trial/element_access.h"

namespace vigil::python {

namespace {

// A valid address for empty arrays, so that they are views (with the buffer as base) too.
alignas(16) const std::byte kEmpty[16] = {};

void make_read_only(py::array& a) {
  py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
}

std::vector<py::ssize_t> c_strides(const std::vector<int64_t>& shape, size_t item) {
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t s = static_cast<py::ssize_t>(item);
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= static_cast<py::ssize_t>(shape[i]);
  }
  return strides;
}


// What a DLPack capsule owns: the buffer (kept alive) and the shape array.
struct DlpackHolder {
  DLManagedTensor managed{};
  std::shared_ptr<HostBuffer> buffer;
  std::vector<int64_t> shape;
};

void dlpack_deleter(DLManagedTensor* self) { delete static_cast<DlpackHolder*>(self->manager_ctx); }

void dlpack_capsule_destructor(PyObject* capsule) {
  // A consumer renames the capsule "used_dltensor" and takes over the deleter; otherwise we free.
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (managed && managed->deleter) managed->deleter(managed);
  } else {
    PyErr_Clear();
  }
}

py::capsule dlpack_capsule(const std::shared_ptr<HostBuffer>& b) {
  if (b->dtype == ElementType::String) throw py::type_error("string tensors have no DLPack form");
  auto holder = std::make_unique<DlpackHolder>();
  holder->buffer = b;
  holder->shape = b->shape;
  DLTensor& t = holder->managed.dl_tensor;
  t.data = const_cast<std::byte*>(b->data ? b->data : kEmpty);
  t.device = {kDLCPU, 0};
  t.ndim = static_cast<int32_t>(holder->shape.size());
  t.dtype = plugin_host::dl_type(b->dtype);
  t.shape = holder->shape.data();
  t.strides = nullptr;  // C order
  t.byte_offset = 0;
  holder->managed.manager_ctx = holder.get();
  holder->managed.deleter = dlpack_deleter;
  PyObject* cap = PyCapsule_New(&holder->managed, "dltensor", dlpack_capsule_destructor);
  if (!cap) throw py::error_already_set();
  holder.release();
  return py::reinterpret_steal<py::capsule>(cap);
}

}  // namespace

std::optional<Mode> mode_arg(int mode) { return mode_from_int(mode); }

Mode mode_or_global(int mode) { return mode_from_int(mode).value_or(Mode::Global); }

std::shared_ptr<HostBuffer> buffer_of(const TensorValue& value) {
  auto b = std::make_shared<HostBuffer>();
  b->dtype = value.dtype();
  b->shape = value.shape();
  if (value.is_string()) {
    b->strings = value.string_values();
    return b;
  }
  // Share the value's own owner: the array then points into the host's record buffer.
  auto keep = std::make_shared<TensorValue>(value);
  b->data = keep->bytes().data();
  b->nbytes = keep->bytes().size();
  b->keepalive = std::move(keep);
  return b;
}

py::object numpy_array(const std::shared_ptr<HostBuffer>& b) {
  py::module_ np = py::module_::import("numpy");
  if (b->dtype == ElementType::String) {
    py::list items;
    for (const auto& s : b->strings) items.append(py::str(s));
    py::array a = np.attr("array")(items, py::arg("dtype") = py::str("U"));
    a = a.attr("reshape")(py::tuple(py::cast(b->shape)));
    make_read_only(a);
    return a;
  }
  if (format::widens_to_float32(b->dtype)) {
    // numpy has no bfloat16 or float8: widened to float32, which holds their values exactly.
    const TensorValue widened = detail::widened_to_float32(
        TensorValue::numeric(b->dtype, b->shape, std::span<const std::byte>(b->data, b->nbytes), nullptr));
    py::array_t<float> a(std::vector<py::ssize_t>(b->shape.begin(), b->shape.end()));
    if (!widened.bytes().empty()) std::memcpy(a.mutable_data(), widened.bytes().data(), widened.bytes().size());
    py::array base = a;
    make_read_only(base);
    return base;
  }
  const auto& info = format::element_type_info(b->dtype);
  py::dtype dt(std::string(info.numpy_str));
  std::vector<py::ssize_t> shape(b->shape.begin(), b->shape.end());
  py::array a(dt, shape, c_strides(b->shape, info.item_size), b->data ? b->data : kEmpty, py::cast(b));
  make_read_only(a);
  return a;
}

py::object numpy_scalar(ElementType dtype, double value) {
  py::module_ np = py::module_::import("numpy");
  using ET = ElementType;
  switch (dtype) {
    case ET::Int8: case ET::Int16: case ET::Int32: case ET::Int64:
      return np.attr(std::string(format::element_type_info(dtype).numpy_name).c_str())(
          static_cast<long long>(value));
    case ET::UInt8: case ET::UInt16: case ET::UInt32: case ET::UInt64:
      return np.attr(std::string(format::element_type_info(dtype).numpy_name).c_str())(
          static_cast<unsigned long long>(value));
    case ET::Bool: return np.attr("bool_")(value != 0);
    case ET::BFloat16: return np.attr("float32")(value);
    case ET::Float8E4M3FN: case ET::Float8E5M2: return np.attr("float64")(value);  // unrounded (element_access.h)
    case ET::String: return np.attr("float64")(value);
    default: return np.attr(std::string(format::element_type_info(dtype).numpy_name).c_str())(value);
  }
}

std::optional<ElementType> element_type_of_numpy(const py::dtype& dt) {
  // The small floats numpy lacks: ml_dtypes' dtypes by name, or raw bits whose dtype's metadata names
  // the type (the PyTorch hook's in-place views of bfloat16 and float8 tensors). The name is asked only
  // of those: dtype.name is Python code in numpy, a few microseconds a call, and the hooks call this
  // for every tensor they save.
  std::optional<std::string> name;
  if (const py::object meta = dt.attr("metadata"); !meta.is_none())  // a mappingproxy
    if (const py::object tagged = meta.attr("get")(kElementTypeMetadataKey); !tagged.is_none()) name = py::str(tagged);
  constexpr int kNumpyUserDefinedTypes = 256;  // NPY_USERDEF: type numbers from here are registered dtypes
  if (!name && dt.num() >= kNumpyUserDefinedTypes) name = py::str(dt.attr("name")).cast<std::string>();
  if (name)
    for (const ElementType small : {ElementType::BFloat16, ElementType::Float8E4M3FN, ElementType::Float8E5M2}) {
      const auto& info = format::element_type_info(small);
      if (*name == info.numpy_name && size_t(dt.itemsize()) == info.item_size) return small;
    }
  const char kind = dt.kind();
  const auto size = dt.itemsize();
  using ET = ElementType;
  switch (kind) {
    case 'f':
      if (size == 2) return ET::Float16;
      if (size == 4) return ET::Float32;
      if (size == 8) return ET::Float64;
      break;
    case 'i':
      if (size == 1) return ET::Int8;
      if (size == 2) return ET::Int16;
      if (size == 4) return ET::Int32;
      if (size == 8) return ET::Int64;
      break;
    case 'u':
      if (size == 1) return ET::UInt8;
      if (size == 2) return ET::UInt16;
      if (size == 4) return ET::UInt32;
      if (size == 8) return ET::UInt64;
      break;
    case 'b': return ET::Bool;
    case 'c':
      if (size == 8) return ET::Complex64;
      if (size == 16) return ET::Complex128;
      break;
    case 'U': case 'S': case 'O': return ET::String;
    default: break;
  }
  return std::nullopt;
}

void register_values(py::module_& m) {
  m.attr("ELEMENT_TYPE_METADATA_KEY") = kElementTypeMetadataKey;
  m.def(
      "as_float32",
      [](py::array value) -> py::object {
        const auto type = element_type_of_numpy(value.dtype());
        if (!type || !format::widens_to_float32(*type)) return std::move(value);
        py::array c = py::module_::import("numpy").attr("ascontiguousarray")(value);
        auto buffer = std::make_shared<HostBuffer>();
        buffer->dtype = *type;
        buffer->shape.assign(c.shape(), c.shape() + c.ndim());
        buffer->data = static_cast<const std::byte*>(c.data());
        buffer->nbytes = size_t(c.nbytes());
        return numpy_array(buffer);  // a float32 copy: `c` need not outlive it
      },
      py::arg("value"),
      "A bfloat16 or float8 array (ml_dtypes', or raw bits tagged with ELEMENT_TYPE_METADATA_KEY) as "
      "float32, exactly; any other array as it is.");
  py::class_<HostBuffer, std::shared_ptr<HostBuffer>>(
      m, "HostBuffer",
      "A value where the host keeps it. numpy arrays from Tensor.value() have it as their base; "
      "it offers __dlpack__/__dlpack_device__ (zero-copy) and __array__.")
      .def_property_readonly("address", [](const HostBuffer& b) { return reinterpret_cast<uintptr_t>(b.data); },
                             "The address of the first byte (0 for strings and empty values).")
      .def_property_readonly("nbytes", [](const HostBuffer& b) { return b.nbytes; })
      .def_property_readonly("shape", [](const HostBuffer& b) { return py::tuple(py::cast(b.shape)); })
      .def_property_readonly("dtype",
                             [](const HostBuffer& b) { return std::string(format::element_type_info(b.dtype).numpy_name); })
      .def_property_readonly("owner_use_count", [](const HostBuffer& b) { return b.keepalive.use_count(); },
                             "How many C++ owners share the host buffer (debugging).")
      .def(
          "__array__",
          [](const std::shared_ptr<HostBuffer>& b, py::object dtype) {
            py::object a = numpy_array(b);
            if (!dtype.is_none()) a = a.attr("astype")(dtype);
            return a;
          },
          py::arg("dtype") = py::none())
      .def(
          "__dlpack__", [](const std::shared_ptr<HostBuffer>& b, py::object) { return dlpack_capsule(b); },
          py::arg("stream") = py::none(), "A DLPack capsule over the host buffer (no copy; consumers must not write).")
      .def("__dlpack_device__", [](const HostBuffer&) { return py::make_tuple(static_cast<int>(kDLCPU), 0); })
      .def("__repr__", [](const HostBuffer& b) {
        std::string s = "<vigil HostBuffer " + std::string(format::element_type_info(b.dtype).numpy_name) + " (";
        for (size_t i = 0; i < b.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(b.shape[i]);
        if (b.shape.size() == 1) s += ",";
        return s + ")>";
      });
}

}  // namespace vigil::python
