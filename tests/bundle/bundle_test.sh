#!/usr/bin/env bash
# bundle.runs_anywhere: the bundle of `make bundle`, made from this build by scripts/bundle.sh,
# unpacked into an empty folder and run where the host's libraries are hidden: a mount namespace
# puts over /usr/lib/x86_64-linux-gnu a folder with copies of only what the host's own programs
# that ipclab starts need (sh, env, python3 for the example servers, glibc and libgcc_s for the
# peers), so none of ipclab's own libraries (libstdc++, libfmt, liburing, libzmq, gRPC, ...) is
# there, as on a machine that never installed them. There it must list, run a shared-memory
# benchmark into a results folder, a Go peer, a Rust peer and the Python example server from the
# bundle, and start its children with the host's libraries and environment: a server that records
# its environment and the libraries it loaded must see no LD_LIBRARY_PATH, no IPCLAB_BUNDLE, no
# path into the bundle. Needs root and `unshare -m`; without them it exits 77 (ctest: skipped).
# Usage: bundle_test.sh BUNDLE_SH --ipclab EXE --source DIR [--peer REL]... [--data REL]...
set -euo pipefail

skip() { echo "SKIP: $*"; exit 77; }
bundle_sh=$1
shift
[ "$(id -u)" = 0 ] || skip "not root: hiding the host's libraries needs a mount namespace (run ctest as root)"
command -v unshare >/dev/null || skip "unshare is missing (util-linux)"
unshare -m --propagation private true 2>/dev/null \
  || skip "unshare -m is refused here (no CAP_SYS_ADMIN, as in an unprivileged container)"
libdir=/usr/lib/x86_64-linux-gnu
[ -d "$libdir" ] || skip "$libdir is missing: this test hides Debian's multiarch library folder"

exe="" peers=()
args=("$@")
while [ $# -gt 1 ]; do
  case $1 in --ipclab) exe=$2 ;; --peer) peers+=("$2") ;; esac
  shift 2
done
has_peer() { case " ${peers[*]} " in *"/$1 "*) return 0 ;; esac; return 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ipclab-bundle-test.XXXXXX")
trap 'rm -rf -- "$tmp"' EXIT
bash "$bundle_sh" "$tmp/ipclab-bundle.tar.gz" "${args[@]}"
# Unpacked where a person might: a folder whose name holds a space, ',', '=' and '%' (its own
# defaults, such as echo/peer's example server there, must run).
unpacked="$tmp/plain space,a=b%c"
mkdir "$unpacked" "$tmp/work" "$tmp/out" "$tmp/nopy"
tar -C "$unpacked" -xzf "$tmp/ipclab-bundle.tar.gz"
b=$unpacked/ipclab
ln -s "$(command -v readlink)" "$tmp/nopy/readlink"  # the launcher's one tool, and no python3
ln -s "$b/bin/ipclab" "$tmp/work/ipclab-link"  # as a user puts it on PATH

