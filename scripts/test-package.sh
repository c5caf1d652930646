#!/usr/bin/env bash
# Checks stepcast as a CMake package from the outside: installs build/release into a temporary
# prefix (configuring and building it first when needed), builds examples/cpp against that
# prefix with find_package(stepcast), runs it and checks it printed a step time. `make
# test-package`; CI runs it after `make test`, so the build is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}

# The README's C++ snippet ("Use it as a library") is lines of examples/cpp/main.cpp: every
# snippet line, comments and indentation aside, must still be one of them.
strip() { sed -e 's|[[:space:]]*//.*$||' -e 's|^[[:space:]]*||' -e '/^$/d'; }
main_lines=$(strip <examples/cpp/main.cpp)
snippet=$(sed -n '/^### Use it as a library/,/^## /p' README.md | sed -n '/^```cpp$/,/^```$/p' |
  sed '1d;$d' | strip)
fail() { echo "test-package: $*" >&2; exit 1; }
[[ -n "$snippet" ]] || fail "no C++ snippet in README.md, section 'Use it as a library'"
while IFS= read -r line; do
  grep -qxF -- "$line" <<<"$main_lines" || fail "README.md snippet line not in examples/cpp/main.cpp: $line"
done <<<"$snippet"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/stepcast-package.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

if [[ ! -f build/release/build.ninja ]]; then
  cmake --preset release >/dev/null
fi
# The libraries and the command are all that is installed; tests and benchmarks are not needed.
cmake --build --preset release -j "$jobs" --target stepcast
cmake --install build/release --prefix "$tmp/prefix" >/dev/null

# Only the stable core is installed, and each of its headers compiles on its own: none needs
# one from include/stepcast/detail/.
[[ ! -e "$tmp/prefix/include/stepcast/detail" ]] || fail "include/stepcast/detail/ was installed"
for header in $(cd "$tmp/prefix/include" && find stepcast -name '*.hpp' | sort); do
  echo "#include <$header>" | c++ -std=c++20 -fsyntax-only -I"$tmp/prefix/include" -x c++ - ||
    fail "installed header $header does not compile on its own"
done

# The example sees the install prefix only: the package found must be the installed one.
cmake -S examples/cpp -B "$tmp/example" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
grep -qF "stepcast_DIR:PATH=$tmp/prefix/" "$tmp/example/CMakeCache.txt" ||
  fail "examples/cpp found another stepcast package: $(grep '^stepcast_DIR' "$tmp/example/CMakeCache.txt")"
cmake --build "$tmp/example" -j "$jobs"
out=$("$tmp/example/stepcast_example")
echo "$out"
grep -Eq '^step time: [0-9.]+ (ns|us|ms|s)$' <<<"$out" || fail "no step time in the example's output"
grep -q '^rejected: .*cluster\.worker' <<<"$out" || fail "the example's bad key was not rejected"
"$tmp/prefix/bin/stepcast" --version
echo "test-package: OK (installed to a temporary prefix, examples/cpp built and run against it)"
