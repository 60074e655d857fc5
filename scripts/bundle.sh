#!/usr/bin/env bash
# The tarball of `make bundle` (README, "Carrying ipclab to another machine"): ipclab with every
# shared library it loads and the dynamic loader, the Go and Rust peers, and the source tree's files
# ipclab reads at run time, to unpack and run from any folder of any x86-64 Linux whose glibc is
# this one's or newer, installing nothing:
#   ipclab/bin/ipclab        the launcher (written below): the bundled loader runs libexec/ipclab
#   ipclab/lib/              the libraries ldd lists for ipclab, and the loader
#   ipclab/libexec/ipclab    the executable, as built
#   ipclab/libexec/<peer>    the peers, at their build-tree places relative to ipclab
#   ipclab/share/<file>      the source tree's files (src/core/machine/home.hpp), and git-sha: the commit
# The peers run with the host's libraries, as everything ipclab starts does: each may need glibc's
# and libgcc_s (on every glibc system) and nothing else, or this script refuses it.
# CMake runs it (target bundle; test bundle.runs_anywhere) with what the build made:
#   bundle.sh OUT.tar.gz --ipclab EXE --source DIR [--peer RELATIVE]... [--data RELATIVE]...
# (--peer: relative to EXE's folder; --data: relative to the source tree.)
set -euo pipefail

fail() { echo "bundle: $*" >&2; exit 2; }

[ $# -ge 1 ] || fail "usage: bundle.sh OUT.tar.gz --ipclab EXE --source DIR [--peer REL]... [--data REL]..."
out=$1
shift
exe="" source="" peers=() data=()
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || fail "$1 needs a value"
  case $1 in
    --ipclab) exe=$2 ;;
    --source) source=$2 ;;
    --peer) peers+=("$2") ;;
    --data) data+=("$2") ;;
    *) fail "unknown option $1; see the usage at the top of scripts/bundle.sh" ;;
  esac
  shift 2
done
[ -n "$exe" ] && [ -x "$exe" ] || fail "no ipclab executable at '$exe'; build it first (make build)"
[ -d "$source" ] || fail "no source tree at '$source'"
case $out in *.tar.gz) ;; *) fail "the bundle's name must end in .tar.gz, not '$out'" ;; esac
[ -d "$(dirname -- "$out")" ] || fail "no folder $(dirname -- "$out") for $out; create it first"
# Replaces only a bundle: what this script made before.
if [ -e "$out" ] || [ -L "$out" ]; then
  first=$( { [ -f "$out" ] && [ ! -L "$out" ] && tar -tzf "$out" 2>/dev/null; } | head -n1) || true
  [ "$first" = "ipclab/" ] || fail "$out is there and is not a bundle; move it away or name another bundle"
fi
for tool in ldd readelf tar gzip; do
  command -v "$tool" >/dev/null || fail "$tool is missing; run scripts/setup.sh (Debian: libc-bin, binutils, tar, gzip)"
done
exe_dir=$(dirname -- "$exe")

stage=$(mktemp -d "${TMPDIR:-/tmp}/ipclab-bundle.XXXXXX")
tmp_out=""
trap 'rm -rf -- "$stage"; [ -z "$tmp_out" ] || rm -f -- "$tmp_out"' EXIT
top=$stage/ipclab
mkdir -p "$top/bin" "$top/lib" "$top/libexec" "$top/share"
cp -- "$exe" "$top/libexec/ipclab"

# ipclab's libraries: ldd's closure, each under its soname; the loader (the line without "=>").
loader=""
while read -r name arrow path _; do
  case $name in linux-vdso.so.*|linux-gate.so.*) continue ;; esac
  if [ "$arrow" = "=>" ]; then
    [ "$path" != "not" ] && [ -f "$path" ] || fail "ipclab needs $name, which is not found here; run scripts/setup.sh"
    cp -L -- "$path" "$top/lib/$name"
  elif [ "${name#/}" != "$name" ]; then
    loader=$(basename -- "$name")
    cp -L -- "$name" "$top/lib/$loader"
  fi
