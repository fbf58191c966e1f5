#!/usr/bin/env bash
# check.sh — grade an exercise: build it into the lab's conformance suite,
# climb the grading ladder, print a score; optionally put it on the plots.
#
#   exercises/check.sh NAME|all [starter|solution] [--fast] [--bench] [--lock FILE]
#   exercises/check.sh bug_museum [EXHIBIT] [solution] [--fixed] [--bench]
#   exercises/check.sh --update-manifest | --verify-manifest
#
#   NAME      ttas_backoff, ticket, futex_mutex, reentrant, redis_spin_lock, seqlock, or bug_museum
#             (per exhibit: BUG SHOWN while the bug is there, PASS once it is fixed;
#             with `solution`, the reference fixes and their own tests)
#   EXHIBIT   one exhibit of exercises/bug_museum/ (default: every one)
#   --fixed   grade YOUR fix of EXHIBIT (edit its file in exercises/bug_museum/EXHIBIT/):
#             PASS only if the bug no longer shows in the exhibit's bounded experiment
#   starter   (default) YOUR file: exercises/NAME/<file>
#   solution  the reference: exercises/instructor/NAME/<file>
#   --fast    levels 1-2 only (Release), for quick iteration; the grade is the full ladder
#   --bench   after every level run PASSES, run the exercise's bench (quick mode) into
#             results/exercise_NAME.json (bug_museum: results/museum_missing_pause.json);
#             then `./lab plot` draws it beside the lab's locks. A lock that
#             fails its checks gets no curve.
#   --lock FILE  grade FILE as the exercise's file (one NAME; instructors: a
#             wrong version, which the exercises' build writes to
#             build/exercises-grade/wrong/NAME/FIXTURE/ from exercises/instructor/wrong/NAME/FIXTURE.cmake)
#   --update-manifest  record the check files' sha256 in exercises/checks.sha256
#             (after editing a check); --verify-manifest: is it current?
#
# The ladder (a lock exercise; points per level, the climb stops at the first
# failing level; score: N/10):
#   0  integrity   the check files match exercises/checks.sha256, or score 0
#   1  2 pts       builds (Release) and the basic checks pass
#                  (mutual exclusion, try_lock never blocks)
#   2  3 pts       every check passes (Release)
#   3  2 pts       every check passes under ThreadSanitizer, 3 runs, no report
#   4  2 pts       every check passes under AddressSanitizer + UBSan, 3 runs, no report
#   5  1 pt        bench-ready: the bench builds and writes a smoke-sized point
# --fast stops after level 2 (score N/5). bug_museum has no ladder: per exhibit,
# BUG SHOWN, PASS (fixed) or FAIL (no verdict); its demonstrations race on
# purpose, so it has no sanitizer levels.
#
# Builds in build/exercises-grade[-tsan|-asan] (its own CMake project,
# exercises/CMakeLists.txt, with both variants; only the targets a grade needs
# are compiled; the release preset's ctest never sees it). Release checks run with ctest (each check in its own process,
# 60 s limit each, so a lock that deadlocks fails its check instead of hanging);
# a sanitizer run is the whole test executable under `timeout`. Exits non-zero
# if any exercise scored below full marks of the levels run.
# Environment: LOCKLAB_JOBS (build parallelism, default 2), LOCKLAB_WERROR=OFF
# (warnings not errors, for a half-finished file), LOCKLAB_RESULTS_DIR,
# LOCKLAB_SANITIZER_RUNS (default 3), LOCKLAB_SANITIZER_TIMEOUT (s a run, default 120),
# LOCKLAB_UPTO=N (stop the ladder after level N; --fast is 2), LOCKLAB_FROM=N
# (start at level N, the lower ones taken as passed: ci_check.sh, which has
# run them), LOCKLAB_EXERCISES_BUILD (the Release build directory; the
# sanitizers' get -tsan/-asan appended), LOCKLAB_EXERCISE_STARTER_ROOT (where
# the starter variant's files are; default exercises/).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
EXERCISES=(ttas_backoff ticket futex_mutex reentrant redis_spin_lock seqlock)
RESULTS=${LOCKLAB_RESULTS_DIR:-$ROOT/results}
JOBS=${LOCKLAB_JOBS:-2}
SAN_RUNS=${LOCKLAB_SANITIZER_RUNS:-3}
SAN_TIMEOUT=${LOCKLAB_SANITIZER_TIMEOUT:-120}
MANIFEST=$ROOT/exercises/checks.sha256
MANIFEST_CMD="exercises/check.sh --update-manifest"
# The ladder: level -> points and what it proves.
LEVEL_POINTS=(0 2 3 2 2 1)
LEVEL_WHAT=("" "builds; basic checks (Release)" "every check (Release)" "ThreadSanitizer x$SAN_RUNS"
  "AddressSanitizer+UBSan x$SAN_RUNS" "bench-ready (smoke point)")
