// graded.hpp — which code a museum test grades.
//
// Every exhibit's test is a grader: it runs the exhibit's experiment and
// EXPECTS THE CORRECT BEHAVIOUR, so it fails ("BUG SHOWN: ...") on the
// exhibit as shipped and passes ("PASS") once the bug is fixed. It includes
// the exhibit's header by its bare name (<ready_flag.hpp>) and names the
// class as graded::ReadyFlag; the build decides what those mean:
//   bug_museum_test            exercises/bug_museum/<exhibit>/ on the include
//                              path, graded = locklab::museum: the exhibits as
//                              they are in your checkout (edit one to fix it;
//                              exercises/check.sh bug_museum <exhibit> --fixed)
//   bug_museum_reference_test  exercises/instructor/bug_museum/<exhibit>/ and
//                              graded = locklab::museum::fixed (CMake defines
//                              LOCKLAB_MUSEUM_GRADED): the reference fixes,
//                              which must PASS
#pragma once

#ifndef LOCKLAB_MUSEUM_GRADED
#define LOCKLAB_MUSEUM_GRADED locklab::museum
#endif

namespace locklab::museum {
namespace fixed {}  // declared here so that the alias below compiles in either build
namespace graded = LOCKLAB_MUSEUM_GRADED;
}  // namespace locklab::museum
