#!/usr/bin/env bash
# ci_check.sh — proves that the exercises grade: for every exercise the
# STARTER fails its checks (cleanly: a test failure, not a hang or a crash)
# and the SOLUTION passes them; every wrong version of a solution
# (instructor/wrong/NAME/*.cmake, one bug each) fails them, in Release or, for a
# memory-model bug, at the grade's ThreadSanitizer level; every bug-museum
# exhibit's test fails with "BUG SHOWN" and passes on the reference fix; every
# exercise bench and the museum's bench compile and run a smoke-sized point;
# the check files' manifest is current; every solution passes the grade's
# sanitizer levels (check.sh levels 3-4, one run each). Exit 0 only if all of
# that holds.
#
#   exercises/ci_check.sh        (./lab test calls it)
#   LOCKLAB_CI_BENCHES=0 exercises/ci_check.sh    skip the benches (saves ~1/6 of the build)
#   LOCKLAB_CI_SANITIZERS=0 exercises/ci_check.sh skip the sanitizer levels and the fixtures
#   LOCKLAB_CI_SANITIZER_RUNS=3 exercises/ci_check.sh  the student's full count (default 1)
#
# One build directory, build/exercises-ci, with both variants
# (-DLOCKLAB_EXERCISE_SOURCE=both): the lab's libraries are compiled once.
# The starters are taken as committed: if you have started an exercise (your
# file differs from git HEAD), CI checks HEAD's starter, not your work
# (grade your work with exercises/check.sh NAME).
# Time on the 2-core lab machine: see exercises/README.md ("CI").
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
EXERCISES=(ttas_backoff ticket futex_mutex reentrant redis_spin_lock seqlock)
BUILD=$ROOT/build/exercises-ci
JOBS=${LOCKLAB_JOBS:-2}
start=$(date +%s)
passed=0 failed=0
ok() { passed=$((passed + 1)); printf '  ok    %s\n' "$1"; }
bad() { failed=$((failed + 1)); printf '  FAIL  %s\n' "$1"; [ $# -gt 1 ] && printf '        %s\n' "${@:2}"; return 0; }

# The committed starters, in a directory of their own (a file is replaced only
# when its content changed, so a second run recompiles nothing).
PRISTINE=$BUILD/starters
for n in "${EXERCISES[@]}"; do
  mkdir -p "$PRISTINE/$n"
  for f in "$ROOT/exercises/$n"/*.hpp; do
    rel=${f#$ROOT/}
    dest=$PRISTINE/$n/$(basename "$f")
    if git -C "$ROOT" ls-files --error-unmatch "$rel" >/dev/null 2>&1 && ! git -C "$ROOT" diff --quiet HEAD -- "$rel"; then
      echo "ci_check: $rel has local changes; checking the committed starter (git HEAD) instead"
      git -C "$ROOT" show "HEAD:$rel" >"$dest.new"
    else
      cp "$f" "$dest.new"
    fi
    if cmp -s "$dest.new" "$dest"; then rm "$dest.new"; else mv "$dest.new" "$dest"; fi
  done
done

echo "ci_check: configure + build (both variants; the benches unless LOCKLAB_CI_BENCHES=0) in ${BUILD#$ROOT/}"
cmake -S "$ROOT/exercises" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOCKLAB_EXERCISE_SOURCE=both \
  -DLOCKLAB_EXERCISE_STARTER_ROOT="$PRISTINE" >"$BUILD.configure.log" 2>&1 ||
  { cat "$BUILD.configure.log" >&2; echo "ci_check: configuring failed (output above)" >&2; exit 1; }
benches=()
if [ "${LOCKLAB_CI_BENCHES:-1}" != 0 ]; then
  benches=(museum_missing_pause_bench)
  for n in "${EXERCISES[@]}"; do benches+=("exercise_${n}_solution_bench"); done
fi
cmake --build "$BUILD" -j"$JOBS" >"$BUILD.build.log" 2>&1 &&
  { [ ${#benches[@]} -eq 0 ] || cmake --build "$BUILD" --target "${benches[@]}" -j"$JOBS" >>"$BUILD.build.log" 2>&1; } ||
  { tail -60 "$BUILD.build.log" >&2; echo "ci_check: the build failed (output above; full log $BUILD.build.log)" >&2; exit 1; }
built=$(date +%s)

# run EXE ARGS...: sets rc and keeps the output in $BUILD/<exe>.log
run() {
  local exe=$1; shift
  set +e
  timeout "$limit" "$BUILD/$exe" "$@" >"$BUILD/$exe.log" 2>&1
  rc=$?
  set -e
}

echo "ci_check: starters must fail, solutions must pass"
for n in "${EXERCISES[@]}"; do
  limit=120
  run "exercise_${n}_starter_test" --gtest_fail_fast --gtest_brief=1
  first=$(grep -m1 -E '^\[  FAILED  \]' "$BUILD/exercise_${n}_starter_test.log" | sed 's/, where TypeParam.*//' || true)
  case $rc in
    1) ok "$n starter fails (${first#\[  FAILED  \] })" ;;
    0) bad "$n starter PASSES its checks" "a starter must fail until the student completes it" ;;
    124) bad "$n starter hangs (killed after ${limit} s)" "a starter must fail, not hang: log $BUILD/exercise_${n}_starter_test.log" ;;
    *) bad "$n starter crashed (exit $rc)" "log: $BUILD/exercise_${n}_starter_test.log" ;;
  esac
  limit=300
  run "exercise_${n}_solution_test" --gtest_brief=1
  if [ "$rc" -eq 0 ]; then
    ok "$n solution passes ($(grep -m1 -oE 'PASSED  \] [0-9]+ tests?' "$BUILD/exercise_${n}_solution_test.log" | sed 's/PASSED  \] //' || true))"
  else
    bad "$n solution fails (exit $rc)" "$(grep -m3 -E '^\[  FAILED  \]' "$BUILD/exercise_${n}_solution_test.log" | tr '\n' ' ')" \
      "log: $BUILD/exercise_${n}_solution_test.log"
  fi
