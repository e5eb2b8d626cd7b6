#include "common/uninitialized_string.h"

namespace larder::common {

#if defined(__cpp_lib_string_resize_and_overwrite)
const bool kResizeSkipsFill = true;
#else
const bool kResizeSkipsFill = false;
#endif

void ResizeUninitialized(std::string* s, size_t n) {
#if defined(__cpp_lib_string_resize_and_overwrite)
  // The operation claims all n bytes without writing them (see the header's contract).
  s->resize_and_overwrite(n, [](char*, size_t size) { return size; });
#else
  s->resize(n);
#endif
}

}  // namespace larder::common