done < <(ldd "$exe")
[ -n "$loader" ] || fail "ldd named no dynamic loader for $exe: is it statically linked? Then it needs no bundle"
chmod 0755 "$top/lib/$loader"

# The peers, checked to need only what every glibc system has.
host_libs=" libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libgcc_s.so.1 $loader "
glibc_needed=""
for rel in "${peers[@]}"; do
  peer=$exe_dir/$rel
  [ -x "$peer" ] || fail "the peer $peer is missing; build it first (make build)"
  for lib in $(readelf -d -- "$peer" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    [ "${host_libs/ $lib /}" != "$host_libs" ] \
      || fail "the peer $rel needs $lib, which a host may lack; link it statically or drop it from the bundle"
  done
  glibc_needed+=" $(readelf -V -- "$peer" | grep -o 'GLIBC_[0-9][0-9.]*' || true)"
  mkdir -p "$top/libexec/$(dirname -- "$rel")"
  cp -- "$peer" "$top/libexec/$rel"
done
glibc_needed=$(printf '%s\n' $glibc_needed | sort -uV | tail -n1)

for rel in "${data[@]}"; do
  [ -f "$source/$rel" ] || fail "$source/$rel is missing"
  mkdir -p "$top/share/$(dirname -- "$rel")"
  cp -p -- "$source/$rel" "$top/share/$rel"
done
# The commit, as `ipclab env` reports a build tree's (src/core/machine/env.cpp).
sha=$(git -C "$source" rev-parse --short=12 HEAD 2>/dev/null || true)
if [ -n "$sha" ] && [ -n "$(git --no-optional-locks -C "$source" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  sha+=-dirty
fi
printf '%s\n' "$sha" >"$top/share/git-sha"

# The launcher. It must not export the libraries' folder (LD_LIBRARY_PATH): what ipclab starts
# would inherit it, and a host's sh, python3 or fio would load these libraries in place of its own.
cat >"$top/bin/ipclab" <<EOF
#!/bin/sh
# ipclab from a bundle (made by scripts/bundle.sh): runs libexec/ipclab with the libraries it was
# built with, through the bundled dynamic loader, whatever the host has installed. The libraries'
# folder reaches the loader alone (--library-path; nothing exported), so what ipclab starts (sh,
# python3, fio, daemons, the peers) runs with the host's own libraries. /proc/self/exe names the
# loader in such a process: IPCLAB_BUNDLE tells ipclab where the bundle is, and ipclab takes it out
# of its environment at start (src/core/machine/home.hpp).
self=\$(readlink -f -- "\$0") || exit 2
top=\${self%/bin/*}
# The loader reads --library-path as a list (':' and ';' separate) and expands \$ORIGIN, \$LIB and
# \$PLATFORM in it (\${...} too), with no way to quote either: such a folder would have it load
# other libraries than the bundle's, so it is refused.
case \$top in
  *[:\;]*) echo "ipclab: the bundle's folder \$top holds a ':' or ';', which the loader takes for a separator; move the bundle to a folder without them" >&2; exit 2 ;;
  *'\$'*) echo "ipclab: the bundle's folder \$top holds a '\$', which the loader expands (\$ORIGIN, \$LIB, \$PLATFORM) and would load other libraries than the bundle's; move the bundle to a folder without '\$'" >&2; exit 2 ;;
esac
IPCLAB_BUNDLE=\$top
export IPCLAB_BUNDLE
exec "\$top/lib/$loader" --library-path "\$top/lib" --argv0 "\$0" "\$top/libexec/ipclab" "\$@"
EOF
chmod 0755 "$top/bin/ipclab"

tmp_out=$(mktemp "$out.XXXXXX")
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner -czf "$tmp_out" ipclab
chmod 0644 "$tmp_out"
mv -fT -- "$tmp_out" "$out"
tmp_out=""
size=$(du -h -- "$out" | cut -f1)
echo "bundle: $out ($size, $(du -sh -- "$top" | cut -f1) unpacked); unpack with \`tar xf $(basename -- "$out")\`, run ipclab/bin/ipclab${glibc_needed:+; its peers need glibc ${glibc_needed#GLIBC_} or newer on the host}"