BASIC_CHECKS='MutualExclusion|TryLockDoesNotBlock'

usage() { awk 'NR >= 4 { if (!/^#/) exit; sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; }  # the header above
die() { printf 'check.sh: %s\n' "$1" >&2; [ $# -gt 1 ] && printf '          %s\n' "${@:2}" >&2; exit 2; }

# ---------------------------------------------------------------------------
# The manifest: sha256 of every file that grades a lock exercise, so that a
# check edited to pass is caught before anything is built.
# check_files: the exercises' tests and benches, exercises/support/, the
# exercises' CMakeLists.txt (timeouts, what is built) and every tests/ header
# those files include, transitively; repository-relative, sorted.
check_files() {
  local files=() n f inc seen=" "
  for n in "${EXERCISES[@]}"; do
    for f in "$ROOT/exercises/$n"/*_test.cpp "$ROOT/exercises/$n"/*_bench.cpp; do
      [ -e "$f" ] && files+=("${f#$ROOT/}")
    done
  done
  for f in "$ROOT"/exercises/support/*.hpp; do files+=("${f#$ROOT/}"); done
  files+=(exercises/CMakeLists.txt)
  local i=0
  while [ "$i" -lt "${#files[@]}" ]; do
    f=${files[$i]}; i=$((i + 1))
    [[ "$seen" == *" $f "* ]] && continue
    seen+="$f "
    while read -r inc; do
      [ -e "$ROOT/$inc" ] && files+=("$inc")
    done < <(sed -n 's/^#include "\(tests\/[^"]*\)".*/\1/p' "$ROOT/$f")
  done
  tr ' ' '\n' <<<"${seen# }" | sed '/^$/d' | LC_ALL=C sort
}
manifest_lines() { (cd "$ROOT" && check_files | xargs sha256sum); }
manifest_update() {
  manifest_lines >"$MANIFEST"
  echo "check.sh: wrote ${MANIFEST#$ROOT/} ($(wc -l <"$MANIFEST") check files)"
}
# manifest_verify: 0 if the manifest is current (same files, same sums);
# otherwise prints what differs.
manifest_verify() {
  [ -f "$MANIFEST" ] || { echo "  ${MANIFEST#$ROOT/} is missing"; return 1; }
  diff <(manifest_lines) "$MANIFEST" | sed -n 's/^< [0-9a-f]*  /  now:      /p; s/^> [0-9a-f]*  /  manifest: /p'
  cmp -s <(manifest_lines) "$MANIFEST"
}
# edited_checks NAME: the manifest's files that NAME's checks use and that no
# longer match (another exercise's own test does not count against NAME).
edited_checks() {
  local n=$1
  [ -f "$MANIFEST" ] || { echo "${MANIFEST#$ROOT/} (missing)"; return; }
  (cd "$ROOT" && sha256sum --check --quiet "$MANIFEST" 2>/dev/null || true) |
    sed -n 's/: FAILED.*$//p' | while read -r f; do
      case "$f" in
        exercises/"$n"/*) echo "$f" ;;
        exercises/*/*_test.cpp | exercises/*/*_bench.cpp)
          [[ " ${EXERCISES[*]} " == *" $(cut -d/ -f2 <<<"$f") "* ]] || echo "$f" ;;
        *) echo "$f" ;;
      esac
    done
}

name="" variant=starter bench=0 upto=${LOCKLAB_UPTO:-5} from=${LOCKLAB_FROM:-1} lock="" fixed=0 exhibit=""
while [ $# -gt 0 ]; do
  a=$1; shift
  case "$a" in
    -h|--help) usage; exit 0 ;;
    --update-manifest) manifest_update; exit 0 ;;
    --verify-manifest)
      if manifest_verify; then echo "check.sh: ${MANIFEST#$ROOT/} is current"; exit 0; fi
      echo "check.sh: ${MANIFEST#$ROOT/} is stale; after editing a check, regenerate it: $MANIFEST_CMD"; exit 1 ;;
    --bench) bench=1 ;;
    --fast) upto=2 ;;
    --fixed) fixed=1 ;;
    --lock) [ $# -gt 0 ] || die "--lock needs a FILE."; lock=$(realpath -- "$1"); shift
      [ -f "$lock" ] || die "no file '$lock'." ;;
    starter|solution) variant=$a ;;
    -*) die "unknown option '$a'." "usage: exercises/check.sh NAME|all [starter|solution] [--fast] [--bench] [--lock FILE]" ;;
    *) if [ "$name" = bug_museum ] && [ -z "$exhibit" ]; then exhibit=$a; continue; fi
       [ -z "$name" ] || die "one NAME only (got '$name' and '$a')." "use 'all' for every exercise"; name=$a ;;
  esac
done
[ -n "$name" ] || { usage >&2; exit 2; }
if [ -n "$exhibit" ] || [ "$fixed" -eq 1 ]; then
  [ "$name" = bug_museum ] || die "--fixed and an exhibit go with bug_museum only."
  [ -n "$exhibit" ] || die "--fixed grades one exhibit: exercises/check.sh bug_museum EXHIBIT --fixed."
  [ -d "$ROOT/exercises/bug_museum/$exhibit" ] ||
    die "no exhibit '$exhibit'." "exhibits: $(cd "$ROOT/exercises/bug_museum" && ls -d -- */ | tr -d / | tr '\n' ' ')"
fi
[[ "$upto" =~ ^[1-5]$ && "$from" =~ ^[1-5]$ ]] || die "LOCKLAB_UPTO and LOCKLAB_FROM are levels, 1 to 5 (got '$upto', '$from')."
case "$name" in
  all) names=("${EXERCISES[@]}" bug_museum) ;;
  bug_museum) names=(bug_museum) ;;
  *)
    [[ " ${EXERCISES[*]} " == *" $name "* ]] ||
      die "no exercise '$name'." "exercises: ${EXERCISES[*]} bug_museum (or all)"
    names=("$name") ;;
