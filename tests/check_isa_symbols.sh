#!/bin/sh
# The portable build's promise (docs/building.md, "Portable builds and -march=native"), checked on what was built:
#   1. the objects of the avx2 and avx512 kernel sets (stepformer_kernels_<set>) define no global or weak symbol
#      outside their own namespaces (sf::isa_<set>, Eigen renamed sf_eigen_<set>): the linker cannot hand one of
#      their inline functions or template instantiations to the rest of the program, nor theirs to them;
#   2. in each program, no function outside those namespaces holds an AVX, AVX2, FMA, BMI, MOVBE or AVX-512
#      instruction (every VEX/EVEX mnemonic starts with v, every mask one with k): the rest of the program runs on
#      any x86-64-v2 CPU;
#   3. and the sets' own functions do hold such instructions (the check looks at real code).
# Usage: check_isa_symbols.sh CORE_CMAKEFILES_DIR PROGRAM... (needs nm, objdump and c++filt from binutils)
set -eu
objects_dir=$1
shift
status=0

for set in avx2 avx512; do
  dir=$objects_dir/stepformer_kernels_$set.dir
  objects=$(find "$dir" -name '*.o')
  [ -n "$objects" ] || { echo "FAIL: no objects in $dir"; exit 1; }
  # Defined symbols that are global or weak (upper-case type letter), demangled; the one allowed outsider is the
  # personality routine's hidden reference every C++ object with exception tables carries.
  outside=$(nm --defined-only -C $objects | awk 'NF >= 3 && $2 ~ /^[A-Z]$/ { $1 = ""; $2 = ""; print }' |
            grep -v "isa_$set\|sf_eigen_$set\|DW.ref.__gxx_personality_v0" || true)
  if [ -n "$outside" ]; then
    echo "FAIL: the $set kernel objects define symbols outside their namespaces:"
    echo "$outside" | head -20
    status=1
  else
    echo "ok: the $set kernel objects define no symbol outside sf::isa_$set and sf_eigen_$set"
  fi
done

for program in "$@"; do
  # One line per function: its demangled name and whether it holds an instruction past x86-64-v2.
  report=$(objdump -d --no-show-raw-insn -C "$program" | awk '
    /^[0-9a-f]+ <.*>:$/ { if (name != "") print flag "\t" name; name = $0; sub(/^[0-9a-f]+ </, "", name); sub(/>:$/, "", name); flag = 0; next }
    /^ *[0-9a-f]+:\t/ {
      split($0, parts, "\t"); insn = parts[2]; sub(/^ +/, "", insn); split(insn, words, " "); m = words[1]
      if (m ~ /^(rep|repz|repnz|lock|notrack|bnd|data16|cs|ds)$/) m = words[2]
      if (m ~ /^v/ || m ~ /^k(mov|and|or|xor|not|shift|test|add|unpck|ortest)/ ||
          m ~ /^(andn|bextr|blsi|blsmsk|blsr|bzhi|mulx|pdep|pext|rorx|sarx|shlx|shrx|movbe)$/) flag = 1
    }
    END { if (name != "") print flag "\t" name }')
  outside=$(echo "$report" | awk -F'\t' '$1 == 1 { print $2 }' | grep -v "isa_avx2::\|isa_avx512::\|sf_eigen_avx2::\|sf_eigen_avx512::" || true)
  if [ -n "$outside" ]; then
    echo "FAIL: $program: instructions past x86-64-v2 outside the dispatched kernel sets, in:"
    echo "$outside" | head -20
    status=1
  else
    echo "ok: $program: no AVX/AVX2/FMA/BMI/AVX-512 instruction outside the dispatched kernel sets"
  fi
  for set in avx2 avx512; do
    count=$(echo "$report" | awk -F'\t' '$1 == 1 { print $2 }' | grep -c "isa_$set::\|sf_eigen_$set::" || true)
    if [ "$count" -eq 0 ]; then
      echo "FAIL: $program: no function of the $set kernel set holds its instructions (is it linked?)"
      status=1
    else
      echo "ok: $program: $count functions of the $set kernel set use its instructions"
    fi
  done
done
exit $status