done

echo "ci_check: every wrong version of a solution fails its exercise's checks, and the check written for it fails alone"
# instructor/wrong/NAME/<fixture>.cmake: the solution with one bug, built (CMakeLists.txt) as
# exercise_NAME_wrong_<fixture>_test. Two things must hold: the whole executable does not pass (a
# failed check, or a crash: another check may trip over the bug first), and the check the fixture
# names in fixture_caught_by, run alone, FAILS as a check (exit 1, not a crash or a hang): so every
# hole is closed by a check made for it, not by chance. A fixture whose fixture_caught_by is "tsan"
# (a memory-model bug that x86 forgives in Release) is graded below, after the sanitizer levels.
caught_by() { sed -n 's/^set(fixture_caught_by "\(.*\)")$/\1/p' "$1"; }
limit=120
for f in "$ROOT"/exercises/instructor/wrong/*/*.cmake; do
  [ -e "$f" ] || continue
  check=$(caught_by "$f")
  [ "$check" != tsan ] || continue
  n=$(basename "$(dirname "$f")") fixture=$(basename "$f" .cmake)
  what="instructor/wrong/$n/$fixture.cmake" exe="exercise_${n}_wrong_${fixture}_test"
  if [ -z "$check" ]; then
    bad "$what names no check" 'set(fixture_caught_by "<the GoogleTest filter of the check written for this bug>")'
    continue
  fi
  run "$exe" --gtest_brief=1
  whole=$rc
  run "$exe" --gtest_filter="$check" --gtest_brief=1
  ran=$(grep -m1 -oE '^\[==========\] [0-9]+ tests? from' "$BUILD/$exe.log" | grep -oE '[0-9]+' || echo 0)
  if [ "$whole" -eq 0 ]; then
    bad "the grader cannot catch $what: it PASSES the $n checks" "the check written for it: $check"
  elif [ "$rc" -eq 1 ] && [ "$ran" -gt 0 ]; then
    ok "$what fails; alone, $check fails$([ "$whole" -eq 1 ] || echo " (the whole executable: exit $whole)")"
  else
    bad "$what: its check $check, run alone, does not fail as a check (exit $rc, $ran test(s) ran)" "log: $BUILD/$exe.log"
  fi
done

# museum_ci: every exhibit's test (bug_museum/graded.hpp) FAILS with "BUG
# SHOWN" on the exhibit (missing_pause excepted: it is correct, its bug is a
# cost), and the same tests PASS on the reference fixes. A timing bug may
# hide from one bounded run (peterson_without_seq_cst: see its README), so an
# exhibit gets up to 3 runs to show its bug.
museum_ci() {
  local ex filter try
  limit=120
  for ex in $(cd "$ROOT/exercises/bug_museum" && ls -d -- */ | tr -d /); do
    filter="Museum$(sed -E 's/(^|_)([a-z])/\U\2/g' <<<"$ex")*"  # lost_wakeup -> MuseumLostWakeup*
    if [ "$ex" = missing_pause ]; then
      run bug_museum_test --gtest_filter="$filter" --gtest_brief=1
      if [ "$rc" -eq 0 ]; then ok "museum $ex passes its checks (its bug is a cost: the bench)"; else
        bad "museum $ex fails its checks (exit $rc)" "log: $BUILD/bug_museum_test.log"; fi
    else
      for try in 1 2 3; do
        run bug_museum_test --gtest_filter="$filter" --gtest_brief=1
        [ "$rc" -eq 1 ] && grep -q 'BUG SHOWN: ' "$BUILD/bug_museum_test.log" && break
      done
      if [ "$rc" -eq 1 ] && grep -q 'BUG SHOWN: ' "$BUILD/bug_museum_test.log"; then
        ok "museum $ex shows its bug (run $try: $(grep -m1 -o 'BUG SHOWN: .*' "$BUILD/bug_museum_test.log" | cut -c12-90))"
      else
        bad "museum $ex: no BUG SHOWN in 3 runs (exit $rc)" "log: $BUILD/bug_museum_test.log"
      fi
    fi
  done
  limit=300
  for exe in bug_museum_reference_test bug_museum_fixed_test; do
    run "$exe" --gtest_brief=1
    if [ "$rc" -eq 0 ]; then
      ok "$exe: the fixes PASS ($(grep -m1 -oE 'PASSED  \] [0-9]+ tests?' "$BUILD/$exe.log" | sed 's/PASSED  \] //' || true))"
    else
      bad "$exe (exit $rc)" "$(grep -m3 -E '^\[  FAILED  \]' "$BUILD/$exe.log" | tr '\n' ' ')" "log: $BUILD/$exe.log"
    fi
  done
}
echo "ci_check: the bug museum: every exhibit shows its bug (BUG SHOWN), every reference fix PASSes"
museum_ci