esac
command -v cmake >/dev/null && command -v ninja >/dev/null || die "cmake and ninja are needed." "run ./lab setup first."

# One build directory for both variants (a grade compiles only its targets,
# so the lab's libraries are compiled once for starter, solution and --lock).
BUILD=${LOCKLAB_EXERCISES_BUILD:-$ROOT/build/exercises-grade}
STARTER_ROOT=${LOCKLAB_EXERCISE_STARTER_ROOT:-$ROOT/exercises}
if [ -n "$lock" ]; then
  # --lock FILE: FILE is graded as the starter, under the starter's file name,
  # from a directory of its own (replaced only when its content changed, so a
  # second run recompiles nothing).
  [ "${#names[@]}" -eq 1 ] && [ "$name" != bug_museum ] || die "--lock grades one lock exercise, not '$name'."
  [ "$variant" = starter ] || die "--lock replaces the starter; leave out 'solution'."
  STARTER_ROOT=$ROOT/build/exercises-lock-src
  mkdir -p "$STARTER_ROOT/$name"
  staged=$STARTER_ROOT/$name/$(cd "$ROOT/exercises/$name" && ls -- *.hpp | head -1)
  cmp -s "$lock" "$staged" || cp "$lock" "$staged"
fi
file_of() {  # what is graded, in words
  if [ -n "$lock" ]; then echo "${lock#$ROOT/} as exercises/$1/$(basename "$staged")"
  elif [ "$variant" = starter ] && [ "$1" != bug_museum ]; then echo "your exercises/$1/$(cd "$ROOT/exercises/$1" && ls -- *.hpp | head -1)"
  else echo "$variant"; fi
}
tests_of() {  # the test executables of one name
  if [ "$1" = bug_museum ] && [ "$variant" = solution ]; then
    printf '%s\n' bug_museum_reference_test bug_museum_fixed_test
  elif [ "$1" = bug_museum ]; then
    echo bug_museum_test
  else
    echo "exercise_$1_${variant}_test"
  fi
  return 0
}
bench_of() { if [ "$1" = bug_museum ]; then echo museum_missing_pause_bench; else echo "exercise_$1_${variant}_bench"; fi; }
label_of() { if [ "$1" = bug_museum ]; then echo '^bug_museum$'; else echo "^exercise_$1\$"; fi; }
# The ctest names of one name's checks in this variant (both are configured).
checks_of() {
  if [ "$1" != bug_museum ]; then echo "^$variant\\.$1:"
  elif [ "$variant" = solution ]; then echo '^museum(-fixed)?:'
  else echo '^museum:'; fi
}
results_of() { if [ "$1" = bug_museum ]; then echo museum_missing_pause; else echo "exercise_$1"; fi; }

