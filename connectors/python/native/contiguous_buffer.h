// The bytes behind a Python buffer-protocol object, as one contiguous range.
//
// pybind11's py::buffer::request() accepts strided exporters (memoryview(b)[::2], a reversed
// view), whose bytes are not one range from `ptr`: reading or writing `size * itemsize` bytes
// from there would take the wrong bytes, or run past the object. Every buffer the binding
// hands to the engine or the plugin's workers is therefore requested contiguous, and a strided
// one is refused with Python's BufferError.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>

namespace larder_py {

namespace py = pybind11;

// The export of `obj`'s bytes, held (the object cannot be resized or freed under it) until the
// returned buffer_info is destroyed, which must happen with the GIL held. Throws BufferError
// (py::error_already_set) when `obj` is not a contiguous buffer, or not writable and
// `writable` is asked.
inline py::buffer_info ContiguousBuffer(py::handle obj, bool writable) {
  auto* view = new Py_buffer();
  const int flags = PyBUF_ANY_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(obj.ptr(), view, flags) != 0) {
    delete view;
    throw py::error_already_set();
  }
  return py::buffer_info(view);  // owns the view: releases the export when destroyed
}

// How many bytes a buffer from ContiguousBuffer spans.
inline size_t ByteSize(const py::buffer_info& b) {
  return static_cast<size_t>(b.size * b.itemsize);
}

}  // namespace larder_py
