#!/usr/bin/env bash
# Installs Stepformer's .deb into a fresh Debian 12 (bookworm) root and uses it there as a user would:
#
#   tests/package/test_deb_in_clean_root.sh STEPFORMER.deb OUT_DIR [SOURCE_TREE]
#
# 1. A minimal bookworm root (debootstrap --variant=minbase from deb.debian.org). With STEPFORMER_DEBOOTSTRAP_CACHE
#    set to a folder, the fresh root is kept there as a tarball and unpacked on the next run instead (minutes saved).
# 2. In a chroot (/proc, /sys, /dev and /dev/pts mounted; always unmounted on exit): `apt-get install ./the.deb`,
#    recommended packages too, so apt resolves the dependencies from Debian's archive as on a user's machine; then
#    xvfb, xauth and desktop-file-utils.
# 3. Checks: the files are where they belong; `stepformer --version`; `xvfb-run -a stepformer --screenshot` opens
#    the shipped model from /usr/share/stepformer with its fonts (DejaVu, and WenQuanYi for --language ko), no
#    dialog; the desktop entry's Exec line with %f = a shipped lesson runs the lesson; `stepformer-cli translate`
#    with both shipped models; desktop-file-validate; the MIME types in shared-mime-info's and the desktop
#    database's caches; the package removes cleanly. With SOURCE_TREE (the tree the binaries were built from, whose
#    path they hold), a broken model is planted at that path inside the root first: the installed programs must
#    still open /usr/share/stepformer's, never a stale source tree's.
# OUT_DIR receives shot.png, shot-ko.png, lesson.png, their layout JSON, the logs and summary.txt (the steps'
# times). Needs root and the network to deb.debian.org. Exit 0: every check passed; 1: a check failed (listed);
# 77: not root (skipped).
set -euo pipefail

deb=${1:?usage: test_deb_in_clean_root.sh STEPFORMER.deb OUT_DIR [SOURCE_TREE]}
out=${2:?usage: test_deb_in_clean_root.sh STEPFORMER.deb OUT_DIR [SOURCE_TREE]}
source_tree=${3:-}
mirror=http://deb.debian.org/debian
suite=bookworm

say() { printf 'test_deb_in_clean_root: %s\n' "$*" >&2; }
if [ "$(id -u)" -ne 0 ]; then say "skipped: debootstrap and chroot need root"; exit 77; fi
[ -f "$deb" ] || { say "no such package: $deb"; exit 1; }
deb=$(realpath "$deb")
mkdir -p "$out"
out=$(realpath "$out")
root=$out/root
arch=$(dpkg --print-architecture)

started=$(date +%s)
step_started=$started
timings=()
step_done() {  # records how long the step since the last call took
  local now; now=$(date +%s)
  timings+=("$1: $((now - step_started)) s")
  say "$1: $((now - step_started)) s"
  step_started=$now
}

failures=()
fail() { failures+=("$*"); say "FAILED: $*"; }