# configure DIR [SANITIZER]: configure DIR once per run (Release, or
# RelWithDebInfo with the sanitizer and no benches), both variants.
configured=" "
configure() {
  local dir=$1 san=${2:-} args
  [[ "$configured" == *" $dir "* ]] && return 0
  if [ -z "$san" ]; then args=(-DCMAKE_BUILD_TYPE=Release -DLOCKLAB_SANITIZER=)
  else args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOCKLAB_SANITIZER="$san" -DLOCKLAB_BUILD_BENCHES=OFF); fi
  mkdir -p "$dir"
  if ! cmake -S "$ROOT/exercises" -B "$dir" -G Ninja "${args[@]}" -DLOCKLAB_EXERCISE_SOURCE=both \
       -DLOCKLAB_EXERCISE_STARTER_ROOT="$STARTER_ROOT" -DLOCKLAB_WERROR="${LOCKLAB_WERROR:-ON}" >"$dir/configure.log" 2>&1; then
    cat "$dir/configure.log" >&2
    die "configuring $dir failed (output above)." "run ./lab setup if a package is missing."
  fi
  configured+="$dir "
}
# build DIR TARGET...: 0 if it compiled; the compiler's output is shown when not.
build() {
  local dir=$1; shift
  echo "check.sh: building $* in ${dir#$ROOT/}"
  cmake --build "$dir" --target "$@" -j"$JOBS" >"$dir/build.log" 2>&1 && return 0
  grep -v '^\[[0-9]*/[0-9]*\]' "$dir/build.log" | head -60
  return 1
}

# release_checks NAME [REGEX]: run NAME's checks (those matching REGEX) with
# ctest in $BUILD; prints each check and PASS/FAIL lines; 0 if all passed.
release_checks() {
  local n=$1 regex=${2:-} log rc summary total what
  log="$BUILD/check-$n${regex:+-basic}.log"
  set +e
  ctest --test-dir "$BUILD" -L "$(label_of "$n")" -R "$(checks_of "$n")${regex:+.*($regex)}" --output-on-failure \
    --timeout 60 >"$log" 2>&1
  rc=$?
  set -e
  grep -E '^ *[0-9]+/[0-9]+ Test|tests passed' "$log" | sed 's/^ *//' || true
  summary=$(grep -E 'tests passed, [0-9]+ tests failed out of' "$log" | tail -1)
  total=$(sed -n 's/.*out of \([0-9]*\).*/\1/p' <<<"$summary")
  what=$(file_of "$n")
  if [ "$rc" -eq 0 ] && [ -n "$total" ] && [ "$total" -gt 0 ]; then
    echo "PASS: $n ($what): $total of $total ${regex:+basic }checks"
    return 0
  fi
  echo "FAIL: $n ($what): ${summary:-no result} -- the failing checks' output: $log"
  # What the checks said (the messages after each GoogleTest "Failure").
  grep -A6 -E ': Failure$' "$log" |
    grep -vE ': Failure$|^--$|^Value of:|^ *Actual: (true|false)|^Expected: (true|false)$|^\[----------\]|^ *$|Global test' |
    sed 's/, where TypeParam = .*//' | cut -c1-200 | sed 's/^/      /' | head -30 || true
  return 1
}