echo "ci_check: every bench writes a smoke-sized point (20 ms, 2 waiters)"
smoke=$(mktemp -d)
trap 'rm -rf "$smoke"' EXIT
limit=120
for exe in ${benches[@]+"${benches[@]}"}; do
  run "$exe" --waiters=2 --duration_ms=20 --benchmark_out="$smoke/$exe.json" --benchmark_out_format=json
  if [ "$rc" -eq 0 ] && [ -s "$smoke/$exe.json" ] && ! grep -q '"error_occurred": true' "$smoke/$exe.json"; then
    ok "$exe"
  else
    bad "$exe (exit $rc)" "log: $BUILD/$exe.log"
  fi
done

# The check files' manifest (check.sh verifies it before grading): a
# maintainer who edits a check must regenerate it.
manifest_is_current() {
  echo "ci_check: the check files match exercises/checks.sha256"
  local out
  if out=$("$ROOT/exercises/check.sh" --verify-manifest 2>&1); then
    ok "exercises/checks.sha256 is current"
  else
    bad "exercises/checks.sha256 is stale" "$(grep -E '^  (now|manifest):' <<<"$out" | tr -s ' ' | tr '\n' ';')" \
      "after editing a check, regenerate it: exercises/check.sh --update-manifest"
  fi
}