# [SECTION] the chroot's mounts, undone on every exit
mounted=()
mount_in_root() {  # mount_in_root ARGS... TARGET (TARGET relative to the root)
  local target=$root/${*: -1}
  mkdir -p "$target"
  mount "${@:1:$#-1}" "$target"
  mounted+=("$target")
}
under_root_mounts() { awk -v r="$root/" 'index($2, r) == 1 { print $2 }' /proc/self/mounts; }
cleanup() {
  local status=$? pid i
  # Processes left running inside the root (an Xvfb whose xvfb-run was killed): ended by id, or the mounts stay busy.
  for pid in /proc/[0-9]*; do
    pid=${pid#/proc/}
    if [ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$root" ]; then kill "$pid" 2>/dev/null || true; fi
  done
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" || say "could not unmount ${mounted[i]}"
  done
  if [ -n "$(under_root_mounts)" ]; then
    say "still mounted under $root, left in place: $(under_root_mounts | tr '\n' ' ')"
  elif [ -z "${KEEP_ROOT:-}" ] && [ -d "$root" ]; then
    rm -rf --one-file-system "$root"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

in_root() {  # a command in the chroot, with a clean environment
  env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
      DEBIAN_FRONTEND=noninteractive chroot "$root" "$@"
}

# [SECTION] 1. a fresh bookworm root
if [ -n "$(under_root_mounts)" ]; then say "something is mounted under $root from an earlier run: unmount it first"; exit 1; fi
rm -rf --one-file-system "$root"
mkdir -p "$root"
if ! command -v debootstrap > /dev/null; then
  say "installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap > "$out/host-apt.log" 2>&1 ||
    { say "could not install debootstrap (see $out/host-apt.log)"; exit 1; }
fi
cache=${STEPFORMER_DEBOOTSTRAP_CACHE:-}
tarball=${cache:+$cache/debian-$suite-minbase-$arch.tar.gz}
if [ -n "$tarball" ] && [ -f "$tarball" ]; then
  tar -xzf "$tarball" -C "$root"
  step_done "unpack the cached $suite root ($(du -h "$tarball" | cut -f1))"
else
  debootstrap --variant=minbase --arch="$arch" "$suite" "$root" "$mirror" > "$out/debootstrap.log" 2>&1 ||
    { say "debootstrap failed (see $out/debootstrap.log)"; tail -5 "$out/debootstrap.log" >&2; exit 1; }
  step_done "debootstrap a minimal $suite root"
  if [ -n "$tarball" ]; then
    mkdir -p "$cache"
    tar -czf "$tarball.tmp" -C "$root" . && mv "$tarball.tmp" "$tarball"
    step_done "cache it as $tarball ($(du -h "$tarball" | cut -f1))"
  fi
fi

# As a Debian 12 machine is set up: the release, its updates and its security updates.
cat > "$root/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb http://deb.debian.org/debian-security $suite-security main
EOF
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"  # no service starts inside the chroot
chmod +x "$root/usr/sbin/policy-rc.d"
mount_in_root -t proc proc /proc
mount_in_root -t sysfs sysfs /sys
mount_in_root --bind /dev /dev
mount_in_root --bind /dev/pts /dev/pts

# A stale source tree where the binaries were built: a "model" there that cannot be read.
if [ -n "$source_tree" ]; then
  mkdir -p "$root$source_tree/assets/models" "$root$source_tree/assets/lessons"
  for model in de-en fr-en; do echo "not a model: a stale source tree" > "$root$source_tree/assets/models/$model.safetensors"; done
fi

# [SECTION] 2. install the package as a user would, then the tools the checks use
cp "$deb" "$root/tmp/"
package_file=/tmp/$(basename "$deb")
in_root apt-get update -q > "$out/apt.log" 2>&1 || { tail -5 "$out/apt.log" >&2; fail "apt-get update"; exit 1; }
step_done "apt-get update"
if ! in_root apt-get install -y -q "$package_file" >> "$out/apt.log" 2>&1; then
  tail -20 "$out/apt.log" >&2
  fail "apt-get install $package_file"
  exit 1
fi
step_done "apt-get install ./$(basename "$deb") ($(grep -oE '[0-9]+ newly installed' "$out/apt.log" | tail -1))"
in_root apt-get install -y -q --no-install-recommends xvfb xauth desktop-file-utils >> "$out/apt.log" 2>&1 ||
  { tail -20 "$out/apt.log" >&2; fail "apt-get install xvfb xauth desktop-file-utils"; exit 1; }
step_done "apt-get install xvfb xauth desktop-file-utils"
# shellcheck disable=SC2016  # ${Depends} is dpkg-query's field, not the shell's
in_root dpkg-query -W -f='${Depends}\n' stepformer > "$out/depends.txt"
say "Depends: $(cat "$out/depends.txt")"

# [SECTION] 3. the checks
for f in /usr/bin/stepformer /usr/bin/stepformer-cli /usr/share/stepformer/assets/models/de-en.safetensors \
         /usr/share/stepformer/assets/models/fr-en.safetensors /usr/share/stepformer/assets/lessons/walkthrough.lesson \
         /usr/share/stepformer/tools/hf_bin_to_safetensors.py /usr/share/applications/stepformer.desktop \
         /usr/share/mime/packages/stepformer.xml /usr/share/icons/hicolor/scalable/apps/stepformer.svg; do
  in_root dpkg -S "$f" > /dev/null 2>&1 || fail "the package does not hold $f"
done
if [ -n "$source_tree" ] && ! grep -qaF "$source_tree" "$root/usr/bin/stepformer"; then
  fail "the binary does not hold the source tree's path '$source_tree': the stale-tree check would test nothing"
fi

in_root stepformer --version > "$out/version.txt" 2>&1 || fail "stepformer --version: $(cat "$out/version.txt")"
grep -qE '^stepformer [0-9.]+ \(CPU .+\)$' "$out/version.txt" ||
  fail "stepformer --version does not name its version and backend: $(cat "$out/version.txt")"

# The layout JSON that --layout-json wrote: KEY=VALUE lines of what the checks read (python3 on this machine).
layout_facts() {
  python3 - "$1" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
a = j["app"]
print("model_path=%s" % a["model_path"])
print("dialog=%s" % ("none" if a["dialog"] is None else a["dialog"].get("title", "?") + ": " + a["dialog"].get("problem", "")))
print("fonts=%s" % " ".join(a["fonts"]["files"]))
print("missing=%d" % len(a["fonts"]["missing"]))
print("language=%s" % a["language"])
print("caption=%s" % j["panels"]["caption"])
EOF
}
shipped=/usr/share/stepformer/assets/models/de-en.safetensors

# The app as the brief's user starts it, under a virtual display, in English, then in Korean.
for run in en ko; do
  shot=shot.png layout=layout.json args=""
  # (--no-settings: the Korean run leaves the next runs' language as it was)
  [ "$run" = ko ] && shot=shot-ko.png layout=layout-ko.json args="--language ko --no-settings"
  if in_root sh -c "cd / && xvfb-run -a -s '-screen 0 1280x800x24' stepformer $args --screenshot /tmp/$shot \
                    --layout-json /tmp/$layout" > "$out/app-$run.log" 2>&1; then
    cp "$root/tmp/$shot" "$root/tmp/$layout" "$out/"
    facts=$(layout_facts "$out/$layout")
    printf '%s\n' "$facts" > "$out/$layout.facts"
    grep -qx "model_path=$shipped" <<< "$facts" || fail "[$run] the app opened '$(grep ^model_path= <<< "$facts")', not $shipped"
    grep -qx "dialog=none" <<< "$facts" || fail "[$run] the app shows a dialog: $(grep ^dialog= <<< "$facts")"
    grep -q "^fonts=.*/DejaVuSans.ttf" <<< "$facts" || fail "[$run] DejaVu Sans is not among the fonts: $(grep ^fonts= <<< "$facts")"
    grep -qx "missing=0" <<< "$facts" || fail "[$run] characters no font has: $(grep ^missing= <<< "$facts")"
    if [ "$run" = ko ]; then
      grep -qx "language=ko" <<< "$facts" || fail "[ko] the app speaks $(grep ^language= <<< "$facts")"
      grep -q "^fonts=.*/wqy-microhei.ttc" <<< "$facts" || fail "[ko] WenQuanYi Micro Hei is not among the fonts"
    fi
  else
    fail "[$run] xvfb-run -a stepformer --screenshot exited $? ($(tail -3 "$out/app-$run.log" | tr '\n' ' '))"
  fi
done
step_done "the app under xvfb-run: English and Korean screenshots"

# The desktop entry's command line, as a file manager runs it on a lesson.
lesson=/usr/share/stepformer/assets/lessons/walkthrough.lesson
exec_line=$(sed -n 's/^Exec=//p' "$root/usr/share/applications/stepformer.desktop")
[ "$exec_line" = "stepformer %f" ] || fail "the desktop entry's Exec is '$exec_line', not 'stepformer %f'"
command_line=${exec_line//%f/$lesson}
if in_root sh -c "cd / && xvfb-run -a -s '-screen 0 1280x800x24' $command_line --frames 10 --screenshot /tmp/lesson.png \
                  --layout-json /tmp/lesson.json" > "$out/app-lesson.log" 2>&1; then
  cp "$root/tmp/lesson.png" "$root/tmp/lesson.json" "$out/"
  facts=$(layout_facts "$out/lesson.json")
  grep -q "^caption=Today we watch a Transformer translate" <<< "$facts" ||
    fail "the lesson opened from the desktop entry shows no first caption: $(grep ^caption= <<< "$facts")"
  grep -qx "model_path=$shipped" <<< "$facts" || fail "the lesson runs on $(grep ^model_path= <<< "$facts")"
else
  fail "'$command_line' exited $? ($(tail -3 "$out/app-lesson.log" | tr '\n' ' '))"
fi
step_done "the desktop entry's Exec on a lesson"

# The command-line tool, on the default (shipped) model and on the other shipped one.
if in_root stepformer-cli translate "Ein Hund läuft durch den Schnee." > "$out/translate-de.txt" 2>&1; then
  grep -qi "dog" "$out/translate-de.txt" || fail "stepformer-cli translate (de-en) gave no 'dog': $(cat "$out/translate-de.txt")"
else
  fail "stepformer-cli translate exited $?: $(cat "$out/translate-de.txt")"
fi
if in_root stepformer-cli translate /usr/share/stepformer/assets/models/fr-en.safetensors "Un chien court dans la neige." \
     > "$out/translate-fr.txt" 2>&1; then
  grep -qi "dog" "$out/translate-fr.txt" || fail "stepformer-cli translate (fr-en) gave no 'dog': $(cat "$out/translate-fr.txt")"
else
  fail "stepformer-cli translate fr-en exited $?: $(cat "$out/translate-fr.txt")"
fi
step_done "stepformer-cli translate"

# The desktop entry and the file associations, as the desktop's caches took them in.
in_root desktop-file-validate /usr/share/applications/stepformer.desktop > "$out/desktop-file-validate.txt" 2>&1 ||
  fail "desktop-file-validate: $(cat "$out/desktop-file-validate.txt")"
grep -qx "application/x-stepformer-lesson:\*.lesson" "$root/usr/share/mime/globs" ||
  fail "shared-mime-info's globs have no *.lesson (the trigger did not take packaging/stepformer-mime.xml)"
grep -qx "application/x-safetensors:\*.safetensors" "$root/usr/share/mime/globs" ||
  fail "shared-mime-info's globs have no *.safetensors"
in_root update-desktop-database -q /usr/share/applications || fail "update-desktop-database"
for type in application/x-stepformer-lesson application/x-safetensors; do
  grep -qx "$type=stepformer.desktop;" "$root/usr/share/applications/mimeinfo.cache" ||
    fail "the desktop database does not open $type with stepformer.desktop"
done

# Removal leaves nothing of ours behind.
in_root apt-get purge -y -q stepformer >> "$out/apt.log" 2>&1 || fail "apt-get purge stepformer"
for f in /usr/bin/stepformer /usr/bin/stepformer-cli /usr/share/stepformer /usr/share/applications/stepformer.desktop; do
  [ ! -e "$root$f" ] || fail "$f is left after apt-get purge"
done
step_done "desktop-file-validate, MIME and desktop caches, purge"

total=$(( $(date +%s) - started ))
{
  echo "package: $deb ($(du -h "$deb" | cut -f1))"
  echo "Depends: $(cat "$out/depends.txt")"
  echo "version: $(cat "$out/version.txt")"
  printf '%s\n' "${timings[@]}"
  echo "total: $total s"
  if [ ${#failures[@]} -eq 0 ]; then echo "result: every check passed"
  else echo "result: ${#failures[@]} check(s) failed"; printf '  %s\n' "${failures[@]}"; fi
} > "$out/summary.txt"
cat "$out/summary.txt" >&2
[ ${#failures[@]} -eq 0 ]