# sanitizer_checks NAME tsan|asan: build NAME's test executable under the
# sanitizer (build/exercises-...-tsan|-asan) and run it SAN_RUNS times, each
# under `timeout SAN_TIMEOUT`; a sanitizer report fails at once, with its
# first lines. 0 if every run passed with no report.
sanitizer_checks() {
  local n=$1 kind=$2 dir exe log i rc t0 first
  local -A flag=([tsan]=thread [asan]=address) title=([tsan]=ThreadSanitizer [asan]="AddressSanitizer+UBSan")
  dir=$BUILD-$kind
  exe=$(tests_of "$n")
  configure "$dir" "${flag[$kind]}"
  build "$dir" "$exe" || { echo "FAIL: $n does not compile under ${title[$kind]} (compiler output above)"; return 1; }
  t0=$(date +%s)
  for ((i = 1; i <= SAN_RUNS; i++)); do
    log="$dir/check-$n-run$i.log"
    set +e
    TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}halt_on_error=1:second_deadlock_stack=1" \
    UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}print_stacktrace=1" \
      timeout "$SAN_TIMEOUT" "$dir/$exe" --gtest_brief=1 >"$log" 2>&1
    rc=$?
    set -e
    first=$(grep -n -m1 -E 'WARNING: ThreadSanitizer|ERROR: (Address|Leak)Sanitizer|runtime error:' "$log" | cut -d: -f1 || true)
    if [ -n "$first" ]; then
      echo "FAIL: $n under ${title[$kind]}, run $i of $SAN_RUNS: a sanitizer report (full log: $log):"
      tail -n +"$first" "$log" | grep -v '^ *$' | head -12 | cut -c1-200 | sed 's/^/      /'
      grep -m1 '^SUMMARY: ' "$log" | cut -c1-200 | sed 's/^/      /' || true
      return 1
    fi
    case $rc in
      0) ;;
      124) echo "FAIL: $n under ${title[$kind]}, run $i of $SAN_RUNS: still running after ${SAN_TIMEOUT} s, killed (log: $log)"; return 1 ;;
      *) echo "FAIL: $n under ${title[$kind]}, run $i of $SAN_RUNS: exit $rc (log: $log)"
         grep -E '^\[  FAILED  \]|: Failure$' "$log" | sed 's/, where TypeParam.*//' | head -8 | sed 's/^/      /' || true
         return 1 ;;
    esac
  done
  echo "PASS: $n under ${title[$kind]}: $SAN_RUNS of $SAN_RUNS runs, no report ($(($(date +%s) - t0)) s)"
}

# bench_ready NAME: the bench builds and writes one smoke-sized point.
bench_ready() {
  local n=$1 exe out rc
  exe=$(bench_of "$n")
  build "$BUILD" "$exe" || { echo "FAIL: bench $exe does not compile (compiler output above)"; return 1; }
  out="$BUILD/smoke-$n.json"
  set +e
  timeout 120 "$BUILD/$exe" --waiters=2 --duration_ms=20 --benchmark_out="$out" --benchmark_out_format=json \
    >"$BUILD/smoke-$n.log" 2>&1
  rc=$?
  set -e
  if [ "$rc" -eq 0 ] && [ -s "$out" ] && ! grep -q '"error_occurred": true' "$out"; then
    echo "PASS: $n bench-ready ($exe writes a smoke-sized point)"
    return 0
  fi
  echo "FAIL: bench $exe (exit $rc; log: $BUILD/smoke-$n.log)"
  tail -8 "$BUILD/smoke-$n.log" | sed 's/^/      /'
  return 1
}