# grade ARGS...: check.sh on this build directory and the committed starters
# (the solutions' Release checks ran above, so check.sh starts at level 3);
# sets rc, keeps the output in $BUILD/grade-<what>.log.
grade() {
  local log=$BUILD/grade-$1.log; shift
  set +e
  LOCKLAB_EXERCISES_BUILD=$BUILD LOCKLAB_EXERCISE_STARTER_ROOT=$PRISTINE "$ROOT/exercises/check.sh" "$@" >"$log" 2>&1
  rc=$?
  set -e
}

# Every solution through the grade's sanitizer levels: ThreadSanitizer and
# AddressSanitizer+UBSan, LOCKLAB_CI_SANITIZER_RUNS runs each (default 1;
# the student's grade runs 3), in build/exercises-ci-tsan and -asan.
solutions_pass_the_sanitizers() {
  local runs=${LOCKLAB_CI_SANITIZER_RUNS:-1} n
  echo "ci_check: every solution passes under ThreadSanitizer and AddressSanitizer (check.sh levels 3-4, ${runs} run(s) each)"
  for n in "${EXERCISES[@]}"; do
    LOCKLAB_FROM=3 LOCKLAB_UPTO=4 LOCKLAB_SANITIZER_RUNS=$runs grade "$n-solution" "$n" solution
    if [ "$rc" -eq 0 ]; then
      ok "$n solution: $(grep -E '^   level [34] ' "$BUILD/grade-$n-solution.log" | sed -E 's/^   level ([34]) +([A-Za-z+]+).*\((.*)\)$/\2 \3/' | paste -sd, - | sed 's/,/, /g')"
    else
      bad "$n solution fails a sanitizer level (exit $rc)" "$(grep -m1 -E '^FAIL' "$BUILD/grade-$n-solution.log")" \
        "log: $BUILD/grade-$n-solution.log"
    fi
  done
}

# Wrong versions caught by the sanitizer level only (fixture_caught_by tsan):
# each must FAIL the full grade at level 3 with a ThreadSanitizer report.
# check.sh grades the version CMake wrote for the fixture, as the student's file.
memory_model_fixtures_fail_the_grade() {
  local f n fixture file log
  echo "ci_check: every memory-model wrong version fails the full grade at ThreadSanitizer"
  for f in "$ROOT"/exercises/instructor/wrong/*/*.cmake; do
    [ "$(caught_by "$f")" = tsan ] || continue
    n=$(basename "$(dirname "$f")") fixture=$(basename "$f" .cmake)
    file=$(ls "$BUILD/wrong/$n/$fixture"/my_*.hpp)
    grade "wrong-$n-$fixture" "$n" --lock "$file"
    log=$BUILD/grade-wrong-$n-$fixture.log
    if [ "$rc" -eq 1 ] && grep -q '^   level 3 .*FAIL' "$log" && grep -q 'WARNING: ThreadSanitizer' "$log"; then
      ok "instructor/wrong/$n/$fixture.cmake fails the grade at ThreadSanitizer ($(grep -m1 '^score:' "$log"); $(grep -m1 -oE 'WARNING: ThreadSanitizer: [a-z -]*[a-z]' "$log"))"
    else
      bad "instructor/wrong/$n/$fixture.cmake does not fail the grade at the ThreadSanitizer level (exit $rc)" \
        "$(grep -E '^   level|^score:' "$log" | tr -s ' ' | tr '\n' ';')" "log: $log"
    fi
  done
}

manifest_is_current
checked=$(date +%s)
if [ "${LOCKLAB_CI_SANITIZERS:-1}" != 0 ]; then
  solutions_pass_the_sanitizers
  memory_model_fixtures_fail_the_grade
fi

end=$(date +%s)
echo "ci_check: build $((built - start)) s, checks $((checked - built)) s, sanitizer levels and fixtures (builds included) $((end - checked)) s, total $((end - start)) s"
echo "total: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
