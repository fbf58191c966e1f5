#!/usr/bin/env bash
# check.sh — grade an exercise: build it into the lab's conformance suite and
# run its checks; optionally put it on the plots.
#
#   exercises/check.sh NAME|all [starter|solution] [--bench]
#   exercises/check.sh bug_museum [EXHIBIT] [solution] [--fixed] [--bench]
#
#   NAME      ttas_backoff, ticket, futex_mutex, reentrant, redis_spin_lock, or bug_museum
#             (per exhibit: BUG SHOWN while the bug is there, PASS once it is fixed;
#             with `solution`, the reference fixes and their own tests)
#   EXHIBIT   one exhibit of exercises/bug_museum/ (default: every one)
#   --fixed   grade YOUR fix of EXHIBIT (edit its file in exercises/bug_museum/EXHIBIT/):
#             PASS only if the bug no longer shows in the exhibit's bounded experiment
#   starter   (default) YOUR file: exercises/NAME/<file>
#   solution  the reference: exercises/instructor/NAME/<file>
#   --bench   after the checks PASS, run the exercise's bench (quick mode) into
#             results/exercise_NAME.json (bug_museum: results/museum_missing_pause.json);
#             then `./lab plot` draws it beside the lab's locks. A lock that
#             fails its checks gets no curve.
#
# Builds in build/exercises-<variant> (its own CMake project, exercises/
# CMakeLists.txt; the release preset's ctest never sees it), runs the checks
# with ctest (each check in its own process, 60 s limit each, so a lock that
# deadlocks fails its check instead of hanging), prints PASS or FAIL per
# exercise and exits non-zero if any failed.
# Environment: LOCKLAB_JOBS (build parallelism, default 2), LOCKLAB_WERROR=OFF
# (warnings not errors, for a half-finished file), LOCKLAB_RESULTS_DIR.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
EXERCISES=(ttas_backoff ticket futex_mutex reentrant redis_spin_lock)
RESULTS=${LOCKLAB_RESULTS_DIR:-$ROOT/results}
JOBS=${LOCKLAB_JOBS:-2}

usage() { sed -n '4,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
die() { printf 'check.sh: %s\n' "$1" >&2; [ $# -gt 1 ] && printf '          %s\n' "${@:2}" >&2; exit 2; }

name="" variant=starter bench=0 fixed=0 exhibit=""
for a in "$@"; do
  case "$a" in
    -h|--help) usage; exit 0 ;;
    --bench) bench=1 ;;
    --fixed) fixed=1 ;;
    starter|solution) variant=$a ;;
    -*) die "unknown option '$a'." "usage: exercises/check.sh NAME|all [starter|solution] [--bench]" ;;
    *) if [ "$name" = bug_museum ] && [ -z "$exhibit" ]; then exhibit=$a; continue; fi
       [ -z "$name" ] || die "one NAME only (got '$name' and '$a')." "use 'all' for every exercise"; name=$a ;;
  esac
done
[ -n "$name" ] || { usage >&2; exit 2; }
case "$name" in
  all) names=("${EXERCISES[@]}" bug_museum) ;;
  bug_museum) names=(bug_museum) ;;
  *)
    [[ " ${EXERCISES[*]} " == *" $name "* ]] ||
      die "no exercise '$name'." "exercises: ${EXERCISES[*]} bug_museum (or all)"
    names=("$name") ;;
esac
if [ -n "$exhibit" ] || [ "$fixed" -eq 1 ]; then
  [ "$name" = bug_museum ] || die "--fixed and an exhibit go with bug_museum only."
  [ -n "$exhibit" ] || die "--fixed grades one exhibit: exercises/check.sh bug_museum EXHIBIT --fixed."
  [ -d "$ROOT/exercises/bug_museum/$exhibit" ] ||
    die "no exhibit '$exhibit'." "exhibits: $(cd "$ROOT/exercises/bug_museum" && ls -d -- */ | tr -d / | tr '\n' ' ')"
fi
command -v cmake >/dev/null && command -v ninja >/dev/null || die "cmake and ninja are needed." "run ./lab setup first."

BUILD=$ROOT/build/exercises-$variant
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
results_of() { if [ "$1" = bug_museum ]; then echo museum_missing_pause; else echo "exercise_$1"; fi; }

# Configure (once; again if the variant or the werror choice changed).
mkdir -p "$BUILD"
if ! cmake -S "$ROOT/exercises" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
     -DLOCKLAB_EXERCISE_SOURCE="$variant" -DLOCKLAB_WERROR="${LOCKLAB_WERROR:-ON}" >"$BUILD/configure.log" 2>&1; then
  cat "$BUILD/configure.log" >&2
  die "configuring $BUILD failed (output above)." "run ./lab setup if a package is missing."
fi

targets=()
for n in "${names[@]}"; do mapfile -t -O "${#targets[@]}" targets < <(tests_of "$n"); done
echo "check.sh: building ${names[*]} ($variant) in ${BUILD#$ROOT/}"
if ! cmake --build "$BUILD" --target "${targets[@]}" -j"$JOBS"; then
  echo "FAIL: ${names[*]} ($variant) does not compile (compiler output above)."
  exit 1
fi

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

failed=0
for n in "${names[@]}"; do
  # The museum grades per exhibit; its bench (missing_pause: a cost, not a
  # bug a test sees) runs whatever the other exhibits show.
  if [ "$n" = bug_museum ]; then
    museum_check || failed=$((failed + 1))
    if [ "$bench" -eq 1 ]; then run_bench bug_museum || failed=$((failed + 1)); fi
    continue
  elif [ "$variant" = starter ]; then
    what="your exercises/$n/$(cd "$ROOT/exercises/$n" && ls -- *.hpp | head -1)"
  else
    what=$variant
  fi
  log="$BUILD/check-$n.log"
  set +e
  ctest --test-dir "$BUILD" -L "$(label_of "$n")" --output-on-failure --timeout 60 >"$log" 2>&1
  rc=$?
  set -e
  grep -E '^ *[0-9]+/[0-9]+ Test|tests passed' "$log" | sed 's/^ *//' || true
  summary=$(grep -E 'tests passed, [0-9]+ tests failed out of' "$log" | tail -1)
  total=$(sed -n 's/.*out of \([0-9]*\).*/\1/p' <<<"$summary")
  if [ "$rc" -eq 0 ] && [ -n "$total" ] && [ "$total" -gt 0 ]; then
    echo "PASS: $n ($what): $total of $total checks"
  else
    failed=$((failed + 1))
    echo "FAIL: $n ($what): ${summary:-no result} -- the failing checks' output: $log"
    # What the checks said (the messages after each GoogleTest "Failure").
    grep -A6 -E ': Failure$' "$log" |
      grep -vE ': Failure$|^--$|^Value of:|^ *Actual: (true|false)|^Expected: (true|false)$|^\[----------\]|^ *$|Global test' |
      sed 's/, where TypeParam = .*//' | cut -c1-200 | sed 's/^/      /' | head -30 || true
    continue
  fi
  if [ "$bench" -eq 1 ]; then run_bench "$n" || failed=$((failed + 1)); fi
done
[ "$failed" -eq 0 ]