# run_level NAME LEVEL: one rung of the ladder; 0 if it passed.
run_level() {
  local n=$1
  case $2 in
    1) build "$BUILD" "$(tests_of "$n")" || { echo "FAIL: $n ($(file_of "$n")) does not compile (compiler output above)"; return 1; }
       release_checks "$n" "$BASIC_CHECKS" ;;
    2) release_checks "$n" ;;
    3) sanitizer_checks "$n" tsan ;;
    4) sanitizer_checks "$n" asan ;;
    5) bench_ready "$n" ;;
  esac
}

# grade NAME: the integrity check, then the ladder up to level $upto; prints
# the per-level lines and "score: N/M"; 0 if full marks.
grade() {
  local n=$1 level score=0 max=0 edited failed_at=0 mark t0
  local -a took=()
  for ((level = 1; level <= upto; level++)); do max=$((max + LEVEL_POINTS[level])); done
  echo "== $n ($(file_of "$n"))"
  edited=$(edited_checks "$n")
  if [ -n "$edited" ]; then
    echo "FAIL: $n: these check files differ from ${MANIFEST#$ROOT/}; the checks are the lab's, not yours:"
    sed 's/^/      /' <<<"$edited"
    echo "      restore them (git checkout -- FILE), or, if you maintain the checks: $MANIFEST_CMD"
    echo "score: 0/$max ($n: edited check files)"
    return 1
  fi
  for ((level = 1; level <= upto; level++)); do
    t0=$(date +%s)
    if [ "$level" -ge "$from" ]; then
      run_level "$n" "$level" || { failed_at=$level; took[level]=$(($(date +%s) - t0)); break; }
    fi
    took[level]=$(($(date +%s) - t0))
    score=$((score + LEVEL_POINTS[level]))
  done
  echo "-- $n: the ladder"
  for ((level = 1; level <= upto; level++)); do
    if [ "$level" -lt "$from" ]; then mark="taken as passed (LOCKLAB_FROM=$from)"
    elif [ "$failed_at" -eq 0 ] || [ "$level" -lt "$failed_at" ]; then mark="ok    +${LEVEL_POINTS[level]}  (${took[level]} s)"
    elif [ "$level" -eq "$failed_at" ]; then mark="FAIL   0  (${took[level]} s)"
    else mark="not reached"; fi
    printf '   level %d  %-36s %d pts  %s\n' "$level" "${LEVEL_WHAT[level]}" "${LEVEL_POINTS[level]}" "$mark"
  done
  [ "$upto" -lt 5 ] && echo "   (levels $((upto + 1))-5 not run; the grade runs them all)"
  echo "score: $score/$max ($n)"
  [ "$failed_at" -eq 0 ]
}