# The host's programs that ipclab starts here, and what they load from $libdir. python3: the real
# interpreter (not a pyenv shim, a bash script), with the extension modules the servers import.
python=$(python3 -c 'import sys; print(sys.executable)')
modules=$(python3 -c '
import json, os, selectors, socket, sys
print(" ".join(m.__file__ for m in list(sys.modules.values()) if (getattr(m, "__file__", "") or "").endswith(".so")))')
syslib=$tmp/syslib
mkdir "$syslib"
for f in /bin/sh "$(command -v env)" "$python" $modules; do ldd "$f"; done >"$tmp/host-ldd"
for p in "${peers[@]}"; do ldd "$b/libexec/$p" 2>/dev/null || true; done >>"$tmp/host-ldd"  # static: none
while read -r name arrow path _; do
  [ "$arrow" = "=>" ] || path=$name
  case $(readlink -f -- "$path") in
    "$libdir"/*) cp -L -- "$path" "$syslib/$(basename -- "$name")" ;;
  esac
done <"$tmp/host-ldd"
# What must be hidden: the libraries ipclab names itself, but glibc's and libgcc_s.
hidden=()
for lib in $(readelf -d -- "$exe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
  case $lib in libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libgcc_s.so.*) continue ;; esac
  [ ! -e "$syslib/$lib" ] || { echo "FAIL: the host's programs need $lib, which the test must hide"; exit 1; }
  hidden+=("$lib")
done
case " ${hidden[*]} " in *" libstdc++.so.6 "*) ;; *) echo "FAIL: ipclab does not name libstdc++.so.6: nothing to hide"; exit 1 ;; esac

# The env-recording server: records, then becomes the bundle's example echo server.
cat >"$tmp/env_server.py" <<EOF
#!/usr/bin/env python3
import json, os, sys
maps = sorted({l.split()[-1] for l in open("/proc/self/maps") if ".so" in l})
json.dump({"environ": dict(os.environ), "maps": maps}, open("$tmp/out/child.json", "w"))
os.execv(sys.executable, [sys.executable, "$b/share/tests/echo/echo_server.py"] + sys.argv[1:])
EOF
chmod +x "$tmp/env_server.py"

# In the namespace, after the mount, only the shell's builtins, env and the bundle run: each
# command's output, errors and exit code go to $tmp/out/<name>.*, read outside.
cat >"$tmp/inner.sh" <<EOF
set -u
mount --bind "$syslib" "$libdir" || exit 3
cd "$tmp/work"
run() {
  name=\$1; shift
  # Through sh: env would take a command whose path holds '=' (the bundle's folder) for a variable.
  env -i PATH="$(dirname -- "$python"):/usr/bin:/bin" HOME="$tmp/work" /bin/sh -c 'exec "\$0" "\$@"' "\$@" \
    >"$tmp/out/\$name.out" 2>"$tmp/out/\$name.err"
  echo \$? >"$tmp/out/\$name.rc"
}
tiny="--duration 0.05 --warmup 0.01 --repetitions 1"
run hidden_check sh -c 'for l in ${hidden[*]}; do [ ! -e "$libdir/\$l" ] || echo "\$l"; done'
run build_tree "$exe" list
run list "$b/bin/ipclab" list echo
run shm ./ipclab-link run messaging/shm_spsc \$tiny --out "$tmp/out/shm"
$(has_peer pingpong-guest && echo "run go \"$b/bin/ipclab\" run pingpong/go \$tiny --json \"$tmp/out/go.json\"")
$(has_peer ipclab-peer-tokio && echo "run rust \"$b/bin/ipclab\" run runtime/switch_tokio_ct -p n=256 \$tiny --json \"$tmp/out/rust.json\"")
run python "$b/bin/ipclab" run echo/peer -p connections=1 --duration 0.2 --warmup 0.01 --repetitions 1 --json "$tmp/out/python.json"
run child "$b/bin/ipclab" run echo/peer -p server="$tmp/env_server.py" -p connections=1 --duration 0.2 --warmup 0.01 --repetitions 1 --json "$tmp/out/child-run.json"
run report "$b/bin/ipclab" report "$tmp/out/python.json"
run quick_dry "$b/bin/ipclab" run --preset quick --dry-run
# A host without python3: the example servers are skipped with the reason, not failed with 127.
env -i PATH="$tmp/nopy" HOME="$tmp/work" /bin/sh -c 'exec "\$0" "\$@"' "$b/bin/ipclab" run echo/peer servers/peer -p connections=1 \$tiny \
  --json "$tmp/out/nopy.json" >"$tmp/out/nopy.out" 2>"$tmp/out/nopy.err"
echo \$? >"$tmp/out/nopy.rc"
run bad_home env IPCLAB_BUNDLE="$tmp/work" /bin/sh -c 'exec "\$0" "\$@"' "$b/lib/ld-linux-x86-64.so.2" --library-path "$b/lib" "$b/libexec/ipclab" list
EOF
timeout 100 unshare -m --propagation private bash "$tmp/inner.sh" || { echo "FAIL: the namespace's script exited $?"; exit 1; }

# A folder whose name the loader would expand ($LIB, $PLATFORM, $ORIGIN): refused, exit 2, one line.
mkdir "$tmp/lib\$LIB"
cp -a "$b" "$tmp/lib\$LIB/"
dollar_rc=0
dollar_err=$("$tmp/lib\$LIB/ipclab/bin/ipclab" list 2>&1 >/dev/null) || dollar_rc=$?
rm -rf -- "$tmp/lib\$LIB"
if [ "$dollar_rc" != 2 ] || [ "$(printf '%s\n' "$dollar_err" | wc -l)" != 1 ] || [[ $dollar_err != *"holds a '\$'"* ]]; then
  echo "FAIL: a bundle in a folder named with \$LIB: exit $dollar_rc, '$dollar_err'; expected exit 2 and one line naming the '\$'"
  exit 1
fi

python3 - "$tmp" "$b" "$(has_peer pingpong-guest && echo go) $(has_peer ipclab-peer-tokio && echo rust)" <<'EOF'
import json, os, re, sys
tmp, bundle, peer_runs = sys.argv[1], sys.argv[2], sys.argv[3].split()
out = os.path.join(tmp, "out")
problems = []
def result(name):
    read = lambda ext: open(os.path.join(out, f"{name}.{ext}")).read()
    return int(read("rc")), read("out"), read("err")
def ok_run(name, json_path, mechanism):
    rc, _, err = result(name)
    if rc != 0:
        return problems.append(f"{name}: exit {rc}: {err[-600:]}")
    doc = json.load(open(json_path))
    if doc["context"].get("started_from") != "bundle":
        problems.append(f"{name}: context.started_from is {doc['context'].get('started_from')!r}, not 'bundle'")
    if doc["context"].get("git_sha") != (open(os.path.join(bundle, "share/git-sha")).read().strip() or None):
        problems.append(f"{name}: context.git_sha {doc['context'].get('git_sha')!r} is not the bundle's")
    names = [b["suite"] + "/" + b["mechanism"] for b in doc["benchmarks"]]
    if not names or set(names) != {mechanism}:
        problems.append(f"{name}: records {names}, expected {mechanism}'s")
    for b in doc["benchmarks"]:
        if b["status"] != "ok" or b["ops"] <= 0:
            problems.append(f'{name}: {b["name"]}: {b["status"]} {b["error"]} ({b["ops"]} ops)')

rc, stdout, _ = result("hidden_check")
if rc != 0 or stdout:
    problems.append(f"ipclab's own libraries were visible in the namespace: {stdout.split()}")
rc, _, err = result("build_tree")
if rc == 0 or "error while loading shared libraries" not in err:
    problems.append(f"the build tree's ipclab ran where the libraries are hidden (exit {rc}): the test hides nothing")
rc, stdout, err = result("list")
if rc != 0 or "echo/peer" not in stdout:
    problems.append(f"list: exit {rc}: {err[-300:]}")
elif f"{bundle}/share/tests/echo/echo_server.py" not in stdout:
    problems.append("list: echo/peer's default server is not the bundle's")
if not os.path.isfile(os.path.join(out, "shm", "results.json")):
    problems.append("shm: --out wrote no results.json")
else:
    ok_run("shm", os.path.join(out, "shm", "results.json"), "messaging/shm_spsc")
if "go" in peer_runs:
    ok_run("go", os.path.join(out, "go.json"), "pingpong/go")
if "rust" in peer_runs:
    ok_run("rust", os.path.join(out, "rust.json"), "runtime/switch_tokio_ct")
ok_run("python", os.path.join(out, "python.json"), "echo/peer")
ok_run("child", os.path.join(out, "child-run.json"), "echo/peer")
try:
    child = json.load(open(os.path.join(out, "child.json")))
    env, maps = child["environ"], child["maps"]
    leaked = {k: v for k, v in env.items() if k.startswith("LD_") or k == "IPCLAB_BUNDLE" or bundle in v}
    if leaked:
        problems.append(f"a server started by ipclab inherited {leaked}")
    if any(m.startswith(bundle) for m in maps) or not any(m.endswith("/libc.so.6") for m in maps):
        problems.append(f"a server started by ipclab did not load the host's libc: {maps}")
except (OSError, ValueError, KeyError) as e:
    problems.append(f"the env-recording server left no record: {e}")
rc, _, err = result("report")
if rc != 2 or len(err.splitlines()) != 1 or "a bundle leaves it out" not in err:
    problems.append(f"report in a bundle: exit {rc}, {err!r}; expected one line naming the fix, exit 2")
rc, out_text, err = result("quick_dry")
if rc != 0 or not re.search(r"^echo +[1-9]", out_text + err, re.M):
    problems.append(f"run --preset quick --dry-run from a folder with a space: exit {rc}: {err[-400:]}")
rc, _, err = result("nopy")
if rc != 0:
    problems.append(f"echo/peer and servers/peer without python3: exit {rc}: {err[-400:]}")
else:
    recs = [r for r in json.load(open(os.path.join(out, "nopy.json")))["benchmarks"] if r["run_type"] == "iteration"]
    bad = [(r["name"], r["status"], r["error"]) for r in recs
           if r["status"] != "skipped" or "its interpreter python3 is not on PATH" not in r["error"]]
    if len(recs) < 2 or bad:
        problems.append(f"without python3 the example servers were not skipped with the reason: {bad or recs}")
rc, _, err = result("bad_home")
if rc != 2 or len(err.splitlines()) != 1 or "IPCLAB_BUNDLE" not in err:
    problems.append(f"IPCLAB_BUNDLE naming no bundle: exit {rc}, {err!r}; expected one line, exit 2")
for p in problems:
    print("BUNDLE FAILURE:", p)
left_out = sorted({"go", "rust"} - set(peer_runs))
if not problems:
    print("the bundle ran with the host's libraries hidden"
          + (f"; its {' and '.join(left_out)} peer(s) were not built, not checked" if left_out else ""))
sys.exit(1 if problems else 0)
EOF
