#!/usr/bin/env bash
# Installs everything ipclab needs on Debian bookworm. Idempotent: a second run installs nothing.
# Runs as root, or through sudo. Prints each thing it installs.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: run as root or install sudo" >&2; exit 2; }
  SUDO="sudo"
fi

# Debian packages: build tools (clang-format pinned by version: `make format-check`), the C++ libraries we build on, and the reference tools
# (perf bench, fio, sockperf) that benchmarks are checked against; stress-ng, the antagonists of
# `run --antagonist` (docs/noise.md); QEMU, a kernel image and busybox
# for the emulated machines of `make test-guests` (tests/guest); PostgreSQL's server, which the store's
# tests start privately (tests/store/postgres.py), never as the machine's service.
DEB_PACKAGES=(
  build-essential cmake ninja-build pkg-config git clang-format-14
  libgtest-dev libgmock-dev libcli11-dev nlohmann-json3-dev libfmt-dev
  liburing-dev libaio-dev libasio-dev libconcurrentqueue-dev libnuma-dev
  libzmq3-dev libnng-dev libiceoryx-posh-dev iceoryx
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libsystemd-dev dbus-daemon python3-fusepy libsqlite3-dev libpq-dev postgresql
  linux-perf fio sockperf stress-ng procps iproute2 openssh-client openssh-server
  golang-go
  chromium
  qemu-system-x86 linux-image-amd64 busybox-static
)

missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Go may come from the machine's own toolchain instead of Debian's; do not install a second one.
if command -v go >/dev/null 2>&1; then
  missing=("${missing[@]/golang-go}")
fi
# Rust comes from rustup or Debian's cargo; install Debian's only when neither is present.
if ! command -v cargo >/dev/null 2>&1; then missing+=(cargo); fi
read -r -a missing <<<"${missing[*]}"

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: Debian packages present"
fi

# Rust peers (peers/rust): fetch the locked crates now, so the build (cargo --locked) only compiles.
if command -v cargo >/dev/null 2>&1 && [ -f "$(dirname "$0")/../peers/rust/Cargo.lock" ]; then
  echo "setup: fetching the Rust peers' crates (cargo fetch --locked)"
  (cd "$(dirname "$0")/../peers/rust" && cargo fetch --locked --quiet)
fi

# Python side (ipclab report, compare and history): installed as a package from report/, with its dependencies from PyPI.
PY=${PYTHON:-python3}
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -f "$here/report/pyproject.toml" ]; then
  if ! "$PY" -c "import ipclab_report, matplotlib, jinja2, pytest, scipy, ruptures, psycopg, xdist, markdown_it" 2>/dev/null \
     || [ "$here/report/pyproject.toml" -nt "$here/build/.pyinstalled" ]; then
    echo "setup: installing Python package ipclab-report (matplotlib, jinja2, scipy, ruptures, psycopg, pytest, pytest-xdist, markdown-it-py)"
    "$PY" -m pip install -q --disable-pip-version-check -e "$here/report[test]"
    mkdir -p "$here/build" && touch "$here/build/.pyinstalled"
  else
    echo "setup: Python packages present"
  fi
fi
# The emulated machines' launcher (tests/guest/guest.py): virtme-ng, pinned.
VIRTME_NG=1.42
if ! command -v vng >/dev/null 2>&1 || [ "$(vng --version 2>/dev/null | awk '{print $2}')" != "$VIRTME_NG" ]; then
  echo "setup: installing virtme-ng $VIRTME_NG (PyPI)"
  "$PY" -m pip install -q --disable-pip-version-check "virtme-ng==$VIRTME_NG"
  # Under pyenv a new console script needs its shim (tests/guest/guest.py also looks beside python3).
  if command -v pyenv >/dev/null 2>&1; then pyenv rehash; fi
else
  echo "setup: virtme-ng present"
fi
echo "setup: done"