# museum_check: grades the museum's exhibits (or $exhibit) one by one. Each
# exhibit's test expects the correct behaviour (bug_museum/graded.hpp), so
# it fails, printing "BUG SHOWN: ...", while the bug is there. Prints
# "BUG SHOWN", "PASS" or "FAIL" (did not run properly) per exhibit; true if
# every one PASSed.
museum_check() {
  local exe=bug_museum_test ex filter log rc all_pass=0 what
  [ "$variant" = solution ] && exe=bug_museum_reference_test
  for ex in $(cd "$ROOT/exercises/bug_museum" && ls -d -- */ | tr -d /); do
    [ -z "$exhibit" ] || [ "$ex" = "$exhibit" ] || continue
    what="exercises/bug_museum/$ex/"
    [ "$variant" = solution ] && what="the reference fix, exercises/instructor/bug_museum/$ex/"
    [ "$fixed" -eq 1 ] && echo "check.sh: grading your fix of $what"
    if [ "$ex" = lease_without_fencing ] && { [ "$fixed" -eq 1 ] || [ "$variant" = solution ]; }; then
      echo "NOT GRADED: $ex: its fix changes the interface (a token with every write), so the test's client code"
      echo "      changes with it: compare yours with exercises/instructor/bug_museum/$ex/"
      [ "$variant" = solution ] || all_pass=1
      continue
    fi
    # lost_wakeup -> the GoogleTest suite MuseumLostWakeup
    filter="Museum$(sed -E 's/(^|_)([a-z])/\U\2/g' <<<"$ex")*"
    log="$BUILD/museum-$ex.log"
    set +e
    timeout 120 "$BUILD/$exe" --gtest_filter="$filter" --gtest_brief=1 >"$log" 2>&1
    rc=$?
    set -e
    if [ "$rc" -eq 0 ] && grep -qE '^\[  PASSED  \] [1-9]' "$log"; then
      if [ "$ex" = missing_pause ]; then
        echo "PASS: $ex ($what): correct; its bug is a cost no test sees (the bench: $ex --bench)"
      else
        echo "PASS: $ex ($what): the bug does not show; $(grep -m1 '^observed:' "$log" || echo 'its checks pass')"
      fi
    elif [ "$rc" -eq 1 ] && grep -q 'BUG SHOWN: ' "$log"; then
      all_pass=1
      echo "BUG SHOWN: $ex: $(grep -m1 -o 'BUG SHOWN: .*' "$log" | sed 's/^BUG SHOWN: //' | cut -c1-160)"
    else
      all_pass=1
      echo "FAIL: $ex ($what): exit $rc, no verdict -- output: $log"
      grep -A4 -E ': Failure$' "$log" | cut -c1-200 | sed 's/^/      /' | head -12 || true
    fi
  done
  if [ "$variant" = solution ] && [ -z "$exhibit" ]; then
    if timeout 300 "$BUILD/bug_museum_fixed_test" --gtest_brief=1 >"$BUILD/museum-fixed.log" 2>&1; then
      echo "PASS: the fixes' own tests (bug_museum_fixed_test)"
    else
      all_pass=1
      echo "FAIL: the fixes' own tests -- output: $BUILD/museum-fixed.log"
    fi
  fi
  return "$all_pass"
}

# run_bench NAME: the bench of NAME, quick mode, into $RESULTS; false if it fails.
run_bench() {
  local exe out
  exe=$(bench_of "$1")
  cmake --build "$BUILD" --target "$exe" -j"$JOBS" >/dev/null || { echo "FAIL: bench $exe does not compile"; return 1; }
  mkdir -p "$RESULTS"
  out="$RESULTS/$(results_of "$1").json"
  echo "bench: $exe --mode=quick -> ${out#$ROOT/}"
  if LOCKLAB_GIT_REVISION=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown) \
     "$BUILD/$exe" --mode=quick --benchmark_out="$out" --benchmark_out_format=json --benchmark_color=false \
     >"${out%.json}.log" 2>&1 && ! grep -q '"error_occurred": true' "$out"; then
    echo "      done; draw it with ./lab plot (results/plots/), or summarise: /usr/bin/python3 notebooks/locklab_plots.py summary $out"
  else
    tail -20 "${out%.json}.log" >&2
    echo "FAIL: bench $exe (log: ${out%.json}.log)"
    return 1
  fi
}


configure "$BUILD"
failed=0
for n in "${names[@]}"; do
  # The museum grades per exhibit (no ladder: its demonstrations race on
  # purpose, so no sanitizer levels); its bench (missing_pause: a cost, not a
  # bug a test sees) runs whatever the other exhibits show.
  if [ "$n" = bug_museum ]; then
    mapfile -t museum < <(tests_of bug_museum)
    if ! build "$BUILD" "${museum[@]}"; then echo "FAIL: bug_museum does not compile (compiler output above)."; failed=$((failed + 1)); continue; fi
    museum_check || failed=$((failed + 1))
    if [ "$bench" -eq 1 ]; then run_bench bug_museum || failed=$((failed + 1)); fi
    continue
  fi
  grade "$n" || { failed=$((failed + 1)); continue; }
  if [ "$bench" -eq 1 ]; then run_bench "$n" || failed=$((failed + 1)); fi
done
[ "$failed" -eq 0 ]
