#!/bin/sh
# Monkey test of the app under AddressSanitizer + UBSan, registered with ctest as `monkey_asan`
# (tests/monkey/CMakeLists.txt, a count that fits CI).
#
#   tests/monkey/run_monkey.sh SOURCE_DIR WORK_DIR COMMANDS [SEED]
#
# 1. configures a separate build in WORK_DIR/build with STEPFORMER_SANITIZE (ASan + UBSan, -O2 -g, asserts on)
#    and builds the app alone (target stepformer); a second run reuses it;
# 2. prepares WORK_DIR/run (emptied first; it holds a .monkey-run marker) with hostile files for `model` and
#    `open` (a FIFO, a folder, an empty file, truncated and garbled copies of a model, a text file, a link loop,
#    damaged Hugging Face Marian folders (crafted SentencePiece models among them),
#    a 256 MB sparse file), files the script must not replace, and links that lead out of it, plus
#    WORK_DIR/outside (a folder outside the run folder, with a file that must stay as it is);
# 3. writes COMMANDS random commands with tests/monkey/monkey_script.py (seed SEED, default 1) to WORK_DIR/monkey.lesson;
# 4. plays them as a lesson (a lesson skips the lines it cannot parse; a --script would refuse to start) from
#    inside WORK_DIR/run (scripts write only under the current folder):
#      xvfb-run -a stepformer --no-settings --size 1280x800 --frame-log WORK_DIR/frames.log --lesson ...
#    with ASAN_OPTIONS=detect_leaks=1:abort_on_error=1, UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 and
#    the LeakSanitizer suppressions in tests/monkey/lsan.supp (system libraries only);
# 5. fails (exit 1, with the reason) on a non-zero exit code, any sanitizer report in WORK_DIR/app.log, the
#    app not reaching the final `quit` (or hanging: MONKEY_TIMEOUT seconds, default 600 + 5 a command: under ASan a
#    beam of 64 with the causal mask off takes 20-50 s of decoding, while frames go on), fewer
#    commands run than asked, a frame in the frame log over MONKEY_MAX_FRAME_MS (default 1000) ms, or a file
#    the script must not touch being written, replaced or created (outside the run folder, through a link);
#    then prints a summary: commands, frames, slowest frame, wall time.
#
# CC and CXX may name the compilers (default CMake's), CMAKE_GENERATOR the generator, MONKEY_JOBS the build's
# parallel jobs (default 2). MONKEY_EXCLUDE, a regular expression (Python), keeps the lines it finds out of the
# script: to go on past a known bug while it is being fixed, e.g. MONKEY_EXCLUDE='^mask (enc|dec|cross)[.]-'.
# Needs python3, xvfb-run, a C compiler, and what the app needs (xvfb-run makes the display).
#
# The full run (10,000 commands, the issue's figure) by hand, from the repository root:
#
#   tests/monkey/run_monkey.sh . /tmp/monkey 10000 1
#
# About 8 minutes of build from scratch on 2 cores, then 2 to 3 commands a second on average (WORK_DIR/app.log
# holds the app's output, WORK_DIR/frames.log every frame; a crash's reproducer is WORK_DIR/monkey.lesson, with the
# last checkpoint file in WORK_DIR/run saying how far it got). The full run of 2026-11-26 (seed 7, commit
# bf68740, the development machine's 2 cores): build 456 s; 10,000 commands and 2,884 rejected lines in 4,441 s;
# 165,617 frames, the slowest 434.6 ms; no sanitizer report, no file touched that must not be: passed.
set -eu
if [ $# -lt 3 ]; then
  echo "usage: $0 SOURCE_DIR WORK_DIR COMMANDS [SEED]" >&2
  exit 2
fi
src=$(cd "$1" && pwd)
mkdir -p "$2"
work=$(cd "$2" && pwd)
commands=$3
seed=${4:-1}
build=$work/build
run=$work/run
outside=$work/outside
app=$build/app/stepformer
model=$src/assets/models/de-en.safetensors
max_frame_ms=${MONKEY_MAX_FRAME_MS:-1000}
limit=${MONKEY_TIMEOUT:-$((600 + 5 * commands))}
if [ "$work" = / ]; then
  echo "run_monkey.sh: WORK_DIR must not be /" >&2
  exit 2
fi
fail() {
  echo "run_monkey.sh: FAILED: $*" >&2
  exit 1
}
start=$(date +%s)

# ---- 1. the sanitizer build
# -O2 -g (ASan at -O1 made a beam of 64 take minutes) with CMAKE_BUILD_TYPE=None keeps asserts (Eigen's bounds
# checks) on. -march=native (STEPFORMER_NATIVE) as the app's own build: without it Eigen's products run on 4-wide
# SSE, and a hostile script's wide beams on translations that run to the length limit took 20 times as long as in
# the app (a beam of 53: 538 ms in the Release app, 11.1 s here without native, 4.6 s with it), which is most of a
# 10,000-command run's time, since the script waits for every decoding. Configured on every run, so that an older
# build folder takes these options too. The generator is $CMAKE_GENERATOR when set (ctest passes the parent
# build's), else CMake's default.
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=-O2 -g" "-DCMAKE_C_FLAGS=-O2 -g" \
  -DSTEPFORMER_SANITIZE=ON -DSTEPFORMER_BUILD_TESTS=OFF -DSTEPFORMER_BUILD_BENCHMARKS=OFF \
  -DSTEPFORMER_CUDA=OFF -DSTEPFORMER_NATIVE=ON >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; fail "configuring the sanitizer build"; }
cmake --build "$build" --target stepformer --parallel "${MONKEY_JOBS:-2}" >"$work/build.log" 2>&1 ||
  { tail -50 "$work/build.log"; fail "building the sanitizer app (log: $work/build.log)"; }
built=$(date +%s)
echo "run_monkey.sh: sanitizer app ready in $((built - start)) s ($app)"

# ---- 2. the run folder, hostile files, files that must stay as they are
if [ -e "$run" ]; then
  [ -f "$run/.monkey-run" ] || fail "$run exists and is not a monkey run folder (no .monkey-run): not removing it"
  rm -rf "$run"
fi
rm -rf "$outside"
mkdir -p "$run/hostile" "$outside"
: >"$run/.monkey-run"
h=$run/hostile
mkfifo "$h/fifo.safetensors"
mkdir "$h/folder.safetensors"
: >"$h/empty.safetensors"
printf 'this is a text file, not a model\n' >"$h/text.safetensors"
head -c 8 "$model" >"$h/truncated-8.safetensors"
head -c 1000 "$model" >"$h/truncated-header.safetensors"
head -c $(($(wc -c <"$model") / 2)) "$model" >"$h/truncated-half.safetensors"
head -c $(($(wc -c <"$model") - 1)) "$model" >"$h/truncated-1.safetensors"
# the header's first bytes (its JSON) overwritten: a file of the right size that does not parse
cp "$model" "$h/garbled.safetensors"
printf '{"x":[1,2' | dd of="$h/garbled.safetensors" bs=1 seek=8 conv=notrunc 2>/dev/null
# a header length of 2^63 and a 256 MB sparse file of zeros (header length 0)
printf '\000\000\000\000\000\000\000\200{}' >"$h/huge-header-length.safetensors"
truncate -s 256M "$h/sparse-256m.safetensors"
ln -s loop.safetensors "$h/loop.safetensors"
ln -s missing.safetensors "$h/dangling.safetensors"
cp "$src/tests/fixtures/models/seq2seq_tutorial_tiny.safetensors" "$h/copy of tiny ünï.safetensors"
# Hugging Face Marian folders with a file missing, a SentencePiece model that is not one, another architecture
marian=$src/tests/fixtures/marian/tiny-separate
cp -r "$marian" "$h/marian-no-vocab" && rm "$h/marian-no-vocab/vocab.json"
cp -r "$marian" "$h/marian-bad-spm" && printf 'not a protobuf' >"$h/marian-bad-spm/source.spm"
cp -r "$marian" "$h/marian-bart" && printf '{"model_type": "bart"}' >"$h/marian-bart/config.json"
# ... and the crafted SentencePiece models of issue 46 (libsentencepiece 0.1.97 crashed on both): a normalizer trie
# whose first unit is 0xFFFFFE00, a piece of 200 kB (tests/fuzz/make_sentencepiece_seeds.py writes the same fields)
cp -r "$marian" "$h/marian-hostile-normalizer" && cp -r "$marian" "$h/marian-long-piece"
python3 - "$h" <<'PY'
import struct, sys
def varint(v):
    out = b""
    while True:
        b, v = v & 0x7F, v >> 7
        if not v:
            return out + bytes([b])
        out += bytes([b | 0x80])
def field(n, b):
    return varint(n << 3 | 2) + varint(len(b)) + b
h = sys.argv[1]
trie = b"".join(struct.pack("<I", u) for u in [0xFFFFFE00] + [0] * 255)
with open(h + "/marian-hostile-normalizer/source.spm", "ab") as f:
    f.write(field(3, field(2, struct.pack("<I", len(trie)) + trie + b"x\0")))
with open(h + "/marian-long-piece/target.spm", "ab") as f:
    f.write(field(1, field(1, b"x" * 200000) + varint(2 << 3 | 5) + struct.pack("<f", -10.0) + varint(3 << 3) + varint(1)))
PY
# files the script's writes must not replace, and ways out of the run folder
for f in existing.png existing.csv existing.npy existing.json; do printf 'sentinel %s\n' "$f" >"$run/$f"; done
printf 'sentinel outside\n' >"$outside/existing.png"
ln -s ../outside "$run/link-out"
ln -s ../outside/existing.png "$run/link-existing.png"
ln -s ../outside/new-through-link.png "$run/link-new.png"
ln -s existing.png "$run/link-inside.png"
(cd "$run" && find . ! -name .monkey-run -type f -exec sha256sum {} + | sort -k2 >"$work/before.sha256")
(cd "$run" && find . -type l -printf '%p -> %l\n' | sort >"$work/before.links")
(cd "$outside" && find . | sort >"$work/before.outside")
sha256sum "$outside/existing.png" >"$work/before.outside.sha256"

# ---- 3. the script
set --
for f in "$h"/*; do set -- "$@" --bad-model "$f"; done
set -- "$@" --bad-model /nonexistent/model.safetensors --bad-model / --bad-model /dev/zero --bad-model "$h"
for f in existing.png existing.csv existing.npy existing.json link-inside.png hostile/fifo.safetensors \
  hostile/empty.safetensors hostile/folder.safetensors hostile; do set -- "$@" --existing "$f"; done
for f in "$outside/x-absolute.png" ../outside/x-relative.csv link-out/x-through-dir-link.png link-existing.png \
  link-new.png /tmp/elsewhere/x.png "$outside/existing.png"; do set -- "$@" --outside "$f"; done
for f in "$src/assets/models/de-en.safetensors" "$src/assets/models/fr-en.safetensors" \
  "$src"/tests/fixtures/models/*.safetensors "$src/tests/fixtures/marian/tiny-de-en" \
  "$src/tests/fixtures/marian/tiny-separate"; do set -- "$@" --model "$f"; done
[ -z "${MONKEY_EXCLUDE:-}" ] || set -- "$@" --exclude "$MONKEY_EXCLUDE"
python3 "$src/tests/monkey/monkey_script.py" --seed "$seed" --commands "$commands" --out "$work/monkey.lesson" \
  --manifest "$work/monkey.lesson.json" --app "$app" "$@" || fail "writing the script"

# ---- 4. the run
# The app alone gets tests/monkey/no_dlclose.c preloaded (no library is unloaded before LeakSanitizer looks: see
# there), after the ASan runtime when that is a shared library (gcc), which must come first.
"${CC:-cc}" -shared -fPIC -O2 -o "$work/no_dlclose.so" "$src/tests/monkey/no_dlclose.c" || fail "building no_dlclose.so"
asan_runtime=$(ldd "$app" | awk '/libasan\.so/ { print $3; exit }')
preload=${asan_runtime:+$asan_runtime:}$work/no_dlclose.so
echo "run_monkey.sh: playing $commands commands (seed $seed) under ASan + UBSan, at most $limit s"
ASAN_OPTIONS=${MONKEY_ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
LSAN_OPTIONS=suppressions=$src/tests/monkey/lsan.supp:print_suppressions=0
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS
run_start=$(date +%s)
set +e
(cd "$run" && timeout -k 30 "$limit" xvfb-run -a env LD_PRELOAD="$preload" "$app" --no-settings --size 1280x800 \
  --frame-log "$work/frames.log" --model "$model" --lesson "$work/monkey.lesson") >"$work/app.log" 2>&1
rc=$?
set -e
run_end=$(date +%s)

# ---- 5. the verdict
problems=""
problem() { problems="$problems
  - $*"; }
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  problem "the app did not finish within $limit s (a hang?): killed"
elif [ "$rc" -ne 0 ]; then
  problem "the app exited with code $rc"
fi
if grep -aqE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: (AddressSanitizer|UndefinedBehaviorSanitizer|LeakSanitizer)|Sanitizer (failed|CHECK failed)|AddressSanitizer failed to allocate' "$work/app.log"; then
  problem "a sanitizer report in $work/app.log:"
  grep -aE -m 20 -A 12 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|Sanitizer (failed|CHECK failed)' "$work/app.log" | cut -c1-300 >&2 || true
fi
# what the writes must not have touched
(cd "$run" && sha256sum -c --quiet "$work/before.sha256" >"$work/changed.txt" 2>&1) ||
  problem "files in the run folder were replaced: $(head -5 "$work/changed.txt" | tr '\n' ' ')"
(cd "$run" && find . -type l -printf '%p -> %l\n' | sort >"$work/after.links")
cmp -s "$work/before.links" "$work/after.links" || problem "links in the run folder were replaced or removed"
(cd "$outside" && find . | sort >"$work/after.outside")
cmp -s "$work/before.outside" "$work/after.outside" ||
  problem "files appeared outside the run folder: $(diff "$work/before.outside" "$work/after.outside" | grep '^>' | head -5 | tr '\n' ' ')"
sha256sum -c --quiet "$work/before.outside.sha256" >/dev/null 2>&1 || problem "$outside/existing.png was replaced"
[ ! -e /tmp/elsewhere/x.png ] || problem "/tmp/elsewhere/x.png exists (written by the script?)"

# commands run, the app's own list of rejected lines, frames
python3 - "$work" "$commands" "$max_frame_ms" "$((run_end - run_start))" "$((built - start))" >"$work/summary.txt" <<'EOF' || problem "$(tail -1 "$work/summary.txt")"
import json, os, re, sys
work, asked, max_ms, wall, build = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
m = json.load(open(os.path.join(work, "monkey.lesson.json")))
log = open(os.path.join(work, "app.log"), "rb").read()
lesson = os.path.join(work, "monkey.lesson").encode()
rejected = {int(n) for n in re.findall(rb"^" + re.escape(lesson) + rb":(\d+): ", log, re.M)}
expected = set(m["invalid_lines"])
reached = [c for c in m["checkpoints"] if os.path.exists(os.path.join(work, "run", c["file"]))]
last = reached[-1] if reached else {"line": 0, "after_commands": 0, "file": "none"}
final = m["checkpoints"][-1]
# lines up to the last checkpoint reached, less those the app rejected (and the checkpoints themselves)
checkpoint_lines = {c["line"] for c in m["checkpoints"]}
lines_before = last["line"] - 1 - 1  # less the header comment and the checkpoint line itself
ran = max(0, lines_before - len([c for c in checkpoint_lines if c < last["line"]]) - len([n for n in rejected if n < last["line"]]))
frames, slowest, slow = 0, (0.0, 0), []
frame_log = os.path.join(work, "frames.log")  # written when the app exits: none after a crash or a kill
for line in (open(frame_log, errors="replace") if os.path.exists(frame_log) else []):
    f = line.split()
    if len(f) < 2 or not f[0].isdigit():
        continue
    frames += 1
    ms = float(f[1])
    if ms > slowest[0]:
        slowest = (ms, int(f[0]))
    if ms > max_ms:
        slow.append(line.strip()[:200])
print(f"commands: {asked} asked, {'' if last is final else 'at least '}{ran} run ({len(rejected)} more lines "
      f"rejected by the parser and skipped; script {m['lines']} lines, {m['bytes']} bytes)")
print(f"progress: last checkpoint reached {last['file']} (line {last['line']}, after {last['after_commands']} commands); "
      f"quit on line {m['quit_line']}")
if not os.path.exists(frame_log):
    print("frames: no frame log (the app did not exit normally)")
else:
    print(f"frames: {frames}, slowest {slowest[0]:.1f} ms (frame {slowest[1]}), {len(slow)} over {max_ms:.0f} ms")
print(f"wall time: {wall} s for the run, {build} s for the build")
if rejected != expected:
    print(f"note: the app rejected {len(rejected - expected)} line(s) the generator thought valid "
          f"{sorted(rejected - expected)[:10]} and accepted {len(expected - rejected)} it thought invalid "
          f"{sorted(expected - rejected)[:10]} (tests/monkey/monkey_script.py classify() disagrees with the app's "
          f"--script-grammar: tests/gui/test_script_grammar.cpp checks them)")
for s in slow[:10]:
    print("slow frame: " + s)
if last is not final:
    print(f"FAIL: the app did not reach the end of the script (last checkpoint {last['file']})"); sys.exit(1)
if ran < asked:
    print(f"FAIL: {ran} commands run, fewer than the {asked} asked"); sys.exit(1)
if slow:
    print(f"FAIL: {len(slow)} frame(s) over {max_ms:.0f} ms, the slowest {slowest[0]:.1f} ms (frame {slowest[1]})"); sys.exit(1)
EOF
sed 's/^/run_monkey.sh: /' "$work/summary.txt"
echo "run_monkey.sh: total $(($(date +%s) - start)) s; output in $work (app.log, frames.log, monkey.lesson)"
if [ -n "$problems" ]; then
  echo "run_monkey.sh: FAILED:$problems" >&2
  echo "run_monkey.sh: reproduce: cd $run && xvfb-run -a env LD_PRELOAD=$preload $app --no-settings --size 1280x800 --model $model --lesson $work/monkey.lesson" >&2
  exit 1
fi
echo "run_monkey.sh: passed"
