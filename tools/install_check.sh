#!/bin/sh
# make install-check's second half: a copy installed under DESTDIR with PREFIX serves an
# embedding program the way pkg-config tells it to. include/tformer.h's example is built
# against it four ways (C11 and C++11; the shared library, then libtformer.a with
# `pkg-config --static`), each run; the installed CLI runs too.
#   sh tools/install_check.sh DESTDIR PREFIX     (SAN: the library's sanitizer flags)
set -e
destdir=$1
prefix=$2
[ -n "$destdir" ] && [ -n "$prefix" ] || { echo "usage: sh tools/install_check.sh DESTDIR PREFIX"; exit 2; }
root=$destdir$prefix
cc=${CC:-cc}
cxx=${CXX:-c++}
# pkg-config reads the installed tformer.pc; the sysroot puts DESTDIR before its -I and -L paths.
export PKG_CONFIG_PATH="$root/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$destdir"
pkg-config --exists --print-errors tformer
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
{ echo '#include <stdio.h>'; echo '#include <tformer.h>'
  sed -n '/^ \*     int main/,/^ \*     }/p' include/tformer.h | sed -e 's/^ \*     //' -e 's/^ \*$//'; } > "$d/ex.c"
grep -q 'int main' "$d/ex.c" || { echo "include/tformer.h: no example found"; exit 1; }
cp "$d/ex.c" "$d/ex.cpp"
cflags=$(pkg-config --cflags tformer)
libs=$(pkg-config --libs tformer)
# libtformer.a by its path (with the .so beside it, -ltformer would pick the .so), every object of
# it (--whole-archive: each library a part of it calls must be in Libs.private / Requires.private),
# then what pkg-config --static says it needs.
archive="-Wl,--whole-archive $root/lib/libtformer.a -Wl,--no-whole-archive"
static=$(pkg-config --static --libs tformer | sed 's/-ltformer//')
rpath="-Wl,-rpath,$root/lib"
# shellcheck disable=SC2086
{
    $cc -std=c11 -Wall -Wextra -Wpedantic -Werror $SAN $cflags -o "$d/ex_c" "$d/ex.c" $libs $rpath
    $cxx -std=c++11 -Wall -Wextra -Werror $SAN $cflags -o "$d/ex_cxx" "$d/ex.cpp" $libs $rpath
    $cc -std=c11 $SAN $cflags -o "$d/ex_c_static" "$d/ex.c" $archive $static
    $cxx -std=c++11 $SAN $cflags -o "$d/ex_cxx_static" "$d/ex.cpp" $archive $static
}
for p in ex_c ex_cxx ex_c_static ex_cxx_static; do
    out=$("$d/$p") || { echo "$p failed: $out"; exit 1; }
    case $out in *"dL/dW[0] = "*) ;; *) echo "$p printed: $out"; exit 1 ;; esac
done
# the shared builds load the installed library (not the build tree's), through its soname
ldd "$d/ex_c" | grep -q "$root/lib/libtformer.so" || { echo "ex_c does not load $root/lib's libtformer.so:"; ldd "$d/ex_c"; exit 1; }
ldd "$d/ex_c_static" | grep -q libtformer && { echo "ex_c_static loads a libtformer.so"; exit 1; }
"$root/bin/tformer" --version | grep -q "^tformer $(pkg-config --modversion tformer)$"
echo "the header's example built against $prefix (pkg-config $(pkg-config --modversion tformer)): C and C++, shared and static, and ran"
