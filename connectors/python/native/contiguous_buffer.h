// The bytes behind a Python buffer-protocol object, as one contiguous range.
//
// pybind11's py::buffer::request() accepts strided exporters (memoryview(b)[::2], a reversed
// view), whose bytes are not one range from `ptr`: reading or writing `size * itemsize` bytes
// from there would take the wrong bytes, or run past the object. Every buffer the binding
// hands to the engine or the plugin's workers is therefore requested contiguous, and a strided
// one is refused with the exporter's own error (BufferError from a memoryview, ValueError from
// numpy; TypeError for an object that is no buffer at all).
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <memory>

namespace larder_py {

namespace py = pybind11;

// The export of `obj`'s bytes, held (the object cannot be resized or freed under it) until the
// returned buffer_info is destroyed, which must happen with the GIL held. Throws
// py::error_already_set (the exporter's error) when `obj` is not a contiguous buffer, or not
// writable and `writable` is asked.
inline py::buffer_info ContiguousBuffer(py::handle obj, bool writable) {
  auto view = std::make_unique<Py_buffer>();
  const int flags = PyBUF_ANY_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(obj.ptr(), view.get(), flags) != 0) throw py::error_already_set();
  struct Release {  // the export, until buffer_info owns the view (its constructor allocates)
    Py_buffer* v;
    ~Release() {
      if (v != nullptr) PyBuffer_Release(v);
    }
  } guard{view.get()};
  py::buffer_info info(view.get());  // owns the view: releases the export when destroyed
  guard.v = nullptr;
  view.release();
  return info;
}

// How many bytes a buffer from ContiguousBuffer spans.
inline size_t ByteSize(const py::buffer_info& b) {
  return static_cast<size_t>(b.size * b.itemsize);
}

}  // namespace larder_py
