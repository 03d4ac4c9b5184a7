#!/bin/sh
# The public headers as an embedding program meets them: each one alone in C11
# and in C++11 (warnings as errors), then a C++ program that takes the address of
# every function the headers declare (TF_API), linked against the shared library:
# a header without extern "C" leaves mangled names the link cannot find, and a
# declared function the library lacks fails the same way. Last, the library
# exports tf_* names only (src/tformer.map: no private or OpenMP lock symbols).
#   sh tests/check_headers.sh LIB_DIR [EXTRA_FLAGS]   (run from the project root)
lib=${1:-build}
extra=$2
cc=${CC:-cc}
cxx=${CXX:-c++}
d=$(mktemp -d) || exit 1
trap 'rm -rf "$d"' EXIT
rc=0
for h in include/tformer.h include/tformer/*.h; do
    printf '#include "%s"\nint main(void) { return 0; }\n' "${h#include/}" > "$d/one.c"
    cp "$d/one.c" "$d/one.cpp"
    $cc -std=c11 -Wall -Wextra -Wpedantic -Werror -Iinclude -fsyntax-only "$d/one.c" || { echo "$h: not C11 alone"; rc=1; }
    $cxx -std=c++11 -Wall -Wextra -Wpedantic -Werror -Iinclude -fsyntax-only "$d/one.cpp" || { echo "$h: not C++11 alone"; rc=1; }
done
# Every "TF_API type name(" across line breaks; the attribute words of TF_API's definition are no functions.
cat include/tformer/*.h | tr '\n' ' ' | grep -oE 'TF_API [^;{]*\(' | grep -oE '[A-Za-z_][A-Za-z0-9_]*[ ]*\($' |
    tr -d ' (' | grep '^tf_' | sort -u > "$d/names"
n=$(wc -l < "$d/names")
[ "$n" -gt 100 ] || { echo "only $n TF_API functions found in include/tformer/*.h"; exit 1; }
{
    echo '#include "tformer.h"'
    echo 'typedef void (*fn)();'
    echo 'static volatile fn all[] = {'
    sed 's/.*/    reinterpret_cast<fn>(\&&),/' "$d/names"
    echo '};'
    echo 'int main() { return all[0] ? 0 : 1; }'
} > "$d/all.cpp"
$cxx -std=c++11 -Iinclude $extra -o "$d/all" "$d/all.cpp" -L"$lib" -ltformer -Wl,-rpath,"$(cd "$lib" && pwd)" 2>"$d/link.log" ||
    { grep -o "undefined reference to \`[^']*'" "$d/link.log" | sort -u | head -20; [ -s "$d/link.log" ] && tail -3 "$d/link.log"; rc=1; }
# The library exports the tf_* functions and nothing else (src/tformer.map).
others=$(nm -D --defined-only "$lib/libtformer.so" | awk '{print $3}' | grep -v '^tf_' | head -5)
[ -z "$others" ] || { echo "libtformer.so exports symbols without the tf_ prefix: $others"; rc=1; }
[ $rc -eq 0 ] && "$d/all" && echo "$n functions of the headers link from C++"
exit $rc
