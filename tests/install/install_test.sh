#!/usr/bin/env bash
# The engine installed as a library and used from outside the tree, the two ways a project
# would: `cmake --install <build> --component engine` into a temporary prefix, then
#  - CMake: find_package(Larder) with the shared (Larder::larder) and the static
#    (Larder::larder_static) library, a C++ and a C consumer;
#  - pkg-config: the C++ and C consumers compiled and linked with `pkg-config --cflags --libs
#    larder` alone.
# Each consumer opens a store, puts a value and reads it back byte for byte.
# Usage: install_test.sh <build dir> <source dir>
set -euo pipefail
build=$1 src=$2
# A sanitized build's liblarder.a needs the sanitizer runtime linked in by every consumer: what
# is checked here is the packaging, which the plain build covers.
if [[ -n ${LARDER_SANITIZER:-} ]]; then
  echo "skipped under $LARDER_SANITIZER"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" --component engine >/dev/null
test -f "$prefix/include/larder/store.h"
test -f "$prefix/include/larder/larder_c.h"
libdir=$(dirname "$(find "$prefix" -name liblarder.a)")
soname=$(objdump -p "$libdir/liblarder.so" | awk '$1 == "SONAME" { print $2 }')
test "$soname" = liblarder.so.0 || { echo "SONAME is '$soname'" >&2; exit 1; }

consumer=$src/tests/install/consumer
cmake -S "$consumer" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$tmp/cmake" -j2 >/dev/null
for exe in consumer_cxx consumer_c consumer_static; do
  "$tmp/cmake/$exe" "$tmp/data-$exe"
done

# The compilers the build itself uses.
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
export PKG_CONFIG_PATH=$libdir/pkgconfig
"$cxx" -std=c++20 "$consumer/consumer.cc" -o "$tmp/pc_cxx" $(pkg-config --cflags --libs larder)
"$cc" "$consumer/consumer.c" -o "$tmp/pc_c" $(pkg-config --cflags --libs larder)
LD_LIBRARY_PATH=$libdir "$tmp/pc_cxx" "$tmp/data-pc-cxx"
LD_LIBRARY_PATH=$libdir "$tmp/pc_c" "$tmp/data-pc-c"
echo "installed library: CMake (shared, static) and pkg-config consumers ok"
